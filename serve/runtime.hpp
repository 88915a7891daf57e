// One loaded model version: its session, its completed configuration, the scheduler that runs its requests
// (one at a time per instance, or dynamically batched) and its statistics.
#pragma once
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "core.hpp"
#include "onyx/session.hpp"

namespace onyx::serve {

// What a model folder holds, before loading: where its versions' files are and its config.pbtxt, if any.
struct ModelSource {
  std::string name;
  std::filesystem::path dir;                        // the model's folder ("" for a bare model file)
  std::map<int64_t, std::filesystem::path> files;   // version -> model file
  std::optional<std::string> config_text;           // config.pbtxt's contents
  std::string fingerprint;                          // changes when any of the above changes (poll mode)
};

// Reads REPO/<name>/ (Triton's layout) or a bare .onnx file. Throws ServeError for an unreadable folder.
ModelSource read_model_source(const std::filesystem::path& path, bool bare_file);

// Parses config.pbtxt text (protobuf text format against Triton's model_config.proto; unknown fields are errors)
// or, with `json`, a ModelConfig in JSON (the repository load API's "config" parameter).
inference::ModelConfig parse_model_config(const std::string& text, bool json, const std::string& what);

// The versions the config's version_policy serves among those present (newest first).
std::vector<int64_t> versions_to_serve(const inference::ModelConfig& config, const ModelSource& source);

class VersionRuntime {
 public:
  // Loads the session, completes and checks the config against the model, starts the instances and runs the
  // warm-up. Throws ServeError (InvalidArgument) with the reason on any failure.
  VersionRuntime(const ModelSource& source, int64_t version, inference::ModelConfig config, int default_threads);
  // Refuses new requests, finishes the queued ones, joins the instances.
  ~VersionRuntime();
  VersionRuntime(const VersionRuntime&) = delete;
  VersionRuntime& operator=(const VersionRuntime&) = delete;

  const std::string& name() const { return name_; }
  int64_t version() const { return version_; }
  const inference::ModelConfig& config() const { return config_; }
  ModelMeta metadata() const;
  ModelStats stats() const;
  uint64_t pending() const { return pending_.load(); }

  // Checks the request against the model and queues it; refusals go through `done` at once.
  void submit(InferRequest request, InferDone done);

 private:
  struct Pending {
    InferRequest request;
    InferDone done;
    int64_t batch = 1;       // dim 0 of the inputs with batching, else 1
    std::string signature;   // inputs' dtypes and non-batch dims, and the outputs asked: requests batch together
                             // only when theirs are equal
    std::chrono::steady_clock::time_point enqueued;
    std::chrono::steady_clock::time_point deadline;  // max() when none
  };

  void check_request(const InferRequest& request, int64_t* batch, std::string* signature) const;
  void instance_loop();
  std::vector<Pending> next_batch(std::unique_lock<std::mutex>& lock);
  void execute(std::vector<Pending>& batch);
  void finish(Pending& p, Status status, InferResponse response, bool count_inference);
  void warm_up();

  std::string name_;
  int64_t version_;
  std::string version_str_;
  std::filesystem::path model_dir_;  // where warmup/ files are
  inference::ModelConfig config_;
  std::unique_ptr<Session> session_;
  bool batching_ = false;  // dynamic batching on
  int64_t max_batch_ = 0;  // config max_batch_size
  int64_t preferred_max_ = 0;
  std::chrono::microseconds queue_delay_{0};
  uint64_t max_queue_ = 0;             // 0: unbounded
  uint64_t default_timeout_us_ = 0;
  std::map<std::string, const IoInfo*> input_info_;
  std::set<std::string> optional_inputs_;  // inputs with an initializer

  mutable std::mutex mutex_;
  std::condition_variable queue_cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  int free_slots_ = 0;  // instances not running a request now (runs on a caller's thread take one too)
  // Runs shorter than this on average may run on the caller's thread (submit()); unknown until the first run.
  static constexpr uint64_t kInlineRunNs = 500'000, kUnknownRunNs = ~uint64_t(0);
  std::atomic<uint64_t> mean_run_ns_{kUnknownRunNs};
  std::vector<std::thread> instances_;
  std::atomic<uint64_t> pending_{0};

  mutable std::mutex stats_mutex_;
  ModelStats stats_;
  std::map<uint64_t, BatchStat> batch_stats_;
};

}  // namespace onyx::serve
