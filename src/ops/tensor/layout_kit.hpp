// Helpers shared by the shape/layout op families (shape_ops, constant, concat_split, slice, gather, transpose,
// expand_tile): type lists by spec version, element copies that work for every element type (byte-sized types by
// their bytes, strings by value, packed 4/2-bit types bit by bit), strided walks, and checked output sizes.
#pragma once
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/op_kit.hpp"

namespace onyx::ops::layout_kit {

// The spec's "all tensor types" list as it stood at an operator version: the 15 types of IR 3 (no bfloat16), then
// bfloat16 (13), float8 (19), int4/uint4 (21), float4e2m1 (23), float8e8m0 (24), int2/uint2 (25).
inline std::vector<DataType> all_types(int version) {
  using D = DataType;
  std::vector<DataType> v = {D::Bool,  D::Complex64, D::Complex128, D::Double, D::Float,  D::Float16,
                             D::Int8,  D::Int16,     D::Int32,      D::Int64,  D::UInt8,  D::UInt16,
                             D::UInt32, D::UInt64,   D::String};
  if (version >= 13) v.push_back(D::BFloat16);
  if (version >= 19) v.insert(v.end(), {D::Float8E4M3FN, D::Float8E4M3FNUZ, D::Float8E5M2, D::Float8E5M2FNUZ});
  if (version >= 21) v.insert(v.end(), {D::Int4, D::UInt4});
  if (version >= 23) v.push_back(D::Float4E2M1);
  if (version >= 24) v.push_back(D::Float8E8M0);
  if (version >= 25) v.insert(v.end(), {D::UInt2, D::Int2});
  return v;
}

// Numeric types and bool without complex and string, growing with the version like all_types.
inline std::vector<DataType> numeric_bool_types(int version) {
  std::vector<DataType> v;
  for (DataType t : all_types(version))
    if (t != DataType::String && t != DataType::Complex64 && t != DataType::Complex128) v.push_back(t);
  return v;
}

inline const std::vector<DataType>& float_types_v1() {
  static const std::vector<DataType> v = {DataType::Float16, DataType::Float, DataType::Double};
  return v;
}

inline bool contains(const std::vector<DataType>& v, DataType t) {
  for (DataType x : v)
    if (x == t) return true;
  return false;
}

// Output sizes computed from data (shape inputs, repeats, ranges) are checked before allocating.
inline constexpr uint64_t kMaxElements = uint64_t{1} << 36;
inline constexpr uint64_t kMaxStringElements = uint64_t{1} << 28;

// Element count of dims; an error on negative dims, overflow, or counts beyond the limits above.
inline uint64_t checked_count(const Dims& dims, DataType dt = DataType::Undefined) {
  uint64_t n = 1;
  bool zero = false;
  for (int64_t d : dims) {
    if (d < 0) fail("dimension ", d, " is negative");
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  const uint64_t limit = dt == DataType::String ? kMaxStringElements : kMaxElements;
  for (int64_t d : dims) {
    if (static_cast<uint64_t>(d) > limit || n > limit / static_cast<uint64_t>(d))
      fail("output shape ", shape_of(dims).to_string(), " is too large (more than ", limit, " elements)");
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

// A new output after checking its size.
inline Tensor& new_output(KernelContext& ctx, size_t i, DataType dt, const Dims& dims) {
  checked_count(dims, dt);
  return ctx.allocate_output(i, dt, dims);
}

// ---- element access for every type ----

inline int packed_bits(DataType t) {
  int b = dtype_bits(t);
  return b > 0 && b < 8 ? b : 0;
}

inline uint8_t get_packed(const Tensor& t, uint64_t i, int bits) {
  const uint8_t* p = t.data<uint8_t>();
  const uint64_t per = 8 / static_cast<uint64_t>(bits);
  const int shift = static_cast<int>(i % per) * bits;
  return static_cast<uint8_t>((p[i / per] >> shift) & ((1u << bits) - 1));
}

inline void put_packed(uint8_t* p, uint64_t i, int bits, uint8_t v) {
  const uint64_t per = 8 / static_cast<uint64_t>(bits);
  const int shift = static_cast<int>(i % per) * bits;
  const uint8_t mask = static_cast<uint8_t>(((1u << bits) - 1) << shift);
  p[i / per] = static_cast<uint8_t>((p[i / per] & ~mask) | ((v << shift) & mask));
}

// Copies n consecutive elements src[s..s+n) to dst[d..d+n) (same element type; dst writable).
inline void copy_elems(const Tensor& src, uint64_t s, Tensor& dst, uint64_t d, uint64_t n) {
  if (n == 0) return;
  const DataType t = src.dtype();
  if (t == DataType::String) {
    const auto& in = src.string_values();
    auto& out = dst.mutable_strings();
    for (uint64_t k = 0; k < n; ++k) out[d + k] = in[s + k];
    return;
  }
  const int bits = dtype_bits(t);
  if (bits >= 8) {
    const size_t es = static_cast<size_t>(bits / 8);
    std::memcpy(dst.mutable_data<char>() + d * es, src.data<char>() + s * es, n * es);
    return;
  }
  uint8_t* out = dst.mutable_data<uint8_t>();
  for (uint64_t k = 0; k < n; ++k) put_packed(out, d + k, bits, get_packed(src, s + k, bits));
}

// dst[i] = src[src_index(i)] for every element i of dst, in increasing order of i (src_index may keep state).
template <class F>
void gather_into(const Tensor& src, Tensor& dst, F&& src_index) {
  const uint64_t n = dst.element_count();
  if (n == 0) return;
  const DataType t = src.dtype();
  if (t == DataType::String) {
    const auto& in = src.string_values();
    auto& out = dst.mutable_strings();
    for (uint64_t i = 0; i < n; ++i) out[i] = in[static_cast<size_t>(src_index(i))];
    return;
  }
  // Byte pointers and fixed-size memcpy: views of mapped files need not be aligned for the element type.
  auto typed = [&](auto size_tag) {
    constexpr size_t es = decltype(size_tag)::value;
    const char* in = src.data<char>();
    char* out = dst.mutable_data<char>();
    for (uint64_t i = 0; i < n; ++i) std::memcpy(out + i * es, in + static_cast<uint64_t>(src_index(i)) * es, es);
  };
  switch (dtype_bits(t)) {
    case 8: typed(std::integral_constant<size_t, 1>{}); return;
    case 16: typed(std::integral_constant<size_t, 2>{}); return;
    case 32: typed(std::integral_constant<size_t, 4>{}); return;
    case 64: typed(std::integral_constant<size_t, 8>{}); return;
    case 128: typed(std::integral_constant<size_t, 16>{}); return;
    default: break;
  }
  const int bits = packed_bits(t);
  if (!bits) fail("element type ", t, " cannot be copied");
  uint8_t* out = dst.mutable_data<uint8_t>();
  for (uint64_t i = 0; i < n; ++i) put_packed(out, i, bits, get_packed(src, static_cast<uint64_t>(src_index(i)), bits));
}

// Walks the elements of `dims` in row-major order, tracking the offset sum(idx[k] * strides[k]) + base.
class StridedWalk {
 public:
  StridedWalk(Dims dims, Dims strides, int64_t base = 0)
      : dims_(std::move(dims)), strides_(std::move(strides)), idx_(dims_.size(), 0), off_(base) {}
  // The current offset, then advances to the next element.
  int64_t next() {
    const int64_t cur = off_;
    for (size_t k = dims_.size(); k-- > 0;) {
      off_ += strides_[k];
      if (++idx_[k] < dims_[k]) break;
      off_ -= strides_[k] * dims_[k];
      idx_[k] = 0;
    }
    return cur;
  }

 private:
  Dims dims_, strides_, idx_;
  int64_t off_;
};

// dst (of dims `out`) takes src element base + sum(idx[k] * strides[k]).
// Where the last axis is contiguous (stride 1) in whole bytes, whole runs along it are copied at once: a Slice of
// the last axis or a Transpose that keeps it moves rows, not elements.
inline void gather_strided(const Tensor& src, Tensor& dst, const Dims& out, const Dims& strides, int64_t base = 0) {
  const int bits = dtype_bits(src.dtype());
  if (!out.empty() && strides.back() == 1 && out.back() > 1 && bits >= 8 && bits % 8 == 0 &&
      src.dtype() != DataType::String && dst.element_count() > 0) {
    const size_t run = static_cast<size_t>(out.back()) * static_cast<size_t>(bits / 8);
    const Dims outer(out.begin(), out.end() - 1), outer_strides(strides.begin(), strides.end() - 1);
    const int64_t rows = static_cast<int64_t>(dst.element_count()) / out.back();
    StridedWalk w(outer, outer_strides, base);
    const char* in = src.data<char>();
    char* o = dst.mutable_data<char>();
    const size_t es = static_cast<size_t>(bits / 8);
    for (int64_t r = 0; r < rows; ++r) std::memcpy(o + static_cast<size_t>(r) * run, in + static_cast<size_t>(w.next()) * es, run);
    return;
  }
  StridedWalk w(out, strides, base);
  gather_into(src, dst, [&](uint64_t) { return w.next(); });
}

// ---- symbolic shape values ----

// Input i of the node being inferred as a target shape (Reshape, Expand, ConstantOfShape): its constant value or
// the symbolic contents its producer propagated (ctx.input_as_dims), e.g. {N, -1} from Concat(Shape(x)[0], [-1]).
// Only lists without negative static values are given (valid shapes; with allow_minus_one, Reshape's -1 passes).
inline std::optional<std::vector<Dim>> shape_input_dims(const InferContext& ctx, size_t i, bool allow_minus_one = false) {
  if (!ctx.has_input(i)) return std::nullopt;
  auto d = ctx.input_as_dims(i);
  if (!d) return std::nullopt;
  for (const Dim& x : *d)
    if (x.value && *x.value < (allow_minus_one ? -1 : 0)) return std::nullopt;
  return d;
}

// Static values of input i when its dims (ctx.input_as_dims) are all known: indices, axes, starts...
inline std::optional<std::vector<int64_t>> static_input_ints(const InferContext& ctx, size_t i) {
  auto d = ctx.input_as_dims(i);
  if (!d) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& x : *d) {
    if (!x.value) return std::nullopt;
    out.push_back(*x.value);
  }
  return out;
}

// ---- inference helpers ----

// The element type of a tensor input, or Undefined.
inline DataType elem_of(const InferContext& ctx, size_t i) { return ctx.input_dtype(i); }

// A shape of `rank` unknown dims. Ranks come from declared lengths (a shape input of type int64[n]) that a
// hostile model sets to anything: past kMaxInferredRank the rank stays unknown instead (the run checks the
// actual shape; found by fuzz_session, a ConstantOfShape of int64[2^40]).
constexpr size_t kMaxInferredRank = 1024;
inline Shape unknown_dims(size_t rank) {
  Shape s;
  if (rank > kMaxInferredRank) return s;
  s.rank_known = true;
  s.dims.resize(rank);
  return s;
}

inline Dim static_dim(int64_t v) { return Dim{v, {}, {}}; }

// Reads an integer list input as int64 (error when it is not 0-D or 1-D).
inline std::vector<int64_t> read_int_list(const Tensor& t, const char* what) {
  if (t.dims().size() > 1) fail(what, " must be 1-D, got shape ", shape_of(t.dims()).to_string());
  return read_ints(t);
}

// Normalizes and checks a list of axes against `rank`: each in range, no repeats.
inline std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const char* what = "axes") {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, what);
    if (seen[static_cast<size_t>(n)]) fail(what, " has axis ", a, " more than once");
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

}  // namespace onyx::ops::layout_kit
