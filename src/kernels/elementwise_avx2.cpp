// The AVX2 build of the elementwise kernels (compiled with -mavx2 -mfma; only called after elementwise.cpp has
// checked the CPU supports them).
#include <immintrin.h>

#include "kernels/elementwise_impl.hpp"

namespace {

struct Avx2 {
  using R = __m256;
  using M = __m256;
  static constexpr int64_t N = 8;
  static __m256i first(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R set1(float v) { return _mm256_set1_ps(v); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R load_n(const float* p, int64_t n, float fill) {
    const __m256i m = first(n);
    return _mm256_blendv_ps(set1(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void store_n(float* p, R v, int64_t n) { _mm256_maskstore_ps(p, first(n), v); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R sqrt(R a) { return _mm256_sqrt_ps(a); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static M lt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M gt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M ge(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static M eq(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  static M isnan(R a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static R select(M m, R a, R b) { return _mm256_blendv_ps(b, a, m); }
  static R abs(R a) { return _mm256_andnot_ps(set1(-0.0f), a); }
  static R copysign(R mag, R sgn) {
    const R sign = set1(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, sgn));
  }
  static R scale2(R p, R n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const R s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const R s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return mul(mul(p, s1), s2);
  }
  static R split(R x, R& mantissa) {
    const __m256i bits = _mm256_castps_si256(x);
    mantissa = _mm256_castsi256_ps(
        _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffff)), _mm256_set1_epi32(0x3f800000)));
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
  }
  static float hsum(R v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(R v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

namespace onyx::kernels::ew {

const Table& avx2_table() {
  static const Table table = make_table<Avx2>();
  return table;
}

}  // namespace onyx::kernels::ew
