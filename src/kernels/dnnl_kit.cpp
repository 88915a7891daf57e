#include "kernels/dnnl_kit.hpp"

#include "format/mapped_file.hpp"

namespace onyx::kernels {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

dnnl::memory WeightPacks::get(const dnnl::memory::desc& layout) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const dnnl::memory& m : packs_)
    if (m.get_desc() == layout) return m;
  dnnl::memory src(source_desc_, cpu_engine(), const_cast<void*>(source_));  // read only: a reorder's source
  dnnl::memory packed(layout, cpu_engine());
  dnnl::reorder(src, packed).execute(thread_stream(), src, packed);
  thread_stream().wait();
  packs_.push_back(packed);
  // The packed copy is what runs read from now on; a mapped file's copy need not stay resident too.
  release_mapped_pages(source_, source_desc_.get_size());
  return packed;
}

}  // namespace onyx::kernels
