// ai.onyx (version 1) fused ops, made by the optimizer (src/opt/). Each runs the reference kernels of the
// standard ops it stands for, so its results are theirs. This file:
//   FusedConv(X, W, B?) — Conv (attributes as Conv's) followed by an activation: attribute `activation` names
//     Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Elu, HardSwish, Gelu (erf form) or Clip, and
//     `activation_params` lists its float attributes (LeakyRelu/Elu: alpha; HardSigmoid: alpha, beta; Clip: min,
//     max).
//   Gelu(X) — Gelu-20 (attribute approximate = "none" | "tanh"), for models below opset 20.
//   HardSwish(X) — HardSwish-22, for models below opset 14 (and bfloat16 below opset 22).
//   LayerNormalization(X, Scale, B?) — LayerNormalization-17, for models below opset 17.
//   Attention(Q, K, V, attn_mask?) — Attention-23 on 4-D inputs [batch, heads, seq, head_size] (attribute
//     scale), for models below opset 23.
//   RMSNormalization, RotaryEmbedding (= the ONNX ops of version 23) and GridSample (= GridSample-16): what the
//     contrib ops' expansions (src/ops/contrib/) and the ONNX-domain SimplifiedLayerNormalization of ONNX Runtime's
//     optimizer (check/runtime_ops.hpp) run as in models of older opsets.
// The domain's other ops, one family file each beside this one: FusedMatMul (fused_matmul.cpp: MatMul, then + Bias,
// + Z, then an activation as FusedConv's), MatMulIntegerToFloat (matmul_integer_to_float.cpp), QLinearAdd
// (qlinear_add.cpp) and the channels-last ops Nhwc* (channels_last.cpp).
#include <limits>

#include "kernels/dnnl_kit.hpp"
#include "ops/fused/as_standard.hpp"
#include "ops/fused/fused.hpp"
#include "ops/nn/conv_epilogue.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {

const FusedActivation* find_fused_activation(std::string_view op_type) {
  static const std::vector<FusedActivation> list = {
      {"Relu", 13, {}},
      {"Sigmoid", 13, {}},
      {"Tanh", 13, {}},
      {"LeakyRelu", 16, {{"alpha", 0.01f}}},
      {"HardSigmoid", 22, {{"alpha", 0.2f}, {"beta", 0.5f}}},
      {"Elu", 22, {{"alpha", 1.0f}}},
      {"HardSwish", 22, {}},
      {"Clip", 6, {{"min", std::numeric_limits<float>::lowest()}, {"max", std::numeric_limits<float>::max()}}},
      // The erf form only (approximate = "none", Gelu's default): the fusions leave the tanh form alone.
      {"Gelu", 20, {}},
  };
  for (const auto& a : list)
    if (op_type == a.op_type) return &a;
  return nullptr;
}

ActivationStep::ActivationStep(const KernelInit& init) {
  const std::string name = init.attrs.get_string("activation");
  act_ = find_fused_activation(name);
  if (!act_) fail("activation '", name, "' is not one the fused ops apply");
  params_ = init.attrs.get_floats("activation_params", std::vector<float>{});
  if (params_.size() > act_->params.size())
    fail("activation_params has ", params_.size(), " values; ", name, " takes ", act_->params.size());
  for (size_t i = params_.size(); i < act_->params.size(); ++i) params_.push_back(act_->params[i].second);
  node_ = std::make_unique<Node>();
  node_->op_type = act_->op_type;
  node_->name = init.node.name;
  node_->graph = init.node.graph;
  node_->inputs = {nullptr};
  node_->outputs = {init.node.outputs.empty() ? nullptr : init.node.outputs[0]};
  for (size_t i = 0; i < act_->params.size(); ++i) {
    Attribute a;
    a.name = act_->params[i].first;
    a.type = AttributeType::Float;
    a.f = params_[i];
    node_->attributes.push_back(std::move(a));
  }
  def_ = &standard(act_->op_type, act_->since_version);
  KernelInit ai{*node_, act_->since_version, AttributeView(*node_), {}, {}};
  ai.input_types = {init.output_types.empty() ? nullptr : init.output_types[0]};
  ai.output_types = {ai.input_types[0]};
  kernel_ = def_->kernel(ai);
}

