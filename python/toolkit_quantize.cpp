// onyx._onyx._quantize_dynamic / _quantize_static: the bindings of include/onyx/quantize.hpp
// (python/onyx/_quantize.py wraps them).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "convert.hpp"
#include "onyx/quantize.hpp"

namespace onyx::python {

namespace py = pybind11;

namespace {

py::dict quantize_report_dict(const QuantizeReport& r) {
  py::dict d;
  py::dict nodes;
  for (const auto& [op, n] : r.nodes) nodes[py::str(op)] = n;
  d["nodes"] = nodes;
  d["activations"] = r.activations;
  d["weights"] = r.weights;
  d["activations_folded"] = r.activations_folded;
  d["samples"] = r.samples;
  d["skipped"] = r.skipped;
  return d;
}

py::dict quantize_dynamic_py(const std::string& in, const std::string& out, bool per_channel,
                             std::optional<std::vector<std::string>> op_types) {
  DynamicQuantizeOptions o;
  o.per_channel = per_channel;
  if (op_types) o.op_types = std::move(*op_types);
  QuantizeReport r;
  {
    py::gil_scoped_release nogil;
    r = quantize_dynamic(in, out, o);
  }
  return quantize_report_dict(r);
}

// `calibration`: a folder (str) in the ONNX test-data layout, or an iterable of dicts {input name: array}.
py::dict quantize_static_py(const std::string& in, const std::string& out, py::object calibration, bool per_channel,
                            const std::string& activation_type, const std::string& method, double percentile,
                            std::optional<std::vector<std::string>> op_types, int threads) {
  StaticQuantizeOptions o;
  o.per_channel = per_channel;
  if (activation_type == "uint8") o.activation_type = DataType::UInt8;
  else if (activation_type == "int8") o.activation_type = DataType::Int8;
  else raise("InvalidArgument", cat("activation_type '", activation_type, "' is not 'uint8' or 'int8'"));
  if (method == "minmax") o.method = CalibrationMethod::MinMax;
  else if (method == "percentile") o.method = CalibrationMethod::Percentile;
  else raise("InvalidArgument", cat("calibrate_method '", method, "' is not 'minmax' or 'percentile'"));
  if (!(percentile > 0 && percentile <= 100)) raise("InvalidArgument", cat("percentile ", percentile, " is not in (0, 100]"));
  o.percentile = percentile;
  if (op_types) o.op_types = std::move(*op_types);
  if (threads < 0) raise("InvalidArgument", cat("threads ", threads, " is negative"));
  o.threads = threads;
  std::vector<CalibrationSample> samples;
  if (py::isinstance<py::str>(calibration)) {
    const std::string dir = py::cast<std::string>(calibration);
    py::gil_scoped_release nogil;
    samples = read_calibration_dir(dir, in);
  } else {
    size_t k = 0;
    for (py::handle item : calibration) {
      if (!py::isinstance<py::dict>(item))
        raise("InvalidArgument", cat("calibration sample ", k, " is not a dict of input name -> array"));
      CalibrationSample s;
      for (auto [name, value] : py::reinterpret_borrow<py::dict>(item)) {
        const std::string n = py::cast<std::string>(name);
        s[n] = datum_from_python(value, Type{}, cat("calibration sample ", k, ": input '", n, "'"));
      }
      samples.push_back(std::move(s));
      ++k;
    }
  }
  QuantizeReport r;
  {
    py::gil_scoped_release nogil;
    r = quantize_static(in, out, samples, o);
  }
  return quantize_report_dict(r);
}

}  // namespace

void register_toolkit_quantize(py::module_& m) {
  m.def("_quantize_dynamic", &quantize_dynamic_py, py::arg("model_input"), py::arg("model_output"),
        py::arg("per_channel") = false, py::arg("op_types") = py::none());
  m.def("_quantize_static", &quantize_static_py, py::arg("model_input"), py::arg("model_output"),
        py::arg("calibration"), py::arg("per_channel") = false, py::arg("activation_type") = "uint8",
        py::arg("method") = "minmax", py::arg("percentile") = 99.999, py::arg("op_types") = py::none(),
        py::arg("threads") = 0);
}

}  // namespace onyx::python
