// Helpers shared by the nn op families (matmul, conv, pool, normalization, softmax, dropout): float-type dispatch
// with a compute type (float for float/float16/bfloat16/float8, double for double) and the sliding-window geometry
// of convolutions and pools (auto_pad, pads, strides, dilations, ceil_mode).
#pragma once
#include <algorithm>
#include <string>
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

// Sliding-window geometry over the spatial dims of an (N, C, spatial...) tensor.
struct Window {
  Dims kernel, strides, dilations, pads;  // pads: begins then ends
  Dims in, out;                            // spatial dims
  size_t rank() const { return kernel.size(); }
};

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

inline AutoPad parse_auto_pad(const std::string& s) {
  if (s.empty() || s == "NOTSET") return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  fail("auto_pad '", s, "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

// Window attributes as written on the node (empty lists mean the defaults).
struct WindowAttrs {
  AutoPad auto_pad = AutoPad::NotSet;
  Dims kernel, strides, dilations, pads;
  bool ceil_mode = false;
};

inline WindowAttrs read_window_attrs(const AttributeView& a, bool has_dilations, bool has_ceil) {
  WindowAttrs w;
  w.auto_pad = parse_auto_pad(a.get_string("auto_pad", "NOTSET"));
  w.kernel = a.get_ints("kernel_shape", Dims{});
  w.strides = a.get_ints("strides", Dims{});
  w.pads = a.get_ints("pads", Dims{});
  if (has_dilations) w.dilations = a.get_ints("dilations", Dims{});
  if (has_ceil) w.ceil_mode = a.get_int("ceil_mode", 0) != 0;
  return w;
}

inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Fills the defaults and checks the attributes against the spatial rank; `kernel` given when it comes from a weight.
inline void complete_window_attrs(WindowAttrs& w, size_t rank) {
  // Values are bounded so that window arithmetic can never overflow int64.
  constexpr int64_t kMax = int64_t{1} << 31;
  auto check = [&](Dims& v, const char* name, int64_t dflt, size_t n, int64_t min) {
    if (v.empty()) v.assign(n, dflt);
    if (v.size() != n) fail("attribute '", name, "' has ", v.size(), " values, expected ", n);
    for (int64_t x : v)
      if (x < min || x > kMax) fail("attribute '", name, "' has value ", x, ", expected ", min, "..", kMax);
  };
  if (w.kernel.size() != rank) fail("kernel_shape has ", w.kernel.size(), " dims, expected ", rank);
  for (int64_t k : w.kernel)
    if (k < 1 || k > kMax) fail("kernel_shape has value ", k, ", expected 1..", kMax);
  check(w.strides, "strides", 1, rank, 1);
  check(w.dilations, "dilations", 1, rank, 1);
  check(w.pads, "pads", 0, 2 * rank, 0);
}

// Output size along one spatial axis and the pads actually used (pad_begin/pad_end updated for auto_pad).
inline int64_t window_out_dim(const WindowAttrs& w, size_t i, int64_t in, int64_t& pb, int64_t& pe) {
  const int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
  const int64_t s = w.strides[i];
  switch (w.auto_pad) {
    case AutoPad::SameUpper:
    case AutoPad::SameLower: {
      int64_t out = ceil_div(in, s);
      int64_t total = std::max<int64_t>(0, (out - 1) * s + eff - in);
      int64_t small = total / 2;
      pb = w.auto_pad == AutoPad::SameUpper ? small : total - small;
      pe = total - pb;
      return out;
    }
    case AutoPad::Valid: {
      pb = pe = 0;
      if (in < eff) return 0;
      return (w.ceil_mode ? ceil_div(in - eff, s) : floor_div(in - eff, s)) + 1;
    }
    case AutoPad::NotSet: break;
  }
  const int64_t span = in + pb + pe - eff;
  if (span < 0) return 0;
  int64_t out = (w.ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1;
  // With ceil_mode, a last window that would start in the end padding is dropped.
  if (w.ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

// The window geometry for an input of spatial dims `in`; errors on windows that do not fit.
inline Window make_window(WindowAttrs w, const Dims& in) {
  complete_window_attrs(w, in.size());
  Window g;
  g.kernel = w.kernel;
  g.strides = w.strides;
  g.dilations = w.dilations;
  g.pads = w.pads;
  g.in = in;
  const size_t r = in.size();
  for (size_t i = 0; i < r; ++i) {
    int64_t out = window_out_dim(w, i, in[i], g.pads[i], g.pads[r + i]);
    if (out < 1)
      fail("the window (kernel ", w.kernel[i], ", dilation ", w.dilations[i], ") does not fit spatial dim ", i,
           " of size ", in[i], " with pads ", g.pads[i], "+", g.pads[r + i]);
    g.out.push_back(out);
  }
  return g;
}

// Inference helper: output shape [N, channels, out spatial...] where computable; unknown spatial dims stay unknown.
inline Shape window_out_shape(const WindowAttrs& attrs, const Shape& x, const Dim& channels) {
  Shape s;
  if (!x.rank_known) return s;
  if (x.dims.size() < 2) fail("input has rank ", x.dims.size(), ", expected at least 2 (N, C, spatial...)");
  const size_t r = x.dims.size() - 2;
  WindowAttrs w = attrs;
  complete_window_attrs(w, r);
  s.rank_known = true;
  s.dims.push_back(x.dims[0]);
  s.dims.push_back(channels);
  for (size_t i = 0; i < r; ++i) {
    const Dim& d = x.dims[2 + i];
    if (!d.value) {
      s.dims.push_back(Dim{});
      continue;
    }
    int64_t pb = w.pads[i], pe = w.pads[r + i];
    int64_t out = window_out_dim(w, i, *d.value, pb, pe);
    if (out < 1) fail("the window (kernel ", w.kernel[i], ") does not fit spatial dim ", i, " of size ", *d.value);
    s.dims.push_back(Dim{out, {}, {}});
  }
  return s;
}

}  // namespace onyx::ops::nn
