// The number of elements a shape holds, checked: the one rule that the wire format, tensors and ops share.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

namespace onyx {

// The product of `dims`, or nullopt when a dim is negative or the product overflows int64. A zero dim makes it 0
// however large the others are: a [2^62, 2^62, 0] tensor is valid and empty.
inline std::optional<uint64_t> checked_element_count(std::span<const int64_t> dims) {
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) return std::nullopt;
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return 0;
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return static_cast<uint64_t>(n);
}

}  // namespace onyx
