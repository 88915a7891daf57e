// libFuzzer target for session creation: a model goes through everything Session::from_bytes does with it
// (decode, check, build the IR, infer types and shapes, fold constants, optimize at the level the input's hash
// picks, bind kernels, plan), with a memory limit set. Built with the structure-aware mutator
// (mutate_model_hook.cpp), which edits valid models rather than their bytes.
//
// onyx::Error is the expected outcome for a model onyx refuses; any other exception, a sanitizer report, a leak,
// a timeout or going over libFuzzer's memory limit is a bug. Run from an empty directory (scripts/fuzz.sh does):
// external data paths resolve against it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.hpp"
#include "onyx/session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  onyx::SessionOptions opts;
  opts.threads = 1;
  opts.log_level = 4;  // warnings about fuzzed models are not findings
  opts.optimization_level = static_cast<int>(std::hash<std::string>{}(bytes) % 4);
  opts.memory_limit_mb = 512;
  try {
    onyx::Session s = onyx::Session::from_bytes(std::move(bytes), opts);
    (void)s.inputs();
  } catch (const onyx::Error&) {
  }
  return 0;
}
