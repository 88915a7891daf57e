// Test helpers for the shape/layout op families: reading tensors back, and a small multi-node graph builder
// (initializers, tensor attributes, symbolic input dims) for inference and constant-folding checks.
#pragma once
#include <string>
#include <vector>

#include "op_test_util.hpp"

namespace onyx::testing {

inline Tensor iota_f32(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(std::move(dims), v);
}

class GraphBuilder {
 public:
  explicit GraphBuilder(int64_t opset) {
    m_.ir_version = 10;
    m_.opset_import.push_back({"", opset, {}});
    pb::Graph& g = m_.graph.emplace();
    g.name = "g";
  }
  pb::Graph& graph() { return *m_.graph; }
  pb::Str s(const std::string& x) { return arena_->save(x); }

  // A graph input; dims are numbers or symbols ("N").
  GraphBuilder& input(const std::string& name, DataType dt, const std::vector<std::string>& dims) {
    pb::ValueInfo& vi = graph().input.emplace_back();
    vi.name = s(name);
    auto& tt = vi.type.emplace().tensor_type.emplace();
    tt.elem_type = static_cast<int32_t>(dt);
    auto& shape = tt.shape.emplace();
    for (const std::string& d : dims) {
      auto& dim = shape.dim.emplace_back();
      if (!d.empty() && (std::isdigit(static_cast<unsigned char>(d[0])) != 0)) dim.dim_value = std::stoll(d);
      else dim.dim_param = s(d);
    }
    return *this;
  }
  GraphBuilder& output(const std::string& name) {
    graph().output.emplace_back().name = s(name);
    return *this;
  }
  pb::Tensor tensor(const Tensor& t, const std::string& name = "") {
    pb::Tensor p;
    p.dims = t.dims();
    p.data_type = static_cast<int32_t>(t.dtype());
    if (!name.empty()) p.name = s(name);
    if (t.dtype() == DataType::String) {
      for (const auto& x : t.string_values()) p.string_data.push_back(s(x));
    } else {
      p.raw_data = s(std::string(t.bytes()));
    }
    return p;
  }
  GraphBuilder& initializer(const std::string& name, const Tensor& t) {
    graph().initializer.push_back(tensor(t, name));
    return *this;
  }
  pb::Node& node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
    pb::Node& n = graph().node.emplace_back();
    n.op_type = s(op);
    for (const auto& i : ins) n.input.push_back(s(i));
    for (const auto& o : outs) n.output.push_back(s(o));
    return n;
  }
  pb::Attribute& attr(pb::Node& n, const std::string& name, pb::AttrType t) {
    pb::Attribute& a = n.attribute.emplace_back();
    a.name = s(name);
    a.type = static_cast<int32_t>(t);
    return a;
  }
  void attr_int(pb::Node& n, const std::string& name, int64_t v) { attr(n, name, pb::AttrType::Int).i = v; }
  void attr_ints(pb::Node& n, const std::string& name, std::vector<int64_t> v) { attr(n, name, pb::AttrType::Ints).ints = std::move(v); }
  void attr_tensor(pb::Node& n, const std::string& name, const Tensor& t) { attr(n, name, pb::AttrType::Tensor).t = tensor(t); }
  void attr_strings(pb::Node& n, const std::string& name, const std::vector<std::string>& v) {
    auto& a = attr(n, name, pb::AttrType::Strings);
    for (const auto& x : v) a.strings.push_back(s(x));
  }

  Session session() { return Session::from_bytes(pb::serialize_model(m_)); }

 private:
  std::shared_ptr<pb::Arena> arena_ = std::make_shared<pb::Arena>();  // shared: copies keep the views valid
  pb::Model m_;
};

// Output i's declared-or-inferred type as "float[N,3]".
inline std::string output_type(const Session& s, size_t i) { return s.outputs().at(i).type.to_string_with_shape(); }

}  // namespace onyx::testing
