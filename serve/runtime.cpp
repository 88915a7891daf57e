// A loaded model version (runtime.hpp): config.pbtxt read and completed from the model as Triton completes it,
// the instances that run queued requests, dynamic batching (concatenate on dim 0, run once, split the outputs
// back), and the statistics Triton's extension and metrics report.
#include "runtime.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "base/error.hpp"
#include "exec/threads.hpp"
#include "ir/model.hpp"

namespace onyx::serve {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxConfigBytes = 1 << 20;  // config.pbtxt is a few lines; a larger one is not a config

[[noreturn]] void runtime_refuse(const std::string& message) { throw ServeError(Code::InvalidArgument, message); }

std::string read_small_file(const fs::path& p, const std::string& what) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) runtime_refuse(what + ": cannot read " + p.string() + ": " + ec.message());
  if (size > kMaxConfigBytes)
    runtime_refuse(what + ": " + p.string() + " has " + std::to_string(size) + " bytes (at most " +
                   std::to_string(kMaxConfigBytes) + ")");
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) runtime_refuse(what + ": cannot read " + p.string());
  return ss.str();
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct ConfigErrors : google::protobuf::io::ErrorCollector {
  std::string messages;
  void AddError(int line, int column, const std::string& message) override {
    if (!messages.empty()) messages += "; ";
    messages += "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
};

int64_t elements_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

template <class Dims>
std::vector<int64_t> to_vector(const Dims& dims) {
  return std::vector<int64_t>(dims.begin(), dims.end());
}

// The model's declared dims as config dims: -1 for symbolic or unknown ones.
std::vector<int64_t> config_dims(const Shape& shape, size_t skip) {
  std::vector<int64_t> out;
  for (size_t i = skip; i < shape.dims.size(); ++i) out.push_back(shape.dims[i].value.value_or(-1));
  return out;
}

int64_t parse_int_parameter(const inference::ModelConfig& config, const std::string& key, int64_t lo, int64_t hi) {
  const auto& v = config.parameters().at(key).string_value();
  try {
    size_t used = 0;
    const long long n = std::stoll(v, &used);
    if (used == v.size() && n >= lo && n <= hi) return n;
  } catch (const std::exception&) {
  }
  runtime_refuse("parameter '" + key + "' is '" + v + "'; it takes an integer from " + std::to_string(lo) + " to " +
                 std::to_string(hi));
}

Tensor concat_rows(const std::vector<const Tensor*>& parts, int64_t rows) {
  const Tensor& first = *parts.front();
  std::vector<int64_t> dims = first.dims();
  dims[0] = rows;
  if (first.dtype() == DataType::String) {
    std::vector<std::string> values;
    for (const Tensor* t : parts) values.insert(values.end(), t->string_values().begin(), t->string_values().end());
    return Tensor::strings(first.name(), std::move(dims), std::move(values));
  }
  Tensor out = Tensor::allocate(first.dtype(), std::move(dims));
  char* dst = out.mutable_data<char>();
  for (const Tensor* t : parts) {
    std::memcpy(dst, t->bytes().data(), t->bytes().size());
    dst += t->bytes().size();
  }
  return out;
}

// Rows [begin, begin + count) of `whole`, sharing its buffer.
Tensor slice_rows(const std::shared_ptr<const Tensor>& whole, int64_t begin, int64_t count) {
  std::vector<int64_t> dims = whole->dims();
  const int64_t rows = dims[0];
  dims[0] = count;
  if (whole->dtype() == DataType::String) {
    const auto& v = whole->string_values();
    const int64_t per_row = rows ? static_cast<int64_t>(v.size()) / rows : 0;
    return Tensor::strings(whole->name(), std::move(dims),
                           std::vector<std::string>(v.begin() + begin * per_row, v.begin() + (begin + count) * per_row));
  }
  const size_t row_bytes = rows ? whole->bytes().size() / static_cast<size_t>(rows) : 0;
  return Tensor::view(whole->name(), whole->dtype(), std::move(dims),
                      whole->bytes().substr(static_cast<size_t>(begin) * row_bytes, static_cast<size_t>(count) * row_bytes),
                      whole, /*mapped=*/false);
}

uint64_t ns_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return b > a ? static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count()) : 0;
}

void add_duration(Duration& d, uint64_t ns) {
  d.count += 1;
  d.ns += ns;
}

}  // namespace

