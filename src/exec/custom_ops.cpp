// Custom ops from shared libraries: the OnyxCustomOpApi table (include/onyx/custom_op.h) over onyx's registry,
// inference and kernel contexts, and the loading of the libraries. No C++ exception crosses into a library: every
// api function catches and returns an error status instead.
#include "exec/custom_ops.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "base/error.hpp"
#include "ir/spec_table.hpp"
#include "onyx/custom_op.h"

// The opaque handles of the C interface (global names: the header declares them in C).
struct OnyxCustomOpStatus {
  std::string message;
};
struct OnyxCustomOpAttributes {
  onyx::ops::AttributeView view;
};
struct OnyxCustomOpInferContext {
  onyx::ops::InferContext* ic;
  OnyxCustomOpAttributes attributes;
};
struct OnyxCustomOpKernelInfo {
  const onyx::ops::KernelInit* init;
  OnyxCustomOpAttributes attributes;
};
struct OnyxCustomOpKernelContext {
  onyx::ops::KernelContext* ctx;
  // An allocation that failed (out of memory, the session's memory limit): rethrown as itself after compute, so
  // that it keeps its kind instead of becoming the library's message.
  std::exception_ptr allocation_failure;
};
struct OnyxCustomOpRegistry {
  onyx::exec::CustomOps* ops;
  std::string library;           // the path, for messages
  std::shared_ptr<void> handle;  // the library, held by each op it registers
};

namespace onyx::exec {
namespace custom_op_impl {

// One registered op, copied out of the library's OnyxCustomOp; holds the library open.
struct RegisteredOp {
  std::string domain, op_type, library;
  int since_version = 1;
  int32_t min_inputs = 0, max_inputs = -1, min_outputs = 0, max_outputs = -1;
  void* op_data = nullptr;
  OnyxCustomOpStatus* (*infer)(void*, OnyxCustomOpInferContext*) = nullptr;
  OnyxCustomOpStatus* (*create_kernel)(void*, const OnyxCustomOpKernelInfo*, void**) = nullptr;
  void (*destroy_kernel)(void*, void*) = nullptr;
  OnyxCustomOpStatus* (*compute)(void*, void*, OnyxCustomOpKernelContext*) = nullptr;
  std::shared_ptr<void> handle;  // last member: the library closes after nothing else here is needed

