// Helpers shared by the control-flow and sequence families: copying runs of elements between tensors of any
// element type (strings, byte-sized types, packed 2/4-bit types), slicing along an axis, stacking, and the type
// lists and type merging the ONNX control-flow and sequence ops use.
#pragma once
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops::blocks {

// Copies `count` elements of src starting at element `src_off` into dst starting at element `dst_off`.
// dst must be writable and of the same element type; offsets are in range (callers compute them from dims).
inline void copy_elements(Tensor& dst, int64_t dst_off, const Tensor& src, int64_t src_off, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DataType::String) {
    const auto& s = src.string_values();
    auto& d = dst.mutable_strings();
    std::copy(s.begin() + src_off, s.begin() + src_off + count, d.begin() + dst_off);
    return;
  }
  const int bits = dtype_bits(src.dtype());
  if (bits >= 8) {
    const size_t es = static_cast<size_t>(bits / 8);
    std::memcpy(dst.mutable_data<char>() + static_cast<size_t>(dst_off) * es,
                src.bytes().data() + static_cast<size_t>(src_off) * es, static_cast<size_t>(count) * es);
    return;
  }
  // Packed sub-byte types: element i lives in byte i / per, at bit (i % per) * bits (low bits first).
  const int per = 8 / bits;
  const unsigned mask = (1u << bits) - 1u;
  const auto* s = reinterpret_cast<const uint8_t*>(src.bytes().data());
  uint8_t* d = dst.mutable_data<uint8_t>();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t si = src_off + i, di = dst_off + i;
    const unsigned v = (static_cast<unsigned>(s[si / per]) >> ((si % per) * bits)) & mask;
    const int sh = static_cast<int>(di % per) * bits;
    uint8_t& b = d[di / per];
    b = static_cast<uint8_t>((b & ~(mask << sh)) | (v << sh));
  }
}

// Copies positions [src_start, src_start + n) along `axis` of src to positions [dst_start, dst_start + n) along
// the same axis of dst. Both have the same dims except along `axis`.
inline void copy_along_axis(Tensor& dst, int64_t dst_start, const Tensor& src, int64_t src_start, int64_t n, size_t axis) {
  const Dims& sd = src.dims();
  const Dims& dd = dst.dims();
  const int64_t outer = product(sd, 0, axis);
  const int64_t inner = product(sd, axis + 1);
  const int64_t slen = sd[axis], dlen = dd[axis];
  if (n <= 0 || inner == 0) return;
  for (int64_t o = 0; o < outer; ++o)
    copy_elements(dst, (o * dlen + dst_start) * inner, src, (o * slen + src_start) * inner, n * inner);
}

// Positions [start, start + n) along `axis` of t, as a new tensor (the axis kept, of length n).
inline Tensor slice_axis(const Tensor& t, size_t axis, int64_t start, int64_t n) {
  Dims d = t.dims();
  if (start == 0 && n == d[axis]) return t;
  d[axis] = n;
  Tensor out = Tensor::allocate(t.dtype(), d);
  copy_along_axis(out, 0, t, start, n, axis);
  return out;
}

// Position `i` along `axis` of t, the axis removed.
inline Tensor take_axis(const Tensor& t, size_t axis, int64_t i) {
  Dims d = t.dims();
  d.erase(d.begin() + static_cast<std::ptrdiff_t>(axis));
  if (axis == 0) {
    // Contiguous: a copy of one block (views would need offsets the tensor type does not have).
    Tensor out = Tensor::allocate(t.dtype(), d);
    const int64_t inner = product(d);
    copy_elements(out, 0, t, i * inner, inner);
    return out;
  }
  return slice_axis(t, axis, i, 1).reshaped(d);
}

// Writes `part` (dims = dst dims without `axis`) at position i along `axis` of dst.
inline void put_axis(Tensor& dst, size_t axis, int64_t i, const Tensor& part) {
  Dims d = dst.dims();
  d[axis] = 1;
  copy_along_axis(dst, i, part.reshaped(d), 0, 1, axis);
}

// ---- Types ----

