// The gRPC front of `onyx serve`: inference.GRPCInferenceService (KServe v2 / Triton's gRPC protocol) and
// grpc.health.v1.Health, on gRPC C++'s callback API. No call owns a thread: unary calls answer through their
// context's default reactor (ModelInfer finishes from the core's worker thread once the outputs are in),
// ModelStreamInfer is a bidirectional reactor with a write queue, and Health/Watch a server-streaming reactor the
// front notifies. Raw input tensors are views of the request message's bytes (it lives until the call finishes);
// outputs always go back as raw_output_contents, as Triton sends them.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/support/server_callback.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fronts.hpp"
#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"

namespace onyx::serve {
namespace {

using GrpcClock = std::chrono::steady_clock;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using inference::ModelInferRequest;
using inference::ModelInferResponse;
using inference::ModelStreamInferResponse;

grpc::Status grpc_status_of(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(grpc_status_code(s.code)), s.message);
}

ServeError grpc_invalid(std::string message) { return ServeError(Code::InvalidArgument, std::move(message)); }

// A gRPC status with no Code of the core (UNIMPLEMENTED), thrown inside a unary handler's body.
struct GrpcRpcError {
  grpc::Status status;
};

// Triton serves one repository namespace and refuses a repository_name the same way.
void grpc_no_repository_name(const std::string& name) {
  if (!name.empty())
    throw GrpcRpcError{
        grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "'repository_name' specification is not supported")};
}

// ---- Access log: one JSON line per call on stderr ----

const char* grpc_code_name(grpc::StatusCode c) {
  static const char* const names[] = {"OK",
                                      "CANCELLED",
                                      "UNKNOWN",
                                      "INVALID_ARGUMENT",
                                      "DEADLINE_EXCEEDED",
                                      "NOT_FOUND",
                                      "ALREADY_EXISTS",
                                      "PERMISSION_DENIED",
                                      "RESOURCE_EXHAUSTED",
                                      "FAILED_PRECONDITION",
                                      "ABORTED",
                                      "OUT_OF_RANGE",
                                      "UNIMPLEMENTED",
                                      "INTERNAL",
                                      "UNAVAILABLE",
                                      "DATA_LOSS",
                                      "UNAUTHENTICATED"};
  const int i = static_cast<int>(c);
  return i >= 0 && i < static_cast<int>(std::size(names)) ? names[i] : "UNKNOWN";
}

void grpc_access_log(std::string_view rpc, std::string_view model, const grpc::Status& status,
                     GrpcClock::time_point start) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(GrpcClock::now() - start).count();
  std::string line = "{\"time\":\"" + access_log_time() + "\",\"rpc\":";
  append_json_string(line, rpc);
  line += ",\"model\":";
  append_json_string(line, model);
  line += ",\"status\":\"";
  line += grpc_code_name(status.error_code());
  line += "\",\"duration_us\":";
  line += std::to_string(us);
  line += "}\n";
  // One write per line, so that lines from several threads do not interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

// ---- ModelInferRequest -> InferRequest ----

// A keep-alive that owns nothing: a unary call's request message outlives the core's use of its bytes (the call
// finishes only after the core's done callback), so views of it need no owner. Not null, so Tensor sees a keep;
// use_count 0, so nothing takes the buffer for its own.
std::shared_ptr<const void> grpc_unowned(const void* p) {
  return std::shared_ptr<const void>(std::shared_ptr<const void>(), p);
}

std::string grpc_shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Any typed contents at all (proto3 has no presence for repeated fields; an empty `contents` is no contents).
bool grpc_has_contents(const inference::InferTensorContents& c) {
  return c.bool_contents_size() || c.int_contents_size() || c.int64_contents_size() || c.uint_contents_size() ||
         c.uint64_contents_size() || c.fp32_contents_size() || c.fp64_contents_size() || c.bytes_contents_size();
}

// The non-empty typed field other than `expected`, for an error message ("" when none).
std::string grpc_other_field(const inference::InferTensorContents& c, std::string_view expected) {
  const std::pair<const char*, int> fields[] = {
      {"bool_contents", c.bool_contents_size()},   {"int_contents", c.int_contents_size()},
      {"int64_contents", c.int64_contents_size()}, {"uint_contents", c.uint_contents_size()},
      {"uint64_contents", c.uint64_contents_size()}, {"fp32_contents", c.fp32_contents_size()},
      {"fp64_contents", c.fp64_contents_size()},   {"bytes_contents", c.bytes_contents_size()}};
  for (const auto& [name, size] : fields)
    if (size > 0 && expected != name) return name;
  return "";
}

