// Page-aligned memory for large buffers (tensors, arenas, packed weights, per-thread scratch).
#pragma once
#include <cstddef>

namespace onyx {

// `bytes` (rounded up in place to what is allocated) of memory aligned to a 4 KiB page, or nullptr when the system
// has none. Blocks of 4 MiB and more are aligned to 2 MiB and asked to be backed by transparent huge pages: their
// first touch then costs one page fault per 2 MiB instead of one per 4 KiB (512x fewer), which is most of the cost
// of making a large model's float32 copies and packed weights at session creation and of its first run. Free with
// std::free.
void* allocate_pages(size_t& bytes);

}  // namespace onyx