ModelSource read_model_source(const fs::path& path, bool bare_file) {
  ModelSource src;
  std::error_code ec;
  if (bare_file) {
    src.name = path.stem().string();
    src.files[1] = path;
    const auto t = fs::last_write_time(path, ec);
    src.fingerprint = std::to_string(fs::file_size(path, ec)) + "@" + std::to_string(t.time_since_epoch().count());
    return src;
  }
  src.name = path.filename().string();
  src.dir = path;
  std::ostringstream fp;
  if (fs::exists(path / "config.pbtxt", ec)) {
    src.config_text = read_small_file(path / "config.pbtxt", "model '" + src.name + "'");
    fp << *src.config_text;
  }
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::string v = entry.path().filename().string();
    if (!entry.is_directory() || !all_digits(v)) continue;
    const int64_t version = std::stoll(v);
    if (version <= 0) continue;
    src.files[version] = entry.path();
    for (const auto& f : fs::directory_iterator(entry.path(), ec)) {
      std::error_code e2;
      fp << '|' << f.path().filename().string() << ':' << (f.is_regular_file(e2) ? f.file_size(e2) : 0) << '@'
         << f.last_write_time(e2).time_since_epoch().count();
    }
  }
  if (ec) runtime_refuse("model '" + src.name + "': cannot list " + path.string() + ": " + ec.message());
  src.fingerprint = fp.str();
  return src;
}

inference::ModelConfig parse_model_config(const std::string& text, bool json, const std::string& what) {
  inference::ModelConfig config;
  if (json) {
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = false;
    const auto status = google::protobuf::util::JsonStringToMessage(text, &config, opts);
    if (!status.ok()) runtime_refuse(what + ": the config JSON is invalid: " + std::string(status.message()));
    return config;
  }
  google::protobuf::TextFormat::Parser parser;
  ConfigErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config))
    runtime_refuse(what + ": config.pbtxt is invalid: " + (errors.messages.empty() ? "parse error" : errors.messages));
  return config;
}

