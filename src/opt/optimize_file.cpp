#include <algorithm>
#include <cstdint>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "ir/model_write.hpp"
#include "onyx/optimize.hpp"

namespace onyx::opt {
namespace {

// Kernels read raw_data through typed pointers; a view at an odd offset of the file is copied first (as the
// session does) so that constant folding can run on it.
void align_tensors(Graph& g) {
  for (auto& [name, t] : g.initializers) {
    int bits = dtype_bits(t.dtype());
    size_t align = bits >= 16 ? std::min<size_t>(static_cast<size_t>(bits) / 8, 8) : 1;
    if (align > 1 && reinterpret_cast<uintptr_t>(t.bytes().data()) % align != 0) t = t.clone();
  }
}

}  // namespace

OptimizeReport optimize_file(const std::filesystem::path& in, const std::filesystem::path& out, int level,
                             const SaveOptions& save) {
  OptimizeOptions options;
  options.level = level;
  return optimize_file(in, out, options, save);
}

OptimizeReport optimize_file(const std::filesystem::path& in, const std::filesystem::path& out,
                             const OptimizeOptions& options, const SaveOptions& save) {
  if (options.level < 0 || options.level > 2) fail("optimization level ", options.level, " is not 0, 1 or 2");
  pb::ModelDocument src = pb::load_model_file(in);
  check::check_model_or_throw(src);
  Model model = build_model(src);
  align_tensors(*model.graph);
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
