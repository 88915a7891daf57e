// The C API (include/onyx/onyx.h) over the C++ Session. Every entry point catches everything at the boundary and
// turns it into an OnyxStatus; arguments from C are checked here so that misuse is reported, not undefined.
#include "onyx/onyx.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "ir/datum.hpp"
#include "base/dtype.hpp"
#include "ir/model.hpp"
#include "ir/tensor.hpp"
#include "onyx/session.hpp"

#ifndef ONYX_VERSION
#error "ONYX_VERSION is defined by CMakeLists.txt for this file"
#endif

struct OnyxStatus {
  OnyxErrorCode code;
  std::string message;
};

struct OnyxSessionOptions {
  onyx::SessionOptions options;
};

struct OnyxSession {
  onyx::Session session;
};

struct OnyxRunOptions {
  std::atomic<bool> terminate{false};
  int64_t timeout_ms = 0;
};

struct OnyxValue {
  // Caller: made by a tensor constructor, so its memory is the caller's to write. Output: returned by a run; its
  // buffers may be shared with the model or with other outputs, so it is read-only.
  enum class Origin { Caller, Output };
  onyx::Datum datum;
  Origin origin;
};

namespace {

using onyx::cat;
using onyx::DataType;
using onyx::Datum;
using onyx::Tensor;
using onyx::Type;

// The enums of the header are the C++ ones under C names (values are cast across); a renumbering on either side
// would break the ABI.
#define ONYX_SAME_TYPE(c, cpp) static_assert(ONYX_TYPE_##c == static_cast<int>(DataType::cpp));
ONYX_SAME_TYPE(UNDEFINED, Undefined)
ONYX_SAME_TYPE(FLOAT, Float)
ONYX_SAME_TYPE(UINT8, UInt8)
ONYX_SAME_TYPE(INT8, Int8)
ONYX_SAME_TYPE(UINT16, UInt16)
ONYX_SAME_TYPE(INT16, Int16)
ONYX_SAME_TYPE(INT32, Int32)
ONYX_SAME_TYPE(INT64, Int64)
ONYX_SAME_TYPE(STRING, String)
ONYX_SAME_TYPE(BOOL, Bool)
ONYX_SAME_TYPE(FLOAT16, Float16)
ONYX_SAME_TYPE(DOUBLE, Double)
ONYX_SAME_TYPE(UINT32, UInt32)
ONYX_SAME_TYPE(UINT64, UInt64)
ONYX_SAME_TYPE(COMPLEX64, Complex64)
ONYX_SAME_TYPE(COMPLEX128, Complex128)
ONYX_SAME_TYPE(BFLOAT16, BFloat16)
ONYX_SAME_TYPE(FLOAT8E4M3FN, Float8E4M3FN)
ONYX_SAME_TYPE(FLOAT8E4M3FNUZ, Float8E4M3FNUZ)
ONYX_SAME_TYPE(FLOAT8E5M2, Float8E5M2)
ONYX_SAME_TYPE(FLOAT8E5M2FNUZ, Float8E5M2FNUZ)
ONYX_SAME_TYPE(UINT4, UInt4)
ONYX_SAME_TYPE(INT4, Int4)
ONYX_SAME_TYPE(FLOAT4E2M1, Float4E2M1)
ONYX_SAME_TYPE(FLOAT8E8M0, Float8E8M0)
ONYX_SAME_TYPE(UINT2, UInt2)
ONYX_SAME_TYPE(INT2, Int2)
#undef ONYX_SAME_TYPE
#define ONYX_SAME_KIND(c, cpp) static_assert(ONYX_VALUE_##c == static_cast<int>(Type::Kind::cpp));
ONYX_SAME_KIND(UNKNOWN, Unknown)
ONYX_SAME_KIND(TENSOR, Tensor)
ONYX_SAME_KIND(SPARSE_TENSOR, SparseTensor)
ONYX_SAME_KIND(SEQUENCE, Sequence)
ONYX_SAME_KIND(MAP, Map)
ONYX_SAME_KIND(OPTIONAL, Optional)
ONYX_SAME_KIND(OPAQUE, Opaque)
#undef ONYX_SAME_KIND

// An error with the code the caller sees; onyx::Error from the library gets the code of the entry point instead.
class ApiError : public std::runtime_error {
 public:
  ApiError(OnyxErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  OnyxErrorCode code() const { return code_; }

 private:
  OnyxErrorCode code_;
};

template <class... Args>
[[noreturn]] void reject(Args&&... args) {
  throw ApiError(ONYX_ERROR_INVALID_ARGUMENT, cat(std::forward<Args>(args)...));
}

template <class T>
T* need(T* p, const char* what) {
  if (!p) reject(what, " is NULL");
  return p;
}

// Returned when even a status cannot be allocated; onyx_status_release leaves it alone.
OnyxStatus out_of_memory_status{ONYX_ERROR_OUT_OF_MEMORY, "out of memory"};

OnyxStatus* make_status(OnyxErrorCode code, const char* function, const char* message) noexcept {
  try {
    return new OnyxStatus{code, cat(function, ": ", message)};
  } catch (...) {
    return &out_of_memory_status;
  }
}

// Runs an entry point's body; `library_code` is the code for onyx::Error thrown by the library underneath.
template <class Body>
OnyxStatus* guard(const char* function, OnyxErrorCode library_code, Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const ApiError& e) {
    return make_status(e.code(), function, e.what());
  } catch (const onyx::Error& e) {
    // A run or a creation that a limit stopped says which limit, whatever the entry point.
    switch (e.kind()) {
      case onyx::ErrorKind::Terminated: return make_status(ONYX_ERROR_TERMINATED, function, e.what());
      case onyx::ErrorKind::Deadline: return make_status(ONYX_ERROR_TIMEOUT, function, e.what());
      case onyx::ErrorKind::MemoryLimit: return make_status(ONYX_ERROR_OUT_OF_MEMORY, function, e.what());
      case onyx::ErrorKind::Failure: break;
    }
    return make_status(library_code, function, e.what());
  } catch (const std::bad_alloc&) {
    return make_status(ONYX_ERROR_OUT_OF_MEMORY, function, "out of memory");
  } catch (const std::exception& e) {
    return make_status(ONYX_ERROR_INTERNAL, function, e.what());
  } catch (...) {
    return make_status(ONYX_ERROR_INTERNAL, function, "unknown exception");
  }
}

DataType element_type(OnyxElementType v) {
  if (v == 0 || !onyx::is_known_dtype(v)) reject("element type ", v, " is not an ONNX tensor element type");
  return static_cast<DataType>(v);
}

// Checked dims and their element count (at most INT64_MAX, as Tensor::allocate requires).
std::vector<int64_t> read_dims(const int64_t* dims, size_t rank, uint64_t& count) {
  if (rank && !dims) reject("dims is NULL but rank is ", rank);
  std::vector<int64_t> out(dims, dims + rank);
  count = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (out[i] < 0) reject("dims[", i, "] is ", out[i], "; dimensions must be >= 0");
    auto d = static_cast<uint64_t>(out[i]);
    if (d && count > static_cast<uint64_t>(INT64_MAX) / d) reject("the element count of the dims overflows");
    count *= d;
  }
  return out;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Kernels read elements through typed pointers, so caller memory must be aligned like the session aligns its own
// tensors: to the element size, at most 8.
size_t required_alignment(DataType t) {
  int bits = onyx::dtype_bits(t);
  return bits >= 16 ? std::min<size_t>(static_cast<size_t>(bits) / 8, 8) : 1;
}

OnyxValue* new_value(Datum d, OnyxValue::Origin origin) { return new OnyxValue{std::move(d), origin}; }

const Tensor& tensor_of(const OnyxValue* v) {
  need(v, "value");
  if (!v->datum.is_tensor()) reject("the value is ", v->datum.describe(), ", not a tensor");
  return v->datum.tensor;
}

Tensor& caller_tensor(OnyxValue* v) {
  tensor_of(v);
  if (v->origin != OnyxValue::Origin::Caller)
    reject("the value is an output of a run, which is read-only (its memory may be shared); copy it to modify");
  return v->datum.tensor;
}

const onyx::IoInfo& io_info(const OnyxSession* s, OnyxIo which, size_t index) {
  need(s, "session");
  if (which != ONYX_IO_INPUT && which != ONYX_IO_OUTPUT)
    reject("which is ", static_cast<int>(which), "; expected ONYX_IO_INPUT or ONYX_IO_OUTPUT");
  const auto& list = which == ONYX_IO_INPUT ? s->session.inputs() : s->session.outputs();
  const char* kind = which == ONYX_IO_INPUT ? "input" : "output";
  if (index >= list.size())
    reject(kind, " index ", index, " is out of range: the model has ", list.size(), " ", kind, "s");
  return list[index];
}

int64_t declared_rank(const Type& t) {
  bool tensor = t.kind == Type::Kind::Tensor || t.kind == Type::Kind::SparseTensor;
  return tensor && t.shape.rank_known ? static_cast<int64_t>(t.shape.dims.size()) : -1;
}

// The checks Session::run makes on a tensor feed, made here first so that a bad feed is reported as
// ONYX_ERROR_INVALID_ARGUMENT rather than as a failed run.
void check_tensor_feed(const std::string& model, const onyx::Value& v, const Datum& d,
                       std::map<std::string, int64_t>& symbols) {
  const Type& t = v.type;
  if (t.kind != Type::Kind::Tensor) return;  // other kinds are checked by Session::run
  auto where = [&] { return cat(model, ": input '", v.name, "'"); };
  if (!d.is_tensor()) reject(where(), ": expected ", t.to_string(), ", got ", d.describe());
  const Tensor& x = d.tensor;
  if (t.elem != DataType::Undefined && x.dtype() != t.elem)
    reject(where(), ": expected element type ", t.elem, ", got ", x.dtype());
  if (!t.shape.rank_known) return;
  if (x.dims().size() != t.shape.dims.size())
    reject(where(), ": expected rank ", t.shape.dims.size(), " ", t.shape.to_string(), ", got rank ", x.dims().size(),
           " ", dims_text(x.dims()));
  for (size_t i = 0; i < x.dims().size(); ++i) {
    const onyx::Dim& dim = t.shape.dims[i];
    if (dim.value && *dim.value != x.dims()[i])
      reject(where(), ": dimension ", i, " must be ", *dim.value, ", got ", x.dims()[i], " (model shape ",
             t.shape.to_string(), ")");
    if (!dim.value && !dim.param.empty()) {
      auto [it, inserted] = symbols.emplace(dim.param, x.dims()[i]);
      if (!inserted && it->second != x.dims()[i])
        reject(where(), ": dimension ", i, " ('", dim.param, "') is ", x.dims()[i], ", but another input set '",
               dim.param, "' to ", it->second);
    }
  }
}

bool overlaps(std::string_view bytes, const std::vector<std::string_view>& fed) {
  auto b0 = reinterpret_cast<uintptr_t>(bytes.data()), b1 = b0 + bytes.size();
  for (std::string_view f : fed) {
    auto f0 = reinterpret_cast<uintptr_t>(f.data()), f1 = f0 + f.size();
    if (b0 < f1 && f0 < b1) return true;
  }
  return false;
}

// Outputs may share buffers with the run's inputs (Identity, Reshape, ...). Caller memory may be freed or rewritten
// after the run, so such outputs get their own copy.
void detach_from_feeds(Datum& d, const std::vector<std::string_view>& fed) {
  switch (d.kind) {
    case Datum::Kind::Tensor:
      if (!d.tensor.bytes().empty() && overlaps(d.tensor.bytes(), fed)) d.tensor = d.tensor.clone();
      break;
    case Datum::Kind::Sequence:
    case Datum::Kind::Optional:
      for (Datum& e : d.elements) detach_from_feeds(e, fed);
      break;
    case Datum::Kind::Map:
      if (!d.map_keys.bytes().empty() && overlaps(d.map_keys.bytes(), fed)) d.map_keys = d.map_keys.clone();
      if (d.map_values) {
        auto values = std::make_shared<Datum>(*d.map_values);  // may be shared with an input's map
        detach_from_feeds(*values, fed);
        d.map_values = std::move(values);
      }
      break;
    case Datum::Kind::Empty:
      break;
  }
}

void collect_bytes(const Datum& d, std::vector<std::string_view>& out) {
  if (d.is_tensor() && !d.tensor.bytes().empty()) out.push_back(d.tensor.bytes());
  for (const Datum& e : d.elements) collect_bytes(e, out);
  if (d.kind == Datum::Kind::Map) {
    if (!d.map_keys.bytes().empty()) out.push_back(d.map_keys.bytes());
    if (d.map_values) collect_bytes(*d.map_values, out);
  }
}

onyx::SessionOptions session_options(const OnyxSessionOptions* o) { return o ? o->options : onyx::SessionOptions{}; }

}  // namespace

