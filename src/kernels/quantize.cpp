#include "kernels/quantize.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/elementwise.hpp"

namespace onyx::kernels {
namespace {

bool avx512() {
  static const bool ok = best_isa() == Isa::Avx512;
  return ok;
}

// The requantization of one element (see quantize.hpp).
uint8_t requantize_one(int32_t acc, uint32_t add, double mult, double y_zero, double lo, double hi) {
  const double r = std::nearbyint(static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(acc) + add)) * mult + y_zero);
  // A NaN (a NaN or infinite scale) gives `lo`, as the AVX-512 path's max(v, lo) does; converting it is undefined.
  const double v = r != r ? lo : std::clamp(r, lo, hi);
  return static_cast<uint8_t>(static_cast<int32_t>(v));  // the low byte: the uint8 or int8 value
}

}  // namespace

void dynamic_range(const float* px, int64_t n, float& mn, float& mx) {
  if (avx512()) return dynamic_range_avx512(px, n, mn, mx);
  for (int64_t i = 0; i < n; ++i) {  // a comparison with NaN is false: NaN leaves the running values
    mn = px[i] < mn ? px[i] : mn;
    mx = px[i] > mx ? px[i] : mx;
  }
}

namespace {

// The quantization of one element (see quantize.hpp).
uint8_t quantize_one(float x, float scale, float z, float lo, float hi) {
  const float magic = 12582912.f;
  float r = x / scale;
  r = r > 1024.f ? 1024.f : (r < -1024.f ? -1024.f : r);
  r = (r + magic) - magic;
  r = r != r ? 0.f : r;
  r += z;
  r = r < lo ? lo : (r > hi ? hi : r);
  return static_cast<uint8_t>(static_cast<int32_t>(r));  // the low byte: the uint8 or int8 value
}

}  // namespace

void quantize(const float* px, int64_t n, float scale, float z, float lo, float hi, uint8_t* py) {
  if (avx512()) return quantize_avx512(px, n, scale, z, lo, hi, py);
  for (int64_t i = 0; i < n; ++i) py[i] = quantize_one(px[i], scale, z, lo, hi);
}

void qlinear_add(const void* a, const void* b, int64_t n, const QLinearAddParams& p, uint8_t* c) {
  if (avx512()) return qlinear_add_avx512(a, b, n, p, c);
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t va = p.a_signed ? static_cast<int8_t>(pa[i]) : pa[i], vb = p.b_signed ? static_cast<int8_t>(pb[i]) : pb[i];
    const float fa = static_cast<float>(va - p.a_zero) * p.a_scale, fb = static_cast<float>(vb - p.b_zero) * p.b_scale;
    float s = fa + fb;
    if (p.relu) s = s > 0.f ? s : 0.f;
    c[i] = quantize_one(s, p.c_scale, p.c_zero, p.lo, p.hi);
  }
}

void dequantize(const void* px, bool is_signed, int64_t n, float scale, int32_t z, float* py) {
  if (avx512()) return dequantize_avx512(px, is_signed, n, scale, z, py);
  const auto* bytes = static_cast<const uint8_t*>(px);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = is_signed ? static_cast<int32_t>(static_cast<int8_t>(bytes[i])) : static_cast<int32_t>(bytes[i]);
    py[i] = static_cast<float>(v - z) * scale;
  }
}

void requantize(const int32_t* acc, int64_t n, int32_t add, double mult, double y_zero, double lo, double hi,
                uint8_t* out) {
  if (avx512() && n >= 8) return requantize_avx512(acc, n, add, mult, y_zero, lo, hi, out);
  for (int64_t i = 0; i < n; ++i) out[i] = requantize_one(acc[i], static_cast<uint32_t>(add), mult, y_zero, lo, hi);
}

void requantize_columns(const int32_t* acc, int64_t n, const double* mult, double y_zero, double lo, double hi,
                        uint8_t* out) {
  if (avx512()) return requantize_columns_avx512(acc, n, mult, y_zero, lo, hi, out);
  for (int64_t i = 0; i < n; ++i) out[i] = requantize_one(acc[i], 0u, mult[i], y_zero, lo, hi);
}

}  // namespace onyx::kernels
