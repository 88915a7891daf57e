// Helpers shared by the op family files: shapes and broadcasting, axes, reading small tensors, common inference.
#pragma once
#include <cstdint>
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
// Row-major strides of dims.
Dims strides_of(const Dims& d);
// Strides of `in` (a shape broadcastable to `out`) as seen from `out`: 0 on broadcast dims.
Dims broadcast_strides(const Dims& in, const Dims& out);

// Reads an integer tensor (int32/int64/uint8...) as int64 values.
std::vector<int64_t> read_ints(const Tensor& t);
// Reads a numeric tensor as doubles (float16/bfloat16 included).
std::vector<double> read_doubles(const Tensor& t);
// v rounded to the precision of float type p (float16, bfloat16, float32); other types leave it as it is: the
// quantization ops' arithmetic in the precision of their scales.
double round_to(DataType p, double v);
// Shape of a static tensor type as Dims, or nullopt when any dim is unknown.
std::optional<Dims> static_dims(const Type& t);
Shape shape_of(const Dims& d);
Type tensor_type(DataType dt, const Dims& d);

// Inference helpers.
void infer_same_as_input(InferContext& ctx, size_t input = 0, size_t output = 0);
void infer_broadcast(InferContext& ctx, DataType out_dtype = DataType::Undefined);  // all inputs broadcast together

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