extern "C" {

// ---- status ----

OnyxErrorCode onyx_status_code(const OnyxStatus* status) { return status ? status->code : ONYX_OK; }

const char* onyx_status_message(const OnyxStatus* status) { return status ? status->message.c_str() : ""; }

void onyx_status_release(OnyxStatus* status) {
  if (status != &out_of_memory_status) delete status;
}

// ---- library ----

const char* onyx_version_string(void) { return ONYX_VERSION; }

const char* onyx_element_type_name(OnyxElementType type) {
  // dtype_name's names of known types are string literals, so data() is NUL-terminated.
  return onyx::is_known_dtype(type) ? onyx::dtype_name(static_cast<DataType>(type)).data() : "undefined";
}

// ---- session options ----

OnyxStatus* onyx_session_options_create(OnyxSessionOptions** out) {
  return guard("onyx_session_options_create", ONYX_ERROR_INTERNAL, [&] {
    need(out, "out");  // first: in `*need(out) = new ...` the new would run before the check, and leak
    *out = new OnyxSessionOptions{};
  });
}

OnyxStatus* onyx_session_options_set_threads(OnyxSessionOptions* options, int32_t threads) {
  return guard("onyx_session_options_set_threads", ONYX_ERROR_INTERNAL, [&] {
    need(options, "options");
    if (threads < 0) reject("threads is ", threads, "; expected 0 (one per physical core) or more");
    options->options.threads = threads;
  });
}

OnyxStatus* onyx_session_options_set_optimization_level(OnyxSessionOptions* options, int32_t level) {
  return guard("onyx_session_options_set_optimization_level", ONYX_ERROR_INTERNAL, [&] {
    need(options, "options");
    if (level < 0 || level > 3)
      reject("optimization level is ", level, "; expected 0 (off), 1 (basic), 2 (extended) or 3 (all)");
    options->options.optimization_level = level;
  });
}

OnyxStatus* onyx_session_options_set_log_level(OnyxSessionOptions* options, int32_t level) {
  return guard("onyx_session_options_set_log_level", ONYX_ERROR_INTERNAL, [&] {
    need(options, "options");
    if (level < 0 || level > 4) reject("log level is ", level, "; expected 0 (verbose) to 4 (fatal)");
    options->options.log_level = level;
  });
}

OnyxStatus* onyx_session_options_set_accept_newer_versions(OnyxSessionOptions* options, int32_t accept) {
  return guard("onyx_session_options_set_accept_newer_versions", ONYX_ERROR_INTERNAL, [&] {
    need(options, "options");
    options->options.accept_newer_versions = accept != 0;
  });
}

OnyxStatus* onyx_session_options_set_memory_limit_mb(OnyxSessionOptions* options, uint64_t mb) {
  return guard("onyx_session_options_set_memory_limit_mb", ONYX_ERROR_INTERNAL, [&] {
    need(options, "options");
    if (mb > (uint64_t{1} << 40)) reject("mb must be at most 2^40, got ", mb);
    options->options.memory_limit_mb = mb;
  });
}

OnyxStatus* onyx_session_options_add_custom_op_library(OnyxSessionOptions* options, const char* path) {
  return guard("onyx_session_options_add_custom_op_library", ONYX_ERROR_INTERNAL, [&] {
    need(options, "options");
    need(path, "path");
    options->options.custom_op_libraries.emplace_back(path);
  });
}

void onyx_session_options_release(OnyxSessionOptions* options) { delete options; }

// ---- sessions ----

OnyxStatus* onyx_session_create(const char* path, const OnyxSessionOptions* options, OnyxSession** out) {
  return guard("onyx_session_create", ONYX_ERROR_INVALID_MODEL, [&] {
    need(path, "path");
    need(out, "out");
    std::error_code ec;  // set when existence cannot be told (permissions): then loading reports the reason
    if (!std::filesystem::exists(path, ec) && !ec)
      throw ApiError(ONYX_ERROR_NO_SUCH_FILE, cat("'", path, "': no such file"));
    *out = new OnyxSession{onyx::Session::from_file(path, session_options(options))};
  });
}

OnyxStatus* onyx_session_create_from_bytes(const void* data, size_t size, const OnyxSessionOptions* options,
                                           OnyxSession** out) {
  return guard("onyx_session_create_from_bytes", ONYX_ERROR_INVALID_MODEL, [&] {
    if (size) need(data, "data");
    need(out, "out");
    std::string bytes(static_cast<const char*>(data), size);
    *out = new OnyxSession{onyx::Session::from_bytes(std::move(bytes), session_options(options))};
  });
}

void onyx_session_release(OnyxSession* session) { delete session; }

OnyxStatus* onyx_session_io_count(const OnyxSession* session, OnyxIo which, size_t* count) {
  return guard("onyx_session_io_count", ONYX_ERROR_INTERNAL, [&] {
    need(session, "session");
    need(count, "count");
    if (which != ONYX_IO_INPUT && which != ONYX_IO_OUTPUT)
      reject("which is ", static_cast<int>(which), "; expected ONYX_IO_INPUT or ONYX_IO_OUTPUT");
    *count = (which == ONYX_IO_INPUT ? session->session.inputs() : session->session.outputs()).size();
  });
}

OnyxStatus* onyx_session_io_name(const OnyxSession* session, OnyxIo which, size_t index, const char** name) {
  return guard("onyx_session_io_name", ONYX_ERROR_INTERNAL, [&] {
    need(name, "name");
    *name = io_info(session, which, index).name.c_str();
  });
}

OnyxStatus* onyx_session_io_kind(const OnyxSession* session, OnyxIo which, size_t index, OnyxValueKind* kind) {
  return guard("onyx_session_io_kind", ONYX_ERROR_INTERNAL, [&] {
    need(kind, "kind");
    *kind = static_cast<OnyxValueKind>(io_info(session, which, index).type.kind);
  });
}

OnyxStatus* onyx_session_io_element_type(const OnyxSession* session, OnyxIo which, size_t index,
                                         OnyxElementType* type) {
  return guard("onyx_session_io_element_type", ONYX_ERROR_INTERNAL, [&] {
    need(type, "type");
    const Type& t = io_info(session, which, index).type;
    bool tensor = t.kind == Type::Kind::Tensor || t.kind == Type::Kind::SparseTensor;
    *type = static_cast<OnyxElementType>(tensor ? t.elem : DataType::Undefined);
  });
}

OnyxStatus* onyx_session_io_rank(const OnyxSession* session, OnyxIo which, size_t index, int64_t* rank) {
  return guard("onyx_session_io_rank", ONYX_ERROR_INTERNAL, [&] {
    need(rank, "rank");
    *rank = declared_rank(io_info(session, which, index).type);
  });
}

OnyxStatus* onyx_session_io_dims(const OnyxSession* session, OnyxIo which, size_t index, int64_t* dims,
                                 const char** symbols, size_t capacity) {
  return guard("onyx_session_io_dims", ONYX_ERROR_INTERNAL, [&] {
    const onyx::IoInfo& io = io_info(session, which, index);
    int64_t rank = declared_rank(io.type);
    if (rank < 0) reject("'", io.name, "' (", io.type.to_string(), ") has no declared shape");
    if (capacity < static_cast<size_t>(rank)) reject("capacity is ", capacity, " but '", io.name, "' has rank ", rank);
    if (rank) need(dims, "dims");
    for (size_t i = 0; i < static_cast<size_t>(rank); ++i) {
      const onyx::Dim& d = io.type.shape.dims[i];
      dims[i] = d.value ? *d.value : -1;
      if (symbols) symbols[i] = d.value ? "" : d.param.c_str();
    }
  });
}

// ---- run options ----

OnyxStatus* onyx_run_options_create(OnyxRunOptions** out) {
  return guard("onyx_run_options_create", ONYX_ERROR_INTERNAL, [&] {
    need(out, "out");
    *out = new OnyxRunOptions;
  });
}

OnyxStatus* onyx_run_options_set_terminate(OnyxRunOptions* options, int terminate) {
  return guard("onyx_run_options_set_terminate", ONYX_ERROR_INTERNAL, [&] {
    need(options, "options")->terminate.store(terminate != 0, std::memory_order_relaxed);
  });
}

OnyxStatus* onyx_run_options_set_timeout_ms(OnyxRunOptions* options, int64_t timeout_ms) {
  return guard("onyx_run_options_set_timeout_ms", ONYX_ERROR_INTERNAL, [&] {
    need(options, "options");
    if (timeout_ms < 0) reject("timeout_ms must not be negative, got ", timeout_ms);
    options->timeout_ms = timeout_ms;
  });
}

void onyx_run_options_release(OnyxRunOptions* options) { delete options; }

// ---- running ----

OnyxStatus* onyx_session_run(const OnyxSession* session, const OnyxRunOptions* run_options,
                             const char* const* input_names, const OnyxValue* const* inputs, size_t input_count,
                             const char* const* output_names, size_t output_count, OnyxValue** outputs) {
  if (outputs)
    for (size_t i = 0; i < output_count; ++i) outputs[i] = nullptr;
  return guard("onyx_session_run", ONYX_ERROR_RUNTIME, [&] {
    need(session, "session");
    if (input_count) {
      need(input_names, "input_names");
      need(inputs, "inputs");
    }
    if (output_count) need(outputs, "outputs");
    const onyx::Session& s = session->session;
    const onyx::Graph& g = *s.model().graph;
    const std::string& model = s.model().label;

    std::map<std::string, Datum> feeds;
    std::map<std::string, int64_t> symbols;
    std::vector<std::string_view> fed_bytes;
    for (size_t i = 0; i < input_count; ++i) {
      if (!input_names[i]) reject("input_names[", i, "] is NULL");
      if (!inputs[i]) reject("inputs[", i, "] ('", input_names[i], "') is NULL");
      std::string name = input_names[i];
      const onyx::Value* v = g.find_local(name);
      if (!v || !v->is_graph_input) reject(model, ": '", name, "' is not an input of the model");
      const Datum& d = inputs[i]->datum;
      check_tensor_feed(model, *v, d, symbols);
      if (!feeds.emplace(name, d).second) reject(model, ": input '", name, "' is fed more than once");
      collect_bytes(d, fed_bytes);
    }
    for (const onyx::IoInfo& in : s.inputs())
      if (!feeds.count(in.name))
        reject(model, ": input '", in.name, "' is missing (", in.type.to_string_with_shape(), ")");

    std::vector<std::string> wanted;
    if (output_names && !output_count)
      reject("output_count is 0; name at least one output, or pass NULL names for all");
    if (!output_names) {
      if (output_count != s.outputs().size())
        reject("output_names is NULL (all outputs) but output_count is ", output_count, "; the model has ",
               s.outputs().size(), " outputs");
      for (const onyx::IoInfo& out : s.outputs()) wanted.push_back(out.name);
    } else {
      for (size_t i = 0; i < output_count; ++i) {
        if (!output_names[i]) reject("output_names[", i, "] is NULL");
        bool known = false;
        for (const onyx::IoInfo& out : s.outputs()) known = known || out.name == output_names[i];
        if (!known) reject(model, ": '", output_names[i], "' is not an output of the model");
        wanted.push_back(output_names[i]);
      }
    }

    onyx::RunOptions ro;
    if (run_options) {
      ro.terminate = &run_options->terminate;
      ro.timeout_ms = run_options->timeout_ms;
    }
    std::vector<std::pair<std::string, Datum>> results;
    try {
      results = s.run(feeds, wanted, ro);
    } catch (const onyx::Error& e) {
      // The flag being set is what stops a run early; a failure racing with it is reported as what was asked for.
      if (run_options && run_options->terminate.load(std::memory_order_relaxed))
        throw ApiError(ONYX_ERROR_TERMINATED, e.what());
      throw;  // guard reports a deadline or a memory limit as such
    }
    std::vector<std::unique_ptr<OnyxValue>> made;
    made.reserve(results.size());
    for (auto& [name, d] : results) {
      detach_from_feeds(d, fed_bytes);
      made.emplace_back(new_value(std::move(d), OnyxValue::Origin::Output));
    }
    if (made.size() != output_count)
      throw ApiError(ONYX_ERROR_INTERNAL,
                     cat("the run returned ", made.size(), " outputs, ", output_count, " were asked for"));
    for (size_t i = 0; i < made.size(); ++i) outputs[i] = made[i].release();
  });
}

// ---- values and tensors ----

OnyxStatus* onyx_tensor_create(OnyxElementType type, const int64_t* dims, size_t rank, OnyxValue** out) {
  // Sizes are checked first, so what Tensor::allocate can still throw is a failed allocation.
  return guard("onyx_tensor_create", ONYX_ERROR_OUT_OF_MEMORY, [&] {
    need(out, "out");
    DataType dt = element_type(type);
    uint64_t count = 0;
    std::vector<int64_t> d = read_dims(dims, rank, count);
    bool fits = dt == DataType::String ? count <= SIZE_MAX / sizeof(std::string)
                                       : onyx::raw_byte_size(dt, count).has_value();
    if (!fits) reject("a ", dt, dims_text(d), " tensor is too large");
    *out = new_value(Datum::of(Tensor::allocate(dt, std::move(d))), OnyxValue::Origin::Caller);
  });
}

OnyxStatus* onyx_tensor_create_with_data(OnyxElementType type, const int64_t* dims, size_t rank, void* data,
                                         size_t byte_size, OnyxValue** out) {
  return guard("onyx_tensor_create_with_data", ONYX_ERROR_INVALID_ARGUMENT, [&] {
    need(out, "out");
    DataType dt = element_type(type);
    if (dt == DataType::String) reject("string tensors cannot view caller memory; use onyx_tensor_create_strings");
    uint64_t count = 0;
    std::vector<int64_t> d = read_dims(dims, rank, count);
    auto expected = onyx::raw_byte_size(dt, count);
    if (!expected) reject("a ", dt, dims_text(d), " tensor is too large");
    if (byte_size != *expected)
      reject("byte_size is ", byte_size, ", but a ", dt, dims_text(d), " tensor takes ", *expected, " bytes");
    if (byte_size) need(data, "data");
    size_t align = required_alignment(dt);
    if (reinterpret_cast<uintptr_t>(data) % align != 0)
      reject("data (", data, ") is not aligned to ", align, " bytes, as ", dt, " elements need");
    std::string_view bytes(static_cast<const char*>(data), byte_size);
    // No keep-alive: the caller owns the memory and keeps it alive (see the header).
    *out = new_value(Datum::of(Tensor::view({}, dt, std::move(d), bytes, nullptr)), OnyxValue::Origin::Caller);
  });
}

OnyxStatus* onyx_tensor_create_strings(const int64_t* dims, size_t rank, const char* const* strings,
                                       const size_t* lengths, size_t count, OnyxValue** out) {
  return guard("onyx_tensor_create_strings", ONYX_ERROR_INVALID_ARGUMENT, [&] {
    need(out, "out");
    uint64_t elements = 0;
    std::vector<int64_t> d = read_dims(dims, rank, elements);
    if (count != elements)
      reject("count is ", count, ", but a string", dims_text(d), " tensor has ", elements, " elements");
    if (count) need(strings, "strings");
    std::vector<std::string> values;
    values.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (!strings[i] && !(lengths && lengths[i] == 0)) reject("strings[", i, "] is NULL");
      values.push_back(lengths ? std::string(strings[i] ? strings[i] : "", lengths[i]) : std::string(strings[i]));
    }
    *out = new_value(Datum::of(Tensor::strings({}, std::move(d), std::move(values))), OnyxValue::Origin::Caller);
  });
}

