// Static memory plans of the executor, one per input-shape signature of the main graph. The first run of a
// signature records, step by step, the tensor buffers Tensor::allocate hands out on the running thread and when
// each is freed; the lifetimes give every buffer freed during the run an offset in one arena, buffers whose
// lifetimes are disjoint sharing memory. Later runs of the signature take one arena block each and serve a step's
// n-th allocation of a given size from its slot.
//
// A plan is a hint: before a slot is handed out, every slot whose memory overlaps it must be free (its tensors all
// gone), else that allocation goes to the heap. So a kernel that keeps a buffer longer than recorded, allocates in
// another order or allocates other sizes costs memory reuse, never correctness. Allocations on other threads
// (OpenMP workers), inside parallel regions and in steps that run subgraphs or function bodies are never planned.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "ir/tensor_alloc.hpp"
#include "onyx/session.hpp"

namespace onyx::exec {

// The memory side of one run of the main graph: installed as the running thread's allocation hook for the steps
// that may be planned.
class RunMemory : public AllocationHook {
 public:
  // Before step `step` of the main graph runs; `planned` false for steps whose allocations stay on the heap.
  void begin_step(size_t step, bool planned);
  // After the run, once its frame (every intermediate value) is gone: a recording becomes its signature's plan.
  virtual void finish() {}

 protected:
  // The how-many-th allocation of `bytes` (rounded) this is within the current step, from 0.
  uint32_t next_nth(uint64_t bytes);
  size_t step_ = 0;

 private:
  std::vector<std::pair<uint64_t, uint32_t>> counts_;  // per size, allocations so far in this step
};

class MemoryPlanner {
 public:
  // Signatures whose plans are kept; beyond, the least recently used plan is dropped.
  static constexpr size_t kMaxPlans = 8;
  // Allocations one recording notes at most (the plan places them in quadratic time).
  static constexpr size_t kMaxRecorded = 16384;

  MemoryPlanner() = default;
  MemoryPlanner(const MemoryPlanner&) = delete;
  MemoryPlanner& operator=(const MemoryPlanner&) = delete;

  // The run's memory for `signature`: a recorder (first run), an arena (a plan exists) or null (another run is
  // recording this signature, every kept plan is being recorded, or the plan is empty).
  std::unique_ptr<RunMemory> begin_run(const std::vector<int64_t>& signature);
  std::optional<MemoryPlanInfo> info(const std::vector<int64_t>& signature) const;

  struct Plan;
  struct Entry;

 private:
  friend class Recorder;
  void store(const std::shared_ptr<Entry>& entry, std::shared_ptr<Plan> plan);
  void abandon(const std::shared_ptr<Entry>& entry);

  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Entry>> entries_;
  uint64_t clock_ = 0;  // for least-recently-used eviction
};

// Restores the calling thread's allocation hook when it leaves scope (the executor sets it step by step).
class AllocationHookScope {
 public:
  AllocationHookScope() : saved_(set_allocation_hook(nullptr)) {}
  ~AllocationHookScope() { set_allocation_hook(saved_); }
  AllocationHookScope(const AllocationHookScope&) = delete;
  AllocationHookScope& operator=(const AllocationHookScope&) = delete;

 private:
  AllocationHook* saved_;
};

}  // namespace onyx::exec
