// A structure-aware mutator for ONNX models, for the libFuzzer targets that take a model (fuzz_session, fuzz_run,
// fuzz_print). Byte flips mostly break a model's wire format, so the fuzzer would spend its time in the decoder;
// editing the decoded model instead keeps it well-formed and reaches the checker, inference, the optimizer, the
// planner and the kernels with the values that break them: odd dims and element types, attribute values at the
// edges of their ranges, op types swapped, edges rewired (cycles, dangling names, duplicates), nodes deleted,
// copied or moved into subgraphs, subgraphs swapped, opset and IR versions changed.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onyx::fuzz {

// Decodes `bytes` as a ModelProto, applies one to four random edits chosen by `seed`, and returns the re-encoded
// model; nullopt when `bytes` do not decode. The same bytes and seed give the same result.
std::optional<std::string> mutate_model(std::string_view bytes, uint64_t seed);

// fuzz_run's input: a model and the bytes its feeds are made of, as [model size: 4 bytes, little-endian][model]
// [feed bytes]. split_run_input returns false when `data` is too short for the size it declares.
struct RunInput {
  std::string_view model, feeds;
};
bool split_run_input(std::string_view data, RunInput& out);
std::string join_run_input(std::string_view model, std::string_view feeds);

}  // namespace onyx::fuzz
