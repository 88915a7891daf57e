#include "format/external_data.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <set>
#include <system_error>

#include "base/error.hpp"

namespace onyx {
namespace {

// Quotes text for an error message: 'text', with control bytes as \xNN so that a
// hostile name cannot garble the message or the terminal.
std::string quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string what(std::string_view tensor_name, std::string_view location) {
  return cat("tensor ", quote(tensor_name), ": external data location ", quote(location));
}

uint64_t parse_number(std::string_view key, std::string_view text, std::string_view tensor_name,
                      std::string_view location) {
  const std::string prefix = cat(what(tensor_name, location), ": ", key, " ", quote(text));
  if (text.empty()) fail(prefix, " is empty");
  if (text.front() == '-') fail(prefix, " is negative");
  for (char c : text) {
    if (c < '0' || c > '9') fail(prefix, " is not a decimal number");
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) fail(prefix, " does not fit in 64 bits");
  if (ec != std::errc() || end != text.data() + text.size()) {
    fail(prefix, " is not a decimal number");
  }
  return value;
}

// Splits a location on '/' and '\'; empty components (from "a//b") are kept as empty strings.
std::vector<std::string_view> components(std::string_view location) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= location.size(); ++i) {
    if (i == location.size() || location[i] == '/' || location[i] == '\\') {
      parts.push_back(location.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

bool is_absolute_location(std::string_view location) {
  if (!location.empty() && (location.front() == '/' || location.front() == '\\')) return true;
  // A Windows drive ("C:", "C:\x", "C:x") is never a relative path inside the model directory.
  if (location.size() >= 2 && location[1] == ':') {
    const char d = location[0];
    if ((d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z')) return true;
  }
  return false;
}

// True when `inner` is strictly below `outer`; both are canonical (absolute, no '.', '..' or
// symlinks), so a component-wise prefix comparison is exact.
bool strictly_inside(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator yields an empty last element
    if (i == inner.end() || *i != *o) return false;
  }
  for (; i != inner.end(); ++i) {
    if (!i->empty()) return true;
  }
  return false;
}

}  // namespace

ExternalDataRef parse_external_data(
    const std::vector<std::pair<std::string_view, std::string_view>>& entries,
    std::string_view tensor_name) {
  std::optional<std::string_view> location, offset, length, checksum;
  std::set<std::string_view> seen;
  std::optional<std::string_view> duplicate;
  for (const auto& [key, value] : entries) {
    if (!seen.insert(key).second) {
      if (!duplicate) duplicate = key;
      continue;
    }
    if (key == "location") {
      location = value;
    } else if (key == "offset") {
      offset = value;
    } else if (key == "length") {
      length = value;
    } else if (key == "checksum") {
      checksum = value;
    }
  }

  if (!location) fail("tensor ", quote(tensor_name), ": external data has no 'location' entry");
  if (location->empty()) fail(what(tensor_name, *location), " is empty");
  if (duplicate) fail(what(tensor_name, *location), ": key ", quote(*duplicate), " appears twice");

  ExternalDataRef ref;
  ref.location = std::string(*location);
  if (offset) ref.offset = parse_number("offset", *offset, tensor_name, *location);
  if (length) ref.length = parse_number("length", *length, tensor_name, *location);
  if (checksum) ref.checksum = std::string(*checksum);
  return ref;
}

ExternalDataResolver::ExternalDataResolver(std::filesystem::path model_dir, MemoryFiles memory_files)
    : model_dir_(std::move(model_dir)), memory_files_(std::move(memory_files)) {
  if (model_dir_.empty()) model_dir_ = ".";
}

ExternalDataResolver::View ExternalDataResolver::resolve(const ExternalDataRef& ref,
                                                         std::optional<uint64_t> expected_bytes,
                                                         std::string_view tensor_name) {
  const std::string_view location = ref.location;
  const std::string where = what(tensor_name, location);

  if (location.empty()) fail(where, " is empty");
  // A file the caller serves from memory: no path to confine, only the range to check.
  std::shared_ptr<const void> keep;
  std::shared_ptr<const MappedFile> mapped;
  std::string_view contents;
  if (const auto in_memory = memory_files_.find(ref.location); in_memory != memory_files_.end()) {
    if (!in_memory->second) fail(where, ": its in-memory file is null");
    keep = in_memory->second;
    contents = *in_memory->second;
  } else {
    mapped = resolve_file(location, where, tensor_name);
    contents = mapped->view();
    keep = mapped;
  }

  // Range checks, written so that nothing can overflow.
  const uint64_t size = contents.size();
  if (ref.offset > size) {
    fail(where, ": offset ", ref.offset, " is beyond the end of the file (", size, " bytes)");
  }
  const uint64_t available = size - ref.offset;
  const uint64_t length = ref.length.value_or(available);
  if (length > available) {
    fail(where, ": offset ", ref.offset, " + length ", length, " is beyond the end of the file (",
         size, " bytes)");
  }
  if (expected_bytes && length != *expected_bytes) {
    fail(where, ": length ", length, " does not match the ", *expected_bytes,
         " bytes the tensor's type and shape need");
  }

  View view;
  view.bytes = contents.substr(static_cast<size_t>(ref.offset), static_cast<size_t>(length));
  view.keep = std::move(keep);
  view.file = std::move(mapped);
  return view;
}

std::shared_ptr<const MappedFile> ExternalDataResolver::resolve_file(std::string_view location,
                                                                     const std::string& where,
                                                                     std::string_view tensor_name) {
  // Checks on the text of the location.
  if (location.find('\0') != std::string_view::npos) fail(where, " contains a NUL byte");
  if (is_absolute_location(location)) fail(where, " is an absolute path");
  std::string relative;  // the location with '/' separators
  for (std::string_view part : components(location)) {
    if (part == "..") fail(where, " has a '..' component");
    if (part.empty() || part == ".") continue;
    if (!relative.empty()) relative += '/';
    relative += part;
  }
  if (relative.empty()) fail(where, " names the model directory itself, not a file");

  // Resolve on disk: every symlink, in the parents and the file itself, must stay inside.
  if (!canonical_dir_) {
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::canonical(model_dir_, ec);
    if (ec) {
      fail(where, ": model directory ", quote(model_dir_.string()), " cannot be resolved: ",
           ec.message());
    }
    canonical_dir_ = std::move(dir);
  }
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::canonical(*canonical_dir_ / relative, ec);
  if (ec) {
    fail(where, " cannot be resolved in model directory ", quote(canonical_dir_->string()), ": ",
         ec.message());
  }
  if (!strictly_inside(file, *canonical_dir_)) {
    if (file == *canonical_dir_) fail(where, " names the model directory itself, not a file");
    fail(where, " resolves to ", quote(file.string()), ", outside the model directory ",
         quote(canonical_dir_->string()));
  }

  const auto cached = cache_.find(file.string());
  if (cached != cache_.end()) return cached->second;
  std::shared_ptr<const MappedFile> mapped = open_checked(file, location, tensor_name);
  cache_.emplace(file.string(), mapped);
  return mapped;
}

std::shared_ptr<const MappedFile> ExternalDataResolver::open_checked(
    const std::filesystem::path& canonical_file, std::string_view location,
    std::string_view tensor_name) {
  const std::string where = what(tensor_name, location);
  // The path is canonical, so its last component is no symlink; O_NOFOLLOW makes sure it did not
  // become one since. O_NONBLOCK keeps a FIFO from blocking open(); it is refused below.
  int fd;
  do {
    fd = ::open(canonical_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    fail(where, ": cannot open ", quote(canonical_file.string()), ": ",
         std::system_category().message(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    fail(where, ": cannot stat ", quote(canonical_file.string()), ": ",
         std::system_category().message(err));
  }
  if (S_ISDIR(st.st_mode)) fail(where, " is a directory, not a regular file");
  if (!S_ISREG(st.st_mode)) fail(where, " is not a regular file");
  if (st.st_nlink > 1) {
    fail(where, " is a hard-linked file (", static_cast<uint64_t>(st.st_nlink),
         " links); refused because it may alias a file outside the model directory");
  }
  try {
    return MappedFile::map_fd(fd, canonical_file);
  } catch (const Error& e) {
    fail(where, ": ", e.what());
  }
}

}  // namespace onyx
