// Conv's kernels for the fused ops that stand for Conv + activation: float32 Conv on oneDNN with an epilogue inside
// the kernel (FusedConv's activation as oneDNN post-ops: one pass over the output instead of two), and the Conv
// they compute where that does not apply.
#pragma once
#include <memory>

#include "kernels/dnnl_kit.hpp"
#include "ops/registry.hpp"

namespace onyx::ops {

class ConvWithEpilogue {
 public:
  virtual ~ConvWithEpilogue() = default;
  // Runs the node's convolution and epilogue and sets output 0; false (nothing set) where this run's inputs are not
  // the case the fast kernel takes (the caller then computes it another way).
  virtual bool run(KernelContext& ctx) = 0;
  virtual bool keeps_copy_of_input(size_t i) const = 0;
};

// For a Conv node's init (inputs X, W, B as Conv's), or null where the fast kernel does not apply.
std::unique_ptr<ConvWithEpilogue> make_conv_with_epilogue(const KernelInit& init, kernels::Epilogue epilogue);

// Conv's kernel with nothing packed (a fused op's fallback, beside its own packed W): the reference with
// init.reference_only, else the blocked GEMM. For a Conv node's init (attributes as Conv's).
std::unique_ptr<Kernel> make_unpacked_conv(const KernelInit& init);

}  // namespace onyx::ops
