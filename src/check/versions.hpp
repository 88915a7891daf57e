// What onyx can honour: the newest IR version and operator sets it implements. A model of a newer IR version or
// importing a newer opset of a standard domain may use semantics onyx does not have (a changed op, a new field);
// sessions refuse it, naming what onyx supports, unless the caller opts in (SessionOptions::accept_newer_versions).
#pragma once
#include <cstdint>

#include "format/onnx_proto.hpp"

namespace onyx::check {

// The IR version of the ONNX release whose operators onyx implements (its conformance data is written at it).
inline constexpr int64_t kNewestIrVersion = 13;

// Throws onyx::Error when the model's ir_version or an opset it (or one of its functions) imports from a standard
// domain is newer than onyx knows.
void refuse_newer_versions(const pb::ModelDocument& doc);

}  // namespace onyx::check
