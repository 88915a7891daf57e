#include "exec/memory_plan.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <limits>
#include <map>

namespace onyx::exec {

namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kAlign = 64;  // what Tensor::allocate promises

uint64_t round_up(uint64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

struct MemoryPlanner::Plan {
  struct Slot {
    uint64_t offset = 0, bytes = 0;
  };
  struct Key {
    uint64_t bytes;
    uint32_t nth;
    uint32_t slot;
  };
  std::vector<Slot> slots;
  std::vector<std::vector<Key>> by_step;  // step -> its planned allocations
  uint64_t arena_bytes = 0, total_bytes = 0;
  std::atomic<uint64_t> runs{0}, served{0}, fallbacks{0};
  // The arena block of the last run, kept for the next one once the run's tensors are gone: a block freed and
  // allocated again costs a page fault per 4 KiB page on every run (a quarter of a million for a 1 GiB arena).
  std::mutex spare_mutex;
  std::shared_ptr<void> spare;

  std::shared_ptr<void> take_block() {
    {
      std::lock_guard lock(spare_mutex);
      if (spare) return std::move(spare);
    }
    return allocate_buffer(arena_bytes);
  }
  void keep_block(std::shared_ptr<void> block) {
    std::lock_guard lock(spare_mutex);
    if (!spare) spare = std::move(block);
  }

  const Key* find(size_t step, uint64_t bytes, uint32_t nth) const {
    if (step >= by_step.size()) return nullptr;
    for (const Key& k : by_step[step])
      if (k.bytes == bytes && k.nth == nth) return &k;
    return nullptr;
  }
};

struct MemoryPlanner::Entry {
  std::vector<int64_t> signature;
  std::shared_ptr<Plan> plan;  // null while the first run records
  uint64_t last_used = 0;
};

void RunMemory::begin_step(size_t step, bool planned) {
  step_ = step;
  counts_.clear();
  set_allocation_hook(planned ? this : nullptr);
}

uint32_t RunMemory::next_nth(uint64_t bytes) {
  for (auto& [b, n] : counts_)
    if (b == bytes) return n++;
  counts_.emplace_back(bytes, 1);
  return 0;
}

// Recorded and Recording are not file-local: Recorder, MemoryPlanner's friend (so not file-local either), holds a
// Recording.

// One allocation seen while recording; its lifetime is [born, died) on a clock that ticks at every allocation and
// free, so buffers of one step that do not overlap in time may share memory too.
struct Recorded {
  size_t step;
  uint64_t bytes;
  uint32_t nth;
  uint64_t born, died = kNever;
};

struct Recording {
  std::mutex mutex;
  uint64_t clock = 0;
  bool closed = false;  // after the run: frees from now on are of values the caller keeps
  std::vector<Recorded> allocs;

  void freed(size_t i) {
    std::lock_guard lock(mutex);
    if (!closed) allocs[i].died = clock++;
  }
};

namespace {

// Greedy by size, largest first: each buffer goes in the smallest gap left by the already placed buffers whose
// lifetimes overlap its own (or after the last of them).
std::shared_ptr<MemoryPlanner::Plan> build_plan(const std::vector<Recorded>& allocs) {
  auto plan = std::make_shared<MemoryPlanner::Plan>();
  std::vector<size_t> order;
  for (size_t i = 0; i < allocs.size(); ++i)
    if (allocs[i].died != kNever) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return allocs[a].bytes != allocs[b].bytes ? allocs[a].bytes > allocs[b].bytes : allocs[a].born < allocs[b].born;
  });
  std::vector<uint64_t> offset(allocs.size(), 0);
  std::vector<size_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [offset, end) of placed buffers live at the same time
  for (size_t i : order) {
    const Recorded& a = allocs[i];
    busy.clear();
    for (size_t j : placed) {
      const Recorded& b = allocs[j];
      if (a.born < b.died && b.born < a.died) busy.emplace_back(offset[j], offset[j] + b.bytes);
    }
    std::sort(busy.begin(), busy.end());
    uint64_t best = kNever, best_gap = kNever, end = 0;
    for (const auto& [o, e] : busy) {
      if (o > end && o - end >= a.bytes && o - end < best_gap) {
        best = end;
        best_gap = o - end;
      }
      end = std::max(end, e);
    }
    offset[i] = best != kNever ? best : end;
    placed.push_back(i);
    plan->arena_bytes = std::max(plan->arena_bytes, offset[i] + a.bytes);
    plan->total_bytes += a.bytes;
  }
  // Slots in recording order; each step lists its own.
  std::sort(placed.begin(), placed.end());
  for (size_t i : placed) {
    const Recorded& a = allocs[i];
    const auto slot = static_cast<uint32_t>(plan->slots.size());
    plan->slots.push_back({offset[i], a.bytes});
    if (plan->by_step.size() <= a.step) plan->by_step.resize(a.step + 1);
    plan->by_step[a.step].push_back({a.bytes, a.nth, slot});
  }
  return plan;
}

// One run's arena block and the ranges of it that live tensors hold (offset -> end; they never overlap). Tensors in
// the block keep this alive; their deleters, on whatever thread, free their ranges.
struct Arena {
  std::shared_ptr<MemoryPlanner::Plan> plan;
  std::shared_ptr<void> block;
  std::mutex mutex;
  std::map<uint64_t, uint64_t> live;

  ~Arena() {
    if (plan && block) plan->keep_block(std::move(block));
  }