void onyx_value_release(OnyxValue* value) { delete value; }

OnyxStatus* onyx_value_kind(const OnyxValue* value, OnyxValueKind* kind) {
  return guard("onyx_value_kind", ONYX_ERROR_INTERNAL, [&] {
    need(value, "value");
    need(kind, "kind");
    switch (value->datum.kind) {
      case Datum::Kind::Tensor: *kind = ONYX_VALUE_TENSOR; break;
      case Datum::Kind::Sequence: *kind = ONYX_VALUE_SEQUENCE; break;
      case Datum::Kind::Map: *kind = ONYX_VALUE_MAP; break;
      case Datum::Kind::Optional: *kind = ONYX_VALUE_OPTIONAL; break;
      case Datum::Kind::Empty: *kind = ONYX_VALUE_UNKNOWN; break;
    }
  });
}

OnyxStatus* onyx_tensor_element_type(const OnyxValue* value, OnyxElementType* type) {
  return guard("onyx_tensor_element_type", ONYX_ERROR_INTERNAL, [&] {
    need(type, "type");
    *type = static_cast<OnyxElementType>(tensor_of(value).dtype());
  });
}

OnyxStatus* onyx_tensor_rank(const OnyxValue* value, size_t* rank) {
  return guard("onyx_tensor_rank", ONYX_ERROR_INTERNAL, [&] {
    need(rank, "rank");
    *rank = tensor_of(value).dims().size();
  });
}

