// Writing computed values (double) into float tensors of any float element type, for the recurrent and attention
// families: the reference kernels compute in double and round once when storing.
#pragma once
#include <vector>

#include "ops/op_kit.hpp"

namespace onyx::ops {

// Stores `v` (element_count values) into `t`, a float16/bfloat16/float/double tensor.
inline void store_doubles(Tensor& t, const std::vector<double>& v) {
  const uint64_t n = t.element_count();
  if (v.size() < n) fail("internal: ", v.size(), " values for a tensor of ", n, " elements");
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_like_v<T>) {
      T* p = t.mutable_data<T>();
      for (uint64_t i = 0; i < n; ++i) p[i] = from_double<T>(v[i]);
    } else {
      fail("element type ", t.dtype(), " is not a float type");
    }
  });
}

// Same as the element type's rounding: the value as the tensor of `dt` would hold it (float16 keeps 11 bits...).
inline double round_to(DataType dt, double x) {
  switch (dt) {
    case DataType::Float: return narrow_to_float(x);
    case DataType::Float16: return to_double(from_double<Float16>(x));
    case DataType::BFloat16: return to_double(from_double<BFloat16>(x));
    default: return x;
  }
}

// A static dim of input i's inferred shape, or nullopt.
inline std::optional<int64_t> static_dim(const InferContext& ctx, size_t input, size_t axis) {
  if (!ctx.has_input(input)) return std::nullopt;
  const Type& t = ctx.input_type(input);
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known || axis >= t.shape.dims.size()) return std::nullopt;
  return t.shape.dims[axis].value;
}

// Dim `axis` of input i's inferred shape (possibly symbolic or unknown).
inline Dim dim_of(const InferContext& ctx, size_t input, size_t axis) {
  if (!ctx.has_input(input)) return {};
  const Type& t = ctx.input_type(input);
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known || axis >= t.shape.dims.size()) return {};
  return t.shape.dims[axis];
}

inline Dim known_dim(int64_t v) { return Dim{v, {}, {}}; }

inline Shape shape_from(std::vector<Dim> dims) {
  Shape s;
  s.rank_known = true;
  s.dims = std::move(dims);
  return s;
}

// Rank of input i when known, else -1.
inline int64_t input_rank(const InferContext& ctx, size_t input) {
  if (!ctx.has_input(input)) return -1;
  const Type& t = ctx.input_type(input);
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) return -1;
  return static_cast<int64_t>(t.shape.dims.size());
}

}  // namespace onyx::ops
