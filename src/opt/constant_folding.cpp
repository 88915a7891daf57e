// Constant folding: a node whose inputs are all initializers (not graph inputs, which a feed may override) runs
// once, here, and its outputs become initializers. Not folded: random ops (their result is not a function of the
// inputs), nodes with subgraphs, model-local function calls, nodes the session could not bind, and results whose
// size is unknown or above OptimizeOptions::fold_limit_bytes (a huge constant stays computed at run time).

#include "base/error.hpp"
#include "ops/registry.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

bool deterministic(const Node& n) {
  if (!ops::builtin_registry().deterministic(n.domain, n.op_type)) return false;
  for (const Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return false;
  return true;
}

// Bytes a tensor of this type and dims takes (strings counted at 32 bytes each); nullopt if unknown.
std::optional<uint64_t> tensor_bytes(DataType dt, const std::vector<int64_t>& dims) {
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d && count > (uint64_t{1} << 50) / static_cast<uint64_t>(d)) return std::nullopt;
    count *= static_cast<uint64_t>(d);
  }
  if (dt == DataType::String) return count * 32;
  return raw_byte_size(dt, count);
}

}  // namespace

bool fold_constants(PassContext& ctx) {
  bool changed = false;
  const std::vector<Node*> order = ctx.node_order();
  for (Node* n : order) {
    if (!ctx.alive(n) || !deterministic(*n)) continue;
    const Analysis& a = ctx.analysis();
    const ops::OpDef* def = a.def(n);
    if (!def || !def->kernel) continue;
    bool inputs_constant = true;
    for (const Value* v : n->inputs)
      if (v && (!v->initializer || v->is_graph_input)) inputs_constant = false;
    if (!inputs_constant) continue;
    bool bounded = !n->outputs.empty();
    for (const Value* v : n->outputs) {
      if (!v) continue;
      auto dims = a.static_dims(v);
      auto bytes = dims ? tensor_bytes(a.dtype(v), *dims) : std::nullopt;
      if (!bytes || *bytes > ctx.options.fold_limit_bytes) bounded = false;
    }
    if (!bounded) continue;

    std::vector<Datum> held;
    std::vector<const Datum*> in;
    held.reserve(n->inputs.size());
    for (const Value* v : n->inputs) held.push_back(v ? Datum::of(*v->initializer) : Datum{});
    for (const Datum& d : held) in.push_back(d.kind == Datum::Kind::Empty ? nullptr : &d);
    std::vector<Datum> outs;
    try {
      ops::KernelInit init{*n, a.opset(n), ops::AttributeView(*n), {}, {}};
      for (const Value* v : n->inputs) init.input_types.push_back(v ? &a.type(v) : nullptr);
      for (const Value* v : n->outputs) init.output_types.push_back(v ? &a.type(v) : nullptr);
      auto kernel = def->kernel(init);
      ops::KernelContext kc(*n, a.opset(n), in, n->outputs.size(), nullptr);
      kernel->run(kc);
      outs = std::move(kc.outputs());
    } catch (const std::exception&) {
      continue;  // left for the session, which reports the error when the node runs
    }
    bool usable = true;
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      if (!n->outputs[i]) continue;
      if (i >= outs.size() || !outs[i].is_tensor()) {
        usable = false;
        continue;
      }
      auto bytes = tensor_bytes(outs[i].tensor.dtype(), outs[i].tensor.dims());
      if (!bytes || *bytes > ctx.options.fold_limit_bytes) usable = false;
    }
    if (!usable) continue;
    std::vector<Value*> outputs = n->outputs;
    ctx.remove_node(*n);
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value* v = outputs[i];
      if (v && (!v->consumers.empty() || v->is_graph_output)) ctx.make_initializer(*v, std::move(outs[i].tensor));
    }
    changed = true;
  }
  return changed;
}

}  // namespace onyx::opt
