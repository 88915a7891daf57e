// The vectorized float32 elementwise kernels (kernels/elementwise.hpp): the vector math against double-precision
// functions over dense sweeps for every build the CPU runs, the kernels against plain loops per build, and the ops
// using them against their reference kernels through sessions, on random shapes and broadcast patterns from fixed
// seeds (empty tensors, dims of 1, lengths that leave vector tails).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "kernels/elementwise.hpp"
#include "kernels/reference_compare.hpp"
#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using kernels::Isa;
using testing::OneNode;
using testing::compare_with_reference;
using testing::reference_only;

// Runs the body for each build this CPU supports, restoring the best one afterwards.
void for_each_isa(const std::function<void(Isa)>& body) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!kernels::use_isa(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    body(isa);
  }
  kernels::use_isa(kernels::best_isa());
}

// Sweep inputs: a dense grid over [-lim, lim], magnitudes from 1e-30 to 1e30 of both signs, and special values.
std::vector<float> sweep(float lim) {
  std::vector<float> v;
  for (float x = -lim; x <= lim; x += lim / 40000.0f) v.push_back(x);
  for (double m = 1e-30; m < 1e30; m *= 1.05) {
    v.push_back(static_cast<float>(m));
    v.push_back(static_cast<float>(-m));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float s : {0.0f, -0.0f, inf, -inf, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 88.72f, 88.73f, -87.3f, -103.9f, -104.5f,
                  0.625f, -0.625f, 1.0f, -1.0f, 3.92f, -3.92f, 10.0f, -10.0f, 14.2f, -14.2f})
    v.push_back(s);
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  v.push_back(-std::numeric_limits<float>::quiet_NaN());
  return v;
}

// Error of y against the exact value r in units of the float spacing at r.
double ulps(float y, double r) {
  const float rf = static_cast<float>(r);
  const double spacing = std::nextafter(std::fabs(rf), std::numeric_limits<float>::infinity()) - std::fabs(rf);
  return std::fabs(static_cast<double>(y) - r) / spacing;
}

// Checks kernels::unary(op) against `exact` (in double) on the sweep: NaN exactly where the exact value is NaN,
// infinities exact, at most max_ulps (or, with max_rel > 0, that error relative to max(|exact|, rel_floor)) where
// |exact| >= FLT_MIN, and at
// most 16 max(1, |x|) subnormal steps of absolute error below (a tiny factor times x keeps its absolute error).
void check_math(kernels::UnaryOp op, const std::function<double(double)>& exact, float lim, double max_ulps,
                double max_rel = 0, double rel_floor = 0) {
  const std::vector<float> x = sweep(lim);
  std::vector<float> y(x.size());
  kernels::UnaryParams p;
  p.op = op;
  kernels::unary(p, x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = exact(x[i]);
    if (std::isnan(r)) {
      ASSERT_TRUE(std::isnan(y[i])) << "x = " << x[i] << " gave " << y[i] << ", expected NaN";
      continue;
    }
    ASSERT_FALSE(std::isnan(y[i])) << "x = " << x[i] << " gave NaN, expected " << r;
    const float rf = static_cast<float>(r);
    if (std::isinf(rf) || std::isinf(y[i])) {
      ASSERT_EQ(y[i], rf) << "x = " << x[i];
      continue;
    }
    if (std::fabs(r) < FLT_MIN) {
      ASSERT_LE(std::fabs(y[i] - r), 16 * std::max(1.0f, std::fabs(x[i])) * std::ldexp(1.0, -149)) << "x = " << x[i] << " gave " << y[i] << ", exact " << r;
      continue;
    }
    const double e = max_rel > 0 ? std::fabs(y[i] - r) / std::max(std::fabs(r), rel_floor) : ulps(y[i], r);
    if (e > worst) {
      worst = e;
      worst_x = x[i];
    }
  }
  EXPECT_LE(worst, max_rel > 0 ? max_rel : max_ulps) << "worst at x = " << worst_x;
}

