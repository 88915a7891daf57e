// The vectorized float32 reductions and group normalization (kernels/reduce.hpp): the kernels against plain double
// loops for every build the CPU runs, within the error bound reduce.hpp states, and the ops (every Reduce* version,
// GroupNormalization 18 and 21, InstanceNormalization) against their reference kernels through sessions, on random
// shapes and axis sets from fixed seeds (keepdims, noop_with_empty_axes, empty tensors, NaN and infinities).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include <omp.h>

#include "kernels/elementwise.hpp"
#include "kernels/reduce.hpp"
#include "kernels/reference_compare.hpp"
#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using kernels::Isa;
using kernels::Reduction;
using testing::OneNode;
using testing::compare_with_reference;
using testing::reference_only;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs the body for each build this CPU supports, restoring the best one afterwards.
void for_each_isa(const std::function<void(Isa)>& body) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!kernels::use_isa(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    body(isa);
  }
  kernels::use_isa(kernels::best_isa());
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Uniform values in [lo, hi).
Tensor random_tensor(std::mt19937& rng, const std::vector<int64_t>& dims, float lo, float hi) {
  Tensor t = Tensor::allocate(DataType::Float, dims);
  std::uniform_real_distribution<float> u(lo, hi);
  for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<float>()[i] = u(rng);
  return t;
}

// A few elements (about one in `every`) replaced by `v`.
void sprinkle(std::mt19937& rng, Tensor& t, float v, int every) {
  std::uniform_int_distribution<int> pick(0, every - 1);
  for (uint64_t i = 0; i < t.element_count(); ++i)
    if (pick(rng) == 0) t.mutable_data<float>()[i] = v;
}

// Random dims of rank 0..4; dims of 0 and 1 now and then, and now and then a long one (past the kernels' blocks).
std::vector<int64_t> random_dims(std::mt19937& rng) {
  std::uniform_int_distribution<int> rank_d(0, 4), kind(0, 19), small(2, 9), big(70, 2600);
  std::vector<int64_t> dims(static_cast<size_t>(rank_d(rng)));
  int64_t total = 1;
  for (int64_t& d : dims) {
    const int k = kind(rng);
    d = k == 0 ? 0 : k <= 3 ? 1 : (k == 4 && total < 64) ? big(rng) : small(rng);
    total *= std::max<int64_t>(d, 1);
  }
  return dims;
}

// ---- the kernels against double loops ----

// The plain reduction in double over the flagged axes: per output the result and the sum of |terms| (the error
// bound's scale; for LogSumExp the terms e^(x - max)).
struct Plain {
  std::vector<double> y, scale;
};

Plain plain_reduce(Reduction r, const std::vector<float>& x, const std::vector<int64_t>& dims,
                   const std::vector<bool>& reduced) {
  const size_t rank = dims.size();
  std::vector<int64_t> ostride(rank, 0);
  int64_t out_count = 1;
  for (size_t k = rank; k-- > 0;)
    if (!reduced[k]) {
      ostride[k] = out_count;
      out_count *= dims[k];
    }
  // Output index of each input element.
  std::vector<int64_t> oi(x.size());
  std::vector<int64_t> idx(rank, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t o = 0;
    for (size_t k = 0; k < rank; ++k) o += idx[k] * ostride[k];
    oi[i] = o;
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  Plain p;
  p.y.assign(out_count, r == Reduction::Min ? inf : (r == Reduction::Max || r == Reduction::LogSumExp) ? -inf : 0.0);
  p.scale.assign(out_count, 0.0);
  std::vector<double> mx(out_count, -inf);
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    double& a = p.y[oi[i]];
    switch (r) {
      case Reduction::Max:
        if (std::isnan(v) || (!std::isnan(a) && v > a)) a = v;
        break;
      case Reduction::Min:
        if (std::isnan(v) || (!std::isnan(a) && v < a)) a = v;
        break;
      case Reduction::SumSquare: a += v * v; p.scale[oi[i]] += v * v; break;
      case Reduction::L1: a += std::fabs(v); p.scale[oi[i]] += std::fabs(v); break;
      case Reduction::LogSumExp: mx[oi[i]] = std::max(mx[oi[i]], v); break;
      default: a += v; p.scale[oi[i]] += std::fabs(v); break;  // Sum
    }
  }
  if (r == Reduction::LogSumExp) {
    std::vector<double> s(out_count, 0.0);
    for (size_t i = 0; i < x.size(); ++i) s[oi[i]] += std::exp(x[i] - mx[oi[i]]);
    for (int64_t o = 0; o < out_count; ++o) {
      p.y[o] = std::isfinite(mx[o]) ? mx[o] + std::log(s[o]) : mx[o];
      p.scale[o] = s[o];
    }
  }
  return p;
}

