// Page-aligned memory for large buffers (tensors, arenas, packed weights, per-thread scratch).
#pragma once
#include <cstddef>
#include <cstdint>

namespace onyx {

// `bytes` (rounded up in place to what is allocated) of memory aligned to a 4 KiB page, or nullptr when the system
// has none. Blocks of 4 MiB and more are aligned to 2 MiB and asked to be backed by transparent huge pages: their
// first touch then costs one page fault per 2 MiB instead of one per 4 KiB (512x fewer), which is most of the cost
// of making a large model's float32 copies and packed weights at session creation and of its first run. Free with
// std::free.
void* allocate_pages(size_t& bytes);

// The read-only file mappings whose pages release_mapped_pages may drop (MappedFile registers each of its
// mappings for its lifetime).
void register_file_mapping(const void* p, uint64_t n);
void unregister_file_mapping(const void* p);

// Drops the resident pages lying wholly inside [p, p + n) when that range belongs to a registered file mapping:
// the next touch reads them back from the file. For bytes a kernel has copied into a layout of its own (packed
// weights), so the process does not keep both copies resident. A no-op for memory that is not a mapped file.
void release_mapped_pages(const void* p, uint64_t n);

}  // namespace onyx
