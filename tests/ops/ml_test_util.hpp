// One-node models for the ai.onnx.ml and training op tests: like testing::OneNode, plus string-list and tensor
// attributes, map inputs and values of any kind.
#pragma once
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ir/datum.hpp"
#include "format/onnx_proto.hpp"
#include "onyx/session.hpp"
#include "op_test_util.hpp"

namespace onyx::testing {

inline Tensor f64(std::vector<int64_t> dims, const std::vector<double>& v) { return make_tensor<double>(DataType::Double, std::move(dims), v); }
inline Tensor i32(std::vector<int64_t> dims, const std::vector<int32_t>& v) { return make_tensor<int32_t>(DataType::Int32, std::move(dims), v); }
inline Tensor strs(std::vector<int64_t> dims, std::vector<std::string> v) { return Tensor::strings("", std::move(dims), std::move(v)); }

template <class T>
std::vector<T> vals(const Datum& d) {
  return std::vector<T>(d.tensor.data<T>(), d.tensor.data<T>() + d.tensor.element_count());
}

// A map value as MapProto gives it: keys, and a sequence of scalar tensors.
inline Datum make_map(Tensor keys, std::vector<Tensor> values) {
  Datum m;
  m.kind = Datum::Kind::Map;
  m.map_keys = std::move(keys);
  std::vector<Datum> items;
  DataType dt = values.empty() ? DataType::Float : values[0].dtype();
  for (auto& v : values) items.push_back(Datum::of(std::move(v)));
  m.map_values = std::make_shared<Datum>(Datum::sequence(std::move(items), Type::tensor(dt)));
  return m;
}

class MlNode {
 public:
  MlNode(std::string op, int64_t opset, std::string domain = "ai.onnx.ml")
      : op_(std::move(op)), domain_(std::move(domain)), opset_(opset) {}

  MlNode& input(const std::string& name, Tensor t) {
    pb::Type ty;
    auto& tt = ty.tensor_type.emplace();
    tt.elem_type = static_cast<int32_t>(t.dtype());
    auto& shape = tt.shape.emplace();
    for (int64_t d : t.dims()) shape.dim.emplace_back().dim_value = d;
    return value(name, Datum::of(std::move(t)), std::move(ty));
  }
  MlNode& map_input(const std::string& name, Datum m, DataType key, DataType value_elem) {
    pb::Type ty;
    auto& mt = ty.map_type.emplace();
    mt.key_type = static_cast<int32_t>(key);
    mt.value_type.emplace().tensor_type.emplace().elem_type = static_cast<int32_t>(value_elem);
    return value(name, std::move(m), std::move(ty));
  }
  MlNode& value(const std::string& name, Datum d, pb::Type ty) {
    inputs_.push_back({name, std::move(d), std::move(ty)});
    return *this;
  }
  MlNode& attr_int(const std::string& n, int64_t v) { attr(n, pb::AttrType::Int).i = v; return *this; }
  MlNode& attr_float(const std::string& n, float v) { attr(n, pb::AttrType::Float).f = v; return *this; }
  MlNode& attr_string(const std::string& n, const std::string& v) { attr(n, pb::AttrType::String).s = arena_->save(v); return *this; }
  MlNode& attr_ints(const std::string& n, std::vector<int64_t> v) { attr(n, pb::AttrType::Ints).ints = std::move(v); return *this; }
  MlNode& attr_floats(const std::string& n, std::vector<float> v) { attr(n, pb::AttrType::Floats).floats = std::move(v); return *this; }
  MlNode& attr_strings(const std::string& n, const std::vector<std::string>& v) {
    auto& a = attr(n, pb::AttrType::Strings);
    for (const auto& s : v) a.strings.push_back(arena_->save(s));
    return *this;
  }
  MlNode& attr_tensor(const std::string& n, const Tensor& t) {
    pb::Tensor p;
    p.data_type = static_cast<int32_t>(t.dtype());
    p.dims = t.dims();
    if (t.dtype() == DataType::String) {
      for (const auto& s : t.string_values()) p.string_data.push_back(arena_->save(s));
    } else {
      p.raw_data = arena_->save(std::string(t.bytes()));
    }
    attr(n, pb::AttrType::Tensor).t = std::move(p);
    return *this;
  }
  MlNode& outputs(int n) {
    num_outputs_ = n;
    return *this;
  }

  std::vector<Datum> run() {
    pb::Model m;
    m.ir_version = 10;
    m.opset_import.push_back({arena_->save(domain_), opset_, {}});
    m.opset_import.push_back({"", 21, {}});
    pb::Graph& g = m.graph.emplace();
    g.name = "one_node";
    pb::Node n;
    n.op_type = arena_->save(op_);
    n.domain = arena_->save(domain_);
    std::map<std::string, Datum> feeds;
    for (auto& in : inputs_) {
      n.input.push_back(arena_->save(in.name));
      pb::ValueInfo& vi = g.input.emplace_back();
      vi.name = arena_->save(in.name);
      vi.type = in.type;
      feeds[in.name] = in.datum;
    }
    for (int i = 0; i < num_outputs_; ++i) {
      std::string name = "out" + std::to_string(i);
      n.output.push_back(arena_->save(name));
      g.output.emplace_back().name = arena_->save(name);
    }
    n.attribute = attrs_;
    g.node.push_back(n);
    Session s = Session::from_bytes(pb::serialize_model(m));
    std::vector<Datum> out;
    for (auto& [name, d] : s.run(feeds)) out.push_back(std::move(d));
    return out;
  }

 private:
  struct In {
    std::string name;
    Datum datum;
    pb::Type type;
  };
  // A new attribute, or a reset one when the name is set again (tests override a base model's attributes).
  pb::Attribute& attr(const std::string& name, pb::AttrType t) {
    pb::Attribute* found = nullptr;
    for (auto& a : attrs_)
      if (a.name && *a.name == name) found = &a;
    pb::Attribute& a = found ? (*found = pb::Attribute{}) : attrs_.emplace_back();
    a.name = arena_->save(name);
    a.type = static_cast<int32_t>(t);
    return a;
  }
  std::string op_, domain_;
  int64_t opset_;
  std::shared_ptr<pb::Arena> arena_ = std::make_shared<pb::Arena>();  // shared: copies keep the views valid
  std::vector<In> inputs_;
  std::vector<pb::Attribute> attrs_;
  int num_outputs_ = 1;
};

// Runs and returns the error message (empty when it ran).
inline std::string error_of(MlNode& n) {
  try {
    n.run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
inline std::string error_of(MlNode&& n) { return error_of(n); }

}  // namespace onyx::testing