// 64 float roundings of the sum of |terms| (reduce.hpp), plus the final rounding.
constexpr double kBound = 64.0 / (1 << 24);

TEST(ReduceKernels, MatchDoubleWithinTheBound) {
  // Four threads whatever the machine, so that outputs fewer than the threads split their rows into pieces.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(4);
  for_each_isa([](Isa) {
    std::mt19937 rng(31);
    const Reduction kinds[] = {Reduction::Sum, Reduction::SumSquare, Reduction::L1, Reduction::Max, Reduction::Min,
                               Reduction::LogSumExp};
    // Fixed shapes for each path (rows, columns, a mix, blocks and tails), then random ones.
    std::vector<std::pair<std::vector<int64_t>, std::vector<bool>>> cases = {
        {{5000}, {true}},                                  // one long row: several row blocks
        {{3, 4099}, {false, true}},                        // rows with tails
        {{300, 37}, {true, false}},                        // columns: several column blocks, tails
        {{5, 2100}, {true, false}},                        // columns past one parallel chunk
        {{4, 3, 5, 6}, {true, false, true, false}},        // mix, innermost kept
        {{4, 3, 5, 6}, {false, true, false, true}},        // mix, innermost reduced
        {{2, 1, 7, 1, 3}, {true, true, false, false, true}},
        {{6, 5}, {false, false}},                          // nothing reduced
        {{}, {}},                                          // a scalar
        {{3, 0, 4}, {false, true, false}},                 // empty reduced set
        {{3, 0, 4}, {true, false, true}},                  // no outputs
        {{256, 3136}, {false, true}},
        {{100001}, {true}},                                // one output: row pieces for the threads
        {{3, 40000}, {false, true}},
        {{3, 2, 30000}, {true, false, true}}};
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<int64_t> dims = random_dims(rng);
      std::vector<bool> red(dims.size());
      for (size_t k = 0; k < dims.size(); ++k) red[k] = rng() % 2;
      cases.push_back({dims, red});
    }
    for (const auto& [dims, red] : cases) {
      for (Reduction r : kinds) {
        std::vector<float> x(static_cast<size_t>(count(dims)));
        std::uniform_real_distribution<float> u(-4, 4);
        for (float& v : x) v = u(rng);
        std::string what = "reduction " + std::to_string(static_cast<int>(r)) + " of " + dims_str(dims) + " flags";
        for (bool b : red) what += b ? " 1" : " 0";
        const Plain want = plain_reduce(r, x, dims, red);
        std::vector<float> y(want.y.size());
        kernels::reduce(r, x.data(), dims, red, y.data());
        for (size_t o = 0; o < y.size(); ++o) {
          const double w = want.y[o];
          if (!std::isfinite(w)) {
            ASSERT_TRUE(y[o] == w || (std::isnan(w) && std::isnan(y[o]))) << what << " output " << o << ": " << y[o];
            continue;
          }
          // LogSumExp: the relative error of the sum of exponentials (each within 2 ulp) becomes absolute.
          const double tol = r == Reduction::LogSumExp ? (kBound + 3.0 / (1 << 24)) + std::fabs(w) / (1 << 23)
                             : (r == Reduction::Max || r == Reduction::Min) ? 0.0
                                                                             : kBound * want.scale[o] + std::fabs(w) / (1 << 23);
          ASSERT_LE(std::fabs(y[o] - w), tol) << what << " output " << o << ": " << y[o] << " vs " << w;
        }
      }
    }
  });
  omp_set_num_threads(threads);
}

