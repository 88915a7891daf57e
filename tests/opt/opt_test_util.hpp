// Helpers for the optimizer tests: a compact builder of small models, loading them into the IR, running the
// optimizer, describing the graph, and comparing session outputs at optimization levels 0 and 2 on random inputs.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "check/checker.hpp"
#include "exec/datum_io.hpp"
#include "format/onnx_proto.hpp"
#include "format/model_write.hpp"
#include "onyx/session.hpp"
#include "opt/optimizer.hpp"
#include "format/model_read.hpp"

namespace onyx::testing {

// An attribute for GraphSpec::node: int, float, string, ints or floats.
struct Attr {
  std::string name;
  std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>> value;
  Attr(std::string n, int64_t v) : name(std::move(n)), value(v) {}
  Attr(std::string n, int v) : name(std::move(n)), value(int64_t{v}) {}
  Attr(std::string n, float v) : name(std::move(n)), value(v) {}
  Attr(std::string n, double v) : name(std::move(n)), value(static_cast<float>(v)) {}
  Attr(std::string n, const char* v) : name(std::move(n)), value(std::string(v)) {}
  Attr(std::string n, std::vector<int64_t> v) : name(std::move(n)), value(std::move(v)) {}
  Attr(std::string n, std::vector<float> v) : name(std::move(n)), value(std::move(v)) {}
};

// A model of one graph, built step by step. Dims < 0 are symbolic: -1 is "N", -2 "N2", and so on.
class GraphSpec {
 public:
  explicit GraphSpec(int64_t opset) { m_.opset_import.push_back({"", opset, {}}); }

  GraphSpec& input(const std::string& name, DataType dt, const std::vector<int64_t>& dims) {
    pb::ValueInfo& vi = g_.input.emplace_back();
    vi.name = s(name);
    vi.type = type(dt, dims);
    return *this;
  }
  GraphSpec& output(const std::string& name) {
    g_.output.emplace_back().name = s(name);
    return *this;
  }
  GraphSpec& output(const std::string& name, DataType dt, const std::vector<int64_t>& dims) {
    pb::ValueInfo& vi = g_.output.emplace_back();
    vi.name = s(name);
    vi.type = type(dt, dims);
    return *this;
  }
  template <class T>
  GraphSpec& init(const std::string& name, DataType dt, const std::vector<int64_t>& dims, const std::vector<T>& values) {
    pb::Tensor& t = g_.initializer.emplace_back();
    t.name = s(name);
    t.data_type = static_cast<int32_t>(dt);
    t.dims = dims;
    std::string raw(values.size() * sizeof(T), '\0');
    if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    t.raw_data = s(raw);
    return *this;
  }
  GraphSpec& floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    return init(name, DataType::Float, dims, v);
  }
  GraphSpec& ints(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
    return init(name, DataType::Int64, dims, v);
  }
  // A float initializer of `dims` with deterministic pseudo-random values in [lo, hi).
  GraphSpec& random(const std::string& name, const std::vector<int64_t>& dims, float lo = -1, float hi = 1) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = std::uniform_real_distribution<float>(lo, hi)(rng_);
    return floats(name, dims, v);
  }
  GraphSpec& node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                  const std::vector<Attr>& attrs = {}, const std::string& domain = "") {
    pb::Node& n = g_.node.emplace_back();
    n.op_type = s(op);
    if (!domain.empty()) n.domain = s(domain);
    for (const auto& x : ins) n.input.push_back(s(x));
    for (const auto& x : outs) n.output.push_back(s(x));
    for (const Attr& a : attrs) {
      pb::Attribute& pa = n.attribute.emplace_back();
      pa.name = s(a.name);
      if (auto* i = std::get_if<int64_t>(&a.value)) pa.type = 2, pa.i = *i;
      if (auto* f = std::get_if<float>(&a.value)) pa.type = 1, pa.f = *f;
      if (auto* t = std::get_if<std::string>(&a.value)) pa.type = 3, pa.s = s(*t);
      if (auto* is = std::get_if<std::vector<int64_t>>(&a.value)) pa.type = 7, pa.ints = *is;
      if (auto* fs = std::get_if<std::vector<float>>(&a.value)) pa.type = 6, pa.floats = *fs;
    }
    return *this;
  }
  // Adds a graph attribute to the last node; `body` must outlive this spec's use (its strings are its own).
  GraphSpec& graph_attr(const std::string& name, const GraphSpec& body) {
    pb::Attribute& pa = g_.node.back().attribute.emplace_back();
    pa.name = s(name);
    pa.type = 5;
    pa.g.emplace() = body.g_;
    pa.g->name = s(name);
    return *this;
  }
  GraphSpec& import(const std::string& domain, int64_t version) {
    m_.opset_import.push_back({s(domain), version, {}});
    return *this;
  }
  pb::Graph& graph() { return g_; }
  pb::Arena& arena() { return arena_; }

  GraphSpec& ir_version(int64_t v) {
    ir_version_ = v;
    return *this;
  }

  std::string bytes() const {
    pb::Model m = m_;
    m.ir_version = ir_version_;
    m.graph = g_;
    m.graph->name = "main";
    return pb::serialize_model(m);
  }

 private:
  pb::Str s(const std::string& x) { return arena_.save(x); }
  pb::Type type(DataType dt, const std::vector<int64_t>& dims) {
    pb::Type t;
    auto& tt = t.tensor_type.emplace();
    tt.elem_type = static_cast<int32_t>(dt);
    auto& shape = tt.shape.emplace();
    for (int64_t d : dims) {
      if (d >= 0) shape.dim.emplace_back().dim_value = d;
      else shape.dim.emplace_back().dim_param = s(d == -1 ? std::string("N") : "N" + std::to_string(-d));
    }
    return t;
  }
  pb::Arena arena_;
  pb::Model m_;
  pb::Graph g_;
  std::mt19937 rng_{1234};
  int64_t ir_version_ = 10;
};

