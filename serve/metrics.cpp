// The Prometheus metrics of `onyx serve`: the Core's per-model statistics under Triton's metric names and labels,
// and the process's CPU and memory gauges (the port that serves them, MetricsFront, is in http_front.cpp).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

#include "fronts.hpp"

namespace onyx::serve {
namespace {

// The CPU utilization's first interval starts with the process.
const auto metrics_process_start = std::chrono::steady_clock::now();

// Prometheus label values escape backslash, double quote and newline.
std::string metrics_label(std::string_view v) {
  std::string s;
  s.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      s += '\\';
      s += c;
    } else if (c == '\n') {
      s += "\\n";
    } else {
      s += c;
    }
  }
  return s;
}

void metrics_header(std::string& out, const char* name, const char* help, const char* type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

template <class Get>
void metrics_model_family(std::string& out, const std::vector<ModelStats>& stats, const char* name, const char* help,
                          const char* type, Get get) {
  metrics_header(out, name, help, type);
  for (const ModelStats& s : stats) {
    out += name;
    out += "{model=\"";
    out += metrics_label(s.name);
    out += "\",version=\"";
    out += metrics_label(s.version);
    out += "\"} ";
    out += std::to_string(get(s));
    out += '\n';
  }
}

void metrics_gauge(std::string& out, const char* name, const char* help, const std::string& value) {
  metrics_header(out, name, help, "gauge");
  out += name;
  out += ' ';
  out += value;
  out += '\n';
}

std::string metrics_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The process's CPU time used since the previous scrape over the wall time times the cores, in 0..1.
double metrics_cpu_utilization() {
  static std::mutex mutex;
  static auto last_wall = metrics_process_start;
  static double last_cpu = 0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex);
  const double wall = std::chrono::duration<double>(now - last_wall).count();
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  double u = wall > 0 ? (cpu - last_cpu) / (wall * static_cast<double>(cores)) : 0.0;
  last_wall = now;
  last_cpu = cpu;
  return std::clamp(u, 0.0, 1.0);
}

// MemTotal and MemTotal - MemAvailable from /proc/meminfo, in bytes (0 where unreadable).
std::pair<uint64_t, uint64_t> metrics_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0, total = 0, available = 0;
  bool have_available = false;
  while (f >> key >> value) {
    std::getline(f, unit);
    if (key == "MemTotal:") total = value * 1024;
    if (key == "MemAvailable:") {
      available = value * 1024;
      have_available = true;
    }
  }
  return {total, have_available && available <= total ? total - available : 0};
}

uint64_t metrics_resident_bytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

std::string prometheus_metrics(const Core& core) {
  const std::vector<ModelStats> stats = core.statistics("", "");
  std::string out;
  out.reserve(4096 + stats.size() * 1024);
  auto us = [](uint64_t ns) { return ns / 1000; };
  metrics_model_family(out, stats, "nv_inference_request_success",
                       "Number of successful inference requests, all batch sizes", "counter",
                       [](const ModelStats& s) { return s.success.count; });
  metrics_model_family(out, stats, "nv_inference_request_failure",
                       "Number of failed inference requests, all batch sizes", "counter",
                       [](const ModelStats& s) { return s.fail.count; });
  metrics_model_family(out, stats, "nv_inference_count",
                       "Number of inferences performed (does not include cached requests)", "counter",
                       [](const ModelStats& s) { return s.inference_count; });
  metrics_model_family(out, stats, "nv_inference_exec_count",
                       "Number of model executions performed (does not include cached requests)", "counter",
                       [](const ModelStats& s) { return s.execution_count; });
  metrics_model_family(out, stats, "nv_inference_request_duration_us",
                       "Cumulative inference request duration in microseconds (includes cached requests)", "counter",
                       [&](const ModelStats& s) { return us(s.success.ns + s.fail.ns); });
  metrics_model_family(out, stats, "nv_inference_queue_duration_us",
                       "Cumulative inference queuing duration in microseconds (includes cached requests)", "counter",
                       [&](const ModelStats& s) { return us(s.queue.ns); });
  metrics_model_family(out, stats, "nv_inference_compute_input_duration_us",
                       "Cumulative compute input duration in microseconds (does not include cached requests)",
                       "counter", [&](const ModelStats& s) { return us(s.compute_input.ns); });
  metrics_model_family(out, stats, "nv_inference_compute_infer_duration_us",
                       "Cumulative compute inference duration in microseconds (does not include cached requests)",
                       "counter", [&](const ModelStats& s) { return us(s.compute_infer.ns); });
  metrics_model_family(out, stats, "nv_inference_compute_output_duration_us",
                       "Cumulative inference compute output duration in microseconds (does not include cached "
                       "requests)",
                       "counter", [&](const ModelStats& s) { return us(s.compute_output.ns); });
  metrics_model_family(out, stats, "nv_inference_pending_request_count",
                       "Instantaneous number of pending requests awaiting execution per-model.", "gauge",
                       [](const ModelStats& s) { return s.pending; });
  metrics_gauge(out, "nv_cpu_utilization", "CPU utilization rate [0.0 - 1.0]",
                metrics_double(metrics_cpu_utilization()));
  const auto [total, used] = metrics_memory();
  metrics_gauge(out, "nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes", std::to_string(total));
  metrics_gauge(out, "nv_cpu_memory_used_bytes", "CPU used memory (RAM), in bytes", std::to_string(used));
  metrics_gauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
                std::to_string(metrics_resident_bytes()));
  return out;
}

}  // namespace onyx::serve