  std::string name() const { return cat(domain, ".", op_type, "(", since_version, ")"); }
};

OnyxCustomOpStatus* make_status(std::string message) { return new OnyxCustomOpStatus{std::move(message)}; }

// The message of `s` (freed here).
std::string take_message(OnyxCustomOpStatus* s) {
  std::string m = s->message.empty() ? std::string("(no message)") : std::move(s->message);
  delete s;
  return m;
}

[[noreturn]] void fail_from_library(const RegisteredOp& op, const char* stage, OnyxCustomOpStatus* s) {
  fail("custom op ", op.name(), " of '", op.library, "': ", stage, ": ", take_message(s));
}

// Runs `f`, turning any exception into an error status for the library.
template <class F>
OnyxCustomOpStatus* guarded(F&& f) {
  try {
    f();
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(e.what());
  } catch (...) {
    return make_status("unknown error");
  }
}

void check_counts(const RegisteredOp& op, const Node& n) {
  auto within = [](size_t count, int32_t lo, int32_t hi) {
    return count >= static_cast<size_t>(lo) && (hi < 0 || count <= static_cast<size_t>(hi));
  };
  auto range = [](int32_t lo, int32_t hi) { return hi < 0 ? cat(lo, " or more") : lo == hi ? cat(lo) : cat(lo, " to ", hi); };
  if (!within(n.inputs.size(), op.min_inputs, op.max_inputs))
    fail("custom op ", op.name(), " takes ", range(op.min_inputs, op.max_inputs), " inputs, the node has ", n.inputs.size());
  if (!within(n.outputs.size(), op.min_outputs, op.max_outputs))
    fail("custom op ", op.name(), " makes ", range(op.min_outputs, op.max_outputs), " outputs, the node has ", n.outputs.size());
}

DataType element_type_arg(int32_t t, bool allow_undefined) {
  if (!is_known_dtype(t) || (!allow_undefined && t == 0)) fail("element type ", t, " is not an ONNX element type");
  return static_cast<DataType>(t);
}

const Type* infer_input(const OnyxCustomOpInferContext* c, size_t i) {
  if (!c->ic->has_input(i)) return nullptr;
  const Type& t = c->ic->input_type(i);
  return t.kind == Type::Kind::Tensor ? &t : nullptr;
}

const Attribute& attribute_of(const OnyxCustomOpAttributes* a, const char* name, AttributeType type) {
  const Attribute* at = a->view.find(name);
  if (!at) fail("attribute '", name, "' is missing");
  if (at->type != type)
    fail("attribute '", name, "' is ", attribute_type_name(at->type), ", expected ", attribute_type_name(type));
  return *at;
}

template <class T>
OnyxCustomOpStatus* list_attribute(const OnyxCustomOpAttributes* a, const char* name, AttributeType type,
                                   std::vector<T> Attribute::*field, T* values, size_t capacity, size_t* count) {
  return guarded([&] {
    const std::vector<T>& v = attribute_of(a, name, type).*field;
    *count = v.size();
    if (capacity) std::memcpy(values, v.data(), std::min(capacity, v.size()) * sizeof(T));
  });
}

class CustomKernel final : public ops::Kernel {
 public:
  CustomKernel(std::shared_ptr<const RegisteredOp> op, void* state) : op_(std::move(op)), state_(state) {}
  ~CustomKernel() override {
    if (op_->destroy_kernel) op_->destroy_kernel(op_->op_data, state_);
  }
  void run(ops::KernelContext& ctx) override {
    OnyxCustomOpKernelContext c{&ctx, nullptr};
    if (OnyxCustomOpStatus* s = op_->compute(op_->op_data, state_, &c)) {
      if (c.allocation_failure) {
        delete s;
        std::rethrow_exception(c.allocation_failure);
      }
      fail_from_library(*op_, "compute", s);
    }
    const Node& n = ctx.node();
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (!n.outputs[i]) continue;
      const Datum& d = ctx.outputs()[i];
      if (d.kind == Datum::Kind::Empty) fail("custom op ", op_->name(), ": compute did not allocate output ", i);
      // Kernels downstream read bools as C++ bool, for which only the bytes 0 and 1 have a meaning.
      if (d.is_tensor() && d.tensor.dtype() == DataType::Bool)
        if (auto wrong = invalid_bool(d.tensor))
          fail("custom op ", op_->name(), ": bool output ", i, " holds the byte ", wrong->byte, " at element ",
               wrong->index, " (a bool must be 0 or 1)");
    }
  }

