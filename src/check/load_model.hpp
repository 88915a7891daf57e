// Loading a model file as most callers want it: read, accepted forms moved (runtime_ops.hpp), checked, built.
#pragma once
#include <string>

#include "ir/model.hpp"

namespace onyx {

// Loads, checks and builds: the one call most users need. Throws onyx::Error with the checker's message.
Model load_model(const std::string& path);

}  // namespace onyx
