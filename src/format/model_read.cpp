#include "format/model_read.hpp"

#include <algorithm>
#include <set>

#include "base/error.hpp"
#include "format/external_data.hpp"
#include "format/tensor_data.hpp"

namespace onyx {

Tensor tensor_from_proto(const pb::Tensor& p, ExternalDataResolver* resolver, std::string_view what,
                         std::shared_ptr<const void> source) {
  std::string name(p.name.value_or(""));
  uint64_t n = tensor_element_count(p, what);
  if (p.data_type.value_or(0) == static_cast<int32_t>(DataType::String)) {
    if (is_external(p)) fail(what, ": string tensors cannot use external data");
    if (p.string_data.size() != n)
      fail(what, ": string_data has ", p.string_data.size(), " values, but the dims give ", n, " elements");
    std::vector<std::string> values(p.string_data.begin(), p.string_data.end());
    return Tensor::strings(std::move(name), p.dims, std::move(values));
  }
  TensorBytes b = tensor_raw_bytes(p, resolver, what);
  bool in_place = !b.keep || is_external(p);  // raw_data in the model mapping, or an external file's mapping
  Tensor t = Tensor::view(std::move(name), static_cast<DataType>(*p.data_type), p.dims, b.bytes,
                          b.keep ? b.keep : source, in_place);
  if (auto wrong = invalid_bool(t))
    fail(what, ": bool element ", wrong->index, " is stored as the byte ", wrong->byte, " (a bool must be 0 or 1)");
  return t;
}

Shape shape_from_proto(const pb::TensorShape& s) {
  Shape r;
  r.rank_known = true;
  r.dims.reserve(s.dim.size());
  for (const auto& d : s.dim) {
    Dim dim;
    dim.value = d.dim_value;
    if (d.dim_param) dim.param = std::string(*d.dim_param);
    if (d.denotation) dim.denotation = std::string(*d.denotation);
    r.dims.push_back(std::move(dim));
  }
  return r;
}


Type type_from_proto(const pb::Type& p) {
  Type t;
  if (p.denotation) t.denotation = std::string(*p.denotation);
  auto inner = [](const pb::Box<pb::Type>& b) {
    return std::make_shared<const Type>(b ? type_from_proto(*b) : Type{});
  };
  if (p.tensor_type || p.sparse_tensor_type) {
    const auto& tt = p.tensor_type ? *p.tensor_type : *p.sparse_tensor_type;
    t.kind = p.tensor_type ? Type::Kind::Tensor : Type::Kind::SparseTensor;
    t.elem = static_cast<DataType>(tt.elem_type.value_or(0));
    if (tt.shape) t.shape = shape_from_proto(*tt.shape);
  } else if (p.sequence_type) {
    t.kind = Type::Kind::Sequence;
    t.inner = inner(p.sequence_type->elem_type);
  } else if (p.optional_type) {
    t.kind = Type::Kind::Optional;
    t.inner = inner(p.optional_type->elem_type);
  } else if (p.map_type) {
    t.kind = Type::Kind::Map;
    t.key = static_cast<DataType>(p.map_type->key_type.value_or(0));
    t.inner = inner(p.map_type->value_type);
  } else if (p.opaque_type) {
    t.kind = Type::Kind::Opaque;
    t.opaque_domain = std::string(p.opaque_type->domain.value_or(""));
    t.opaque_name = std::string(p.opaque_type->name.value_or(""));
  }
  return t;
}

namespace {

std::string str(const pb::OptStr& s) { return std::string(s.value_or("")); }

class Builder {
 public:
  Builder(const pb::ModelDocument& doc, Model& model) : doc_(doc), model_(model), resolver_(doc.dir, doc.memory_files) {}

  Tensor tensor(const pb::Tensor& t, const std::string& where) {
    if (is_external(t)) {
      for (const auto& kv : t.external_data)
        if (kv.key.value_or("") == "location") external_files_.insert(str(kv.value));
    }
    return tensor_from_proto(t, &resolver_, cat(doc_.label, ": ", where, ": tensor '", str(t.name), "'"), doc_.source);
  }

  SparseTensor sparse(const pb::SparseTensor& s, const std::string& where) {
    SparseTensor r;
    if (s.values) r.values = tensor(*s.values, where);
    if (s.indices) r.indices = tensor(*s.indices, where);
    r.dims = s.dims;
    return r;
  }