// A view of a typed repeated field whose in-memory layout is the tensor's (little-endian host): no copy.
template <class T>
Tensor grpc_view_field(const google::protobuf::RepeatedField<T>& f, const std::string& name, DataType dt,
                       std::vector<int64_t> dims, const std::shared_ptr<const void>& keep) {
  std::string_view bytes(reinterpret_cast<const char*>(f.data()), static_cast<size_t>(f.size()) * sizeof(T));
  return Tensor::view(name, dt, std::move(dims), bytes, keep, true);
}

// INT8/INT16 travel in int_contents, UINT8/UINT16 in uint_contents: narrowed, each value checked.
template <class T, class Src>
Tensor grpc_narrow_field(const google::protobuf::RepeatedField<Src>& f, const char* field, const std::string& name,
                         std::string_view v2, DataType dt, std::vector<int64_t> dims) {
  std::string bytes(static_cast<size_t>(f.size()) * sizeof(T), '\0');
  T* out = reinterpret_cast<T*>(bytes.data());
  for (int i = 0; i < f.size(); ++i) {
    const Src v = f.Get(i);
    if (!std::in_range<T>(v))
      throw grpc_invalid("input '" + name + "': " + field + "[" + std::to_string(i) + "] = " + std::to_string(v) +
                         " is out of range for " + std::string(v2));
    out[i] = static_cast<T>(v);
  }
  return Tensor::owned(name, dt, std::move(dims), std::move(bytes));
}

// One input from its typed contents.
Tensor grpc_typed_input(const ModelInferRequest::InferInputTensor& in, DataType dt, std::string_view v2,
                        std::vector<int64_t> dims, uint64_t count, const std::shared_ptr<const void>& keep) {
  const auto& c = in.contents();
  const std::string& name = in.name();
  const char* field = nullptr;
  int size = 0;
  switch (dt) {
    case DataType::Bool: field = "bool_contents", size = c.bool_contents_size(); break;
    case DataType::Int8:
    case DataType::Int16:
    case DataType::Int32: field = "int_contents", size = c.int_contents_size(); break;
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32: field = "uint_contents", size = c.uint_contents_size(); break;
    case DataType::Int64: field = "int64_contents", size = c.int64_contents_size(); break;
    case DataType::UInt64: field = "uint64_contents", size = c.uint64_contents_size(); break;
    case DataType::Float: field = "fp32_contents", size = c.fp32_contents_size(); break;
    case DataType::Double: field = "fp64_contents", size = c.fp64_contents_size(); break;
    case DataType::String: field = "bytes_contents", size = c.bytes_contents_size(); break;
    default:
      throw grpc_invalid("input '" + name + "': " + std::string(v2) +
                         " has no typed contents field; send it in raw_input_contents");
  }
  const std::string other = grpc_other_field(c, field);
  if (!other.empty())
    throw grpc_invalid("input '" + name + "': " + std::string(v2) + " data goes in " + field + ", not " + other);
  if (size == 0 && count > 0)
    throw grpc_invalid("input '" + name + "' has no data: send it in contents." + field + " or raw_input_contents");
  if (static_cast<uint64_t>(size) != count)
    throw grpc_invalid("input '" + name + "': " + field + " has " + std::to_string(size) + " elements but shape " +
                       grpc_shape_text(dims) + " needs " + std::to_string(count));
  static_assert(sizeof(bool) == 1);
  switch (dt) {
    case DataType::Bool: return grpc_view_field(c.bool_contents(), name, dt, std::move(dims), keep);
    case DataType::Int8: return grpc_narrow_field<int8_t>(c.int_contents(), field, name, v2, dt, std::move(dims));
    case DataType::Int16: return grpc_narrow_field<int16_t>(c.int_contents(), field, name, v2, dt, std::move(dims));
    case DataType::Int32: return grpc_view_field(c.int_contents(), name, dt, std::move(dims), keep);
    case DataType::UInt8: return grpc_narrow_field<uint8_t>(c.uint_contents(), field, name, v2, dt, std::move(dims));
    case DataType::UInt16:
      return grpc_narrow_field<uint16_t>(c.uint_contents(), field, name, v2, dt, std::move(dims));
    case DataType::UInt32: return grpc_view_field(c.uint_contents(), name, dt, std::move(dims), keep);
    case DataType::Int64: return grpc_view_field(c.int64_contents(), name, dt, std::move(dims), keep);
    case DataType::UInt64: return grpc_view_field(c.uint64_contents(), name, dt, std::move(dims), keep);
    case DataType::Float: return grpc_view_field(c.fp32_contents(), name, dt, std::move(dims), keep);
    case DataType::Double: return grpc_view_field(c.fp64_contents(), name, dt, std::move(dims), keep);
    default: {  // String
      std::vector<std::string> values(c.bytes_contents().begin(), c.bytes_contents().end());
      return Tensor::strings(name, std::move(dims), std::move(values));
    }
  }
}

