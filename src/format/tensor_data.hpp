// The bytes of a TensorProto's elements, wherever the file keeps them: raw_data, an external file, or one of the
// typed repeated fields (which are converted once into the little-endian raw layout).
#pragma once
#include <memory>
#include <optional>
#include <string_view>

#include "base/error.hpp"
#include "format/external_data.hpp"
#include "format/onnx_proto.hpp"
#include "base/dtype.hpp"

namespace onyx {

// Product of the dims; an error for negative dims or a product that overflows int64.
uint64_t tensor_element_count(const pb::Tensor& t, std::string_view what);

struct TensorBytes {
  std::string_view bytes;
  std::shared_ptr<const void> keep;  // owns the bytes when they were converted or mapped from an external file
};

bool is_external(const pb::Tensor& t);

// The TensorProto field's name ("float_data", ...; "none").
const char* storage_field_name(StorageField f);

// Raw little-endian bytes of a non-string tensor, checked against dims x element size. `resolver` may be null
// when the tensor is known not to be external. Throws onyx::Error naming `what` on any mismatch.
TensorBytes tensor_raw_bytes(const pb::Tensor& t, ExternalDataResolver* resolver, std::string_view what);

// The key/value list of external_data as views.
std::vector<std::pair<std::string_view, std::string_view>> external_entries(const pb::Tensor& t);

}  // namespace onyx
