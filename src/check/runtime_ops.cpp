#include "check/runtime_ops.hpp"

#include <cstdio>
#include <map>
#include <optional>
#include <unordered_set>

#include "base/error.hpp"
#include "check/topological_order.hpp"
#include "ir/spec_table.hpp"

namespace onyx::check {
namespace {

using pb::Str;

constexpr Str kOnyx = "ai.onyx";

struct Move {
  Str op_type;       // as ONNX Runtime reads it in the ONNX domain
  int onnx_since;    // the ONNX version that defines it (0: never): below it, the node is moved
  Str onyx_op_type;  // the ai.onyx op of the same meaning
  size_t max_outputs;  // outputs the ai.onyx op has (a node using more stays, for the checker to report)
};

constexpr Move kMoves[] = {
    {"LayerNormalization", 17, "LayerNormalization", 3},
    // Its optional second output (the inverse standard deviation) is not RMSNormalization's.
    {"SimplifiedLayerNormalization", 0, "RMSNormalization", 1},
};

class Mover {
 public:
  Mover(std::optional<int64_t> onnx_opset, std::vector<std::string>& notes) : opset_(onnx_opset), notes_(notes) {}

  void graph(pb::Graph& g, const std::string& where) {
    std::map<Str, size_t> moved;
    for (size_t k = 0; k < g.node.size(); ++k) {
      pb::Node& n = g.node[k];
      for (pb::Attribute& a : n.attribute) {
        if (!a.g && a.graphs.empty()) continue;
        const std::string inner = cat(where, " > node '", n.name.value_or(""), "' attribute '", a.name.value_or(""), "'");
        if (a.g) graph(*a.g, inner);
        for (pb::Graph& sg : a.graphs) graph(sg, inner);
      }
      if (!opset_ || spec::canonical_domain(n.domain.value_or("")) != "ai.onnx") continue;
      for (const Move& m : kMoves) {
        if (n.op_type.value_or("") != m.op_type || (m.onnx_since && *opset_ >= m.onnx_since)) continue;
        size_t outputs = 0;
        for (size_t i = 0; i < n.output.size(); ++i)
          if (!n.output[i].empty()) outputs = i + 1;
        if (outputs > m.max_outputs) continue;
        n.domain = kOnyx;
        n.op_type = m.onyx_op_type;
        ++moved[m.op_type];
      }
    }
    for (const auto& [op, count] : moved)
      notes_.push_back(cat(where, ": ", count, " ", op, " node", count == 1 ? "" : "s",
                           " of ONNX Runtime's ops in the ONNX domain (not an ONNX op at opset ", *opset_,
                           ") run as ai.onyx.", op == "LayerNormalization" ? "LayerNormalization" : "RMSNormalization"));
    any_ = any_ || !moved.empty();
  }

  bool any() const { return any_; }

