// Transposes of 4-byte elements in AVX-512 registers (the caller checks the CPU): Y[c][r] = X[r][c] over the
// rows [r0, r1) and columns [c0, c1) of an R x C matrix X (Y is C x R), 16 x 16 blocks at a time (unpacks of 32-
// and 64-bit elements, then two rounds of 128-bit lane shuffles), the edges element by element. Elements move bit
// for bit.
#pragma once
#include <cstdint>

namespace onyx::kernels {

void transpose_tile_32bit_avx512(const uint32_t* x, uint32_t* y, int64_t R, int64_t C, int64_t r0, int64_t r1,
                                 int64_t c0, int64_t c1);

}  // namespace onyx::kernels
