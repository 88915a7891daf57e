#include "ir/model.hpp"

#include <algorithm>
#include <set>

#include "base/error.hpp"

namespace onyx {

std::string_view attribute_type_name(AttributeType t) {
  switch (t) {
    case AttributeType::Float: return "float";
    case AttributeType::Int: return "int";
    case AttributeType::String: return "string";
    case AttributeType::Tensor: return "tensor";
    case AttributeType::Graph: return "graph";
    case AttributeType::Floats: return "floats";
    case AttributeType::Ints: return "ints";
    case AttributeType::Strings: return "strings";
    case AttributeType::Tensors: return "tensors";
    case AttributeType::Graphs: return "graphs";
    case AttributeType::SparseTensor: return "sparse_tensor";
    case AttributeType::SparseTensors: return "sparse_tensors";
    case AttributeType::TypeProto: return "type_proto";
    case AttributeType::TypeProtos: return "type_protos";
    case AttributeType::Undefined: break;
  }
  return "undefined";
}

const Attribute* Node::attribute(std::string_view n) const {
  for (const auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

std::string Node::label() const {
  return name.empty() ? cat("#", index, " (", op_type, ")") : cat("'", name, "' (", op_type, ")");
}

Value* Graph::find_local(std::string_view n) const {
  auto it = by_name_.find(std::string(n));
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::find(std::string_view n) const {
  for (const Graph* g = this; g; g = g->parent)
    if (Value* v = g->find_local(n)) return v;
  return nullptr;
}

Value& Graph::add_value(const std::string& n) {
  if (by_name_.count(n)) fail(label(), ": value '", n, "' is defined twice");
  Value& v = values_.emplace_back();
  v.name = n;
  v.id = values_.size() - 1;
  v.graph = this;
  by_name_[n] = &v;
  return v;
}

std::string Graph::label() const {
  if (!owner) return parent ? cat("graph '", name, "'") : cat("main graph '", name, "'");
  return cat("graph '", name, "' of node ", owner->label());
}

std::optional<int64_t> Model::opset(std::string_view d) const {
  auto it = opset_imports.find(std::string(d == "ai.onnx" ? "" : d));
  if (it == opset_imports.end()) return std::nullopt;
  return it->second;
}

const Function* Model::function(std::string_view d, std::string_view n, std::string_view overload) const {
  for (const auto& f : functions)
    if (f.domain == d && f.name == n && f.overload == overload) return &f;
  return nullptr;
}

Attribute copy_attribute(const Attribute& a) {
  Attribute r;
  r.name = a.name;
  r.type = a.type;
  r.ref_attr_name = a.ref_attr_name;
  r.f = a.f;
  r.i = a.i;
  r.s = a.s;
  r.t = a.t;
  r.sparse_tensor = a.sparse_tensor;
  r.tp = a.tp;
  r.floats = a.floats;
  r.ints = a.ints;
  r.strings = a.strings;
  r.tensors = a.tensors;
  r.sparse_tensors = a.sparse_tensors;
  r.type_protos = a.type_protos;
  return r;
}

Attribute make_attr_int(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::Int;
  a.i = v;
  return a;
}

Attribute make_attr_float(const std::string& name, float v) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::Float;
  a.f = v;
  return a;
}

Attribute make_attr_ints(const std::string& name, std::vector<int64_t> v) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::Ints;
  a.ints = std::move(v);
  return a;
}

Attribute make_attr_floats(const std::string& name, std::vector<float> v) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::Floats;
  a.floats = std::move(v);
  return a;
}

Attribute make_attr_string(const std::string& name, std::string v) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::String;
  a.s = std::move(v);
  return a;
}

}  // namespace onyx
