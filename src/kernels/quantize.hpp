// The quantization ops' passes (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, the requantization of
// QLinearConv / QLinearMatMul), with the results of their reference kernels. Each runs its AVX-512 loop
// (quantize_avx512.cpp) where the CPU has AVX-512 (kernels::best_isa), else a plain loop (quantize.cpp); GCC's -O2
// leaves the plain loops scalar.
// - dynamic_range: mn = min(mn, x...), mx = max(mx, x...) with NaN ignored; mn <= 0 <= mx on entry.
// - quantize: y = clamp(round_half_even(x / scale) + z, lo, hi) (the quotient rounded in float; NaN gives z),
//   stored as bytes: [lo, hi] is [0, 255] for uint8 or [-128, 127] for int8. The quotient is clamped to +-1024
//   first (far beyond what saturates) and rounded by adding and subtracting 1.5 * 2^23 (round half to even in the
//   default rounding mode, exactly std::nearbyint's result below 2^22).
// - dequantize: y = float(x - z) * scale for uint8 or int8 x.
// - requantize: y = clamp(round_half_even(double(acc + add) * mult + y_zero), lo, hi) as bytes, acc + add wrapping
//   in 32 bits (the product and the sum rounded separately); requantize_columns the same along a row with one
//   multiplier per element (per-column scales) and no add.
// - qlinear_add: c = quantize(relu?(dequantize(a) + dequantize(b))) in one pass, each step rounded in float32 as the
//   separate passes above round it (bit-identical to them); a, b and c 8-bit of their own signedness.
#pragma once
#include <cstdint>

namespace onyx::kernels {

void dynamic_range(const float* px, int64_t n, float& mn, float& mx);
void quantize(const float* px, int64_t n, float scale, float z, float lo, float hi, uint8_t* py);
void dequantize(const void* px, bool is_signed, int64_t n, float scale, int32_t z, float* py);
void requantize(const int32_t* acc, int64_t n, int32_t add, double mult, double y_zero, double lo, double hi,
                uint8_t* out);
void requantize_columns(const int32_t* acc, int64_t n, const double* mult, double y_zero, double lo, double hi,
                        uint8_t* out);
struct QLinearAddParams {
  bool a_signed = false, b_signed = false, relu = false;
  float a_scale = 1, b_scale = 1, c_scale = 1;
  int32_t a_zero = 0, b_zero = 0;
  float c_zero = 0, lo = 0, hi = 255;  // c's zero point and range as float: [0, 255] or [-128, 127]
};
void qlinear_add(const void* a, const void* b, int64_t n, const QLinearAddParams& p, uint8_t* c);

// The AVX-512 loops (AVX512F/BW/VL/DQ), the same contracts.
void dynamic_range_avx512(const float* px, int64_t n, float& mn, float& mx);
void quantize_avx512(const float* px, int64_t n, float scale, float z, float lo, float hi, uint8_t* py);
void dequantize_avx512(const void* px, bool is_signed, int64_t n, float scale, int32_t z, float* py);
void requantize_avx512(const int32_t* acc, int64_t n, int32_t add, double mult, double y_zero, double lo, double hi,
                       uint8_t* out);
void requantize_columns_avx512(const int32_t* acc, int64_t n, const double* mult, double y_zero, double lo, double hi,
                               uint8_t* out);
void qlinear_add_avx512(const void* a, const void* b, int64_t n, const QLinearAddParams& p, uint8_t* c);

}  // namespace onyx::kernels
