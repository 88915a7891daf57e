#include "kernels/int8_gemm.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.hpp"

namespace onyx::kernels {

bool int8_gemm_uses_onednn() {
  static const bool vnni = __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
  return vnni;
}

namespace {

// Exact everywhere: unsigned arithmetic wraps like the reference's int32 sums, without undefined overflow.
template <class TA>
void loop_gemm(const TA* a, int32_t a_zero, const int8_t* b, int32_t b_zero, int64_t M, int64_t N, int64_t K,
               int32_t* c) {
  std::vector<uint32_t> row(static_cast<size_t>(N));
  for (int64_t m = 0; m < M; ++m) {
    std::fill(row.begin(), row.end(), 0u);
    for (int64_t k = 0; k < K; ++k) {
      const uint32_t av = static_cast<uint32_t>(static_cast<int32_t>(a[m * K + k]) - a_zero);
      if (av == 0) continue;
      const int8_t* brow = b + k * N;
      for (int64_t n = 0; n < N; ++n) row[static_cast<size_t>(n)] += av * static_cast<uint32_t>(brow[n] - b_zero);
    }
    for (int64_t n = 0; n < N; ++n) c[m * N + n] = static_cast<int32_t>(row[static_cast<size_t>(n)]);
  }
}

}  // namespace

void int8_gemm(bool a_signed, const void* a, int32_t a_zero, const int8_t* b, int32_t b_zero, int64_t M, int64_t N,
               int64_t K, int32_t* c) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    std::memset(c, 0, static_cast<size_t>(M * N) * sizeof(int32_t));
    return;
  }
  if (!int8_gemm_uses_onednn()) {
    if (a_signed) loop_gemm(static_cast<const int8_t*>(a), a_zero, b, b_zero, M, N, K, c);
    else loop_gemm(static_cast<const uint8_t*>(a), a_zero, b, b_zero, M, N, K, c);
    return;
  }
  const int32_t c_offset = 0;
  const dnnl_status_t st =
      a_signed ? dnnl_gemm_s8s8s32('N', 'N', 'F', M, N, K, 1.0f, static_cast<const int8_t*>(a), K,
                                   static_cast<int8_t>(a_zero), b, N, static_cast<int8_t>(b_zero), 0.0f, c, N, &c_offset)
               : dnnl_gemm_u8s8s32('N', 'N', 'F', M, N, K, 1.0f, static_cast<const uint8_t*>(a), K,
                                   static_cast<uint8_t>(a_zero), b, N, static_cast<int8_t>(b_zero), 0.0f, c, N, &c_offset);
  if (st != dnnl_success) fail("oneDNN's integer GEMM failed (status ", static_cast<int>(st), ") for [", M, ", ", K, "] x [", K, ", ", N, "]");
}

}  // namespace onyx::kernels
