// Reductions and group normalization: the grouping of axes into rows and columns, the split over the OpenMP team,
// the double accumulation of the float partial sums, and the final step of each op (kernels/reduce.hpp).
#include "kernels/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <omp.h>

#include "kernels/elementwise_table.hpp"

namespace onyx::kernels {
namespace {

using ew::ReduceOp;

constexpr double kInf = std::numeric_limits<double>::infinity();
// Work below this many input elements stays on the calling thread.
constexpr int64_t kReduceParallelThreshold = 1 << 16;
// Row pieces for the threads are multiples of this (itself a multiple of every build's row block, reduce_impl.hpp).
constexpr int64_t kRowPiece = 8192;
// Rows a column fold adds in float before the partial sums go into double (the bound in reduce.hpp).
constexpr int64_t kColBlockRows = 64;
// Columns per parallel task of a column fold.
constexpr int64_t kColChunk = 1024;

// A run of neighbouring axes, all reduced or all kept, as one axis.
struct Group {
  int64_t size, stride;
};

// Offset in x of the linear index `idx` over `groups` (row-major).
int64_t offset_of(int64_t idx, const std::vector<Group>& groups) {
  int64_t off = 0;
  for (size_t k = groups.size(); k-- > 0;) {
    off += (idx % groups[k].size) * groups[k].stride;
    idx /= groups[k].size;
  }
  return off;
}

int64_t count_of(const std::vector<Group>& groups) {
  int64_t n = 1;
  for (const Group& g : groups) n *= g.size;
  return n;
}

ReduceOp fold_op(Reduction r) {
  switch (r) {
    case Reduction::Max: return ReduceOp::Max;
    case Reduction::Min: return ReduceOp::Min;
    case Reduction::SumSquare:
    case Reduction::L2: return ReduceOp::SumSquareDev;
    case Reduction::L1: return ReduceOp::L1;
    case Reduction::LogSumExp: return ReduceOp::Max;  // the first pass; the second sums exponentials
    default: return ReduceOp::Sum;
  }
}

bool is_extreme(Reduction r) { return r == Reduction::Max || r == Reduction::Min; }

// NaN-propagating max / min into a.
void combine_extreme(Reduction r, double& a, double v) {
  if (std::isnan(a)) return;
  if (std::isnan(v) || (r == Reduction::Max ? v > a : v < a)) a = v;
}

// The result of a sum-like reduction from its sum s over `group` elements.
float finish_sum(Reduction r, double s, int64_t group) {
  switch (r) {
    case Reduction::Mean: return static_cast<float>(s / static_cast<double>(group));
    case Reduction::L2: return static_cast<float>(std::sqrt(s));
    case Reduction::LogSum: return static_cast<float>(std::log(s));
    default: return static_cast<float>(s);
  }
}

// LogSumExp from the maximum m and the sum s of e^(x - m): a NaN or infinite maximum decides the result.
float finish_lse(double m, double s) { return static_cast<float>(std::isfinite(m) ? m + std::log(s) : m); }

float empty_value(Reduction r) {
  switch (r) {
    case Reduction::Mean: return std::numeric_limits<float>::quiet_NaN();
    case Reduction::Max:
    case Reduction::LogSum:
    case Reduction::LogSumExp: return -std::numeric_limits<float>::infinity();
    case Reduction::Min: return std::numeric_limits<float>::infinity();
    default: return 0.0f;
  }
}

// Each output folds `contrib` rows of `len` contiguous elements: at koff(o) + roff(q) for q < contrib. With fewer
// outputs than threads, each row splits into pieces of whole kRowPiece runs (so the blocks of the sums stay the
// same), and the pieces' results are combined per output.
void reduce_rows(const ew::Table& t, Reduction r, const float* x, const std::vector<Group>& kept,
                 const std::vector<Group>& red, int64_t len, int64_t group, float* y) {
  const int64_t outer = count_of(kept), contrib = count_of(red);
  const int64_t work = outer * contrib * len;
  const int64_t threads = omp_get_max_threads();
  int64_t piece_len = len;
  if (threads > 1 && outer < threads && work > kReduceParallelThreshold && len >= 2 * kRowPiece) {
    const int64_t pieces = std::min((threads + outer - 1) / outer, len / kRowPiece);
    piece_len = ((len + pieces - 1) / pieces + kRowPiece - 1) / kRowPiece * kRowPiece;
  }
  const int64_t pieces = (len + piece_len - 1) / piece_len;
  const bool extreme = is_extreme(r) || r == Reduction::LogSumExp;  // LogSumExp: the maximum first
  const Reduction er = r == Reduction::Min ? Reduction::Min : Reduction::Max;
  // part[o * pieces + p]: the fold of piece p of every row of output o (shift: one per output; an output whose
  // shift is not finite is left 0).
  std::vector<double> part(static_cast<size_t>(outer * pieces));
  auto fold = [&](ReduceOp op, const std::vector<double>* shift) {
    const bool ext = op == ReduceOp::Max || op == ReduceOp::Min;
#pragma omp parallel for schedule(static) if (outer * pieces > 1 && work > kReduceParallelThreshold)
    for (int64_t task = 0; task < outer * pieces; ++task) {
      const int64_t o = task / pieces, b = (task % pieces) * piece_len, n = std::min(piece_len, len - b);
      double a = op == ReduceOp::Min ? kInf : ext ? -kInf : 0.0;
      if (!shift || std::isfinite((*shift)[o])) {
        const float s = shift ? static_cast<float>((*shift)[o]) : 0.0f;
        const float* xo = x + offset_of(o, kept) + b;
        for (int64_t q = 0; q < contrib; ++q) {
          const double v = t.row_reduce(op, xo + offset_of(q, red), n, s);
          if (ext) combine_extreme(er, a, v);
          else a += v;
        }
      }
      part[task] = a;
    }
  };
  auto combined = [&](int64_t o, bool ext) {
    double a = ext ? part[o * pieces] : 0.0;
    for (int64_t p = ext ? 1 : 0; p < pieces; ++p) {
      if (ext) combine_extreme(er, a, part[o * pieces + p]);
      else a += part[o * pieces + p];
    }
    return a;
  };
  fold(fold_op(r), nullptr);
  if (!extreme) {
    for (int64_t o = 0; o < outer; ++o) y[o] = finish_sum(r, combined(o, false), group);
    return;
  }
  std::vector<double> m(static_cast<size_t>(outer));
  for (int64_t o = 0; o < outer; ++o) m[o] = combined(o, true);
  if (r != Reduction::LogSumExp) {
    for (int64_t o = 0; o < outer; ++o) y[o] = static_cast<float>(m[o]);
    return;
  }
  fold(ReduceOp::SumExp, &m);
  for (int64_t o = 0; o < outer; ++o) y[o] = finish_lse(m[o], combined(o, false));
}

// Folds, for each q < contrib, `rows` rows (inner apart) of n columns at xo + roff(q) into acc: in blocks of
// kColBlockRows rows added up in double for the sums, all at once for max and min.
void fold_columns(const ew::Table& t, ReduceOp op, const float* xo, const std::vector<Group>& red, int64_t rows,
                  int64_t inner, int64_t n, const float* shift, float* part, double* acc) {
  const int64_t contrib = count_of(red);
  const bool extreme = op == ReduceOp::Max || op == ReduceOp::Min;
  const Reduction er = op == ReduceOp::Min ? Reduction::Min : Reduction::Max;
  for (int64_t q = 0; q < contrib; ++q) {
    const float* xq = xo + offset_of(q, red);
    const int64_t block = extreme ? rows : kColBlockRows;
    for (int64_t b = 0; b < rows; b += block) {
      t.col_reduce(op, xq + b * inner, std::min(block, rows - b), inner, n, shift, part);
      if (extreme)
        for (int64_t j = 0; j < n; ++j) combine_extreme(er, acc[j], part[j]);
      else
        for (int64_t j = 0; j < n; ++j) acc[j] += part[j];
    }
  }
}

// Each output row (koff(o), `inner` columns) folds `rows` rows inner apart, for each q < contrib at offset roff(q).
void reduce_columns(const ew::Table& t, Reduction r, const float* x, const std::vector<Group>& kept,
                    const std::vector<Group>& red, int64_t rows, int64_t inner, int64_t group, float* y) {
  const int64_t outer = count_of(kept), contrib = count_of(red);
  const int64_t chunks = (inner + kColChunk - 1) / kColChunk;
  const ReduceOp op = fold_op(r);
#pragma omp parallel for schedule(static) if (outer * chunks > 1 && outer * contrib * rows * inner > kReduceParallelThreshold)
  for (int64_t task = 0; task < outer * chunks; ++task) {
    const int64_t o = task / chunks, j0 = (task % chunks) * kColChunk, n = std::min(kColChunk, inner - j0);
    const float* xo = x + offset_of(o, kept) + j0;
    float* yo = y + o * inner + j0;
    std::vector<float> part(static_cast<size_t>(n));
    const double start = r == Reduction::Min ? kInf : is_extreme(r) || r == Reduction::LogSumExp ? -kInf : 0.0;
    std::vector<double> acc(static_cast<size_t>(n), start);
    fold_columns(t, op, xo, red, rows, inner, n, nullptr, part.data(), acc.data());
    if (is_extreme(r)) {
      for (int64_t j = 0; j < n; ++j) yo[j] = static_cast<float>(acc[j]);
    } else if (r == Reduction::LogSumExp) {
      // acc holds the maxima; the exponentials are summed relative to them.
      std::vector<float> m(acc.begin(), acc.end());
      std::fill(acc.begin(), acc.end(), 0.0);
      fold_columns(t, ReduceOp::SumExp, xo, red, rows, inner, n, m.data(), part.data(), acc.data());
      for (int64_t j = 0; j < n; ++j) yo[j] = finish_lse(m[j], acc[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) yo[j] = finish_sum(r, acc[j], group);
    }
  }
}

}  // namespace

void reduce(Reduction r, const float* x, const std::vector<int64_t>& dims, const std::vector<bool>& reduced, float* y) {
  int64_t out_count = 1, group = 1;
  for (size_t k = 0; k < dims.size(); ++k) (reduced[k] ? group : out_count) *= dims[k];
  if (out_count == 0) return;
  if (group == 0) {
    std::fill(y, y + out_count, empty_value(r));
    return;
  }
  // Groups of neighbouring axes with the same flag, outermost first, with their strides in x.
  std::vector<Group> groups;
  std::vector<bool> flags;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    if (!groups.empty() && flags.back() == reduced[k]) {
      groups.back().size *= dims[k];
    } else {
      groups.push_back({dims[k], 0});
      flags.push_back(reduced[k]);
    }
  }
  int64_t stride = 1;
  for (size_t k = groups.size(); k-- > 0;) {
    groups[k].stride = stride;
    stride *= groups[k].size;
  }
  // The innermost group (or two, for columns) is folded by the kernels; the groups outside it are loops, kept ones
  // over outputs, reduced ones over contributions to the same output.
  const bool rows = groups.empty() || flags.back();
  const size_t inner_groups = rows ? std::min<size_t>(groups.size(), 1) : std::min<size_t>(groups.size(), 2);
  std::vector<Group> kept, red;
  for (size_t k = 0; k + inner_groups < groups.size(); ++k) (flags[k] ? red : kept).push_back(groups[k]);
  const ew::Table& t = ew::active_table();
  if (rows) {
    reduce_rows(t, r, x, kept, red, groups.empty() ? 1 : groups.back().size, group, y);
  } else {
    const int64_t inner = groups.back().size, nrows = inner_groups == 2 ? groups[groups.size() - 2].size : 1;
    reduce_columns(t, r, x, kept, red, nrows, inner, group, y);
  }
}

void group_norm(const float* x, const float* scale, const float* bias, bool per_channel, float* y, int64_t N,
                int64_t C, int64_t groups, int64_t inner, double eps) {
  const int64_t per = C / groups, gsize = per * inner;
  if (gsize == 0) return;
  const ew::Table& t = ew::active_table();
#pragma omp parallel for schedule(static) if (N * groups > 1 && N * C * inner > kReduceParallelThreshold)
  for (int64_t task = 0; task < N * groups; ++task) {
    const int64_t g = task % groups;
    const float* xg = x + task * gsize;
    float* yg = y + task * gsize;
    const double mean = t.row_reduce(ReduceOp::Sum, xg, gsize, 0.0f) / static_cast<double>(gsize);
    const float mf = static_cast<float>(mean);
    // Deviations from the float mean; E[(x - mf)^2] = var + (mean - mf)^2.
    const double dev = t.row_reduce(ReduceOp::SumSquareDev, xg, gsize, mf) / static_cast<double>(gsize);
    const double var = std::max(0.0, dev - (mean - mf) * (mean - mf));
    const double inv_std = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < per; ++c) {
      const int64_t p = per_channel ? g * per + c : g;
      t.norm_affine(xg + c * inner, yg + c * inner, inner, mf, static_cast<float>(inv_std * scale[p]), bias[p]);
    }
  }
}

}  // namespace onyx::kernels
