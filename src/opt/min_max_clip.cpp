// Max / Min against a constant scalar -> Clip: converters from frameworks whose ReLU is a maximum with zero
// (TFLite's, through tf2onnx) write Max(x, 0) after every convolution. As Clip(x, min = c) (or max = c for Min) it is
// the same function of x, and an activation the convolution fusions apply inside the product. Only for float
// tensors whose other input is a one-element constant that does not widen x's shape.
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

bool rewrite(PassContext& ctx, Node& n) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&n) || n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1] || n.outputs.size() != 1 || !n.outputs[0] ||
      a.opset(&n) < 8)
    return false;
  // The constant may be either operand.
  size_t xi = 0;
  const Tensor* c = a.constant(n.inputs[1]);
  if (!c) {
    c = a.constant(n.inputs[0]);
    xi = 1;
  }
  Value* x = n.inputs[xi];
  const int64_t rank = a.rank(x);
  if (!c || c->element_count() != 1 || x == n.inputs[1 - xi] || rank < 0 || static_cast<int64_t>(c->dims().size()) > rank ||
      c->dtype() != a.dtype(x) || !(a.dtype(x) == DataType::Float || a.dtype(x) == DataType::Double))
    return false;
  const int64_t clip_opset = ctx.opset("");
  const ops::OpDef* clip = standard_def("Clip", clip_opset);
  if (!clip || !allows_type(*clip, a.dtype(x))) return false;
  const bool is_max = n.op_type == "Max";
  const auto value = scalar_value(c);
  if (!value) return false;
  std::vector<Value*> inputs{x};
  std::vector<Attribute> attrs;
  if (clip_opset >= 11) {
    Tensor bound = make_float_tensor(a.dtype(x), {}, {*value});
    Value& b = ctx.add_initializer(n.outputs[0]->name + (is_max ? "_min" : "_max"), std::move(bound));
    if (is_max) inputs.push_back(&b);
    else inputs.insert(inputs.end(), {nullptr, &b});
  } else {
    attrs.push_back(make_attr_float(is_max ? "min" : "max", static_cast<float>(*value)));
  }
  Node& clip_node = ctx.replace_node(n, "Clip", "", inputs, {n.outputs[0]}, n.name);
  clip_node.attributes = std::move(attrs);
  return true;
}

}  // namespace

bool min_max_to_clip(PassContext& ctx) {
  return for_each_op(
      ctx, [](const Node& n) { return is_op(&n, "Max") || is_op(&n, "Min"); }, [&](Node& n) { return rewrite(ctx, n); });
}

}  // namespace onyx::opt
