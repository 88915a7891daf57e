// Dead code elimination: nodes none of whose outputs is a graph output or read by any node (nodes of subgraphs
// included: a value an If branch reads stays), last to first so whole dead chains go in one pass; then
// initializers nothing reads (those that are also graph inputs stay: they are part of the interface).
#include "opt/passes.hpp"

namespace onyx::opt {

bool eliminate_dead_code(PassContext& ctx) {
  bool changed = false;
  const std::vector<Node*> order = ctx.node_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (!ctx.alive(n)) continue;
    bool live = false;
    for (const Value* v : n->outputs)
      if (v && (v->is_graph_output || !v->consumers.empty())) live = true;
    if (live) continue;
    ctx.remove_node(*n);
    changed = true;
  }
  std::vector<std::string> unused;
  for (const auto& [name, t] : ctx.graph.initializers) {
    const Value* v = ctx.graph.find_local(name);
    if (v && v->initializer == &t && !v->is_graph_input && !v->is_graph_output && v->consumers.empty())
      unused.push_back(name);
  }
  for (const std::string& name : unused) {
    ctx.graph.find_local(name)->initializer = nullptr;
    ctx.graph.initializers.erase(name);
    changed = true;
  }
  return changed;
}

}  // namespace onyx::opt