// One input from its raw_input_contents entry: a view when the bytes are aligned for the element type.
Tensor grpc_raw_input(const std::string& name, const std::string& raw, DataType dt, std::string_view v2,
                      std::vector<int64_t> dims, uint64_t count, const std::shared_ptr<const void>& keep) {
  if (dt == DataType::String)
    return Tensor::strings(name, std::move(dims), decode_bytes_elements(raw, count, name));
  const size_t es = v2_element_size(dt);
  const uint64_t expected = count * es;  // count <= 2^56 (see grpc_parse_infer): no overflow
  if (raw.size() != expected)
    throw grpc_invalid("input '" + name + "': raw_input_contents has " + std::to_string(raw.size()) +
                       " bytes but " + std::string(v2) + " of shape " + grpc_shape_text(dims) + " needs " +
                       std::to_string(expected));
  const size_t align = std::min<size_t>(es, 8);
  Tensor t = align && reinterpret_cast<uintptr_t>(raw.data()) % align == 0
                 ? Tensor::view(name, dt, std::move(dims), raw, keep, true)
                 : Tensor::owned(name, dt, std::move(dims), raw);
  if (dt == DataType::Bool) {
    if (auto bad = invalid_bool(t))
      throw grpc_invalid("input '" + name + "': BOOL element " + std::to_string(bad->index) + " is byte " +
                         std::to_string(bad->byte) + " (must be 0 or 1)");
  }
  return t;
}

// The request's parameter `key` as an unsigned integer (int64 or uint64); nullopt when absent.
std::optional<uint64_t> grpc_uint_param(const google::protobuf::Map<std::string, inference::InferParameter>& params,
                                        const std::string& key, const std::string& where) {
  auto it = params.find(key);
  if (it == params.end()) return std::nullopt;
  const auto& p = it->second;
  if (p.parameter_choice_case() == inference::InferParameter::kInt64Param) {
    if (p.int64_param() < 0) throw grpc_invalid(where + "parameter '" + key + "' must not be negative");
    return static_cast<uint64_t>(p.int64_param());
  }
  if (p.parameter_choice_case() == inference::InferParameter::kUint64Param) return p.uint64_param();
  throw grpc_invalid(where + "parameter '" + key + "' must be an int64_param");
}

// Translates a request; `keep` keeps the message's bytes alive for the views. Throws ServeError InvalidArgument.
void grpc_parse_infer(const ModelInferRequest& req, const std::shared_ptr<const void>& keep, InferRequest& out) {
  out.model = req.model_name();
  out.version = req.model_version();
  out.id = req.id();
  if (auto t = grpc_uint_param(req.parameters(), "timeout", "")) out.timeout_us = *t;

  const int n = req.inputs_size();
  const bool raw = req.raw_input_contents_size() > 0;
  if (raw && req.raw_input_contents_size() != n)
    throw grpc_invalid("raw_input_contents has " + std::to_string(req.raw_input_contents_size()) +
                       " entries for " + std::to_string(n) + " inputs (one per input, in input order)");
  out.inputs.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto& in = req.inputs(i);
    const std::string& name = in.name();
    if (in.parameters().count("shared_memory_region"))
      throw grpc_invalid("input '" + name + "': shared memory is not supported");
    const auto dt = dtype_from_v2(in.datatype());
    if (!dt) throw grpc_invalid("input '" + name + "': unknown datatype '" + in.datatype() + "'");
    std::vector<int64_t> dims(in.shape().begin(), in.shape().end());
    // Bounded so that count * element size (at most 8 bytes) cannot overflow.
    constexpr uint64_t max_count = uint64_t{1} << 56;
    uint64_t count = 1;
    for (int64_t d : dims) {
      if (d < 0) throw grpc_invalid("input '" + name + "': negative dimension in shape " + grpc_shape_text(dims));
      if (d != 0 && count > max_count / static_cast<uint64_t>(d))
        throw grpc_invalid("input '" + name + "': shape " + grpc_shape_text(dims) + " is too large");
      count *= static_cast<uint64_t>(d);
    }
    Tensor t;
    if (raw) {
      if (grpc_has_contents(in.contents()))
        throw grpc_invalid("input '" + name +
                           "': contents must not be given when raw_input_contents is used (all inputs raw or none)");
      t = grpc_raw_input(name, req.raw_input_contents(i), *dt, in.datatype(), std::move(dims), count, keep);
    } else {
      t = grpc_typed_input(in, *dt, in.datatype(), std::move(dims), count, keep);
    }
    out.inputs.push_back(InferTensor{name, std::move(t)});
  }

  out.outputs.reserve(static_cast<size_t>(req.outputs_size()));
  for (const auto& o : req.outputs()) {
    if (o.parameters().count("shared_memory_region"))
      throw grpc_invalid("output '" + o.name() + "': shared memory is not supported");
    RequestedOutput r;
    r.name = o.name();
    if (auto c = grpc_uint_param(o.parameters(), "classification", "output '" + o.name() + "': "))
      r.classification = static_cast<int64_t>(*c);
    out.outputs.push_back(std::move(r));
  }
}

