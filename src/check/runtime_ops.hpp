// Ops that ONNX Runtime accepts in the ONNX domain though ONNX does not define them there: its contrib kernels
// LayerNormalization (registered at every opset, while ONNX has it from 17) and SimplifiedLayerNormalization (RMS
// normalization, which ONNX has as RMSNormalization from 23). ONNX Runtime's transformer optimizer writes both into
// models of any opset. Sessions, `onyx info` and `onyx optimize` move such nodes to the ai.onyx ops of the same
// meaning, with a warning; `onyx check` still reports them, since the file breaks the spec.
#pragma once
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"

namespace onyx::check {

// Moves those nodes of the main graph and its subgraphs; returns one line per moved op type and graph.
std::vector<std::string> move_runtime_ops(pb::ModelDocument& doc);

// What loading does before checking, each change written to stderr as a warning when `log_level` lets warnings
// through (2 or less): the topological sort (topological_order.hpp), then move_runtime_ops.
void accept_with_warnings(pb::ModelDocument& doc, int log_level = 2);

}  // namespace onyx::check
