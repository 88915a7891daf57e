#include "base/pages.hpp"

#include <sys/mman.h>

#include <cstdlib>

namespace onyx {

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
