// GELU patterns -> Gelu (standard from opset 20, else ai.onyx's), as exporters write them:
//   erf form:  x * 0.5 * (1 + Erf(x / sqrt(2)))           (x / 1.4142... or x * 0.7071...)
//   tanh form: x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (x^3 as Pow(x, 3) or x * x * x)
// The product of x, 0.5 and the (1 + ...) factor is matched in the three orders exporters use:
// (x * f) * 0.5, (x * 0.5) * f and x * (f * 0.5). Every intermediate must have no other reader.
#include <cmath>
#include <numbers>

#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// A Mul of `v` by a constant near `c`, reading `v` only there: the Mul.
Node* mul_by_const(const Analysis& a, const Value* v, double c) {
  Node* m = sole_reader(v);
  if (!is_op(m, "Mul")) return nullptr;
  Value* o = other_input(*m, v);
  return o && o != v && is_const_near(a, o, c, 1e-5) ? m : nullptr;
}

// Given `f` = 1 + inner(x), the node whose output is x * 0.5 * f, with the nodes it took; null if none.
Node* half_x_times(const Analysis& a, Value* f, Value* x, std::vector<Node*>& taken) {
  Node* m1 = sole_reader(f);
  if (!is_op(m1, "Mul")) return nullptr;
  Value* o = other_input(*m1, f);
  if (!o || o == f) return nullptr;
  if (o == x) {  // (x * f) * 0.5
    Node* m2 = mul_by_const(a, m1->outputs[0], 0.5);
    if (!m2) return nullptr;
    taken.insert(taken.end(), {m1, m2});
    return m2;
  }
  if (Node* h = o->producer; is_op(h, "Mul") && sole_reader(o) == m1 && other_input(*h, x) &&
                             is_const_near(a, other_input(*h, x), 0.5, 1e-5)) {  // (x * 0.5) * f
    taken.insert(taken.end(), {h, m1});
    return m1;
  }
  if (is_const_near(a, o, 0.5, 1e-5)) {  // x * (f * 0.5)
    Node* m2 = sole_reader(m1->outputs[0]);
    if (!is_op(m2, "Mul") || other_input(*m2, m1->outputs[0]) != x) return nullptr;
    taken.insert(taken.end(), {m1, m2});
    return m2;
  }
  return nullptr;
}

// The Add of `v` and a constant 1, reading `v` only there.
Node* plus_one(const Analysis& a, const Value* v) {
  Node* add = sole_reader(v);
  if (!is_op(add, "Add")) return nullptr;
  Value* o = other_input(*add, v);
  return o && o != v && is_const_near(a, o, 1.0, 1e-6) ? add : nullptr;
}

// Erf(x / sqrt(2)) or Erf(x * (1 / sqrt(2))): x and the nodes, from the Erf.
Value* erf_argument(const Analysis& a, const Node& erf, std::vector<Node*>& taken) {
  Node* scale = producer_of(erf, 0);
  if (!scale || sole_reader(erf.inputs[0]) != &erf || scale->inputs.size() != 2) return nullptr;
  Value* x = scale->inputs[0];
  if (is_op(scale, "Div") && is_const_near(a, scale->inputs[1], std::numbers::sqrt2, 1e-4)) {
    taken.push_back(scale);
    return x;
  }
  if (is_op(scale, "Mul")) {
    for (size_t i = 0; i < 2; ++i)
      if (is_const_near(a, scale->inputs[1 - i], 1.0 / std::numbers::sqrt2, 1e-4)) {
        taken.push_back(scale);
        return scale->inputs[i];
      }
  }
  return nullptr;
}

// Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)): x and the nodes, from the Tanh.
Value* tanh_argument(const Analysis& a, const Node& tanh, std::vector<Node*>& taken) {
  Node* scale = producer_of(tanh, 0);
  if (!is_op(scale, "Mul") || sole_reader(tanh.inputs[0]) != &tanh) return nullptr;
  const double k = std::sqrt(2.0 / std::numbers::pi);
  Value* sum = nullptr;
  for (size_t i = 0; i < 2 && scale->inputs.size() == 2; ++i)
    if (is_const_near(a, scale->inputs[1 - i], k, 1e-4)) sum = scale->inputs[i];
  Node* add = sum ? sum->producer : nullptr;
  if (!is_op(add, "Add") || sole_reader(sum) != scale || add->inputs.size() != 2) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    Value* x = add->inputs[i];
    Value* cubic_term = add->inputs[1 - i];
    Node* cm = cubic_term->producer;
    if (!is_op(cm, "Mul") || sole_reader(cubic_term) != add || cm->inputs.size() != 2) continue;
    for (size_t j = 0; j < 2; ++j) {
      if (!is_const_near(a, cm->inputs[1 - j], 0.044715, 1e-4)) continue;
      Value* cube = cm->inputs[j];
      Node* p = cube->producer;
      if (!p || sole_reader(cube) != cm) continue;
      std::vector<Node*> cube_nodes;
      if (is_op(p, "Pow") && p->inputs.size() == 2 && p->inputs[0] == x && is_const_near(a, p->inputs[1], 3.0)) {
        cube_nodes = {p};
      } else if (is_op(p, "Mul") && p->inputs.size() == 2) {
        // x * (x * x) or (x * x) * x
        for (size_t s = 0; s < 2 && cube_nodes.empty(); ++s) {
          Value* sq = p->inputs[s];
          Node* q = sq->producer;
          if (p->inputs[1 - s] == x && is_op(q, "Mul") && sole_reader(sq) == p && q->inputs.size() == 2 &&
              q->inputs[0] == x && q->inputs[1] == x)
            cube_nodes = {q, p};
        }
      }
      if (cube_nodes.empty()) continue;
      taken.insert(taken.end(), cube_nodes.begin(), cube_nodes.end());
      taken.insert(taken.end(), {cm, add, scale});
      return x;
    }
  }
  return nullptr;
}

bool fuse_gelu_at(PassContext& ctx, Node& core) {
  const Analysis& a = ctx.analysis();
  if (core.inputs.size() != 1 || !core.inputs[0] || core.outputs.size() != 1 || !core.outputs[0]) return false;
  const bool erf = core.op_type == "Erf";
  std::vector<Node*> taken;
  Value* x = erf ? erf_argument(a, core, taken) : tanh_argument(a, core, taken);
  if (!x) return false;
  taken.push_back(&core);
  Node* add = plus_one(a, core.outputs[0]);
  if (!add) return false;
  taken.push_back(add);
  Node* last = half_x_times(a, add->outputs[0], x, taken);
  if (!last) return false;
  const DataType dt = a.dtype(x);
  if (!is_float_type(dt)) return false;
  for (Node* n : taken)
    if (!a.def(n) || n->outputs.size() != 1 || !n->outputs[0] || a.dtype(n->outputs[0]) != dt) return false;
  const bool standard = ctx.opset("") >= 20;
  Value* y = last->outputs[0];
  const std::string name = last->name;
  for (Node* n : taken)
    if (n != last) ctx.remove_node(*n);
  Node& gelu = ctx.replace_node(*last, "Gelu", standard ? "" : kOnyxDomain, {x}, {y}, name);
  if (!erf) gelu.attributes.push_back(make_attr_string("approximate", "tanh"));
  return true;
}

}  // namespace

bool fuse_gelu(PassContext& ctx) {
  return for_each_op(
      ctx, [](const Node& n) { return is_op(&n, "Erf") || is_op(&n, "Tanh"); }, [&](Node& n) { return fuse_gelu_at(ctx, n); });
}

}  // namespace onyx::opt
