// The IR written back as onnx.proto messages: the inverse of build_model, for models the optimizer changed.
// Written: everything the IR keeps — opsets, model fields and metadata, functions, graphs with their nodes
// (subgraphs included), attributes, inputs, outputs, initializers (dense and sparse) and value infos (for node
// outputs whose type the model declared or a pass set). Not kept by the IR, so not written: doc strings of
// attributes, value infos and tensors, metadata_props below the model, quantization annotations, training_info.
// Tensor data is written inline as raw_data viewing the IR's tensors: the document is valid while `model` lives
// unchanged.
#pragma once
#include "format/onnx_proto.hpp"
#include "ir/model.hpp"

namespace onyx {

pb::ModelDocument model_to_document(const Model& model);

}  // namespace onyx
