// The ONNX textual syntax (onnx/onnx docs/Syntax.md) read back into the onnx.proto messages: the inverse of
// text_printer.hpp, and a reader of the texts onnx's own parser (onnx/defs/parser.cc, python
// `onnx.parser.parse_model`) reads: the `<key: value, ...>` model header, the main graph, then model-local
// functions; graphs with typed inputs and outputs, initializers and value_info in `<...>`, nodes with attributes
// of every kind (typed `name: type = value` or with the type inferred from the value, `@ref` references),
// types (tensor, seq, map, optional, sparse_tensor, opaque), tensors with values or external-data entries.
//
// What the text does not carry (the printer leaves it out), so a parsed model lacks it: doc strings (except the
// model's), metadata_props (except the model's), denotations, sparse initializers and sparse tensor attribute
// values, quantization annotations, training info, function attribute defaults and value_info as the printer
// writes them, NaN payloads, which of raw_data and the typed fields held a tensor's values (parsed values go to the
// typed field: int32_data, int64_data, uint64_data, float_data, double_data or string_data), the data of tensors the
// printer writes as `...` (packed 2- and 4-bit types and complex types held in raw_data), and whether an empty
// string field was present or absent.
//
// Errors throw onyx::Error "LABEL:LINE:COLUMN: what was expected, what was found"; any input (truncated, huge
// numbers, deep nesting) ends in such an error or a model, with nesting bounded and memory proportional to the text.
#pragma once
#include <string>
#include <string_view>

#include "format/onnx_proto.hpp"

namespace onyx::pb {

struct TextParseLimits {
  // Nested messages (a graph in an attribute of a node, a type in a type), counted as the wire reader counts them
  // so that what parses here also decodes there (ParseLimits::max_depth).
  int max_depth = 250;
};

// Parses a whole model. The returned document's arena holds a copy of `text` and every string the model views;
// `label` (the file name) starts each error message and becomes the document's label.
ModelDocument parse_model_text(std::string_view text, std::string_view label = "<text>",
                               const TextParseLimits& limits = {});

}  // namespace onyx::pb
