// oneDNN plumbing shared by the fast kernels: one CPU engine per process, one stream per calling thread, and a
// cache of primitives keyed by the shapes they were created for (created once per shape, then reused by every run).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "base/memory_budget.hpp"
#include "kernels/serial.hpp"

namespace onyx::kernels {

// One elementwise step of oneDNN's eltwise family (alpha/beta as oneDNN defines them for `alg`).
struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};

// What follows a convolution's or matrix product's bias, in order: y += (what y held), then each eltwise step.
struct Epilogue {
  bool sum = false;
  std::vector<Eltwise> eltwise;
  bool empty() const { return !sum && eltwise.empty(); }
  // The primitive attributes that apply it (as post-ops).
  dnnl::primitive_attr attr() const;
};

dnnl::engine& cpu_engine();
dnnl::stream& thread_stream();

// oneDNN's library-managed scratchpad (its primitives' temporary memory) is one buffer that every primitive
// shares in this build (no concurrent execution), so two runs on different threads would overwrite each other's
// intermediate data. Every primitive is made with own_scratchpad() attributes and run by run_primitive, which
// hands it scratchpad memory of the calling thread.
dnnl::primitive_attr own_scratchpad(dnnl::primitive_attr attr = {});
// Runs `p` on the thread's stream with `args`, plus the thread's scratchpad when `scratchpad` (the primitive
// descriptor's scratchpad_desc()) is not empty, charged to the session's memory limit while the primitive runs.
void run_primitive(const dnnl::primitive& p, const dnnl::memory::desc& scratchpad,
                   std::unordered_map<int, dnnl::memory> args);

// Memory of `desc` in the calling thread's buffer `slot` (0 to 2: a primitive's source, destination and weights in
// the layouts its kernel wants), kept and grown between runs: memory oneDNN allocated per run would be mapped and
// page-faulted anew each time, which on a large tensor costs more than converting it. Valid until the thread asks
// for the same slot again (runs wait for their primitives before returning). Above 64 MiB a buffer is allocated
// for the caller and not kept: the faults are small next to the work on such tensors. Its size is added to
// `charge`, which the kernel holds while it uses the memory (the session's memory limit counts it; an error past it).
dnnl::memory thread_memory(int slot, const dnnl::memory::desc& desc, MemoryCharge& charge);

// A reorder between two layouts, made and run that way.
class Reorder {
 public:
  Reorder() = default;
  Reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
  explicit operator bool() const { return static_cast<bool>(reorder_); }
  void operator()(const dnnl::memory& from, const dnnl::memory& to) const;

 private:
  dnnl::reorder reorder_;
  dnnl::memory::desc scratchpad_;
};

// Primitives with their memories, created on first use of a key; safe to use from concurrent runs.
template <class Key, class Entry>
class PrimitiveCache {
 public:
  const Entry& get(const Key& key, const std::function<Entry()>& make) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) it = entries_.emplace(key, std::make_unique<Entry>(make())).first;
    return *it->second;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<Key, std::unique_ptr<Entry>> entries_;
};

// Constant weights reordered into the layouts primitives ask for: one copy per distinct layout, shared by every
// primitive (one per input shape) that wants it. `source` (plain, described by source_desc) must outlive it.
class WeightPacks {
 public:
  WeightPacks(const void* source, dnnl::memory::desc source_desc) : source_(source), source_desc_(source_desc) {}
  dnnl::memory get(const dnnl::memory::desc& layout) const;

 private:
  const void* source_;
  dnnl::memory::desc source_desc_;
  mutable std::mutex mutex_;
  mutable std::vector<dnnl::memory> packs_;
  mutable std::vector<std::shared_ptr<void>> buffers_;  // packs_'s memory (huge pages for large packs)
};

}  // namespace onyx::kernels
