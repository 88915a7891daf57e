// Run-time values to and from files: the test-data messages (TensorProto, SequenceProto, MapProto,
// OptionalProto) and numpy .npy files; and the comparison the ONNX backend tests use.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "ir/datum.hpp"
#include "format/onnx_proto.hpp"

namespace onyx {

Datum datum_from_tensor_proto(const pb::Tensor& t, std::string_view what);
Datum datum_from_sequence_proto(const pb::SequenceValue& s, std::string_view what);
Datum datum_from_map_proto(const pb::MapValue& m, std::string_view what);
Datum datum_from_optional_proto(const pb::OptionalValue& o, std::string_view what);

// Reads a .pb file as the message `expected` calls for (tensor, sequence, map or optional); with an Unknown type,
// as a TensorProto. Reads .npy files as tensors.
Datum load_datum(const std::filesystem::path& path, const Type& expected);
// Writes a value as the matching message (.pb).
void save_datum(const Datum& d, const std::string& name, const std::filesystem::path& path);
std::string serialize_datum(const Datum& d, const std::string& name);

// The ONNX backend test rule: same kind, shape and element type; strings exactly equal; otherwise
// |actual - expected| <= atol + rtol * |expected| with NaN equal to NaN; sequences element by element.
// Returns a description of the first difference, or nullopt when they match.
std::optional<std::string> compare_datums(const Datum& expected, const Datum& actual, double rtol = 1e-3,
                                          double atol = 1e-7);

// For outputs drawn from a random source (the runner's `shape-only` tests): same kind, shape and element type, and
// each element within [min, max] of the expected tensor's elements; NaN only where the expected element is NaN.
// Booleans and strings: any value. Sequences and optionals element by element.
std::optional<std::string> compare_datums_range(const Datum& expected, const Datum& actual);

}  // namespace onyx
