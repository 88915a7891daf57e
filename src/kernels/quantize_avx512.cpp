// DynamicQuantizeLinear's two passes on AVX-512 (see kernels/quantize.hpp).
#include <immintrin.h>

#include "kernels/quantize.hpp"

namespace onyx::kernels {

// min_ps / max_ps return their second operand when either is NaN: a NaN of x leaves the running value.
void dynamic_range_avx512(const float* px, int64_t n, float& mn, float& mx) {
  __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, px + i);  // masked-off lanes read 0, inside the range already
    lo = _mm512_min_ps(x, lo);
    hi = _mm512_max_ps(x, hi);
  }
  mn = _mm512_reduce_min_ps(lo);
  mx = _mm512_reduce_max_ps(hi);
}

namespace {

// Sixteen floats quantized (see quantize.hpp): their bytes.
struct Quantizer {
  __m512 vs, vz, magic = _mm512_set1_ps(12582912.f), bound = _mm512_set1_ps(1024.f), nbound = _mm512_set1_ps(-1024.f),
                 zero = _mm512_setzero_ps(), vlo, vhi;
  Quantizer(float scale, float z, float lo, float hi)
      : vs(_mm512_set1_ps(scale)), vz(_mm512_set1_ps(z)), vlo(_mm512_set1_ps(lo)), vhi(_mm512_set1_ps(hi)) {}
  __m128i operator()(__m512 x) const {
    __m512 r = _mm512_div_ps(x, vs);
    const __mmask16 nan = _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
    r = _mm512_min_ps(_mm512_max_ps(r, nbound), bound);
    r = _mm512_sub_ps(_mm512_add_ps(r, magic), magic);
    r = _mm512_mask_blend_ps(nan, r, zero);
    r = _mm512_add_ps(r, vz);
    r = _mm512_min_ps(_mm512_max_ps(r, vlo), vhi);
    // In [-128, 255] the low byte of the integer is the uint8 or int8 value.
    return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(r));
  }
};

// Sixteen 8-bit values dequantized: float(v - z) * scale.
__m512 dequantize16(__m128i raw, bool is_signed, __m512i vz, __m512 vs) {
  const __m512i v = is_signed ? _mm512_cvtepi8_epi32(raw) : _mm512_cvtepu8_epi32(raw);
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, vz)), vs);
}

}  // namespace

void quantize_avx512(const float* px, int64_t n, float scale, float z, float lo, float hi, uint8_t* py) {
  const Quantizer q(scale, z, lo, hi);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm_mask_storeu_epi8(py + i, m, q(_mm512_maskz_loadu_ps(m, px + i)));
  }
}

void qlinear_add_avx512(const void* a, const void* b, int64_t n, const QLinearAddParams& p, uint8_t* c) {
  const Quantizer q(p.c_scale, p.c_zero, p.lo, p.hi);
  const __m512 as = _mm512_set1_ps(p.a_scale), bs = _mm512_set1_ps(p.b_scale), zero = _mm512_setzero_ps();
  const __m512i az = _mm512_set1_epi32(p.a_zero), bz = _mm512_set1_epi32(p.b_zero);
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 s = _mm512_add_ps(dequantize16(_mm_maskz_loadu_epi8(m, pa + i), p.a_signed, az, as),
                             dequantize16(_mm_maskz_loadu_epi8(m, pb + i), p.b_signed, bz, bs));
    if (p.relu) s = _mm512_max_ps(s, zero);
    _mm_mask_storeu_epi8(c + i, m, q(s));
  }
}

void dequantize_avx512(const void* px, bool is_signed, int64_t n, float scale, int32_t z, float* py) {
  const __m512 vs = _mm512_set1_ps(scale);
  const __m512i vz = _mm512_set1_epi32(z);
  const auto* bytes = static_cast<const uint8_t*>(px);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(py + i, m, dequantize16(_mm_maskz_loadu_epi8(m, bytes + i), is_signed, vz, vs));
  }
}

void requantize_avx512(const int32_t* acc, int64_t n, int32_t add, double mult, double y_zero, double lo, double hi,
                       uint8_t* out) {
  const __m256i vadd = _mm256_set1_epi32(add);
  const __m512d vm = _mm512_set1_pd(mult), vz = _mm512_set1_pd(y_zero), vlo = _mm512_set1_pd(lo), vhi = _mm512_set1_pd(hi);
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = n - i >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << (n - i)) - 1);
    // The bias wraps with the accumulator in 32 bits, as the reference's sum does.
    const __m256i a = _mm256_add_epi32(_mm256_maskz_loadu_epi32(m, acc + i), vadd);
    __m512d v = _mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(a), vm), vz);
    v = _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_min_pd(_mm512_max_pd(v, vlo), vhi);
    _mm_mask_storeu_epi8(out + i, m, _mm256_cvtepi32_epi8(_mm512_cvtpd_epi32(v)));
  }
}

void requantize_columns_avx512(const int32_t* acc, int64_t n, const double* mult, double y_zero, double lo, double hi,
                               uint8_t* out) {
  const __m512d vz = _mm512_set1_pd(y_zero), vlo = _mm512_set1_pd(lo), vhi = _mm512_set1_pd(hi);
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = n - i >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << (n - i)) - 1);
    const __m256i a = _mm256_maskz_loadu_epi32(m, acc + i);
    __m512d v = _mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(a), _mm512_maskz_loadu_pd(m, mult + i)), vz);
    v = _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_min_pd(_mm512_max_pd(v, vlo), vhi);
    _mm_mask_storeu_epi8(out + i, m, _mm256_cvtepi32_epi8(_mm512_cvtpd_epi32(v)));
  }
}

}  // namespace onyx::kernels
