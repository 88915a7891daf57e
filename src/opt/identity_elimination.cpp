// Identity elimination: readers of an Identity's output read its input instead. An Identity whose output is a
// graph output goes only when its input is another node's output used nowhere else as an output: that node then
// produces the graph output under its name. Graph input -> Identity -> graph output stays (both names are the
// model's interface). An inference Dropout (no mask read; test mode before opset 7, training_mode absent or a
// constant false from opset 12) is an Identity too.
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

bool is_inference_dropout(const Analysis& a, const Node& n) {
  if (n.op_type != "Dropout" || !n.domain.empty() || n.outputs.empty() || !n.outputs[0]) return false;
  if (n.outputs.size() > 1 && n.outputs[1] && (n.outputs[1]->is_graph_output || !n.outputs[1]->consumers.empty()))
    return false;
  const int64_t opset = a.opset(&n);
  if (opset < 7) return attr_int(n, "is_test").value_or(0) != 0;
  if (opset >= 12 && n.inputs.size() > 2 && n.inputs[2]) {
    const Tensor* t = a.constant(n.inputs[2]);
    return t && t->dtype() == DataType::Bool && t->element_count() == 1 && t->data<uint8_t>()[0] == 0;
  }
  return true;
}

}  // namespace

bool eliminate_identities(PassContext& ctx) {
  bool changed = false;
  const std::vector<Node*> order = ctx.node_order();
  for (Node* n : order) {
    if (!ctx.alive(n) || !n->domain.empty()) continue;
    if (n->op_type == "Identity") {
      if (n->inputs.size() != 1 || n->outputs.size() != 1 || !n->inputs[0] || !n->outputs[0]) continue;
    } else if (!is_inference_dropout(ctx.analysis(), *n) || n->inputs.empty() || !n->inputs[0]) {
      continue;
    }
    if (!ctx.analysis().def(n)) continue;
    Value* x = n->inputs[0];
    Value* y = n->outputs[0];
    if (!ctx.can_substitute(y, x) || ctx.analysis().dtype(x) != ctx.analysis().dtype(y)) continue;
    ctx.remove_node(*n);
    ctx.substitute(y, x);
    changed = true;
  }
  return changed;
}

}  // namespace onyx::opt
