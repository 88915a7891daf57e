// Allocation for kernels that write every element of their output: skips the zero fill of Tensor::allocate (a
// full pass over memory that such outputs do not need).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/tensor.hpp"

namespace onyx {

// As Tensor::allocate, with the elements left unset (numeric types; strings still start empty).
Tensor allocate_for_overwrite(DataType dtype, std::vector<int64_t> dims);

// Gives the physical memory of `t`'s buffer back to the system, keeping its addresses: whole pages inside the
// buffer read as zeros afterwards. For a buffer Tensor::allocate made that no other tensor shares (false, and
// nothing done, otherwise), and only when nothing will read it again: sessions release constants that every
// reader packed into its own layout.
bool release_pages(const Tensor& t);

}  // namespace onyx