TEST(ElementwiseMath, Exp) {
  for_each_isa([](Isa) { check_math(kernels::UnaryOp::Exp, [](double x) { return std::exp(x); }, 110, 2); });
}

// Over the sweep (negatives, zeros, infinities, NaN), then every power of two from the smallest subnormal up, with
// its neighbours, and values next to 1 (where ln x is tiny and only relative precision counts).
TEST(ElementwiseMath, Log) {
  for_each_isa([](Isa) {
    check_math(kernels::UnaryOp::Log, [](double x) { return std::log(x); }, 110, 2);
    std::vector<float> x;
    for (int k = -149; k <= 127; ++k) {
      const float p = std::ldexp(1.0f, k);
      for (float v : {p, std::nextafter(p, 0.0f), std::nextafter(p, INFINITY), p * 1.3f, p * 1.4142135f, p * 1.4142137f})
        if (v > 0 && std::isfinite(v)) x.push_back(v);
    }
    for (int i = 1; i < 2000; ++i) {
      x.push_back(1.0f + static_cast<float>(i) * 1e-7f);
      x.push_back(1.0f - static_cast<float>(i) * 5e-8f);
    }
    std::vector<float> y(x.size());
    kernels::UnaryParams p;
    p.op = kernels::UnaryOp::Log;
    kernels::unary(p, x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_LE(ulps(y[i], std::log(static_cast<double>(x[i]))), 2.0) << "x = " << x[i];
  });
}

TEST(ElementwiseMath, Sigmoid) {
  for_each_isa([](Isa) {
    check_math(kernels::UnaryOp::Sigmoid, [](double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); },
               120, 4);
  });
}

TEST(ElementwiseMath, Tanh) {
  for_each_isa([](Isa) { check_math(kernels::UnaryOp::Tanh, [](double x) { return std::tanh(x); }, 12, 4); });
}

TEST(ElementwiseMath, Erf) {
  for_each_isa([](Isa) { check_math(kernels::UnaryOp::Erf, [](double x) { return std::erf(x); }, 6, 4); });
}

TEST(ElementwiseMath, GeluErf) {
  // With erfc for negative inputs, so that the exact value keeps its precision where 1 + erf cancels.
  for_each_isa([](Isa) {
    check_math(kernels::UnaryOp::GeluErf, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, 20, 0, 1e-6);
  });
}

TEST(ElementwiseMath, GeluTanh) {
  for_each_isa([](Isa) {
    check_math(
        kernels::UnaryOp::GeluTanh,
        [](double x) {
          const double w = std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
          return x / (1 + std::exp(-2 * w));
        },
        20, 0, 2e-6, 1e-5);
  });
}

TEST(ElementwiseMath, SqrtAndReciprocalAreTheReferences) {
  // IEEE square root and division in float round as the reference's double result rounded to float does (double
  // has more than twice float's bits), so the results are the same bits, subnormals, infinities and NaN included.
  std::vector<float> x = sweep(5);
  for (uint32_t bits : {1u, 0x7fffffu, 0x800001u, 0x00400000u}) {  // subnormal inputs and their reciprocals' edge
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
    x.push_back(-f);
  }
  for (float big : {1e38f, 3e38f, -2.5e38f}) x.push_back(big);  // reciprocals in the subnormal range
  for_each_isa([&](Isa) {
    std::vector<float> y(x.size());
    for (auto op : {kernels::UnaryOp::Sqrt, kernels::UnaryOp::Reciprocal}) {
      kernels::UnaryParams p;
      p.op = op;
      kernels::unary(p, x.data(), y.data(), static_cast<int64_t>(x.size()));
      for (size_t i = 0; i < x.size(); ++i) {
        const double d = x[i];
        const float r = static_cast<float>(op == kernels::UnaryOp::Sqrt ? std::sqrt(d) : 1.0 / d);
        ASSERT_TRUE(std::isnan(r) ? std::isnan(y[i]) : std::memcmp(&r, &y[i], 4) == 0)
            << (op == kernels::UnaryOp::Sqrt ? "Sqrt " : "Reciprocal ") << x[i] << ": " << y[i] << " vs " << r;
      }
    }
  });
}

