#include "base/pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace onyx {

namespace {

// The registered file mappings (first byte -> one past the last).
std::mutex& mappings_mutex() {
  static std::mutex m;
  return m;
}
std::map<uintptr_t, uintptr_t>& mappings() {
  static auto* m = new std::map<uintptr_t, uintptr_t>;  // never destroyed: mappings may end during exit
  return *m;
}

}  // namespace

void register_file_mapping(const void* p, uint64_t n) {
  std::lock_guard lock(mappings_mutex());
  mappings()[reinterpret_cast<uintptr_t>(p)] = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(n);
}

void unregister_file_mapping(const void* p) {
  std::lock_guard lock(mappings_mutex());
  mappings().erase(reinterpret_cast<uintptr_t>(p));
}

void release_mapped_pages(const void* p, uint64_t n) {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  const uintptr_t page = page_size > 0 ? static_cast<uintptr_t>(page_size) : 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (n == 0 || end <= begin) return;
  std::lock_guard lock(mappings_mutex());
  auto it = mappings().upper_bound(reinterpret_cast<uintptr_t>(p));
  if (it == mappings().begin()) return;
  --it;
  if (reinterpret_cast<uintptr_t>(p) < it->first || reinterpret_cast<uintptr_t>(p) + n > it->second) return;
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void* allocate_pages(size_t& bytes) {
  constexpr size_t kPage = 4096, kHugePage = size_t{2} << 20, kHugeFrom = size_t{4} << 20;
  if (bytes < kHugeFrom) {
    bytes = (bytes + kPage - 1) / kPage * kPage;
    return std::aligned_alloc(kPage, bytes);
  }
  bytes = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, bytes);
  // Advice only: where transparent huge pages are off, the block is plain 4 KiB pages.
  if (p) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

}  // namespace onyx