// ---- InferResponse -> ModelInferResponse (always raw, as Triton answers) ----

void grpc_fill_response(InferResponse& r, ModelInferResponse* out) {
  out->set_model_name(std::move(r.model));
  out->set_model_version(std::move(r.version));
  out->set_id(std::move(r.id));
  out->mutable_outputs()->Reserve(static_cast<int>(r.outputs.size()));
  out->mutable_raw_output_contents()->Reserve(static_cast<int>(r.outputs.size()));
  for (auto& o : r.outputs) {
    const Tensor& t = o.data;
    const std::string_view v2 = dtype_to_v2(t.dtype());
    if (v2.empty())
      throw ServeError(Code::Internal, "output '" + o.name + "' has element type " +
                                           std::string(dtype_name(t.dtype())) + ", which the protocol cannot carry");
    auto* meta = out->add_outputs();
    meta->set_name(std::move(o.name));
    meta->set_datatype(v2.data(), v2.size());
    meta->mutable_shape()->Add(t.dims().begin(), t.dims().end());
    std::string* raw = out->add_raw_output_contents();
    if (t.dtype() == DataType::String)
      *raw = encode_bytes_elements(t.string_values());
    else
      raw->assign(t.bytes().data(), t.bytes().size());
  }
}

// ---- ModelStreamInfer: a bidirectional reactor ----
//
// Every request read goes to the core at once (the next read starts right away, so a stream may have several
// requests in flight); each response joins a queue written one at a time (a stream allows one outstanding write).
// Finish comes once the client half-closed and every response is written, or at once on cancellation (responses
// still in the core are dropped). The reactor is deleted when gRPC is done with it (OnDone) and no core callback
// still points to it. Start*/Finish are called without the lock held, as gRPC may run reactions inline; the
// reading_/writing_ flags make sure Finish never races an op being started.
class GrpcStreamReactor final : public grpc::ServerBidiReactor<ModelInferRequest, ModelStreamInferResponse> {
 public:
  GrpcStreamReactor(Core& core, bool access_log) : core_(core), access_log_(access_log) {
    reading_ = true;
    next_ = std::make_shared<ModelInferRequest>();
    StartRead(next_.get());
  }

  void OnReadDone(bool ok) override {
    std::unique_lock lk(mu_);
    reading_ = false;
    if (!ok) {
      read_closed_ = true;
      settle(lk);
      return;
    }
    if (cancelled_ || finished_) {
      settle(lk);
      return;
    }
    std::shared_ptr<ModelInferRequest> request = std::move(next_);
    ++pending_;
    // Reading stays "on" until StartRead below, so nothing can Finish (nor delete this) in between.
    reading_ = true;
    next_ = std::make_shared<ModelInferRequest>();
    ModelInferRequest* next = next_.get();
    lk.unlock();
    submit(std::move(request));
    StartRead(next);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lk(mu_);
    writing_ = false;
    queue_.pop_front();
    if (!ok) {  // the stream broke (the client went away): nothing more can be written
      broken_ = true;
      queue_.clear();
    }
    if (!broken_ && !cancelled_ && !queue_.empty()) {
      writing_ = true;
      const ModelStreamInferResponse* msg = &queue_.front();
      lk.unlock();
      StartWrite(msg);
      return;
    }
    settle(lk);
  }

  void OnCancel() override {
    std::unique_lock lk(mu_);
    cancelled_ = true;
    settle(lk);
  }

  void OnDone() override {
    std::unique_lock lk(mu_);
    done_ = true;
    settle(lk);
  }

 private:
  void submit(std::shared_ptr<ModelInferRequest> request) {
    const auto start = GrpcClock::now();
    InferRequest ir;
    ir.received = start;
    try {
      grpc_parse_infer(*request, request, ir);
    } catch (const ServeError& e) {
      complete(*request, e.status(), nullptr, start);
      return;
    } catch (const std::exception& e) {
      complete(*request, Status::error(Code::InvalidArgument, e.what()), nullptr, start);
      return;
    }
    // The callback holds the message: the inputs' views of it stay valid while the core has them.
    core_.infer(std::move(ir), [this, request, start](Status status, InferResponse response) {
      complete(*request, std::move(status), &response, start);
    });
  }

