#include "base/memory_budget.hpp"

#include "base/error.hpp"

namespace onyx {

namespace {

thread_local MemoryBudget* memory_budget = nullptr;

[[noreturn]] void exceeded(const MemoryBudget& budget, uint64_t bytes, const std::string& what) {
  throw Error(cat("memory limit of ", budget.limit_bytes() >> 20, " MiB exceeded: ", what, " takes ", bytes,
                  " bytes, with ", budget.in_use(), " bytes of this session's tensors in use"),
              ErrorKind::MemoryLimit);
}

}  // namespace

bool MemoryBudget::try_charge(uint64_t bytes) {
  const uint64_t was = used_.fetch_add(bytes, std::memory_order_relaxed);
  if (was + bytes > limit_ || was + bytes < was) {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    return false;
  }
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (was + bytes > peak && !peak_.compare_exchange_weak(peak, was + bytes, std::memory_order_relaxed)) {
  }
  return true;
}

void MemoryBudget::charge(uint64_t bytes, const std::string& what) {
  if (!try_charge(bytes)) exceeded(*this, bytes, "a tensor of " + what);
}

MemoryBudget* current_memory_budget() { return memory_budget; }

MemoryCharge::MemoryCharge() : budget_(memory_budget ? memory_budget->shared_from_this() : nullptr) {}
MemoryCharge::~MemoryCharge() {
  if (budget_) budget_->refund(bytes_);
}
bool MemoryCharge::try_add(uint64_t bytes) {
  if (!budget_) return true;
  if (!budget_->try_charge(bytes)) return false;
  bytes_ += bytes;
  return true;
}
void MemoryCharge::add(uint64_t bytes, const std::string& what) {
  if (!try_add(bytes)) exceeded(*budget_, bytes, what);
}
uint64_t MemoryCharge::limit_bytes() const { return budget_ ? budget_->limit_bytes() : 0; }

MemoryBudget* set_memory_budget(MemoryBudget* budget) {
  MemoryBudget* was = memory_budget;
  memory_budget = budget;
  return was;
}

}  // namespace onyx