// Sums long enough that one float accumulator per output (in rows or in columns) would drift past the bound.
TEST(ReduceKernels, LongSumsStayWithinTheBound) {
  for_each_isa([](Isa) {
    std::mt19937 rng(39);
    for (const auto& [dims, red] : std::vector<std::pair<std::vector<int64_t>, std::vector<bool>>>{
             {{200000, 3}, {true, false}}, {{2, 300000}, {false, true}}}) {
      std::vector<float> x(static_cast<size_t>(count(dims)));
      // Mostly one value: a single float accumulator would round the same way for long stretches.
      std::uniform_real_distribution<float> u(1, 2);
      for (float& v : x) v = rng() % 8 ? 1.3f : u(rng);
      const Plain want = plain_reduce(Reduction::Sum, x, dims, red);
      std::vector<float> y(want.y.size());
      kernels::reduce(Reduction::Sum, x.data(), dims, red, y.data());
      for (size_t o = 0; o < y.size(); ++o)
        ASSERT_LE(std::fabs(y[o] - want.y[o]), kBound * want.scale[o] + want.y[o] / (1 << 23)) << dims_str(dims) << " output " << o;
    }
  });
}

TEST(ReduceKernels, MaxMinPropagateNaNAndInfinities) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(4);  // the one-output row splits into pieces
  for_each_isa([](Isa) {
    std::mt19937 rng(32);
    for (const auto& [dims, red] : std::vector<std::pair<std::vector<int64_t>, std::vector<bool>>>{
             {{7, 133}, {false, true}}, {{133, 7}, {true, false}}, {{9, 70, 5}, {true, false, true}}, {{40}, {true}},
             {{80000}, {true}}}) {
      for (float special : {kNaN, kInf, -kInf}) {
        std::vector<float> x(static_cast<size_t>(count(dims)));
        std::uniform_real_distribution<float> u(-4, 4);
        std::uniform_int_distribution<int> pick(0, 60);
        for (float& v : x) v = pick(rng) == 0 ? special : u(rng);
        x[x.size() / 2] = special;
        for (Reduction r : {Reduction::Max, Reduction::Min, Reduction::LogSumExp}) {
          const Plain want = plain_reduce(r, x, dims, red);
          std::vector<float> y(want.y.size());
          kernels::reduce(r, x.data(), dims, red, y.data());
          bool saw_special = false;
          for (size_t o = 0; o < y.size(); ++o) {
            const double w = want.y[o];
            saw_special = saw_special || !std::isfinite(w);
            if (std::isnan(w)) {
              ASSERT_TRUE(std::isnan(y[o])) << dims_str(dims) << " output " << o;
            } else if (r != Reduction::LogSumExp || !std::isfinite(w)) {
              ASSERT_EQ(y[o], w) << dims_str(dims) << " output " << o;
            } else {
              ASSERT_NEAR(y[o], w, 1e-5 * std::max(1.0, std::fabs(w))) << dims_str(dims) << " output " << o;
            }
          }
          // The special value decides some output unless it is the op's identity side (-inf for Max, +inf for Min).
          const bool decides = std::isnan(special) || (special > 0) == (r != Reduction::Min);
          if (decides) {
            EXPECT_TRUE(saw_special) << dims_str(dims) << " " << special;
          }
        }
      }
    }
  });
  omp_set_num_threads(threads);
}

