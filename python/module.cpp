// The extension module onyx._onyx: sessions over onyx's C++ API (include/onyx/session.hpp), run options with a
// terminate flag, and model inspection. The Python package (python/onyx/__init__.py) builds onnxruntime's
// interface on these.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "convert.hpp"
#include "format/onnx_proto.hpp"
#include "inspect.hpp"
#include "onyx/session.hpp"

namespace onyx::python {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct RunFlags {
  std::atomic<bool> terminate{false};
  int64_t timeout_ms = 0;
  int log_severity_level = 2;
  int log_verbosity_level = 0;
  std::string logid;
  bool only_execute_path_to_fetches = false;
  std::map<std::string, std::string> config;
};

// Which ORT error class a failed load is: unreadable bytes, a model the checker rejects, or anything later
// (binding, inference). Only run after a failure, so a good model is parsed once.
[[noreturn]] void raise_load_error(const ModelSource& src, const std::string& message) {
  try {
    pb::ModelDocument doc = src.parse();
    if (!check::check_model(doc).empty()) raise("InvalidGraph", message);
  } catch (const Error&) {
    raise("InvalidProtobuf", message);
  }
  raise("Fail", message);
}

std::string names_text(const std::vector<IoInfo>& infos) {
  std::string s;
  for (const IoInfo& i : infos) s += (s.empty() ? "'" : ", '") + i.name + "'";
  return s.empty() ? "none" : s;
}

py::tuple io_tuple(const std::string& name, const Type& t) { return py::make_tuple(name, t.to_string(), shape_list(t)); }

class PySession {
 public:
  PySession(py::handle model, int threads, int level, int log_level, bool accept_newer_versions,
            int64_t memory_limit_mb) {
    ModelSource src = ModelSource::from(model);
    SessionOptions options;
    options.threads = threads;
    options.optimization_level = level;
    options.log_level = log_level;
    options.accept_newer_versions = accept_newer_versions;
    if (memory_limit_mb < 0 || memory_limit_mb > (int64_t{1} << 40))
      raise("InvalidArgument", cat("memory_limit_mb must lie in [0, 2^40], got ", memory_limit_mb));
    options.memory_limit_mb = static_cast<uint64_t>(memory_limit_mb);
    std::string error;
    {
      py::gil_scoped_release nogil;
      try {
        session_.emplace(src.path ? Session::from_file(*src.path, options) : Session::from_bytes(src.bytes, options));
      } catch (const Error& e) {
        error = e.what();
      }
    }
    if (!session_) raise_load_error(src, error);
  }

  py::list inputs() const {
    py::list out;
    for (const IoInfo& i : session_->inputs()) out.append(io_tuple(i.name, i.type));
    return out;
  }
  py::list outputs() const {
    py::list out;
    for (const IoInfo& i : session_->outputs()) out.append(io_tuple(i.name, i.type));
    return out;
  }
  // Graph inputs that have an initializer: feeding them is optional.
  py::list overridable_initializers() const {
    py::list out;
    for (const Value* v : session_->model().graph->inputs)
      if (v->initializer) out.append(io_tuple(v->name, v->type));
    return out;
  }
  py::dict metadata() const {
    const Model& m = session_->model();
    py::dict custom;
    for (const auto& [k, v] : m.metadata) custom[py::str(k)] = py::str(v);
    py::dict d;
    d["producer_name"] = m.producer_name;
    d["graph_name"] = m.graph->name;
    d["domain"] = m.domain;
    d["description"] = m.doc_string;
    d["graph_description"] = m.graph->doc_string;
    d["version"] = m.model_version;
    d["custom_metadata_map"] = custom;
    return d;
  }

