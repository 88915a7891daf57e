// The server's core (core.hpp): which models the repositories hold, which versions are loaded, model control
// (none, explicit, poll), readiness and shutdown. Loading happens outside the lock that requests take, so a load
// or unload never stalls the other models; a version being replaced finishes its queued requests first.
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "core.hpp"
#include "runtime.hpp"

namespace onyx::serve {

namespace fs = std::filesystem;

namespace {

struct ModelState {
  std::map<int64_t, std::shared_ptr<VersionRuntime>> versions;  // loaded ones
  std::string state;        // READY, UNAVAILABLE, LOADING, UNLOADING; "" never loaded
  std::string reason;
  std::string fingerprint;  // of the source the loaded versions came from
};

struct FoundModel {
  fs::path path;
  bool bare_file = false;
};

int64_t core_parse_version(const std::string& model, const std::string& version) {
  bool digits = !version.empty() && version.size() <= 18;
  for (char c : version) digits = digits && c >= '0' && c <= '9';
  if (!digits)
    throw ServeError(Code::NotFound, "model '" + model + "' has no version '" + version + "' (versions are numbers)");
  return std::stoll(version);
}

}  // namespace

struct Core::Impl {
  CoreOptions options;
  mutable std::shared_mutex models_mutex;  // guards `models`; requests take it shared
  std::map<std::string, ModelState> models;
  std::mutex load_mutex;                   // one load or unload at a time
  std::set<std::string> startup;           // models loaded at start (readiness waits for them)
  std::atomic<bool> started{false}, stopping{false};
  std::atomic<uint64_t> in_flight{0};
  std::mutex idle_mutex;
  std::condition_variable idle_cv;
  std::thread poller;
  std::mutex poll_mutex;
  std::condition_variable poll_cv;
  bool poll_stop = false;

  // Every model the repositories hold, by name. Two with one name: the first repository's wins and the clash is
  // logged (Triton refuses such a repository; a warning keeps the others serving).
  std::map<std::string, FoundModel> discover() const {
    std::map<std::string, FoundModel> found;
    for (const auto& repo : options.repositories) {
      std::error_code ec;
      if (fs::is_regular_file(repo, ec)) {
        const std::string name = repo.stem().string();
        if (!found.emplace(name, FoundModel{repo, true}).second)
          std::cerr << "onyx serve: model '" << name << "' is in several repositories; serving " << found[name].path
                    << "\n";
        continue;
      }
      for (const auto& entry : fs::directory_iterator(repo, ec)) {
        if (!entry.is_directory() || entry.path().filename().string().starts_with('.')) continue;
        const std::string name = entry.path().filename().string();
        if (!found.emplace(name, FoundModel{entry.path(), false}).second)
          std::cerr << "onyx serve: model '" << name << "' is in several repositories; serving " << found[name].path
                    << "\n";
      }
      if (ec) std::cerr << "onyx serve: cannot list repository " << repo << ": " << ec.message() << "\n";
    }
    return found;
  }

  void set_state(const std::string& name, const std::string& state, const std::string& reason) {
    std::unique_lock lock(models_mutex);
    auto& m = models[name];
    m.state = state;
    m.reason = reason;
  }

  // Loads (or reloads) one model; the previous versions keep serving until the new ones are ready, and stay when
  // the load fails. Throws ServeError with the reason.
  void load(const std::string& name, const std::string& config_json) {
    std::lock_guard serial(load_mutex);
    const auto found = discover();
    auto it = found.find(name);
    if (it == found.end())
      throw ServeError(Code::InvalidArgument, "failed to load '" + name + "': no such model in the repository");
    bool had_versions = false;
    {
      std::shared_lock lock(models_mutex);
      auto m = models.find(name);
      had_versions = m != models.end() && !m->second.versions.empty();
    }
    if (!had_versions) set_state(name, "LOADING", "");
    std::map<int64_t, std::shared_ptr<VersionRuntime>> fresh;
    ModelSource source;
    try {
      source = read_model_source(it->second.path, it->second.bare_file);
      inference::ModelConfig config;
      if (!config_json.empty())
        config = parse_model_config(config_json, true, "model '" + name + "'");
      else if (source.config_text)
        config = parse_model_config(*source.config_text, false, "model '" + name + "'");
      const auto versions = versions_to_serve(config, source);
      if (versions.empty()) throw ServeError(Code::InvalidArgument, "model '" + name + "' has no version folder");
      for (int64_t v : versions)
        fresh[v] = std::make_shared<VersionRuntime>(source, v, config, options.threads);
    } catch (const ServeError& e) {
      std::cerr << "onyx serve: failed to load '" << name << "': " << e.what() << "\n";
      std::unique_lock lock(models_mutex);
      auto& m = models[name];
      if (m.versions.empty()) m.state = "UNAVAILABLE";
      m.reason = e.what();
      throw;
    }
    std::map<int64_t, std::shared_ptr<VersionRuntime>> old;
    {
      std::unique_lock lock(models_mutex);
      auto& m = models[name];
      old.swap(m.versions);
      m.versions = std::move(fresh);
      m.state = "READY";
      m.reason.clear();
      m.fingerprint = source.fingerprint;
    }
    std::cerr << "onyx serve: loaded '" << name << "'\n";
    // `old` goes here: each replaced version finishes its queue, then stops.
  }

