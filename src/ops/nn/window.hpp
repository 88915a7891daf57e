// The sliding-window geometry of convolutions and pools over the spatial dims of an (N, C, spatial...) tensor:
// auto_pad, pads, strides, dilations, ceil_mode.
#pragma once
#include <algorithm>
#include <string>

#include "ops/op_kit.hpp"

namespace onyx::ops::nn {

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
    s.dims.push_back(known_dim(out));
  }
  return s;
}

}  // namespace onyx::ops::nn
