// Builds a one-node model in memory and runs it through the whole session path (check, IR, inference, kernel).
#pragma once
#include <cctype>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "ir/datum.hpp"
#include "ir/model.hpp"
#include "format/onnx_proto.hpp"
#include "onyx/session.hpp"
#include "ops/registry.hpp"

#include <gtest/gtest.h>

namespace onyx::testing {

template <class T>
Tensor make_tensor(DataType dt, std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t = Tensor::allocate(dt, std::move(dims));
  if (values.size() * sizeof(T) != t.bytes().size()) throw Error("make_tensor: value count does not match dims");
  if (!values.empty()) std::memcpy(t.mutable_data<char>(), values.data(), t.bytes().size());
  return t;
}

// What `f` throws as onyx's Error, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Calls f.template operator()<T>() for each of ONNX's integer element types, int8 to uint64.
template <class F>
void for_each_integer_type(F&& f) {
  [&]<class... T>() { (f.template operator()<T>(), ...); }.template operator()<int8_t, int16_t, int32_t, int64_t, uint8_t,
                                                                               uint16_t, uint32_t, uint64_t>();
}

inline Tensor f32(std::vector<int64_t> dims, const std::vector<float>& v) { return make_tensor<float>(DataType::Float, std::move(dims), v); }
inline Tensor i64(std::vector<int64_t> dims, const std::vector<int64_t>& v) { return make_tensor<int64_t>(DataType::Int64, std::move(dims), v); }

template <class T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.element_count());
}

class OneNode {
 public:
  OneNode(std::string op_type, int64_t opset, std::string domain = "") : op_(std::move(op_type)), domain_(std::move(domain)), opset_(opset) {}

  OneNode& input(const std::string& name, Tensor t) {
    inputs_.emplace_back(name, std::move(t));
    return *this;
  }
  // An input held as an initializer (a constant of the model, which fast kernels may prepack).
  OneNode& constant_input(const std::string& name, Tensor t) {
    inputs_.emplace_back(name, std::move(t));
    constants_.insert(name);
    return *this;
  }
  OneNode& options(SessionOptions o) {
    options_ = o;
    return *this;
  }
  OneNode& omitted_input() {
    inputs_.emplace_back("", Tensor{});
    return *this;
  }
  OneNode& attr_int(const std::string& name, int64_t v) {
    auto& a = attr(name, pb::AttrType::Int);
    a.i = v;
    return *this;
  }
  OneNode& attr_float(const std::string& name, float v) {
    auto& a = attr(name, pb::AttrType::Float);
    a.f = v;
    return *this;
  }
  OneNode& attr_string(const std::string& name, const std::string& v) {
    auto& a = attr(name, pb::AttrType::String);
    a.s = arena_->save(v);
    return *this;
  }
  OneNode& attr_ints(const std::string& name, std::vector<int64_t> v) {
    auto& a = attr(name, pb::AttrType::Ints);
    a.ints = std::move(v);
    return *this;
  }
  OneNode& attr_floats(const std::string& name, std::vector<float> v) {
    auto& a = attr(name, pb::AttrType::Floats);
    a.floats = std::move(v);
    return *this;
  }
  OneNode& outputs(int n) {
    num_outputs_ = n;
    return *this;
  }
  // The ai.onnx opset imported beside the node's own domain (when that is not ai.onnx).
  OneNode& onnx_opset(int64_t v) {
    onnx_opset_ = v;
    return *this;
  }

  // Runs the node; returns its outputs in order.
  std::vector<Datum> run() {
    pb::Model m;
    m.ir_version = 10;
    m.opset_import.push_back({arena_->save(domain_), opset_, {}});
    if (!domain_.empty()) m.opset_import.push_back({"", onnx_opset_, {}});
    pb::Graph& g = m.graph.emplace();
    g.name = "one_node";
    pb::Node n;
    n.op_type = arena_->save(op_);
    if (!domain_.empty()) n.domain = arena_->save(domain_);
    std::map<std::string, Datum> feeds;
    for (auto& [name, t] : inputs_) {
      n.input.push_back(arena_->save(name));
      if (name.empty()) continue;
      if (constants_.count(name)) {
        pb::Tensor& init = g.initializer.emplace_back();
        init.name = arena_->save(name);
        init.data_type = static_cast<int32_t>(t.dtype());
        init.dims = t.dims();
        init.raw_data = arena_->save(std::string(t.bytes()));
        continue;
      }
      pb::ValueInfo& vi = g.input.emplace_back();
      vi.name = arena_->save(name);
      auto& tt = vi.type.emplace().tensor_type.emplace();
      tt.elem_type = static_cast<int32_t>(t.dtype());
      auto& shape = tt.shape.emplace();
      for (int64_t d : t.dims()) shape.dim.emplace_back().dim_value = d;
      feeds[name] = Datum::of(t);
    }
    for (int i = 0; i < num_outputs_; ++i) {
      std::string name = "out" + std::to_string(i);
      n.output.push_back(arena_->save(name));
      g.output.emplace_back().name = arena_->save(name);
    }
    n.attribute = attrs_;
    g.node.push_back(n);
    Session s = Session::from_bytes(pb::serialize_model(m), options_);
    std::vector<Datum> out;
    for (auto& [name, d] : s.run(feeds)) out.push_back(std::move(d));
    expect_inferred_as_computed(s, out);
    return out;
  }