  void unload(const std::string& name) {
    std::lock_guard serial(load_mutex);
    std::map<int64_t, std::shared_ptr<VersionRuntime>> old;
    {
      std::unique_lock lock(models_mutex);
      auto m = models.find(name);
      if (m == models.end() || m->second.versions.empty()) {
        if (discover().count(name) == 0)
          throw ServeError(Code::InvalidArgument, "failed to unload '" + name + "': no such model");
        return;  // not loaded: nothing to do, as Triton answers
      }
      old.swap(m->second.versions);
      m->second.state = "UNAVAILABLE";
      m->second.reason = "unloaded";
    }
    old.clear();
    std::cerr << "onyx serve: unloaded '" << name << "'\n";
  }

  std::shared_ptr<VersionRuntime> resolve(const std::string& name, const std::string& version) const {
    std::shared_lock lock(models_mutex);
    auto m = models.find(name);
    if (m == models.end() || (m->second.versions.empty() && m->second.state != "LOADING" &&
                              m->second.state != "UNAVAILABLE"))
      throw ServeError(Code::NotFound, "unknown model: '" + name + "'");
    if (m->second.versions.empty()) {
      if (m->second.reason == "unloaded") throw ServeError(Code::NotFound, "unknown model: '" + name + "' (unloaded)");
      throw ServeError(Code::Unavailable, "model '" + name + "' is not ready: " +
                                              (m->second.reason.empty() ? m->second.state : m->second.reason));
    }
    if (version.empty()) return m->second.versions.rbegin()->second;
    auto v = m->second.versions.find(core_parse_version(name, version));
    if (v == m->second.versions.end())
      throw ServeError(Code::NotFound, "model '" + name + "' has no version " + version + " loaded");
    return v->second;
  }

  void poll_loop() {
    std::unique_lock lock(poll_mutex);
    while (!poll_cv.wait_for(lock, std::chrono::seconds(std::max(1, options.poll_seconds)), [&] { return poll_stop; })) {
      lock.unlock();
      poll_once();
      lock.lock();
    }
  }

