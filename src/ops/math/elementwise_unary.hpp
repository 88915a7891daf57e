// Kernels of the unary elementwise ops (math/unary.cpp, nn/activation.cpp): the reference loop, in double for the
// float types, and the float32 fast path (the vectorized kernel of kernels/elementwise.hpp for float inputs, the
// op's reference kernel for every other type).
#pragma once
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/tensor_alloc.hpp"
#include "kernels/elementwise.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {

// Element types the reference loop computes in double: float16, bfloat16, float, double (not float8).
template <class T>
constexpr bool is_plain_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// Marks a function with no integer form (the op's type constraints admit only float types).
struct NoInt {};

// y = f(x) element-wise with the same element type; ff for float types (in double), fi for integers.
template <class FF, class FI>
void apply_unary(KernelContext& ctx, const FF& ff, const FI& fi) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
  const int64_t n = static_cast<int64_t>(x.element_count());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_plain_float_v<T>) {
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) py[i] = from_double<T>(ff(to_double(px[i])));
    } else if constexpr (is_int_v<T> && !std::is_same_v<FI, NoInt>) {
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) py[i] = fi(px[i]);
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

template <class FF, class FI = NoInt>
std::unique_ptr<Kernel> unary_kernel(FF ff, FI fi = {}) {
  return make_kernel([ff, fi](KernelContext& ctx) { apply_unary(ctx, ff, fi); });
}

// Registers an op whose output has the input's type and shape, one entry per (since_version, allowed types).
inline void add_same_type(Registry& r, const char* name, const std::vector<std::pair<int, std::vector<DataType>>>& versions,
                          KernelFactory k) {
  for (const auto& [v, types] : versions)
    r.add(OpDef{"", name, v, {{{0}, types}}, [](InferContext& ctx) { infer_same_as_input(ctx); }, k});
}

class FastFloatUnary : public Kernel {
 public:
  FastFloatUnary(kernels::UnaryParams p, std::unique_ptr<Kernel> reference) : p_(p), reference_(std::move(reference)) {}
  void run(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DataType::Float) {
      reference_->run(ctx);
      return;
    }
    // In place when x dies here: the kernel reads each element before writing it.
    Tensor* y = ctx.reuse_input(0, 0, DataType::Float, x.dims());
    if (!y) {
      ctx.set_output(0, allocate_for_overwrite(DataType::Float, x.dims()));
      y = &ctx.outputs()[0].tensor;
    }
    kernels::unary(p_, x.data<float>(), y->mutable_data<float>(), static_cast<int64_t>(x.element_count()));
  }

 private:
  kernels::UnaryParams p_;
  std::unique_ptr<Kernel> reference_;
};

inline std::unique_ptr<Kernel> with_fast_float(const KernelInit& init, kernels::UnaryParams p, std::unique_ptr<Kernel> reference) {
  if (init.reference_only) return reference;
  return std::make_unique<FastFloatUnary>(p, std::move(reference));
}

inline kernels::UnaryParams unary_params(kernels::UnaryOp op) {
  kernels::UnaryParams p;
  p.op = op;
  return p;
}

}  // namespace onyx::ops