OnyxStatus* onyx_tensor_dims(const OnyxValue* value, int64_t* dims, size_t capacity) {
  return guard("onyx_tensor_dims", ONYX_ERROR_INTERNAL, [&] {
    const Tensor& t = tensor_of(value);
    if (capacity < t.dims().size()) reject("capacity is ", capacity, " but the tensor has rank ", t.dims().size());
    if (!t.dims().empty()) need(dims, "dims");
    for (size_t i = 0; i < t.dims().size(); ++i) dims[i] = t.dims()[i];
  });
}

OnyxStatus* onyx_tensor_element_count(const OnyxValue* value, size_t* count) {
  return guard("onyx_tensor_element_count", ONYX_ERROR_INTERNAL, [&] {
    need(count, "count");
    *count = static_cast<size_t>(tensor_of(value).element_count());
  });
}

OnyxStatus* onyx_tensor_byte_size(const OnyxValue* value, size_t* size) {
  return guard("onyx_tensor_byte_size", ONYX_ERROR_INTERNAL, [&] {
    need(size, "size");
    *size = tensor_of(value).bytes().size();
  });
}

OnyxStatus* onyx_tensor_data(const OnyxValue* value, const void** data) {
  return guard("onyx_tensor_data", ONYX_ERROR_INTERNAL, [&] {
    need(data, "data");
    const Tensor& t = tensor_of(value);
    if (t.dtype() == DataType::String) reject("a string tensor has no raw data; use onyx_tensor_string");
    *data = t.bytes().data();
  });
}

