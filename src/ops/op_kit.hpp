// The helpers every op family shares, one of each: shapes and broadcasting, axes, reading small tensors, the spec's
// type lists by operator version, element copies for every element type, one bound on outputs sized by data,
// storing computed doubles, and the inference helpers (dims and ranks of inputs, sequence/optional types and their
// merging). Helpers of one domain live next to their users (nn/window.hpp, ml/post_transform.hpp, ...).
#pragma once
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "ir/scalar.hpp"
#include "ops/registry.hpp"

namespace onyx::ops {

using Dims = std::vector<int64_t>;

// Element count of dims. A product past int64 (declared dims of a hostile model, during inference) is an error.
int64_t product(const Dims& d, size_t from = 0, size_t to = SIZE_MAX);
// An integer element type (bool is not one).
template <class T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
// An unsigned type at least as wide as int and as T: integer ops wrap in it (two's complement, as the hardware)
// without the promotion of narrower types to signed int, whose overflow would be undefined (int16 * int16).
template <class T>
using wide_unsigned_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
// Numpy-style broadcast of two static shapes; error if incompatible.
Dims broadcast_dims(const Dims& a, const Dims& b);
// Broadcast for inference, with symbolic dims (a dim of 1 yields the other; equal symbols stay).
Shape broadcast_shape(const Shape& a, const Shape& b);
// axis in [-rank, rank) -> [0, rank); error naming the attribute otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis");
// Normalizes and checks a list of axes against `rank`: each in range, no repeats.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const char* what = "axes");
// Row-major strides of dims.
Dims strides_of(const Dims& d);
// Strides of `in` (a shape broadcastable to `out`) as seen from `out`: 0 on broadcast dims.
Dims broadcast_strides(const Dims& in, const Dims& out);

// ---- Reading and writing values ----

// Reads an integer tensor (int32/int64/uint8...) as int64 values.
std::vector<int64_t> read_ints(const Tensor& t);
// Reads an integer list input as int64 (error when it is not 0-D or 1-D).
std::vector<int64_t> read_int_list(const Tensor& t, const char* what);
// Reads a tensor holding one int32/int64 integer (a scalar, or one element when `allow_one` is set).
int64_t read_scalar_int(const Tensor& t, const char* what, bool allow_one = true);
// Reads a bool tensor holding one value.
bool read_scalar_bool(const Tensor& t, const char* what);
Tensor make_scalar_int64(int64_t v);
Tensor make_scalar_bool(bool v);
// Reads a numeric tensor as doubles (float16/bfloat16 included).
std::vector<double> read_doubles(const Tensor& t);
// Stores `v` (at least element_count values) into `t`, a tensor of a float type, by from_double: the reference
// kernels compute in double and round once when storing.
void store_doubles(Tensor& t, const std::vector<double>& v);
// v as a tensor of float type p would hold it (float16 keeps 11 bits...); other types leave it as it is: the
// quantization and attention ops' arithmetic in the precision of their inputs.
double round_to(DataType p, double v);

// ---- The spec's type lists ----

// The spec's "all tensor types" as an operator revised at `version` lists them: the 15 types of IR 3 (bool,
// numbers, complex, string), then bfloat16 (13), the four float8 (19), int4/uint4 (21), float4e2m1 (23),
// float8e8m0 (24), int2/uint2 (25). In DataType order. Ops not revised when the list grew keep the list of
// their version: the sequence ops (11, SequenceMap 17) and Optional-15 take the list of 11.
std::vector<DataType> all_tensor_types(int version = INT_MAX);
// The tensor types of If, Loop and Scan at `since`: all_tensor_types, but bfloat16 came to them at 16, not 13.
std::vector<DataType> control_flow_types(int since);
// all_tensor_types without string and complex.
std::vector<DataType> numeric_bool_types(int version);
// float16, float, double; bfloat16 from 13.
std::vector<DataType> float_types(int version);
// The integer types and float_types(version).
std::vector<DataType> numeric_types(int version);
extern const std::vector<DataType> kFloatTypes;     // float_types(13): float16, bfloat16, float, double
extern const std::vector<DataType> kIntTypes;       // int8..int64, uint8..uint64
extern const std::vector<DataType> kSignedNumeric;  // int8..int64 + kFloatTypes
extern const std::vector<DataType> kNumericTypes;   // numeric_types(13)
bool contains(const std::vector<DataType>& list, DataType t);

// ---- Outputs sized by data ----

// Outputs whose size comes from data values (shape inputs, repeats, pads, depth, ranges, window sizes) are
// checked before allocating, so that a bad value is an error naming it rather than an allocation the size of the
// address space (which, zero-filled lazily, would only fail when touched). 2^32 elements is far past what models
// build this way (an attention mask of 64k x 64k) and leaves every count and byte offset inside int64; strings
// cost a std::string each before any text, hence 2^28 (8 GiB of empty strings). The session's memory budget
// still governs the bytes below these bounds.
inline constexpr uint64_t kMaxDataSizedElements = uint64_t{1} << 32;
inline constexpr uint64_t kMaxDataSizedStrings = uint64_t{1} << 28;
// Element count of dims for an output of element type dt; an error naming `what` on negative dims and on counts
// beyond the bounds above (no overflow on the way).
uint64_t check_data_sized(const Dims& dims, DataType dt = DataType::Undefined, const char* what = "output");
// A new output after checking its size as above.
Tensor& new_data_sized_output(KernelContext& ctx, size_t i, DataType dt, const Dims& dims);

// ---- Element copies for every element type ----

// Packed 2/4-bit types: element i lives in byte i / (8 / bits), at bit (i % (8 / bits)) * bits, low bits first.
inline uint8_t read_packed(const uint8_t* p, uint64_t i, int bits) {
  const uint64_t per = 8 / static_cast<uint64_t>(bits);
  return static_cast<uint8_t>((p[i / per] >> (static_cast<int>(i % per) * bits)) & ((1u << bits) - 1u));
}
inline void write_packed(uint8_t* p, uint64_t i, int bits, uint8_t v) {
  const uint64_t per = 8 / static_cast<uint64_t>(bits);
  const int shift = static_cast<int>(i % per) * bits;
  const unsigned mask = ((1u << bits) - 1u) << shift;
  p[i / per] = static_cast<uint8_t>((p[i / per] & ~mask) | ((static_cast<unsigned>(v) << shift) & mask));
}

// Copies elements by flat index between two tensors of one element type, whatever it is: byte-sized types by
// their bytes (memcpy: views of mapped files need not be aligned for the element type), strings by value, packed
// types bit by bit. dst must be writable; callers check the indices.
class ElementCopier {
 public:
  ElementCopier(const Tensor& src, Tensor& dst);
  // dst[di] = src[si].
  void copy(uint64_t si, uint64_t di) const {
    switch (kind_) {
      case Kind::Bytes: std::memcpy(d_ + di * esize_, s_ + si * esize_, esize_); break;
      case Kind::String: (*ds_)[di] = (*ss_)[si]; break;
      case Kind::Packed: write_packed(d_, di, bits_, read_packed(s_, si, bits_)); break;
    }
  }
  // dst[di..di+n) = src[si..si+n).
  void copy_run(uint64_t si, uint64_t di, uint64_t n) const {
    if (kind_ == Kind::Bytes) {
      if (n) std::memcpy(d_ + di * esize_, s_ + si * esize_, n * esize_);
      return;
    }
    for (uint64_t k = 0; k < n; ++k) copy(si + k, di + k);
  }
  // Bytes per element of a byte-sized type; 0 for strings and packed types.
  size_t element_bytes() const { return kind_ == Kind::Bytes ? esize_ : 0; }

