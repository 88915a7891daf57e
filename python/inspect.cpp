#include "inspect.hpp"

#include <fstream>

#include <pybind11/stl.h>

#include <memory>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "ir/model.hpp"
#include "onyx/optimize.hpp"
#include "onyx/session.hpp"
#include "format/model_read.hpp"

namespace onyx::python {

ModelSource ModelSource::from(py::handle obj) {
  ModelSource s;
  if (PyBytes_Check(obj.ptr()) || PyByteArray_Check(obj.ptr()) || PyMemoryView_Check(obj.ptr())) {
    auto b = py::reinterpret_steal<py::object>(PyBytes_FromObject(obj.ptr()));
    if (!b) throw py::error_already_set();
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(b.ptr(), &data, &size) != 0) throw py::error_already_set();
    s.bytes.assign(data, static_cast<size_t>(size));
    return s;
  }
  py::object fspath;
  try {
    fspath = py::module_::import("os").attr("fspath")(obj);
  } catch (py::error_already_set&) {
    throw py::type_error(cat("Unable to load from type '", std::string(py::str(py::type::handle_of(obj))),
                             "': expected a path (str or os.PathLike) or the model's bytes"));
  }
  if (!PyUnicode_Check(fspath.ptr())) fspath = fspath.attr("decode")();
  s.path = std::filesystem::path(py::cast<std::string>(fspath));
  std::error_code ec;
  if (!std::filesystem::exists(*s.path, ec)) raise("NoSuchFile", cat(s.path->string(), ": no such file"));
  return s;
}

pb::ModelDocument ModelSource::parse() const {
  return path ? pb::load_model_file(*path) : pb::load_model_bytes(bytes);
}

namespace {

using namespace pybind11::literals;

// Builds the objects of onyx._model; tensors view the model's memory, which `owner` keeps alive.
class Inspector {
 public:
  explicit Inspector(std::shared_ptr<const Model> model)
      : model_(*model), owner_(std::move(model)), classes_(py::module_::import("onyx._model")) {}

  py::object model() {
    py::dict opsets, metadata;
    for (const auto& [domain, version] : model_.opset_imports) opsets[py::str(domain)] = version;
    for (const auto& [k, v] : model_.metadata) metadata[py::str(k)] = py::str(v);
    py::list functions;
    for (const Function& f : model_.functions) functions.append(function(f));
    return make("Model", "ir_version"_a = model_.ir_version, "opset_import"_a = opsets,
                "producer_name"_a = model_.producer_name, "producer_version"_a = model_.producer_version,
                "domain"_a = model_.domain, "model_version"_a = model_.model_version,
                "doc_string"_a = model_.doc_string, "metadata"_a = metadata, "graph"_a = graph(*model_.graph),
                "functions"_a = functions);
  }

 private:
  const Model& model_;
  std::shared_ptr<const void> owner_;
  py::module_ classes_;

  template <class... Args>
  py::object make(const char* cls, Args&&... args) {
    return classes_.attr(cls)(std::forward<Args>(args)...);
  }

  static py::object text(const std::string& s) {
    PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), nullptr);
    if (u) return py::reinterpret_steal<py::object>(u);
    PyErr_Clear();
    return py::bytes(s);
  }

  py::object tensor(const Tensor& t) { return tensor_to_numpy(Tensor(t), owner_); }

  py::object sparse(const SparseTensor& s) {
    return make("SparseTensor", "values"_a = tensor(s.values), "indices"_a = tensor(s.indices), "dims"_a = s.dims);
  }

  py::object value_info(const Value* v) {
    return make("ValueInfo", "name"_a = v->name, "type"_a = v->type.to_string(), "shape"_a = shape_list(v->type));
  }

  py::list names(const std::vector<Value*>& values) {
    py::list out;
    for (const Value* v : values) out.append(v ? v->name : std::string());
    return out;
  }

  py::object attribute(const Attribute& a) {
    if (!a.ref_attr_name.empty()) return make("AttributeRef", a.ref_attr_name);
    auto list_of = [](const auto& items, auto&& convert) {
      py::list out;
      for (const auto& x : items) out.append(convert(x));
      return out;
    };
    switch (a.type) {
      case AttributeType::Float: return py::float_(a.f);
      case AttributeType::Int: return py::int_(a.i);
      case AttributeType::String: return text(a.s);
      case AttributeType::Tensor: return a.t ? tensor(*a.t) : py::object(py::none());
      case AttributeType::Graph: return a.g ? graph(*a.g) : py::object(py::none());
      case AttributeType::SparseTensor: return a.sparse_tensor ? sparse(*a.sparse_tensor) : py::object(py::none());
      case AttributeType::TypeProto: return a.tp ? py::object(py::str(a.tp->to_string())) : py::object(py::none());
      case AttributeType::Floats: return py::cast(a.floats);
      case AttributeType::Ints: return py::cast(a.ints);
      case AttributeType::Strings: return list_of(a.strings, [](const std::string& s) { return text(s); });
      case AttributeType::Tensors: return list_of(a.tensors, [this](const Tensor& t) { return tensor(t); });
      case AttributeType::Graphs:
        return list_of(a.graphs, [this](const std::unique_ptr<Graph>& g) { return graph(*g); });
      case AttributeType::SparseTensors:
        return list_of(a.sparse_tensors, [this](const SparseTensor& s) { return sparse(s); });
      case AttributeType::TypeProtos: return list_of(a.type_protos, [](const Type& t) { return t.to_string(); });
      case AttributeType::Undefined: break;
    }
    return py::none();
  }

  py::object node(const Node& n) {
    py::dict attrs;
    for (const Attribute& a : n.attributes) attrs[py::str(a.name)] = attribute(a);
    return make("Node", "name"_a = n.name, "op_type"_a = n.op_type, "domain"_a = n.domain,
                "inputs"_a = names(n.inputs), "outputs"_a = names(n.outputs), "attrs"_a = attrs,
                "doc_string"_a = n.doc_string);
  }

  py::list nodes(const Graph& g) {
    py::list out;
    for (const auto& n : g.nodes) out.append(node(*n));
    return out;
  }

  py::object graph(const Graph& g) {
    py::list inputs, outputs;
    for (const Value* v : g.inputs) inputs.append(value_info(v));
    for (const Value* v : g.outputs) outputs.append(value_info(v));
    py::dict initializers, sparse_initializers;
    for (const auto& [name, t] : g.initializers) initializers[py::str(name)] = tensor(t);
    for (const auto& [name, s] : g.sparse_initializers) sparse_initializers[py::str(name)] = sparse(s);
    return make("Graph", "name"_a = g.name, "doc_string"_a = g.doc_string, "inputs"_a = inputs, "outputs"_a = outputs,
                "nodes"_a = nodes(g), "initializers"_a = initializers, "sparse_initializers"_a = sparse_initializers);
  }

  py::object function(const Function& f) {
    py::dict opsets, defaults;
    for (const auto& [domain, version] : f.opset_imports) opsets[py::str(domain)] = version;
    for (const Attribute& a : f.attribute_defaults) defaults[py::str(a.name)] = attribute(a);
    return make("Function", "domain"_a = f.domain, "name"_a = f.name, "overload"_a = f.overload,
                "inputs"_a = f.inputs, "outputs"_a = f.outputs, "attributes"_a = f.attribute_names,
                "attribute_defaults"_a = defaults, "nodes"_a = nodes(*f.body), "opset_import"_a = opsets,
                "doc_string"_a = f.doc_string);
  }
};

}  // namespace

