// SessionOptions' changes to the model a session loads (onnxruntime's session options of the same meaning): free
// dimension overrides, initializer overrides and external data files served from memory; and the interface types
// of graph inputs and outputs declared sparse, which the session computes dense (check::accept_runtime_models).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"
#include "onyx/session.hpp"

namespace onyx::exec {

// Before the checker: hands the in-memory external data files to the document, checks the overrides' values, and
// replaces each overridden initializer's message by one viewing the override's data (which `options` keeps
// alive), so that neither the checker nor the builder reads the initializer's own data.
void apply_document_overrides(pb::ModelDocument& doc, const SessionOptions& options);

// On the built model, before inference and optimization: the overridden initializers become the override tensors
// (sharing their buffers), and the free dims of the main graph's inputs take their overridden sizes.
void apply_model_overrides(Model& model, const SessionOptions& options, const std::string& label);

// Gives the named entries of `io` (dense in the graph) back the sparse_tensor kind the model declares.
void restore_sparse_kinds(std::vector<IoInfo>& io, const std::set<std::string>& names);

}  // namespace onyx::exec
