// Ops that ONNX Runtime accepts in the ONNX domain though ONNX does not define them there: its contrib kernels
// LayerNormalization (registered at every opset, while ONNX has it from 17) and SimplifiedLayerNormalization (RMS
// normalization, which ONNX has as RMSNormalization from 23). ONNX Runtime's transformer optimizer writes both into
// models of any opset. Sessions, `onyx info` and `onyx optimize` move such nodes to the ai.onyx ops of the same
// meaning, with a warning; `onyx check` still reports them, since the file breaks the spec.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"

namespace onyx::check {

// Moves those nodes of the main graph and its subgraphs; returns one line per moved op type and graph.
std::vector<std::string> move_runtime_ops(pb::ModelDocument& doc);

// What loading does before checking, each change written to stderr as a warning when `log_level` lets warnings
// through (2 or less): the topological sort (topological_order.hpp), then move_runtime_ops.
void accept_with_warnings(pb::ModelDocument& doc, int log_level = 2);

// Models ONNX Runtime loads that break the spec, which sessions accept (with a warning, as accept_with_warnings
// gives them; `onyx check` still reports them):
//  - an IR <= 3 model's initializers not listed as graph inputs: plain initializers, as from IR 4 (the checker is
//    told by initializers_need_not_be_inputs);
//  - a Constant whose `value` holds a sparse tensor: renamed sparse_value, which means that;
//  - main graph inputs and outputs declared sparse_tensor(T): onyx computes them dense, so they become tensor(T)
//    of the same shape; their names are returned so the session's interface keeps the declared type.
// `onyx check` reports spec_problems: what the checker itself does not see (the sparse `value`s, which sessions
// refuse when binding the node).
struct RuntimeLeniency {
  bool initializers_need_not_be_inputs = false;
  std::set<std::string> sparse_inputs, sparse_outputs;
  std::vector<std::string> spec_problems;
};
RuntimeLeniency accept_runtime_models(pb::ModelDocument& doc, int log_level = 2);

}  // namespace onyx::check
