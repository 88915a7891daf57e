#include "kernels/blocked_gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/run_limits.hpp"
#include "base/target_clones.hpp"

namespace onyx::kernels {
namespace {

std::atomic<uint64_t> calls{0};

// Eight lanes of A (GCC/Clang vector extension, mapped to the clone's SIMD width); loaded and stored through
// memcpy, as rows need no alignment, and never passed by value (a 32-byte vector's calling convention differs
// between the clones).
template <class A>
struct Vec8Of {
  typedef A type __attribute__((vector_size(8 * sizeof(A))));
};
template <class A>
using Vec8 = typename Vec8Of<A>::type;

template <class V, class A>
__attribute__((always_inline)) inline void load8(V& v, const A* p) {
  std::memcpy(&v, p, sizeof(v));
}
template <class V, class A>
__attribute__((always_inline)) inline void store8(A* p, const V& v) {
  std::memcpy(p, &v, sizeof(v));
}

template <class A>
__attribute__((always_inline)) inline void gemm_impl(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda,
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
          load8(s0, c0 + j);
          load8(s1, c1 + j);
          load8(s2, c2 + j);
          load8(s3, c3 + j);
          const A* bp = b + k0 * ldb + j0 + j;
          for (int64_t k = 0; k < kn; ++k, bp += ldb) {
            load8(bv, bp);
            s0 += a0[k] * bv;
            s1 += a1[k] * bv;
            s2 += a2[k] * bv;
            s3 += a3[k] * bv;
          }
          store8(c0 + j, s0);
          store8(c1 + j, s1);
          store8(c2 + j, s2);
          store8(c3 + j, s3);
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
            load8(cv, cr + j);
            load8(bv, br + j);
            cv += av * bv;
            store8(cr + j, cv);
          }
          for (; j < jn; ++j) cr[j] += av * br[j];
        }
      }
    }
  }
}

template <class A>
__attribute__((always_inline)) inline void gemm_bt_impl(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda,
                                                        const A* b, int64_t ldb, A* c, int64_t ldc) {
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
          load8(va, ar + k);
          load8(vb, br + k);
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

}  // namespace

// The float A B has a clone per instruction set, the loops inlined into each. The other products keep the baseline
// build they had before: an x86-64-v3 clone of the double one ran 1.6 times slower (measured on an AVX-512 CPU).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
ONYX_TARGET_CLONES("arch=x86-64-v3", "default")
#endif
void blocked_gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                  int64_t ldc) {
  calls.fetch_add(1, std::memory_order_relaxed);
  gemm_impl(M, N, K, a, lda, b, ldb, c, ldc);
}

void blocked_gemm(int64_t M, int64_t N, int64_t K, const double* a, int64_t lda, const double* b, int64_t ldb,
                  double* c, int64_t ldc) {
  calls.fetch_add(1, std::memory_order_relaxed);
  gemm_impl(M, N, K, a, lda, b, ldb, c, ldc);
}

void blocked_gemm_bt(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb,
                     float* c, int64_t ldc) {
  calls.fetch_add(1, std::memory_order_relaxed);
  gemm_bt_impl(M, N, K, a, lda, b, ldb, c, ldc);
}

void blocked_gemm_bt(int64_t M, int64_t N, int64_t K, const double* a, int64_t lda, const double* b, int64_t ldb,
                     double* c, int64_t ldc) {
  calls.fetch_add(1, std::memory_order_relaxed);
  gemm_bt_impl(M, N, K, a, lda, b, ldb, c, ldc);
}

uint64_t blocked_gemm_calls() { return calls.load(std::memory_order_relaxed); }

}  // namespace onyx::kernels
