// MatMul epilogue fusion: a float32 MatMul with a constant 2-D B whose result only an Add of a constant bias [N]
// reads, and/or whose (biased) result only an Add (or two-input Sum) of a tensor Z of the same static shape reads,
// and/or whose result so far only an activation reads, becomes one ai.onyx FusedMatMul(A, B, Bias?, Z?): oneDNN
// applies the bias, the sum and the activation inside the product instead of three more passes over memory.
// Transformer layers are made of these: the projections' bias, the residual sum, the feed-forward's Gelu.
#include "ops/fused/fused.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// A two-input Add, or a Sum of two, whose broadcast Add semantics hold (opset 7 on).
bool is_sum_of_two(const Analysis& a, const Node* n) {
  if (!n || !(is_op(n, "Add") || is_op(n, "Sum")) || n->inputs.size() != 2 || !a.def(n) || a.opset(n) < 7)
    return false;
  return n->outputs.size() == 1 && n->outputs[0];
}

bool fuse_epilogue_at(PassContext& ctx, Node& mm) {
  const Analysis& a = ctx.analysis();
  if (!is_op(&mm, "MatMul") || !a.def(&mm) || mm.inputs.size() != 2 || !mm.inputs[0] || !mm.inputs[1] ||
      mm.outputs.size() != 1 || !mm.outputs[0])
    return false;
  Value* y = mm.outputs[0];
  const Tensor* b = a.constant(mm.inputs[1]);
  if (a.dtype(y) != DataType::Float || !b || b->dtype() != DataType::Float || b->dims().size() != 2 ||
      a.rank(mm.inputs[0]) < 2)
    return false;
  const int64_t N = b->dims()[1];
  Node* last = &mm;
  Node* next = sole_reader(y);
  Value* bias = nullptr;
  Value* z = nullptr;
  if (is_sum_of_two(a, next) && is_op(next, "Add")) {
    Value* c = other_input(*next, y);
    const Tensor* ct = c && c != y ? a.constant(c) : nullptr;
    if (ct && ct->dtype() == DataType::Float && ct->dims() == std::vector<int64_t>{N}) {
      bias = c;
      last = next;
      next = sole_reader(last->outputs[0]);
    }
  }
  if (is_sum_of_two(a, next)) {
    Value* so_far = last->outputs[0];
    Value* other = other_input(*next, so_far);
    auto sd = a.static_dims(so_far), od = other ? a.static_dims(other) : std::nullopt;
    if (other && other != so_far && sd && od && *sd == *od && a.dtype(other) == DataType::Float) {
      z = other;
      last = next;
      next = sole_reader(last->outputs[0]);
    }
  }
  std::optional<std::vector<Attribute>> act;
  if (next && !next->inputs.empty() && next->inputs[0] == last->outputs[0]) {
    act = fused_activation_attrs(a, *next);
    if (act) last = next;
  }
  if (last == &mm) return false;

  std::vector<Value*> inputs{mm.inputs[0], mm.inputs[1]};
  if (bias || z) inputs.push_back(bias);
  if (z) inputs.push_back(z);
  Value* out = last->outputs[0];
  const std::string name = mm.name.empty() ? last->name : mm.name;
  // The fused node takes the place of the last node it replaces: Z is computed by then.
  std::vector<Node*> gone;
  for (Node* n = &mm; n != last; n = sole_reader(n->outputs[0])) gone.push_back(n);
  for (Node* n : gone) ctx.remove_node(*n);
  Node& fused = ctx.replace_node(*last, "FusedMatMul", kOnyxDomain, inputs, {out}, name);
  if (act) fused.attributes = std::move(*act);
  return true;
}

}  // namespace

bool fuse_matmul_epilogue(PassContext& ctx) {
  return for_each_op(ctx, "MatMul", [&](Node& n) { return fuse_epilogue_at(ctx, n); });
}

}  // namespace onyx::opt
