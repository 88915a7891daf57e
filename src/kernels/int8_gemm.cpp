#include "kernels/int8_gemm.hpp"

#include <cpuid.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "kernels/elementwise.hpp"

namespace onyx::kernels {

bool int8_gemm_uses_onednn() {
  // AVX-VNNI from CPUID leaf 7, subleaf 1 (EAX bit 4): older compilers' __builtin_cpu_supports lacks "avxvnni".
  static const bool vnni = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool avx_vnni = __builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
    return __builtin_cpu_supports("avx512vnni") || avx_vnni;
  }();
  return vnni;
}

namespace {

bool packed_kernel_supported() {
  static const bool ok = best_isa() == Isa::Avx512 && __builtin_cpu_supports("avx512vnni");
  return ok;
}

// Products above this many multiply-adds split their columns over the threads.
constexpr int64_t kParallelWork = int64_t{1} << 17;

// Per-thread scratch of int8_gemm_packed, kept between calls.
struct Scratch {
  std::vector<uint8_t> a;
  std::vector<int32_t> row_sum, col_term, b_zero, c;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace

void pack_int8(const int8_t* b, int64_t K, int64_t N, PackedInt8& out) {
  out.K = K;
  out.N = N;
  out.vnni = packed_kernel_supported();
  out.K_padded = out.vnni ? (K + 3) / 4 * 4 : K;
  out.col_sum.assign(static_cast<size_t>(N), 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      out.col_sum[static_cast<size_t>(n)] = static_cast<int32_t>(static_cast<uint32_t>(out.col_sum[static_cast<size_t>(n)]) +
                                                                 static_cast<uint32_t>(static_cast<int32_t>(b[k * N + n])));
  if (!out.vnni) {
    out.data.assign(b, b + K * N);
    return;
  }
  const int64_t panels = (N + 15) / 16, groups = out.K_padded / 4;
  out.data.assign(static_cast<size_t>(panels * groups * 64), 0);
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < 16 && p * 16 + j < N; ++j)
        out.data[static_cast<size_t>(((p * groups + k / 4) * 16 + j) * 4 + k % 4)] = b[k * N + p * 16 + j];
}

void int8_gemm_packed(bool a_signed, const void* a, int64_t M, int32_t a_zero, const PackedInt8& b,
                      const int32_t* b_zero, int64_t b_zero_count, const Int8Output& out) {
  const int64_t K = b.K, N = b.N;
  if (M == 0 || N == 0) return;
  Scratch& s = scratch();
  // A as unsigned bytes (int8 shifted by +128, its zero point with it: the differences stay), rows of K_padded.
  const uint8_t* au = static_cast<const uint8_t*>(a);
  int64_t lda = K;
  const int32_t za = a_zero + (a_signed ? 128 : 0);
  if (a_signed || b.K_padded != K) {
    lda = b.K_padded;
    s.a.assign(static_cast<size_t>(M * lda), 0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        s.a[static_cast<size_t>(m * lda + k)] = static_cast<uint8_t>(au[m * K + k] ^ (a_signed ? 0x80 : 0));
    au = s.a.data();
  }
  s.b_zero.resize(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) s.b_zero[static_cast<size_t>(n)] = b_zero[b_zero_count == 1 ? 0 : n];
  // (A - za)(B - zb) = AB - zb[n]*rowsum(A) + (K*za*zb[n] - za*colsum(B)[n]), all wrapping in 32 bits.
  s.row_sum.assign(static_cast<size_t>(M), 0);
  const bool any_b_zero = std::any_of(s.b_zero.begin(), s.b_zero.end(), [](int32_t z) { return z != 0; });
  if (any_b_zero)
    for (int64_t m = 0; m < M; ++m) {
      uint32_t sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += au[m * lda + k];
      s.row_sum[static_cast<size_t>(m)] = static_cast<int32_t>(sum);
    }
  s.col_term.resize(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    const uint32_t zb = static_cast<uint32_t>(s.b_zero[static_cast<size_t>(n)]);
    s.col_term[static_cast<size_t>(n)] = static_cast<int32_t>(static_cast<uint32_t>(K) * static_cast<uint32_t>(za) * zb -
                                                              static_cast<uint32_t>(za) * static_cast<uint32_t>(b.col_sum[static_cast<size_t>(n)]));
  }
  if (b.vnni) {
    int8_gemm_packed_vnni(au, lda, M, s.row_sum.data(), s.col_term.data(), s.b_zero.data(), b, out,
                          M * N * K > kParallelWork);
    return;
  }
  // Elsewhere: the plain product of the unsigned A and B, then the same corrections and epilogue.
  int32_t* c = out.c;
  if (!c || out.ldc != N) {
    s.c.resize(static_cast<size_t>(M * N));
    c = s.c.data();
  }
  int8_gemm(false, au, 0, b.data.data(), 0, M, N, K, c);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t x = static_cast<uint32_t>(c[m * N + n]) + static_cast<uint32_t>(s.col_term[static_cast<size_t>(n)]) -
                         static_cast<uint32_t>(s.row_sum[static_cast<size_t>(m)]) * static_cast<uint32_t>(s.b_zero[static_cast<size_t>(n)]);
      const int32_t v = static_cast<int32_t>(x);
      if (out.c) {
        out.c[m * out.ldc + n] = v;
      } else {
        float y = static_cast<float>(v);
        y = y * (out.scale ? out.scale[out.scale_per_column ? n : 0] : 1.0f);
        if (out.bias) y = y + out.bias[n];
        out.y[m * out.ldc + n] = y;
      }
    }
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