std::vector<int64_t> versions_to_serve(const inference::ModelConfig& config, const ModelSource& source) {
  std::vector<int64_t> present;
  for (const auto& [v, dir] : source.files) present.push_back(v);
  std::sort(present.rbegin(), present.rend());
  const auto& policy = config.version_policy();
  if (policy.has_all()) return present;
  if (policy.has_specific()) {
    std::vector<int64_t> out;
    for (int64_t v : policy.specific().versions()) {
      if (!source.files.count(v))
        runtime_refuse("model '" + source.name + "': version_policy names version " + std::to_string(v) +
                       ", which has no folder");
      out.push_back(v);
    }
    std::sort(out.rbegin(), out.rend());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  size_t n = policy.has_latest() ? policy.latest().num_versions() : 1;
  if (n == 0) n = 1;
  if (present.size() > n) present.resize(n);
  return present;
}

VersionRuntime::VersionRuntime(const ModelSource& source, int64_t version, inference::ModelConfig config,
                               int default_threads)
    : name_(source.name),
      version_(version),
      version_str_(std::to_string(version)),
      model_dir_(source.dir),
      config_(std::move(config)) {
  const std::string what = "model '" + name_ + "' version " + version_str_;
  const bool had_config = source.config_text.has_value() || config_.input_size() || config_.output_size() ||
                          config_.max_batch_size() || config_.has_dynamic_batching();
  if (!config_.name().empty() && config_.name() != name_)
    runtime_refuse(what + ": config.pbtxt names the model '" + config_.name() + "' but its folder is '" + name_ + "'");
  config_.set_name(name_);
  if (!config_.platform().empty() && config_.platform() != "onnxruntime_onnx")
    runtime_refuse(what + ": platform '" + config_.platform() + "' is not served by onyx (only onnxruntime_onnx)");
  if (!config_.backend().empty() && config_.backend() != "onnxruntime" && config_.backend() != "onyx")
    runtime_refuse(what + ": backend '" + config_.backend() + "' is not served by onyx (onnxruntime or onyx)");
  // Settings of Triton's other schedulers and backends: refused rather than ignored, so no one believes they hold.
  if (config_.has_sequence_batching()) runtime_refuse(what + ": sequence_batching is not supported by onyx serve");
  if (config_.has_ensemble_scheduling())
    runtime_refuse(what + ": ensemble_scheduling is not supported by onyx serve");
  if (config_.batch_input_size() || config_.batch_output_size())
    runtime_refuse(what + ": batch_input/batch_output are not supported by onyx serve");
  if (config_.model_transaction_policy().decoupled())
    runtime_refuse(what + ": decoupled models are not supported by onyx serve");
  if (config_.max_batch_size() < 0) runtime_refuse(what + ": max_batch_size is negative");
  config_.set_platform("onnxruntime_onnx");
  if (config_.backend().empty()) config_.set_backend("onnxruntime");

  // Session options from `parameters`.
  SessionOptions opts;
  for (const auto& [key, value] : config_.parameters()) {
    if (key == "threads" || key == "intra_op_thread_count")
      opts.threads = static_cast<int>(parse_int_parameter(config_, key, 0, 1024));
    else if (key == "optimization_level")
      opts.optimization_level = static_cast<int>(parse_int_parameter(config_, key, 0, 3));
    else if (key == "memory_limit_mb")
      opts.memory_limit_mb = static_cast<uint64_t>(parse_int_parameter(config_, key, 0, int64_t(1) << 40));
    else
      runtime_refuse(what + ": unknown parameter '" + key +
                     "' (onyx serve knows threads, intra_op_thread_count, optimization_level, memory_limit_mb)");
  }
  // Instances: one thread each, all running the one session (a session runs from several threads at once).
  int instances = 0;
  for (const auto& group : config_.instance_group()) {
    if (group.kind() != inference::ModelInstanceGroup::KIND_CPU && group.kind() != inference::ModelInstanceGroup::KIND_AUTO)
      runtime_refuse(what + ": instance_group kind " + inference::ModelInstanceGroup::Kind_Name(group.kind()) +
                     " is not served (onyx serve runs on the CPU: KIND_CPU)");
    if (group.count() < 0 || group.count() > 256) runtime_refuse(what + ": instance_group count must be 0..256");
    instances += group.count() ? group.count() : 1;
  }
  if (instances == 0) {
    instances = 1;
    auto* g = config_.add_instance_group();
    g->set_name(name_);
    g->set_count(1);
    g->set_kind(inference::ModelInstanceGroup::KIND_CPU);
  }
  // Instances x threads stay within the cores unless the config says otherwise (runs also lease cores, so
  // concurrent models never start more threads than cores: exec/threads.hpp).
  if (!config_.parameters().count("threads") && !config_.parameters().count("intra_op_thread_count"))
    opts.threads = default_threads > 0 ? default_threads : std::max(1, threads::physical_cores() / instances);

  auto it = source.files.find(version);
  if (it == source.files.end()) runtime_refuse(what + ": no such version folder");
  fs::path file = it->second;
  if (!source.dir.empty()) {
    const std::string filename = config_.default_model_filename().empty() ? "model.onnx" : config_.default_model_filename();
    if (filename.find('/') != std::string::npos || filename == "..")
      runtime_refuse(what + ": default_model_filename must be a file name");
    file /= filename;
    config_.set_default_model_filename(filename);
  }
  try {
    session_ = std::make_unique<Session>(Session::from_file(file, opts));
  } catch (const std::exception& e) {
    runtime_refuse(what + ": " + e.what());
  }

  // Inputs and outputs: the protocol carries tensors of its datatypes only.
  const Graph& graph = *session_->model().graph;
  for (const auto& io : session_->inputs()) {
    if (io.type.kind != Type::Kind::Tensor || dtype_to_v2(io.type.elem).empty())
      runtime_refuse(what + ": input '" + io.name + "' has type " + io.type.to_string() +
                     ", which the KServe v2 protocol cannot carry");
    input_info_[io.name] = &io;
    if (const Value* v = graph.find(io.name); v && v->initializer) optional_inputs_.insert(io.name);
  }
  std::map<std::string, const IoInfo*> outputs;
  for (const auto& io : session_->outputs()) {
    if (io.type.kind != Type::Kind::Tensor || dtype_to_v2(io.type.elem).empty())
      runtime_refuse(what + ": output '" + io.name + "' has type " + io.type.to_string() +
                     ", which the KServe v2 protocol cannot carry");
    outputs[io.name] = &io;
  }
  auto batchable = [](const IoInfo& io) {
    return io.type.shape.rank_known && !io.type.shape.dims.empty() && !io.type.shape.dims[0].is_static();
  };
  if (!had_config) {
    // Triton's completion: a model whose every input and output has a free first dim batches (default 4).
    bool all = true;
    for (const auto& io : session_->inputs()) all = all && batchable(io);
    for (const auto& io : session_->outputs()) all = all && batchable(io);
    if (all) {
      config_.set_max_batch_size(4);
      config_.mutable_dynamic_batching();
    }
  }
  max_batch_ = config_.max_batch_size();
  const size_t skip = max_batch_ > 0 ? 1 : 0;
  if (max_batch_ > 0) {
    for (const auto& io : session_->inputs())
      if (!batchable(io))
        runtime_refuse(what + ": max_batch_size is " + std::to_string(max_batch_) + " but input '" + io.name +
                       "' has shape " + io.type.shape.to_string() + " (the batch dim must be its first, and free)");
    for (const auto& io : session_->outputs())
      if (!batchable(io))
        runtime_refuse(what + ": max_batch_size is " + std::to_string(max_batch_) + " but output '" + io.name +
                       "' has shape " + io.type.shape.to_string() + " (the batch dim must be its first, and free)");
  }
  // Check the config's inputs and outputs against the model; fill them in where the config has none.
  auto check_io = [&](const auto& entries, const std::map<std::string, const IoInfo*>& model_io, const char* kind) {
    std::set<std::string> seen;
    for (const auto& e : entries) {
      auto m = model_io.find(e.name());
      if (m == model_io.end())
        runtime_refuse(what + ": config " + kind + " '" + e.name() + "' is not an " + kind + " of the model");
      if (!seen.insert(e.name()).second) runtime_refuse(what + ": config lists " + kind + " '" + e.name() + "' twice");
      if (e.has_reshape()) runtime_refuse(what + ": " + kind + " '" + e.name() + "': reshape is not supported");
      if (e.is_shape_tensor())
        runtime_refuse(what + ": " + kind + " '" + e.name() + "': is_shape_tensor is not supported");
      const Type& t = m->second->type;
      const auto dt = dtype_from_config(e.data_type());
      if (!dt || *dt != t.elem)
        runtime_refuse(what + ": config " + kind + " '" + e.name() + "' has data_type " +
                       inference::DataType_Name(e.data_type()) + " but the model's is " +
                       std::string(inference::DataType_Name(dtype_to_config(t.elem))));
      if (t.shape.rank_known) {
        const auto model_dims = config_dims(t.shape, skip);
        if (static_cast<size_t>(e.dims_size()) != model_dims.size())
          runtime_refuse(what + ": config " + kind + " '" + e.name() + "' has dims " + dims_string(to_vector(e.dims())) +
                         " but the model's shape is " + t.shape.to_string() +
                         (skip ? " (dims leave out the batch dim)" : ""));
        for (size_t i = 0; i < model_dims.size(); ++i)
          if (e.dims(int(i)) != -1 && model_dims[i] != -1 && e.dims(int(i)) != model_dims[i])
            runtime_refuse(what + ": config " + kind + " '" + e.name() + "' has dims " +
                           dims_string(to_vector(e.dims())) + " but the model's shape is " + t.shape.to_string());
      }
    }
    return seen;
  };
  const auto listed_inputs = check_io(config_.input(), input_info_, "input");
  if (config_.input_size() == 0) {
    for (const auto& io : session_->inputs()) {
      auto* in = config_.add_input();
      in->set_name(io.name);
      in->set_data_type(dtype_to_config(io.type.elem));
      for (auto d : io.type.shape.rank_known ? config_dims(io.type.shape, skip) : std::vector<int64_t>{-1})
        in->add_dims(d);
    }
  } else {
    for (const auto& io : session_->inputs())
      if (!listed_inputs.count(io.name) && !optional_inputs_.count(io.name))
        runtime_refuse(what + ": the model's input '" + io.name + "' is missing from the config's inputs");
  }
  check_io(config_.output(), outputs, "output");
  if (config_.output_size() == 0) {
    for (const auto& io : session_->outputs()) {
      auto* out = config_.add_output();
      out->set_name(io.name);
      out->set_data_type(dtype_to_config(io.type.elem));
      for (auto d : io.type.shape.rank_known ? config_dims(io.type.shape, skip) : std::vector<int64_t>{-1})
        out->add_dims(d);
    }
  }

  if (config_.has_dynamic_batching() && max_batch_ > 0) {
    const auto& db = config_.dynamic_batching();
    batching_ = true;
    for (auto p : db.preferred_batch_size()) {
      if (p <= 0 || p > max_batch_)
        runtime_refuse(what + ": preferred_batch_size " + std::to_string(p) + " is outside 1..max_batch_size (" +
                       std::to_string(max_batch_) + ")");
      preferred_max_ = std::max<int64_t>(preferred_max_, p);
    }
    queue_delay_ = std::chrono::microseconds(db.max_queue_delay_microseconds());
    if (db.has_default_queue_policy()) {
      const auto& q = db.default_queue_policy();
      if (q.timeout_action() == inference::ModelQueuePolicy::DELAY)
        runtime_refuse(what + ": queue policy timeout_action DELAY is not supported (REJECT is)");
      max_queue_ = static_cast<uint64_t>(q.max_queue_size());
      default_timeout_us_ = q.default_timeout_microseconds();
    }
    if (db.priority_levels() > 0) runtime_refuse(what + ": dynamic_batching priority levels are not supported");
  }

  stats_.name = name_;
  stats_.version = version_str_;
  warm_up();
  free_slots_ = instances;
  for (int i = 0; i < instances; ++i) instances_.emplace_back([this] { instance_loop(); });
}

VersionRuntime::~VersionRuntime() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  for (auto& t : instances_) t.join();
}