TEST(ElementwiseMath, ReluLeakyReluClipAreExact) {
  const std::vector<float> x = sweep(5);
  for_each_isa([&](Isa) {
    std::vector<float> y(x.size());
    kernels::UnaryParams p;
    p.op = kernels::UnaryOp::Relu;
    kernels::unary(p, x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float r = x[i] < 0 ? 0.0f : x[i];
      ASSERT_TRUE(std::isnan(r) ? std::isnan(y[i]) : std::memcmp(&r, &y[i], 4) == 0) << "Relu " << x[i];
    }
    p.op = kernels::UnaryOp::LeakyRelu;
    p.alpha = 0.1f;
    kernels::unary(p, x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float r = x[i] < 0 ? x[i] * 0.1f : x[i];
      ASSERT_TRUE(std::isnan(r) ? std::isnan(y[i]) : r == y[i]) << "LeakyRelu " << x[i];
    }
    p.op = kernels::UnaryOp::Clip;
    for (auto [lo, hi] : {std::pair{-1.0f, 2.0f}, std::pair{3.0f, 1.0f}}) {  // min > max gives max everywhere
      p.lo = lo;
      p.hi = hi;
      kernels::unary(p, x.data(), y.data(), static_cast<int64_t>(x.size()));
      for (size_t i = 0; i < x.size(); ++i) {
        float r = x[i] < lo ? lo : x[i];
        r = r > hi ? hi : r;
        ASSERT_TRUE(std::isnan(r) ? std::isnan(y[i]) : r == y[i]) << "Clip " << x[i];
      }
    }
  });
}

std::vector<float> random_vector(std::mt19937& rng, int64_t n, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = u(rng);
  return v;
}

Tensor random_tensor(std::mt19937& rng, std::vector<int64_t> dims, float scale = 1.0f) {
  Tensor t = Tensor::allocate(DataType::Float, std::move(dims));
  std::uniform_real_distribution<float> u(-scale, scale);
  float* p = t.mutable_data<float>();
  for (uint64_t i = 0; i < t.element_count(); ++i) p[i] = u(rng);
  return t;
}

// A random pair of numpy-broadcastable shapes: same shape, scalar, row, column, per-channel, size-1 and empty dims.
std::pair<std::vector<int64_t>, std::vector<int64_t>> random_broadcast(std::mt19937& rng) {
  std::uniform_int_distribution<int> rank_d(0, 4), dim_d(1, 19), kind_d(0, 9);
  const int rank = rank_d(rng);
  std::vector<int64_t> out(rank);
  for (int64_t& d : out) d = kind_d(rng) == 0 ? 1 : dim_d(rng);
  if (rank > 0 && kind_d(rng) == 0) out[rng() % rank] = 0;  // empty now and then
  std::vector<int64_t> a = out, b = out;
  for (int i = 0; i < rank; ++i) {
    const int k = kind_d(rng);
    if (k < 2) a[i] = 1;
    else if (k < 5) b[i] = 1;
  }
  // Drop leading dims of one side now and then (right alignment).
  if (kind_d(rng) < 3 && !b.empty()) b.erase(b.begin(), b.begin() + (rng() % (b.size() + 1)));
  if (kind_d(rng) < 2 && !a.empty()) a.erase(a.begin(), a.begin() + (rng() % (a.size() + 1)));
  return {a, b};
}

