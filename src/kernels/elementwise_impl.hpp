// Internal to the elementwise kernels: the algorithms, written once over a vector type V and included by each build
// (elementwise_avx512.cpp, elementwise_avx2.cpp, elementwise.cpp). Everything here has internal linkage and uses no
// standard-library templates, so that no function compiled for one instruction set can be picked by the linker for
// another build. V provides: R (register), M (lane mask), N (lanes), set1, load, store, load_n / store_n (the first
// n lanes; load_n fills the rest), add, sub, mul, div, sqrt, fma (a*b+c), min/max (a < b ? a : b, so a NaN in b wins),
// lt, gt, ge, isnan, select(m, a, b) (m ? a : b), abs, copysign, scale2 (p * 2^n for integral n in [-150, 129]),
// hsum, hmax.
//
// Polynomial coefficients were fitted for this file (weighted least squares iterated toward minimax on Chebyshev
// nodes, in double, then rounded to float); the header states the accuracy the tests check.
#pragma once
#include "kernels/elementwise_table.hpp"

namespace {

using onyx::kernels::BinaryOp;
using onyx::kernels::UnaryOp;
using onyx::kernels::UnaryParams;

constexpr float kInf = __builtin_inff();

// e^x. Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial for e^r (truncation error
// below 1e-8 relative), then a scale by 2^n in two steps so results in the subnormal range round once.
template <class V>
inline typename V::R vexp(typename V::R x) {
  using R = typename V::R;
  const R xc = V::min(V::max(x, V::set1(-104.0f)), V::set1(89.0f));  // beyond: 0 / +inf after scaling
  const R magic = V::set1(12582912.0f);                                  // 1.5 * 2^23: adding it rounds to integer
  const R n = V::sub(V::fma(xc, V::set1(1.44269504088896341f), magic), magic);
  R r = V::fma(n, V::set1(-0.693359375f), xc);
  r = V::fma(n, V::set1(2.12194440e-4f), r);
  R p = V::set1(1.0f / 5040);
  p = V::fma(p, r, V::set1(1.0f / 720));
  p = V::fma(p, r, V::set1(1.0f / 120));
  p = V::fma(p, r, V::set1(1.0f / 24));
  p = V::fma(p, r, V::set1(1.0f / 6));
  p = V::fma(p, r, V::set1(0.5f));
  p = V::fma(p, r, V::set1(1.0f));
  p = V::fma(p, r, V::set1(1.0f));
  return V::select(V::isnan(x), x, V::scale2(p, n));
}

// ln x. x = 2^e m with m in [sqrt(1/2), sqrt(2)) (V::split gives m in [1, 2) and e for positive normal x;
// subnormals are scaled by 2^23 first), ln x = e ln 2 + ln(1 + f), f = m - 1, with
// ln(1 + f) = f + f^2 (-1/2 + f Q(f)), Q a degree-8 polynomial fitted to relative error 2e-9 on that interval, and
// ln 2 in two parts (e ln2_hi is exact). 0 gives -inf, negatives NaN, +inf and NaN themselves.
template <class V>
inline typename V::R vlog(typename V::R x) {
  using R = typename V::R;
  const auto tiny = V::lt(x, V::set1(1.17549435e-38f));
  R m;
  R e = V::split(V::select(tiny, V::mul(x, V::set1(8388608.0f)), x), m);
  e = V::select(tiny, V::sub(e, V::set1(23.0f)), e);
  const auto high = V::gt(m, V::set1(1.41421356f));
  m = V::select(high, V::mul(m, V::set1(0.5f)), m);
  e = V::select(high, V::add(e, V::set1(1.0f)), e);
  const R f = V::sub(m, V::set1(1.0f));
  R q = V::set1(0.06704681366682053f);
  q = V::fma(q, f, V::set1(-0.115529365837574f));
  q = V::fma(q, f, V::set1(0.11842896789312363f));
  q = V::fma(q, f, V::set1(-0.1242554634809494f));
  q = V::fma(q, f, V::set1(0.14228709042072296f));
  q = V::fma(q, f, V::set1(-0.166669562458992f));
  q = V::fma(q, f, V::set1(0.20001572370529175f));
  q = V::fma(q, f, V::set1(-0.2500002682209015f));
  q = V::fma(q, f, V::set1(0.33333322405815125f));
  const R r = V::fma(V::mul(f, f), V::fma(f, q, V::set1(-0.5f)), f);
  R y = V::fma(e, V::set1(0.693359375f), V::fma(e, V::set1(-2.12194440e-4f), r));
  y = V::select(V::lt(x, V::set1(0.0f)), V::set1(__builtin_nanf("")), y);
  y = V::select(V::eq(x, V::set1(0.0f)), V::set1(-__builtin_inff()), y);
  y = V::select(V::gt(x, V::set1(3.40282347e38f)), x, y);
  return V::select(V::isnan(x), x, y);
}

// 1 / (1 + e^-x); below 0 as e^x / (1 + e^x), which keeps tiny results precise.
template <class V>
inline typename V::R vsigmoid(typename V::R x) {
  using R = typename V::R;
  const R e = vexp<V>(V::sub(V::set1(0.0f), V::abs(x)));
  const R s = V::div(V::set1(1.0f), V::add(V::set1(1.0f), e));
  return V::select(V::ge(x, V::set1(0.0f)), s, V::mul(e, s));  // NaN: e is NaN, so e * s is
}

template <class V>
inline typename V::R vtanh(typename V::R x) {
  using R = typename V::R;
  const R a = V::abs(x);
  const R x2 = V::mul(x, x);
  R p = V::set1(-0.00566003518179059f);
  p = V::fma(p, x2, V::set1(0.02059103734791279f));
  p = V::fma(p, x2, V::set1(-0.05372108891606331f));
  p = V::fma(p, x2, V::set1(0.13331127166748047f));
  p = V::fma(p, x2, V::set1(-0.3333325982093811f));
  p = V::fma(p, x2, V::set1(1.0f));
  const R small = V::mul(x, p);
  const R e = vexp<V>(V::mul(a, V::set1(-2.0f)));
  const R large = V::copysign(V::div(V::sub(V::set1(1.0f), e), V::add(V::set1(1.0f), e)), x);
  const R y = V::select(V::lt(a, V::set1(0.625f)), small, large);
  return V::select(V::isnan(x), x, y);
}

// erf(z) / z as a polynomial in z^2, for |z| < 1.
template <class V>
inline typename V::R erf_small_ratio(typename V::R z2) {
  using R = typename V::R;
  R p = V::set1(-0.0005631466046907008f);
  p = V::fma(p, z2, V::set1(0.004917563870549202f));
  p = V::fma(p, z2, V::set1(-0.026711324229836464f));
  p = V::fma(p, z2, V::set1(0.11280180513858795f));
  p = V::fma(p, z2, V::set1(-0.37612324953079224f));
  p = V::fma(p, z2, V::set1(1.1283791065216064f));
  return p;
}

// erfc(a + da) for a >= 1 (a below 1 gives erfc(1)'s branch value, unused by callers), da a correction far below
// a's last bit: e^-(a+da)^2 Q(1/a) / a with Q fitted on [1, 10]; 0 beyond 10 (erfc(10) is below the smallest float).
// The square is kept in two floats (and da enters it) so that e^-a^2, whose relative error is 2a^2 times that of a,
// stays precise.
template <class V>
inline typename V::R erfc_large(typename V::R a, typename V::R da) {
  using R = typename V::R;
  const R ac = V::min(V::max(a, V::set1(1.0f)), V::set1(10.0f));
  const R inv = V::div(V::set1(1.0f), ac);
  const R u = V::sub(inv, V::set1(0.55f));
  R q = V::set1(-0.052195753902196884f);
  q = V::fma(q, u, V::set1(-0.029591673985123634f));
  q = V::fma(q, u, V::set1(0.10775607824325562f));
  q = V::fma(q, u, V::set1(-0.07385479658842087f));
  q = V::fma(q, u, V::set1(0.009282938204705715f));
  q = V::fma(q, u, V::set1(0.051039356738328934f));
  q = V::fma(q, u, V::set1(-0.09688778966665268f));
  q = V::fma(q, u, V::set1(0.0983150526881218f));
  q = V::fma(q, u, V::set1(-0.020366298034787178f));
  q = V::fma(q, u, V::set1(-0.17003469169139862f));
  q = V::fma(q, u, V::set1(0.5023534297943115f));
  const R hi = V::mul(ac, ac);
  // ac*ac - hi (exact with a fused multiply-add), plus 2 ac da
  const R lo = V::fma(V::add(ac, ac), da, V::fma(ac, ac, V::sub(V::set1(0.0f), hi)));
  const R e = V::mul(vexp<V>(V::sub(V::set1(0.0f), hi)), V::sub(V::set1(1.0f), lo));
  const R r = V::mul(V::mul(e, q), inv);
  return V::select(V::gt(a, V::set1(10.0f)), V::set1(0.0f), r);
}

template <class V>
inline typename V::R verf(typename V::R z) {
  using R = typename V::R;
  const R a = V::abs(z);
  const R small = V::mul(z, erf_small_ratio<V>(V::mul(z, z)));
  const R large = V::copysign(V::sub(V::set1(1.0f), erfc_large<V>(a, V::set1(0.0f))), z);
  const R y = V::select(V::lt(a, V::set1(1.0f)), small, large);
  return V::select(V::isnan(z), z, y);
}

// 0.5 x (1 + erf(x / sqrt 2)); for x / sqrt 2 <= -1, 1 + erf is erfc(|z|), computed without cancellation. z is
// carried as z + z_lo (1/sqrt 2 in two floats) since erfc's relative error grows with 2 z^2 times z's.
template <class V>
inline typename V::R vgelu_erf(typename V::R x) {
  using R = typename V::R;
  const R c_hi = V::set1(0.70710677f), c_lo = V::set1(1.2101617e-08f);  // c_hi + c_lo = 1/sqrt 2 to 2^-50
  const R z = V::mul(x, c_hi);
  const R z_lo = V::fma(x, c_lo, V::fma(x, c_hi, V::sub(V::set1(0.0f), z)));
  const R a = V::abs(z);
  const R small = V::fma(z, erf_small_ratio<V>(V::mul(z, z)), V::set1(1.0f));
  const R ec = erfc_large<V>(a, V::select(V::lt(z, V::set1(0.0f)), V::sub(V::set1(0.0f), z_lo), z_lo));  // |z + z_lo| - a
  const R large = V::select(V::gt(z, V::set1(0.0f)), V::sub(V::set1(2.0f), ec), ec);
  const R one_plus = V::select(V::lt(a, V::set1(1.0f)), small, large);
  const R y = V::mul(V::mul(V::set1(0.5f), x), one_plus);
  return V::select(V::isnan(x), x, y);
}

// 0.5 x (1 + tanh(w)) = x * sigmoid(2w), w = sqrt(2/pi) (x + 0.044715 x^3).
template <class V>
inline typename V::R vgelu_tanh(typename V::R x) {
  using R = typename V::R;
  const R x2 = V::mul(x, x);
  const R inner = V::mul(x, V::fma(x2, V::set1(0.0356774081363001f), V::set1(0.7978845608028654f)));
  // x = -inf gives -inf * 0 = NaN, as the formula does in the reference kernel.
  return V::mul(x, vsigmoid<V>(V::add(inner, inner)));
}

// y = f(x) over n elements.
template <class V, class F>
inline void map1(const float* x, float* y, int64_t n, const F& f) {
  int64_t i = 0;
  for (; i + V::N <= n; i += V::N) V::store(y + i, f(V::load(x + i)));
  if (i < n) V::store_n(y + i, f(V::load_n(x + i, n - i, 0.0f)), n - i);
}

template <class V, class F>
inline void map2(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n, const F& f) {
  using R = typename V::R;
  int64_t i = 0;
  if (sa && sb) {
    for (; i + V::N <= n; i += V::N) V::store(y + i, f(V::load(a + i), V::load(b + i)));
    if (i < n) V::store_n(y + i, f(V::load_n(a + i, n - i, 1.0f), V::load_n(b + i, n - i, 1.0f)), n - i);
  } else if (sa) {
    const R vb = V::set1(*b);
    for (; i + V::N <= n; i += V::N) V::store(y + i, f(V::load(a + i), vb));
    if (i < n) V::store_n(y + i, f(V::load_n(a + i, n - i, 1.0f), vb), n - i);
  } else if (sb) {
    const R va = V::set1(*a);
    for (; i + V::N <= n; i += V::N) V::store(y + i, f(va, V::load(b + i)));
    if (i < n) V::store_n(y + i, f(va, V::load_n(b + i, n - i, 1.0f)), n - i);
  } else {
    const R v = f(V::set1(*a), V::set1(*b));
    for (; i + V::N <= n; i += V::N) V::store(y + i, v);
    if (i < n) V::store_n(y + i, v, n - i);
  }
}

template <class V>
void binary_impl(BinaryOp op, const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n) {
  using R = typename V::R;
  switch (op) {
    case BinaryOp::Add: map2<V>(a, sa, b, sb, y, n, [](R p, R q) { return V::add(p, q); }); break;
    case BinaryOp::Sub: map2<V>(a, sa, b, sb, y, n, [](R p, R q) { return V::sub(p, q); }); break;
    case BinaryOp::Mul: map2<V>(a, sa, b, sb, y, n, [](R p, R q) { return V::mul(p, q); }); break;
    case BinaryOp::Div: map2<V>(a, sa, b, sb, y, n, [](R p, R q) { return V::div(p, q); }); break;
  }
}

template <class V>
void unary_impl(const UnaryParams& p, const float* x, float* y, int64_t n) {
  using R = typename V::R;
  switch (p.op) {
    case UnaryOp::Relu:
      // x < 0 ? 0 : x keeps NaN (the comparison is false) and -0.
      map1<V>(x, y, n, [](R v) { return V::select(V::lt(v, V::set1(0.0f)), V::set1(0.0f), v); });
      break;
    case UnaryOp::LeakyRelu: {
      const R alpha = V::set1(p.alpha);
      map1<V>(x, y, n, [alpha](R v) { return V::select(V::lt(v, V::set1(0.0f)), V::mul(v, alpha), v); });
      break;
    }
    case UnaryOp::Clip: {
      const R lo = V::set1(p.lo), hi = V::set1(p.hi);
      // max(lo, v) is lo > v ? lo : v and min(hi, .) hi < . ? hi : ., so NaN passes through; lo > hi gives hi.
      map1<V>(x, y, n, [lo, hi](R v) { return V::min(hi, V::max(lo, v)); });
      break;
    }
    case UnaryOp::Exp: map1<V>(x, y, n, [](R v) { return vexp<V>(v); }); break;
    case UnaryOp::Log: map1<V>(x, y, n, [](R v) { return vlog<V>(v); }); break;
    case UnaryOp::Sigmoid: map1<V>(x, y, n, [](R v) { return vsigmoid<V>(v); }); break;
    case UnaryOp::Tanh: map1<V>(x, y, n, [](R v) { return vtanh<V>(v); }); break;
    case UnaryOp::Erf: map1<V>(x, y, n, [](R v) { return verf<V>(v); }); break;
    case UnaryOp::GeluErf: map1<V>(x, y, n, [](R v) { return vgelu_erf<V>(v); }); break;
    case UnaryOp::GeluTanh: map1<V>(x, y, n, [](R v) { return vgelu_tanh<V>(v); }); break;
    case UnaryOp::Sqrt: map1<V>(x, y, n, [](R v) { return V::sqrt(v); }); break;
    case UnaryOp::Reciprocal: map1<V>(x, y, n, [](R v) { return V::div(V::set1(1.0f), v); }); break;
  }
}

template <class V>
void softmax_row_impl(const float* x, float* y, int64_t len, bool log) {
  using R = typename V::R;
  R vm = V::set1(-kInf);
  int64_t i = 0;
  for (; i + V::N <= len; i += V::N) vm = V::max(V::load(x + i), vm);
  if (i < len) vm = V::max(V::load_n(x + i, len - i, -kInf), vm);
  const R m = V::set1(V::hmax(vm));
  R vs = V::set1(0.0f);
  for (i = 0; i + V::N <= len; i += V::N) {
    const R e = vexp<V>(V::sub(V::load(x + i), m));
    if (!log) V::store(y + i, e);
    vs = V::add(vs, e);
  }
  if (i < len) {
    const R e = vexp<V>(V::sub(V::load_n(x + i, len - i, -kInf), m));  // filled lanes give e^-inf = 0
    if (!log) V::store_n(y + i, e, len - i);
    vs = V::add(vs, e);
  }
  const float sum = V::hsum(vs);
  if (log) {
    // (x - max) - log(sum): the maximum's own entry is -log(sum) to the last bit.
    const R lsum = V::set1(__builtin_logf(sum));
    map1<V>(x, y, len, [m, lsum](R v) { return V::sub(V::sub(v, m), lsum); });
  } else {
    const R inv = V::set1(1.0f / sum);
    map1<V>(y, y, len, [inv](R v) { return V::mul(v, inv); });
  }
}

template <class V>
void layer_norm_row_impl(const float* x, const float* scale, const float* bias, float* y, int64_t len, float eps,
                         float* mean_out, float* inv_std_out) {
  using R = typename V::R;
  R vs = V::set1(0.0f);
  int64_t i = 0;
  for (; i + V::N <= len; i += V::N) vs = V::add(vs, V::load(x + i));
  if (i < len) vs = V::add(vs, V::load_n(x + i, len - i, 0.0f));
  const float mean = len > 0 ? V::hsum(vs) / static_cast<float>(len) : 0.0f;
  const R m = V::set1(mean);
  R vv = V::set1(0.0f);
  for (i = 0; i + V::N <= len; i += V::N) {
    const R d = V::sub(V::load(x + i), m);
    vv = V::fma(d, d, vv);
  }
  if (i < len) {
    const R d = V::sub(V::load_n(x + i, len - i, mean), m);  // filled lanes give 0
    vv = V::fma(d, d, vv);
  }
  const float var = len > 0 ? V::hsum(vv) / static_cast<float>(len) : 0.0f;
  const float inv_std = 1.0f / __builtin_sqrtf(var + eps);
  if (mean_out) *mean_out = mean;
  if (inv_std_out) *inv_std_out = inv_std;
  const R is = V::set1(inv_std);
  i = 0;
  for (; i + V::N <= len; i += V::N) {
    const R n = V::mul(V::sub(V::load(x + i), m), is);
    const R s = scale ? V::load(scale + i) : V::set1(1.0f);
    const R b = bias ? V::load(bias + i) : V::set1(0.0f);
    V::store(y + i, V::fma(n, s, b));
  }
  if (i < len) {
    const int64_t k = len - i;
    const R n = V::mul(V::sub(V::load_n(x + i, k, 0.0f), m), is);
    const R s = scale ? V::load_n(scale + i, k, 1.0f) : V::set1(1.0f);
    const R b = bias ? V::load_n(bias + i, k, 0.0f) : V::set1(0.0f);
    V::store_n(y + i, V::fma(n, s, b), k);
  }
}

template <class V>
void affine_impl(const float* x, float* y, int64_t n, float mul, float add) {
  using R = typename V::R;
  const R vm = V::set1(mul), va = V::set1(add);
  map1<V>(x, y, n, [vm, va](R v) { return V::fma(v, vm, va); });
}

}  // namespace

#include "kernels/reduce_impl.hpp"

namespace {

template <class V>
onyx::kernels::ew::Table make_table() {
  return {binary_impl<V>,     unary_impl<V>,     softmax_row_impl<V>, layer_norm_row_impl<V>, affine_impl<V>,
          row_reduce_impl<V>, col_reduce_impl<V>, norm_affine_impl<V>};
}

}  // namespace