void VersionRuntime::warm_up() {
  const std::string what = "model '" + name_ + "' version " + version_str_;
  std::mt19937 rng(1234);
  for (const auto& w : config_.model_warmup()) {
    const std::string label = what + ": warm-up '" + w.name() + "'";
    if (max_batch_ > 0 && (w.batch_size() < 1 || w.batch_size() > uint64_t(max_batch_)))
      runtime_refuse(label + ": batch_size must be 1.." + std::to_string(max_batch_));
    std::map<std::string, Datum> feeds;
    for (const auto& [name, in] : w.inputs()) {
      const auto dt = dtype_from_config(in.data_type());
      if (!dt) runtime_refuse(label + ": input '" + name + "' has no data_type");
      std::vector<int64_t> dims;
      if (max_batch_ > 0) dims.push_back(w.batch_size());
      for (auto d : in.dims()) {
        if (d < 0 || d > (int64_t(1) << 20)) runtime_refuse(label + ": input '" + name + "' has dim " + std::to_string(d));
        dims.push_back(d);
      }
      if (elements_of(dims) > (int64_t(1) << 28)) runtime_refuse(label + ": input '" + name + "' is too large");
      Tensor t;
      if (*dt == DataType::String) {
        t = Tensor::strings(name, dims, std::vector<std::string>(size_t(elements_of(dims))));
      } else if (in.has_input_data_file()) {
        const std::string& f = in.input_data_file();
        if (f.find('/') != std::string::npos || f == "..") runtime_refuse(label + ": input_data_file must be a file name");
        std::string bytes = read_small_file(model_dir_ / "warmup" / f, label);
        const size_t want = size_t(elements_of(dims)) * v2_element_size(*dt);
        if (bytes.size() != want)
          runtime_refuse(label + ": " + f + " has " + std::to_string(bytes.size()) + " bytes, the input needs " +
                         std::to_string(want));
        t = Tensor::owned(name, *dt, dims, std::move(bytes));
      } else {
        t = Tensor::allocate(*dt, dims);
        if (in.random_data()) {
          // Small random bytes: valid values for every type (bool bytes are 0 or 1).
          auto* p = t.mutable_data<unsigned char>();
          const size_t esize = v2_element_size(*dt);
          for (size_t i = 0; i < t.bytes().size(); ++i)
            p[i] = (*dt == DataType::Bool) ? rng() % 2 : (i % esize == 0 ? rng() % 64 : 0);
          if (*dt == DataType::Float || *dt == DataType::Double || *dt == DataType::Float16 ||
              *dt == DataType::BFloat16)
            std::memset(p, 0, t.bytes().size());  // raw random bytes could be NaN: zeros are a valid float
        }
      }
      feeds[name] = Datum::of(std::move(t));
    }
    for (uint32_t i = 0; i < std::max<uint32_t>(1, w.count()); ++i) {
      try {
        session_->run(feeds);
      } catch (const std::exception& e) {
        runtime_refuse(label + " failed: " + e.what());
      }
    }
  }
}