TEST(ReduceKernels, GroupNormMatchesDouble) {
  for_each_isa([](Isa) {
    std::mt19937 rng(33);
    struct Case {
      int64_t N, C, groups, inner;
      bool per_channel;
      float offset;  // added to x: a mean far from 0 relative to the spread
    };
    for (const Case& c : std::vector<Case>{{2, 6, 3, 17, true, 0}, {1, 8, 2, 1000, false, 5}, {3, 4, 4, 1, true, 0},
                                           {1, 32, 8, 49, true, 100}, {2, 3, 1, 0, true, 0}, {1, 2, 2, 5000, true, -3}}) {
      std::vector<float> x(static_cast<size_t>(c.N * c.C * c.inner)), y(x.size());
      std::uniform_real_distribution<float> u(-2, 2);
      for (float& v : x) v = u(rng) + c.offset;
      const int64_t np = c.per_channel ? c.C : c.groups;
      std::vector<float> scale(np), bias(np);
      for (float& v : scale) v = u(rng);
      for (float& v : bias) v = u(rng);
      kernels::group_norm(x.data(), scale.data(), bias.data(), c.per_channel, y.data(), c.N, c.C, c.groups, c.inner, 1e-5);
      const int64_t per = c.C / c.groups, gsize = per * c.inner;
      for (int64_t t = 0; t < c.N * c.groups; ++t) {
        const float* xg = x.data() + t * gsize;
        double m = 0, v = 0;
        for (int64_t i = 0; i < gsize; ++i) m += xg[i];
        m /= static_cast<double>(gsize);
        for (int64_t i = 0; i < gsize; ++i) v += (xg[i] - m) * (xg[i] - m);
        v /= static_cast<double>(gsize);
        const double is = 1 / std::sqrt(v + 1e-5);
        for (int64_t i = 0; i < gsize; ++i) {
          const int64_t g = t % c.groups, p = c.per_channel ? g * per + i / c.inner : g;
          const double want = (xg[i] - m) * is * scale[p] + bias[p];
          // The float mean (half an ulp of the offset) scaled by inv_std, and float rounding of the rest.
          const double tol = 1e-5 * (1 + std::fabs(want)) + std::fabs(m) * is * std::fabs(scale[p]) / (1 << 23);
          ASSERT_NEAR(y[t * gsize + i], want, tol) << "N " << c.N << " C " << c.C << " groups " << c.groups << " inner " << c.inner;
        }
      }
    }
  });
}

// ---- the ops against their reference kernels ----

struct ReduceOpCase {
  const char* op;
  std::vector<int> versions;
  float lo, hi;       // input range (positive for the ops whose sums may cancel or whose logarithm needs it)
  double rel, floor;  // tolerance against the reference
  bool specials;      // NaN and infinities in some trials
};

