// The model tools for the Python package (onyx.infer_shapes, onyx.extract_model, onyx.merge_models; the
// user-facing functions are in onyx/_model_tools.py): models in as paths or bytes, out as bytes.
#include <pybind11/stl.h>

#include "inspect.hpp"
#include "onyx/model_tools.hpp"

namespace onyx::python {
namespace {

py::bytes model_bytes(const pb::ModelDocument& doc) {
  std::string s = pb::serialize_model(doc.model);
  return py::bytes(s);
}

py::dict tally_dict(const opt::ShapeTally& t) {
  py::dict d;
  d["agree"] = t.agree;
  d["onyx_more"] = t.onyx_more;
  d["reference_more"] = t.reference_more;
  d["mixed"] = t.mixed;
  d["disagree"] = t.disagree;
  d["disagreements"] = t.disagreements;
  d["reference_extra"] = t.reference_extra;
  return d;
}

}  // namespace

void register_toolkit_model_tools(py::module_& m) {
  m.def(
      "_infer_shapes",
      [](py::handle model) {
        pb::ModelDocument doc = ModelSource::from(model).parse();
        opt::infer_shapes(doc);
        return model_bytes(doc);
      },
      py::arg("model"));
  m.def(
      "_check_inferred_shapes",
      [](py::handle reference, bool outputs_too) {
        return tally_dict(opt::check_inferred_shapes(ModelSource::from(reference).parse(), outputs_too));
      },
      py::arg("reference"), py::arg("outputs_too") = false);
  m.def(
      "_extract_model",
      [](py::handle model, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
        return model_bytes(opt::extract_model(ModelSource::from(model).parse(), inputs, outputs));
      },
      py::arg("model"), py::arg("inputs"), py::arg("outputs"));
  m.def(
      "_merge_models",
      [](py::handle a, py::handle b, const std::vector<std::pair<std::string, std::string>>& io_map,
         const std::string& prefix1, const std::string& prefix2) {
        opt::MergeOptions options{prefix1, prefix2};
        return model_bytes(
            opt::merge_models(ModelSource::from(a).parse(), ModelSource::from(b).parse(), io_map, options));
      },
      py::arg("a"), py::arg("b"), py::arg("io_map"), py::arg("prefix1") = "", py::arg("prefix2") = "");
}

}  // namespace onyx::python
