// MappedFile: a read-only view of a whole file's bytes, either memory-mapped from disk
// (mmap, PROT_READ, MAP_PRIVATE) or owned in memory (for models handed over as bytes).
//
// Sizes are 64-bit throughout; there is no 2 GB limit. An empty file is not mapped at all:
// data() is nullptr and size() is 0. No madvise hint is given by default, so mapping a file
// reads none of its pages; they are faulted in only when the bytes are actually touched.
//
// Caveat inherent to mmap: if another process truncates the file while it is mapped, touching
// the vanished pages raises SIGBUS. Files are expected not to change while a model is loaded.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace onyx {

class MappedFile {
 public:
  // Maps the whole file at `path`. Throws onyx::Error naming the path and the system's reason
  // (missing file, permission denied, a directory or other non-regular file, mmap failure).
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);

  // Maps the whole regular file behind an already open descriptor. The descriptor stays owned by
  // the caller (it may be closed right after; the mapping survives). `path` is used for messages
  // and path(). Throws onyx::Error as open() does.
  static std::shared_ptr<const MappedFile> map_fd(int fd, const std::filesystem::path& path);

  // Holds `bytes` (moved in) as if they were a file's contents; path() is empty.
  static std::shared_ptr<const MappedFile> from_bytes(std::string bytes);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // First byte, or nullptr when size() is 0.
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  std::string_view view() const;
  // The path the file was opened under (empty for from_bytes).
  const std::filesystem::path& path() const { return path_; }
  // True when the bytes come from a memory mapping (false for empty files and from_bytes).
  bool is_mapped() const { return mapped_; }

  // Optional hint that [offset, offset + length) will be read soon (MADV_WILLNEED on a mapping;
  // no-op otherwise). The range is clamped to the file; failures are ignored (it is only a hint).
  void prefetch(uint64_t offset, uint64_t length) const;

 private:
  MappedFile() = default;

  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  std::filesystem::path path_;
  std::string owned_;
};

}  // namespace onyx
