// DynamicQuantizeLinear's passes on AVX-512 (AVX512F/BW/VL/DQ; the caller checks the CPU), with the results of
// its plain loops (ops/quant/quantize_linear.cpp):
// - dynamic_range_avx512: mn = min(mn, x...), mx = max(mx, x...) with NaN ignored; mn <= 0 <= mx on entry.
// - quantize_uint8_avx512: y = saturate(round_half_even(x / scale) + z) to [0, 255], NaN to z; scale > 0.
#pragma once
#include <cstdint>

namespace onyx::kernels {

void dynamic_range_avx512(const float* px, int64_t n, float& mn, float& mx);
void quantize_uint8_avx512(const float* px, int64_t n, float scale, float z, uint8_t* py);

}  // namespace onyx::kernels
