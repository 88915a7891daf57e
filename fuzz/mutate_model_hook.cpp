// libFuzzer's custom mutator for the targets whose input is a model (fuzz_session, fuzz_print): most mutations edit
// the decoded model (model_mutator.hpp), the rest are libFuzzer's byte mutations, which also keep the decoder's
// error paths in reach. Linked only into the libFuzzer builds of those targets.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "model_mutator.hpp"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  if (seed % 5 != 0) {
    auto mutated = onyx::fuzz::mutate_model({reinterpret_cast<const char*>(data), size}, seed);
    if (mutated && !mutated->empty() && mutated->size() <= max_size) {
      std::memcpy(data, mutated->data(), mutated->size());
      return mutated->size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