  void poll_once() {
    const auto found = discover();
    std::vector<std::string> to_load, to_unload;
    {
      std::shared_lock lock(models_mutex);
      for (const auto& [name, where] : found) {
        auto m = models.find(name);
        std::string fp;
        try {
          fp = read_model_source(where.path, where.bare_file).fingerprint;
        } catch (const ServeError&) {
          continue;  // unreadable now; the next poll tries again
        }
        if (m == models.end() || m->second.fingerprint != fp) to_load.push_back(name);
      }
      for (const auto& [name, m] : models)
        if (!found.count(name) && !m.versions.empty()) to_unload.push_back(name);
    }
    for (const auto& name : to_load) {
      try {
        load(name, "");
      } catch (const ServeError&) {
        // Logged by load(); remember this source so a broken model is not retried every poll.
        std::unique_lock lock(models_mutex);
        try {
          models[name].fingerprint = read_model_source(found.at(name).path, found.at(name).bare_file).fingerprint;
        } catch (const ServeError&) {
        }
      }
    }
    for (const auto& name : to_unload) {
      try {
        unload(name);
      } catch (const ServeError&) {
      }
    }
  }
};

Core::Core(CoreOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = std::move(options); }

Core::~Core() {
  {
    std::lock_guard lock(impl_->poll_mutex);
    impl_->poll_stop = true;
  }
  impl_->poll_cv.notify_all();
  if (impl_->poller.joinable()) impl_->poller.join();
  std::map<std::string, ModelState> models;
  {
    std::unique_lock lock(impl_->models_mutex);
    models.swap(impl_->models);
  }
}

void Core::start() {
  const auto found = impl_->discover();
  std::vector<std::string> names;
  if (impl_->options.control == ControlMode::Explicit) {
    for (const auto& n : impl_->options.startup_models) {
      if (n == "*") {
        for (const auto& [name, where] : found) names.push_back(name);
      } else {
        names.push_back(n);
      }
    }
  } else {
    for (const auto& [name, where] : found) names.push_back(name);
  }
  for (const auto& n : names) {
    impl_->startup.insert(n);
    try {
      impl_->load(n, "");
    } catch (const ServeError&) {
      // Logged; the model stays UNAVAILABLE with its reason in the repository index.
    }
  }
  impl_->started = true;
  if (impl_->options.control == ControlMode::Poll) impl_->poller = std::thread([this] { impl_->poll_loop(); });
}

bool Core::live() const { return true; }

bool Core::ready() const {
  if (!impl_->started || impl_->stopping) return false;
  if (!impl_->options.strict_readiness) return true;
  std::shared_lock lock(impl_->models_mutex);
  for (const auto& n : impl_->startup) {
    auto m = impl_->models.find(n);
    if (m == impl_->models.end()) return false;
    // A startup model unloaded on request later does not make the server unready.
    if (m->second.versions.empty() && m->second.reason != "unloaded") return false;
  }
  return true;
}

ServerMeta Core::server_metadata() const {
  ServerMeta m;
  m.version = impl_->options.server_version;
  m.extensions = {"binary_tensor_data", "parameters", "statistics", "model_configuration", "model_repository",
                  "schedule_policy"};
  return m;
}

ModelMeta Core::model_metadata(const std::string& model, const std::string& version) const {
  auto rt = impl_->resolve(model, version);
  ModelMeta meta = rt->metadata();
  if (version.empty()) {
    meta.versions.clear();
    std::shared_lock lock(impl_->models_mutex);
    auto m = impl_->models.find(model);
    if (m != impl_->models.end())
      for (const auto& [v, r] : m->second.versions) meta.versions.push_back(std::to_string(v));
  }
  return meta;
}

bool Core::model_ready(const std::string& model, const std::string& version) const {
  if (impl_->stopping) return false;
  try {
    impl_->resolve(model, version);
    return true;
  } catch (const ServeError&) {
    return false;
  }
}

inference::ModelConfig Core::model_config(const std::string& model, const std::string& version) const {
  return impl_->resolve(model, version)->config();
}

std::vector<ModelStats> Core::statistics(const std::string& model, const std::string& version) const {
  std::vector<ModelStats> out;
  if (!model.empty()) {
    if (!version.empty()) return {impl_->resolve(model, version)->stats()};
    impl_->resolve(model, "");  // NotFound / Unavailable as for any other call
  }
  std::vector<std::shared_ptr<VersionRuntime>> runtimes;
  {
    std::shared_lock lock(impl_->models_mutex);
    for (const auto& [name, m] : impl_->models)
      if (model.empty() || name == model)
        for (const auto& [v, r] : m.versions) runtimes.push_back(r);
  }
  for (const auto& r : runtimes) out.push_back(r->stats());
  return out;
}

void Core::infer(InferRequest request, InferDone done) {
  if (impl_->stopping) {
    done(Status::error(Code::Unavailable, "the server is shutting down"), {});
    return;
  }
  std::shared_ptr<VersionRuntime> rt;
  try {
    rt = impl_->resolve(request.model, request.version);
  } catch (const ServeError& e) {
    done(e.status(), {});
    return;
  }
  impl_->in_flight.fetch_add(1);
  Impl* impl = impl_.get();
  rt->submit(std::move(request), [impl, done = std::move(done)](Status status, InferResponse response) {
    done(std::move(status), std::move(response));
    if (impl->in_flight.fetch_sub(1) == 1) {
      std::lock_guard lock(impl->idle_mutex);
      impl->idle_cv.notify_all();
    }
  });
}

std::vector<RepoEntry> Core::repository_index(bool ready_only) const {
  const auto found = impl_->discover();
  std::vector<RepoEntry> out;
  std::shared_lock lock(impl_->models_mutex);
  std::set<std::string> names;
  for (const auto& [n, f] : found) names.insert(n);
  for (const auto& [n, m] : impl_->models)
    if (!m.versions.empty()) names.insert(n);
  for (const auto& n : names) {
    auto m = impl_->models.find(n);
    if (m == impl_->models.end()) {
      if (!ready_only) out.push_back({n, "", "", ""});
      continue;
    }
    if (!m->second.versions.empty()) {
      for (const auto& [v, r] : m->second.versions) out.push_back({n, std::to_string(v), "READY", ""});
    } else if (!ready_only) {
      out.push_back({n, "", m->second.state, m->second.reason});
    }
  }
  return out;
}

void Core::load_model(const std::string& model, const std::string& config_json) {
  if (impl_->options.control != ControlMode::Explicit)
    throw ServeError(Code::InvalidArgument, "explicit model load / unload is not allowed unless the model control "
                                            "mode is explicit (--model-control-mode explicit)");
  if (impl_->stopping) throw ServeError(Code::Unavailable, "the server is shutting down");
  impl_->load(model, config_json);
}

void Core::unload_model(const std::string& model) {
  if (impl_->options.control != ControlMode::Explicit)
    throw ServeError(Code::InvalidArgument, "explicit model load / unload is not allowed unless the model control "
                                            "mode is explicit (--model-control-mode explicit)");
  impl_->unload(model);
}

void Core::begin_shutdown() { impl_->stopping = true; }

bool Core::shutting_down() const { return impl_->stopping; }

uint64_t Core::in_flight() const { return impl_->in_flight.load(); }

bool Core::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->idle_mutex);
  return impl_->idle_cv.wait_for(lock, timeout, [&] { return impl_->in_flight.load() == 0; });
}

}  // namespace onyx::serve
