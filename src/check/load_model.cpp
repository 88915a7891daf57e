#include "check/load_model.hpp"

#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "format/model_read.hpp"

namespace onyx {

Model load_model(const std::string& path) {
  pb::ModelDocument doc = pb::load_model_file(path);
  check::accept_with_warnings(doc);
  check::check_model_or_throw(doc);
  return build_model(doc);
}

}  // namespace onyx