OnyxStatus* onyx_tensor_mutable_data(OnyxValue* value, void** data) {
  return guard("onyx_tensor_mutable_data", ONYX_ERROR_INTERNAL, [&] {
    need(data, "data");
    Tensor& t = caller_tensor(value);
    if (t.dtype() == DataType::String) reject("a string tensor has no raw data; use onyx_tensor_set_string");
    // The buffer is either onyx_tensor_create's (writable) or the caller's own memory.
    *data = const_cast<char*>(t.bytes().data());
  });
}

OnyxStatus* onyx_tensor_string(const OnyxValue* value, size_t index, const char** string, size_t* length) {
  return guard("onyx_tensor_string", ONYX_ERROR_INTERNAL, [&] {
    need(string, "string");
    const Tensor& t = tensor_of(value);
    if (t.dtype() != DataType::String) reject("the tensor holds ", t.dtype(), ", not strings");
    const auto& values = t.string_values();
    if (index >= values.size()) reject("index ", index, " is out of range: the tensor has ", values.size(), " strings");
    *string = values[index].c_str();
    if (length) *length = values[index].size();
  });
}

OnyxStatus* onyx_tensor_set_string(OnyxValue* value, size_t index, const char* string, size_t length) {
  return guard("onyx_tensor_set_string", ONYX_ERROR_INTERNAL, [&] {
    Tensor& t = caller_tensor(value);
    if (t.dtype() != DataType::String) reject("the tensor holds ", t.dtype(), ", not strings");
    auto& values = t.mutable_strings();
    if (index >= values.size()) reject("index ", index, " is out of range: the tensor has ", values.size(), " strings");
    if (length) need(string, "string");
    values[index].assign(string ? string : "", length);
  });
}

