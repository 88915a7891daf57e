// Helpers shared by the tensor data-movement families (scatter, pad, space_depth, select, unique_topk, crop):
// element copies between tensors of one element type that work for every element type (fixed-size, strings and
// packed sub-byte types), the ONNX type lists those ops use, and a bound on outputs whose size comes from data.
#pragma once
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_kit.hpp"

namespace onyx::ops::tensor_moves {

// Copies single elements (by flat index) from `src` to `dst`; both must have the same element type and `dst` must be
// writable. Callers check the indices.
class ElementCopier {
 public:
  ElementCopier(const Tensor& src, Tensor& dst) {
    if (src.dtype() != dst.dtype()) fail("element types differ: ", src.dtype(), " and ", dst.dtype());
    DataType t = dst.dtype();
    if (t == DataType::String) {
      kind_ = Kind::String;
      ss_ = &src.string_values();
      ds_ = &dst.mutable_strings();
      return;
    }
    bits_ = dtype_bits(t);
    if (bits_ <= 0) fail("element type ", t, " cannot be copied");
    s_ = reinterpret_cast<const uint8_t*>(src.bytes().data());
    d_ = dst.bytes().empty() ? nullptr : dst.mutable_data<uint8_t>();
    if (bits_ < 8) {
      kind_ = Kind::Packed;
      per_ = 8 / bits_;
      mask_ = static_cast<uint8_t>((1u << bits_) - 1u);
    } else {
      esize_ = static_cast<size_t>(bits_ / 8);
    }
  }
  void copy(uint64_t si, uint64_t di) const {
    switch (kind_) {
      case Kind::Bytes: std::memcpy(d_ + di * esize_, s_ + si * esize_, esize_); break;
      case Kind::String: (*ds_)[di] = (*ss_)[si]; break;
      case Kind::Packed: {
        unsigned ss = static_cast<unsigned>(si % per_) * bits_, ds = static_cast<unsigned>(di % per_) * bits_;
        uint8_t v = static_cast<uint8_t>((s_[si / per_] >> ss) & mask_);
        uint8_t& b = d_[di / per_];
        b = static_cast<uint8_t>((b & ~(mask_ << ds)) | (v << ds));
        break;
      }
    }
  }
  // Copies n consecutive elements.
  void copy_run(uint64_t si, uint64_t di, uint64_t n) const {
    if (kind_ == Kind::Bytes) {
      if (n) std::memcpy(d_ + di * esize_, s_ + si * esize_, n * esize_);
      return;
    }
    for (uint64_t k = 0; k < n; ++k) copy(si + k, di + k);
  }

 private:
  enum class Kind { Bytes, String, Packed };
  Kind kind_ = Kind::Bytes;
  const uint8_t* s_ = nullptr;
  uint8_t* d_ = nullptr;
  size_t esize_ = 0;
  int bits_ = 0;
  uint64_t per_ = 1;
  uint8_t mask_ = 0;
  const std::vector<std::string>* ss_ = nullptr;
  std::vector<std::string>* ds_ = nullptr;
};

// Outputs whose size is computed from data values (pads, depth, shapes) are bounded, so a bad value gives an error
// instead of an enormous allocation.
inline constexpr uint64_t kMaxDataSizedElements = uint64_t{1} << 32;
inline void check_data_sized(const Dims& dims, const char* what) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) fail(what, ": negative output dimension ", d);
    if (d && n > kMaxDataSizedElements / static_cast<uint64_t>(d)) fail(what, ": output ", shape_of(dims).to_string(), " is too large");
    n *= static_cast<uint64_t>(d);
  }
  if (n > kMaxDataSizedElements) fail(what, ": output ", shape_of(dims).to_string(), " is too large");
}

// ONNX type lists ("all tensor types" grew over the IR versions).
using D = DataType;
// all_tensor_types (IR 4, no bfloat16).
inline const std::vector<DataType> kAllV1 = {D::UInt8,   D::UInt16, D::UInt32, D::UInt64, D::Int8,      D::Int16,      D::Int32, D::Int64,
                                             D::Float16, D::Float,  D::Double, D::String, D::Bool,      D::Complex64, D::Complex128};
inline std::vector<DataType> with(std::vector<DataType> v, std::initializer_list<DataType> more) {
  v.insert(v.end(), more);
  return v;
}
// all_tensor_types_with_bfloat16.
inline const std::vector<DataType> kAllBF16 = with(kAllV1, {D::BFloat16});
// + float8 and 4-bit integers (opset 21), + float4e2m1 (23), + float8e8m0 (24), + 2-bit integers (25).
inline const std::vector<DataType> kAllIR10 =
    with(kAllBF16, {D::Float8E4M3FN, D::Float8E4M3FNUZ, D::Float8E5M2, D::Float8E5M2FNUZ, D::UInt4, D::Int4});
inline const std::vector<DataType> kAllIR11 = with(kAllIR10, {D::Float4E2M1});
inline const std::vector<DataType> kAllIR12 = with(kAllIR11, {D::Float8E8M0});
inline const std::vector<DataType> kAllIR13 = with(kAllIR12, {D::UInt2, D::Int2});
// Numeric types without bfloat16 (uint8..uint64, int8..int64, float16, float, double).
inline const std::vector<DataType> kNumericNoBF16 = {D::UInt8, D::UInt16, D::UInt32, D::UInt64, D::Int8,  D::Int16,
                                                     D::Int32, D::Int64,  D::Float16, D::Float, D::Double};
inline const std::vector<DataType> kIndexTypes = {D::Int32, D::Int64};

// The rank of a type when known.
inline std::optional<size_t> rank_of(const Type& t) {
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) return std::nullopt;
  return t.shape.dims.size();
}
inline Dim known_dim(int64_t v) { return Dim{v, {}, {}}; }

// Calls f(out_flat, index) for every multi-index of `dims` in row-major order.
template <class F>
void for_each_index(const Dims& dims, F&& f) {
  const int64_t total = product(dims);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, idx);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace onyx::ops::tensor_moves