  // Returns (outputs, profile entries or None, run start and end on the steady clock in ns).
  py::tuple run(const std::vector<std::string>& output_names, py::dict feeds, RunFlags* flags, bool profile) const {
    const Model& model = session_->model();
    const Graph& g = *model.graph;
    std::map<std::string, Datum> data;
    for (auto [key, value] : feeds) {
      if (!PyUnicode_Check(key.ptr()))
        raise("InvalidArgument", cat(model.label, ": feed names must be str, got ", std::string(py::repr(key))));
      auto name = py::cast<std::string>(key);
      const Value* v = g.find_local(name);
      if (!v || !v->is_graph_input)
        raise("InvalidArgument", cat(model.label, ": '", name, "' is not an input of the model (inputs: ",
                                     names_text(session_->inputs()), ")"));
      data.emplace(name, datum_from_python(value, v->type, cat(model.label, ": input '", name, "'")));
    }
    std::string missing;
    for (const IoInfo& i : session_->inputs())
      if (!data.count(i.name)) missing += (missing.empty() ? "'" : ", '") + i.name + "' " + i.type.to_string_with_shape();
    if (!missing.empty())
      raise("InvalidArgument", cat(model.label, ": required input", missing.find(", '") != std::string::npos ? "s " : " ",
                                   missing, " missing from the feed"));
    for (const std::string& n : output_names) {
      bool found = false;
      for (const IoInfo& o : session_->outputs()) found = found || o.name == n;
      if (!found)
        raise("InvalidArgument", cat(model.label, ": '", n, "' is not an output of the model (outputs: ",
                                     names_text(session_->outputs()), ")"));
    }
    RunOptions options;
    options.terminate = flags ? &flags->terminate : nullptr;
    options.timeout_ms = flags ? flags->timeout_ms : 0;
    std::vector<NodeTiming> timings;
    if (profile) options.profile = &timings;
    std::vector<std::pair<std::string, Datum>> results;
    std::string error;
    int64_t began = 0, ended = 0;
    {
      py::gil_scoped_release nogil;
      began = steady_ns();
      try {
        results = session_->run(data, output_names, options);
      } catch (const Error& e) {
        error = e.what();
      }
      ended = steady_ns();
    }
    if (!error.empty()) raise("Fail", error);
    py::list outs;
    for (auto& [name, d] : results) outs.append(datum_to_python(std::move(d)));
    py::object prof = py::none();
    if (profile) {
      py::list entries;
      for (const NodeTiming& t : timings)
        entries.append(py::make_tuple(t.graph, t.node, t.op_type, t.start_ns, t.duration_ns));
      prof = entries;
    }
    return py::make_tuple(outs, prof, began, ended);
  }

 private:
  std::optional<Session> session_;
};

// For the tests of zero-copy feeding: the address of the data a value becomes as a feed (0 when it has none).
uintptr_t feed_address(py::handle obj) {
  Datum d = datum_from_python(obj, Type{}, "value");
  if (!d.is_tensor() || d.tensor.dtype() == DataType::String) return 0;
  return reinterpret_cast<uintptr_t>(d.tensor.bytes().data());
}

}  // namespace
}  // namespace onyx::python

PYBIND11_MODULE(_onyx, m) {
  using namespace onyx::python;
  m.doc() = "onyx's C++ engine for the onyx Python package; use the package (import onyx), not this module.";
  register_error_translation();

  py::class_<RunFlags>(m, "RunOptions",
                       "Options of one run. Setting `terminate` to True, from any thread, stops runs using these "
                       "options before their next node (they raise onyx.Fail); `timeout_ms` (onyx's own, 0: none) "
                       "stops each run that passes that many milliseconds, in the same way.")
      .def(py::init<>())
      .def_property(
          "terminate", [](const RunFlags& f) { return f.terminate.load(); },
          [](RunFlags& f, bool v) { f.terminate.store(v); })
      .def_property(
          "timeout_ms", [](const RunFlags& f) { return f.timeout_ms; },
          [](RunFlags& f, int64_t v) {
            if (v < 0) throw py::value_error(onyx::cat("timeout_ms must not be negative, got ", v));
            f.timeout_ms = v;
          })
      .def_readwrite("log_severity_level", &RunFlags::log_severity_level)
      .def_readwrite("log_verbosity_level", &RunFlags::log_verbosity_level)
      .def_readwrite("logid", &RunFlags::logid)
      .def_readwrite("only_execute_path_to_fetches", &RunFlags::only_execute_path_to_fetches)
      .def("add_run_config_entry", [](RunFlags& f, const std::string& k, const std::string& v) { f.config[k] = v; })
      .def("get_run_config_entry", [](const RunFlags& f, const std::string& k) {
        auto it = f.config.find(k);
        if (it == f.config.end()) throw py::key_error(k);
        return it->second;
      });

  py::class_<PySession>(m, "_Session")
      .def(py::init<py::handle, int, int, int, bool, int64_t>())
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("overridable_initializers", &PySession::overridable_initializers)
      .def("metadata", &PySession::metadata)
      .def("run", &PySession::run, py::arg("output_names"), py::arg("feeds"), py::arg("flags").none(true),
           py::arg("profile"));

  m.def("_steady_ns", &steady_ns, "The steady clock (ns) that run timings are measured on.");
  m.def("_feed_address", &feed_address);
  m.def("_load", &load_model_object, py::arg("model"));
  m.def("_check", &check_model_object, py::arg("model"));
  m.def("_optimize", &optimize_model, py::arg("model"), py::arg("out"), py::arg("level"));
}
