// The broadcast rule of the binary elementwise ops before opset 7: attribute broadcast=1 aligns B to A at `axis`
// (default: the trailing dims), padded with 1s; without it the shapes must be equal. Used by the arithmetic,
// comparison, logical and bitwise families.
#pragma once
#include <optional>

#include "ops/op_kit.hpp"

namespace onyx::ops {

// B's dims for the pre-7 "broadcast=1" rule: aligned to A at `axis`, padded with 1s.
inline Dims legacy_broadcast(const Dims& a, const Dims& b, std::optional<int64_t> axis_attr) {
  const int64_t rank = static_cast<int64_t>(a.size());
  const int64_t brank = static_cast<int64_t>(b.size());
  int64_t axis = axis_attr ? *axis_attr : rank - brank;
  if (axis_attr && axis < 0) axis += rank;
  if (axis < 0 || axis + brank > rank)
    fail("broadcast axis ", axis_attr ? *axis_attr : axis, " does not fit B of shape ", shape_of(b).to_string(),
         " into A of shape ", shape_of(a).to_string());
  Dims out(a.size(), 1);
  for (size_t i = 0; i < b.size(); ++i) out[axis + i] = b[i];
  for (size_t i = 0; i < a.size(); ++i)
    if (out[i] != 1 && out[i] != a[i])
      fail("B of shape ", shape_of(b).to_string(), " does not broadcast to A of shape ", shape_of(a).to_string());
  return out;
}

// Broadcast settings of an op version before 7 (attributes broadcast, axis).
struct Legacy {
  bool enabled = false;  // the op version has the attributes
  bool broadcast = false;
  std::optional<int64_t> axis;
};

inline Legacy parse_legacy(const KernelInit& init, bool enabled) {
  Legacy l;
  l.enabled = enabled;
  if (!enabled) return l;
  l.broadcast = init.attrs.get_int("broadcast", 0) != 0;
  if (init.attrs.has("axis")) l.axis = init.attrs.get_int("axis");
  return l;
}

// The dims B is read with.
inline Dims b_dims(const Legacy& l, const Tensor& a, const Tensor& b) {
  if (!l.enabled) return b.dims();
  if (!l.broadcast) {
    if (a.dims() != b.dims())
      fail("shapes ", shape_of(a.dims()).to_string(), " and ", shape_of(b.dims()).to_string(),
           " differ and broadcast is not set");
    return b.dims();
  }
  return legacy_broadcast(a.dims(), b.dims(), l.axis);
}

// Inference for a binary op: element type `out` (default: input 0's), broadcast shape (A's shape under the legacy
// broadcast=1 rule). With `same_types`, A and B must have the same element type.
inline void infer_binary(InferContext& ctx, bool same_types, bool legacy, DataType out = DataType::Undefined) {
  if (same_types && ctx.has_input(0) && ctx.has_input(1)) {
    DataType x = ctx.input_dtype(0), y = ctx.input_dtype(1);
    if (x != DataType::Undefined && y != DataType::Undefined && x != y)
      ctx.error(cat("inputs have different element types ", x, " and ", y));
  }
  if (legacy && ctx.attrs.get_int("broadcast", 0) != 0) {
    if (!ctx.has_input(0)) return;
    Type t = ctx.input_type(0);
    if (out != DataType::Undefined) t.elem = out;
    ctx.set_output(0, t);
    return;
  }
  infer_broadcast(ctx, out);
}

}  // namespace onyx::ops
