// Writes the model the C API test runs (argument: the output path), with onyx's own writer. Built with the tests
// and run by ctest before c_api_test, so the C test needs no external data and the tree holds no binary blob.
//
// Inputs:  X float[N,3], B float[3] (initializer {0.5,0.5,0.5}, so optional), S string[K], M int64 with no declared
//          shape (unknown rank; a scalar at run time), I int64 scalar (initializer 0, optional)
// Outputs: Y = X * 2 + B           float[N,3]
//          Xcopy = Identity(X)     float[N,3]   (an output sharing the caller's input buffer inside the run)
//          Upper = StringNormalizer(S, UPPER)   string[?]  (a dim that is neither fixed nor named)
//          Count = Loop(M) { v + 1 } from 0     int64 scalar; runs M iterations, so a huge M runs until the
//                                               caller terminates it
//          Picked = Gather(B, I)   float scalar (I out of range is a run-time error)
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "format/onnx_proto.hpp"
#include "format/save.hpp"
#include "base/dtype.hpp"

namespace {

using namespace onyx;
using Dims = std::vector<std::variant<int64_t, const char*, std::monostate>>;

pb::ValueInfo value(const char* name, DataType dt, std::optional<Dims> dims) {
  pb::ValueInfo v;
  v.name = name;
  auto& tt = v.type.emplace().tensor_type.emplace();
  tt.elem_type = static_cast<int32_t>(dt);
  if (!dims) return v;
  auto& shape = tt.shape.emplace();
  for (const auto& d : *dims) {
    pb::Dimension& dim = shape.dim.emplace_back();
    if (auto* n = std::get_if<int64_t>(&d)) dim.dim_value = *n;
    if (auto* s = std::get_if<const char*>(&d)) dim.dim_param = *s;
  }
  return v;
}

template <class T>
pb::Tensor initializer(pb::Arena& arena, const char* name, DataType dt, std::vector<int64_t> dims,
                       const std::vector<T>& values) {
  pb::Tensor t;
  t.name = name;
  t.data_type = static_cast<int32_t>(dt);
  t.dims = std::move(dims);
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  t.raw_data = arena.save(std::move(bytes));
  return t;
}

pb::Node node(const char* op, std::vector<pb::Str> in, std::vector<pb::Str> out) {
  pb::Node n;
  n.op_type = op;
  n.input = std::move(in);
  n.output = std::move(out);
  return n;
}

pb::ModelDocument make_model() {
  pb::ModelDocument doc;
  doc.label = "capi_test";
  pb::Arena& arena = *doc.arena;
  pb::Model& m = doc.model;
  m.ir_version = 10;
  m.producer_name = "onyx tests/capi/make_capi_model";
  m.opset_import.push_back({"", 21, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "capi_test";

  g.input.push_back(value("X", DataType::Float, Dims{"N", int64_t{3}}));
  g.input.push_back(value("B", DataType::Float, Dims{int64_t{3}}));
  g.input.push_back(value("S", DataType::String, Dims{"K"}));
  g.input.push_back(value("M", DataType::Int64, std::nullopt));
  g.input.push_back(value("I", DataType::Int64, Dims{}));
  g.initializer.push_back(initializer<float>(arena, "B", DataType::Float, {3}, {0.5f, 0.5f, 0.5f}));
  g.initializer.push_back(initializer<int64_t>(arena, "I", DataType::Int64, {}, {0}));
  g.initializer.push_back(initializer<float>(arena, "Two", DataType::Float, {}, {2.0f}));
  g.initializer.push_back(initializer<int64_t>(arena, "Zero", DataType::Int64, {}, {0}));
  g.initializer.push_back(initializer<int64_t>(arena, "One", DataType::Int64, {}, {1}));

  g.node.push_back(node("Mul", {"X", "Two"}, {"X2"}));
  g.node.push_back(node("Add", {"X2", "B"}, {"Y"}));
  g.node.push_back(node("Identity", {"X"}, {"Xcopy"}));
  pb::Node upper = node("StringNormalizer", {"S"}, {"Upper"});
  pb::Attribute& action = upper.attribute.emplace_back();
  action.name = "case_change_action";
  action.type = static_cast<int32_t>(pb::AttrType::String);
  action.s = "UPPER";
  g.node.push_back(upper);

  pb::Graph body;
  body.name = "count_body";
  body.input.push_back(value("iter", DataType::Int64, Dims{}));
  body.input.push_back(value("cond_in", DataType::Bool, Dims{}));
  body.input.push_back(value("v_in", DataType::Int64, Dims{}));
  body.output.push_back(value("cond_out", DataType::Bool, Dims{}));
  body.output.push_back(value("v_out", DataType::Int64, Dims{}));
  body.node.push_back(node("Identity", {"cond_in"}, {"cond_out"}));
  body.node.push_back(node("Add", {"v_in", "One"}, {"v_out"}));
  pb::Node loop = node("Loop", {"M", "", "Zero"}, {"Count"});
  pb::Attribute& body_attr = loop.attribute.emplace_back();
  body_attr.name = "body";
  body_attr.type = static_cast<int32_t>(pb::AttrType::Graph);
  body_attr.g.emplace() = std::move(body);
  g.node.push_back(std::move(loop));

  pb::Node gather = node("Gather", {"B", "I"}, {"Picked"});
  g.node.push_back(gather);

  g.output.push_back(value("Y", DataType::Float, Dims{"N", int64_t{3}}));
  g.output.push_back(value("Xcopy", DataType::Float, Dims{"N", int64_t{3}}));
  g.output.push_back(value("Upper", DataType::String, Dims{std::monostate{}}));
  g.output.push_back(value("Count", DataType::Int64, Dims{}));
  g.output.push_back(value("Picked", DataType::Float, Dims{}));
  return doc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: onyx_capi_model OUT.onnx\n";
    return 2;
  }
  try {
    save_model(make_model(), argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "onyx_capi_model: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