  // Called once per request read, from the core's worker (or the reading thread on an early error).
  void complete(const ModelInferRequest& request, Status status, InferResponse* response,
                GrpcClock::time_point start) {
    ModelStreamInferResponse out;
    if (status.ok() && response) {
      try {
        grpc_fill_response(*response, out.mutable_infer_response());
      } catch (const ServeError& e) {
        status = e.status();
      }
    }
    if (!status.ok()) {
      // Triton names the request (its id) in a stream's error response, so a client can match it.
      out.Clear();
      out.set_error_message(status.message);
      auto* r = out.mutable_infer_response();
      r->set_model_name(request.model_name());
      r->set_model_version(request.model_version());
      r->set_id(request.id());
    }
    if (access_log_) grpc_access_log("ModelStreamInfer", request.model_name(), grpc_status_of(status), start);

    std::unique_lock lk(mu_);
    --pending_;
    if (!finished_ && !cancelled_ && !broken_) {
      queue_.push_back(std::move(out));
      if (!writing_) {
        // writing_ keeps Finish (and so OnDone and the delete) away until this write's OnWriteDone.
        writing_ = true;
        const ModelStreamInferResponse* msg = &queue_.front();
        lk.unlock();
        StartWrite(msg);
        return;
      }
    }
    settle(lk);
  }

  // With mu_ held (released on return): deletes the reactor, finishes the RPC, or does nothing, as the state says.
  void settle(std::unique_lock<std::mutex>& lk) {
    if (done_) {
      const bool last = pending_ == 0;
      lk.unlock();
      if (last) delete this;
      return;
    }
    if (finished_ || reading_ || writing_) return;
    grpc::Status status;
    if (cancelled_ || broken_) {
      status = grpc::Status::CANCELLED;
    } else if (!(read_closed_ && pending_ == 0 && queue_.empty())) {
      return;
    }
    finished_ = true;
    lk.unlock();
    Finish(status);
  }

  Core& core_;
  const bool access_log_;
  std::mutex mu_;
  std::shared_ptr<ModelInferRequest> next_;  // the message being read
  std::deque<ModelStreamInferResponse> queue_;  // front: the one being written (references stay valid)
  size_t pending_ = 0;                          // requests in the core
  bool reading_ = false, writing_ = false;
  bool read_closed_ = false, cancelled_ = false, broken_ = false, finished_ = false, done_ = false;
};

// ---- inference.GRPCInferenceService ----

