// NhwcConv epilogue fusion: an ai.onyx NhwcConv without residual input or activation whose result only an Add (or
// a two-input Sum) of a same-shaped tensor Z reads, and/or whose (summed) result only an activation reads, becomes
// one NhwcConv with Z as its fourth input and that activation: oneDNN applies both inside the convolution.
#include "ops/fused/fused.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

bool plain_conv(const Node* n) {
  if (!n || n->domain != kOnyxDomain || n->op_type != "NhwcConv" || n->outputs.size() != 1 || !n->outputs[0])
    return false;
  if (n->inputs.size() > 3 || n->attribute("activation")) return false;
  return true;
}

bool fuse_nhwc_at(PassContext& ctx, Node& conv) {
  const Analysis& a = ctx.analysis();
  if (!plain_conv(&conv) || !a.def(&conv)) return false;
  Value* y = conv.outputs[0];
  Node* next = sole_reader(y);
  if (!next) return false;
  Value* z = nullptr;
  Node* last = &conv;
  if ((is_op(next, "Add") || is_op(next, "Sum")) && next->inputs.size() == 2 && a.opset(next) >= 7 &&
      next->outputs.size() == 1 && next->outputs[0]) {
    z = other_input(*next, y);
    auto yd = a.static_dims(y), zd = z ? a.static_dims(z) : std::nullopt;
    if (!z || z == y || !yd || !zd || *yd != *zd || a.dtype(z) != a.dtype(y)) return false;
    last = next;
    next = sole_reader(next->outputs[0]);
  }
  std::optional<std::vector<Attribute>> act;
  if (next && next->inputs[0] == last->outputs[0]) {
    act = fused_activation_attrs(a, *next);
    if (act) last = next;
  }
  if (last == &conv) return false;
  std::vector<Value*> inputs = conv.inputs;
  inputs.resize(3, nullptr);
  if (z) inputs.push_back(z);
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  if (z && inputs.size() < 4) inputs.resize(4, nullptr);
  std::vector<Attribute> attrs;
  for (const Attribute& at : conv.attributes) attrs.push_back(copy_attribute(at));
  if (act)
    for (Attribute& at : *act) attrs.push_back(std::move(at));
  Value* out = last->outputs[0];
  const std::string name = conv.name;
  // The fused node takes the place of the last node it replaces: Z is computed by then.
  std::vector<Node*> gone;
  for (Node* n = &conv; n != last; n = sole_reader(n->outputs[0])) gone.push_back(n);
  for (Node* n : gone) ctx.remove_node(*n);
  Node& fused = ctx.replace_node(*last, "NhwcConv", kOnyxDomain, inputs, {out}, name);
  fused.attributes = std::move(attrs);
  return true;
}

}  // namespace

bool fuse_nhwc_conv_epilogue(PassContext& ctx) {
  return for_each_op(ctx, [](const Node&) { return true; }, [&](Node& n) { return fuse_nhwc_at(ctx, n); });
}

}  // namespace onyx::opt
