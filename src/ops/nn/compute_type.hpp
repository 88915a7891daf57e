// Float-type dispatch with a compute type for the nn kernels (matmul, conv, pool, normalization, softmax, dropout):
// float for float/float16/bfloat16/float8, double for double.
#pragma once
#include <type_traits>
#include <vector>

#include "ops/op_kit.hpp"

namespace onyx::ops::nn {

// The type a kernel computes in for element type T.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class A, class T>
inline A to_acc(const T& x) {
  if constexpr (is_small_float_v<T>) return static_cast<A>(static_cast<float>(x));
  else return static_cast<A>(x);
}
template <class T, class A>
inline T from_acc(A x) {
  if constexpr (is_small_float_v<T>) return from_double<T>(x);
  else return static_cast<T>(x);
}

// Tensor data seen as an array of A: the tensor's own memory when its element type is A, else a converted copy.
template <class A, class T>
class AccIn {
 public:
  explicit AccIn(const Tensor& t) {
    if constexpr (std::is_same_v<A, T>) {
      p_ = t.data<A>();
    } else {
      const T* s = t.data<T>();
      buf_.resize(t.element_count());
      for (size_t i = 0; i < buf_.size(); ++i) buf_[i] = to_acc<A>(s[i]);
      p_ = buf_.data();
    }
  }
  const A* data() const { return p_; }

 private:
  std::vector<A> buf_;
  const A* p_ = nullptr;
};

// An output buffer of A written back into a tensor of T (in place when T is A).
template <class A, class T>
class AccOut {
 public:
  explicit AccOut(Tensor& t) : t_(t) {
    if constexpr (std::is_same_v<A, T>) p_ = t.mutable_data<A>();
    else {
      buf_.assign(t.element_count(), A(0));
      p_ = buf_.data();
    }
  }
  A* data() { return p_; }
  void commit() {
    if constexpr (!std::is_same_v<A, T>) {
      T* d = t_.mutable_data<T>();
      for (size_t i = 0; i < buf_.size(); ++i) d[i] = from_acc<T>(buf_[i]);
    }
  }

 private:
  Tensor& t_;
  std::vector<A> buf_;
  A* p_ = nullptr;
};

// Calls f(T{}) for the floating element types (float16, bfloat16, float, double, float8); an error otherwise.
template <class F>
void visit_float(DataType dt, F&& f) {
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || is_small_float_v<T>) f(tag);
    else fail("element type ", dt, " is not supported here");
  });
}

}  // namespace onyx::ops::nn
