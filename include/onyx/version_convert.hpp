// Converting a model's default-domain (ai.onnx) operator set version up or down, as onnx.version_converter does:
// a chain of adapters between consecutive opsets, each rewriting the nodes whose op got a new version there
// (attributes that became inputs and back, changed defaults, replaced ops). An op change without a faithful
// adapter for the model's node is refused with an error naming the node, the op and the versions.
// src/opt/version_convert.cpp holds the table of the op/version pairs handled.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"
#include "ir/model.hpp"

namespace onyx::opt {

struct VersionConvertReport {
  int64_t from = 0, to = 0;
  size_t nodes_adapted = 0;         // nodes an adapter rewrote (a node counts once per step)
  std::vector<std::string> notes;   // one line per rewrite: "opset 12 -> 13: node 'sm' (Softmax): ..."
};

// Converts `model` (built from a checked document) in place to default-domain opset `target`. Throws onyx::Error
// naming the model, node, op and versions when some node cannot be converted; the model is then left half-way.
VersionConvertReport convert_version(Model& model, int64_t target);

// A loaded document (checked here) in, a new checked document at opset `target` out; the result keeps what it
// views alive (the source document's buffers included). Tensor data is written inline.
pb::ModelDocument convert_version(pb::ModelDocument& doc, int64_t target, VersionConvertReport* report = nullptr);

// The serialized model (bytes of a ModelProto) converted to `target`, serialized.
std::string convert_version_bytes(std::string model_bytes, int64_t target, VersionConvertReport* report = nullptr);

}  // namespace onyx::opt
