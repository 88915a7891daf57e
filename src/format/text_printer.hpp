// The ONNX textual syntax (onnx/onnx docs/Syntax.md) for decoded models, written the way onnx's own printer
// (onnx/defs/printer.cc, python `onnx.printer.to_text`) writes it, character for character: the same
// indentation, separators, quoting, number formatting (shortest round-trip, as std::to_chars) and the same
// omissions (doc strings, node metadata, graph value_info of functions, sparse initializers are not printed).
//
// Like onnx's printer, printing a tensor whose raw_data does not hold exactly the elements its dims imply
// (for the element types whose raw form is printed) throws onyx::Error.
#pragma once
#include <string>

#include "format/onnx_proto.hpp"

namespace onyx::pb {

// The whole model: the `<ir_version: ..., opset_import: [...], ...>` header, the main graph, then each
// model-local function. No trailing newline (the graph's closing brace ends the text).
std::string to_text(const Model& m);

// A graph: `name (inputs) => (outputs) <initializers, value_info> { nodes }`, nodes indented by three spaces.
std::string to_text(const Graph& g);

// A single node line, indented by three spaces and ending with a newline.
std::string to_text(const Node& n);

}  // namespace onyx::pb