std::optional<std::vector<kernels::Eltwise>> eltwise_of(const ActivationStep& act) {
  using A = dnnl::algorithm;
  using Steps = std::vector<kernels::Eltwise>;
  const std::string_view name = act.activation().op_type;
  const std::vector<float>& p = act.params();
  if (name == "Relu") return Steps{{A::eltwise_relu, 0, 0}};
  if (name == "LeakyRelu") return Steps{{A::eltwise_relu, p[0], 0}};
  if (name == "Sigmoid") return Steps{{A::eltwise_logistic, 0, 0}};
  if (name == "Tanh") return Steps{{A::eltwise_tanh, 0, 0}};
  if (name == "Elu") return Steps{{A::eltwise_elu, p[0], 0}};
  if (name == "HardSwish") return Steps{{A::eltwise_hardswish, 0, 0}};
  if (name == "Gelu") return Steps{{A::eltwise_gelu_erf, 0, 0}};
  if (name == "Clip" && p[0] <= p[1]) return Steps{{A::eltwise_clip, p[0], p[1]}};
  if (name == "HardSigmoid") return Steps{{A::eltwise_linear, p[0], p[1]}, {A::eltwise_clip, 0.0f, 1.0f}};
  return std::nullopt;
}

Datum ActivationStep::run(const Datum& x) const {
  check_input_types(*def_, *node_, {x.tensor.dtype()});
  KernelContext inner(*node_, act_->since_version, {&x}, 1, nullptr);
  kernel_->run(inner);
  return std::move(inner.outputs()[0]);
}

namespace {

// A fused op that is exactly one standard op at a fixed version.
void add_alias(Registry& r, const char* op_type, const char* standard_op, int version) {
  const OpDef* def = r.find("", standard_op, version);
  if (!def) fail(standard_op, "(", version, ") must be registered before the fused ops");
  r.add(OpDef{kFusedDomain, op_type, 1, def->types,
              [standard_op, version](InferContext& ctx) { infer_as(ctx, standard(standard_op, version)); },
              [standard_op, version](const KernelInit& init) -> std::unique_ptr<Kernel> {
                std::shared_ptr<Kernel> k = kernel_as(init, standard(standard_op, version));
                return make_kernel([k, version](KernelContext& ctx) {
                  std::vector<Datum> outs = run_as(*k, ctx, version, ctx.num_outputs());
                  for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(i, std::move(outs[i]));
                });
              }});
}

constexpr int kFusedConvVersion = 22;

// FusedConv's kernel: the Conv kernel, then the activation's kernel on its result.
// The activation inside oneDNN's convolution where it has it (its post-ops); otherwise Conv's kernel, then the
// activation's.
class FusedConvKernel : public Kernel {
 public:
  explicit FusedConvKernel(const KernelInit& init) : act_(init) {
    if (auto e = init.reference_only ? std::nullopt : eltwise_of(act_)) {
      kernels::Epilogue epilogue;
      epilogue.eltwise = std::move(*e);
      KernelInit inner = init;
      inner.opset = kFusedConvVersion;
      fused_ = make_conv_with_epilogue(inner, std::move(epilogue));
    }
    // With the fused kernel, Conv's own is only the fallback: one that packs no second copy of W.
    conv_ = fused_ ? make_unpacked_conv(init) : kernel_as(init, standard("Conv", kFusedConvVersion));
  }

  bool keeps_copy_of_input(size_t i) const override {
    return fused_ ? fused_->keeps_copy_of_input(i) : conv_->keeps_copy_of_input(i);
  }

  void run(KernelContext& ctx) override {
    if (fused_ && fused_->run(ctx)) return;
    std::vector<Datum> conv_out = run_as(*conv_, ctx, kFusedConvVersion, 1);
    if (conv_out.empty() || !conv_out[0].is_tensor()) ctx.error("the convolution gave no tensor");
    ctx.set_output(0, act_.run(conv_out[0]));
  }

 private:
  ActivationStep act_;
  std::unique_ptr<ConvWithEpilogue> fused_;
  std::unique_ptr<Kernel> conv_;
};

}  // namespace

void register_fused(Registry& r) {
  const OpDef* conv = r.find("", "Conv", kFusedConvVersion);
  if (!conv) fail("Conv(", kFusedConvVersion, ") must be registered before the fused ops");
  r.add(OpDef{kFusedDomain, "FusedConv", 1, conv->types,
              [](InferContext& ctx) { infer_as(ctx, standard("Conv", kFusedConvVersion)); },
              [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<FusedConvKernel>(init); }});
  add_alias(r, "Gelu", "Gelu", 20);
  add_alias(r, "HardSwish", "HardSwish", 22);
  add_alias(r, "LayerNormalization", "LayerNormalization", 17);
  add_alias(r, "Attention", "Attention", 23);
  add_alias(r, "RMSNormalization", "RMSNormalization", 23);
  add_alias(r, "RotaryEmbedding", "RotaryEmbedding", 23);
  add_alias(r, "GridSample", "GridSample", 16);
  r.set_fast_kernels("ai.onyx", "FusedConv", {"oneDNN convolution with the activation as a post-op (float32, constant weights)"});
}

}  // namespace onyx::ops