ModelMeta VersionRuntime::metadata() const {
  ModelMeta m;
  m.name = name_;
  m.versions = {version_str_};
  m.platform = config_.platform();
  auto add = [&](const auto& entries, std::vector<TensorMeta>& out) {
    for (const auto& e : entries) {
      TensorMeta t;
      t.name = e.name();
      t.datatype = std::string(dtype_to_v2(*dtype_from_config(e.data_type())));
      if (max_batch_ > 0) t.shape.push_back(-1);
      for (auto d : e.dims()) t.shape.push_back(d);
      out.push_back(std::move(t));
    }
  };
  add(config_.input(), m.inputs);
  add(config_.output(), m.outputs);
  return m;
}

ModelStats VersionRuntime::stats() const {
  std::lock_guard lock(stats_mutex_);
  ModelStats s = stats_;
  for (const auto& [size, b] : batch_stats_) s.batch_stats.push_back(b);
  s.pending = pending_.load();
  return s;
}

void VersionRuntime::check_request(const InferRequest& request, int64_t* batch, std::string* signature) const {
  const std::string what = "model '" + name_ + "' version " + version_str_;
  std::set<std::string> given;
  std::map<std::string, const InferTensor*> sorted;
  *batch = 1;
  int64_t first_rows = -1;
  for (const auto& in : request.inputs) {
    auto it = input_info_.find(in.name);
    if (it == input_info_.end()) {
      std::string names;
      for (const auto& [n, io] : input_info_) names += (names.empty() ? "'" : ", '") + n + "'";
      throw ServeError(Code::InvalidArgument,
                       what + ": unknown input '" + in.name + "' (the model's inputs are " + names + ")");
    }
    if (!given.insert(in.name).second)
      throw ServeError(Code::InvalidArgument, what + ": input '" + in.name + "' is given twice");
    const Type& t = it->second->type;
    const Tensor& data = in.data;
    if (data.dtype() != t.elem)
      throw ServeError(Code::InvalidArgument, what + ": input '" + in.name + "' has datatype " +
                                                  std::string(dtype_to_v2(data.dtype())) + " but the model expects " +
                                                  std::string(dtype_to_v2(t.elem)));
    const auto& dims = data.dims();
    if (t.shape.rank_known) {
      if (dims.size() != t.shape.dims.size())
        throw ServeError(Code::InvalidArgument, what + ": input '" + in.name + "' has shape " + dims_string(dims) +
                                                    " but the model expects " + t.shape.to_string());
      for (size_t i = 0; i < dims.size(); ++i)
        if (t.shape.dims[i].is_static() && *t.shape.dims[i].value != dims[i])
          throw ServeError(Code::InvalidArgument, what + ": input '" + in.name + "' has shape " + dims_string(dims) +
                                                      " but the model expects " + t.shape.to_string());
    }
    if (max_batch_ > 0) {
      if (dims.empty() || dims[0] < 1 || dims[0] > max_batch_)
        throw ServeError(Code::InvalidArgument,
                         what + ": input '" + in.name + "' has shape " + dims_string(dims) +
                             ": its first dim is the batch size, which must be 1.." + std::to_string(max_batch_));
      if (first_rows >= 0 && dims[0] != first_rows)
        throw ServeError(Code::InvalidArgument, what + ": inputs disagree on the batch size (" +
                                                    std::to_string(first_rows) + " and " + std::to_string(dims[0]) + ")");
      first_rows = dims[0];
      *batch = dims[0];
    }
    sorted[in.name] = &in;
  }
  for (const auto& [n, io] : input_info_)
    if (!given.count(n) && !optional_inputs_.count(n))
      throw ServeError(Code::InvalidArgument, what + ": input '" + n + "' is missing from the request");
  std::set<std::string> asked;
  for (const auto& out : request.outputs) {
    bool known = false;
    for (const auto& io : session_->outputs()) known = known || io.name == out.name;
    if (!known) throw ServeError(Code::InvalidArgument, what + ": unknown output '" + out.name + "'");
    if (!asked.insert(out.name).second)
      throw ServeError(Code::InvalidArgument, what + ": output '" + out.name + "' is requested twice");
    if (out.classification != 0)
      throw ServeError(Code::InvalidArgument, what + ": output '" + out.name +
                                                  "': the classification extension is not supported by onyx serve");
  }
  if (batching_) {
    std::string sig;
    for (const auto& [n, in] : sorted) {
      sig += n + ':' + std::to_string(int(in->data.dtype()));
      for (size_t i = 1; i < in->data.dims().size(); ++i) sig += ',' + std::to_string(in->data.dims()[i]);
      sig += ';';
    }
    sig += '>';
    for (const auto& out : request.outputs) sig += out.name + ';';
    *signature = std::move(sig);
  }
}