 private:
  // What the session inferred for each output (element type, rank, known dims) must be what the kernel made:
  // every op test checks its op's inference too.
  void expect_inferred_as_computed(const Session& s, const std::vector<Datum>& out) const {
    const Graph& g = *s.model().graph;
    for (size_t i = 0; i < out.size() && i < g.outputs.size(); ++i) {
      const Type& t = g.outputs[i]->type;
      const Datum& d = out[i];
      const std::string what = op_ + " output " + std::to_string(i) + ": inferred " + t.to_string_with_shape();
      if (t.kind == Type::Kind::Unknown) continue;
      if (d.kind != Datum::Kind::Tensor) {
        EXPECT_NE(t.kind, Type::Kind::Tensor) << what << ", computed a non-tensor";
        continue;
      }
      if (t.kind != Type::Kind::Tensor) {
        ADD_FAILURE() << what << ", computed a tensor";
        continue;
      }
      if (t.elem != DataType::Undefined) {
        EXPECT_EQ(t.elem, d.tensor.dtype()) << what;
      }
      if (!t.shape.rank_known) continue;
      const std::vector<int64_t>& dims = d.tensor.dims();
      if (t.shape.dims.size() != dims.size()) {
        ADD_FAILURE() << what << ", computed rank " << dims.size();
        continue;
      }
      for (size_t k = 0; k < dims.size(); ++k) {
        if (t.shape.dims[k].value) {
          EXPECT_EQ(*t.shape.dims[k].value, dims[k]) << what << ", dim " << k;
        }
      }
    }
  }

  pb::Attribute& attr(const std::string& name, pb::AttrType t) {
    pb::Attribute& a = attrs_.emplace_back();
    a.name = arena_->save(name);
    a.type = static_cast<int32_t>(t);
    return a;
  }
  std::string op_, domain_;
  int64_t opset_;
  std::shared_ptr<pb::Arena> arena_ = std::make_shared<pb::Arena>();  // shared: copies keep the views valid
  std::vector<std::pair<std::string, Tensor>> inputs_;
  std::vector<pb::Attribute> attrs_;
  std::set<std::string> constants_;
  SessionOptions options_;
  int num_outputs_ = 1;
  int64_t onnx_opset_ = 21;
};

// Helpers shared by the op tests.

template <class T>
std::vector<T> values(const Datum& d) {
  const Tensor& t = d.tensor;
  return std::vector<T>(t.data<T>(), t.data<T>() + t.element_count());
}

inline void expect_error(OneNode node, const std::string& text) {
  try {
    node.run();
    ADD_FAILURE() << "expected an error containing: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// Runs an op's inference directly on the given input types and constant values.
inline std::vector<Type> infer(const std::string& op, int opset, std::vector<Type> types, std::vector<const Tensor*> vals, size_t nout,
                        std::vector<std::pair<std::string, int64_t>> int_attrs = {}) {
  Node n;
  n.op_type = op;
  for (const auto& [name, v] : int_attrs) {
    Attribute& a = n.attributes.emplace_back();
    a.name = name;
    a.type = AttributeType::Int;
    a.i = v;
  }
  const ops::OpDef& def = ops::builtin_registry().resolve(n, opset);
  std::vector<const Type*> tp;
  for (const Type& t : types) tp.push_back(&t);
  vals.resize(types.size(), nullptr);
  ops::InferContext ic{n, opset, ops::AttributeView(n), tp, vals, std::vector<Type>(nout), std::vector<std::optional<Tensor>>(nout), {}, {}};
  def.infer(ic);
  return ic.output_types;
}

inline Shape sym_shape(std::vector<std::string> dims) {  // "N" -> symbol, "?" -> unknown, digits -> value
  Shape s;
  s.rank_known = true;
  for (const std::string& d : dims) {
    Dim x;
    if (d == "?") {
    } else if (std::isdigit(static_cast<unsigned char>(d[0]))) {
      x.value = std::stoll(d);
    } else {
      x.param = d;
    }
    s.dims.push_back(x);
  }
  return s;
}

}  // namespace onyx::testing
