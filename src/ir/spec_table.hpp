// The ONNX operator version table: for every operator of the standard domains, the operator set
// versions in which a new version of it was published (its since_versions), and for most versions their
// signatures (input and output counts, attribute names). The data is
// spec/op_versions.tsv, embedded at build time and parsed once on first use.
//
// Domains are named as in the spec: "ai.onnx" is the default domain, which models also write as
// the empty string; every function here accepts both spellings.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onyx::spec {

// "" -> "ai.onnx"; any other domain is returned unchanged.
std::string_view canonical_domain(std::string_view domain);

// True for the domains the ONNX specification defines: "" / "ai.onnx", "ai.onnx.ml",
// "ai.onnx.preview" and "ai.onnx.preview.training".
bool is_known_domain(std::string_view domain);

// The since_version a node of `op_type` binds to when the model imports `domain` at version
// `opset`: the highest since_version <= opset. nullopt when the op is unknown in that domain or
// was only introduced after `opset`.
std::optional<int> resolve_since_version(std::string_view domain, std::string_view op_type,
                                         int64_t opset);

// Every since_version of the op, ascending; empty when the domain has no such op.
std::vector<int> since_versions(std::string_view domain, std::string_view op_type);

// What one op version's schema allows a node: input and output counts (max -1: variadic, no maximum) and the
// names of its attributes.
struct Signature {
  int min_inputs = 0, max_inputs = -1, min_outputs = 0, max_outputs = -1;
  std::vector<std::string> attributes;
};

// The signature of an op version, when the table has it (versions newer than the onnx release that the table's
// signatures came from have none); null otherwise.
const Signature* signature(std::string_view domain, std::string_view op_type, int since_version);

// The newest operator set of a standard domain that the table knows (the highest since_version of any of its
// ops); nullopt for other domains.
std::optional<int> newest_opset(std::string_view domain);

}  // namespace onyx::spec