std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i + a.size() < r ? 1 : a[i + a.size() - r];
    const int64_t y = i + b.size() < r ? 1 : b[i + b.size() - r];
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// The broadcast kernel against a plain index computation, per build; the results must be bit-exact.
TEST(ElementwiseKernels, BinaryBroadcastMatchesPlainLoop) {
  for_each_isa([](Isa) {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 300; ++trial) {
      auto [ad, bd] = random_broadcast(rng);
      const std::vector<int64_t> out = broadcast(ad, bd);
      int64_t na = 1, nb = 1, n = 1;
      for (int64_t d : ad) na *= d;
      for (int64_t d : bd) nb *= d;
      for (int64_t d : out) n *= d;
      const std::vector<float> a = random_vector(rng, na), b = random_vector(rng, nb);
      std::vector<float> y(static_cast<size_t>(n), -7.0f);
      const auto op = static_cast<kernels::BinaryOp>(trial % 4);
      kernels::binary(op, a.data(), ad, b.data(), bd, y.data(), out);
      const size_t r = out.size();
      for (int64_t i = 0; i < n; ++i) {
        int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
        for (size_t k = r; k-- > 0;) {
          const int64_t idx = rem % out[k];
          rem /= out[k];
          const int64_t da = k + ad.size() < r ? 1 : ad[k + ad.size() - r];
          const int64_t db = k + bd.size() < r ? 1 : bd[k + bd.size() - r];
          if (da != 1) ia += idx * sa;
          if (db != 1) ib += idx * sb;
          sa *= da;
          sb *= db;
        }
        const float x = a[ia], z = b[ib];
        const float want = op == kernels::BinaryOp::Add ? x + z : op == kernels::BinaryOp::Sub ? x - z : op == kernels::BinaryOp::Mul ? x * z : x / z;
        ASSERT_EQ(y[i], want) << "trial " << trial << " element " << i;
      }
    }
  });
}

TEST(ElementwiseKernels, SoftmaxAndLayerNormMatchDouble) {
  for_each_isa([](Isa) {
    std::mt19937 rng(5);
    for (int64_t len : {1, 3, 7, 8, 15, 16, 17, 33, 128, 769}) {
      const int64_t rows = 3;
      const std::vector<float> x = random_vector(rng, rows * len, 8.0f);
      const std::vector<float> scale = random_vector(rng, len), bias = random_vector(rng, len);
      std::vector<float> y(x.size()), ly(x.size()), ny(x.size()), mean(rows), inv(rows);
      kernels::softmax(x.data(), y.data(), rows, len, false);
      kernels::softmax(x.data(), ly.data(), rows, len, true);
      kernels::layer_norm(x.data(), scale.data(), bias.data(), ny.data(), rows, len, 1e-5f, mean.data(), inv.data());
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x.data() + r * len;
        double mx = xr[0], sum = 0, m = 0, v = 0;
        for (int64_t k = 0; k < len; ++k) mx = std::max(mx, static_cast<double>(xr[k]));
        for (int64_t k = 0; k < len; ++k) sum += std::exp(xr[k] - mx);
        for (int64_t k = 0; k < len; ++k) m += xr[k];
        m /= len;
        for (int64_t k = 0; k < len; ++k) v += (xr[k] - m) * (xr[k] - m);
        v /= len;
        const double is = 1 / std::sqrt(v + 1e-5);
        EXPECT_NEAR(mean[r], m, 1e-5);
        EXPECT_NEAR(inv[r], is, 1e-5 * is);
        for (int64_t k = 0; k < len; ++k) {
          const double s = std::exp(xr[k] - mx) / sum;
          ASSERT_NEAR(y[r * len + k], s, 4e-6 * s + 1e-30) << "softmax len " << len;
          ASSERT_NEAR(ly[r * len + k], xr[k] - mx - std::log(sum), 2e-6 * (1 + std::fabs(xr[k] - mx))) << "log-softmax len " << len;
          const double want = (xr[k] - m) * is * scale[k] + bias[k];
          ASSERT_NEAR(ny[r * len + k], want, 2e-5 * (1 + std::fabs(want))) << "layer norm len " << len;
        }
      }
    }
  });
}


std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

