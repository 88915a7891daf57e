// Identity elimination: readers of an Identity's output read its input instead. An Identity whose output is a
// graph output goes only when its input is another node's output used nowhere else as an output: that node then
// produces the graph output under its name. Graph input -> Identity -> graph output stays (both names are the
// model's interface).
#include "opt/passes.hpp"

namespace onyx::opt {

bool eliminate_identities(PassContext& ctx) {
  bool changed = false;
  std::vector<Node*> order;
  for (const auto& n : ctx.graph.nodes) order.push_back(n.get());
  for (Node* n : order) {
    if (!ctx.alive(n) || n->op_type != "Identity" || !n->domain.empty()) continue;
    if (n->inputs.size() != 1 || n->outputs.size() != 1 || !n->inputs[0] || !n->outputs[0]) continue;
    if (!ctx.analysis().def(n)) continue;
    Value* x = n->inputs[0];
    Value* y = n->outputs[0];
    if (!ctx.can_substitute(y, x)) continue;
    ctx.remove_node(*n);
    ctx.substitute(y, x);
    changed = true;
  }
  return changed;
}

}  // namespace onyx::opt
