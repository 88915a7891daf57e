#include "check/runtime_ops.hpp"

#include <cstdio>
#include <map>
#include <optional>

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

void accept_with_warnings(pb::ModelDocument& doc, int log_level) {
  sort_nodes_topologically_with_warnings(doc, log_level);
  for (const std::string& note : move_runtime_ops(doc))
    if (log_level <= 2) std::fprintf(stderr, "onyx: warning: %s\n", note.c_str());
}

}  // namespace onyx::check
