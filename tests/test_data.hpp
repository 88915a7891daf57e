// Locations of the ONNX test models used by the tests: the shared conformance data next to the checkout (when
// present) and Debian's libonnx-testdata (installed by scripts/setup.sh).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace onyx::testing {

namespace fs = std::filesystem;

// Whether the environment variable CI is set (and not "0" or "false"), as CI systems and scripts/test.sh set it.
inline bool running_in_ci() {
  const char* v = std::getenv("CI");
  return v && *v && std::string(v) != "0" && std::string(v) != "false";
}

// For data that scripts/setup.sh installs (Debian's libonnx-testdata, Graphviz): missing, the test fails under CI,
// where setup ran, so that CI cannot pass without running it; elsewhere it skips, saying what is missing. (The
// shared conformance data next to the checkout is optional everywhere: tests of it skip without it.)
#define ONYX_MISSING_INSTALLED_DATA(message)                                                              \
  do {                                                                                                    \
    if (::onyx::testing::running_in_ci()) {                                                               \
      FAIL() << message << " (CI is set, so scripts/setup.sh should have installed it)";                 \
    } else {                                                                                              \
      GTEST_SKIP() << message;                                                                            \
    }                                                                                                     \
  } while (0)

// The checkout's folder (tests/source_dir.cpp).
fs::path source_dir();

// The shared conformance data next to the checkout, and Debian's libonnx-testdata.
inline fs::path shared_onnx_tests() { return source_dir() / ".." / "shared" / "onnx-tests"; }
inline const fs::path kDebianOnnxTests = "/usr/include/onnx/backend/test/data";

inline std::vector<fs::path> test_data_roots() {
  std::vector<fs::path> roots;
  for (fs::path p : {shared_onnx_tests(), kDebianOnnxTests})
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
