// The ONNX operator version table: for every operator of the standard domains, the operator set
// versions in which a new version of it was published (its since_versions). The data is
// spec/op_versions.tsv, embedded at build time and parsed once on first use.
//
// Domains are named as in the spec: "ai.onnx" is the default domain, which models also write as
// the empty string; every function here accepts both spellings.
#pragma once
#include <cstdint>
#include <optional>
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

// The newest operator set of a standard domain that the table knows (the highest since_version of any of its
// ops); nullopt for other domains.
std::optional<int> newest_opset(std::string_view domain);

}  // namespace onyx::spec
