// A session's memory limit, as the threads that work for it see it: a budget that allocations are charged to while
// it is set on the thread (Tensor::allocate charges every tensor; kernels charge their scratch memory).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace onyx {

// A limit on the bytes of the tensors Tensor::allocate makes while it is set on a thread (a session's memory
// limit): each allocation is charged until its buffer is released, which may be on any thread and after the
// session is gone (the buffer keeps its budget alive). Shared by a session's concurrent runs.
class MemoryBudget : public std::enable_shared_from_this<MemoryBudget> {
 public:
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  uint64_t limit_bytes() const { return limit_; }
  uint64_t in_use() const { return used_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // Charges `bytes` for a tensor of `what` (the dtype and dims, for the error); fails, charging nothing, when
  // that would pass the limit.
  void charge(uint64_t bytes, const std::string& what);
  bool try_charge(uint64_t bytes);  // as charge, without the error: false when past the limit
  void refund(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0}, peak_{0};
};

// Sets the calling thread's budget (null: none) and returns the one it replaces. The budget must be owned by a
// shared_ptr.
MemoryBudget* set_memory_budget(MemoryBudget* budget);

// The calling thread's budget (null: none).
MemoryBudget* current_memory_budget();

// Memory a kernel holds beyond the tensors it allocates (the tensors a Loop gathers for its scan outputs, which
// the stacked output will take again; the scratch buffers of oneDNN's primitives), charged to the calling thread's
// budget while this lives.
class MemoryCharge {
 public:
  MemoryCharge();
  ~MemoryCharge();
  MemoryCharge(const MemoryCharge&) = delete;
  MemoryCharge& operator=(const MemoryCharge&) = delete;
  // Adds `bytes`; false, adding nothing, when that would pass the limit (always true without a budget).
  bool try_add(uint64_t bytes);
  // The same, failing with the budget's error (ErrorKind::MemoryLimit) when past the limit; `what` names the memory.
  void add(uint64_t bytes, const std::string& what);
  uint64_t limit_bytes() const;  // the budget's limit (0: none)

 private:
  std::shared_ptr<MemoryBudget> budget_;
  uint64_t bytes_ = 0;
};

// Sets a thread's budget for a scope.
class MemoryBudgetScope {
 public:
  explicit MemoryBudgetScope(MemoryBudget* budget) : saved_(set_memory_budget(budget)) {}
  ~MemoryBudgetScope() { set_memory_budget(saved_); }
  MemoryBudgetScope(const MemoryBudgetScope&) = delete;
  MemoryBudgetScope& operator=(const MemoryBudgetScope&) = delete;

 private:
  MemoryBudget* saved_;
};

}  // namespace onyx
