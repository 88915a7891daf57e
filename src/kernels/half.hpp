// Conversion of whole arrays between IEEE binary16 (float16) and float32: the F16C instructions where the CPU has
// them (chosen at run time), else the portable scalar conversions of base/dtype.hpp. Both builds give the same bits:
// float32 -> float16 rounds to nearest even, overflow gives inf; a NaN comes out quiet with the payload bits that
// fit (as the instructions do, and as Cast's element loop does through double). Large arrays are split over the
// OpenMP team.
#pragma once
#include <cstddef>
#include <cstdint>

namespace onyx::kernels {

void half_to_float_array(const uint16_t* in, float* out, size_t n);
void float_to_half_array(const float* in, uint16_t* out, size_t n);

// Whether the F16C build runs (false: the scalar one). For tests.
bool half_conversion_uses_f16c();
// For tests: force the scalar build (true) or allow F16C again (false).
void force_scalar_half_conversion(bool scalar);

}  // namespace onyx::kernels