  // Takes [offset, offset + bytes) unless a live range overlaps it.
  bool take(uint64_t offset, uint64_t bytes) {
    std::lock_guard lock(mutex);
    auto next = live.lower_bound(offset);
    if (next != live.end() && next->first < offset + bytes) return false;
    if (next != live.begin() && std::prev(next)->second > offset) return false;
    live.emplace_hint(next, offset, offset + bytes);
    return true;
  }
  void give(uint64_t offset) {
    std::lock_guard lock(mutex);
    live.erase(offset);
  }
};

class Replayer : public RunMemory {
 public:
  explicit Replayer(std::shared_ptr<MemoryPlanner::Plan> plan) : arena_(std::make_shared<Arena>()) {
    arena_->block = plan->take_block();
    arena_->plan = std::move(plan);
    arena_->plan->runs.fetch_add(1, std::memory_order_relaxed);
  }

  std::shared_ptr<void> allocate(size_t bytes) override {
    if (omp_in_parallel()) return nullptr;
    const uint64_t rounded = round_up(bytes);
    const uint32_t nth = next_nth(rounded);
    const MemoryPlanner::Plan& plan = *arena_->plan;
    const MemoryPlanner::Plan::Key* key = plan.find(step_, rounded, nth);
    if (!key) return nullptr;  // not an allocation the recording freed during the run
    const MemoryPlanner::Plan::Slot& slot = plan.slots[key->slot];
    if (!arena_->take(slot.offset, slot.bytes)) {
      arena_->plan->fallbacks.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    arena_->plan->served.fetch_add(1, std::memory_order_relaxed);
    char* p = static_cast<char*>(arena_->block.get()) + slot.offset;
    return std::shared_ptr<void>(p, [arena = arena_, offset = slot.offset](void*) { arena->give(offset); });
  }

 private:
  std::shared_ptr<Arena> arena_;
};

}  // namespace

class Recorder : public RunMemory {
 public:
  Recorder(MemoryPlanner& planner, std::shared_ptr<MemoryPlanner::Entry> entry)
      : planner_(planner), entry_(std::move(entry)), rec_(std::make_shared<Recording>()) {}
  ~Recorder() override {
    if (!finished_) planner_.abandon(entry_);
  }

  std::shared_ptr<void> allocate(size_t bytes) override {
    if (omp_in_parallel()) return nullptr;
    const uint64_t rounded = round_up(bytes);
    const uint32_t nth = next_nth(rounded);
    std::shared_ptr<void> buffer = allocate_buffer(bytes);
    size_t index;
    {
      std::lock_guard lock(rec_->mutex);
      if (rec_->allocs.size() >= MemoryPlanner::kMaxRecorded) return buffer;
      index = rec_->allocs.size();
      rec_->allocs.push_back({step_, rounded, nth, rec_->clock++});
    }
    void* p = buffer.get();
    return std::shared_ptr<void>(p, [rec = rec_, index, buffer = std::move(buffer)](void*) { rec->freed(index); });
  }

  void finish() override {
    std::vector<Recorded> allocs;
    {
      std::lock_guard lock(rec_->mutex);
      rec_->closed = true;
      allocs = rec_->allocs;
    }
    planner_.store(entry_, build_plan(allocs));
    finished_ = true;
  }

 private:
  MemoryPlanner& planner_;
  std::shared_ptr<MemoryPlanner::Entry> entry_;
  std::shared_ptr<Recording> rec_;
  bool finished_ = false;
};

std::unique_ptr<RunMemory> MemoryPlanner::begin_run(const std::vector<int64_t>& signature) {
  std::shared_ptr<Plan> plan;
  {
    std::lock_guard lock(mutex_);
    for (const auto& e : entries_)
      if (e->signature == signature) {
        if (!e->plan) return nullptr;  // being recorded by another run
        e->last_used = ++clock_;
        plan = e->plan;
        break;
      }
    if (!plan) {
      if (entries_.size() >= kMaxPlans) {
        auto victim = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
          if ((*it)->plan && (victim == entries_.end() || (*it)->last_used < (*victim)->last_used)) victim = it;
        if (victim == entries_.end()) return nullptr;
        entries_.erase(victim);
      }
      auto entry = std::make_shared<Entry>();
      entry->signature = signature;
      entry->last_used = ++clock_;
      entries_.push_back(entry);
      return std::make_unique<Recorder>(*this, std::move(entry));
    }
  }
  if (plan->slots.empty()) return nullptr;
  return std::make_unique<Replayer>(std::move(plan));
}

void MemoryPlanner::store(const std::shared_ptr<Entry>& entry, std::shared_ptr<Plan> plan) {
  std::lock_guard lock(mutex_);
  entry->plan = std::move(plan);
}

void MemoryPlanner::abandon(const std::shared_ptr<Entry>& entry) {
  std::lock_guard lock(mutex_);
  auto it = std::find(entries_.begin(), entries_.end(), entry);
  if (it != entries_.end() && !(*it)->plan) entries_.erase(it);  // the next run records again
}

std::optional<MemoryPlanInfo> MemoryPlanner::info(const std::vector<int64_t>& signature) const {
  std::lock_guard lock(mutex_);
  for (const auto& e : entries_)
    if (e->signature == signature && e->plan) {
      const Plan& p = *e->plan;
      MemoryPlanInfo info;
      info.arena_bytes = p.arena_bytes;
      info.buffer_bytes = p.total_bytes;
      info.buffers = p.slots.size();
      info.runs = p.runs.load(std::memory_order_relaxed);
      info.served = p.served.load(std::memory_order_relaxed);
      info.fallbacks = p.fallbacks.load(std::memory_order_relaxed);
      return info;
    }
  return std::nullopt;
}

}  // namespace onyx::exec
