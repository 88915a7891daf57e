#include "infer/inference.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "ir/datum.hpp"
#include "ops/registry.hpp"

namespace onyx::infer {

Type refine_declared(const Type& declared, const Type& inferred) {
  if (inferred.kind == Type::Kind::Unknown) return declared;
  if (declared.kind != inferred.kind || inferred.kind != Type::Kind::Tensor) return inferred;
  Type t = inferred;
  if (t.elem == DataType::Undefined) t.elem = declared.elem;
  if (!t.shape.rank_known) {
    t.shape = declared.shape;
  } else if (declared.shape.rank_known && declared.shape.dims.size() == t.shape.dims.size()) {
    for (size_t i = 0; i < t.shape.dims.size(); ++i)
      if (!t.shape.dims[i].value && t.shape.dims[i].param.empty()) t.shape.dims[i] = declared.shape.dims[i];
  }
  return t;
}

const Type& Inference::type(const Value* v) const {
  static const Type unknown;
  if (!v) return unknown;
  if (where_ == Types::Beside) {
    if (auto it = types_.find(v); it != types_.end()) return it->second;
    if (outer_)
      if (auto it = outer_->find(v); it != outer_->end()) return it->second;
  }
  return v->type;
}

const Tensor* Inference::constant(const Value* v) const {
  if (!v) return nullptr;
  if (v->initializer && !v->is_graph_input) return v->initializer;
  auto it = constants_.find(v);
  return it == constants_.end() ? nullptr : &it->second;
}

const std::vector<Dim>* Inference::dim_values(const Value* v) const {
  auto it = v ? dim_values_.find(v) : dim_values_.end();
  return it == dim_values_.end() ? nullptr : &it->second;
}

void Inference::set_dim_values(const Value* v, std::optional<std::vector<Dim>> dims) {
  if (dims) dim_values_[v] = std::move(*dims);
  else dim_values_.erase(v);
}

void Inference::set_type(Value* v, const Type& inferred, bool in_function_body) {
  const Type& declared = type(v);
  // A function body's values were last given the types of the previous call site: what this call site infers
  // replaces them.
  Type t = in_function_body ? (inferred.kind == Type::Kind::Unknown ? declared : inferred)
                            : refine_declared(declared, inferred);
  if (where_ == Types::IntoIr) v->type = std::move(t);
  else types_[v] = std::move(t);
}

void Inference::infer(const Node& n, const ops::OpDef& def, int64_t opset,
                      const std::vector<const Attribute*>* scope) {
  ops::InferContext ic{n, opset, ops::AttributeView(n, scope), {}, {}, {}, {}, {}, {}};
  for (const Value* v : n.inputs) {
    ic.input_types.push_back(v ? &type(v) : nullptr);
    ic.input_values.push_back(constant(v));
    ic.input_dim_values.push_back(dim_values(v));
  }
  ic.output_types.resize(n.outputs.size());
  ic.output_values.resize(n.outputs.size());
  ic.output_dim_values.resize(n.outputs.size());
  std::vector<DataType> dtypes;
  for (size_t i = 0; i < n.inputs.size(); ++i) dtypes.push_back(ic.input_dtype(i));
  ops::check_input_types(def, n, dtypes);
  def.infer(ic);
  // What the model declares (value_info, graph outputs) must agree with what the node makes. (Not in function
  // bodies: their values hold the types of the previous call site, which may differ.)
  if (!scope) {
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value* v = n.outputs[i];
      const Type& t = ic.output_types[i];
      const Type& declared = type(v);
      if (!v || t.kind == Type::Kind::Unknown || declared.kind == Type::Kind::Unknown) continue;
      const bool tensors = t.kind == Type::Kind::Tensor && declared.kind == Type::Kind::Tensor;
      if (t.kind != declared.kind ||
          (tensors && t.elem != DataType::Undefined && declared.elem != DataType::Undefined && t.elem != declared.elem))
        fail("output '", v->name, "' is ", t.to_string(), ", but the model declares it ", declared.to_string());
    }
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    Value* v = n.outputs[i];
    if (!v) continue;
    set_type(v, ic.output_types[i], scope != nullptr);
    if (ic.output_values[i]) constants_[v] = std::move(*ic.output_values[i]);
    else constants_.erase(v);
    set_dim_values(v, std::move(ic.output_dim_values[i]));
  }
}

void Inference::fold_small(const Node& n, const ops::OpDef& def, int64_t opset,
                           const std::vector<const Attribute*>* scope, ops::Kernel* kernel) {
  if (!def.deterministic || n.outputs.empty() || (!kernel && !def.kernel)) return;
  for (const Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return;
  std::vector<Datum> holders;
  holders.reserve(n.inputs.size());
  for (const Value* v : n.inputs) {
    if (!v) {
      holders.emplace_back();
      continue;
    }
    const Tensor* c = constant(v);
    if (!c || c->element_count() > kSmallValue) return;
    // An initializer as the model file left it may be misaligned (sessions align theirs, onyx optimize does not):
    // the kernel gets an aligned copy, at most kSmallValue elements.
    holders.push_back(Datum::of(is_aligned_for_kernels(*c) ? *c : c->clone()));
  }
  bool all_known = true;
  for (const Value* v : n.outputs) {
    if (!v) continue;
    all_known = all_known && constants_.count(v);
    const Type& t = type(v);
    if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) continue;
    uint64_t count = 1;
    bool known = true;
    for (const Dim& d : t.shape.dims) {
      if (!d.value) known = false;
      else count *= static_cast<uint64_t>(std::max<int64_t>(*d.value, 0));
      if (count == 0) break;
    }
    if (known && count > kSmallValue) return;  // too big to keep: not worth computing now
  }
  if (all_known) return;  // inference gave every output
  std::vector<const Datum*> ptrs;
  for (const Datum& d : holders) ptrs.push_back(d.kind == Datum::Kind::Empty ? nullptr : &d);
  try {
    std::unique_ptr<ops::Kernel> made;
    if (!kernel) {
      ops::KernelInit init{n, opset, ops::AttributeView(n, scope), {}, {}};
      for (const Value* v : n.inputs) init.input_types.push_back(v ? &type(v) : nullptr);
      for (const Value* v : n.outputs) init.output_types.push_back(v ? &type(v) : nullptr);
      made = def.kernel(init);
      kernel = made.get();
    }
    ops::KernelContext ctx(n, opset, ptrs, n.outputs.size(), nullptr);
    kernel->run(ctx);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] && ctx.outputs()[i].is_tensor() && ctx.outputs()[i].tensor.element_count() <= kSmallValue)
        constants_[n.outputs[i]] = ctx.outputs()[i].tensor;
  } catch (const std::exception&) {
    // the run reports it, with the inputs it gets
  }
}

}  // namespace onyx::infer
