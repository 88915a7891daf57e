// The transport-neutral core of `onyx serve`: the model repository (Triton's layout and config.pbtxt), the loaded
// model versions with their schedulers (direct or dynamic batching), their statistics, and the server's state
// (live, ready, shutting down). The HTTP (http_front.cpp) and gRPC (grpc_front.cpp) fronts translate the KServe v2
// protocol to these calls and back; neither knows how a model runs.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.hpp"
#include "ir/tensor.hpp"
#include "model_config.pb.h"

namespace onyx::serve {

// What went wrong, as both protocols report it. Each code has one HTTP status and one gRPC status.
enum class Code {
  Ok,
  InvalidArgument,   // HTTP 400, gRPC INVALID_ARGUMENT: malformed request, wrong dtype/shape/size, ...
  NotFound,          // HTTP 404, gRPC NOT_FOUND: unknown model or version
  Unavailable,       // HTTP 503, gRPC UNAVAILABLE: model not ready, queue full, request timed out in the queue,
                     // server shutting down
  TooLarge,          // HTTP 413, gRPC RESOURCE_EXHAUSTED: body over the size limit
  Internal,          // HTTP 500, gRPC INTERNAL: the model failed to run
};
int http_status(Code c);
int grpc_status_code(Code c);  // the numeric grpc::StatusCode

struct Status {
  Code code = Code::Ok;
  std::string message;
  bool ok() const { return code == Code::Ok; }
  static Status error(Code c, std::string m) { return {c, std::move(m)}; }
};

// Thrown by the core's calls (not by infer(), which reports through its callback).
class ServeError : public std::exception {
 public:
  ServeError(Code code, std::string message) : status_{code, std::move(message)} {}
  const char* what() const noexcept override { return status_.message.c_str(); }
  Code code() const { return status_.code; }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// ---- Datatypes: KServe v2 names ("FP32", "BYTES", ...) and Triton config names ("TYPE_FP32") ----
// nullopt for a name the protocol does not have. BYTES is DataType::String.
std::optional<DataType> dtype_from_v2(std::string_view name);
// "" for an element type the protocol cannot carry (complex, float8, 4-bit, ...).
std::string_view dtype_to_v2(DataType t);
std::optional<DataType> dtype_from_config(inference::DataType t);
inference::DataType dtype_to_config(DataType t);  // TYPE_INVALID where there is none
// Bytes of one element in the protocols' raw form (0 for BYTES, which is length-prefixed per element).
size_t v2_element_size(DataType t);

// BYTES tensors travel as raw data in the binary extension and gRPC's raw_*_contents: each element a 4-byte
// little-endian length followed by its bytes. Errors name `what` (the tensor) on a truncated or overlong buffer.
std::vector<std::string> decode_bytes_elements(std::string_view raw, uint64_t count, const std::string& what);
std::string encode_bytes_elements(const std::vector<std::string>& values);

// For JSON answers and the access logs of both fronts: `s` as a quoted JSON string (arbitrary bytes give valid
// JSON), and the time now as "2026-12-05T12:00:00.123Z".
void append_json_string(std::string& out, std::string_view s);
std::string access_log_time();

// One named tensor of a request or a response. `data`'s dtype and dims are the tensor's; an input's data may view
// the request's own buffer (Tensor::view with the buffer kept alive), so nothing copies it on the way in.
struct InferTensor {
  std::string name;
  Tensor data;
};

struct RequestedOutput {
  std::string name;
  bool binary = false;  // HTTP binary-tensor extension: send this output as binary data
  int64_t classification = 0;  // Triton's classification extension: not supported; non-zero is an error
};

struct InferRequest {
  std::string model;
  std::string version;  // "" = the version the policy serves (the newest ready one)
  std::string id;
  std::vector<InferTensor> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output of the model
  uint64_t timeout_us = 0;               // parameter "timeout": a request queued longer fails (0: none)
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();
};

struct InferResponse {
  std::string model;
  std::string version;
  std::string id;
  std::vector<InferTensor> outputs;          // in the order requested (model order when none were named)
  std::vector<RequestedOutput> requested;    // the request's output list, so a front can see binary flags
};

// Called once per request, from a worker thread of the model (or at once, from the caller's thread, when the
// request is refused before queueing). The callee must not block for long.
using InferDone = std::function<void(Status status, InferResponse response)>;

// ---- Metadata, as the protocol's model metadata and Triton's extensions report it ----
struct TensorMeta {
  std::string name;
  std::string datatype;        // v2 name
  std::vector<int64_t> shape;  // -1 for a dynamic dim; with max_batch_size > 0 the batch dim comes first as -1
};

struct ModelMeta {
  std::string name;
  std::vector<std::string> versions;  // the ready versions
  std::string platform;               // "onnxruntime_onnx"
  std::vector<TensorMeta> inputs, outputs;
};

struct ServerMeta {
  std::string name = "onyx";
  std::string version;
  std::vector<std::string> extensions;
};

// Cumulative counts and nanoseconds, as Triton's statistics extension reports them.
struct Duration {
  uint64_t count = 0;
  uint64_t ns = 0;
};
struct BatchStat {
  uint64_t batch_size = 0;
  Duration compute_input, compute_infer, compute_output;
};
struct ModelStats {
  std::string name, version;
  uint64_t last_inference_ms = 0;  // ms since the epoch of the last request's end
  uint64_t inference_count = 0;    // requests' batch items (a batch of 4 counts 4, or 1 without batching)
  uint64_t execution_count = 0;    // model runs (a dynamic batch of 3 requests is one run)
  Duration success, fail, queue, compute_input, compute_infer, compute_output;
  std::vector<BatchStat> batch_stats;
  uint64_t pending = 0;  // requests queued or running now
};

struct RepoEntry {
  std::string name;
  std::string version;  // "" for a model not loaded
  std::string state;    // "READY", "UNAVAILABLE", "LOADING", "UNLOADING"
  std::string reason;
};

enum class ControlMode { None, Explicit, Poll };

struct CoreOptions {
  std::vector<std::filesystem::path> repositories;  // Triton layout; or a file: one model.onnx served by its stem
  ControlMode control = ControlMode::None;
  std::set<std::string> startup_models;  // --load-model (explicit mode); "*" loads everything
  int poll_seconds = 15;                 // --repository-poll-secs
  int threads = 0;                       // default intra-op threads per instance (0: cores / instances)
  bool strict_readiness = true;          // ready only while every model loaded at startup is (Triton's default)
  std::string server_version;
};

class Core {
 public:
  explicit Core(CoreOptions options);
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // Loads the models the control mode says to (each failure logged and the model left UNAVAILABLE) and, in poll
  // mode, starts the poller.
  void start();

