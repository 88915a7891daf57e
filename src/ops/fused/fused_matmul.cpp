// ai.onyx FusedMatMul(A, B, Bias?, Z?) (version 1), made by the optimizer (src/opt/matmul_epilogue_fusion.cpp):
//   Y = activation(MatMul(A, B) + Bias + Z), the sums as Add-14's (Bias is usually [N], Z Y's shape), the
//   activation named by `activation` / `activation_params` as FusedConv's. The reference runs MatMul-13, Add-14
//   and the activation's kernels; the fast kernel (float32, constant 2-D B and Bias) applies all of it inside
//   oneDNN's product, Z as a sum post-op.
#include <algorithm>

#include "ops/fused/as_standard.hpp"
#include "ops/fused/fused.hpp"
#include "ops/nn/matmul_epilogue.hpp"

namespace onyx::ops {
namespace {

// The MatMul version FusedMatMul stands for.
constexpr int kFusedMatMulVersion = 13;

class FusedMatMulKernel : public Kernel {
 public:
  explicit FusedMatMulKernel(const KernelInit& init) : node_(init.node), add_(init.node) {
    // The product of the runs the fast kernel does not take: the blocked GEMM, or with reference_only MatMul's
    // reference loops.
    mm_ = make_unpacked_matmul(init);
    if (init.attrs.has("activation")) act_ = std::make_unique<ActivationStep>(init);
    if (init.reference_only) return;
    // An activation oneDNN has no post-op for leaves the whole node to the steps.
    using Steps = std::vector<kernels::Eltwise>;
    std::optional<Steps> activation = act_ ? eltwise_of(*act_) : Steps{};
    if (activation) fast_ = make_matmul_with_epilogue(init, std::move(*activation));
  }

  bool keeps_copy_of_input(size_t i) const override { return fast_ && fast_->keeps_copy_of_input(i); }

  void run(KernelContext& ctx) override {
    if (fast_ && fast_->run(ctx)) return;
    run_in_steps(ctx);
  }

 private:
  // The product, the sums and the activation one kernel after another, as the reference defines them.
  void run_in_steps(KernelContext& ctx) {
    std::vector<Datum> y = run_on(*mm_, node_, kFusedMatMulVersion, {&ctx.input_datum(0), &ctx.input_datum(1)}, 1);
    for (size_t i = 2; i < 4; ++i) {
      if (!ctx.has_input(i)) continue;
      if (y.empty() || !y[0].is_tensor()) ctx.error("the matrix product gave no tensor");
      y[0] = add_.run(y[0], ctx.input_datum(i));
    }
    if (y.empty() || !y[0].is_tensor()) ctx.error("the matrix product gave no tensor");
    ctx.set_output(0, act_ ? act_->run(y[0]) : std::move(y[0]));
  }

  const Node& node_;
  std::unique_ptr<Kernel> mm_;
  std::unique_ptr<ActivationStep> act_;
  AddStep add_;
  std::unique_ptr<MatMulWithEpilogue> fast_;
};

// FusedMatMul's inference: MatMul-13's on A and B.
void infer_fused_matmul(InferContext& ctx) {
  InferContext inner = ctx;
  inner.opset = kFusedMatMulVersion;
  inner.input_types.resize(std::min<size_t>(2, inner.input_types.size()));
  inner.input_values.resize(std::min<size_t>(2, inner.input_values.size()));
  inner.input_dim_values.resize(std::min<size_t>(2, inner.input_dim_values.size()));
  standard("MatMul", kFusedMatMulVersion).infer(inner);
  ctx.output_types = std::move(inner.output_types);
}

}  // namespace

void register_fused_matmul(Registry& r) {
  using D = DataType;
  r.add(OpDef{kFusedDomain, "FusedMatMul", 1, {{{0, 1, 2, 3}, {D::Float16, D::Float, D::Double, D::BFloat16}}},
              infer_fused_matmul,
              [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<FusedMatMulKernel>(init); }});
  r.set_fast_kernels(kFusedDomain, "FusedMatMul",
                     {"oneDNN matmul for float32 with a constant B, the bias, residual sum and activation as post-ops",
                      kBlockedMatMulKernel});
}

}  // namespace onyx::ops
