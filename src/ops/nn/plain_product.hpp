// The arithmetic of the reference kernels of MatMul, Gemm, Conv and ConvTranspose: plain loops, simple enough to
// read as the ops' definition and exact enough to judge the fast kernels by. Float types are read as doubles
// (exactly), summed in double and rounded once, when stored; integers multiply and add in their own type,
// wrapping as the hardware does.
#pragma once
#include <algorithm>
#include <type_traits>
#include <vector>

#include "base/run_limits.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops::nn {

// Which of onyx's own loops compute a product: the reference's plain ones, or the blocked GEMM
// (kernels/blocked_gemm.hpp) that the fast kernels run where oneDNN does not.
enum class Loops { Plain, Blocked };

// What T's elements are read as and summed in.
template <class T>
using sum_t = std::conditional_t<is_float_like_v<T>, double, T>;

// s + a * b: in double, or in the integer type, wrapping.
template <class S>
S mul_add(S s, S a, S b) {
  if constexpr (std::is_floating_point_v<S>) {
    return s + a * b;
  } else {
    using U = wide_unsigned_t<S>;
    return static_cast<S>(static_cast<U>(s) + static_cast<U>(a) * static_cast<U>(b));
  }
}

// A sum stored as T: float types round once; integer sums already are T.
template <class T>
T store_sum(sum_t<T> s) {
  if constexpr (is_float_like_v<T>) return from_double<T>(s);
  else return s;
}

// A tensor of T seen as sum_t<T>: float types read into doubles, integers in the tensor's own memory.
template <class T>
class SumIn {
 public:
  explicit SumIn(const Tensor& t) {
    if constexpr (is_float_like_v<T>) {
      doubles_ = read_doubles(t);
      p_ = doubles_.data();
    } else {
      p_ = t.data<T>();
    }
  }
  const sum_t<T>* data() const { return p_; }

 private:
  std::vector<double> doubles_;
  const sum_t<T>* p_ = nullptr;
};

// Checks the run's deadline and terminate flag once per 2^16 multiply-adds counted with add(): the plain loops'
// block boundaries.
class LimitsCheck {
 public:
  explicit LimitsCheck(const char* where) : where_(where) {}
  void add(int64_t multiply_adds) {
    done_ += multiply_adds;
    if (done_ < (int64_t{1} << 16)) return;
    done_ = 0;
    check_run_limits_outside_parallel(where_);
  }

 private:
  const char* where_;
  int64_t done_ = 0;
};

// out[i * N + j] = the sum over k = 0, 1, ..., K-1 of a(i, k) * b(k, j), where a(i, k) = a[i * a_i + k * a_k] and
// b(k, j) = b[k * b_k + j * b_j]: the strides express transposed operands.
template <class S>
void plain_product(int64_t M, int64_t N, int64_t K, const S* a, int64_t a_i, int64_t a_k, const S* b, int64_t b_k,
                   int64_t b_j, S* out, LimitsCheck& limits) {
  for (int64_t i = 0; i < M; ++i) {
    S* row = out + i * N;
    std::fill(row, row + N, S(0));
    for (int64_t k = 0; k < K; ++k) {
      const S av = a[i * a_i + k * a_k];
      const S* bk = b + k * b_k;
      for (int64_t j = 0; j < N; ++j) row[j] = mul_add(row[j], av, bk[j * b_j]);
    }
    limits.add(N * K);
  }
}

}  // namespace onyx::ops::nn
