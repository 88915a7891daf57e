// onyx demo [OUT]: writes the project's own small model (a two-layer classifier with deterministic weights),
// then shows it the way `info`, `check` and `print` would.
#include <cmath>
#include <cstring>
#include <iostream>
#include <variant>

#include "check/checker.hpp"
#include "cli.hpp"
#include "format/onnx_proto.hpp"
#include "format/save.hpp"
#include "format/text_printer.hpp"
#include "base/dtype.hpp"

namespace onyx::cli {

const char* const kDemoUsage =
    "usage: onyx demo [OUT]\n"
    "\n"
    "Writes a small built-in model (default: onyx_demo.onnx): X[N,16] -> MatMul+Add -> Relu -> MatMul+Add -> Softmax,\n"
    "with deterministic weights; then checks it, summarizes it, prints it in the ONNX textual syntax, and runs it\n"
    "on arange inputs (N=2).\n";

namespace {

pb::Tensor weights(pb::Arena& arena, const char* name, std::vector<int64_t> dims, int seed) {
  pb::Tensor t;
  t.name = name;
  t.dims = dims;
  t.data_type = static_cast<int32_t>(DataType::Float);
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  std::string bytes(n * sizeof(float), '\0');
  for (size_t i = 0; i < n; ++i) {
    float v = 0.5f * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + seed));  // deterministic, no RNG
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof v);
  }
  t.raw_data = arena.save(std::move(bytes));
  return t;
}

pb::ValueInfo tensor_value(const char* name, std::vector<std::variant<int64_t, const char*>> dims) {
  pb::ValueInfo v;
  v.name = name;
  auto& tt = v.type.emplace().tensor_type.emplace();
  tt.elem_type = static_cast<int32_t>(DataType::Float);
  auto& shape = tt.shape.emplace();
  for (auto d : dims) {
    pb::Dimension& dim = shape.dim.emplace_back();
    if (auto* v = std::get_if<int64_t>(&d))
      dim.dim_value = *v;
    else
      dim.dim_param = std::get<const char*>(d);
  }
  return v;
}

pb::Node node(const char* op, std::vector<pb::Str> in, std::vector<pb::Str> out) {
  pb::Node n;
  n.op_type = op;
  n.input = std::move(in);
  n.output = std::move(out);
  return n;
}

}  // namespace

pb::ModelDocument make_demo_model() {
  pb::ModelDocument doc;
  doc.label = "onyx demo";
  pb::Model& m = doc.model;
  m.ir_version = 10;
  m.producer_name = "onyx";
  m.producer_version = "0.1.0";
  m.opset_import.push_back({"", 21, {}});
  pb::Graph& g = m.graph.emplace();
  g.name = "demo_classifier";
  g.input.push_back(tensor_value("X", {"N", int64_t{16}}));
  g.output.push_back(tensor_value("probabilities", {"N", int64_t{10}}));
  g.initializer.push_back(weights(*doc.arena, "W1", {16, 32}, 1));
  g.initializer.push_back(weights(*doc.arena, "B1", {32}, 2));
  g.initializer.push_back(weights(*doc.arena, "W2", {32, 10}, 3));
  g.initializer.push_back(weights(*doc.arena, "B2", {10}, 4));
  g.node.push_back(node("MatMul", {"X", "W1"}, {"h0"}));
  g.node.push_back(node("Add", {"h0", "B1"}, {"h1"}));
  g.node.push_back(node("Relu", {"h1"}, {"h2"}));
  g.node.push_back(node("MatMul", {"h2", "W2"}, {"h3"}));
  g.node.push_back(node("Add", {"h3", "B2"}, {"logits"}));
  pb::Node softmax = node("Softmax", {"logits"}, {"probabilities"});
  pb::Attribute& axis = softmax.attribute.emplace_back();
  axis.name = "axis";
  axis.type = static_cast<int32_t>(pb::AttrType::Int);
  axis.i = -1;
  g.node.push_back(softmax);
  return doc;
}

int cmd_demo(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  if (print_help_if_asked(args, kDemoUsage)) return 0;
  expect_positional(args, 0, 1, kDemoUsage);
  std::string out = args.positional().empty() ? "onyx_demo.onnx" : args.positional()[0];
  save_model(make_demo_model(), out);
  std::cout << "wrote " << out << "\n\n";
  int rc = cmd_check({out});
  if (rc != 0) return rc;
  std::cout << "\n";
  rc = cmd_info({out});
  if (rc != 0) return rc;
  std::cout << "\n";
  rc = cmd_print({out});
  if (rc != 0) return rc;
  std::cout << "\n\n";
  return cmd_run({out, "--dummy", "--dim", "N=2"});
}

}  // namespace onyx::cli
