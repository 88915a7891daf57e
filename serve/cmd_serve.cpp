// `onyx serve`: the KServe v2 / Triton protocol server. Flags are named as Triton's where Triton has one; each
// falls back to an environment variable (ONYX_ and the flag's name in capitals, e.g. ONYX_HTTP_PORT), so a
// container is configured either way. Signals: the first SIGTERM/SIGINT turns readiness off and waits for the
// requests in flight (bounded by --exit-timeout-secs), then exits 0; a second one exits at once.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <pthread.h>

#include "base/error.hpp"
#include "fronts.hpp"
#include "tools/cli.hpp"

namespace onyx::cli {

const char* const kServeUsage =
    "usage: onyx serve --model-repository DIR|MODEL.onnx [--model-repository ...] [options]\n"
    "\n"
    "Serves the models of Triton-layout repositories (DIR/<model>/[config.pbtxt]/<version>/model.onnx) or single\n"
    "model files over the KServe v2 protocol as Triton speaks it: REST (HTTP/1.1, JSON and binary tensors), gRPC\n"
    "(inference.GRPCInferenceService and grpc.health.v1) and Prometheus metrics (GET /metrics).\n"
    "Every option falls back to an environment variable: ONYX_ + its name in capitals (ONYX_HTTP_PORT, ...);\n"
    "ONYX_MODEL_REPOSITORY and ONYX_LOAD_MODEL take comma-separated lists.\n"
    "\n"
    "  --model-repository PATH    a repository folder or a model file (repeatable)\n"
    "  --http-port N              REST port (default 8000; 0 picks a free one)\n"
    "  --grpc-port N              gRPC port (default 8001; 0 picks a free one)\n"
    "  --metrics-port N           Prometheus port (default 8002; 0 picks a free one)\n"
    "  --http-address A, --grpc-address A, --metrics-address A   addresses to bind (default 0.0.0.0)\n"
    "  --allow-http B, --allow-grpc B, --allow-metrics B         true|false: serve that endpoint (default true)\n"
    "  --http-thread-count N      HTTP I/O threads (default 2)\n"
    "  --http-max-input-size N    largest request body or gRPC message, bytes (default 67108864 = 64 MiB)\n"
    "  --model-control-mode M     none (load all, default) | explicit (load/unload API) | poll (rescan)\n"
    "  --load-model NAME          explicit mode: load NAME at start (repeatable; * loads all)\n"
    "  --repository-poll-secs N   poll mode: seconds between rescans (default 15)\n"
    "  --strict-readiness B       ready only while every startup model is (default true)\n"
    "  --threads N                intra-op threads per model instance (default: cores / instances)\n"
    "  --exit-timeout-secs N      on SIGTERM, how long in-flight requests may take to finish (default 30)\n"
    "  --access-log B             one JSON line per request on stderr (default false)\n"
    "  --port-file FILE           once serving, write {\"http\":P,\"grpc\":P,\"metrics\":P} to FILE\n";

namespace {

const std::vector<std::string> kServeValued = {
    "--model-repository", "--http-port",          "--grpc-port",          "--metrics-port",
    "--http-address",     "--grpc-address",       "--metrics-address",    "--allow-http",
    "--allow-grpc",       "--allow-metrics",      "--http-thread-count",  "--http-max-input-size",
    "--model-control-mode", "--load-model",       "--repository-poll-secs", "--strict-readiness",
    "--threads",          "--exit-timeout-secs",  "--access-log",         "--port-file"};

// ONYX_HTTP_PORT for --http-port.
std::string serve_env_name(const std::string& flag) {
  std::string e = "ONYX_";
  for (char c : flag.substr(2)) e += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

std::optional<std::string> serve_setting(const Args& args, const std::string& flag) {
  if (auto v = args.value(flag)) return v;
  if (const char* e = std::getenv(serve_env_name(flag).c_str()); e && *e) return std::string(e);
  return std::nullopt;
}

int64_t serve_int(const Args& args, const std::string& flag, int64_t def, int64_t lo, int64_t hi) {
  auto v = serve_setting(args, flag);
  if (!v) return def;
  try {
    size_t used = 0;
    const long long n = std::stoll(*v, &used);
    if (used == v->size() && n >= lo && n <= hi) return n;
  } catch (const std::exception&) {
  }
  fail(flag, " (or ", serve_env_name(flag), ") is '", *v, "'; it takes an integer from ", lo, " to ", hi);
}

bool serve_bool(const Args& args, const std::string& flag, bool def) {
  auto v = serve_setting(args, flag);
  if (!v) return def;
  if (*v == "true" || *v == "1" || *v == "on") return true;
  if (*v == "false" || *v == "0" || *v == "off") return false;
  fail(flag, " (or ", serve_env_name(flag), ") is '", *v, "'; it takes true or false");
}

}  // namespace

int cmd_serve(const std::vector<std::string>& argv) {
  Args args(argv, kServeValued, {});
  if (print_help_if_asked(args, kServeUsage)) return 0;
  expect_positional(args, 0, 0, kServeUsage);

  serve::CoreOptions core_opts;
  for (const auto& r : args.values("--model-repository")) core_opts.repositories.emplace_back(r);
  if (core_opts.repositories.empty())
    if (const char* e = std::getenv("ONYX_MODEL_REPOSITORY"); e && *e) {
      std::string list = e;
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) core_opts.repositories.emplace_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    }
  if (core_opts.repositories.empty()) fail("--model-repository (or ONYX_MODEL_REPOSITORY) is required; ", kServeUsage);
  for (const auto& r : core_opts.repositories) {
    std::error_code ec;
    if (!std::filesystem::exists(r, ec)) fail("model repository ", r, " does not exist");
  }
  const std::string mode = serve_setting(args, "--model-control-mode").value_or("none");
  if (mode == "none")
    core_opts.control = serve::ControlMode::None;
  else if (mode == "explicit")
    core_opts.control = serve::ControlMode::Explicit;
  else if (mode == "poll")
    core_opts.control = serve::ControlMode::Poll;
  else
    fail("--model-control-mode is '", mode, "'; it takes none, explicit or poll");
  for (const auto& m : args.values("--load-model")) core_opts.startup_models.insert(m);
  if (core_opts.startup_models.empty())
    if (const char* e = std::getenv("ONYX_LOAD_MODEL"); e && *e) {
      const std::string list = e;
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) core_opts.startup_models.insert(list.substr(start, comma - start));
        start = comma + 1;
      }
    }
  if (!core_opts.startup_models.empty() && core_opts.control != serve::ControlMode::Explicit)
    fail("--load-model needs --model-control-mode explicit");
  core_opts.poll_seconds = static_cast<int>(serve_int(args, "--repository-poll-secs", 15, 1, 86400));
  core_opts.threads = static_cast<int>(serve_int(args, "--threads", 0, 0, 1024));
  core_opts.strict_readiness = serve_bool(args, "--strict-readiness", true);
  core_opts.server_version = "0.1.0";

  serve::HttpOptions http_opts;
  http_opts.address = serve_setting(args, "--http-address").value_or("0.0.0.0");
  http_opts.port = static_cast<int>(serve_int(args, "--http-port", 8000, 0, 65535));
  http_opts.threads = static_cast<int>(serve_int(args, "--http-thread-count", 2, 1, 256));
  http_opts.max_body = static_cast<uint64_t>(serve_int(args, "--http-max-input-size", 64ll << 20, 1, 1ll << 40));
  http_opts.access_log = serve_bool(args, "--access-log", false);
  serve::GrpcOptions grpc_opts;
  grpc_opts.address = serve_setting(args, "--grpc-address").value_or("0.0.0.0");
  grpc_opts.port = static_cast<int>(serve_int(args, "--grpc-port", 8001, 0, 65535));
  grpc_opts.max_message = std::min<uint64_t>(http_opts.max_body, (1ull << 31) - 1);  // gRPC's limit is an int
  grpc_opts.access_log = http_opts.access_log;
  serve::MetricsOptions metrics_opts;
  metrics_opts.address = serve_setting(args, "--metrics-address").value_or("0.0.0.0");
  metrics_opts.port = static_cast<int>(serve_int(args, "--metrics-port", 8002, 0, 65535));
  const bool allow_http = serve_bool(args, "--allow-http", true);
  const bool allow_grpc = serve_bool(args, "--allow-grpc", true);
  const bool allow_metrics = serve_bool(args, "--allow-metrics", true);
  const int64_t exit_timeout = serve_int(args, "--exit-timeout-secs", 30, 0, 86400);
  const auto port_file = serve_setting(args, "--port-file");

  // Signals go to this thread only (sigwait below): block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that vanishes mid-write is an error on that socket, not a kill

  serve::Core core(core_opts);
  std::unique_ptr<serve::HttpFront> http;
  std::unique_ptr<serve::GrpcFront> grpc;
  std::unique_ptr<serve::MetricsFront> metrics;
  try {
    // The endpoints listen before the models load, so liveness and startup probes answer (ready: false) meanwhile.
    if (allow_http) {
      http = std::make_unique<serve::HttpFront>(core, http_opts);
      http->start();
    }
    if (allow_grpc) {
      grpc = std::make_unique<serve::GrpcFront>(core, grpc_opts);
      grpc->start();
    }
    if (allow_metrics) {
      metrics = std::make_unique<serve::MetricsFront>(core, metrics_opts);
      metrics->start();
    }
  } catch (const serve::ServeError& e) {
    fail("cannot start serving: ", e.what());
  }
  core.start();
  const int http_port = http ? http->port() : -1, grpc_port = grpc ? grpc->port() : -1,
            metrics_port = metrics ? metrics->port() : -1;
  std::printf("onyx serve: listening http=%d grpc=%d metrics=%d\n", http_port, grpc_port, metrics_port);
  std::fflush(stdout);
  if (port_file) {
    const std::string tmp = *port_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << "{\"http\": " << http_port << ", \"grpc\": " << grpc_port << ", \"metrics\": " << metrics_port << "}\n";
      if (!out) fail("cannot write --port-file ", *port_file);
    }
    std::filesystem::rename(tmp, *port_file);  // readers never see half a file
  }

  int sig = 0;
  sigwait(&signals, &sig);
  std::cerr << "onyx serve: signal " << sig << ": not ready; finishing " << core.in_flight()
            << " request(s) in flight (at most " << exit_timeout << " s; a second signal exits at once)\n";
  core.begin_shutdown();
  if (grpc) grpc->set_not_serving();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(exit_timeout);
  const timespec tick{0, 20 * 1000 * 1000};
  while (core.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    if (sigtimedwait(&signals, nullptr, &tick) > 0) {
      std::cerr << "onyx serve: second signal: exiting now\n";
      std::_Exit(1);
    }
  }
  const bool drained = core.in_flight() == 0;
  // The last responses are written by the fronts' threads after the core let go of them: give them a moment.
  if (drained) nanosleep(&tick, nullptr);
  if (http) http->stop();
  if (grpc) grpc->stop();
  if (metrics) metrics->stop();
  if (!drained) {
    std::cerr << "onyx serve: " << core.in_flight() << " request(s) still running after " << exit_timeout
              << " s; exiting\n";
    std::_Exit(1);  // their threads still hold the models: no orderly teardown
  }
  std::cerr << "onyx serve: stopped\n";
  return 0;
}

}  // namespace onyx::cli