TEST(ElementwiseOps, BinaryArithmeticMatchesReference) {
  std::mt19937 rng(3);
  const char* ops[] = {"Add", "Sub", "Mul", "Div"};
  for (int trial = 0; trial < 80; ++trial) {
    auto [ad, bd] = random_broadcast(rng);
    const char* op = ops[trial % 4];
    OneNode n(op, 14);
    n.input("A", random_tensor(rng, ad)).input("B", random_tensor(rng, bd));
    compare_with_reference(n, std::string(op) + " " + dims_str(ad) + " " + dims_str(bd), 0);
  }
  // The BERT shapes: a row over [1,128,768], an attention mask [1,1,1,128] over [1,12,128,128], a scalar divisor.
  for (auto [ad, bd] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{1, 128, 768}, {768}}, {{1, 12, 128, 128}, {1, 1, 1, 128}}, {{1, 12, 128, 128}, {}}, {{2, 32, 7, 7}, {32, 1, 1}}}) {
    OneNode n("Add", 14);
    n.input("A", random_tensor(rng, ad)).input("B", random_tensor(rng, bd));
    compare_with_reference(n, "Add " + dims_str(ad) + " " + dims_str(bd), 0);
  }
  // Legacy broadcast=1 with an axis (opset 6).
  OneNode legacy("Mul", 6);
  legacy.input("A", random_tensor(rng, {2, 3, 4, 5})).input("B", random_tensor(rng, {3, 4})).attr_int("broadcast", 1).attr_int("axis", 1);
  compare_with_reference(legacy, "Mul-6 broadcast axis 1", 0);
}

// Max/Min of two float32 inputs, full-shaped or one value, in one pass: the same values as the reference's loop,
// NaN (either side) and signed zeros included; other broadcasts take the reference.
TEST(ElementwiseOps, MaxMinTwoInputsMatchReference) {
  std::mt19937 rng(5);
  const std::vector<float> special = {0.0f, -0.0f, NAN, -INFINITY, INFINITY, 1.0f, -1.0f, 0.5f};
  const Tensor s8 = testing::f32({8}, special);
  for (const char* op : {"Max", "Min"}) {
    const Tensor x = random_tensor(rng, {2, 37, 5});
    compare_with_reference(OneNode(op, 13).input("A", x).input("B", testing::f32({1, 1, 1}, {0.1f})), std::string(op) + " x, c", 0);
    compare_with_reference(OneNode(op, 13).input("A", testing::f32({}, {-0.2f})).input("B", x), std::string(op) + " c, x", 0);
    compare_with_reference(OneNode(op, 13).input("A", x).input("B", random_tensor(rng, {2, 37, 5})), std::string(op) + " x, y", 0);
    compare_with_reference(OneNode(op, 13).input("A", x).input("B", random_tensor(rng, {37, 1})), std::string(op) + " x, column", 0);
    for (float c : {0.0f, -0.0f, NAN}) {
      compare_with_reference(OneNode(op, 13).input("A", s8).input("B", testing::f32({}, {c})), std::string(op) + " special, c", 0);
      compare_with_reference(OneNode(op, 13).input("A", testing::f32({}, {c})).input("B", s8), std::string(op) + " c, special", 0);
    }
  }
}

// Pow by a scalar 2 squares in float: bit for bit pow's double result rounded, for every exponent type and shape;
// other exponents and broadcasts that grow the output take the general loop.
TEST(ElementwiseOps, PowSquareMatchesReference) {
  std::mt19937 rng(4);
  const Tensor big = random_tensor(rng, {3, 257, 5});
  compare_with_reference(OneNode("Pow", 15).input("X", big).input("Y", testing::f32({}, {2.0f})), "Pow x^2", 0);
  compare_with_reference(OneNode("Pow", 15).input("X", big).input("Y", testing::i64({1}, {2})), "Pow x^int64 2", 0);
  compare_with_reference(OneNode("Pow", 15).input("X", big).input("Y", testing::f32({}, {3.0f})), "Pow x^3", 0);
  compare_with_reference(OneNode("Pow", 15).input("X", random_tensor(rng, {4})).input("Y", testing::f32({2, 1}, {2.0f, 2.0f})),
                         "Pow [4] ^ [2,1]", 0);
  std::vector<float> special = {0.0f, -0.0f, 1e30f, -1e-30f, INFINITY, -INFINITY, NAN, 3.5f};
  compare_with_reference(OneNode("Pow", 15).input("X", testing::f32({8}, special)).input("Y", testing::f32({}, {2.0f})),
                         "Pow special values ^2", 0);
}

