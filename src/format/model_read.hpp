// The IR of a model from its onnx.proto messages (the inverse of model_write.hpp).
#pragma once
#include "format/onnx_proto.hpp"
#include "ir/model.hpp"

namespace onyx {

// Builds the IR of a model that passed check_model (the builder re-checks only what it relies on).
Model build_model(const pb::ModelDocument& doc);

}  // namespace onyx
