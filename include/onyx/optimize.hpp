// Optimizing a model file: load (checked), run the graph optimizer, write the result with onyx's writer. The
// entry point for `onyx optimize` and for bindings.
#pragma once
#include <filesystem>

#include "format/save.hpp"
#include "opt/optimizer.hpp"

namespace onyx::opt {

// Loads `in`, optimizes it at `level` (0 none, 1 basic, 2 all) and writes `out` (which may be `in`). Tensor
// data is written inline unless `save` asks for an external data file. Throws onyx::Error naming the file and
// what is wrong. The result loads and checks again (fused ops use the imported "ai.onyx" domain).
OptimizeReport optimize_file(const std::filesystem::path& in, const std::filesystem::path& out, int level,
                             const SaveOptions& save = {});
// The same with every optimizer option (options.level included). `as_session`: the model is taken as a session
// takes it (check::accept_runtime_models: an IR-3 initializer that is not a graph input, a sparse Constant
// `value`, sparse graph inputs and outputs computed dense), so a session's optimized_model_filepath can be written
// for every model the session loads; such a model is written as IR version 4 or later, whose rules it then meets.
OptimizeReport optimize_file(const std::filesystem::path& in, const std::filesystem::path& out,
                             const OptimizeOptions& options, const SaveOptions& save = {}, bool as_session = false);

}  // namespace onyx::opt
