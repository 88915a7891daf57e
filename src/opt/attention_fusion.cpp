// Scaled dot-product attention -> Attention (standard from opset 23, else ai.onyx's), on 4-D tensors
// [batch, heads, seq, head_size] as exporters write it:
//   scores = MatMul(Q, Transpose(K, perm = [0, 1, 3, 2]))   [Mul(scores, c) | Div(scores, c)]   [Add(., mask)]
//   Y = MatMul(Softmax(., axis = -1), V)
// The mask may also be a Where(constant bool mask, scores, fill <= -1e4) (see fuse_attention_at).
// K's transpose may also come straight from the heads' split, Transpose(K', perm = [0, 2, 3, 1]) of K' [batch, seq,
// heads, head_size] (BERT exports fold the two transposes into one); then K is a new Transpose(K', [0, 2, 1, 3]).
// Matched only where it is unambiguous: Q, K and V of one float type with equal batch and head dims (no
// broadcasting between them), a scalar constant scale, a mask of Q's type whose last dim is K's sequence length
// and whose other dims are 1 or equal to the scores' (Attention pads a shorter mask; a broadcast one differs),
// and every intermediate read only by the next step.
#include <cmath>

#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

bool same_dim(const Dim& a, const Dim& b) {
  if (a.value || b.value) return a.value == b.value;
  return !a.param.empty() && a.param == b.param;
}

// The node producing `v` when `v` has no other reader.
Node* step_back(const Value* v) {
  Node* p = v ? v->producer : nullptr;
  return p && sole_reader(v) && p->outputs.size() == 1 ? p : nullptr;
}

// From the (masked) softmax input back: [Mul | Div by a scalar constant] <- MatMul(Q, Transpose(K, [0,1,3,2])).
// `k_split`: set when k is K' [batch, seq, heads, head_size] (the perm [0, 2, 3, 1] form) rather than K.
bool match_scores(const Analysis& a, Value* cur, std::vector<Node*>& taken, double& scale, Value*& q, Value*& k,
                  bool& k_split) {
  std::vector<Node*> path;
  double s = 1.0;
  Node* p = step_back(cur);
  if (is_op(p, "Mul") || is_op(p, "Div")) {
    if (p->inputs.size() != 2 || !p->inputs[0] || !p->inputs[1]) return false;
    size_t scores_at = 0;
    if (is_op(p, "Mul") && !scalar_value(a.constant(p->inputs[1]))) scores_at = 1;
    auto c = scalar_value(a.constant(p->inputs[1 - scores_at]));
    if (!c || *c == 0 || !std::isfinite(*c)) return false;
    s = is_op(p, "Div") ? 1.0 / *c : *c;
    path.push_back(p);
    p = step_back(p->inputs[scores_at]);
  }
  if (!is_op(p, "MatMul") || p->inputs.size() != 2 || !p->inputs[0]) return false;
  Node* tr = producer_of(*p, 1);
  if (!is_op(tr, "Transpose") || sole_reader(p->inputs[1]) != p || !tr->inputs[0]) return false;
  const auto perm = attr_ints(*tr, "perm");
  if (perm != std::vector<int64_t>{0, 1, 3, 2} && perm != std::vector<int64_t>{0, 2, 3, 1}) return false;
  k_split = perm == std::vector<int64_t>{0, 2, 3, 1};
  path.insert(path.end(), {p, tr});
  taken.insert(taken.end(), path.begin(), path.end());
  scale = s;
  q = p->inputs[0];
  k = tr->inputs[0];
  return true;
}

