// LayerNorm pattern -> LayerNormalization, as PyTorch exports layer_norm below opset 17:
//   mean = ReduceMean(x, axes)   d = Sub(x, mean)   v = ReduceMean(Pow(d, 2) | Mul(d, d), axes)
//   y = Div(d, Sqrt(Add(v, eps)))   [Mul(y, scale)]   [Add(., bias)]
// with axes the last k dims of x (keepdims), and scale/bias constants that only vary along those dims. The
// result is LayerNormalization(x, scale, bias, axis = rank - k, epsilon), standard from opset 17, else ai.onyx's.
// Each intermediate must have no reader outside the pattern (d has exactly the two).
#include <algorithm>

#include "ops/op_kit.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// Sorted normalized axes of a ReduceMean with keepdims (axes an int64 input from opset 18), or nullopt.
std::optional<std::vector<int64_t>> reduce_axes(const Analysis& a, const Node& n, int64_t rank) {
  if (!is_op(&n, "ReduceMean") || !a.def(&n) || attr_int(n, "keepdims").value_or(1) != 1) return std::nullopt;
  if (a.opset(&n) >= 18 && n.inputs.size() >= 2 && n.inputs[1] && a.dtype(n.inputs[1]) != DataType::Int64)
    return std::nullopt;
  return node_axes(a, n, 18, rank);
}

// A per-feature constant (scale or bias) as a tensor LayerNormalization accepts: its dims, with leading 1s
// dropped, must match the trailing dims of x (or be 1). nullopt when it would broadcast differently.
std::optional<Tensor> feature_param(const Tensor* t, const std::vector<int64_t>& x_dims, size_t k, DataType dt) {
  if (!t || t->dtype() != dt) return std::nullopt;
  std::vector<int64_t> d = t->dims();
  while (d.size() > k && d.front() == 1) d.erase(d.begin());
  if (d.size() > k || d.size() > x_dims.size()) return std::nullopt;
  for (size_t i = 0; i < d.size(); ++i) {
    int64_t want = x_dims[x_dims.size() - d.size() + i];
    if (d[i] != 1 && d[i] != want) return std::nullopt;
  }
  return t->reshaped(d);
}

bool fuse_layer_norm_at(PassContext& ctx, Node& mean_node) {
  const Analysis& a = ctx.analysis();
  if (mean_node.inputs.empty() || !mean_node.inputs[0] || !mean_node.outputs[0]) return false;
  Value* x = mean_node.inputs[0];
  const DataType dt = a.dtype(x);
  // Leading dims may be symbolic (batch, sequence); the normalized trailing ones must be known.
  const Type& xt = a.type(x);
  if (!is_float_type(dt) || !xt.shape.rank_known) return false;
  std::optional<std::vector<int64_t>> x_dims(std::in_place);
  for (const Dim& dim : xt.shape.dims) x_dims->push_back(dim.value ? *dim.value : -1);
  const int64_t rank = static_cast<int64_t>(x_dims->size());
  auto axes = reduce_axes(a, mean_node, rank);
  if (!axes) return false;
  const size_t k = axes->size();
  for (size_t i = 0; i < k; ++i)
    if ((*axes)[i] != rank - static_cast<int64_t>(k) + static_cast<int64_t>(i) || (*x_dims)[static_cast<size_t>((*axes)[i])] < 0)
      return false;

  Node* sub = sole_reader(mean_node.outputs[0]);
  if (!is_op(sub, "Sub") || sub->inputs.size() != 2 || sub->inputs[0] != x || sub->inputs[1] != mean_node.outputs[0])
    return false;
  Value* d = sub->outputs[0];
  if (!d || d->is_graph_output || d->consumers.size() < 2) return false;
  Node* square = nullptr;
  Node* div = nullptr;
  for (Node* c : d->consumers) {
    if (c->graph != d->graph) return false;
    if (is_op(c, "Div") && c->inputs.size() == 2 && c->inputs[0] == d && c->inputs[1] != d) {
      if (div && div != c) return false;
      div = c;
    } else if ((is_op(c, "Pow") && c->inputs.size() == 2 && c->inputs[0] == d && is_const_near(a, c->inputs[1], 2.0)) ||
               (is_op(c, "Mul") && c->inputs.size() == 2 && c->inputs[0] == d && c->inputs[1] == d)) {
      if (square && square != c) return false;
      square = c;
    } else {
      return false;
    }
  }
  if (!square || !div) return false;
  Node* var_node = sole_reader(square->outputs[0]);
  if (!var_node || var_node->inputs.empty() || var_node->inputs[0] != square->outputs[0]) return false;
  auto var_axes = reduce_axes(a, *var_node, rank);
  if (!var_axes || *var_axes != *axes) return false;
  Node* add_eps = sole_reader(var_node->outputs[0]);
  if (!is_op(add_eps, "Add")) return false;
  Value* eps_v = other_input(*add_eps, var_node->outputs[0]);
  auto eps = scalar_value(a.constant(eps_v));
  if (!eps || !(*eps >= 0)) return false;
  Node* sqrt = sole_reader(add_eps->outputs[0]);
  if (!is_op(sqrt, "Sqrt") || sole_reader(sqrt->outputs[0]) != div || div->inputs[1] != sqrt->outputs[0]) return false;

  // Optional scale and bias.
  Node* last = div;
  Node* mul = nullptr;
  std::optional<Tensor> scale, bias;
  if (Node* m = sole_reader(div->outputs[0]); is_op(m, "Mul")) {
    Value* s = other_input(*m, div->outputs[0]);
    if (s && s != div->outputs[0] && (scale = feature_param(a.constant(s), *x_dims, k, dt))) last = mul = m;
  }
  if (scale) {
    if (Node* add = sole_reader(last->outputs[0]); is_op(add, "Add")) {
      Value* b = other_input(*add, last->outputs[0]);
      if (b && b != last->outputs[0] && (bias = feature_param(a.constant(b), *x_dims, k, dt))) last = add;
    }
  }
  std::vector<Node*> pattern = {&mean_node, sub, square, var_node, add_eps, sqrt, div};
  if (mul) pattern.push_back(mul);
  if (last != pattern.back()) pattern.push_back(last);
  for (Node* n : pattern)
    if (!a.def(n) || n->outputs.size() != 1 || !n->outputs[0] || a.dtype(n->outputs[0]) != dt) return false;
  if (!scale) scale = make_float_tensor(dt, {1}, {1.0});

  Value* y = last->outputs[0];
  const std::string name = last->name.empty() ? mean_node.name : last->name;
  Value& sv = ctx.add_initializer(y->name + "_scale", std::move(*scale));
  Value* bv = bias ? &ctx.add_initializer(y->name + "_bias", std::move(*bias)) : nullptr;
  const bool standard = ctx.opset("") >= 17;
  for (auto it = pattern.rbegin(); it != pattern.rend(); ++it)
    if (*it != last) ctx.remove_node(**it);
  std::vector<Value*> inputs = {x, &sv};
  if (bv) inputs.push_back(bv);
  Node& ln = ctx.replace_node(*last, "LayerNormalization", standard ? "" : kOnyxDomain, inputs, {y}, name);
  ln.attributes.push_back(make_attr_int("axis", rank - static_cast<int64_t>(k)));
  ln.attributes.push_back(make_attr_float("epsilon", static_cast<float>(*eps)));
  return true;
}

}  // namespace

bool fuse_layer_norm(PassContext& ctx) {
  return for_each_op(ctx, "ReduceMean", [&](Node& n) { return fuse_layer_norm_at(ctx, n); });
}

}  // namespace onyx::opt
