// HardSwish patterns -> HardSwish (standard from opset 14, else ai.onyx's), as exporters without the op write it
// (paddle2onnx, older PyTorch and TensorFlow exports of MobileNetV3-style networks):
//   x * Clip(x + 3, 0, 6) / 6
// with the product and the division by 6 (or product with 1/6) in either order: (x * c) / 6, x * (c / 6), and the
// operands of Add and Mul in either order. Every intermediate must have no other reader. HardSwish computes
// x * clip(x / 6 + 0.5, 0, 1): the same function, rounded differently in the last bits. As one op it fuses into the
// convolution before it.
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// The node dividing `v` by 6 or multiplying it by 1/6 (its sole reader), else null.
Node* divided_by_six(const Analysis& a, const Value* v) {
  Node* n = sole_reader(v);
  if (!n || n->inputs.size() != 2) return nullptr;
  if (is_op(n, "Div")) return n->inputs[0] == v && n->inputs[1] != v && is_const_near(a, n->inputs[1], 6.0) ? n : nullptr;
  if (!is_op(n, "Mul")) return nullptr;
  Value* o = other_input(*n, v);
  return o && o != v && is_const_near(a, o, 1.0 / 6.0, 1e-5) ? n : nullptr;
}

// Whether `clip` bounds its input to [0, 6] with known constants.
bool clips_to_zero_six(const Analysis& a, const Node& clip) {
  if (clip.outputs.size() != 1 || !clip.outputs[0] || clip.inputs.empty() || !clip.inputs[0]) return false;
  if (a.opset(&clip) < 11) {
    auto lo = attr_float(clip, "min"), hi = attr_float(clip, "max");
    return lo && hi && *lo == 0.0f && *hi == 6.0f;
  }
  if (clip.inputs.size() != 3 || !clip.inputs[1] || !clip.inputs[2]) return false;
  auto lo = scalar_value(a.constant(clip.inputs[1])), hi = scalar_value(a.constant(clip.inputs[2]));
  return lo && hi && *lo == 0.0 && *hi == 6.0;
}

bool fuse_hard_swish_at(PassContext& ctx, Node& clip) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&clip) || !clips_to_zero_six(a, clip)) return false;
  Node* add = producer_of(clip, 0);
  if (!is_op(add, "Add") || !a.def(add) || add->inputs.size() != 2 || sole_reader(add->outputs[0]) != &clip)
    return false;
  Value* x = nullptr;
  for (size_t i = 0; i < 2; ++i)
    if (add->inputs[i] && is_const_near(a, add->inputs[1 - i], 3.0)) x = add->inputs[i];
  if (!x || !is_float_type(a.dtype(x))) return false;
  Value* c = clip.outputs[0];
  std::vector<Node*> taken = {add, &clip};
  Node* last = nullptr;
  Node* m = sole_reader(c);
  if (is_op(m, "Mul") && a.def(m) && other_input(*m, c) == x) {  // (x * c) / 6
    Node* d = divided_by_six(a, m->outputs[0]);
    if (!d || !a.def(d)) return false;
    taken.insert(taken.end(), {m, d});
    last = d;
  } else if (Node* d = divided_by_six(a, c); d && a.def(d)) {  // x * (c / 6)
    Node* m2 = sole_reader(d->outputs[0]);
    if (!is_op(m2, "Mul") || !a.def(m2) || other_input(*m2, d->outputs[0]) != x) return false;
    taken.insert(taken.end(), {d, m2});
    last = m2;
  } else {
    return false;
  }
  if (last->outputs.size() != 1 || !last->outputs[0]) return false;
  const int64_t opset = a.opset(last);
  const ops::OpDef* def = opset >= 14 ? standard_def("HardSwish", opset) : nullptr;
  const bool standard = def && allows_type(*def, a.dtype(x));  // bfloat16 only from HardSwish-22
  Value* y = last->outputs[0];
  const std::string name = last->name;
  for (Node* n : taken)
    if (n != last) ctx.remove_node(*n);
  ctx.replace_node(*last, "HardSwish", standard ? "" : kOnyxDomain, {x}, {y}, name);
  return true;
}

}  // namespace

bool fuse_hard_swish(PassContext& ctx) {
  return for_each_op(ctx, "Clip", [&](Node& n) { return fuse_hard_swish_at(ctx, n); });
}

}  // namespace onyx::opt
