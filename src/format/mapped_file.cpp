#include "format/mapped_file.hpp"


#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <limits>
#include <system_error>
#include <utility>

#include "base/error.hpp"
#include "base/pages.hpp"

namespace onyx {

namespace {

}  // namespace

namespace {

std::string reason(int err) { return std::system_category().message(err); }

// Closes a descriptor on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_;
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  // O_NONBLOCK keeps open() from hanging on a FIFO; it has no effect on regular files, and
  // anything that is not a regular file is refused by map_fd() anyway.
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    fail("cannot open file '", path.string(), "': ", reason(err));
  }
  FdCloser closer(fd);
  return map_fd(fd, path);
}

std::shared_ptr<const MappedFile> MappedFile::map_fd(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    fail("cannot stat file '", path.string(), "': ", reason(err));
  }
  if (S_ISDIR(st.st_mode)) fail("cannot map file '", path.string(), "': ", reason(EISDIR));
  if (!S_ISREG(st.st_mode)) fail("cannot map file '", path.string(), "': not a regular file");
  if (st.st_size < 0) fail("cannot map file '", path.string(), "': negative file size");

  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > std::numeric_limits<size_t>::max()) {
    fail("cannot map file '", path.string(), "': its size ", size,
         " exceeds this platform's address space");
  }

  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  if (size == 0) return file;  // mmap of length 0 is invalid; an empty file has no bytes anyway.

  void* addr = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    const int err = errno;
    fail("cannot map file '", path.string(), "' (", size, " bytes): ", reason(err));
  }
  file->data_ = static_cast<const uint8_t*>(addr);
  file->size_ = size;
  file->mapped_ = true;
  register_file_mapping(addr, size);
  return file;
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(std::string bytes) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->owned_ = std::move(bytes);
  file->size_ = file->owned_.size();
  if (file->size_ != 0) file->data_ = reinterpret_cast<const uint8_t*>(file->owned_.data());
  return file;
}

MappedFile::~MappedFile() {
  if (!mapped_) return;
  unregister_file_mapping(data_);
  ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
}

std::string_view MappedFile::view() const {
  if (data_ == nullptr) return {};
  return std::string_view(reinterpret_cast<const char*>(data_), static_cast<size_t>(size_));
}

void MappedFile::prefetch(uint64_t offset, uint64_t length) const {
  if (!mapped_ || offset >= size_) return;
  if (length > size_ - offset) length = size_ - offset;
  if (length == 0) return;
  const long page_size = ::sysconf(_SC_PAGESIZE);
  const uint64_t page = page_size > 0 ? static_cast<uint64_t>(page_size) : 4096;
  const uint64_t begin = offset - offset % page;  // madvise needs a page-aligned start
  const uint64_t end = offset + length;
  ::madvise(const_cast<uint8_t*>(data_) + begin, static_cast<size_t>(end - begin), MADV_WILLNEED);
}

}  // namespace onyx
