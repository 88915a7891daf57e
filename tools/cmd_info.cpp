// onyx info MODEL: what a model is, at a glance.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "base/error.hpp"
#include "cli.hpp"
#include "ir/model.hpp"
#include "check/load_model.hpp"

namespace onyx::cli {

const char* const kInfoUsage =
    "usage: onyx info MODEL\n"
    "\n"
    "Prints the producer, IR version and opset imports, the graph's inputs and outputs with their types and\n"
    "shapes, a histogram of operators (subgraphs included), the parameter count and bytes of the initializers,\n"
    "and the external data files the model uses. The model is checked first.\n";

namespace {

struct Totals {
  std::map<std::string, size_t> ops;
  uint64_t params = 0, bytes = 0, tensors = 0, nodes = 0, subgraphs = 0;
};

void count(const Graph& g, Totals& t) {
  for (const auto& [name, tensor] : g.initializers) {
    ++t.tensors;
    t.params += tensor.element_count();
    if (tensor.dtype() == DataType::String) {
      for (const auto& s : tensor.string_values()) t.bytes += s.size();
    } else {
      t.bytes += tensor.bytes().size();
    }
  }
  for (const auto& n : g.nodes) {
    ++t.nodes;
    t.ops[n->domain.empty() ? n->op_type : n->domain + "." + n->op_type]++;
    for (const auto& a : n->attributes) {
      if (a.g) {
        ++t.subgraphs;
        count(*a.g, t);
      }
      for (const auto& sg : a.graphs) {
        ++t.subgraphs;
        count(*sg, t);
      }
    }
  }
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

void print_values(const char* title, const std::vector<Value*>& values) {
  std::cout << title << " (" << values.size() << "):\n";
  for (const Value* v : values) std::cout << "  " << v->name << ": " << v->type.to_string_with_shape() << "\n";
}

}  // namespace

int cmd_info(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  if (print_help_if_asked(args, kInfoUsage)) return 0;
  expect_positional(args, 1, 1, kInfoUsage);
  Model m = load_model(args.positional()[0]);
  std::cout << "model:      " << m.label << "\n";
  std::cout << "producer:   " << (m.producer_name.empty() ? "(none)" : m.producer_name)
            << (m.producer_version.empty() ? "" : " " + m.producer_version) << "\n";
  std::cout << "ir_version: " << m.ir_version << "\n";
  std::cout << "opsets:     ";
  bool first = true;
  for (const auto& [d, v] : m.opset_imports) {
    std::cout << (first ? "" : ", ") << (d.empty() ? "ai.onnx" : d) << " " << v;
    first = false;
  }
  std::cout << "\n";
  if (!m.domain.empty()) std::cout << "domain:     " << m.domain << "\n";
  if (m.model_version) std::cout << "version:    " << m.model_version << "\n";
  for (const auto& [k, v] : m.metadata) std::cout << "metadata:   " << k << " = " << v << "\n";

  // Initializers that are also listed as inputs are parameters, not inputs a user feeds.
  std::vector<Value*> inputs;
  for (Value* v : m.graph->inputs)
    if (!v->initializer) inputs.push_back(v);
  print_values("inputs", inputs);
  print_values("outputs", m.graph->outputs);

  Totals t;
  count(*m.graph, t);
  std::cout << "nodes:      " << t.nodes << (t.subgraphs ? cat(" (with ", t.subgraphs, " subgraphs)") : "") << "\n";
  std::vector<std::pair<std::string, size_t>> ops(t.ops.begin(), t.ops.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::cout << "operators (" << ops.size() << "):\n";
  for (const auto& [op, n] : ops) std::printf("  %6zu  %s\n", n, op.c_str());
  std::cout << "parameters: " << t.params << " in " << t.tensors << " initializers, " << human_bytes(t.bytes) << " ("
            << t.bytes << " bytes)\n";
  if (!m.functions.empty()) {
    std::cout << "functions (" << m.functions.size() << "):\n";
    for (const auto& f : m.functions) std::cout << "  " << f.domain << "." << f.name << "\n";
  }
  std::cout << "external data files (" << m.external_files.size() << ")" << (m.external_files.empty() ? "" : ":") << "\n";
  for (const auto& f : m.external_files) std::cout << "  " << f << "\n";
  return 0;
}

}  // namespace onyx::cli
