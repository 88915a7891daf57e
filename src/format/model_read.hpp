// The IR of a model from its onnx.proto messages (the inverse of model_write.hpp).
#pragma once
#include <memory>
#include <string_view>

#include "format/onnx_proto.hpp"
#include "ir/model.hpp"

namespace onyx {

class ExternalDataResolver;

// Decodes a TensorProto; `resolver` resolves external data (null: external data is an error); `source` keeps the
// bytes the proto was decoded from alive (raw_data is viewed in place). Errors name `what`.
Tensor tensor_from_proto(const pb::Tensor& t, ExternalDataResolver* resolver, std::string_view what,
                         std::shared_ptr<const void> source);
Type type_from_proto(const pb::Type& t);
Shape shape_from_proto(const pb::TensorShape& s);

// Builds the IR of a model that passed check_model (the builder re-checks only what it relies on).
Model build_model(const pb::ModelDocument& doc);

}  // namespace onyx
