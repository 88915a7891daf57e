// The checkout's folder, for tests that read files of the source tree. Only this file is compiled with the path
// defined, so every other test file compiles to the same object in any checkout (a compiler cache shares them).
#include "test_data.hpp"

namespace onyx::testing {

fs::path source_dir() { return ONYX_SOURCE_DIR; }

}  // namespace onyx::testing
