// The extension module onyx._onyx: sessions over onyx's C++ API (include/onyx/session.hpp), run options with a
// terminate flag, and model inspection. The Python package (python/onyx/__init__.py) builds onnxruntime's
// interface on these.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <map>
#include <optional>
#include <thread>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "convert.hpp"
#include "format/onnx_proto.hpp"
#include "inspect.hpp"
#include "onyx/session.hpp"
#include "ortvalue.hpp"

namespace onyx::python {
void register_toolkit_float16(pybind11::module_& m);
void register_toolkit_quantize(pybind11::module_& m);
void register_toolkit_version_convert(pybind11::module_& m);
void register_toolkit_model_tools(pybind11::module_& m);
void register_toolkit_parse(pybind11::module_& m);
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
            int64_t memory_limit_mb, py::handle extra) {
    ModelSource src = ModelSource::from(model);
    SessionOptions options;
    if (!extra.is_none()) apply_extra(options, extra);
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
    std::map<std::string, Datum> data = feed_data(feeds);
    std::vector<NodeTiming> timings;
    int64_t began = 0, ended = 0;
    std::vector<std::pair<std::string, Datum>> results =
        execute(data, output_names, flags, profile ? &timings : nullptr, &began, &ended);
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

  // onnxruntime's run_with_ort_values: feeds are OrtValues (or what OrtValue.ortvalue_from_numpy takes), outputs
  // come back as OrtValues, declared sparse outputs as COO sparse tensors.
  OrtValueVector run_with_ort_values(py::dict feeds, const std::vector<std::string>& output_names, RunFlags* flags) const {
    std::map<std::string, Datum> data = feed_data(feeds);
    auto results = execute(data, output_names, flags, nullptr, nullptr, nullptr);
    OrtValueVector out;
    for (auto& [name, d] : results) out.items.push_back(output_value(std::move(d), output_type(name), output_what(name)));
    return out;
  }

  void run_with_iobinding(py::handle self, IoBinding& b, RunFlags* flags) const {
    const std::string& label = session_->model().label;
    if (!b.session.is(self)) raise("InvalidArgument", cat(label, ": the SessionIOBinding was made for another session"));
    if (b.bound_outputs.empty()) raise("InvalidArgument", cat(label, ": no outputs are bound; at least one output should be requested"));
    std::map<std::string, Datum> data;
    for (const auto& [name, v] : b.bound_inputs) data.emplace(name, feed_datum(*v, input_type(name), input_what(name)));
    std::vector<std::string> names;
    for (const auto& o : b.bound_outputs) names.push_back(o.name);
    auto results = execute(data, names, flags, nullptr, nullptr, nullptr);
    std::vector<OrtValuePtr> values;
    for (size_t i = 0; i < results.size(); ++i) {
      const IoBinding::Output& o = b.bound_outputs[i];
      if (o.target) {
        write_into(*o.target, results[i].second, output_what(o.name));
        values.push_back(o.target);
      } else {
        values.push_back(output_value(std::move(results[i].second), output_type(o.name), output_what(o.name)));
      }
    }
    b.results = std::move(values);
  }

  // onnxruntime's run_async: the run happens on a thread of onyx's; then, holding the GIL, it calls
  // callback(list of outputs or None, user_data, error text or ""). `self` keeps the session alive until then.
  void run_async(py::object self, const std::vector<std::string>& output_names, py::dict feeds, py::object callback,
                 py::object user_data, py::object flags_obj) const {
    if (!PyCallable_Check(callback.ptr())) raise("InvalidArgument", "run_async: callback must be callable");
    RunFlags* flags = flags_obj.is_none() ? nullptr : py::cast<RunFlags*>(flags_obj);
    check_output_names(output_names);
    struct Job {
      py::object self, callback, user_data, flags_obj;  // released holding the GIL
      const PySession* session;
      RunFlags* flags;
      std::map<std::string, Datum> data;
      std::vector<std::string> names;
    };
    auto* job = new Job{std::move(self), std::move(callback), std::move(user_data), std::move(flags_obj), this, flags,
                        feed_data(feeds), output_names};
    try {
      std::thread([job] {
        std::vector<std::pair<std::string, Datum>> results;
        std::string error;
        try {
          results = job->session->session_->run(job->data, job->names, run_options(job->flags, nullptr));
        } catch (const std::exception& e) {
          error = e.what();
          if (error.empty()) error = "run failed";
        }
        py::gil_scoped_acquire gil;
        try {
          job->data.clear();
          py::object outs = py::none();
          if (error.empty()) {
            py::list l;
            for (auto& [name, d] : results) l.append(datum_to_python(std::move(d)));
            outs = l;
          }
          results.clear();
          job->callback(outs, job->user_data, error);
        } catch (py::error_already_set& e) {
          e.discard_as_unraisable("onyx run_async callback");
        } catch (const std::exception& e) {
          PyErr_SetString(PyExc_RuntimeError, e.what());
          PyErr_WriteUnraisable(job->callback.ptr());
        }
        delete job;
      }).detach();
    } catch (const std::system_error& e) {
      delete job;
      raise("Fail", cat("run_async: cannot start a thread: ", e.what()));
    }
  }

  // The optimized main graph's nodes in execution order: (domain, op_type, name).
  py::list nodes() const {
    std::vector<const Node*> order;
    for (const auto& n : session_->model().graph->nodes) order.push_back(n.get());
    std::stable_sort(order.begin(), order.end(), [](const Node* a, const Node* b) { return a->index < b->index; });
    py::list out;
    for (const Node* n : order) out.append(py::make_tuple(n->domain, n->op_type, n->name));
    return out;
  }

  SessionFacts facts() const { return {session_->model().label, session_->inputs(), session_->outputs()}; }

 private:
  static RunOptions run_options(RunFlags* flags, std::vector<NodeTiming>* timings) {
    RunOptions options;
    options.terminate = flags ? &flags->terminate : nullptr;
    options.timeout_ms = flags ? flags->timeout_ms : 0;
    options.profile = timings;
    return options;
  }

  std::string input_what(const std::string& name) const { return cat(session_->model().label, ": input '", name, "'"); }
  std::string output_what(const std::string& name) const { return cat(session_->model().label, ": output '", name, "'"); }

  // The declared type of an input (Session::inputs(), else the graph value's: overridable initializers).
  Type input_type(const std::string& name) const {
    for (const IoInfo& i : session_->inputs())
      if (i.name == name) return i.type;
    const Value* v = session_->model().graph->find_local(name);
    return v ? v->type : Type{};
  }
  Type output_type(const std::string& name) const {
    for (const IoInfo& o : session_->outputs())
      if (o.name == name) return o.type;
    return Type{};
  }

  // Feeds by name: numpy arrays, lists and dicts converted to the inputs' types, OrtValues taken as they are
  // (sparse ones densified).
  std::map<std::string, Datum> feed_data(py::dict feeds) const {
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
      const Type declared = input_type(name);
      if (OrtValuePtr ov = ortvalue_of(value)) {
        data.emplace(name, feed_datum(*ov, declared, input_what(name)));
      } else {
        // Sparse inputs take their dense form.
        const Type want = declared.kind == Type::Kind::SparseTensor ? Type::tensor(declared.elem, declared.shape) : v->type;
        data.emplace(name, datum_from_python(value, want, input_what(name)));
      }
    }
    return data;
  }

  void check_output_names(const std::vector<std::string>& output_names) const {
    for (const std::string& n : output_names) {
      bool found = false;
      for (const IoInfo& o : session_->outputs()) found = found || o.name == n;
      if (!found)
        raise("InvalidArgument", cat(session_->model().label, ": '", n, "' is not an output of the model (outputs: ",
                                     names_text(session_->outputs()), ")"));
    }
  }

  // Checks that every required input is fed and every output name exists, then runs without the GIL; a failed
  // run raises Fail. `began`/`ended` (optional) receive the run's steady-clock bounds.
  std::vector<std::pair<std::string, Datum>> execute(std::map<std::string, Datum>& data,
                                                     const std::vector<std::string>& output_names, RunFlags* flags,
                                                     std::vector<NodeTiming>* timings, int64_t* began,
                                                     int64_t* ended) const {
    const Model& model = session_->model();
    std::string missing;
    for (const IoInfo& i : session_->inputs())
      if (!data.count(i.name)) missing += (missing.empty() ? "'" : ", '") + i.name + "' " + i.type.to_string_with_shape();
    if (!missing.empty())
      raise("InvalidArgument", cat(model.label, ": required input", missing.find(", '") != std::string::npos ? "s " : " ",
                                   missing, " missing from the feed"));
    check_output_names(output_names);
    const RunOptions options = run_options(flags, timings);
    std::vector<std::pair<std::string, Datum>> results;
    std::string error;
    {
      py::gil_scoped_release nogil;
      const int64_t start = steady_ns();
      try {
        results = session_->run(data, output_names, options);
      } catch (const Error& e) {
        error = e.what();
      }
      if (began) *began = start;
      if (ended) *ended = steady_ns();
    }
    // The feeds may view numpy arrays: they are dropped here, holding the GIL, not on the engine's threads.
    data.clear();
    if (!error.empty()) raise("Fail", error);
    return results;
  }

  // The `extra` options of the constructor (onnxruntime's SessionOptions methods).
  static void apply_extra(SessionOptions& options, py::handle extra) {
    if (!PyDict_Check(extra.ptr())) raise("InvalidArgument", "extra must be a dict");
    auto int_map = [](py::handle obj, const char* key) {
      std::map<std::string, int64_t> out;
      if (!PyDict_Check(obj.ptr())) raise("InvalidArgument", cat("extra['", key, "'] must be a dict of str to int"));
      for (auto [k, v] : py::reinterpret_borrow<py::dict>(obj)) {
        if (!PyUnicode_Check(k.ptr()) || !PyLong_Check(v.ptr()))
          raise("InvalidArgument", cat("extra['", key, "'] must be a dict of str to int, got ", std::string(py::repr(k)),
                                       ": ", std::string(py::repr(v))));
        out[py::cast<std::string>(k)] = py::cast<int64_t>(v);
      }
      return out;
    };
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(extra)) {
      const std::string key = py::str(k);
      if (key == "free_dimension_overrides_by_name") {
        options.free_dimension_overrides_by_name = int_map(v, "free_dimension_overrides_by_name");
      } else if (key == "free_dimension_overrides_by_denotation") {
        options.free_dimension_overrides_by_denotation = int_map(v, "free_dimension_overrides_by_denotation");
      } else if (key == "initializers") {
        if (!PyDict_Check(v.ptr())) raise("InvalidArgument", "extra['initializers'] must be a dict of str to OrtValue");
        for (auto [name, value] : py::reinterpret_borrow<py::dict>(v)) {
          const std::string n = py::str(name);
          OrtValuePtr ov = ortvalue_of(value);
          if (!ov || !ov->is_tensor())
            raise("InvalidArgument", cat("extra['initializers']['", n, "'] must be a tensor OrtValue, got ",
                                         std::string(py::repr(value))));
          Tensor t = ov->datum.tensor;
          t.set_name(n);
          options.initializer_overrides.insert_or_assign(n, std::move(t));
        }
      } else if (key == "external_data_files") {
        if (!PyDict_Check(v.ptr())) raise("InvalidArgument", "extra['external_data_files'] must be a dict of str to bytes");
        for (auto [name, data] : py::reinterpret_borrow<py::dict>(v)) {
          if (!PyUnicode_Check(name.ptr())) raise("InvalidArgument", "extra['external_data_files']: names must be str");
          std::string bytes;
          if (PyBytes_Check(data.ptr())) {
            bytes = py::cast<std::string>(data);
          } else {
            // bytearray, memoryview, numpy arrays: anything with the buffer protocol, as bytes.
            try {
              bytes = py::cast<std::string>(py::bytes(py::module_::import("builtins").attr("bytes")(data)));
            } catch (py::error_already_set&) {
              raise("InvalidArgument", cat("extra['external_data_files']['", std::string(py::str(name)),
                                           "'] must be bytes, got ", std::string(py::repr(py::type::handle_of(data)))));
            }
          }
          options.external_data_files[py::cast<std::string>(name)] = std::make_shared<const std::string>(std::move(bytes));
        }
      } else if (key == "custom_op_libraries") {
        if (PyUnicode_Check(v.ptr())) raise("InvalidArgument", "extra['custom_op_libraries'] must be a list of paths");
        for (py::handle p : py::reinterpret_borrow<py::iterable>(v))
          options.custom_op_libraries.push_back(py::str(py::module_::import("os").attr("fspath")(p)));
      } else {
        raise("InvalidArgument", cat("unknown key '", key, "' in extra (known: free_dimension_overrides_by_name, "
                                     "free_dimension_overrides_by_denotation, initializers, external_data_files, "
                                     "custom_op_libraries)"));
      }
    }
  }

  std::optional<Session> session_;
};

