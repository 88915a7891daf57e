// Custom ops from shared libraries (include/onyx/custom_op.h): a session loads the libraries its options name and
// binds nodes to the ops they register ahead of the built-in registry. The ops are the session's alone.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"
#include "ops/registry.hpp"

namespace onyx::exec {

struct CustomOps {
  ops::Registry registry;
  std::map<std::string, int> domains;  // each registered domain and its highest since_version
  // The def for node `n` at `opset` when a library registered its op type, else null (the built-in registry
  // then decides, and reports unknown ops as it always has).
  const ops::OpDef* resolve(const Node& n, int64_t opset) const;
};

// dlopens each library and calls its entry point. Errors name `model`, the library and what failed. The defs and
// the kernels made from them keep their library loaded.
std::shared_ptr<const CustomOps> load_custom_ops(const std::vector<std::string>& paths, const std::string& model);

// Imports each registered domain the model does not import, at its highest registered version, so that a model
// without an opset_import for it checks and binds (as ONNX Runtime accepts).
void import_custom_domains(pb::ModelDocument& doc, const CustomOps& custom);

}  // namespace onyx::exec