 private:
  std::optional<int64_t> opset_;
  std::vector<std::string>& notes_;
  bool any_ = false;
};

}  // namespace

std::vector<std::string> move_runtime_ops(pb::ModelDocument& doc) {
  std::vector<std::string> notes;
  if (!doc.model.graph) return notes;
  std::optional<int64_t> onnx_opset;
  bool onyx_imported = false;
  for (const pb::OperatorSetId& imp : doc.model.opset_import) {
    const Str d = spec::canonical_domain(imp.domain.value_or(""));
    if (d == "ai.onnx" && imp.version) onnx_opset = *imp.version;
    if (d == kOnyx) onyx_imported = true;
  }
  Mover mover(onnx_opset, notes);
  mover.graph(*doc.model.graph, doc.label.empty() ? "main graph" : doc.label);
  if (mover.any() && !onyx_imported) {
    pb::OperatorSetId imp;
    imp.domain = kOnyx;
    imp.version = 1;
    doc.model.opset_import.push_back(std::move(imp));
  }
  return notes;
}

namespace {

// Calls f(graph, where) on `g` and every graph nested in its nodes' attributes.
template <class F>
void for_each_graph(pb::Graph& g, const std::string& where, const F& f) {
  f(g, where);
  for (pb::Node& n : g.node)
    for (pb::Attribute& a : n.attribute) {
      const std::string inner = cat(where, " > node '", n.name.value_or(""), "' attribute '", a.name.value_or(""), "'");
      if (a.g) for_each_graph(*a.g, inner, f);
      for (pb::Graph& sg : a.graphs) for_each_graph(sg, inner, f);
    }
}

// Renames the `value` of Constant nodes that holds a sparse tensor to sparse_value, adding a problem for each to
// `problems` (`where` names the graph); returns how many.
size_t rename_sparse_constant_values(std::vector<pb::Node>& nodes, const std::string& where,
                                     std::vector<std::string>& problems) {
  size_t renamed = 0;
  for (size_t k = 0; k < nodes.size(); ++k) {
    pb::Node& n = nodes[k];
    if (n.op_type.value_or("") != "Constant" || spec::canonical_domain(n.domain.value_or("")) != "ai.onnx") continue;
    for (pb::Attribute& a : n.attribute) {
      if (a.name.value_or("") != "value" || !a.sparse_tensor || a.t) continue;
      const std::string node = n.name && !n.name->empty() ? cat("'", *n.name, "'") : cat("#", k);
      problems.push_back(cat(where, ": node ", node, " (Constant): attribute 'value' is sparse_tensor, expected tensor"));
      a.name = "sparse_value";
      a.type = static_cast<int32_t>(pb::AttrType::SparseTensor);
      ++renamed;
    }
  }
  return renamed;
}

// Declares the sparse_tensor(T) values of `list` tensor(T) (same element type and shape); returns their names.
std::set<std::string> densify_declared_types(std::vector<pb::ValueInfo>& list) {
  std::set<std::string> names;
  for (pb::ValueInfo& vi : list) {
    if (!vi.type || !vi.type->sparse_tensor_type || vi.type->tensor_type) continue;
    vi.type->tensor_type = std::move(vi.type->sparse_tensor_type);
    vi.type->sparse_tensor_type.reset();
    names.emplace(vi.name.value_or(""));
  }
  return names;
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += cat(out.empty() ? "'" : ", '", n, "'");
  return out;
}

}  // namespace

RuntimeLeniency accept_runtime_models(pb::ModelDocument& doc, int log_level) {
  RuntimeLeniency r;
  if (!doc.model.graph) return r;
  std::vector<std::string> notes;
  const std::string label = doc.label.empty() ? "main graph" : doc.label;
  const int64_t ir = doc.model.ir_version.value_or(0);
  size_t constants = 0;
  const Str main_name = doc.model.graph->name.value_or("");
  const std::string main_where = cat(doc.label.empty() ? "<model>" : doc.label, ": main graph",
                                     main_name.empty() ? "" : cat(" '", main_name, "'"));
  for_each_graph(*doc.model.graph, main_where, [&](pb::Graph& g, const std::string& where) {
    if (ir >= 1 && ir <= 3) {
      std::unordered_set<Str> inputs;
      for (const pb::ValueInfo& vi : g.input) inputs.insert(vi.name.value_or(""));
      size_t outside = 0;
      for (const pb::Tensor& t : g.initializer) outside += !inputs.count(t.name.value_or(""));
      if (outside) {
        r.initializers_need_not_be_inputs = true;
        notes.push_back(cat(where, ": ", outside, " initializer", outside == 1 ? " is" : "s are",
                            " not listed as graph input", outside == 1 ? "" : "s", " (IR version ", ir,
                            " requires it); used as ", outside == 1 ? "a constant" : "constants",
                            ", as from IR version 4"));
      }
    }
    constants += rename_sparse_constant_values(g.node, where, r.spec_problems);
  });
  for (pb::Function& f : doc.model.functions)
    constants += rename_sparse_constant_values(
        f.node, cat(label, ": function '", f.domain.value_or(""), ".", f.name.value_or(""), "'"), r.spec_problems);
  if (constants)
    notes.push_back(cat(label, ": ", constants, " Constant node", constants == 1 ? " holds" : "s hold",
                        " a sparse tensor in 'value' (ONNX has 'sparse_value' for it); read as sparse_value"));
  r.sparse_inputs = densify_declared_types(doc.model.graph->input);
  r.sparse_outputs = densify_declared_types(doc.model.graph->output);
  if (!r.sparse_inputs.empty() || !r.sparse_outputs.empty())
    notes.push_back(cat(label, ": graph ", r.sparse_inputs.empty() ? "" : cat("inputs ", joined(r.sparse_inputs)),
                        r.sparse_inputs.empty() || r.sparse_outputs.empty() ? "" : " and ",
                        r.sparse_outputs.empty() ? "" : cat("outputs ", joined(r.sparse_outputs)),
                        " declared sparse_tensor are computed as dense tensors (fed and returned dense)"));
  if (log_level <= 2)
    for (const std::string& note : notes) std::fprintf(stderr, "onyx: warning: %s\n", note.c_str());
  return r;
}

void accept_with_warnings(pb::ModelDocument& doc, int log_level) {
  sort_nodes_topologically_with_warnings(doc, log_level);
  for (const std::string& note : move_runtime_ops(doc))
    if (log_level <= 2) std::fprintf(stderr, "onyx: warning: %s\n", note.c_str());
}

}  // namespace onyx::check
