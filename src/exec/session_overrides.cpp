#include "exec/session_overrides.hpp"

#include "base/error.hpp"

namespace onyx::exec {

void apply_document_overrides(pb::ModelDocument& doc, const SessionOptions& options) {
  for (const auto* overrides : {&options.free_dimension_overrides_by_name, &options.free_dimension_overrides_by_denotation})
    for (const auto& [key, size] : *overrides)
      if (size < 0)
        fail(doc.label, ": free dimension override ",
             overrides == &options.free_dimension_overrides_by_name ? "by name '" : "by denotation '", key,
             "' is ", size, " (a size must be >= 0)");
  for (const auto& [location, bytes] : options.external_data_files) {
    if (!bytes) fail(doc.label, ": external data file '", location, "' given in memory is null");
    doc.memory_files[location] = bytes;
  }
  if (options.initializer_overrides.empty()) return;
  if (!doc.model.graph) fail(doc.label, ": the model has no graph");
  pb::Graph& g = *doc.model.graph;
  for (const auto& [name, t] : options.initializer_overrides) {
    pb::Tensor* target = nullptr;
    for (pb::Tensor& p : g.initializer)
      if (p.name.value_or("") == name) target = &p;
    if (!target) {
      bool sparse = false;
      for (const pb::SparseTensor& s : g.sparse_initializer) sparse = sparse || (s.values && s.values->name.value_or("") == name);
      fail(doc.label, ": initializer override '", name, "': ",
           sparse ? "a sparse initializer cannot be replaced" : "not an initializer of the main graph");
    }
    const auto dtype = static_cast<DataType>(target->data_type.value_or(0));
    if (t.dtype() != dtype)
      fail(doc.label, ": initializer override '", name, "' is ", t.dtype(), ", but the model's initializer is ", dtype);
    // A message of the override's type and dims viewing its data: what the checker checks and the builder builds
    // (then replaced by the tensor itself, apply_model_overrides).
    pb::Tensor replacement;
    replacement.name = target->name;
    replacement.data_type = target->data_type;
    replacement.dims = t.dims();
    if (dtype == DataType::String) {
      for (const std::string& s : t.string_values()) replacement.string_data.push_back(s);
    } else {
      replacement.raw_data = t.bytes();
    }
    *target = std::move(replacement);
  }
}

void apply_model_overrides(Model& model, const SessionOptions& options, const std::string& label) {
  Graph& g = *model.graph;
  for (const auto& [name, t] : options.initializer_overrides) {
    auto it = g.initializers.find(name);
    if (it == g.initializers.end()) fail(label, ": initializer override '", name, "': not an initializer of the main graph");
    Tensor copy = t;  // shares the caller's buffer, which the session only reads
    copy.set_name(name);
    it->second = std::move(copy);  // in place: values point at the map's entry
  }
  const auto& by_name = options.free_dimension_overrides_by_name;
  const auto& by_denotation = options.free_dimension_overrides_by_denotation;
  if (by_name.empty() && by_denotation.empty()) return;
  for (Value* v : g.inputs) {
    if (v->type.kind != Type::Kind::Tensor && v->type.kind != Type::Kind::SparseTensor) continue;
    for (Dim& d : v->type.shape.dims) {
      std::optional<int64_t> size;
      if (auto it = by_denotation.find(d.denotation); !d.denotation.empty() && it != by_denotation.end()) size = it->second;
      if (auto it = by_name.find(d.param); !d.param.empty() && it != by_name.end()) size = it->second;
      if (!size) continue;
      if (d.value && *d.value != *size)
        fail(label, ": input '", v->name, "': free dimension override ", *size, " for a dim of fixed size ", *d.value);
      d.value = *size;
      d.param.clear();  // a fixed dim carries no symbol
    }
  }
}

void restore_sparse_kinds(std::vector<IoInfo>& io, const std::set<std::string>& names) {
  for (IoInfo& info : io)
    if (names.count(info.name) && info.type.kind == Type::Kind::Tensor) info.type.kind = Type::Kind::SparseTensor;
}

}  // namespace onyx::exec
