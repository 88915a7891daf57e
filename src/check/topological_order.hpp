// Putting a graph's nodes into topological order at load. docs/IR.md requires nodes to be listed in topological
// order, but converters write graphs that break it (a float16 converter appends the input Casts it adds at the end
// of the node list) and ONNX Runtime sorts such graphs. Sessions do the same, with a warning; `onyx check` still
// reports the order as a problem, since the file breaks the spec.
#pragma once
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"

namespace onyx::check {

// Reorders the nodes of every graph of the model whose nodes read a value before the node that produces it runs:
// the main graph, subgraphs in attributes, function bodies and training graphs. A node that holds subgraphs
// depends on the producers of the outer values those subgraphs read. The sort is stable: nodes keep their relative
// order wherever the data allow. A graph with a cycle is left as it is, for the checker to name the cycle.
// Returns one line per reordered graph, naming it and the first node that was read before it ran.
std::vector<std::string> sort_nodes_topologically(pb::ModelDocument& doc);

// The same, writing each line to stderr as a warning when `log_level` lets warnings through (2 or less, as in
// SessionOptions::log_level).
void sort_nodes_topologically_with_warnings(pb::ModelDocument& doc, int log_level = 2);

}  // namespace onyx::check