// Checks and builds a model (its tensors view the bytes, which the model keeps).
inline Model load_ir(const std::string& bytes) {
  pb::ModelDocument doc = pb::load_model_bytes(bytes, "test.onnx");
  check::check_model_or_throw(doc);
  return build_model(doc);
}

inline opt::OptimizeReport optimize_ir(Model& m, int level, uint64_t fold_limit = uint64_t{16} << 20) {
  opt::OptimizeOptions o;
  o.level = level;
  o.fold_limit_bytes = fold_limit;
  opt::OptimizeReport r = opt::optimize(m, o);
  std::string problem = opt::verify_graph(*m.graph);
  EXPECT_EQ(problem, "") << "graph inconsistent after optimization";
  return r;
}

// The node ops in order: "Add", "ai.onyx.FusedConv", ...
inline std::vector<std::string> op_list(const Model& m) {
  std::vector<std::string> r;
  for (const auto& n : m.graph->nodes) r.push_back(n->domain.empty() ? n->op_type : n->domain + "." + n->op_type);
  return r;
}

inline std::string serialize_ir(const Model& m) { return pb::serialize_model(model_to_document(m).model); }

// Optimizes `bytes` at `level`, writes it, loads and checks it again, and optimizes that once more: the second
// run must change nothing. Returns the optimized model's bytes.
inline std::string expect_idempotent(const std::string& bytes, int level) {
  Model m = load_ir(bytes);
  optimize_ir(m, level);
  std::string once = serialize_ir(m);
  Model again = load_ir(once);  // the checker accepts the written model
  std::string before = serialize_ir(again);
  opt::OptimizeReport r = optimize_ir(again, level);
  EXPECT_TRUE(r.applied.empty()) << "a second run changed the graph again (" << r.applied.front().first << ")";
  EXPECT_EQ(serialize_ir(again), before);
  return once;
}

// Random feeds for a session's inputs (symbolic dims taken as `symbolic`), floats in [-2, 2).
inline std::map<std::string, Datum> random_feeds(const Session& s, uint32_t seed = 7, int64_t symbolic = 2) {
  std::mt19937 rng(seed);
  std::map<std::string, Datum> feeds;
  for (const IoInfo& in : s.inputs()) {
    std::vector<int64_t> dims;
    for (const Dim& d : in.type.shape.dims) dims.push_back(d.value.value_or(symbolic));
    Tensor t = Tensor::allocate(in.type.elem, dims);
    for (uint64_t i = 0; i < t.element_count(); ++i) {
      const float x = std::uniform_real_distribution<float>(-2, 2)(rng);
      if (in.type.elem == DataType::Float) t.mutable_data<float>()[i] = x;
      else if (in.type.elem == DataType::Double) t.mutable_data<double>()[i] = x;
      else if (in.type.elem == DataType::Int64) t.mutable_data<int64_t>()[i] = static_cast<int64_t>(x * 3);
      else if (in.type.elem == DataType::Float16) t.mutable_data<uint16_t>()[i] = float_to_half(x);
      else ADD_FAILURE() << "random_feeds: no generator for " << in.type.elem;
    }
    feeds[in.name] = Datum::of(std::move(t));
  }
  return feeds;
}

inline Session session_at(const std::string& bytes, int level) {
  SessionOptions o;
  o.optimization_level = level;
  return Session::from_bytes(bytes, o);
}

// Session outputs at level 0 and at levels 1, 2 and 3 agree on random inputs (a relative tolerance for fused
// math, which may round differently).
inline void expect_same_outputs(const std::string& bytes, double rtol = 1e-4, double atol = 1e-5) {
  Session plain = session_at(bytes, 0);
  for (int level : {1, 2, 3}) {
    Session opt = session_at(bytes, level);
    for (uint32_t seed : {1u, 2u}) {
      auto feeds = random_feeds(plain, seed);
      auto want = plain.run(feeds);
      auto got = opt.run(feeds);
      ASSERT_EQ(want.size(), got.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(want[i].first, got[i].first);
        auto diff = compare_datums(want[i].second, got[i].second, rtol, atol);
        EXPECT_FALSE(diff) << "level " << level << ", output '" << want[i].first << "': " << diff.value_or("");
      }
    }
  }
}

}  // namespace onyx::testing
