// Shape-computation folding: nodes whose outputs inference knows completely although their inputs are not all
// constant — Shape or Size of a statically shaped tensor, and the Gather/Slice/Concat/Cast/arithmetic chains
// built on them — are replaced by initializers holding those values. (Nodes with all-constant inputs are
// constant folding's.) Inference keeps such values only for small tensors (shape vectors).
#include "ir/scalar.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// The value of `v` from its symbolic contents when every element is a known size.
std::optional<Tensor> from_dim_values(const Analysis& a, const Value* v) {
  const std::vector<Dim>* dims = a.dim_values(v);
  const DataType dt = a.dtype(v);
  auto shape = a.static_dims(v);
  if (!dims || !shape || shape->size() > 1 || (dt != DataType::Int64 && dt != DataType::Int32)) return std::nullopt;
  const uint64_t count = shape->empty() ? 1 : static_cast<uint64_t>((*shape)[0]);
  if (count != dims->size()) return std::nullopt;
  for (const Dim& d : *dims)
    if (!d.value) return std::nullopt;
  Tensor t = Tensor::allocate(dt, *shape);
  for (size_t i = 0; i < dims->size(); ++i) {
    if (dt == DataType::Int64) t.mutable_data<int64_t>()[i] = *(*dims)[i].value;
    else t.mutable_data<int32_t>()[i] = static_cast<int32_t>(*(*dims)[i].value);
  }
  return t;
}

}  // namespace

bool fold_shape_computations(PassContext& ctx) {
  bool changed = false;
  const std::vector<Node*> order = ctx.node_order();
  for (Node* n : order) {
    if (!ctx.alive(n) || n->outputs.empty()) continue;
    const Analysis& a = ctx.analysis();
    if (!a.def(n)) continue;
    bool any_variable = false;
    for (const Value* v : n->inputs)
      if (v && (!v->initializer || v->is_graph_input)) any_variable = true;
    if (!any_variable) continue;  // constant folding's
    std::vector<std::optional<Tensor>> values;
    bool known = true;
    for (const Value* v : n->outputs) {
      if (!v) {
        values.emplace_back();
        continue;
      }
      if (const Tensor* c = a.constant(v)) values.emplace_back(*c);
      else values.push_back(from_dim_values(a, v));
      if (!values.back()) known = false;
    }
    if (!known) continue;
    std::vector<Value*> outputs = n->outputs;
    ctx.remove_node(*n);
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value* v = outputs[i];
      if (v && (!v->consumers.empty() || v->is_graph_output)) ctx.make_initializer(*v, std::move(*values[i]));
    }
    changed = true;
  }
  return changed;
}

}  // namespace onyx::opt
