// onyx._onyx._convert_version: the binding of include/onyx/version_convert.hpp (python/onyx/_version_convert.py
// wraps it).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "base/error.hpp"
#include "convert.hpp"
#include "onyx/version_convert.hpp"

namespace onyx::python {

namespace py = pybind11;

namespace {

// `model`: bytes of a model, or a path (str) when `is_path`. Returns (bytes, report dict).
py::tuple convert_version_binding(py::object model, bool is_path, int64_t target_opset) {
  std::string path, bytes, out, error;
  const char* cls = "InvalidProtobuf";
  if (is_path) path = py::cast<std::string>(model);
  else bytes = py::cast<std::string>(py::bytes(model));
  opt::VersionConvertReport r;
  {
    py::gil_scoped_release nogil;
    try {
      pb::ModelDocument doc = is_path ? pb::load_model_file(path) : pb::load_model_bytes(std::move(bytes));
      cls = "InvalidGraph";
      pb::ModelDocument converted = opt::convert_version(doc, target_opset, &r);
      out = pb::serialize_model(converted.model);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  if (!error.empty()) raise(cls, error);
  py::dict report;
  report["from"] = r.from;
  report["to"] = r.to;
  report["nodes_adapted"] = r.nodes_adapted;
  report["notes"] = r.notes;
  return py::make_tuple(py::bytes(out), report);
}

}  // namespace

void register_toolkit_version_convert(py::module_& m) {
  m.def("_convert_version", &convert_version_binding, py::arg("model"), py::arg("is_path"), py::arg("target_opset"),
        "A model (bytes, or a path when is_path) converted to default-domain opset target_opset: (bytes, report).");
}

}  // namespace onyx::python
