// ai.onyx (version 1) fused ops, made by the optimizer (src/opt/). Each runs the reference kernels of the
// standard ops it stands for, so its results are theirs:
//   FusedConv(X, W, B?) — Conv (attributes as Conv's) followed by an activation: attribute `activation` names
//     Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Elu, HardSwish or Clip, and `activation_params` lists its
//     float attributes (LeakyRelu/Elu: alpha; HardSigmoid: alpha, beta; Clip: min, max).
//   Gelu(X) — Gelu-20 (attribute approximate = "none" | "tanh"), for models below opset 20.
//   LayerNormalization(X, Scale, B?) — LayerNormalization-17, for models below opset 17.
//   Attention(Q, K, V, attn_mask?) — Attention-23 on 4-D inputs [batch, heads, seq, head_size] (attribute
//     scale), for models below opset 23.
#include <limits>

#include "ops/fused/fused.hpp"
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
  };
  for (const auto& a : list)
    if (op_type == a.op_type) return &a;
  return nullptr;
}

namespace {

// The standard op a fused op runs, looked up when used (the registry is complete by then).
const OpDef& standard(const char* op_type, int version) {
  const OpDef* d = builtin_registry().find("", op_type, version);
  if (!d) fail(op_type, "(", version, ") is not registered");
  return *d;
}

// Inference of the standard op at its version, on this node.
void infer_as(InferContext& ctx, const OpDef& def) {
  InferContext inner = ctx;
  inner.opset = def.since_version;
  def.infer(inner);
  ctx.output_types = std::move(inner.output_types);
  ctx.output_values = std::move(inner.output_values);
  ctx.output_dim_values = std::move(inner.output_dim_values);
}

// Runs `kernel` (made for the standard op at `opset`) on the inputs of ctx; returns its outputs.
std::vector<Datum> run_as(Kernel& kernel, const KernelContext& ctx, int64_t opset, size_t num_outputs) {
  std::vector<const Datum*> in;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) in.push_back(ctx.has_input(i) ? &ctx.input_datum(i) : nullptr);
  KernelContext inner(ctx.node(), opset, std::move(in), num_outputs, nullptr);
  kernel.run(inner);
  return std::move(inner.outputs());
}

std::unique_ptr<Kernel> kernel_as(const KernelInit& init, const OpDef& def) {
  KernelInit inner = init;
  inner.opset = def.since_version;
  return def.kernel(inner);
}

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

constexpr int kConvVersion = 22;

// FusedConv's kernel: the Conv kernel, then the activation's kernel on its result. The activation runs as a
// node of its own (kept here) carrying the activation's attributes.
class FusedConvKernel : public Kernel {
 public:
  explicit FusedConvKernel(const KernelInit& init) {
    conv_ = kernel_as(init, standard("Conv", kConvVersion));
    const std::string name = init.attrs.get_string("activation");
    const FusedActivation* act = find_fused_activation(name);
    if (!act) fail("activation '", name, "' is not one FusedConv applies");
    std::vector<float> params = init.attrs.get_floats("activation_params", std::vector<float>{});
    if (params.size() > act->params.size())
      fail("activation_params has ", params.size(), " values; ", name, " takes ", act->params.size());
    act_node_.op_type = act->op_type;
    act_node_.name = init.node.name;
    act_node_.graph = init.node.graph;
    act_node_.inputs = {nullptr};
    act_node_.outputs = init.node.outputs;
    for (size_t i = 0; i < act->params.size(); ++i) {
      Attribute a;
      a.name = act->params[i].first;
      a.type = AttributeType::Float;
      a.f = i < params.size() ? params[i] : act->params[i].second;
      act_node_.attributes.push_back(std::move(a));
    }
    act_version_ = act->since_version;
    act_def_ = &standard(act->op_type, act->since_version);
    KernelInit ai{act_node_, act_version_, AttributeView(act_node_), {}, init.output_types};
    ai.input_types = {init.output_types.empty() ? nullptr : init.output_types[0]};
    act_ = act_def_->kernel(ai);
  }

  void run(KernelContext& ctx) override {
    std::vector<Datum> conv_out = run_as(*conv_, ctx, kConvVersion, 1);
    if (conv_out.empty() || !conv_out[0].is_tensor()) ctx.error("the convolution gave no tensor");
    check_input_types(*act_def_, act_node_, {conv_out[0].tensor.dtype()});
    KernelContext inner(act_node_, act_version_, {&conv_out[0]}, 1, nullptr);
    act_->run(inner);
    ctx.set_output(0, std::move(inner.outputs()[0]));
  }

 private:
  Node act_node_;
  int act_version_ = 0;
  const OpDef* act_def_ = nullptr;
  std::unique_ptr<Kernel> conv_, act_;
};

}  // namespace

void register_fused(Registry& r) {
  const OpDef* conv = r.find("", "Conv", kConvVersion);
  if (!conv) fail("Conv(", kConvVersion, ") must be registered before the fused ops");
  r.add(OpDef{kFusedDomain, "FusedConv", 1, conv->types,
              [](InferContext& ctx) { infer_as(ctx, standard("Conv", kConvVersion)); },
              [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<FusedConvKernel>(init); }});
  add_alias(r, "Gelu", "Gelu", 20);
  add_alias(r, "LayerNormalization", "LayerNormalization", 17);
  add_alias(r, "Attention", "Attention", 23);
}

}  // namespace onyx::ops
