// onyx._onyx._convert_float_to_float16: the binding of include/onyx/float16.hpp (python/onyx/_float16.py wraps it).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "convert.hpp"
#include "onyx/float16.hpp"

namespace onyx::python {

namespace py = pybind11;

namespace {

// `model`: bytes of a model, or a path (str) when `is_path`. Returns (bytes, report dict).
py::tuple convert_float16(py::object model, bool is_path, bool keep_io_types,
                          std::optional<std::vector<std::string>> op_block_list,
                          std::vector<std::string> node_block_list, float min_positive_val, float max_finite_val) {
  opt::Float16Options o;
  o.keep_io_types = keep_io_types;
  o.op_block_list = std::move(op_block_list);
  o.node_block_list = std::move(node_block_list);
  o.min_positive_val = min_positive_val;
  o.max_finite_val = max_finite_val;
  std::string path, bytes, out, error;
  const char* cls = "InvalidProtobuf";
  if (is_path) path = py::cast<std::string>(model);
  else bytes = py::cast<std::string>(py::bytes(model));
  opt::Float16Report r;
  {
    py::gil_scoped_release nogil;
    try {
      pb::ModelDocument doc = is_path ? pb::load_model_file(path) : pb::load_model_bytes(std::move(bytes));
      cls = "InvalidGraph";
      out = opt::convert_float_to_float16(doc, o, &r);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  if (!error.empty()) raise(cls, error);
  py::dict report;
  report["tensors_converted"] = r.tensors_converted;
  report["float32_bytes"] = r.float32_bytes;
  report["float16_bytes"] = r.float16_bytes;
  report["clamped_small"] = r.clamped_small;
  report["clamped_large"] = r.clamped_large;
  report["casts_inserted"] = r.casts_inserted;
  report["blocked_ops"] = r.blocked_ops;
  return py::make_tuple(py::bytes(out), report);
}

}  // namespace

void register_toolkit_float16(py::module_& m) {
  m.def("_convert_float_to_float16", &convert_float16, py::arg("model"), py::arg("is_path"), py::arg("keep_io_types"),
        py::arg("op_block_list").none(true), py::arg("node_block_list"), py::arg("min_positive_val"),
        py::arg("max_finite_val"));
  m.def("_float16_default_op_block_list", [] { return opt::default_float16_op_block_list(); });
}

}  // namespace onyx::python
