// Integer matrix products for MatMulInteger (and the other integer ops built on a product):
//   C[M, N] (int32) = (A - a_zero) x (B - b_zero)
// A [M, K] uint8 or int8 and B [K, N] int8, row-major; int32 accumulation that wraps as the reference kernels'
// does.
// - int8_gemm: any A and B, zero points per tensor. Where the CPU has VNNI (AVX512-VNNI or AVX-VNNI), oneDNN's
//   integer GEMM runs it: its multiply-adds then sum the products in 32 bits. Without VNNI its 16-bit pair sums can
//   saturate, so a plain int32 loop runs instead.
// - int8_gemm_packed: B packed once (a constant weight), b_zero per tensor or per column, and an epilogue that
//   writes int32 or float32 = float(C) * scale + bias (MatMulInteger followed by Cast, Mul and Add). On AVX512-VNNI
//   its own kernel runs over the packed panels; elsewhere int8_gemm and a plain epilogue.
#pragma once
#include <cstdint>
#include <vector>

namespace onyx::kernels {

// True when int8_gemm goes through oneDNN (the CPU has VNNI).
bool int8_gemm_uses_onednn();

// `a_signed`: A holds int8 (else uint8); a_zero is in A's range, b_zero in int8's.
void int8_gemm(bool a_signed, const void* a, int32_t a_zero, const int8_t* b, int32_t b_zero, int64_t M, int64_t N,
               int64_t K, int32_t* c);

// B [K, N] int8 as int8_gemm_packed reads it: on AVX512-VNNI, 16-column panels of 4-row groups
// ([N/16][K_padded/4][16][4], zero padded); elsewhere B as given.
struct PackedInt8 {
  int64_t K = 0, K_padded = 0, N = 0;
  bool vnni = false;
  std::vector<int8_t> data;
  std::vector<int32_t> col_sum;  // sum over k of B[k][n] (wrapping)
};
void pack_int8(const int8_t* b, int64_t K, int64_t N, PackedInt8& out);

// Where int8_gemm_packed writes: int32 C (`c`), or float32 Y (`y`) = float(C) * scale + bias, rounded after the
// product and after the sum as separate Cast, Mul and Add nodes round. scale: one value or one per column
// (scale_per_column); bias: none or one per column. ldc: the row stride of C or Y in elements.
struct Int8Output {
  int32_t* c = nullptr;
  float* y = nullptr;
  int64_t ldc = 0;
  const float* scale = nullptr;
  bool scale_per_column = false;
  const float* bias = nullptr;
};

// b_zero: one value (b_zero_count 1) or one per column (b_zero_count N), in int8's range.
void int8_gemm_packed(bool a_signed, const void* a, int64_t M, int32_t a_zero, const PackedInt8& b,
                      const int32_t* b_zero, int64_t b_zero_count, const Int8Output& out);

// The AVX512-VNNI kernel (int8_gemm_avx512.cpp): A unsigned with row stride lda >= K_padded; row_sum[m] = sum of A's
// row, col_term[n] = K*a_zero*b_zero[n] - a_zero*col_sum[n] (both wrapping), b_zero one per column.
void int8_gemm_packed_vnni(const uint8_t* a, int64_t lda, int64_t M, const int32_t* row_sum, const int32_t* col_term,
                           const int32_t* b_zero, const PackedInt8& b, const Int8Output& out, bool parallel);

// dst[i] = src[2 * i] ^ flip for i < n (im2col of stride-2 integer convolutions; AVX512BW, the caller checks):
// reads only src[0, 2n - 2].
void every_other_byte_avx512(const uint8_t* src, int64_t n, uint8_t flip, uint8_t* dst);

}  // namespace onyx::kernels