 private:
  std::shared_ptr<const RegisteredOp> op_;
  void* state_;
};

OnyxCustomOpStatus* api_register_op(OnyxCustomOpRegistry* registry, const OnyxCustomOp* op) {
  return guarded([&] {
    if (!registry || !op) fail("register_op: registry and op must not be NULL");
    if (op->version < 1) fail("register_op: OnyxCustomOp.version ", op->version, " (set it to ONYX_CUSTOM_OP_API_VERSION)");
    auto r = std::make_shared<RegisteredOp>();
    r->domain = op->domain ? op->domain : "";
    r->op_type = op->op_type ? op->op_type : "";
    r->library = registry->library;
    r->since_version = op->since_version;
    if (r->domain.empty() || r->op_type.empty()) fail("register_op: domain and op_type must be set");
    if (spec::is_known_domain(r->domain))
      fail("register_op: ", r->domain, ".", r->op_type, ": domain '", r->domain, "' is a standard ONNX domain");
    if (op->since_version < 1) fail("register_op: ", r->name(), ": since_version must be 1 or more");
    if (!ops::builtin_registry().versions(r->domain, r->op_type).empty())
      fail("register_op: ", r->domain, ".", r->op_type, " is an op onyx implements");
    if (op->min_inputs < 0 || (op->max_inputs >= 0 && op->max_inputs < op->min_inputs) || op->min_outputs < 0 ||
        (op->max_outputs >= 0 && op->max_outputs < op->min_outputs))
      fail("register_op: ", r->name(), ": invalid input or output counts");
    if (!op->compute) fail("register_op: ", r->name(), ": compute must be set");
    if (registry->ops->registry.find(r->domain, r->op_type, r->since_version))
      fail("register_op: ", r->name(), " is registered already");
    r->min_inputs = op->min_inputs;
    r->max_inputs = op->max_inputs;
    r->min_outputs = op->min_outputs;
    r->max_outputs = op->max_outputs;
    r->op_data = op->op_data;
    r->infer = op->infer;
    r->create_kernel = op->create_kernel;
    r->destroy_kernel = op->destroy_kernel;
    r->compute = op->compute;
    r->handle = registry->handle;

    ops::OpDef def;
    def.domain = r->domain;
    def.op_type = r->op_type;
    def.since_version = r->since_version;
    // Library code never runs at creation for folding: its results need not be a function of its inputs.
    def.deterministic = false;
    std::shared_ptr<const RegisteredOp> shared = r;
    def.infer = [shared](ops::InferContext& ic) {
      check_counts(*shared, ic.node);
      if (!shared->infer) return;
      OnyxCustomOpInferContext c{&ic, {ops::AttributeView(ic.attrs)}};
      if (OnyxCustomOpStatus* s = shared->infer(shared->op_data, &c)) fail_from_library(*shared, "inference", s);
    };
    def.kernel = [shared](const ops::KernelInit& init) -> std::unique_ptr<ops::Kernel> {
      check_counts(*shared, init.node);
      void* state = nullptr;
      if (shared->create_kernel) {
        OnyxCustomOpKernelInfo info{&init, {ops::AttributeView(init.attrs)}};
        if (OnyxCustomOpStatus* s = shared->create_kernel(shared->op_data, &info, &state))
          fail_from_library(*shared, "create_kernel", s);
      }
      return std::make_unique<CustomKernel>(shared, state);
    };
    auto [it, inserted] = registry->ops->domains.emplace(r->domain, r->since_version);
    if (!inserted) it->second = std::max(it->second, r->since_version);
    registry->ops->registry.add(std::move(def));
  });
}

const OnyxCustomOpApi& api_table() {
  static const OnyxCustomOpApi api = [] {
    OnyxCustomOpApi a{};
    a.version = ONYX_CUSTOM_OP_API_VERSION;
    a.register_op = api_register_op;
    a.make_error = [](const char* message) { return make_status(message ? message : ""); };
    a.status_message = [](const OnyxCustomOpStatus* s) { return s ? s->message.c_str() : ""; };
    a.release_status = [](OnyxCustomOpStatus* s) { delete s; };

    a.infer_input_count = [](const OnyxCustomOpInferContext* c) { return c->ic->num_inputs(); };
    a.infer_output_count = [](const OnyxCustomOpInferContext* c) { return c->ic->output_types.size(); };
    a.infer_input_element_type = [](const OnyxCustomOpInferContext* c, size_t i) -> int32_t {
      const Type* t = infer_input(c, i);
      return t ? static_cast<int32_t>(t->elem) : 0;
    };
    a.infer_input_rank = [](const OnyxCustomOpInferContext* c, size_t i) -> int64_t {
      const Type* t = infer_input(c, i);
      return t && t->shape.rank_known ? static_cast<int64_t>(t->shape.dims.size()) : -1;
    };
    a.infer_input_dim = [](const OnyxCustomOpInferContext* c, size_t i, size_t axis) -> int64_t {
      const Type* t = infer_input(c, i);
      if (!t || !t->shape.rank_known || axis >= t->shape.dims.size()) return -1;
      return t->shape.dims[axis].value.value_or(-1);
    };
    a.infer_set_output = [](OnyxCustomOpInferContext* c, size_t i, int32_t element_type, const int64_t* dims,
                            int64_t rank) {
      return guarded([&] {
        if (i >= c->ic->output_types.size()) fail("infer_set_output: output ", i, " does not exist");
        Shape shape;
        if (rank >= 0) {
          if (rank > 0 && !dims) fail("infer_set_output: dims is NULL");
          shape.rank_known = true;
          for (int64_t k = 0; k < rank; ++k) {
            if (dims[k] < -1) fail("infer_set_output: dim ", k, " is ", dims[k]);
            shape.dims.push_back(dims[k] >= 0 ? Dim{dims[k], {}, {}} : Dim{});
          }
        }
        c->ic->set_output(i, Type::tensor(element_type_arg(element_type, true), std::move(shape)));
      });
    };
    a.infer_set_output_like_input = [](OnyxCustomOpInferContext* c, size_t out, size_t in, int32_t element_type) {
      return guarded([&] {
        if (out >= c->ic->output_types.size()) fail("infer_set_output_like_input: output ", out, " does not exist");
        const Type* t = infer_input(c, in);
        c->ic->set_output(out, Type::tensor(element_type_arg(element_type, true), t ? t->shape : Shape{}));
      });
    };
    a.infer_attributes = [](const OnyxCustomOpInferContext* c) -> const OnyxCustomOpAttributes* { return &c->attributes; };

    a.has_attribute = [](const OnyxCustomOpAttributes* at, const char* name) -> int32_t {
      return name && at->view.find(name) ? 1 : 0;
    };
    a.attribute_int = [](const OnyxCustomOpAttributes* at, const char* name, int64_t* value) {
      return guarded([&] { *value = attribute_of(at, name, AttributeType::Int).i; });
    };
    a.attribute_float = [](const OnyxCustomOpAttributes* at, const char* name, float* value) {
      return guarded([&] { *value = attribute_of(at, name, AttributeType::Float).f; });
    };
    a.attribute_string = [](const OnyxCustomOpAttributes* at, const char* name, const char** value, size_t* length) {
      return guarded([&] {
        const std::string& s = attribute_of(at, name, AttributeType::String).s;
        *value = s.c_str();
        if (length) *length = s.size();
      });
    };
    a.attribute_ints = [](const OnyxCustomOpAttributes* at, const char* name, int64_t* values, size_t capacity,
                          size_t* count) {
      return list_attribute(at, name, AttributeType::Ints, &Attribute::ints, values, capacity, count);
    };
    a.attribute_floats = [](const OnyxCustomOpAttributes* at, const char* name, float* values, size_t capacity,
                            size_t* count) {
      return list_attribute(at, name, AttributeType::Floats, &Attribute::floats, values, capacity, count);
    };

    a.kernel_info_attributes = [](const OnyxCustomOpKernelInfo* k) -> const OnyxCustomOpAttributes* { return &k->attributes; };
    a.kernel_info_input_count = [](const OnyxCustomOpKernelInfo* k) { return k->init->node.inputs.size(); };
    a.kernel_info_output_count = [](const OnyxCustomOpKernelInfo* k) { return k->init->node.outputs.size(); };
    a.kernel_info_input_element_type = [](const OnyxCustomOpKernelInfo* k, size_t i) -> int32_t {
      const Type* t = i < k->init->input_types.size() ? k->init->input_types[i] : nullptr;
      return t && t->kind == Type::Kind::Tensor ? static_cast<int32_t>(t->elem) : 0;
    };

    a.kernel_input_count = [](const OnyxCustomOpKernelContext* c) { return c->ctx->num_inputs(); };
    a.kernel_output_count = [](const OnyxCustomOpKernelContext* c) { return c->ctx->num_outputs(); };
    a.kernel_input = [](const OnyxCustomOpKernelContext* c, size_t i, int32_t* element_type, const int64_t** dims,
                        size_t* rank, const void** data) {
      return guarded([&] {
        if (i >= c->ctx->num_inputs()) fail("kernel_input: input ", i, " does not exist");
        const Tensor* t = nullptr;
        if (c->ctx->has_input(i)) {
          const Datum& d = c->ctx->input_datum(i);
          if (!d.is_tensor()) fail("kernel_input: input ", i, " is ", d.describe(), ", not a tensor");
          if (d.tensor.dtype() == DataType::String) fail("kernel_input: input ", i, " is a string tensor, which custom ops do not read");
          t = &d.tensor;
        }
        if (element_type) *element_type = t ? static_cast<int32_t>(t->dtype()) : 0;
        if (dims) *dims = t ? t->dims().data() : nullptr;
        if (rank) *rank = t ? t->dims().size() : 0;
        if (data) *data = t && !t->bytes().empty() ? t->bytes().data() : nullptr;
      });
    };
    a.kernel_allocate_output = [](OnyxCustomOpKernelContext* c, size_t i, int32_t element_type, const int64_t* dims,
                                  size_t rank, void** data) {
      return guarded([&] {
        if (i >= c->ctx->num_outputs()) fail("kernel_allocate_output: output ", i, " does not exist");
        const DataType dt = element_type_arg(element_type, false);
        if (dt == DataType::String) fail("kernel_allocate_output: string tensors are not supported");
        if (rank && !dims) fail("kernel_allocate_output: dims is NULL");
        std::vector<int64_t> shape(dims, dims + rank);
        for (int64_t d : shape)
          if (d < 0) fail("kernel_allocate_output: dim ", d, " is negative");
        try {
          Tensor& t = c->ctx->allocate_output(i, dt, std::move(shape));
          *data = t.bytes().empty() ? nullptr : t.mutable_data<char>();
        } catch (...) {
          c->allocation_failure = std::current_exception();
          throw;
        }
      });
    };
    return a;
  }();
  return api;
}

}  // namespace custom_op_impl

