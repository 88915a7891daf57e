#include "kernels/half.hpp"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <bit>

#include "base/dtype.hpp"

namespace onyx::kernels {
namespace {

std::atomic<bool> g_force_scalar{false};

bool f16c_available() {
  // F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  }();
  return ok;
}

// A NaN made quiet (its payload kept), as the conversion instructions do.
float quiet(float f) {
  return f != f ? std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 0x00400000u) : f;
}

void half_to_float_scalar(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = quiet(half_to_float(in[i]));
}

void float_to_half_scalar(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = float_to_half(quiet(in[i]));
}

__attribute__((target("avx,f16c"))) void half_to_float_f16c(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  half_to_float_scalar(in + i, out + i, n - i);
}

__attribute__((target("avx,f16c"))) void float_to_half_f16c(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  float_to_half_scalar(in + i, out + i, n - i);
}

bool use_f16c() { return f16c_available() && !g_force_scalar.load(std::memory_order_relaxed); }

// Below this many elements the calling thread does it alone (a conversion runs at memory speed).
constexpr size_t kHalfParallelThreshold = size_t{1} << 18;
constexpr size_t kBlock = size_t{1} << 14;

template <class In, class Out, class F>
void blocked(const In* in, Out* out, size_t n, F convert) {
  if (n <= kHalfParallelThreshold) {
    convert(in, out, n);
    return;
  }
  const int64_t blocks = static_cast<int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t begin = static_cast<size_t>(b) * kBlock;
    convert(in + begin, out + begin, std::min(kBlock, n - begin));
  }
}

}  // namespace

void half_to_float_array(const uint16_t* in, float* out, size_t n) {
  blocked(in, out, n, use_f16c() ? half_to_float_f16c : half_to_float_scalar);
}

void float_to_half_array(const float* in, uint16_t* out, size_t n) {
  blocked(in, out, n, use_f16c() ? float_to_half_f16c : float_to_half_scalar);
}

bool half_conversion_uses_f16c() { return use_f16c(); }

void force_scalar_half_conversion(bool scalar) { g_force_scalar.store(scalar, std::memory_order_relaxed); }

}  // namespace onyx::kernels