  bool live() const;
  // True after start() while no shutdown began and every model loaded at startup is ready (after its warm-up).
  bool ready() const;
  ServerMeta server_metadata() const;

  // Throws ServeError NotFound for an unknown model or version, Unavailable for one not ready.
  ModelMeta model_metadata(const std::string& model, const std::string& version) const;
  bool model_ready(const std::string& model, const std::string& version) const;
  // The model's configuration as Triton reports it (given config.pbtxt completed from the model).
  inference::ModelConfig model_config(const std::string& model, const std::string& version) const;
  // model "" = every loaded model; version "" = every version.
  std::vector<ModelStats> statistics(const std::string& model, const std::string& version) const;

  // Queues a request (or refuses it at once through `done`). Never throws.
  void infer(InferRequest request, InferDone done);

  std::vector<RepoEntry> repository_index(bool ready_only) const;
  // Explicit mode only (others: Unavailable-like InvalidArgument as Triton words it). `config_json`, when given, is
  // a ModelConfig in JSON that replaces config.pbtxt for this load. Load of a loaded model reloads it; requests in
  // flight on the old version finish on it.
  void load_model(const std::string& model, const std::string& config_json = "");
  void unload_model(const std::string& model);

  // Shutdown: ready() turns false at once and new requests are refused (Unavailable); then wait_idle() waits up to
  // `timeout` for in-flight ones; true when none is left.
  void begin_shutdown();
  bool shutting_down() const;
  bool wait_idle(std::chrono::milliseconds timeout);
  uint64_t in_flight() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx::serve
