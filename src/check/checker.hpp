// Structural checks of a decoded model, in the spirit of onnx's checker (onnx/checker.cc and the
// rules of docs/IR.md), with messages that say where the problem is: every message starts with
// the model's label, then names the graph (its path from the main graph through the attributes
// that hold subgraphs), the node (its name, or #index when it has none, and its op_type) and the
// value, attribute or tensor involved.
//
// What is checked:
//  - the model: ir_version present; opset_import present (IR >= 3) with no domain imported
//    twice; newer IR versions than this library knows are accepted.
//  - nodes: op_type set; domain imported; op known at the imported opset for the ONNX domains
//    (model-local functions and other domains are accepted); attributes well-formed.
//  - values: single static assignment across graph inputs, initializers and node outputs, also
//    against the outer scopes of a subgraph; every node input and graph output defined before
//    use; nodes in topological order, with cycles named.
//  - tensors: element type, dims, the size of the data in whichever field holds it, and external
//    data (parsed, and resolved inside the model folder when CheckOptions::check_external_data).
//  - model-local functions and training graphs.
// Types and shapes are not inferred here.
#pragma once
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"

namespace onyx::check {

struct CheckOptions {
  // Open the files of external tensors and check that each tensor's byte range lies in its
  // file and has the size the tensor needs. When false, only the external_data entries are
  // parsed.
  bool check_external_data = true;
  // Accept initializers of IR <= 3 models that are not listed as graph inputs (sessions do, as ONNX Runtime does:
  // check::accept_runtime_models); `onyx check` reports them.
  bool initializers_need_not_be_inputs = false;
};

// Returns every problem found, in order; empty means valid.
std::vector<std::string> check_model(const pb::ModelDocument& doc, const CheckOptions& opts = {});

// Throws onyx::Error whose message is the first problem (and "(and N more)" if several).
void check_model_or_throw(const pb::ModelDocument& doc, const CheckOptions& opts = {});

}  // namespace onyx::check