TEST(ElementwiseOps, BinaryArithmeticErrorsStayTheReferences) {
  OneNode n("Add", 14);
  std::mt19937 rng(1);
  n.input("A", random_tensor(rng, {2, 3})).input("B", random_tensor(rng, {4}));
  testing::expect_error(n, "broadcast");
}

struct UnaryCase {
  const char* op;
  int opset;
  std::string approximate;  // Gelu
  float scale;
  double rel;
};

TEST(ElementwiseOps, UnaryMatchesReference) {
  std::mt19937 rng(9);
  const UnaryCase cases[] = {{"Relu", 14, "", 4, 0},       {"Relu", 6, "", 4, 0},          {"LeakyRelu", 16, "", 4, 0},
                             {"Sigmoid", 13, "", 30, 2e-6}, {"Tanh", 13, "", 10, 2e-6},      {"Exp", 13, "", 80, 2e-6}, {"Log", 13, "", 1e6, 2e-6},
                             {"Erf", 13, "", 5, 2e-6},       {"Gelu", 20, "none", 12, 2e-6}, {"Gelu", 20, "tanh", 12, 2e-6},
                             {"Sqrt", 13, "", 9, 0},         {"Reciprocal", 13, "", 3, 0}};
  for (const UnaryCase& c : cases) {
    for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{0}, {1}, {17}, {3, 0, 2}, {2, 1, 33}, {1, 128, 3072}}) {
      OneNode n(c.op, c.opset);
      n.input("X", random_tensor(rng, dims, c.scale));
      if (!c.approximate.empty()) n.attr_string("approximate", c.approximate);
      if (std::string(c.op) == "LeakyRelu") n.attr_float("alpha", 0.2f);
      compare_with_reference(n, std::string(c.op) + " " + c.approximate + " " + dims_str(dims), c.rel, 1e-6);
    }
  }
}

TEST(ElementwiseOps, ClipMatchesReference) {
  std::mt19937 rng(4);
  auto scalar = [](float v) {
    Tensor t = Tensor::allocate(DataType::Float, {});
    t.mutable_data<float>()[0] = v;
    return t;
  };
  for (auto dims : std::vector<std::vector<int64_t>>{{0}, {5}, {3, 67}, {1, 96, 112, 112}}) {
    OneNode both("Clip", 13);
    both.input("X", random_tensor(rng, dims, 10)).input("min", scalar(0)).input("max", scalar(6));
    compare_with_reference(both, "Clip-13 " + dims_str(dims), 0);
    OneNode only_max("Clip", 13);
    only_max.input("X", random_tensor(rng, dims, 10)).omitted_input().input("max", scalar(1));
    compare_with_reference(only_max, "Clip-13 max only " + dims_str(dims), 0);
    OneNode inverted("Clip", 13);
    inverted.input("X", random_tensor(rng, dims, 10)).input("min", scalar(2)).input("max", scalar(-1));
    compare_with_reference(inverted, "Clip-13 min > max " + dims_str(dims), 0);
    OneNode attrs("Clip", 6);
    attrs.input("X", random_tensor(rng, dims, 10)).attr_float("min", -0.5f).attr_float("max", 0.25f);
    compare_with_reference(attrs, "Clip-6 " + dims_str(dims), 0);
  }
}