  Attribute attribute(const pb::Attribute& a, Graph* scope, Node* owner, const std::string& where) {
    Attribute r;
    r.name = str(a.name);
    r.ref_attr_name = str(a.ref_attr_name);
    r.type = static_cast<AttributeType>(a.type.value_or(0));
    if (r.type == AttributeType::Undefined) r.type = guess_type(a);
    std::string at = cat(where, " attribute '", r.name, "'");
    r.f = a.f.value_or(0);
    r.i = a.i.value_or(0);
    r.s = str(a.s);
    if (a.t) r.t = tensor(*a.t, at);
    if (a.g) r.g = graph(*a.g, scope, owner);
    if (a.sparse_tensor) r.sparse_tensor = sparse(*a.sparse_tensor, at);
    if (a.tp) r.tp = type_from_proto(*a.tp);
    r.floats = a.floats;
    r.ints = a.ints;
    r.strings.assign(a.strings.begin(), a.strings.end());
    for (const auto& t : a.tensors) r.tensors.push_back(tensor(t, at));
    for (const auto& g : a.graphs) r.graphs.push_back(graph(g, scope, owner));
    for (const auto& s : a.sparse_tensors) r.sparse_tensors.push_back(sparse(s, at));
    for (const auto& t : a.type_protos) r.type_protos.push_back(type_from_proto(t));
    return r;
  }

  // Old models (IR < 2) may omit AttributeProto.type: take the one field that is set.
  static AttributeType guess_type(const pb::Attribute& a) {
    if (a.f) return AttributeType::Float;
    if (a.i) return AttributeType::Int;
    if (a.s) return AttributeType::String;
    if (a.t) return AttributeType::Tensor;
    if (a.g) return AttributeType::Graph;
    if (a.sparse_tensor) return AttributeType::SparseTensor;
    if (a.tp) return AttributeType::TypeProto;
    if (!a.floats.empty()) return AttributeType::Floats;
    if (!a.ints.empty()) return AttributeType::Ints;
    if (!a.strings.empty()) return AttributeType::Strings;
    if (!a.tensors.empty()) return AttributeType::Tensors;
    if (!a.graphs.empty()) return AttributeType::Graphs;
    if (!a.sparse_tensors.empty()) return AttributeType::SparseTensors;
    if (!a.type_protos.empty()) return AttributeType::TypeProtos;
    return AttributeType::Undefined;
  }

  void add_nodes(Graph& g, const std::vector<pb::Node>& nodes) {
    for (const auto& pn : nodes) {
      auto node = std::make_unique<Node>();
      Node& n = *node;
      n.graph = &g;
      n.index = g.nodes.size();
      n.name = str(pn.name);
      n.op_type = str(pn.op_type);
      n.domain = str(pn.domain);
      if (n.domain == "ai.onnx") n.domain.clear();
      n.overload = str(pn.overload);
      n.doc_string = str(pn.doc_string);
      std::string where = cat(g.label(), " node ", n.label());
      for (auto in : pn.input) {
        if (in.empty()) {
          n.inputs.push_back(nullptr);
          continue;
        }
        Value* v = g.find(in);
        if (!v) fail(doc_.label, ": ", where, ": input '", in, "' is not defined before this node");
        v->consumers.push_back(&n);
        n.inputs.push_back(v);
      }
      for (const auto& a : pn.attribute) n.attributes.push_back(attribute(a, &g, &n, where));
      for (size_t i = 0; i < pn.output.size(); ++i) {
        if (pn.output[i].empty()) {
          n.outputs.push_back(nullptr);
          continue;
        }
        Value& v = g.add_value(std::string(pn.output[i]));
        v.producer = &n;
        v.producer_output = static_cast<int>(i);
        n.outputs.push_back(&v);
      }
      g.nodes.push_back(std::move(node));
    }
  }