// Element types of the ONNX type lists, in the order DataType numbers them (kAllTensorTypes is in that order).
// ir3: float..complex128 (15 types); ir4: + bfloat16; v19: + 4 float8; v21: + int4/uint4; v23: + float4e2m1;
// v24: + float8e8m0; v25: + int2/uint2.
inline std::vector<DataType> types_upto(DataType last) {
  std::vector<DataType> v;
  for (DataType t : kAllTensorTypes) {
    v.push_back(t);
    if (t == last) break;
  }
  return v;
}
inline std::vector<DataType> types_ir3() { return types_upto(DataType::Complex128); }
inline std::vector<DataType> types_ir4() { return types_upto(DataType::BFloat16); }
// The tensor types control-flow ops (If, Loop, Scan) accept at a since_version.
inline std::vector<DataType> control_types(int since) {
  if (since >= 25) return types_upto(DataType::Int2);
  if (since >= 24) return types_upto(DataType::Float8E8M0);
  if (since >= 23) return types_upto(DataType::Float4E2M1);
  if (since >= 21) return types_upto(DataType::Int4);
  if (since >= 19) return types_upto(DataType::Float8E5M2FNUZ);
  if (since >= 16) return types_ir4();
  return types_ir3();
}

inline bool allowed(const std::vector<DataType>& list, DataType t) {
  return std::find(list.begin(), list.end(), t) != list.end();
}

inline Type seq_type(Type elem) {
  Type t;
  t.kind = Type::Kind::Sequence;
  t.inner = std::make_shared<const Type>(std::move(elem));
  return t;
}
inline Type optional_type(Type elem) {
  Type t;
  t.kind = Type::Kind::Optional;
  t.inner = std::make_shared<const Type>(std::move(elem));
  return t;
}
inline Type scalar_type(DataType dt) {
  Shape s;
  s.rank_known = true;
  return Type::tensor(dt, s);
}

// The union of two shapes: dims that agree stay, others become unknown; different ranks give an unknown rank.
inline Shape merge_shapes(const Shape& a, const Shape& b) {
  if (!a.rank_known || !b.rank_known || a.dims.size() != b.dims.size()) return {};
  Shape s;
  s.rank_known = true;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    const Dim& x = a.dims[i];
    const Dim& y = b.dims[i];
    bool same = x.value ? (y.value && *x.value == *y.value) : (!x.param.empty() && x.param == y.param);
    s.dims.push_back(same ? x : Dim{});
  }
  return s;
}

// The union of two types of the same kind (what a value may be when it comes from either); Unknown yields the
// other. `what` names the value in the error when element types or kinds disagree.
inline Type merge_types(const Type& a, const Type& b, const std::string& what) {
  if (a.kind == Type::Kind::Unknown) return b;
  if (b.kind == Type::Kind::Unknown) return a;
  if (a.kind != b.kind) fail(what, ": ", a.to_string(), " and ", b.to_string(), " differ");
  switch (a.kind) {
    case Type::Kind::Tensor:
    case Type::Kind::SparseTensor: {
      if (a.elem != DataType::Undefined && b.elem != DataType::Undefined && a.elem != b.elem)
        fail(what, ": element types ", a.elem, " and ", b.elem, " differ");
      Type t = a;
      if (t.elem == DataType::Undefined) t.elem = b.elem;
      t.shape = merge_shapes(a.shape, b.shape);
      return t;
    }
    case Type::Kind::Sequence:
    case Type::Kind::Optional: {
      Type t = a;
      if (a.inner && b.inner) t.inner = std::make_shared<const Type>(merge_types(*a.inner, *b.inner, what));
      else if (!a.inner) t.inner = b.inner;
      return t;
    }
    default: return a;
  }
}

// Reads a tensor holding one integer (a scalar, or one element when `allow_one` is set).
inline int64_t read_scalar_int(const Tensor& t, const char* what, bool allow_one = true) {
  if (!t.dims().empty() && !(allow_one && t.element_count() == 1))
    fail(what, " must be a scalar, got shape ", shape_of(t.dims()).to_string());
  if (t.element_count() != 1) fail(what, " must hold one value");
  if (t.dtype() != DataType::Int32 && t.dtype() != DataType::Int64)
    fail(what, " must be int32 or int64, got ", t.dtype());
  return read_ints(t)[0];
}

inline bool read_scalar_bool(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::Bool) fail(what, " must be a bool tensor, got ", t.dtype());
  if (t.element_count() != 1) fail(what, " must hold one value, got shape ", shape_of(t.dims()).to_string());
  return t.data<bool>()[0];
}

inline Tensor make_scalar_int64(int64_t v) {
  Tensor t = Tensor::allocate(DataType::Int64, {});
  t.mutable_data<int64_t>()[0] = v;
  return t;
}
inline Tensor make_scalar_bool(bool v) {
  Tensor t = Tensor::allocate(DataType::Bool, {});
  t.mutable_data<bool>()[0] = v;
  return t;
}

}  // namespace onyx::ops::blocks