void VersionRuntime::submit(InferRequest request, InferDone done) {
  Pending p;
  try {
    check_request(request, &p.batch, &p.signature);
  } catch (const ServeError& e) {
    std::lock_guard lock(stats_mutex_);
    add_duration(stats_.fail, ns_between(request.received, std::chrono::steady_clock::now()));
    done(e.status(), {});
    return;
  }
  p.enqueued = std::chrono::steady_clock::now();
  const uint64_t timeout = request.timeout_us ? request.timeout_us : default_timeout_us_;
  p.deadline = timeout ? p.enqueued + std::chrono::microseconds(timeout) : std::chrono::steady_clock::time_point::max();
  p.request = std::move(request);
  p.done = std::move(done);
  bool run_here = false;
  {
    std::unique_lock lock(mutex_);
    Status refused;
    if (stopping_)
      refused = Status::error(Code::Unavailable, "model '" + name_ + "' version " + version_str_ + " is unloading");
    else if (max_queue_ && queue_.size() >= max_queue_)
      refused = Status::error(Code::Unavailable, "model '" + name_ + "' version " + version_str_ +
                                                     ": the request queue is full (max_queue_size " +
                                                     std::to_string(max_queue_) + ")");
    if (!refused.ok()) {
      lock.unlock();
      {
        std::lock_guard slock(stats_mutex_);
        add_duration(stats_.fail, ns_between(p.request.received, std::chrono::steady_clock::now()));
      }
      p.done(refused, {});
      return;
    }
    pending_.fetch_add(1);
    // A request to a model whose runs are short, that finds an instance free and nobody waiting, runs on the
    // caller's thread: two thread hand-offs (to an instance and back, some 10 µs each) cost more than such a run.
    // It holds an instance's slot meanwhile, so no more runs than instances happen at once either way. Long runs
    // go to the instances, so a front's I/O thread (and the health probes it serves) is never held for long. With
    // batching this is the batch an instance would form at once when the queue delay is 0; a delay makes the
    // request wait for others in the queue.
    if (mean_run_ns_.load(std::memory_order_relaxed) < kInlineRunNs && (!batching_ || queue_delay_.count() == 0) &&
        queue_.empty() && free_slots_ > 0) {
      --free_slots_;
      run_here = true;
    } else {
      queue_.push_back(std::move(p));
    }
  }
  if (!run_here) {
    queue_cv_.notify_one();
    return;
  }
  std::vector<Pending> one;
  one.push_back(std::move(p));
  execute(one);
  {
    std::lock_guard lock(mutex_);
    ++free_slots_;
  }
  queue_cv_.notify_one();  // a request may have queued while this one held the slot
}

