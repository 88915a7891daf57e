// The network fronts of `onyx serve`: HTTP/REST (Boost.Beast), gRPC (gRPC C++ callback API) and the Prometheus
// metrics endpoint. Each runs its own I/O threads and answers through the Core.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core.hpp"

namespace onyx::serve {

struct HttpOptions {
  std::string address = "0.0.0.0";
  int port = 8000;           // 0: pick a free port (port() tells which)
  int threads = 2;           // I/O threads
  uint64_t max_body = 64ull << 20;  // bytes; a larger body is refused with 413 before it is read
  bool access_log = false;   // one JSON line per request on stderr
};

class HttpFront {
 public:
  HttpFront(Core& core, HttpOptions options);
  ~HttpFront();
  void start();  // binds and starts serving; throws ServeError(Unavailable) when it cannot bind
  void stop();   // closes the listener and every connection, joins the threads
  int port() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

struct GrpcOptions {
  std::string address = "0.0.0.0";
  int port = 8001;  // 0: pick a free port
  uint64_t max_message = 64ull << 20;
  bool access_log = false;
};

class GrpcFront {
 public:
  GrpcFront(Core& core, GrpcOptions options);
  ~GrpcFront();
  void start();
  // Health service NOT_SERVING, as readiness turns false on SIGTERM.
  void set_not_serving();
  void stop();  // shuts the gRPC server down (in-flight calls finish first, bounded by the server's deadline)
  int port() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The Prometheus text exposition of the core's statistics under Triton's metric names and labels
// (nv_inference_request_success{model="m",version="1"} ...), with the process's CPU and memory gauges.
std::string prometheus_metrics(const Core& core);

struct MetricsOptions {
  std::string address = "0.0.0.0";
  int port = 8002;  // 0: pick a free port
};

// GET /metrics on its own port (Beast, one thread).
class MetricsFront {
 public:
  MetricsFront(const Core& core, MetricsOptions options);
  ~MetricsFront();
  void start();
  void stop();
  int port() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx::serve
