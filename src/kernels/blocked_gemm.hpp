// onyx's own matrix product for what oneDNN's paths do not take: MatMul, Gemm, Conv (im2col) and ConvTranspose
// (col2im) in float16 and bfloat16 (computed in float), double, and float32 shapes or inputs the oneDNN kernels
// pass on. Blocked over K and N with a 4x8 register tile; the float A B is built for the baseline and (on x86-64
// Linux with GCC) for x86-64-v3 (AVX2 + FMA), the loader picking the one the CPU runs. Sums round in the element
// type at every step, so results are within (K + 2) units of roundoff of the sum of |products| and |C|. Checks
// the run's deadline between blocks.
#pragma once
#include <cstdint>

namespace onyx::kernels {

// C[M,N] += A[M,K] * B[K,N], all row-major with leading dimensions lda, ldb, ldc.
void blocked_gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                  int64_t ldc);
void blocked_gemm(int64_t M, int64_t N, int64_t K, const double* a, int64_t lda, const double* b, int64_t ldb,
                  double* c, int64_t ldc);

// C[M,N] += A[M,K] * B[N,K]^T: dot products of rows (B in its given layout, e.g. a Gemm weight with transB).
void blocked_gemm_bt(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb,
                     float* c, int64_t ldc);
void blocked_gemm_bt(int64_t M, int64_t N, int64_t K, const double* a, int64_t lda, const double* b, int64_t ldb,
                     double* c, int64_t ldc);

// How many times either product has been called (all threads, since start): for tests that check which path ran.
uint64_t blocked_gemm_calls();

}  // namespace onyx::kernels
