// The AVX-512 build of the elementwise kernels (compiled with -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma; only
// called after elementwise.cpp has checked the CPU supports them).
#include <immintrin.h>

#include "kernels/elementwise_impl.hpp"

namespace {

struct Avx512 {
  using R = __m512;
  using M = __mmask16;
  static constexpr int64_t N = 16;
  static M first(int64_t n) { return static_cast<M>((1u << n) - 1u); }
  static R set1(float v) { return _mm512_set1_ps(v); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R load_n(const float* p, int64_t n, float fill) { return _mm512_mask_loadu_ps(set1(fill), first(n), p); }
  static void store_n(float* p, R v, int64_t n) { _mm512_mask_storeu_ps(p, first(n), v); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  static R sqrt(R a) { return _mm512_sqrt_ps(a); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static M lt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M gt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M ge(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static M eq(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static M isnan(R a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static R select(M m, R a, R b) { return _mm512_mask_blend_ps(m, b, a); }
  static R abs(R a) { return _mm512_abs_ps(a); }
  static R copysign(R mag, R sgn) {
    const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_andnot_si512(sign, _mm512_castps_si512(mag)),
                                               _mm512_and_si512(sign, _mm512_castps_si512(sgn))));
  }
  // p * 2^n, rounding once also where the result is subnormal.
  static R scale2(R p, R n) { return _mm512_scalef_ps(p, n); }
  static R split(R x, R& mantissa) {
    mantissa = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
    return _mm512_getexp_ps(x);
  }
  static float hsum(R v) { return _mm512_reduce_add_ps(v); }
  static float hmax(R v) { return _mm512_reduce_max_ps(v); }
};

}  // namespace

namespace onyx::kernels::ew {

const Table& avx512_table() {
  static const Table table = make_table<Avx512>();
  return table;
}

}  // namespace onyx::kernels::ew