py::object load_model_object(py::handle obj) {
  ModelSource src = ModelSource::from(obj);
  std::shared_ptr<const Model> model;
  std::string error;
  const char* cls = "InvalidProtobuf";
  {
    py::gil_scoped_release nogil;
    try {
      pb::ModelDocument doc = src.parse();
      cls = "InvalidGraph";
      check::check_model_or_throw(doc);
      cls = "Fail";
      model = std::make_shared<const Model>(build_model(doc));
    } catch (const Error& e) {
      error = e.what();
    }
  }
  if (!model) raise(cls, error);
  return Inspector(model).model();
}

void check_model_object(py::handle obj) {
  ModelSource src = ModelSource::from(obj);
  std::string error;
  const char* cls = "InvalidProtobuf";
  {
    py::gil_scoped_release nogil;
    try {
      pb::ModelDocument doc = src.parse();
      std::vector<std::string> problems = check::check_model(doc);
      if (!problems.empty()) {
        cls = "InvalidGraph";
        for (const std::string& p : problems) error += (error.empty() ? "" : "\n") + p;
      } else {
        // Binding every node to its operator version and inferring types report what a session would refuse.
        cls = "Fail";
        if (src.path) Session::from_file(*src.path);
        else Session::from_bytes(src.bytes);
      }
    } catch (const Error& e) {
      error = e.what();
    }
  }
  if (!error.empty()) raise(cls, error);
}

namespace {
opt::OptimizeOptions session_options(int level) {
  opt::OptimizeOptions o;
  o.level = level;
  return o;
}
}  // namespace

void optimize_model(py::handle obj, const std::string& out, int level, const std::string& external_file,
                    int64_t external_min_bytes, bool as_session) {
  ModelSource src = ModelSource::from(obj);
  SaveOptions save;
  if (!external_file.empty()) {
    if (external_min_bytes < 0) raise("InvalidArgument", cat("external initializers' minimum size ", external_min_bytes, " is negative"));
    if (external_file.find('/') != std::string::npos || external_file.find('\\') != std::string::npos || external_file == ".." || external_file == ".")
      raise("InvalidArgument", cat("external initializers file '", external_file, "' must be a file name (it is written beside the model)"));
    save.data = SaveOptions::Data::External;
    save.threshold = static_cast<uint64_t>(external_min_bytes);
    save.data_file = external_file;
  }
  std::string error;
  {
    py::gil_scoped_release nogil;
    try {
      if (src.path) {
        opt::optimize_file(*src.path, out, session_options(level), save, as_session);
      } else {
        // The optimizer reads files (external data is resolved next to them): bytes go through the output path.
        {
          std::ofstream f(out, std::ios::binary | std::ios::trunc);
          f.write(src.bytes.data(), static_cast<std::streamsize>(src.bytes.size()));
          if (!f) fail("cannot write '", out, "'");
        }
        opt::optimize_file(out, out, session_options(level), save, as_session);
      }
    } catch (const Error& e) {
      error = e.what();
    }
  }
  if (!error.empty()) raise("Fail", error);
}

}  // namespace onyx::python
