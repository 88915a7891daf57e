// Allocation for kernels that write every element of their output: skips the zero fill of Tensor::allocate (a
// full pass over memory that such outputs do not need).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/tensor.hpp"

namespace onyx {

// As Tensor::allocate, with the elements left unset (numeric types; strings still start empty).
Tensor allocate_for_overwrite(DataType dtype, std::vector<int64_t> dims);

}  // namespace onyx