// Every Reduce* op and version: random shapes and axes (attribute or input, negative now and then), keepdims 0/1,
// empty and omitted axes with noop_with_empty_axes 0/1.
TEST(ReduceOps, MatchReference) {
  std::mt19937 rng(34);
  const ReduceOpCase cases[] = {
      {"ReduceSum", {1, 11, 13}, 0.25f, 2, 4e-6, 1e-30, false},
      {"ReduceMean", {1, 11, 13, 18}, 0.25f, 2, 4e-6, 1e-30, false},
      {"ReduceMax", {1, 11, 12, 13, 18, 20}, -4, 4, 0, 0, true},
      {"ReduceMin", {1, 11, 12, 13, 18, 20}, -4, 4, 0, 0, true},
      {"ReduceSumSquare", {1, 11, 13, 18}, -2, 2, 4e-6, 1e-30, false},
      {"ReduceL1", {1, 11, 13, 18}, -2, 2, 4e-6, 1e-30, false},
      {"ReduceL2", {1, 11, 13, 18}, -2, 2, 4e-6, 1e-30, false},
      {"ReduceLogSum", {1, 11, 13, 18}, 0.25f, 2, 4e-6, 1, false},
      {"ReduceLogSumExp", {1, 11, 13, 18}, -20, 20, 5e-6, 1, true},
      {"ReduceProd", {1, 11, 13, 18}, 0.5f, 1.5f, 1e-6, 1e-30, false},  // stays on the reference kernel
  };
  for (const ReduceOpCase& c : cases) {
    for (int v : c.versions) {
      const bool axes_input = v >= 18 || (std::string(c.op) == "ReduceSum" && v >= 13);
      for (int trial = 0; trial < 8; ++trial) {
        const std::vector<int64_t> dims = random_dims(rng);
        const int64_t rank = static_cast<int64_t>(dims.size());
        Tensor x = random_tensor(rng, dims, c.lo, c.hi);
        if (c.specials && trial % 3 == 1) sprinkle(rng, x, kNaN, 40);
        if (c.specials && trial % 3 == 2) sprinkle(rng, x, trial % 2 ? kInf : -kInf, 40);
        // Axes: each axis with probability 1/2, written negative half the time; trial 0 none (empty or omitted).
        std::vector<int64_t> axes;
        for (int64_t k = 0; k < rank; ++k)
          if (trial > 0 && rng() % 2) axes.push_back(rng() % 2 ? k - rank : k);
        const bool keepdims = rng() % 2;
        const int noop = axes_input ? static_cast<int>(rng() % 2) : 0;
        OneNode n(c.op, v);
        n.input("X", x).attr_int("keepdims", keepdims);
        std::string what = std::string(c.op) + "-" + std::to_string(v) + " " + dims_str(dims) + " axes " + dims_str(axes) +
                           " keepdims " + std::to_string(keepdims);
        if (axes_input) {
          n.attr_int("noop_with_empty_axes", noop);
          what += " noop " + std::to_string(noop);
          if (!axes.empty() || trial % 2 == 0) n.input("axes", testing::make_tensor<int64_t>(DataType::Int64, {static_cast<int64_t>(axes.size())}, axes));
        } else if (!axes.empty()) {
          n.attr_ints("axes", axes);
        }
        compare_with_reference(n, what, c.rel, c.floor);
      }
    }
  }
}

// The shapes the brief's benchmarks use and the paths' edges, each op through every build.
TEST(ReduceOps, PathsMatchReferenceOnEveryBuild) {
  for_each_isa([](Isa) {
    std::mt19937 rng(35);
    struct Case {
      std::vector<int64_t> dims, axes;
    };
    const Case shapes[] = {{{16, 768}, {-1}}, {{1, 32, 14, 14}, {2, 3}}, {{1, 32, 14, 14}, {1}}, {{3, 130, 5}, {0, 2}},
                           {{70, 3, 2}, {0}}, {{2, 0, 3}, {1}},           {{4, 3}, {}}};
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1",
                           "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}) {
      const std::string name = op;
      const bool positive = name == "ReduceSum" || name == "ReduceMean" || name == "ReduceLogSum";
      for (const Case& s : shapes) {
        OneNode n(op, 18);
        Tensor x = random_tensor(rng, s.dims, positive ? 0.25f : -3.0f, 3.0f);
        if (name == "ReduceMax" || name == "ReduceMin") sprinkle(rng, x, kNaN, 50);
        n.input("X", x).input("axes", testing::make_tensor<int64_t>(DataType::Int64, {static_cast<int64_t>(s.axes.size())}, s.axes));
        const double floor = name == "ReduceLogSum" || name == "ReduceLogSumExp" ? 1.0 : 1e-30;
        compare_with_reference(n, name + " " + dims_str(s.dims) + " axes " + dims_str(s.axes), name == "ReduceMax" || name == "ReduceMin" ? 0 : 5e-6, floor);
      }
    }
  });
}