class GrpcInferenceService final : public inference::GRPCInferenceService::CallbackService {
 public:
  GrpcInferenceService(Core& core, bool access_log) : core_(core), access_log_(access_log) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* ctx, const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* resp) override {
    return unary(ctx, "ServerLive", {}, [&] { resp->set_live(core_.live()); });
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* ctx, const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* resp) override {
    return unary(ctx, "ServerReady", {}, [&] { resp->set_ready(core_.ready()); });
  }

  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* ctx, const inference::ModelReadyRequest* req,
                                       inference::ModelReadyResponse* resp) override {
    return unary(ctx, "ModelReady", req->name(),
                 [&] { resp->set_ready(core_.model_ready(req->name(), req->version())); });
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* ctx, const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* resp) override {
    return unary(ctx, "ServerMetadata", {}, [&] {
      ServerMeta m = core_.server_metadata();
      resp->set_name(std::move(m.name));
      resp->set_version(std::move(m.version));
      for (auto& e : m.extensions) resp->add_extensions(std::move(e));
    });
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* ctx,
                                          const inference::ModelMetadataRequest* req,
                                          inference::ModelMetadataResponse* resp) override {
    return unary(ctx, "ModelMetadata", req->name(), [&] {
      ModelMeta m = core_.model_metadata(req->name(), req->version());
      resp->set_name(std::move(m.name));
      for (auto& v : m.versions) resp->add_versions(std::move(v));
      resp->set_platform(std::move(m.platform));
      auto add = [](auto* list, std::vector<TensorMeta>& tensors) {
        for (auto& t : tensors) {
          auto* x = list->Add();
          x->set_name(std::move(t.name));
          x->set_datatype(std::move(t.datatype));
          x->mutable_shape()->Add(t.shape.begin(), t.shape.end());
        }
      };
      add(resp->mutable_inputs(), m.inputs);
      add(resp->mutable_outputs(), m.outputs);
    });
  }

  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* ctx, const inference::ModelConfigRequest* req,
                                        inference::ModelConfigResponse* resp) override {
    return unary(ctx, "ModelConfig", req->name(),
                 [&] { *resp->mutable_config() = core_.model_config(req->name(), req->version()); });
  }

  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* ctx,
                                            const inference::ModelStatisticsRequest* req,
                                            inference::ModelStatisticsResponse* resp) override {
    return unary(ctx, "ModelStatistics", req->name(), [&] {
      auto set = [](inference::StatisticDuration* d, const Duration& s) {
        d->set_count(s.count);
        d->set_ns(s.ns);
      };
      for (const ModelStats& s : core_.statistics(req->name(), req->version())) {
        auto* m = resp->add_model_stats();
        m->set_name(s.name);
        m->set_version(s.version);
        m->set_last_inference(s.last_inference_ms);
        m->set_inference_count(s.inference_count);
        m->set_execution_count(s.execution_count);
        auto* st = m->mutable_inference_stats();
        set(st->mutable_success(), s.success);
        set(st->mutable_fail(), s.fail);
        set(st->mutable_queue(), s.queue);
        set(st->mutable_compute_input(), s.compute_input);
        set(st->mutable_compute_infer(), s.compute_infer);
        set(st->mutable_compute_output(), s.compute_output);
        set(st->mutable_cache_hit(), {});
        set(st->mutable_cache_miss(), {});
        for (const BatchStat& b : s.batch_stats) {
          auto* x = m->add_batch_stats();
          x->set_batch_size(b.batch_size);
          set(x->mutable_compute_input(), b.compute_input);
          set(x->mutable_compute_infer(), b.compute_infer);
          set(x->mutable_compute_output(), b.compute_output);
        }
      }
    });
  }

  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* ctx,
                                            const inference::RepositoryIndexRequest* req,
                                            inference::RepositoryIndexResponse* resp) override {
    return unary(ctx, "RepositoryIndex", {}, [&] {
      grpc_no_repository_name(req->repository_name());
      for (RepoEntry& e : core_.repository_index(req->ready())) {
        auto* m = resp->add_models();
        m->set_name(std::move(e.name));
        m->set_version(std::move(e.version));
        m->set_state(std::move(e.state));
        m->set_reason(std::move(e.reason));
      }
    });
  }

  // Blocks this callback thread while the model loads: loads are rare administrative calls, and the core has no
  // asynchronous load.
  grpc::ServerUnaryReactor* RepositoryModelLoad(grpc::CallbackServerContext* ctx,
                                                const inference::RepositoryModelLoadRequest* req,
                                                inference::RepositoryModelLoadResponse*) override {
    return unary(ctx, "RepositoryModelLoad", req->model_name(), [&] {
      grpc_no_repository_name(req->repository_name());
      std::string config;
      for (const auto& [key, p] : req->parameters()) {
        if (key == "config") {
          if (p.parameter_choice_case() != inference::ModelRepositoryParameter::kStringParam)
            throw grpc_invalid("load parameter 'config' must be a string_param holding the model config as JSON");
          config = p.string_param();
        } else if (key.rfind("file:", 0) == 0) {
          throw grpc_invalid("load parameter '" + key + "': model file overrides are not supported");
        }
      }
      core_.load_model(req->model_name(), config);
    });
  }

  grpc::ServerUnaryReactor* RepositoryModelUnload(grpc::CallbackServerContext* ctx,
                                                  const inference::RepositoryModelUnloadRequest* req,
                                                  inference::RepositoryModelUnloadResponse*) override {
    return unary(ctx, "RepositoryModelUnload", req->model_name(), [&] {
      grpc_no_repository_name(req->repository_name());
      core_.unload_model(req->model_name());  // unload_dependents: nothing depends on anything here
    });
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* ctx, const ModelInferRequest* req,
                                       ModelInferResponse* resp) override {
    const auto start = GrpcClock::now();
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    InferRequest ir;
    ir.received = start;
    try {
      grpc_parse_infer(*req, grpc_unowned(req), ir);
    } catch (const ServeError& e) {
      finish(reactor, "ModelInfer", req->model_name(), grpc_status_of(e.status()), start);
      return reactor;
    } catch (const std::exception& e) {
      finish(reactor, "ModelInfer", req->model_name(), grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, e.what()),
             start);
      return reactor;
    }
    // Runs on a core worker (or here, for a request refused at once). `req` and `resp` live until Finish, which
    // comes last: the inputs' views of `req` stay valid for as long as the core reads them.
    core_.infer(std::move(ir), [reactor, req, resp, start, log = access_log_](Status status, InferResponse r) {
      grpc::Status st = grpc_status_of(status);
      if (st.ok()) {
        try {
          grpc_fill_response(r, resp);
        } catch (const ServeError& e) {
          resp->Clear();
          st = grpc_status_of(e.status());
        }
      }
      if (log) grpc_access_log("ModelInfer", req->model_name(), st, start);
      reactor->Finish(st);
    });
    return reactor;
  }

  grpc::ServerBidiReactor<ModelInferRequest, ModelStreamInferResponse>* ModelStreamInfer(
      grpc::CallbackServerContext*) override {
    return new GrpcStreamReactor(core_, access_log_);
  }

 private:
  // A unary call answered at once: runs `fill`, maps what it throws to the call's status.
  template <class Fill>
  grpc::ServerUnaryReactor* unary(grpc::CallbackServerContext* ctx, std::string_view rpc, std::string_view model,
                                  Fill&& fill) {
    const auto start = GrpcClock::now();
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    grpc::Status st;
    try {
      fill();
    } catch (const ServeError& e) {
      st = grpc_status_of(e.status());
    } catch (const GrpcRpcError& e) {
      st = e.status;
    } catch (const std::exception& e) {
      st = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
    }
    finish(reactor, rpc, model, std::move(st), start);
    return reactor;
  }

  void finish(grpc::ServerUnaryReactor* reactor, std::string_view rpc, std::string_view model, grpc::Status st,
              GrpcClock::time_point start) {
    if (access_log_) grpc_access_log(rpc, model, st, start);
    reactor->Finish(std::move(st));
  }

  Core& core_;
  const bool access_log_;
};

