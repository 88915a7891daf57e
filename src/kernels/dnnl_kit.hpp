// oneDNN plumbing shared by the fast kernels: one CPU engine per process, one stream per calling thread, and a
// cache of primitives keyed by the shapes they were created for (created once per shape, then reused by every run).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace onyx::kernels {

dnnl::engine& cpu_engine();
dnnl::stream& thread_stream();

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
};

}  // namespace onyx::kernels
