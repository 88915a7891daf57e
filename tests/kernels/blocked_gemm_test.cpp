// The blocked GEMM (kernels/blocked_gemm.hpp), both products and both element types, against a plain loop in
// double on random inputs: sizes of 1, odd ones, ones that are no multiple of the 4x8 register tile or of the
// 256-wide blocks, an empty K, C nonzero on entry, and leading dimensions wider than the rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/blocked_gemm.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

struct Size {
  int64_t M, N, K;
};

const Size kSizes[] = {{1, 1, 1},  {1, 17, 5},  {9, 1, 7},   {4, 8, 1},    {5, 9, 3},   {7, 15, 33},
                       {3, 5, 0},  {8, 16, 8},  {13, 31, 9}, {6, 300, 20}, {5, 7, 513}, {11, 260, 270}};

// Runs C += A * B (or A * B^T) on one size and checks every element of C against the sum in double, and that the
// gaps between rows (the leading dimensions' extra columns) are neither read nor written.
template <class A>
void check(const Size& s, bool bt, std::mt19937& rng) {
  const int64_t M = s.M, N = s.N, K = s.K;
  const int64_t lda = K + 3, b_rows = bt ? N : K, b_width = bt ? K : N, ldb = b_width + 2, ldc = N + 5;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  // A gap read into a sum makes it NaN; a gap written loses its sentinel.
  const A nan = std::numeric_limits<A>::quiet_NaN(), sentinel = A(12345);
  std::vector<A> a(static_cast<size_t>(M * lda), nan), b(static_cast<size_t>(b_rows * ldb), nan),
      c(static_cast<size_t>(M * ldc), sentinel);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) a[i * lda + k] = static_cast<A>(u(rng));
  for (int64_t r = 0; r < b_rows; ++r)
    for (int64_t j = 0; j < b_width; ++j) b[r * ldb + j] = static_cast<A>(u(rng));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) c[i * ldc + j] = static_cast<A>(u(rng));
  const std::vector<A> c0 = c;

  const uint64_t calls = kernels::blocked_gemm_calls();
  if (bt) kernels::blocked_gemm_bt(M, N, K, a.data(), lda, b.data(), ldb, c.data(), ldc);
  else kernels::blocked_gemm(M, N, K, a.data(), lda, b.data(), ldb, c.data(), ldc);
  EXPECT_EQ(kernels::blocked_gemm_calls(), calls + 1);

  // Every element of C is C plus K products, summed in A with at most K + 2 roundings on any term's way (the
  // products, the sums of a tile or of vector lanes, the lanes' total, the addition to C): the error is at most
  // gamma(K + 2) = (K + 2) u / (1 - (K + 2) u) times the sum of |C| and the |products|, u being A's unit roundoff.
  // The loop in double adds its own, at most (K + 1) units of double's roundoff of the same sum.
  const double u_a = std::numeric_limits<A>::epsilon() / 2, u_d = std::numeric_limits<double>::epsilon() / 2;
  const double n = static_cast<double>(K + 2);
  const double rel = n * u_a / (1 - n * u_a) + n * u_d / (1 - n * u_d);
  const std::string what = std::string(sizeof(A) == 4 ? "float" : "double") + (bt ? " A*B^T " : " A*B ") +
                           std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double sum = c0[i * ldc + j], magnitude = std::fabs(sum);
      for (int64_t k = 0; k < K; ++k) {
        const double p = static_cast<double>(a[i * lda + k]) * static_cast<double>(bt ? b[j * ldb + k] : b[k * ldb + j]);
        sum += p;
        magnitude += std::fabs(p);
      }
      const double got = c[i * ldc + j];
      ASSERT_LE(std::fabs(got - sum), rel * magnitude) << what << " element " << i << "," << j;
    }
    for (int64_t j = N; j < ldc; ++j)
      ASSERT_EQ(std::memcmp(&c[i * ldc + j], &sentinel, sizeof(A)), 0) << what << ": the gap of row " << i << " was written";
  }
}

TEST(BlockedGemm, MatchesAPlainLoopInDouble) {
  std::mt19937 rng(101);
  for (const Size& s : kSizes)
    for (bool bt : {false, true}) {
      check<float>(s, bt, rng);
      check<double>(s, bt, rng);
    }
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