TEST(ReduceOps, ErrorsStayTheReferences) {
  std::mt19937 rng(36);
  OneNode dup("ReduceMean", 18);
  dup.input("X", random_tensor(rng, {2, 3}, -1, 1)).input("axes", testing::make_tensor<int64_t>(DataType::Int64, {2}, {1, -1}));
  testing::expect_error(dup, "more than once");
  OneNode range("ReduceSum", 11);
  range.input("X", random_tensor(rng, {2, 3}, -1, 1)).attr_ints("axes", {2});
  testing::expect_error(range, "axes");
}

// GroupNormalization 18 (scale/bias per group or per channel) and 21 (per channel), InstanceNormalization 1, 6, 22.
TEST(NormalizationOps, GroupAndInstanceNormMatchReference) {
  for_each_isa([](Isa) {
    std::mt19937 rng(37);
    struct Case {
      std::vector<int64_t> dims;
      int64_t groups;
      float offset;
    };
    const Case cases[] = {{{1, 256, 56, 56}, 32, 0}, {{2, 6, 5, 7}, 3, 3}, {{3, 4}, 2, 0},        {{2, 8, 33}, 8, -50},
                          {{1, 4, 0, 3}, 2, 0},      {{0, 4, 5}, 4, 0},    {{2, 9, 4, 4, 3}, 1, 1}, {{1, 5, 1000}, 5, 10}};
    for (const Case& c : cases) {
      const int64_t C = c.dims[1];
      Tensor x = random_tensor(rng, c.dims, -2 + c.offset, 2 + c.offset);
      for (int v : {18, 21}) {
        for (bool per_group : {false, true}) {
          if (per_group && v >= 21) continue;
          const int64_t np = per_group ? c.groups : C;
          OneNode n("GroupNormalization", v);
          n.input("X", x).input("scale", random_tensor(rng, {np}, -2, 2)).input("bias", random_tensor(rng, {np}, -2, 2));
          n.attr_int("num_groups", c.groups).attr_float("epsilon", 1e-4f);
          compare_with_reference(n, "GroupNormalization-" + std::to_string(v) + " " + dims_str(c.dims) + " groups " + std::to_string(c.groups) +
                         (per_group ? " per group" : " per channel"), 2e-5, 1.0);
        }
      }
      if (c.dims.size() >= 3) {
        for (int v : {1, 6, 22}) {
          OneNode n("InstanceNormalization", v);
          n.input("input", x).input("scale", random_tensor(rng, {C}, -2, 2)).input("B", random_tensor(rng, {C}, -2, 2));
          compare_with_reference(n, "InstanceNormalization-" + std::to_string(v) + " " + dims_str(c.dims), 2e-5, 1.0);
        }
      }
    }
  });
}

TEST(NormalizationOps, GroupNormErrorsStayTheReferences) {
  std::mt19937 rng(38);
  OneNode bad("GroupNormalization", 21);
  bad.input("X", random_tensor(rng, {1, 6, 4}, -1, 1)).input("scale", random_tensor(rng, {6}, -1, 1));
  bad.input("bias", random_tensor(rng, {6}, -1, 1)).attr_int("num_groups", 4);
  testing::expect_error(bad, "does not divide");
  OneNode count("GroupNormalization", 21);
  count.input("X", random_tensor(rng, {1, 6, 4}, -1, 1)).input("scale", random_tensor(rng, {3}, -1, 1));
  count.input("bias", random_tensor(rng, {3}, -1, 1)).attr_int("num_groups", 3);
  testing::expect_error(count, "expected 6");
  OneNode inst("InstanceNormalization", 6);
  inst.input("input", random_tensor(rng, {1, 6, 4}, -1, 1)).input("scale", random_tensor(rng, {5}, -1, 1));
  inst.input("B", random_tensor(rng, {6}, -1, 1));
  testing::expect_error(inst, "scale has 5 elements");
}

}  // namespace
}  // namespace onyx