const ops::OpDef* CustomOps::resolve(const Node& n, int64_t opset) const {
  if (registry.versions(n.domain, n.op_type).empty()) return nullptr;
  return &registry.resolve(n, opset);
}

std::shared_ptr<const CustomOps> load_custom_ops(const std::vector<std::string>& paths, const std::string& model) {
  using namespace custom_op_impl;
  auto custom = std::make_shared<CustomOps>();
  for (const std::string& path : paths) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) fail(model, ": custom op library '", path, "' cannot be loaded: ", dlerror());
    std::shared_ptr<void> handle(h, [](void* p) { dlclose(p); });
    dlerror();  // clears any earlier error, so that the one below is dlsym's
    void* entry = dlsym(h, ONYX_CUSTOM_OPS_ENTRY_POINT);
    if (!entry) {
      const char* why = dlerror();
      fail(model, ": custom op library '", path, "' does not export ", ONYX_CUSTOM_OPS_ENTRY_POINT,
           why ? cat(" (", why, ")") : std::string());
    }
    OnyxCustomOpRegistry registry{custom.get(), path, handle};
    // POSIX guarantees dlsym's object pointer converts to the function it names.
    auto register_ops = reinterpret_cast<OnyxRegisterCustomOpsFn>(entry);
    if (OnyxCustomOpStatus* s = register_ops(&api_table(), &registry))
      fail(model, ": custom op library '", path, "': ", ONYX_CUSTOM_OPS_ENTRY_POINT, " failed: ", take_message(s));
  }
  return custom;
}

void import_custom_domains(pb::ModelDocument& doc, const CustomOps& custom) {
  for (const auto& [domain, version] : custom.domains) {
    bool imported = false;
    for (const pb::OperatorSetId& imp : doc.model.opset_import)
      imported = imported || spec::canonical_domain(imp.domain.value_or("")) == domain;
    if (imported) continue;
    pb::OperatorSetId& imp = doc.model.opset_import.emplace_back();
    imp.domain = doc.arena->save(domain);
    imp.version = version;
  }
}

}  // namespace onyx::exec
