// Writing a model to disk, deciding for each tensor whether its data goes inline or to an external data file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "format/onnx_proto.hpp"

namespace onyx {

struct SaveOptions {
  enum class Data {
    Keep,       // inline stays inline, external stays external (moved into the new data file if the folder changes)
    External,   // initializers of at least `threshold` bytes go to the external data file, the rest inline
    Inline,     // every tensor inline
  };
  Data data = Data::Keep;
  uint64_t threshold = 1024;
  // File name (in the output's folder) for external data; default "<output file name>.data".
  std::optional<std::string> data_file;
};

struct SaveReport {
  uint64_t tensors_external = 0, tensors_inlined = 0, external_bytes = 0;
  std::filesystem::path data_file;  // empty when none was written
};

// Writes `doc`'s model to `out` (through a temporary file and a rename, so `out` may be the input itself).
SaveReport save_model(const pb::ModelDocument& doc, const std::filesystem::path& out, const SaveOptions& opts = {});

}  // namespace onyx
