// Builds small models with subgraphs in memory (for control-flow and sequence op tests): typed graph inputs and
// outputs, nodes with int/ints/graph/type attributes, and a runner that feeds any Datum (tensors, sequences,
// optionals).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/datum.hpp"
#include "format/onnx_proto.hpp"
#include "onyx/session.hpp"
#include "op_test_util.hpp"

namespace onyx::testing {

class ModelBuilder {
 public:
  pb::Arena arena;

  pb::Type tensor_t(DataType dt, std::optional<std::vector<int64_t>> dims = std::nullopt) {
    pb::Type t;
    auto& tt = t.tensor_type.emplace();
    tt.elem_type = static_cast<int32_t>(dt);
    if (dims) {
      auto& s = tt.shape.emplace();
      for (int64_t d : *dims) s.dim.emplace_back().dim_value = d;
    }
    return t;
  }
  pb::Type seq_t(pb::Type elem) {
    pb::Type t;
    t.sequence_type.emplace().elem_type.emplace() = std::move(elem);
    return t;
  }
  pb::Type opt_t(pb::Type elem) {
    pb::Type t;
    t.optional_type.emplace().elem_type.emplace() = std::move(elem);
    return t;
  }

  void input(pb::Graph& g, const std::string& name, std::optional<pb::Type> t) {
    pb::ValueInfo& vi = g.input.emplace_back();
    vi.name = arena.save(name);
    if (t) vi.type = std::move(*t);
  }
  void output(pb::Graph& g, const std::string& name, std::optional<pb::Type> t = std::nullopt) {
    pb::ValueInfo& vi = g.output.emplace_back();
    vi.name = arena.save(name);
    if (t) vi.type = std::move(*t);
  }
  pb::Node& node(pb::Graph& g, const std::string& op, const std::vector<std::string>& ins,
                 const std::vector<std::string>& outs) {
    pb::Node& n = g.node.emplace_back();
    n.op_type = arena.save(op);
    for (const auto& s : ins) n.input.push_back(arena.save(s));
    for (const auto& s : outs) n.output.push_back(arena.save(s));
    return n;
  }
  pb::Attribute& attr(pb::Node& n, const std::string& name, pb::AttrType t) {
    pb::Attribute& a = n.attribute.emplace_back();
    a.name = arena.save(name);
    a.type = static_cast<int32_t>(t);
    return a;
  }
  void attr_int(pb::Node& n, const std::string& name, int64_t v) { attr(n, name, pb::AttrType::Int).i = v; }
  void attr_ints(pb::Node& n, const std::string& name, std::vector<int64_t> v) {
    attr(n, name, pb::AttrType::Ints).ints = std::move(v);
  }
  void attr_graph(pb::Node& n, const std::string& name, pb::Graph g) {
    g.name = arena.save(name + "_graph");
    attr(n, name, pb::AttrType::Graph).g.emplace() = std::move(g);
  }
  void attr_type(pb::Node& n, const std::string& name, pb::Type t) {
    attr(n, name, pb::AttrType::TypeProto).tp = std::move(t);
  }

  // Runs `main` at `opset` of ai.onnx with the given feeds; returns the outputs in order.
  std::vector<Datum> run(pb::Graph main, int64_t opset, const std::map<std::string, Datum>& feeds) {
    Session s = session(std::move(main), opset);
    std::vector<Datum> out;
    for (auto& [name, d] : s.run(feeds)) out.push_back(std::move(d));
    return out;
  }
  Session session(pb::Graph main, int64_t opset, const SessionOptions& options = {}) {
    pb::Model m;
    m.ir_version = 10;
    m.opset_import.push_back({arena.save(""), opset, {}});
    main.name = arena.save("main");
    m.graph = std::move(main);
    return Session::from_bytes(pb::serialize_model(m), options);
  }
};

}  // namespace onyx::testing
