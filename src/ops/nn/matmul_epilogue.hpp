// MatMul's kernels for ai.onyx FusedMatMul (ops/fused/fused_matmul.cpp), which stands for MatMul + Bias + Z +
// activation: float32 MatMul on oneDNN with B packed at creation and the rest inside the product (one pass over the
// output instead of up to four), and MatMul's own loops for the runs the packed product does not take.
#pragma once
#include <memory>
#include <vector>

#include "kernels/dnnl_kit.hpp"
#include "ops/registry.hpp"

namespace onyx::ops {

class MatMulWithEpilogue {
 public:
  virtual ~MatMulWithEpilogue() = default;
  // Runs the node's product, sums and activation and sets output 0; false (nothing set) where this run's inputs are
  // not the case the kernel was made for (the caller then computes it another way).
  virtual bool run(KernelContext& ctx) = 0;
  virtual bool keeps_copy_of_input(size_t i) const = 0;
};

// For a node with FusedMatMul's inputs A, B, Bias?, Z?: activation(A x B + Bias + Z) in one oneDNN product, the
// activation given as oneDNN eltwise steps. Null unless B is a constant non-empty float32 2-D tensor and a given Bias
// a constant float32 [N].
std::unique_ptr<MatMulWithEpilogue> make_matmul_with_epilogue(const KernelInit& init,
                                                              std::vector<kernels::Eltwise> activation);

// MatMul's kernel with nothing packed, on inputs A and B (a fused op's fallback, beside its own packed B): the
// reference with init.reference_only, else the blocked GEMM.
std::unique_ptr<Kernel> make_unpacked_matmul(const KernelInit& init);

// What runs the float products oneDNN's paths do not take, as `onyx ops` lists it for MatMul and the ops using it.
inline constexpr const char* kBlockedMatMulKernel =
    "onyx's blocked GEMM for the rest of the float types (double, float16 and bfloat16 not promoted to float32, "
    "float32 inputs oneDNN's paths do not take)";

}  // namespace onyx::ops
