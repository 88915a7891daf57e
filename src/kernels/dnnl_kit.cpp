#include "kernels/dnnl_kit.hpp"

#include <cstdlib>
#include <new>

#include "base/error.hpp"
#include "base/memory_budget.hpp"
#include "base/pages.hpp"
#include "kernels/library_errors.hpp"

namespace onyx::kernels {

void rethrow_library_error(const std::string& context) {
  try {
    throw;
  } catch (const dnnl::error& e) {
    throw Error(cat(context, "oneDNN cannot run it: ", e.what()));
  } catch (const std::bad_alloc&) {
    throw Error(cat(context, "out of memory"), ErrorKind::MemoryLimit);
  }
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

namespace {

// Grow-only buffers of one thread, by slot: thread_memory's three, and the scratchpad. Primitives run to completion
// before the next one starts (the CPU stream executes in order), so one scratchpad per thread serves them all.
struct ThreadBuffers {
  static constexpr int kPublicSlots = 3, kScratchpad = kPublicSlots, kSlots = kPublicSlots + 1;
  void* data[kSlots] = {};
  size_t size[kSlots] = {};
  ~ThreadBuffers() {
    for (void* p : data) std::free(p);
  }
  void* get(int slot, size_t bytes) {
    if (bytes > size[slot]) {
      size_t rounded = bytes;
      void* p = allocate_pages(rounded);
      if (!p) throw std::bad_alloc();
      std::free(data[slot]);
      data[slot] = p;
      size[slot] = rounded;
    }
    return data[slot];
  }
};

ThreadBuffers& thread_buffers() {
  thread_local ThreadBuffers buffers;
  return buffers;
}

void add_scratchpad(std::unordered_map<int, dnnl::memory>& args, const dnnl::memory::desc& d, MemoryCharge& charge) {
  const size_t bytes = d.get_size();
  if (bytes == 0) return;
  charge.add(bytes, "oneDNN's scratchpad for this node");
  args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(d, cpu_engine(), thread_buffers().get(ThreadBuffers::kScratchpad, bytes)));
}

}  // namespace

dnnl::primitive_attr Epilogue::attr() const {
  dnnl::post_ops ops;
  if (sum) ops.append_sum(1.0f);
  for (const Eltwise& e : eltwise) ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
  dnnl::primitive_attr a;
  a.set_post_ops(ops);
  return a;
}

dnnl::memory thread_memory(int slot, const dnnl::memory::desc& desc, MemoryCharge& charge) {
  constexpr size_t kKeepBytes = size_t{64} << 20;
  if (slot < 0 || slot >= ThreadBuffers::kPublicSlots) fail("thread_memory: no slot ", slot);
  const size_t bytes = desc.get_size();
  charge.add(bytes, "a copy of a tensor in the layout oneDNN wants");
  if (bytes > kKeepBytes) return dnnl::memory(desc, cpu_engine());
  return dnnl::memory(desc, cpu_engine(), thread_buffers().get(slot, bytes));
}

dnnl::primitive_attr own_scratchpad(dnnl::primitive_attr attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void run_primitive(const dnnl::primitive& p, const dnnl::memory::desc& scratchpad,
                   std::unordered_map<int, dnnl::memory> args) {
  MemoryCharge charge;  // while the primitive runs (on the CPU, execute returns when it has run)
  add_scratchpad(args, scratchpad, charge);
  p.execute(thread_stream(), args);
}

Reorder::Reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to, own_scratchpad());
  reorder_ = dnnl::reorder(pd);
  scratchpad_ = pd.scratchpad_desc();
}

void Reorder::operator()(const dnnl::memory& from, const dnnl::memory& to) const {
  run_primitive(reorder_, scratchpad_, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

dnnl::memory WeightPacks::get(const dnnl::memory::desc& layout) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const dnnl::memory& m : packs_)
    if (m.get_desc() == layout) return m;
  dnnl::memory src(source_desc_, cpu_engine(), const_cast<void*>(source_));  // read only: a reorder's source
  size_t bytes = layout.get_size();
  std::shared_ptr<void> buffer(allocate_pages(bytes), [](void* p) { std::free(p); });
  if (!buffer) throw std::bad_alloc();
  dnnl::memory packed(layout, cpu_engine(), buffer.get());
  Reorder(source_desc_, layout)(src, packed);
  thread_stream().wait();
  packs_.push_back(packed);
  buffers_.push_back(std::move(buffer));
  // The packed copy is what runs read from now on; a mapped file's copy need not stay resident too.
  release_mapped_pages(source_, source_desc_.get_size());
  return packed;
}

}  // namespace onyx::kernels