// ---- grpc.health.v1.Health ----

class GrpcHealthService;

// Health/Watch: writes the status at once and again on each change, until the client cancels or the server stops.
// Like the stream reactor, it calls Start*/Finish without its lock; `holds_` counts the front's references
// (notifications in progress), so OnDone deletes it only when none is left.
class GrpcHealthWatch final : public grpc::ServerWriteReactor<HealthCheckResponse> {
 public:
  GrpcHealthWatch(GrpcHealthService& owner, bool access_log) : owner_(owner), access_log_(access_log) {}

  // Starts the first write; separate from the constructor so that the watcher is registered first.
  void begin() {
    std::unique_lock lk(mu_);
    pump(lk);
  }

  void update(HealthCheckResponse::ServingStatus s) {
    std::unique_lock lk(mu_);
    if (want_ == HealthCheckResponse::SERVICE_UNKNOWN) return;  // an unknown service stays unknown
    want_ = s;
    pump(lk);
  }

  void close() {
    std::unique_lock lk(mu_);
    closing_ = true;
    pump(lk);
  }

  void hold() {
    std::lock_guard lk(mu_);
    ++holds_;
  }
  void release() {
    std::unique_lock lk(mu_);
    --holds_;
    const bool last = done_ && holds_ == 0;
    lk.unlock();
    if (last) delete this;
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lk(mu_);
    writing_ = false;
    if (!ok) cancelled_ = true;
    pump(lk);
  }
  void OnCancel() override {
    std::unique_lock lk(mu_);
    cancelled_ = true;
    pump(lk);
  }
  void OnDone() override;

 private:
  // With mu_ held (released on return): writes the wanted status if it was not sent, else finishes when asked to.
  void pump(std::unique_lock<std::mutex>& lk) {
    if (writing_ || finished_) return;
    if (!cancelled_ && (!sent_ || *sent_ != want_)) {
      writing_ = true;
      sent_ = want_;
      response_.set_status(want_);
      lk.unlock();
      StartWrite(&response_);
      return;
    }
    if (cancelled_ || closing_) {
      finished_ = true;
      final_ = cancelled_ ? grpc::Status::CANCELLED
                          : grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
      grpc::Status st = final_;
      lk.unlock();
      Finish(std::move(st));
    }
  }

  GrpcHealthService& owner_;
  std::mutex mu_;
  HealthCheckResponse response_;  // the message being written (changed only while no write is outstanding)
  HealthCheckResponse::ServingStatus want_ = HealthCheckResponse::UNKNOWN;  // set by the service at once
  std::optional<HealthCheckResponse::ServingStatus> sent_;
  const bool access_log_;
  const GrpcClock::time_point start_ = GrpcClock::now();
  grpc::Status final_;  // what Finish sent, for the access log
  int holds_ = 0;
  bool writing_ = false, finished_ = false, closing_ = false, cancelled_ = false, done_ = false;
  friend class GrpcHealthService;
};

