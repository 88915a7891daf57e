// The float32 fast path of unary elementwise ops (math/unary.cpp, nn/activation.cpp): the vectorized kernel of
// kernels/elementwise.hpp for float inputs, the op's reference kernel for every other type.
#pragma once
#include <memory>

#include "ir/tensor_alloc.hpp"
#include "kernels/elementwise.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {

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
