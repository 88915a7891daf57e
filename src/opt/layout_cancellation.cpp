// Cancellation of layout pairs that undo or repeat each other:
//   Transpose(Transpose(x, p1), p2) -> x when the composed permutation is the identity, else one Transpose;
//   a Transpose with the identity permutation -> x;
//   Reshape(Reshape(x, s1), s2) -> Reshape(x, s2) when s2 is constant and has no 0 that copies a dim from the
//   inner result (allowzero=0); a Reshape to the input's own static shape -> x;
//   Squeeze(Unsqueeze(x, axes), axes) -> x, and Unsqueeze(Squeeze(x, axes), axes) -> x when those dims of x
//   are statically 1.
// The inner node's result must have no other reader.
#include <algorithm>

#include "ops/op_kit.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// The perm of a Transpose over rank `rank` (the reversal when absent); nullopt if invalid or unknown.
std::optional<std::vector<int64_t>> perm_of(const Node& t, int64_t rank) {
  std::vector<int64_t> p;
  if (auto given = attr_ints(t, "perm")) {
    p = *given;
  } else if (t.attribute("perm")) {
    return std::nullopt;
  } else {
    if (rank < 0) return std::nullopt;
    for (int64_t i = rank - 1; i >= 0; --i) p.push_back(i);
  }
  if (rank >= 0 && static_cast<int64_t>(p.size()) != rank) return std::nullopt;
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i)) return std::nullopt;
  return p;
}

bool is_identity_perm(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}


// `out` equals `x`: readers of `out` read `x`, and `nodes` (which computed out from x) go.
bool bypass(PassContext& ctx, Value* out, Value* x, const std::vector<Node*>& nodes) {
  if (!ctx.can_substitute(out, x)) return false;
  for (Node* n : nodes) ctx.remove_node(*n);
  ctx.substitute(out, x);
  return true;
}

bool transpose_pair(PassContext& ctx, Node& t2) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&t2) || t2.inputs.empty() || !t2.inputs[0] || t2.outputs.empty() || !t2.outputs[0]) return false;
  Node* t1 = producer_of(t2, 0);
  if (is_op(t1, "Transpose") && a.def(t1) && t1->inputs[0] && sole_reader(t1->outputs[0]) == &t2) {
    Value* x = t1->inputs[0];
    const int64_t rank = a.rank(x);
    auto p1 = perm_of(*t1, rank);
    auto p2 = p1 ? perm_of(t2, static_cast<int64_t>(p1->size())) : std::nullopt;
    if (!p1 || !p2) return false;
    std::vector<int64_t> q(p2->size());
    for (size_t i = 0; i < q.size(); ++i) q[i] = (*p1)[static_cast<size_t>((*p2)[i])];
    if (is_identity_perm(q)) return bypass(ctx, t2.outputs[0], x, {t1, &t2});
    ctx.set_input(t2, 0, x);
    t2.attributes.erase(std::remove_if(t2.attributes.begin(), t2.attributes.end(),
                                       [](const Attribute& at) { return at.name == "perm"; }),
                        t2.attributes.end());
    t2.attributes.push_back(make_attr_ints("perm", q));
    ctx.remove_node(*t1);
    return true;
  }
  auto p = perm_of(t2, a.rank(t2.inputs[0]));
  if (p && is_identity_perm(*p)) return bypass(ctx, t2.outputs[0], t2.inputs[0], {&t2});
  return false;
}

bool reshape_pair(PassContext& ctx, Node& r2) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&r2) || r2.inputs.size() != 2 || !r2.inputs[0] || !r2.inputs[1] || !r2.outputs[0]) return false;
  Value* in = r2.inputs[0];
  auto in_dims = a.static_dims(in);
  auto out_dims = a.static_dims(r2.outputs[0]);
  if (in_dims && out_dims && *in_dims == *out_dims) return bypass(ctx, r2.outputs[0], in, {&r2});
  Node* r1 = producer_of(r2, 0);
  if (!is_op(r1, "Reshape") || !a.def(r1) || r1->inputs.size() != 2 || !r1->inputs[0] || sole_reader(in) != &r2)
    return false;
  const Tensor* shape = a.constant(r2.inputs[1]);
  if (!shape || shape->dtype() != DataType::Int64) return false;
  if (attr_int(r2, "allowzero").value_or(0) == 0)
    for (int64_t d : ops::read_ints(*shape))
      if (d == 0) return false;
  ctx.set_input(r2, 0, r1->inputs[0]);
  ctx.remove_node(*r1);
  return true;
}

bool squeeze_pair(PassContext& ctx, Node& outer) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&outer) || outer.inputs.empty() || !outer.inputs[0] || !outer.outputs[0]) return false;
  const bool outer_squeezes = outer.op_type == "Squeeze";
  Node* inner = producer_of(outer, 0);
  if (!is_op(inner, outer_squeezes ? "Unsqueeze" : "Squeeze") || !a.def(inner) || !inner->inputs[0] ||
      sole_reader(outer.inputs[0]) != &outer)
    return false;
  Value* x = inner->inputs[0];
  const int64_t rank = a.rank(x);
  if (rank < 0) return false;
  if (outer_squeezes) {
    // Unsqueeze's axes count in its output's rank, which is the rank Squeeze reads.
    const int64_t mid = a.rank(inner->outputs[0]);
    auto added = node_axes(a, *inner, 13, mid);
    auto removed = node_axes(a, outer, 13, mid);
    if (!added || !removed || *added != *removed || mid != rank + static_cast<int64_t>(added->size())) return false;
  } else {
    auto removed = node_axes(a, *inner, 13, rank);
    auto added = node_axes(a, outer, 13, rank);
    auto dims = a.static_dims(x);
    if (!removed || !added || *added != *removed || !dims) return false;
    for (int64_t ax : *removed)
      if ((*dims)[static_cast<size_t>(ax)] != 1) return false;
  }
  return bypass(ctx, outer.outputs[0], x, {inner, &outer});
}

}  // namespace

bool cancel_layout_pairs(PassContext& ctx) {
  bool changed = false;
  const std::vector<Node*> order = ctx.node_order();
  for (Node* n : order) {
    if (!ctx.alive(n) || !n->domain.empty()) continue;
    if (n->op_type == "Transpose") changed |= transpose_pair(ctx, *n);
    else if (n->op_type == "Reshape") changed |= reshape_pair(ctx, *n);
    else if (n->op_type == "Squeeze" || n->op_type == "Unsqueeze") changed |= squeeze_pair(ctx, *n);
  }
  return changed;
}

}  // namespace onyx::opt
