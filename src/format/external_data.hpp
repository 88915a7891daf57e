// ONNX external data: tensors whose bytes live in a separate file next to the model, described by
// TensorProto.external_data key/value entries ("location", "offset", "length", "checksum"; see
// onnx/onnx docs/ExternalData.md).
//
// The location comes from an untrusted model, so resolving it is confined to the model directory:
// no absolute paths, no '..' components, no symlink (anywhere along the path) leading outside the
// directory, no hard-linked files, only regular files, and every byte range checked against the
// file size. Both '/' and '\' count as path separators in a location (models written on Windows
// may use '\'); on disk the location is always resolved with '/'.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/mapped_file.hpp"

namespace onyx {

struct ExternalDataRef {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  // Recorded as given; not verified.
  std::optional<std::string> checksum;
};

// Parses TensorProto.external_data entries. Throws onyx::Error (naming the tensor) when
// "location" is missing or empty, when "offset"/"length" is not a plain decimal number that fits
// in uint64 (negative, non-numeric, empty or overflowing), or when any key appears twice.
// Unknown keys are ignored.
ExternalDataRef parse_external_data(
    const std::vector<std::pair<std::string_view, std::string_view>>& entries,
    std::string_view tensor_name);

// Resolves external data references of one model against its directory, mapping each data file
// once. Not thread-safe: use one resolver per loading thread, or lock around resolve().
class ExternalDataResolver {
 public:
  // Data files served from memory, by location (matched as written in the model, before any path checks).
  using MemoryFiles = std::map<std::string, std::shared_ptr<const std::string>>;

  // `model_dir` is the directory holding the model file; an empty path means the current
  // directory (what path("model.onnx").parent_path() gives). It is canonicalized on first use.
  // A location that is a key of `memory_files` reads that buffer instead (same range checks).
  explicit ExternalDataResolver(std::filesystem::path model_dir, MemoryFiles memory_files = {});

  struct View {
    std::shared_ptr<const MappedFile> file;  // keeps the mapping alive (null for an in-memory file)
    std::shared_ptr<const void> keep;        // keeps the bytes alive: the mapping or the in-memory file
    std::string_view bytes;                  // [offset, offset + length) of the file
  };

  // Returns the bytes [ref.offset, ref.offset + length) of the file named by ref.location, where
  // length defaults to file size - offset. Checks that the location is non-empty, relative and
  // free of '..' components; that the file, after resolving every symlink, is inside the
  // (canonical) model directory; that it is a regular file with a single hard link; that the
  // range lies within the file (overflow-safe); and, when expected_bytes is given, that the
  // length equals it. Throws onyx::Error naming the tensor, the location and the problem.
  View resolve(const ExternalDataRef& ref, std::optional<uint64_t> expected_bytes,
               std::string_view tensor_name);

  const std::filesystem::path& model_dir() const { return model_dir_; }

 private:
  // The mapped file a location names, after the checks on its text and its place on disk.
  std::shared_ptr<const MappedFile> resolve_file(std::string_view location, const std::string& where,
                                                 std::string_view tensor_name);
  std::shared_ptr<const MappedFile> open_checked(const std::filesystem::path& canonical_file,
                                                 std::string_view location,
                                                 std::string_view tensor_name);

  std::filesystem::path model_dir_;
  std::optional<std::filesystem::path> canonical_dir_;
  std::map<std::string, std::shared_ptr<const MappedFile>> cache_;  // by canonical path
  MemoryFiles memory_files_;
};

}  // namespace onyx