// Check from the generated service; Watch, which the vendored health.proto does not declare, added here as the
// standard server-streaming method /grpc.health.v1.Health/Watch (clients such as grpc-health-probe --watch and
// Kubernetes' gRPC probes know it by that name).
class GrpcHealthService final : public grpc::health::v1::Health::CallbackService {
 public:
  GrpcHealthService(Core& core, bool access_log) : core_(core), access_log_(access_log) {
    // Index 1: after Check (0), registered by the generated base.
    AddMethod(new grpc::internal::RpcServiceMethod("/grpc.health.v1.Health/Watch",
                                                   grpc::internal::RpcMethod::SERVER_STREAMING, nullptr));
    MarkMethodCallback(1, new grpc::internal::CallbackServerStreamingHandler<HealthCheckRequest, HealthCheckResponse>(
                              [this](grpc::CallbackServerContext*, const HealthCheckRequest* req) {
                                return watch(req->service());
                              }));
  }

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* ctx, const HealthCheckRequest* req,
                                  HealthCheckResponse* resp) override {
    const auto start = GrpcClock::now();
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const auto s = status_of(req->service());
    grpc::Status st;
    if (s == HealthCheckResponse::SERVICE_UNKNOWN)
      st = grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service '" + req->service() + "'");
    else
      resp->set_status(s);
    if (access_log_) grpc_access_log("Health/Check", "", st, start);
    reactor->Finish(std::move(st));
    return reactor;
  }

  void set_not_serving() {
    not_serving_ = true;
    for_each_watcher([](GrpcHealthWatch* w) { w->update(HealthCheckResponse::NOT_SERVING); });
  }

  // Ends every Watch (after it sent NOT_SERVING), so that the server's shutdown need not wait for them.
  void close_watchers() {
    for_each_watcher([](GrpcHealthWatch* w) { w->close(); });
  }

  void forget(GrpcHealthWatch* w) {
    std::lock_guard lk(mu_);
    watchers_.erase(w);
  }

 private:
  HealthCheckResponse::ServingStatus status_of(const std::string& service) const {
    if (!service.empty() && service != "inference.GRPCInferenceService") return HealthCheckResponse::SERVICE_UNKNOWN;
    return core_.ready() && !not_serving_ ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  }

  grpc::ServerWriteReactor<HealthCheckResponse>* watch(const std::string& service) {
    auto* w = new GrpcHealthWatch(*this, access_log_);
    {
      // The status is read after the watcher joined the set: a set_not_serving() either finds it there or has
      // already set the flag read here, so no change is missed.
      std::lock_guard lk(mu_);
      watchers_.insert(w);
      w->want_ = status_of(service);
    }
    w->begin();
    return w;
  }

  // Calls `fn` on every watcher without holding the set's lock (fn may start writes or finish calls); a hold keeps
  // each one from being deleted meanwhile.
  template <class Fn>
  void for_each_watcher(Fn fn) {
    std::vector<GrpcHealthWatch*> list;
    {
      std::lock_guard lk(mu_);
      list.assign(watchers_.begin(), watchers_.end());
      for (auto* w : list) w->hold();
    }
    for (auto* w : list) {
      fn(w);
      w->release();
    }
  }

  Core& core_;
  const bool access_log_;
  std::atomic<bool> not_serving_{false};
  std::mutex mu_;
  std::set<GrpcHealthWatch*> watchers_;
};

void GrpcHealthWatch::OnDone() {
  owner_.forget(this);  // no new holds after this
  std::unique_lock lk(mu_);
  if (access_log_) grpc_access_log("Health/Watch", "", final_, start_);
  done_ = true;
  const bool last = holds_ == 0;
  lk.unlock();
  if (last) delete this;
}

// host:port for gRPC's resolver (an IPv6 literal in brackets).
std::string grpc_listen_address(const std::string& address, int port) {
  const bool v6 = address.find(':') != std::string::npos && address.front() != '[';
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

}  // namespace

struct GrpcFront::Impl {
  Impl(Core& c, GrpcOptions o)
      : core(c), options(std::move(o)), inference(c, options.access_log), health(c, options.access_log) {}
  Core& core;
  GrpcOptions options;
  GrpcInferenceService inference;
  GrpcHealthService health;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

GrpcFront::GrpcFront(Core& core, GrpcOptions options) : impl_(std::make_unique<Impl>(core, std::move(options))) {}

GrpcFront::~GrpcFront() { stop(); }

void GrpcFront::start() {
  Impl& s = *impl_;
  if (s.server) return;
  const std::string address = grpc_listen_address(s.options.address, s.options.port);
  grpc::ServerBuilder builder;
  int selected = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &selected);
  const int max_message = static_cast<int>(std::min<uint64_t>(s.options.max_message, INT_MAX));
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  // gRPC sets SO_REUSEPORT by default, which lets a second server bind a port in use without an error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&s.inference);
  builder.RegisterService(&s.health);
  s.server = builder.BuildAndStart();
  if (!s.server || selected == 0) {
    if (s.server) {
      s.server->Shutdown();
      s.server->Wait();
      s.server.reset();
    }
    throw ServeError(Code::Unavailable,
                     "gRPC: cannot listen on " + address + " (in use, or not an address of this host)");
  }
  s.port = selected;
}

void GrpcFront::set_not_serving() { impl_->health.set_not_serving(); }

void GrpcFront::stop() {
  Impl& s = *impl_;
  if (!s.server) return;
  s.health.set_not_serving();
  s.health.close_watchers();
  // Calls in flight get a few seconds to finish; then gRPC cancels them.
  s.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  s.server->Wait();
  s.server.reset();
}

int GrpcFront::port() const { return impl_->port; }

}  // namespace onyx::serve
