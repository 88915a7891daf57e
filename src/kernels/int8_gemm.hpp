// Integer matrix products for MatMulInteger (and the other integer ops built on a product):
//   C[M, N] (int32) = (A - a_zero) x (B - b_zero)
// A [M, K] uint8 or int8 and B [K, N] int8, row-major, zero points per tensor; int32 accumulation that wraps as the
// reference kernels' does. Where the CPU has VNNI (AVX512-VNNI or AVX-VNNI), oneDNN's integer GEMM runs it: its
// multiply-adds then sum the products in 32 bits. Without VNNI its 16-bit pair sums can saturate, so a plain
// int32 loop runs instead.
#pragma once
#include <cstdint>

namespace onyx::kernels {

// True when int8_gemm goes through oneDNN (the CPU has VNNI).
bool int8_gemm_uses_onednn();

// `a_signed`: A holds int8 (else uint8); a_zero is in A's range, b_zero in int8's.
void int8_gemm(bool a_signed, const void* a, int32_t a_zero, const int8_t* b, int32_t b_zero, int64_t M, int64_t N,
               int64_t K, int32_t* c);

}  // namespace onyx::kernels
