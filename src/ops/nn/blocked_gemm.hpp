// A blocked GEMM kernel over plain buffers for the nn families (matmul, conv): C += A * B and C += A * B^T.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/run_limits.hpp"

namespace onyx::ops::nn {

// Eight lanes of A (GCC/Clang vector extension); loaded and stored through memcpy (no alignment needed).
template <class A>
struct Vec8Of {
  typedef A type __attribute__((vector_size(8 * sizeof(A))));
};
template <class A>
using Vec8 = typename Vec8Of<A>::type;
#define ONYX_NN_LOAD(v, p) std::memcpy(&(v), (p), sizeof(v))
#define ONYX_NN_STORE(p, v) std::memcpy((p), &(v), sizeof(v))

// C[M,N] += A[M,K] * B[K,N], row-major with leading dimensions lda, ldb, ldc. Blocked over K and N, with a 4x8
// register tile (GCC/Clang vector extensions; the compiler maps them to the available SIMD width).
template <class A>
__attribute__((always_inline)) inline void gemm_acc_impl(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda,
                                                         const A* b, int64_t ldb, A* c, int64_t ldc) {
  using V = Vec8<A>;
  constexpr int64_t kKc = 256, kNc = 256;
  for (int64_t k0 = 0; k0 < K; k0 += kKc) {
    const int64_t kn = std::min(kKc, K - k0);
    for (int64_t j0 = 0; j0 < N; j0 += kNc) {
      check_run_limits_outside_parallel("in a matrix product");  // a block is at most M x 256 x 256
      const int64_t jn = std::min(kNc, N - j0);
      int64_t i = 0;
      for (; i + 4 <= M; i += 4) {
        const A* a0 = a + i * lda + k0;
        const A* a1 = a0 + lda;
        const A* a2 = a1 + lda;
        const A* a3 = a2 + lda;
        A* c0 = c + i * ldc + j0;
        A* c1 = c0 + ldc;
        A* c2 = c1 + ldc;
        A* c3 = c2 + ldc;
        int64_t j = 0;
        for (; j + 8 <= jn; j += 8) {
          V s0, s1, s2, s3, bv;
          ONYX_NN_LOAD(s0, c0 + j);
          ONYX_NN_LOAD(s1, c1 + j);
          ONYX_NN_LOAD(s2, c2 + j);
          ONYX_NN_LOAD(s3, c3 + j);
          const A* bp = b + k0 * ldb + j0 + j;
          for (int64_t k = 0; k < kn; ++k, bp += ldb) {
            ONYX_NN_LOAD(bv, bp);
            s0 += a0[k] * bv;
            s1 += a1[k] * bv;
            s2 += a2[k] * bv;
            s3 += a3[k] * bv;
          }
          ONYX_NN_STORE(c0 + j, s0);
          ONYX_NN_STORE(c1 + j, s1);
          ONYX_NN_STORE(c2 + j, s2);
          ONYX_NN_STORE(c3 + j, s3);
        }
        for (; j < jn; ++j) {
          A s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          const A* bp = b + k0 * ldb + j0 + j;
          for (int64_t k = 0; k < kn; ++k, bp += ldb) {
            s0 += a0[k] * *bp;
            s1 += a1[k] * *bp;
            s2 += a2[k] * *bp;
            s3 += a3[k] * *bp;
          }
          c0[j] += s0;
          c1[j] += s1;
          c2[j] += s2;
          c3[j] += s3;
        }
      }
      for (; i < M; ++i) {
        const A* ar = a + i * lda + k0;
        A* cr = c + i * ldc + j0;
        for (int64_t k = 0; k < kn; ++k) {
          const A av = ar[k];
          const A* br = b + (k0 + k) * ldb + j0;
          int64_t j = 0;
          for (; j + 8 <= jn; j += 8) {
            V cv, bv;
            ONYX_NN_LOAD(cv, cr + j);
            ONYX_NN_LOAD(bv, br + j);
            cv += av * bv;
            ONYX_NN_STORE(cr + j, cv);
          }
          for (; j < jn; ++j) cr[j] += av * br[j];
        }
      }
    }
  }
}

// The float instance, compiled in blocked_gemm.cpp for the baseline and (on x86-64 with GCC) for x86-64-v3 (AVX2+FMA), picked at
// load time.
void gemm_acc_f32(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                  int64_t ldc);

template <class A>
void gemm_acc(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc) {
  if constexpr (std::is_same_v<A, float>) gemm_acc_f32(M, N, K, a, lda, b, ldb, c, ldc);
  else gemm_acc_impl<A>(M, N, K, a, lda, b, ldb, c, ldc);
}

// C[M,N] += A[M,K] * B[N,K]^T: dot products of rows (B stays in its given layout, e.g. a Gemm weight with transB).
template <class A>
void gemm_acc_bt(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc) {
  using V = Vec8<A>;
  constexpr int64_t kMc = 4;
  for (int64_t i0 = 0; i0 < M; i0 += kMc) {
    if (K * N >= (int64_t{1} << 16)) check_run_limits_outside_parallel("in a matrix product");
    const int64_t in = std::min(kMc, M - i0);
    for (int64_t j = 0; j < N; ++j) {
      const A* br = b + j * ldb;
      for (int64_t r = 0; r < in; ++r) {
        const A* ar = a + (i0 + r) * lda;
        V acc = {}, va, vb;
        int64_t k = 0;
        for (; k + 8 <= K; k += 8) {
          ONYX_NN_LOAD(va, ar + k);
          ONYX_NN_LOAD(vb, br + k);
          acc += va * vb;
        }
        A s = 0;
        for (int l = 0; l < 8; ++l) s += acc[l];
        for (; k < K; ++k) s += ar[k] * br[k];
        c[(i0 + r) * ldc + j] += s;
      }
    }
  }
}

}  // namespace onyx::ops::nn
