#include <algorithm>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "format/model_write.hpp"
#include "onyx/optimize.hpp"
#include "format/model_read.hpp"

namespace onyx::opt {

OptimizeReport optimize_file(const std::filesystem::path& in, const std::filesystem::path& out, int level,
                             const SaveOptions& save) {
  OptimizeOptions options;
  options.level = level;
  return optimize_file(in, out, options, save);
}

OptimizeReport optimize_file(const std::filesystem::path& in, const std::filesystem::path& out,
                             const OptimizeOptions& options, const SaveOptions& save, bool as_session) {
  if (options.level < 0 || options.level > 3) fail("optimization level ", options.level, " is not 0, 1, 2 or 3");
  pb::ModelDocument src = pb::load_model_file(in);
  check::accept_with_warnings(src);
  check::CheckOptions check_options;
  if (as_session)  // the session printed the warnings already
    check_options.initializers_need_not_be_inputs = check::accept_runtime_models(src, 3).initializers_need_not_be_inputs;
  check::check_model_or_throw(src, check_options);
  Model model = build_model(src);
  if (check_options.initializers_need_not_be_inputs) model.ir_version = std::max<int64_t>(model.ir_version, 4);
  expand_ops(model);
  OptimizeReport report = optimize(model, options);
  pb::ModelDocument doc = model_to_document(model);
  doc.dir = src.dir;
  doc.label = src.label;
  // The result must be a valid model before it replaces anything.
  try {
    check::check_model_or_throw(doc);
  } catch (const Error& e) {
    fail(in.string(), ": the optimized model does not pass the checker (an optimizer bug): ", e.what());
  }
  save_model(doc, out, save);
  return report;
}

}  // namespace onyx::opt