// For the tests of zero-copy feeding: the address of the data a value becomes as a feed (0 when it has none).
uintptr_t feed_address(py::handle obj) {
  Datum d = datum_from_python(obj, Type{}, "value");
  if (!d.is_tensor() || d.tensor.dtype() == DataType::String) return 0;
  return reinterpret_cast<uintptr_t>(d.tensor.bytes().data());
}

}  // namespace

SessionFacts session_facts(py::handle session) {
  if (!py::isinstance<PySession>(session))
    raise("InvalidArgument", cat("SessionIOBinding needs the C-level session (InferenceSession._sess), got a ",
                                 std::string(py::str(py::type::handle_of(session).attr("__name__")))));
  return py::cast<const PySession&>(session).facts();
}

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

  register_ortvalue(m);

  py::class_<PySession>(m, "_Session")
      .def(py::init<py::handle, int, int, int, bool, int64_t, py::handle>(), py::arg("model"), py::arg("threads"),
           py::arg("level"), py::arg("log_level"), py::arg("accept_newer_versions"), py::arg("memory_limit_mb"),
           py::kw_only(), py::arg("extra") = py::none())
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("overridable_initializers", &PySession::overridable_initializers)
      .def("metadata", &PySession::metadata)
      .def("run", &PySession::run, py::arg("output_names"), py::arg("feeds"), py::arg("flags").none(true),
           py::arg("profile"))
      .def("run_with_ort_values", &PySession::run_with_ort_values, py::arg("feeds"), py::arg("output_names"),
           py::arg("run_options").none(true) = py::none())
      .def(
          "run_with_iobinding",
          [](py::object self, IoBinding& b, RunFlags* flags) {
            py::cast<const PySession&>(self).run_with_iobinding(self, b, flags);
          },
          py::arg("iobinding"), py::arg("run_options").none(true) = py::none())
      .def(
          "run_async",
          [](py::object self, std::vector<std::string> names, py::dict feeds, py::object callback, py::object user_data,
             py::object flags) {
            py::cast<const PySession&>(self).run_async(self, names, feeds, std::move(callback), std::move(user_data),
                                                       std::move(flags));
          },
          py::arg("output_names"), py::arg("input_feed"), py::arg("callback"), py::arg("user_data"),
          py::arg("run_options").none(true) = py::none())
      .def("nodes", &PySession::nodes);

  m.def("_steady_ns", &steady_ns, "The steady clock (ns) that run timings are measured on.");
  m.def("_feed_address", &feed_address);
  m.def("_load", &load_model_object, py::arg("model"));
  m.def("_check", &check_model_object, py::arg("model"));
  m.def("_optimize", &optimize_model, py::arg("model"), py::arg("out"), py::arg("level"), py::arg("external_file") = "",
        py::arg("external_min_bytes") = 1024, py::arg("as_session") = false);
  register_toolkit_float16(m);
  register_toolkit_quantize(m);
  register_toolkit_version_convert(m);
  register_toolkit_model_tools(m);
  register_toolkit_parse(m);
}
