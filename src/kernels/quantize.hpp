// The quantization ops' passes on AVX-512 (AVX512F/BW/VL/DQ; the caller checks the CPU), with the results of their
// plain loops (ops/quant/quantize_linear.cpp):
// - dynamic_range_avx512: mn = min(mn, x...), mx = max(mx, x...) with NaN ignored; mn <= 0 <= mx on entry.
// - quantize_avx512: y = clamp(round_half_even(x / scale) + z, lo, hi) (the quotient rounded in float; NaN gives z),
//   stored as bytes: [lo, hi] is [0, 255] for uint8 or [-128, 127] for int8 (QuantizeLinear, DynamicQuantizeLinear).
// - dequantize_avx512: y = float(x - z) * scale for uint8 or int8 x (DequantizeLinear).
// - requantize_avx512: y = clamp(round_half_even(double(acc + add) * mult + y_zero), lo, hi) as bytes, acc + add
//   wrapping in 32 bits (QLinearConv / QLinearMatMul outputs; the product and the sum rounded separately);
//   requantize_columns_avx512 the same along a row with a multiplier per element (per-column scales) and no add.
#pragma once
#include <cstdint>

namespace onyx::kernels {

void dynamic_range_avx512(const float* px, int64_t n, float& mn, float& mx);
void quantize_avx512(const float* px, int64_t n, float scale, float z, float lo, float hi, uint8_t* py);
void dequantize_avx512(const void* px, bool is_signed, int64_t n, float scale, int32_t z, float* py);
void requantize_avx512(const int32_t* acc, int64_t n, int32_t add, double mult, double y_zero, double lo, double hi,
                       uint8_t* out);
void requantize_columns_avx512(const int32_t* acc, int64_t n, const double* mult, double y_zero, double lo, double hi,
                               uint8_t* out);

}  // namespace onyx::kernels
