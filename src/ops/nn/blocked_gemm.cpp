// The out-of-line float instance of the blocked GEMM kernel, with an AVX2+FMA clone on x86-64 (GCC) that the
// loader picks when the CPU has it.
#include "ops/nn/blocked_gemm.hpp"

#include "base/target_clones.hpp"

namespace onyx::ops::nn {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
ONYX_TARGET_CLONES("arch=x86-64-v3", "default")
#endif
void gemm_acc_f32(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                  int64_t ldc) {
  gemm_acc_impl<float>(M, N, K, a, lda, b, ldb, c, ldc);
}

}  // namespace onyx::ops::nn
