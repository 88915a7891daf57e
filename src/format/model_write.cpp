#include "format/model_write.hpp"

#include "base/error.hpp"

namespace onyx {
namespace {

class Writer {
 public:
  explicit Writer(pb::Arena& arena) : arena_(arena) {}

  pb::OptStr opt(const std::string& s) { return s.empty() ? pb::OptStr{} : pb::OptStr{arena_.save(s)}; }
  pb::Str str(const std::string& s) { return arena_.save(s); }

  std::optional<pb::Type> type(const Type& t) {
    pb::Type r;
    if (!t.denotation.empty()) r.denotation = str(t.denotation);
    auto inner = [&](pb::Box<pb::Type>& box) {
      if (!t.inner) return;
      if (auto in = type(*t.inner)) box.emplace() = std::move(*in);
    };
    switch (t.kind) {
      case Type::Kind::Tensor:
      case Type::Kind::SparseTensor: {
        pb::TypeTensor tt;
        if (t.elem != DataType::Undefined) tt.elem_type = static_cast<int32_t>(t.elem);
        if (t.shape.rank_known) {
          pb::TensorShape& s = tt.shape.emplace();
          for (const Dim& d : t.shape.dims) {
            pb::Dimension& pd = s.dim.emplace_back();
            if (d.value) pd.dim_value = *d.value;
            else if (!d.param.empty()) pd.dim_param = str(d.param);
            if (!d.denotation.empty()) pd.denotation = str(d.denotation);
          }
        }
        if (t.kind == Type::Kind::Tensor) r.tensor_type = std::move(tt);
        else r.sparse_tensor_type = std::move(tt);
        break;
      }
      case Type::Kind::Sequence: inner(r.sequence_type.emplace().elem_type); break;
      case Type::Kind::Optional: inner(r.optional_type.emplace().elem_type); break;
      case Type::Kind::Map: {
        pb::TypeMap& m = r.map_type.emplace();
        m.key_type = static_cast<int32_t>(t.key);
        inner(m.value_type);
        break;
      }
      case Type::Kind::Opaque: {
        pb::TypeOpaque& o = r.opaque_type.emplace();
        o.domain = opt(t.opaque_domain);
        o.name = opt(t.opaque_name);
        break;
      }
      case Type::Kind::Unknown: return std::nullopt;
    }
    return r;
  }

  pb::ValueInfo value_info(const Value& v) {
    pb::ValueInfo vi;
    vi.name = str(v.name);
    vi.type = type(v.type);
    return vi;
  }

  pb::Tensor tensor(const Tensor& t) {
    pb::Tensor r;
    r.dims = t.dims();
    r.data_type = static_cast<int32_t>(t.dtype());
    if (!t.name().empty()) r.name = str(t.name());
    if (t.dtype() == DataType::String) {
      for (const std::string& s : t.string_values()) r.string_data.push_back(s);
    } else {
      r.raw_data = t.bytes();
    }
    return r;
  }

  pb::SparseTensor sparse(const SparseTensor& s) {
    pb::SparseTensor r;
    r.values = tensor(s.values);
    r.indices = tensor(s.indices);
    r.dims = s.dims;
    return r;
  }

  pb::Attribute attribute(const Attribute& a) {
    pb::Attribute r;
    r.name = str(a.name);
    if (!a.ref_attr_name.empty()) r.ref_attr_name = str(a.ref_attr_name);
    if (a.type != AttributeType::Undefined) r.type = static_cast<int32_t>(a.type);
    switch (a.type) {
      case AttributeType::Float: r.f = a.f; break;
      case AttributeType::Int: r.i = a.i; break;
      case AttributeType::String: r.s = str(a.s); break;
      case AttributeType::Tensor:
        if (a.t) r.t = tensor(*a.t);
        break;
      case AttributeType::Graph:
        if (a.g) r.g.emplace() = graph(*a.g);
        break;
      case AttributeType::SparseTensor:
        if (a.sparse_tensor) r.sparse_tensor = sparse(*a.sparse_tensor);
        break;
      case AttributeType::TypeProto:
        if (a.tp) r.tp = type(*a.tp);
        break;
      case AttributeType::Floats: r.floats = a.floats; break;
      case AttributeType::Ints: r.ints = a.ints; break;
      case AttributeType::Strings:
        for (const auto& s : a.strings) r.strings.push_back(str(s));
        break;
      case AttributeType::Tensors:
        for (const auto& t : a.tensors) r.tensors.push_back(tensor(t));
        break;
      case AttributeType::Graphs:
        for (const auto& g : a.graphs) r.graphs.push_back(graph(*g));
        break;
      case AttributeType::SparseTensors:
        for (const auto& s : a.sparse_tensors) r.sparse_tensors.push_back(sparse(s));
        break;
      case AttributeType::TypeProtos:
        for (const auto& t : a.type_protos)
          if (auto pt = type(t)) r.type_protos.push_back(std::move(*pt));
        break;
      case AttributeType::Undefined: break;
    }
    return r;
  }