// ---- the versioned table ----

const OnyxApi* onyx_get_api(uint32_t version) {
  static const OnyxApi api = {
      ONYX_API_VERSION,
      onyx_status_code,
      onyx_status_message,
      onyx_status_release,
      onyx_version_string,
      onyx_element_type_name,
      onyx_session_options_create,
      onyx_session_options_set_threads,
      onyx_session_options_set_optimization_level,
      onyx_session_options_set_log_level,
      onyx_session_options_release,
      onyx_session_create,
      onyx_session_create_from_bytes,
      onyx_session_release,
      onyx_session_io_count,
      onyx_session_io_name,
      onyx_session_io_kind,
      onyx_session_io_element_type,
      onyx_session_io_rank,
      onyx_session_io_dims,
      onyx_run_options_create,
      onyx_run_options_set_terminate,
      onyx_run_options_release,
      onyx_session_run,
      onyx_tensor_create,
      onyx_tensor_create_with_data,
      onyx_tensor_create_strings,
      onyx_value_release,
      onyx_value_kind,
      onyx_tensor_element_type,
      onyx_tensor_rank,
      onyx_tensor_dims,
      onyx_tensor_element_count,
      onyx_tensor_byte_size,
      onyx_tensor_data,
      onyx_tensor_mutable_data,
      onyx_tensor_string,
      onyx_tensor_set_string,
      onyx_session_options_set_accept_newer_versions,
      onyx_session_options_set_memory_limit_mb,
      onyx_run_options_set_timeout_ms,
      onyx_session_options_add_custom_op_library,
  };
  return version >= 1 && version <= ONYX_API_VERSION ? &api : nullptr;
}

}  // extern "C"
