// Allocation for kernels that write every element of their output: skips the zero fill of Tensor::allocate (a
// full pass over memory that such outputs do not need).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/memory_budget.hpp"  // the budget Tensor::allocate charges
#include "ir/tensor.hpp"

namespace onyx {

// As Tensor::allocate, with the elements left unset (numeric types; strings still start empty).
Tensor allocate_for_overwrite(DataType dtype, std::vector<int64_t> dims);

// Gives the physical memory of `t`'s buffer back to the system, keeping its addresses: whole pages inside the
// buffer read as zeros afterwards. For a buffer Tensor::allocate made that no other tensor shares (false, and
// nothing done, otherwise), and only when nothing will read it again: sessions release constants that every
// reader packed into its own layout.
bool release_pages(const Tensor& t);

// Where Tensor::allocate takes its memory on one thread, when set (the executor's memory plan, exec/memory_plan).
class AllocationHook {
 public:
  virtual ~AllocationHook() = default;
  // `bytes` (> 0) of 64-byte aligned memory, kept alive by the returned pointer and its copies; null: the caller
  // uses the heap. Called on the thread the hook is set for only.
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
};

// Sets the calling thread's hook (null: none) and returns the one it replaces.
AllocationHook* set_allocation_hook(AllocationHook* hook);

// A buffer of at least `bytes` (> 0) from the pool Tensor::allocate uses, 64-byte aligned, not zeroed.
std::shared_ptr<void> allocate_buffer(size_t bytes);

// The pool of large buffers (64 KiB and up, at most 256 MiB kept) that Tensor::allocate reuses between runs is
// held by its users, each session: while none holds it, released buffers go straight back to the system, and
// the end of the last use empties it, so memory a session's runs kept goes when the session does.
class BufferPoolUse {
 public:
  BufferPoolUse();
  ~BufferPoolUse();
  BufferPoolUse(const BufferPoolUse&) = delete;
  BufferPoolUse& operator=(const BufferPoolUse&) = delete;
};
// Bytes the pool keeps for reuse now.
size_t pooled_buffer_bytes();

}  // namespace onyx
