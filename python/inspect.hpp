// Models as Python sees them outside a session: where a model comes from, onyx.load's inspection objects,
// onyx.check and onyx.optimize.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "convert.hpp"
#include "format/onnx_proto.hpp"

namespace onyx::python {

// A model given as a path (str, bytes path or os.PathLike) or as its bytes (bytes, bytearray, memoryview).
struct ModelSource {
  std::optional<std::filesystem::path> path;
  std::string bytes;

  // Raises NoSuchFile for a path that does not exist and TypeError for other objects.
  static ModelSource from(py::handle obj);
  pb::ModelDocument parse() const;
};

// onyx.load: an onyx._model.Model of the checked model; initializers are read-only numpy views of its memory.
py::object load_model_object(py::handle model);
// onyx.check: raises InvalidProtobuf / InvalidGraph (every checker message, one per line) / Fail (binding and
// inference, as a session would report them).
void check_model_object(py::handle model);
// Writes the model optimized at `level` to `out`. With an `external_file` name, initializers of at least
// `external_min_bytes` go to that file beside `out` (onnxruntime's optimized_model_external_initializers_* config).
// `as_session`: the model is taken as a session takes it (opt::optimize_file), for optimized_model_filepath.
void optimize_model(py::handle model, const std::string& out, int level, const std::string& external_file = "",
                    int64_t external_min_bytes = 1024, bool as_session = false);

}  // namespace onyx::python