void VersionRuntime::instance_loop() {
  for (;;) {
    std::vector<Pending> batch;
    {
      std::unique_lock lock(mutex_);
      queue_cv_.wait(lock, [&] { return (stopping_ && queue_.empty()) || (!queue_.empty() && free_slots_ > 0); });
      if (queue_.empty()) return;  // stopping, and the queue is drained
      batch = next_batch(lock);
      if (batch.empty()) continue;
      --free_slots_;
    }
    execute(batch);
    {
      std::lock_guard lock(mutex_);
      ++free_slots_;
    }
    queue_cv_.notify_one();
  }
}

std::vector<VersionRuntime::Pending> VersionRuntime::next_batch(std::unique_lock<std::mutex>& lock) {
  std::vector<Pending> out;
  if (!batching_) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
    return out;
  }
  const int64_t target = preferred_max_ > 0 ? preferred_max_ : max_batch_;
  // Rows that would join the front request's batch now.
  auto ready_rows = [&] {
    int64_t rows = 0;
    const std::string& sig = queue_.front().signature;
    for (const auto& p : queue_)
      if (p.signature == sig && rows + p.batch <= max_batch_) rows += p.batch;
    return rows;
  };
  // Wait for more requests, up to the queue delay counted from the oldest one's arrival.
  while (!stopping_ && !queue_.empty() && ready_rows() < target) {
    const auto until = queue_.front().enqueued + queue_delay_;
    if (std::chrono::steady_clock::now() >= until) break;
    queue_cv_.wait_until(lock, until);
  }
  if (queue_.empty()) return out;  // another instance took them
  const std::string sig = queue_.front().signature;
  // With other instances idle too, this one takes its share of the rows waiting, not all of them: one instance
  // running a batch of 8 while another has nothing to run uses half the cores (on a CPU a batch's rows cost about
  // what they cost apart; the gain of batching is in the cores a lone request cannot use).
  int64_t cap = max_batch_;
  if (free_slots_ > 1) cap = std::max<int64_t>(1, (ready_rows() + free_slots_ - 1) / free_slots_);
  int64_t rows = 0;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->signature == sig && (rows == 0 || rows + it->batch <= cap)) {  // the front request always goes
      rows += it->batch;
      out.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  if (!queue_.empty()) queue_cv_.notify_one();  // the rest is another idle instance's
  return out;
}

void VersionRuntime::finish(Pending& p, Status status, InferResponse response, bool count_inference) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(stats_mutex_);
    if (status.ok()) {
      add_duration(stats_.success, ns_between(p.request.received, now));
      if (count_inference) stats_.inference_count += static_cast<uint64_t>(p.batch);
    } else {
      add_duration(stats_.fail, ns_between(p.request.received, now));
    }
    stats_.last_inference_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
  }
  pending_.fetch_sub(1);
  // The inputs may view a front's buffer, which the callback may release: drop them first.
  p.request.inputs.clear();
  try {
    p.done(std::move(status), std::move(response));
  } catch (...) {
    // A front's callback must not throw; if one does, the instance keeps serving.
  }
}

