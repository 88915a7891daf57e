// ai.onyx MatMulIntegerToFloat-1 (made by src/opt/matmul_integer_fusion.cpp): A, B, a_zero_point, b_zero_point
//   as MatMulInteger's, scale (float, one value or one per column: [..., 1] or [..., N] with leading 1s), bias
//   (optional, float [N]); Y(float) = float(MatMulInteger(...)) * scale + bias, rounded after the product and after
//   the sum as the Cast, Mul and Add it stands for. Both kernels are MatMulInteger's (ops/quant/qlinear.cpp) with
//   this scaling: the reference's loops, and the packed integer GEMM converting, scaling and adding in its registers.
#include "ops/fused/as_standard.hpp"
#include "ops/fused/fused.hpp"
#include "ops/quant/matmul_integer.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

// The MatMulInteger version MatMulIntegerToFloat stands for.
constexpr int kMatMulIntegerVersion = 10;

// The scale and bias, checked against the product's N columns (the fusion made them so; a hand-written node may not
// have).
IntegerToFloat read_scale_and_bias(KernelContext& ctx, int64_t N, size_t out_rank) {
  const Tensor& sc = ctx.input(4);
  const Dims& sd = sc.dims();
  bool ok = sc.dtype() == D::Float && sd.size() <= out_rank && (sc.element_count() == 1 || (!sd.empty() && sd.back() == N));
  for (size_t i = 0; ok && i + 1 < sd.size(); ++i) ok = sd[i] == 1;
  if (!ok) ctx.error(cat("scale ", shape_of(sd).to_string(), " must be one float or one per column of the ", N, "-column product"));
  IntegerToFloat e{sc.data<float>(), sc.element_count() != 1, nullptr};
  if (ctx.has_input(5)) {
    const Tensor& b = ctx.input(5);
    if (b.dtype() != D::Float || b.dims() != Dims{N}) ctx.error(cat("bias ", shape_of(b.dims()).to_string(), " must be float [", N, "]"));
    e.bias = b.data<float>();
  }
  return e;
}

// MatMulInteger-10's inference on A and B, the output float32.
void infer_matmul_integer_to_float(InferContext& ctx) {
  infer_as(ctx, standard("MatMulInteger", kMatMulIntegerVersion));
  if (!ctx.output_types.empty()) ctx.set_output(0, Type::tensor(D::Float, ctx.output_types[0].shape));
}

}  // namespace

void register_matmul_integer_to_float(Registry& r) {
  const std::vector<D> k8 = {D::Int8, D::UInt8};
  // A, B, a_zero_point, b_zero_point, scale, bias?.
  r.add(OpDef{kFusedDomain, "MatMulIntegerToFloat", 1, {{{0, 2}, k8}, {{1, 3}, k8}, {{4, 5}, {D::Float}}},
              infer_matmul_integer_to_float,
              [](const KernelInit& init) -> std::unique_ptr<Kernel> {
                if (init.reference_only)
                  return make_kernel([](KernelContext& ctx) { run_matmul_integer_to_float(ctx, read_scale_and_bias); });
                return make_fast_matmul_integer_to_float(init, read_scale_and_bias);
              }});
  r.set_fast_kernels("ai.onyx", "MatMulIntegerToFloat", {"onyx's AVX512-VNNI integer GEMM with the scaling in its registers"});
}

}  // namespace onyx::ops