  pb::Node node(const Node& n) {
    pb::Node r;
    for (const Value* v : n.inputs) r.input.push_back(v ? str(v->name) : pb::Str{});
    for (const Value* v : n.outputs) r.output.push_back(v ? str(v->name) : pb::Str{});
    r.name = opt(n.name);
    r.op_type = str(n.op_type);
    r.domain = opt(n.domain);
    r.overload = opt(n.overload);
    r.doc_string = opt(n.doc_string);
    for (const Attribute& a : n.attributes) r.attribute.push_back(attribute(a));
    return r;
  }

  // Value infos: node outputs of `g` with a known type that are not graph outputs (those are listed there).
  std::vector<pb::ValueInfo> value_infos(const Graph& g) {
    std::vector<pb::ValueInfo> list;
    for (const Value& v : g.values())
      if (v.producer && v.producer->graph == &g && v.type.kind != Type::Kind::Unknown && !v.is_graph_output)
        list.push_back(value_info(v));
    return list;
  }

  pb::Graph graph(const Graph& g) {
    pb::Graph r;
    for (const auto& n : g.nodes) r.node.push_back(node(*n));
    r.name = opt(g.name);
    for (const auto& [name, t] : g.initializers) r.initializer.push_back(tensor(t));
    for (const auto& [name, s] : g.sparse_initializers) r.sparse_initializer.push_back(sparse(s));
    r.doc_string = opt(g.doc_string);
    for (const Value* v : g.inputs) r.input.push_back(value_info(*v));
    for (const Value* v : g.outputs) r.output.push_back(value_info(*v));
    r.value_info = value_infos(g);
    return r;
  }

  std::vector<pb::OperatorSetId> opsets(const std::map<std::string, int64_t>& imports) {
    std::vector<pb::OperatorSetId> r;
    for (const auto& [domain, version] : imports) r.push_back({str(domain), version, {}});
    return r;
  }

  pb::Function function(const Function& f) {
    pb::Function r;
    r.name = str(f.name);
    for (const auto& s : f.inputs) r.input.push_back(str(s));
    for (const auto& s : f.outputs) r.output.push_back(str(s));
    for (const auto& s : f.attribute_names) r.attribute.push_back(str(s));
    for (const Attribute& a : f.attribute_defaults) r.attribute_proto.push_back(attribute(a));
    if (f.body)
      for (const auto& n : f.body->nodes) r.node.push_back(node(*n));
    r.doc_string = opt(f.doc_string);
    r.opset_import = opsets(f.opset_imports);
    r.domain = str(f.domain);
    r.overload = opt(f.overload);
    if (f.body) r.value_info = value_infos(*f.body);
    return r;
  }

  pb::Model model(const Model& m) {
    pb::Model r;
    r.ir_version = m.ir_version;
    r.opset_import = opsets(m.opset_imports);
    r.producer_name = opt(m.producer_name);
    r.producer_version = opt(m.producer_version);
    r.domain = opt(m.domain);
    if (m.model_version) r.model_version = m.model_version;
    r.doc_string = opt(m.doc_string);
    if (m.graph) r.graph = graph(*m.graph);
    for (const auto& [k, v] : m.metadata) r.metadata_props.push_back({str(k), str(v), {}});
    for (const Function& f : m.functions) r.functions.push_back(function(f));
    return r;
  }

 private:
  pb::Arena& arena_;
};

}  // namespace

pb::ModelDocument model_to_document(const Model& model) {
  pb::ModelDocument doc;
  doc.label = model.label;
  doc.model = Writer(*doc.arena).model(model);
  return doc;
}

}  // namespace onyx