void VersionRuntime::execute(std::vector<Pending>& batch) {
  auto start = std::chrono::steady_clock::now();
  // Requests past their deadline fail without running (Triton's REJECT timeout action).
  std::vector<Pending> live;
  for (auto& p : batch) {
    {
      std::lock_guard lock(stats_mutex_);
      add_duration(stats_.queue, ns_between(p.enqueued, start));
    }
    if (start > p.deadline)
      finish(p, Status::error(Code::Unavailable, "model '" + name_ + "' version " + version_str_ +
                                                     ": request timeout expired in the queue"),
             {}, false);
    else
      live.push_back(std::move(p));
  }
  if (live.empty()) return;
  const Pending& lead = live.front();
  std::vector<std::string> output_names;
  for (const auto& o : lead.request.outputs) output_names.push_back(o.name);

  std::map<std::string, Datum> feeds;
  int64_t total_rows = 0;
  for (const auto& p : live) total_rows += p.batch;
  Status failure;
  std::vector<std::pair<std::string, Datum>> results;
  std::chrono::steady_clock::time_point t_in, t_run;
  try {
    if (live.size() == 1) {
      for (const auto& in : lead.request.inputs) feeds[in.name] = Datum::of(in.data);
    } else {
      for (const auto& in : lead.request.inputs) {
        std::vector<const Tensor*> parts;
        for (const auto& p : live)
          for (const auto& other : p.request.inputs)
            if (other.name == in.name) parts.push_back(&other.data);
        feeds[in.name] = Datum::of(concat_rows(parts, total_rows));
      }
    }
    t_in = std::chrono::steady_clock::now();
    results = session_->run(feeds, output_names);
    t_run = std::chrono::steady_clock::now();
    {
      // A running mean (weight 1/8) of the run time decides which requests run on their caller's thread.
      const uint64_t t = ns_between(t_in, t_run), m = mean_run_ns_.load(std::memory_order_relaxed);
      mean_run_ns_.store(m == kUnknownRunNs ? t : (m * 7 + t) / 8, std::memory_order_relaxed);
    }
    for (const auto& [n, d] : results) {
      if (!d.is_tensor())
        throw ServeError(Code::Internal, "output '" + n + "' is " + d.describe() + ", not a tensor");
      if (live.size() > 1 && (d.tensor.dims().empty() || d.tensor.dims()[0] != total_rows))
        throw ServeError(Code::Internal, "output '" + n + "' has shape " + dims_string(d.tensor.dims()) +
                                             " for a batch of " + std::to_string(total_rows) +
                                             " rows: its first dim is not the batch");
    }
  } catch (const ServeError& e) {
    failure = Status::error(e.code(), "model '" + name_ + "' version " + version_str_ + ": " + e.what());
  } catch (const std::exception& e) {
    failure = Status::error(Code::Internal, "model '" + name_ + "' version " + version_str_ + ": " + e.what());
  }
  feeds.clear();
  if (!failure.ok()) {
    for (auto& p : live) finish(p, failure, {}, false);
    return;
  }
  // Split the outputs back; each request's rows view the batch's output buffers.
  std::vector<InferResponse> responses(live.size());
  std::vector<std::shared_ptr<const Tensor>> whole;
  if (live.size() > 1)
    for (auto& [n, d] : results) whole.push_back(std::make_shared<const Tensor>(std::move(d.tensor)));
  int64_t row = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    InferResponse& r = responses[i];
    r.model = name_;
    r.version = version_str_;
    r.id = live[i].request.id;
    r.requested = live[i].request.outputs;
    for (size_t k = 0; k < results.size(); ++k) {
      Tensor t = live.size() == 1 ? std::move(results[k].second.tensor) : slice_rows(whole[k], row, live[i].batch);
      r.outputs.push_back({results[k].first, std::move(t)});
    }
    row += live[i].batch;
  }
  const auto t_out = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(stats_mutex_);
    stats_.execution_count += 1;
    auto& b = batch_stats_[static_cast<uint64_t>(total_rows)];
    b.batch_size = static_cast<uint64_t>(total_rows);
    add_duration(b.compute_input, ns_between(start, t_in));
    add_duration(b.compute_infer, ns_between(t_in, t_run));
    add_duration(b.compute_output, ns_between(t_run, t_out));
    for (size_t i = 0; i < live.size(); ++i) {
      add_duration(stats_.compute_input, ns_between(start, t_in));
      add_duration(stats_.compute_infer, ns_between(t_in, t_run));
      add_duration(stats_.compute_output, ns_between(t_run, t_out));
    }
  }
  for (size_t i = 0; i < live.size(); ++i) finish(live[i], Status{}, std::move(responses[i]), true);
}

}  // namespace onyx::serve
