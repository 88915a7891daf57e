// libFuzzer's custom mutator for fuzz_run, whose input is a model and its feed bytes (model_mutator.hpp's
// RunInput): it edits the model's structure, or mutates the feed bytes with libFuzzer's own byte mutations.
// Linked only into the libFuzzer build of fuzz_run.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "model_mutator.hpp"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  onyx::fuzz::RunInput in;
  if (!onyx::fuzz::split_run_input({reinterpret_cast<const char*>(data), size}, in))
    return LLVMFuzzerMutate(data, size, max_size);
  std::string out;
  if (seed % 2 == 0) {
    auto model = onyx::fuzz::mutate_model(in.model, seed);
    if (!model) return LLVMFuzzerMutate(data, size, max_size);
    out = onyx::fuzz::join_run_input(*model, in.feeds);
  } else {
    // The feed bytes, mutated in a buffer of their own, up to the room the model leaves.
    size_t room = max_size > 4 + in.model.size() ? max_size - 4 - in.model.size() : 0;
    if (room == 0) return LLVMFuzzerMutate(data, size, max_size);
    std::string feeds(in.feeds);
    feeds.resize(room);
    size_t n = LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(feeds.data()), in.feeds.size(), room);
    feeds.resize(n);
    out = onyx::fuzz::join_run_input(in.model, feeds);
  }
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
