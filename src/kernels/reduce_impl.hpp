// Internal to the elementwise kernels: the reduction algorithms over a vector type V (see elementwise_impl.hpp for
// what V provides and why everything here has internal linkage). Included by elementwise_impl.hpp, so each build
// (AVX-512, AVX2, scalar) gets its own copy; kernels/reduce.cpp splits the work and calls them through the table.
#pragma once
// Included at the end of elementwise_impl.hpp: uses its vexp and map1.

namespace {

using onyx::kernels::ew::ReduceOp;

// A row sum accumulates in four registers, kRowBlockRegs additions per lane each, before the block's float total goes
// into a double (see kernels/reduce.hpp for the error this bounds).
constexpr int64_t kRowBlockRegs = 32;

// max / min that propagate NaN from either side: the accumulator, once NaN, stays NaN; V::max(acc, x) is
// acc > x ? acc : x, which takes x when x is NaN.
template <class V>
inline typename V::R max_nan(typename V::R acc, typename V::R x) {
  return V::select(V::isnan(acc), acc, V::max(acc, x));
}
template <class V>
inline typename V::R min_nan(typename V::R acc, typename V::R x) {
  return V::select(V::isnan(acc), acc, V::min(acc, x));
}

// The value a sum-like op adds for element x, with s the shift.
template <class V, ReduceOp Op>
inline typename V::R term(typename V::R x, typename V::R s) {
  if constexpr (Op == ReduceOp::SumSquareDev) {
    const typename V::R d = V::sub(x, s);
    return V::mul(d, d);
  } else if constexpr (Op == ReduceOp::L1) {
    return V::abs(x);
  } else if constexpr (Op == ReduceOp::SumExp) {
    return vexp<V>(V::sub(x, s));
  } else {
    return x;
  }
}

// One accumulation step: acc combined with element v (shift s).
template <class V, ReduceOp Op>
inline typename V::R step(typename V::R acc, typename V::R v, typename V::R s) {
  if constexpr (Op == ReduceOp::Max) return max_nan<V>(acc, v);
  else if constexpr (Op == ReduceOp::Min) return min_nan<V>(acc, v);
  else return V::add(acc, term<V, Op>(v, s));
}

// Two accumulators combined.
template <class V, ReduceOp Op>
inline typename V::R merge(typename V::R a, typename V::R b) {
  if constexpr (Op == ReduceOp::Max) return max_nan<V>(a, b);
  else if constexpr (Op == ReduceOp::Min) return min_nan<V>(a, b);
  else return V::add(a, b);
}

template <ReduceOp Op>
constexpr float identity() {
  return Op == ReduceOp::Max ? -kInf : Op == ReduceOp::Min ? kInf : 0.0f;
}

// The op folded over x[0, n) in four registers (their lanes not yet combined). fill: what the lanes past n load, so
// that they add nothing.
template <class V, ReduceOp Op>
inline typename V::R fold_span(const float* x, int64_t n, float fill, typename V::R s) {
  using R = typename V::R;
  R a0 = V::set1(identity<Op>()), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * V::N <= n; i += 4 * V::N) {
    a0 = step<V, Op>(a0, V::load(x + i), s);
    a1 = step<V, Op>(a1, V::load(x + i + V::N), s);
    a2 = step<V, Op>(a2, V::load(x + i + 2 * V::N), s);
    a3 = step<V, Op>(a3, V::load(x + i + 3 * V::N), s);
  }
  for (; i + V::N <= n; i += V::N) a0 = step<V, Op>(a0, V::load(x + i), s);
  if (i < n) a1 = step<V, Op>(a1, V::load_n(x + i, n - i, fill), s);
  return merge<V, Op>(merge<V, Op>(a0, a1), merge<V, Op>(a2, a3));
}

template <class V, ReduceOp Op>
double row_reduce_op(const float* x, int64_t len, float shift) {
  using R = typename V::R;
  const R s = V::set1(shift);
  if constexpr (Op == ReduceOp::Max || Op == ReduceOp::Min) {
    const R a = fold_span<V, Op>(x, len, identity<Op>(), s);
    // NaN in any lane wins; otherwise the extreme lane.
    alignas(64) float lanes[V::N];
    V::store(lanes, a);
    float r = identity<Op>();
    for (int64_t k = 0; k < V::N; ++k) {
      if (lanes[k] != lanes[k]) return lanes[k];
      if (Op == ReduceOp::Max ? lanes[k] > r : lanes[k] < r) r = lanes[k];
    }
    return r;
  } else {
    // Blocks of 4 * N * kRowBlockRegs elements summed in float, block totals in double. The filled lanes of a tail
    // must add 0: x = 0 for Sum and L1, the shift for SumSquareDev, -inf for SumExp.
    const float fill = Op == ReduceOp::SumSquareDev ? shift : Op == ReduceOp::SumExp ? -kInf : 0.0f;
    constexpr int64_t block = 4 * V::N * kRowBlockRegs;
    double total = 0;
    for (int64_t b = 0; b < len; b += block) {
      const int64_t n = len - b < block ? len - b : block;
      total += static_cast<double>(V::hsum(fold_span<V, Op>(x + b, n, fill, s)));
    }
    return total;
  }
}