 private:
  enum class Kind { Bytes, String, Packed };
  Kind kind_ = Kind::Bytes;
  const uint8_t* s_ = nullptr;
  uint8_t* d_ = nullptr;
  size_t esize_ = 0;
  int bits_ = 0;
  const std::vector<std::string>* ss_ = nullptr;
  std::vector<std::string>* ds_ = nullptr;
};

// dst[d..d+n) = src[s..s+n) (same element type; dst writable).
void copy_elements(const Tensor& src, uint64_t s, Tensor& dst, uint64_t d, uint64_t n);

// dst[i] = src[src_index(i)] for every element i of dst, in increasing order of i (src_index may keep state).
template <class F>
void gather_into(const Tensor& src, Tensor& dst, F&& src_index) {
  const uint64_t n = dst.element_count();
  if (n == 0) return;
  const ElementCopier copier(src, dst);
  // Byte-sized types by a fixed-size memcpy per element, which the compiler turns into one load and store.
  auto fixed = [&](auto size_tag) {
    constexpr size_t es = decltype(size_tag)::value;
    const char* in = src.data<char>();
    char* out = dst.mutable_data<char>();
    for (uint64_t i = 0; i < n; ++i) std::memcpy(out + i * es, in + static_cast<uint64_t>(src_index(i)) * es, es);
  };
  switch (copier.element_bytes()) {
    case 1: fixed(std::integral_constant<size_t, 1>{}); return;
    case 2: fixed(std::integral_constant<size_t, 2>{}); return;
    case 4: fixed(std::integral_constant<size_t, 4>{}); return;
    case 8: fixed(std::integral_constant<size_t, 8>{}); return;
    case 16: fixed(std::integral_constant<size_t, 16>{}); return;
    default: break;
  }
  for (uint64_t i = 0; i < n; ++i) copier.copy(static_cast<uint64_t>(src_index(i)), i);
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

// dst (of dims `out`) takes src element base + sum(idx[k] * strides[k]). Where the last axis is contiguous
// (stride 1) in a byte-sized type, whole runs along it are copied at once: a Slice of the last axis or a
// Transpose that keeps it moves rows, not elements.
void gather_strided(const Tensor& src, Tensor& dst, const Dims& out, const Dims& strides, int64_t base = 0);

// Copies positions [src_start, src_start + n) along `axis` of src to positions [dst_start, dst_start + n) along
// the same axis of dst. Both have the same dims except along `axis`.
void copy_along_axis(Tensor& dst, int64_t dst_start, const Tensor& src, int64_t src_start, int64_t n, size_t axis);
// Positions [start, start + n) along `axis` of t, as a new tensor (the axis kept, of length n).
Tensor slice_axis(const Tensor& t, size_t axis, int64_t start, int64_t n);
// Position `i` along `axis` of t, the axis removed.
Tensor take_axis(const Tensor& t, size_t axis, int64_t i);
// Writes `part` (dims = dst dims without `axis`) at position i along `axis` of dst.
void put_axis(Tensor& dst, size_t axis, int64_t i, const Tensor& part);

// Calls f(flat_index, multi_index) for every multi-index of `dims` in row-major order.
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

// Calls `f(out_index, in_offsets...)`-style iteration for broadcasting: for each output element, the offsets into
// each input. `ins` are the input dims; out = broadcast of all.
template <class F>
void for_each_broadcast(const Dims& out, const std::vector<Dims>& ins, F&& f) {
  const size_t rank = out.size();
  const int64_t total = product(out);
  std::vector<Dims> strides;
  for (const Dims& d : ins) strides.push_back(broadcast_strides(d, out));
  std::vector<int64_t> idx(rank, 0), off(ins.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, off);
    for (size_t k = rank; k-- > 0;) {
      ++idx[k];
      for (size_t j = 0; j < ins.size(); ++j) off[j] += strides[j][k];
      if (idx[k] < out[k]) break;
      for (size_t j = 0; j < ins.size(); ++j) off[j] -= strides[j][k] * out[k];
      idx[k] = 0;
    }
  }
}

// y[i] = f(a[ia], b[ib]) over the broadcast output y.
template <class TA, class TB, class TY, class F>
void binary_loop(const Tensor& a, const Dims& ad, const Tensor& b, const Dims& bd, Tensor& y, F&& f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TY* py = y.mutable_data<TY>();
  const Dims& out = y.dims();
  const int64_t n = product(out);
  if (ad == out && bd == out) {
    for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], pb[i]);
  } else if (ad == out && product(bd) == 1) {
    const TB s = pb[0];
    for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], s);
  } else {
    for_each_broadcast(out, {ad, bd}, [&](int64_t i, const std::vector<int64_t>& o) { py[i] = f(pa[o[0]], pb[o[1]]); });
  }
}

