// Locations of the ONNX test models used by the tests: the shared conformance data next to the checkout (when
// present) and Debian's libonnx-testdata (installed by scripts/setup.sh).
#pragma once
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace onyx::testing {

namespace fs = std::filesystem;

inline std::vector<fs::path> test_data_roots() {
  std::vector<fs::path> roots;
  for (fs::path p : {fs::path(ONYX_SOURCE_DIR) / ".." / "shared" / "onnx-tests", fs::path("/usr/include/onnx/backend/test/data")})
    if (fs::is_directory(p)) roots.push_back(fs::weakly_canonical(p));
  return roots;
}

// Every model file under the roots: `*/model.onnx` of each suite folder and the light models.
inline std::vector<fs::path> all_test_models() {
  std::vector<fs::path> models;
  for (const auto& root : test_data_roots())
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file() && e.path().extension() == ".onnx") models.push_back(e.path());
  std::sort(models.begin(), models.end());
  return models;
}

}  // namespace onyx::testing
