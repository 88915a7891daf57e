// onyx._onyx._parse: the binding of include/onyx/parse.hpp (python/onyx/_parse.py wraps it).
#include <pybind11/pybind11.h>

#include <string>

#include "base/error.hpp"
#include "convert.hpp"
#include "format/onnx_proto.hpp"
#include "format/text_printer.hpp"
#include "onyx/parse.hpp"

namespace onyx::python {

namespace py = pybind11;

void register_toolkit_parse(py::module_& m) {
  // `text`: the model's text as bytes (UTF-8). Returns the serialized model; a syntax error raises
  // InvalidArgument (a ValueError) naming the line and column.
  m.def(
      "_parse",
      [](py::bytes text, std::string source_name) {
        std::string in = text;
        std::string out, error;
        {
          py::gil_scoped_release nogil;
          try {
            out = parse_model_text(in, source_name);
          } catch (const Error& e) {
            error = e.what();
          }
        }
        if (!error.empty()) raise("InvalidArgument", error);
        return py::bytes(out);
      },
      py::arg("text"), py::arg("source_name") = "<text>");
  // The inverse: a model (bytes, or a path when `is_path`) in the textual syntax, as `onyx print` writes it.
  m.def(
      "_to_text",
      [](py::object model, bool is_path) {
        std::string path, bytes, out, error;
        if (is_path) {
          path = py::cast<std::string>(model);
        } else {
          bytes = py::cast<std::string>(py::bytes(model));
        }
        {
          py::gil_scoped_release nogil;
          try {
            pb::ModelDocument doc = is_path ? pb::load_model_file(path) : pb::load_model_bytes(std::move(bytes));
            out = pb::to_text(doc.model);
          } catch (const Error& e) {
            error = e.what();
          }
        }
        if (!error.empty()) raise("InvalidProtobuf", error);
        return py::bytes(out);
      },
      py::arg("model"), py::arg("is_path"));
}

}  // namespace onyx::python