// An error naming both element types when a and b differ in it.
void require_same_dtype(KernelContext& ctx, const Tensor& a, const Tensor& b);


// ---- Types and shapes for inference ----

// Shape of a static tensor type as Dims, or nullopt when any dim is unknown.
std::optional<Dims> static_dims(const Type& t);
Shape shape_of(const Dims& d);
Type tensor_type(DataType dt, const Dims& d);
// A known dim of value v.
inline Dim known_dim(int64_t v) { return Dim{v, {}, {}}; }
// A shape of known rank from its dims (each known, symbolic or unknown).
Shape shape_from(std::vector<Dim> dims);
// A shape of `rank` unknown dims. Ranks come from declared lengths (a shape input of type int64[n]) that a
// hostile model sets to anything: past kMaxInferredRank the rank stays unknown instead (the run checks the
// actual shape; found by fuzz_session, a ConstantOfShape of int64[2^40]).
inline constexpr size_t kMaxInferredRank = 1024;
Shape unknown_dims(size_t rank);
// Dim `axis` of input i's inferred shape (possibly symbolic or unknown; unknown when the input is missing).
Dim dim_of(const InferContext& ctx, size_t input, size_t axis);
// The rank of a tensor type when known.
std::optional<size_t> rank_of(const Type& t);
// Rank of tensor input i when known, else -1.
int64_t input_rank(const InferContext& ctx, size_t input);