  std::unique_ptr<Graph> graph(const pb::Graph& pg, Graph* parent, Node* owner) {
    auto gp = std::make_unique<Graph>();
    Graph& g = *gp;
    g.parent = parent;
    g.owner = owner;
    g.name = str(pg.name);
    g.doc_string = str(pg.doc_string);
    for (const auto& in : pg.input) {
      Value& v = g.add_value(str(in.name));
      if (in.type) v.type = type_from_proto(*in.type);
      v.is_graph_input = true;
      g.inputs.push_back(&v);
    }
    for (const auto& t : pg.initializer) {
      std::string n = str(t.name);
      auto [it, inserted] = g.initializers.emplace(n, tensor(t, g.label()));
      if (!inserted) fail(doc_.label, ": ", g.label(), ": initializer '", n, "' is defined twice");
      Value* v = g.find_local(n);
      if (!v) {
        v = &g.add_value(n);
        v->type = Type::tensor(it->second.dtype());
        v->type.shape.rank_known = true;
        for (int64_t d : it->second.dims()) v->type.shape.dims.push_back(Dim{d, {}, {}});
      }
      v->initializer = &it->second;
    }
    for (const auto& s : pg.sparse_initializer) {
      std::string n = s.values ? str(s.values->name) : std::string();
      g.sparse_initializers.emplace(n, sparse(s, g.label()));
      if (!g.find_local(n)) {
        Value& v = g.add_value(n);
        v.type.kind = Type::Kind::SparseTensor;
        if (s.values) v.type.elem = static_cast<DataType>(s.values->data_type.value_or(0));
      }
    }
    add_nodes(g, pg.node);
    for (const auto& vi : pg.value_info) {
      Value* v = g.find_local(str(vi.name));
      if (v && vi.type && v->type.kind == Type::Kind::Unknown) v->type = type_from_proto(*vi.type);
    }
    for (const auto& out : pg.output) {
      Value* v = g.find(str(out.name));
      if (!v) fail(doc_.label, ": ", g.label(), ": output '", str(out.name), "' is not defined");
      if (out.type) {
        Type t = type_from_proto(*out.type);
        if (v->graph == &g && (v->type.kind == Type::Kind::Unknown || (!v->type.shape.rank_known && t.shape.rank_known)))
          v->type = t;
      }
      v->is_graph_output = true;
      g.outputs.push_back(v);
    }
    return gp;
  }

  void build() {
    const pb::Model& m = doc_.model;
    model_.label = doc_.label;
    model_.ir_version = m.ir_version.value_or(0);
    for (const auto& op : m.opset_import) {
      std::string d = str(op.domain);
      model_.opset_imports[d == "ai.onnx" ? "" : d] = op.version.value_or(0);
    }
    model_.producer_name = str(m.producer_name);
    model_.producer_version = str(m.producer_version);
    model_.domain = str(m.domain);
    model_.doc_string = str(m.doc_string);
    model_.model_version = m.model_version.value_or(0);
    for (const auto& kv : m.metadata_props) model_.metadata.emplace_back(str(kv.key), str(kv.value));
    if (!m.graph) fail(doc_.label, ": the model has no graph");
    model_.graph = graph(*m.graph, nullptr, nullptr);
    for (const auto& pf : m.functions) {
      Function& f = model_.functions.emplace_back();
      f.domain = str(pf.domain);
      f.name = str(pf.name);
      f.overload = str(pf.overload);
      f.doc_string = str(pf.doc_string);
      f.inputs.assign(pf.input.begin(), pf.input.end());
      f.outputs.assign(pf.output.begin(), pf.output.end());
      f.attribute_names.assign(pf.attribute.begin(), pf.attribute.end());
      for (const auto& op : pf.opset_import) {
        std::string d = str(op.domain);
        f.opset_imports[d == "ai.onnx" ? "" : d] = op.version.value_or(0);
      }
      f.body = std::make_unique<Graph>();
      f.body->name = f.name;
      for (const auto& in : f.inputs) {
        if (in.empty()) continue;
        Value& v = f.body->add_value(in);
        v.is_graph_input = true;
        f.body->inputs.push_back(&v);
      }
      std::string where = cat("function '", f.domain, ".", f.name, "'");
      for (const auto& a : pf.attribute_proto) f.attribute_defaults.push_back(attribute(a, f.body.get(), nullptr, where));
      add_nodes(*f.body, pf.node);
      for (const auto& vi : pf.value_info) {
        Value* v = f.body->find_local(str(vi.name));
        if (v && vi.type) v->type = type_from_proto(*vi.type);
      }
      for (const auto& out : f.outputs) {
        Value* v = f.body->find_local(out);
        if (!v) fail(doc_.label, ": ", where, ": output '", out, "' is not defined");
        v->is_graph_output = true;
        f.body->outputs.push_back(v);
      }
    }
    model_.external_files.assign(external_files_.begin(), external_files_.end());
    model_.keep = doc_.source;
  }

 private:
  const pb::ModelDocument& doc_;
  Model& model_;
  ExternalDataResolver resolver_;
  std::set<std::string> external_files_;
};

}  // namespace

Model build_model(const pb::ModelDocument& doc) {
  Model m;
  Builder(doc, m).build();
  return m;
}

}  // namespace onyx