template <class V>
double row_reduce_impl(ReduceOp op, const float* x, int64_t len, float shift) {
  switch (op) {
    case ReduceOp::Sum: return row_reduce_op<V, ReduceOp::Sum>(x, len, shift);
    case ReduceOp::SumSquareDev: return row_reduce_op<V, ReduceOp::SumSquareDev>(x, len, shift);
    case ReduceOp::L1: return row_reduce_op<V, ReduceOp::L1>(x, len, shift);
    case ReduceOp::SumExp: return row_reduce_op<V, ReduceOp::SumExp>(x, len, shift);
    case ReduceOp::Max: return row_reduce_op<V, ReduceOp::Max>(x, len, shift);
    case ReduceOp::Min: return row_reduce_op<V, ReduceOp::Min>(x, len, shift);
  }
  return 0;
}

// Folds `rows` rows (stride apart) of n columns into out, column by column; four registers of columns at a time so
// the accumulators stay in registers while the rows stream past.
template <class V, ReduceOp Op>
void col_reduce_op(const float* x, int64_t rows, int64_t stride, int64_t n, const float* shift, float* out) {
  using R = typename V::R;
  auto shift_at = [shift](int64_t j) { return shift ? V::load(shift + j) : V::set1(0.0f); };
  int64_t j = 0;
  for (; j + 4 * V::N <= n; j += 4 * V::N) {
    const R s0 = shift_at(j), s1 = shift_at(j + V::N), s2 = shift_at(j + 2 * V::N), s3 = shift_at(j + 3 * V::N);
    R a0 = V::set1(identity<Op>()), a1 = a0, a2 = a0, a3 = a0;
    const float* p = x + j;
    for (int64_t r = 0; r < rows; ++r, p += stride) {
      a0 = step<V, Op>(a0, V::load(p), s0);
      a1 = step<V, Op>(a1, V::load(p + V::N), s1);
      a2 = step<V, Op>(a2, V::load(p + 2 * V::N), s2);
      a3 = step<V, Op>(a3, V::load(p + 3 * V::N), s3);
    }
    V::store(out + j, a0);
    V::store(out + j + V::N, a1);
    V::store(out + j + 2 * V::N, a2);
    V::store(out + j + 3 * V::N, a3);
  }
  for (; j + V::N <= n; j += V::N) {
    const R s0 = shift_at(j);
    R a = V::set1(identity<Op>());
    const float* p = x + j;
    for (int64_t r = 0; r < rows; ++r, p += stride) a = step<V, Op>(a, V::load(p), s0);
    V::store(out + j, a);
  }
  if (j < n) {
    // The lanes past n compute garbage that is never stored.
    const int64_t k = n - j;
    const R s0 = shift ? V::load_n(shift + j, k, 0.0f) : V::set1(0.0f);
    R a = V::set1(identity<Op>());
    const float* p = x + j;
    for (int64_t r = 0; r < rows; ++r, p += stride) a = step<V, Op>(a, V::load_n(p, k, 0.0f), s0);
    V::store_n(out + j, a, k);
  }
}

template <class V>
void col_reduce_impl(ReduceOp op, const float* x, int64_t rows, int64_t stride, int64_t n, const float* shift,
                     float* out) {
  switch (op) {
    case ReduceOp::Sum: return col_reduce_op<V, ReduceOp::Sum>(x, rows, stride, n, shift, out);
    case ReduceOp::SumSquareDev: return col_reduce_op<V, ReduceOp::SumSquareDev>(x, rows, stride, n, shift, out);
    case ReduceOp::L1: return col_reduce_op<V, ReduceOp::L1>(x, rows, stride, n, shift, out);
    case ReduceOp::SumExp: return col_reduce_op<V, ReduceOp::SumExp>(x, rows, stride, n, shift, out);
    case ReduceOp::Max: return col_reduce_op<V, ReduceOp::Max>(x, rows, stride, n, shift, out);
    case ReduceOp::Min: return col_reduce_op<V, ReduceOp::Min>(x, rows, stride, n, shift, out);
  }
}

// y = (x - mean) * mul + add (the normalize, scale and bias of GroupNormalization / InstanceNormalization).
template <class V>
void norm_affine_impl(const float* x, float* y, int64_t n, float mean, float mul, float add) {
  using R = typename V::R;
  const R m = V::set1(mean), k = V::set1(mul), b = V::set1(add);
  map1<V>(x, y, n, [m, k, b](R v) { return V::fma(V::sub(v, m), k, b); });
}

}  // namespace