// Input i of the node being inferred as a target shape (Reshape, Expand, ConstantOfShape): its constant value or
// the symbolic contents its producer propagated (ctx.input_as_dims), e.g. {N, -1} from Concat(Shape(x)[0], [-1]).
// Only lists without negative static values are given (valid shapes; with allow_minus_one, Reshape's -1 passes).
std::optional<std::vector<Dim>> shape_input_dims(const InferContext& ctx, size_t i, bool allow_minus_one = false);
// Static values of input i when its dims (ctx.input_as_dims) are all known: indices, axes, starts...
std::optional<std::vector<int64_t>> static_input_ints(const InferContext& ctx, size_t i);

// Types of sequence and optional values, and of scalars.
Type seq_type(Type elem);
Type optional_type(Type elem);
Type scalar_type(DataType dt);
// The union of two shapes: dims that agree stay, others become unknown; different ranks give an unknown rank.
Shape merge_shapes(const Shape& a, const Shape& b);
// The union of two types of the same kind (what a value may be when it comes from either: If branches, Loop
// carried values, sequence elements); Unknown yields the other. `what` names the value in the error when element
// types or kinds disagree.
Type merge_types(const Type& a, const Type& b, const std::string& what);

void infer_same_as_input(InferContext& ctx, size_t input = 0, size_t output = 0);
void infer_broadcast(InferContext& ctx, DataType out_dtype = DataType::Undefined);  // all inputs broadcast together

// ---- Kernels and registration ----

// A kernel made from a lambda, for ops with no state beyond parsed attributes.
template <class F>
class LambdaKernel : public Kernel {
 public:
  explicit LambdaKernel(F f) : f_(std::move(f)) {}
  void run(KernelContext& ctx) override { f_(ctx); }

 private:
  F f_;
};
template <class F>
std::unique_ptr<Kernel> make_kernel(F f) {
  return std::make_unique<LambdaKernel<F>>(std::move(f));
}

// Registers `op_type` for each of `versions` with the same def otherwise.
void add_versions(Registry& r, const std::string& domain, const std::string& op_type, std::initializer_list<int> versions,
                  const std::vector<TypeConstraint>& types, InferFn infer, KernelFactory kernel);

}  // namespace onyx::ops