TEST(ElementwiseOps, SoftmaxMatchesReference) {
  std::mt19937 rng(8);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (auto dims : std::vector<std::vector<int64_t>>{{1, 12, 128, 128}, {3, 17}, {5, 1}, {2, 0, 3}, {4, 3, 9}, {7}}) {
      OneNode n13(op, 13);
      n13.input("X", random_tensor(rng, dims, 20));
      // LogSoftmax's error is absolute (log of a float sum): relative to max(|y|, 1).
      const double floor = std::string(op) == "LogSoftmax" ? 1.0 : 1e-6;
      compare_with_reference(n13, std::string(op) + "-13 " + dims_str(dims), 1e-5, floor);
      // v11 coerces to 2-D at axis 1: rows of the product of the remaining dims.
      if (dims.size() >= 2) {
        OneNode n11(op, 11);
        n11.input("X", random_tensor(rng, dims, 20));
        compare_with_reference(n11, std::string(op) + "-11 " + dims_str(dims), 1e-5, floor);
      }
      // Not the last axis: the reference kernel runs.
      if (dims.size() >= 2) {
        OneNode mid(op, 13);
        mid.input("X", random_tensor(rng, dims, 20)).attr_int("axis", 0);
        compare_with_reference(mid, std::string(op) + "-13 axis 0 " + dims_str(dims), 1e-5, floor);
      }
    }
  }
}

TEST(ElementwiseOps, LayerNormalizationMatchesReference) {
  std::mt19937 rng(12);
  struct Case {
    std::vector<int64_t> x, scale;
    int64_t axis;
    bool bias;
    int outputs;
  };
  const Case cases[] = {{{1, 128, 768}, {768}, -1, true, 1}, {{4, 33}, {33}, -1, false, 1}, {{2, 3, 5}, {3, 5}, 1, true, 3},
                        {{2, 3, 5}, {5}, -1, true, 3},    {{6, 1}, {1}, -1, true, 2},     {{0, 7}, {7}, -1, true, 3},
                        {{2, 3, 5}, {1, 5}, 1, true, 3} /* Scale broadcast over the normalized dims: the reference runs */};
  for (const Case& c : cases) {
    OneNode n("LayerNormalization", 17);
    n.input("X", random_tensor(rng, c.x, 3)).input("Scale", random_tensor(rng, c.scale));
    if (c.bias) n.input("B", random_tensor(rng, c.scale));
    n.attr_int("axis", c.axis).outputs(c.outputs);
    compare_with_reference(n, "LayerNormalization " + dims_str(c.x) + " axis " + std::to_string(c.axis), 2e-5, 1.0);
  }
}

TEST(ElementwiseOps, SumAndBatchNormalizationMatchReference) {
  std::mt19937 rng(2);
  for (auto dims : std::vector<std::vector<int64_t>>{{0}, {9}, {2, 64, 28, 28}}) {
    OneNode sum("Sum", 13);
    sum.input("a", random_tensor(rng, dims)).input("b", random_tensor(rng, dims)).input("c", random_tensor(rng, dims));
    compare_with_reference(sum, "Sum " + dims_str(dims), 1e-6, 1.0);
    OneNode one("Sum", 13);
    one.input("a", random_tensor(rng, dims));
    compare_with_reference(one, "Sum of one " + dims_str(dims), 0);
  }
  OneNode mixed("Sum", 13);  // broadcasting: the reference runs
  mixed.input("a", random_tensor(rng, {3, 4})).input("b", random_tensor(rng, {4}));
  compare_with_reference(mixed, "Sum broadcast", 1e-6, 1.0);
  for (auto dims : std::vector<std::vector<int64_t>>{{2, 3}, {1, 32, 56, 56}, {2, 5, 3, 7}}) {
    const int64_t C = dims[1];
    Tensor var = random_tensor(rng, {C});
    for (uint64_t i = 0; i < var.element_count(); ++i) var.mutable_data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.1f;
    OneNode bn("BatchNormalization", 15);
    bn.input("X", random_tensor(rng, dims, 3)).input("scale", random_tensor(rng, {C})).input("B", random_tensor(rng, {C}));
    bn.input("mean", random_tensor(rng, {C})).input("var", var);
    compare_with_reference(bn, "BatchNormalization " + dims_str(dims), 2e-6, 1.0);
  }
}

}  // namespace
}  // namespace onyx