bool fuse_attention_at(PassContext& ctx, Node& sm) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&sm) || sm.inputs.size() != 1 || !sm.inputs[0] || sm.outputs.size() != 1 || !sm.outputs[0]) return false;
  if (a.rank(sm.inputs[0]) != 4) return false;
  const auto axis = attr_int(sm, "axis");
  if (a.opset(&sm) >= 13 ? (axis && *axis != -1 && *axis != 3) : (!axis || (*axis != -1 && *axis != 3))) return false;

  std::vector<Node*> taken = {&sm};
  Node* mm2 = sole_reader(sm.outputs[0]);
  if (!is_op(mm2, "MatMul") || mm2->inputs.size() != 2 || mm2->inputs[0] != sm.outputs[0] || !mm2->outputs[0])
    return false;
  Value* v = mm2->inputs[1];
  taken.push_back(mm2);

  // Walk back from the softmax input: optional mask Add, optional scale, then the QK^T MatMul.
  Value* mask = nullptr;
  std::optional<std::pair<Tensor, Value*>> where_mask;  // an additive mask made from a Where, and the scores
  double scale = 1.0;
  Value* q = nullptr;
  Value* k = nullptr;
  bool k_split = false;
  Node* in = step_back(sm.inputs[0]);
  if (is_op(in, "Add") && in->inputs.size() == 2 && in->inputs[0] && in->inputs[1] && in->inputs[0] != in->inputs[1]) {
    // Either operand may be the scores; the other is then the mask.
    for (size_t i = 0; i < 2 && !q; ++i) {
      std::vector<Node*> path = {in};
      if (match_scores(a, in->inputs[i], path, scale, q, k, k_split)) {
        mask = in->inputs[1 - i];
        taken.insert(taken.end(), path.begin(), path.end());
      }
    }
  } else if (is_op(in, "Where") && in->inputs.size() == 3 && in->inputs[1] && in->inputs[2]) {
    // A constant boolean mask selecting the scores or a constant far below them (GPT-2's causal mask):
    // it becomes the additive mask 0 / fill. A masked score is then score + fill instead of fill; either way its
    // exponent, at least 1e4 below the row's maximum, gives exactly 0.
    const Tensor* cond = in->inputs[0] ? a.constant(in->inputs[0]) : nullptr;
    auto fill = scalar_value(a.constant(in->inputs[2]));
    std::vector<Node*> path = {in};
    if (cond && cond->dtype() == DataType::Bool && cond->dims().size() >= 2 && cond->dims().size() <= 4 && fill &&
        *fill <= -1e4 && match_scores(a, in->inputs[1], path, scale, q, k, k_split)) {
      const DataType mt = a.dtype(in->inputs[1]);
      std::vector<double> m(static_cast<size_t>(cond->element_count()));
      for (size_t i = 0; i < m.size(); ++i) m[i] = cond->data<bool>()[i] ? 0.0 : std::max(*fill, -3.0e38);
      where_mask = std::make_pair(make_float_tensor(mt, cond->dims(), m), in->inputs[1]);
      taken.insert(taken.end(), path.begin(), path.end());
    }
  } else {
    match_scores(a, sm.inputs[0], taken, scale, q, k, k_split);
  }
  if (!q) return false;

  // Types and shapes.
  const DataType dt = a.dtype(q);
  if (!is_float_type(dt) || a.dtype(k) != dt || a.dtype(v) != dt || a.rank(q) != 4 || a.rank(k) != 4 || a.rank(v) != 4)
    return false;
  const auto& qd = a.type(q).shape.dims;
  std::vector<Dim> kd = a.type(k).shape.dims;
  if (k_split) std::swap(kd[1], kd[2]);  // K' [batch, seq, heads, size] as K [batch, heads, seq, size]
  const auto& vd = a.type(v).shape.dims;
  for (size_t i = 0; i < 2; ++i)
    if (!same_dim(qd[i], kd[i]) || !same_dim(qd[i], vd[i])) return false;
  if (!same_dim(kd[2], vd[2]) || !same_dim(qd[3], kd[3])) return false;
  if (where_mask) {
    const auto& md = where_mask->first.dims();
    if (md.back() != (kd[2].value ? *kd[2].value : -1)) return false;
    const std::vector<Dim> full = {qd[0], qd[1], qd[2]};
    for (size_t i = 0; i + 1 < md.size(); ++i) {
      const Dim& want = full[full.size() - (md.size() - 1) + i];
      if (md[i] != 1 && !(want.value && *want.value == md[i])) return false;
    }
  }
  if (mask) {
    const Type& mt = a.type(mask);
    if (a.dtype(mask) != dt || !mt.shape.rank_known || mt.shape.dims.size() < 2 || mt.shape.dims.size() > 4) return false;
    const auto& md = mt.shape.dims;
    if (!same_dim(md.back(), kd[2])) return false;
    const std::vector<Dim> full = {qd[0], qd[1], qd[2]};
    for (size_t i = 0; i + 1 < md.size(); ++i) {
      const Dim& want = full[full.size() - (md.size() - 1) + i];
      if (!(md[i].value && *md[i].value == 1) && !same_dim(md[i], want)) return false;
    }
  }
  for (Node* n : taken)
    if (!a.def(n) || !n->outputs[0] || a.dtype(n->outputs[0]) != dt) return false;

  const bool standard = ctx.opset("") >= 23;
  Value* y = mm2->outputs[0];
  const std::string name = mm2->name;
  for (Node* n : taken)
    if (n != mm2) ctx.remove_node(*n);
  if (k_split) {
    Value& kt = ctx.graph.add_value(ctx.fresh_name(k->name + "_heads"));
    Node& t = ctx.insert_node(*mm2, "Transpose", "", {k}, {&kt}, name.empty() ? kt.name : name + "_k_heads");
    t.attributes.push_back(make_attr_ints("perm", {0, 2, 1, 3}));
    k = &kt;
  }
  if (where_mask) mask = &ctx.add_initializer(name.empty() ? "attention_mask" : name + "_mask", std::move(where_mask->first));
  std::vector<Value*> inputs = {q, k, v};
  if (mask) inputs.push_back(mask);
  Node& att = ctx.replace_node(*mm2, "Attention", standard ? "" : kOnyxDomain, inputs, {y}, name);
  att.attributes.push_back(make_attr_float("scale", static_cast<float>(scale)));
  return true;
}

}  // namespace

bool fuse_attention(PassContext& ctx) {
  return for_each_op(ctx, "Softmax", [&](Node& n) { return fuse_attention_at(ctx, n); });
}

}  // namespace onyx::opt
