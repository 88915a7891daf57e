// Conv + activation -> ai.onyx FusedConv: a Conv whose result only an activation reads (Relu, LeakyRelu,
// Sigmoid, Tanh, HardSigmoid, Elu, HardSwish, Clip with constant bounds) becomes one node carrying Conv's
// attributes plus `activation` and `activation_params`; its kernel runs the same two reference kernels.
#include "ops/fused/fused.hpp"
#include "ops/registry.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {

// The activation's parameters in FusedConv's order, or nullopt when they are not all known.
std::optional<std::vector<float>> fused_activation_params(const Analysis& a, const Node& act, const ops::FusedActivation& f) {
  std::vector<float> params;
  // Gelu's tanh approximation is another function: only the erf form (the default) is fused.
  if (act.op_type == "Gelu") {
    const Attribute* approx = act.attribute("approximate");
    if (approx && (approx->type != AttributeType::String || approx->s != "none")) return std::nullopt;
    return params;
  }
  if (act.op_type == "Clip" && a.opset(&act) >= 11) {
    for (size_t i = 1; i <= 2; ++i) {
      if (i >= act.inputs.size() || !act.inputs[i]) {
        params.push_back(f.params[i - 1].second);
        continue;
      }
      auto v = scalar_value(a.constant(act.inputs[i]));
      if (!v) return std::nullopt;
      params.push_back(static_cast<float>(*v));
    }
    return params;
  }
  if (act.inputs.size() != 1) return std::nullopt;
  for (const auto& [name, dflt] : f.params) {
    if (act.attribute(name) && !attr_float(act, name)) return std::nullopt;
    params.push_back(attr_float(act, name).value_or(dflt));
  }
  return params;
}

std::optional<std::vector<Attribute>> fused_activation_attrs(const Analysis& a, const Node& act) {
  // Standard activations, and the ai.onyx Gelu / HardSwish that gelu-fusion / hard-swish-fusion make below the
  // opsets that have them.
  const bool domain_ok =
      act.domain.empty() || (act.domain == kOnyxDomain && (act.op_type == "Gelu" || act.op_type == "HardSwish"));
  const ops::FusedActivation* f = ops::find_fused_activation(act.op_type);
  if (!f || !domain_ok || !a.def(&act) || act.outputs.size() != 1 || !act.outputs[0]) return std::nullopt;
  auto params = fused_activation_params(a, act, *f);
  if (!params) return std::nullopt;
  std::vector<Attribute> attrs;
  attrs.push_back(make_attr_string("activation", f->op_type));
  if (!params->empty()) attrs.push_back(make_attr_floats("activation_params", *params));
  return attrs;
}

namespace {

bool fuse_conv_activation_at(PassContext& ctx, Node& act) {
  const Analysis& a = ctx.analysis();
  const ops::FusedActivation* f = ops::find_fused_activation(act.op_type);
  if (!f || !a.def(&act) || act.outputs.size() != 1 || !act.outputs[0] || act.inputs.empty() || !act.inputs[0])
    return false;
  Node* conv = act.inputs[0]->producer;
  if (!is_op(conv, "Conv") || !a.def(conv) || conv->outputs.size() != 1 || sole_reader(act.inputs[0]) != &act)
    return false;
  const DataType dt = a.dtype(act.inputs[0]);
  const ops::OpDef* act_def = ops::builtin_registry().find("", f->op_type, f->since_version);
  const ops::OpDef* conv_def = ops::builtin_registry().find("", "Conv", 22);
  if (!act_def || !conv_def || !allows_type(*act_def, dt) || !allows_type(*conv_def, dt)) return false;
  auto act_attrs = fused_activation_attrs(a, act);
  if (!act_attrs) return false;
  for (const Attribute& at : conv->attributes)
    if (at.name == "activation" || at.name == "activation_params") return false;

  Value* y = act.outputs[0];
  std::vector<Value*> inputs = conv->inputs;
  std::vector<Attribute> attrs;
  for (const Attribute& at : conv->attributes) attrs.push_back(copy_attribute(at));
  for (Attribute& at : *act_attrs) attrs.push_back(std::move(at));
  std::string name = conv->name.empty() ? act.name : conv->name;
  ctx.remove_node(act);
  Node& fused = ctx.insert_node(*conv, "FusedConv", kOnyxDomain, inputs, {y}, name);
  fused.attributes = std::move(attrs);
  ctx.remove_node(*conv);
  return true;
}

}  // namespace

bool fuse_conv_activation(PassContext& ctx) {
  return for_each_op(
      ctx,
      [](const Node& n) {
        return (n.domain.empty() || n.domain == kOnyxDomain) && ops::find_fused_activation(n.op_type);
      },
      [&](Node& n) { return fuse_conv_activation_at(ctx, n); });
}

}  // namespace onyx::opt
