// onyx bench MODEL: times session creation, the first run and R runs after W warm-ups, and reports peak RSS.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "base/error.hpp"
#include "cli.hpp"
#include "exec/threads.hpp"
#include "feeds.hpp"
#include "flops.hpp"
#include "kernels/fma_peak.hpp"
#include "onyx/session.hpp"
#include "opt/optimizer.hpp"

namespace onyx::cli {

const char* const kBenchUsage =
    "usage: onyx bench MODEL [--input NAME=FILE ...] [--dummy | --seed N] [--dim SYMBOL=SIZE ...] [--threads N]\n"
    "                  [--level LEVEL] [--warmup W] [--runs R] [--no-plan] [--flops] [--json] [--accept-newer-versions]\n"
    "                  [--timeout-ms MS] [--memory-limit-mb MB]\n"
    "\n"
    "Creates a session for MODEL, runs it once (the first run), W more times untimed (default 2), then R timed\n"
    "times (default 10), and reports: session-create time, first-run time, median / p90 / min of the R runs, and\n"
    "the process's peak RSS (getrusage ru_maxrss) in MB, and the planned bytes: the arena of the session's static\n"
    "memory plan for the inputs' shapes (intermediates whose lifetimes do not overlap share memory).\n"
    "  --input NAME=FILE   an input from a .pb or .npy file; inputs not given are generated as arange(n)/n (as\n"
    "                      --dummy; the default), or random with --seed N; symbolic dims are 1 unless --dim\n"
    "  --threads N         intra-op threads for the session (0: the engine's default)\n"
    "  --level LEVEL       graph optimization: basic, extended, all (the default) or 0 (off)\n"
    "  --no-plan           no static memory plan (every intermediate from the heap)\n"
    "  --accept-newer-versions  load a model of a newer IR version or opset than onyx implements\n"
    "  --timeout-ms MS      stop a run that passes MS milliseconds (each run: the first, warm-up and timed), with\n"
    "                      an error\n"
    "  --memory-limit-mb MB fail a run whose tensors would hold more than MB MiB at once\n"
    "  --flops             also count the arithmetic of a run (2 per multiply-add of matrix products,\n"
    "                      convolutions and attention, from one more run's profile) and measure the machine's\n"
    "                      float32 multiply-add peak on the session's threads: the achieved GFLOP/s at the\n"
    "                      median against the peak\n"
    "  --json              print one JSON object: model, create_ms, first_run_ms, median_ms, p90_ms, min_ms,\n"
    "                      cpu_median_ms (CPU time of a run, all threads), runs, warmup, threads, peak_rss_mb,\n"
    "                      planned_mb (null without a plan), omp_wait_policy (how the OpenMP workers wait:\n"
    "                      PASSIVE unless ONYX_SPIN_WAIT=1, OMP_WAIT_POLICY or GOMP_SPINCOUNT say otherwise;\n"
    "                      null for libgomp's own, spinning about 3 ms); with --flops also gflop (per run),\n"
    "                      gflops (at the median) and peak_gflops\n";

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU time (user + system, all threads) this process has used so far, in ms.
double cpu_ms() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; };
  return ms(ru.ru_utime) + ms(ru.ru_stime);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Peak resident set of this process so far, in MB (Linux reports ru_maxrss in KiB).
double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      r += buf;
    } else {
      r += c;
    }
  }
  return r + "\"";
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  Args args(argv, {"--input", "--seed", "--dim", "--threads", "--warmup", "--runs", "--level", "--timeout-ms", "--memory-limit-mb"},
            {"--dummy", "--accept-newer-versions", "--json", "--no-plan", "--flops"});
  if (print_help_if_asked(args, kBenchUsage)) return 0;
  expect_positional(args, 1, 1, kBenchUsage);
  if (args.flag("--dummy") && args.value("--seed")) fail("--dummy and --seed exclude each other");
  SessionOptions session_opts = session_options(args);
  session_opts.threads = static_cast<int>(parse_int_option(args.value("--threads").value_or("0"), "--threads", 0, 1024));
  if (auto level = args.value("--level")) session_opts.optimization_level = opt::parse_level(*level);
  session_opts.memory_plan = !args.flag("--no-plan");
  const int64_t warmup = parse_int_option(args.value("--warmup").value_or("2"), "--warmup", 0, 1000000);
  const int64_t runs = parse_int_option(args.value("--runs").value_or("10"), "--runs", 1, 1000000);
  const std::string& path = args.positional()[0];

  auto t0 = Clock::now();
  Session session = Session::from_file(path, session_opts);
  const double create_ms = ms_since(t0);
  const std::map<std::string, Datum> feeds = make_feeds(session, args, !args.value("--seed"));

  const RunOptions limits = run_options(args);
  t0 = Clock::now();
  session.run(feeds, {}, limits);
  const double first_run_ms = ms_since(t0);
  for (int64_t i = 0; i < warmup; ++i) session.run(feeds, {}, limits);
  std::vector<double> times, cpu_times;
  for (int64_t i = 0; i < runs; ++i) {
    const double cpu0 = cpu_ms();
    t0 = Clock::now();
    session.run(feeds, {}, limits);
    times.push_back(ms_since(t0));
    cpu_times.push_back(cpu_ms() - cpu0);
  }
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  const double median = median_of(times);
  const double cpu_median = median_of(cpu_times);
  // Nearest rank: the smallest time that at least 90% of the runs do not exceed.
  const size_t p90_rank = (n * 9 + 9) / 10;
  const double p90 = times[p90_rank - 1];
  const double rss = peak_rss_mb();
  const std::optional<MemoryPlanInfo> plan = session.memory_plan(feeds);
  char planned_mb[32] = "null";
  if (plan) std::snprintf(planned_mb, sizeof planned_mb, "%.3f", static_cast<double>(plan->arena_bytes) / (1 << 20));
  double gflop = 0, peak_gflops = 0;
  const bool flops = args.flag("--flops");
  if (flops) {
    std::vector<NodeTiming> profile;
    RunOptions profiled = limits;
    profiled.profile = &profile;
    session.run(feeds, {}, profiled);
    gflop = run_flops(profile) / 1e9;
    peak_gflops = kernels::measure_fma_peak(session_opts.threads > 0 ? session_opts.threads : threads::physical_cores()) / 1e9;
  }
  char flops_json[160] = "";
  if (flops)
    std::snprintf(flops_json, sizeof flops_json, ", \"gflop\": %.9g, \"gflops\": %.6g, \"peak_gflops\": %.1f", gflop,
                  median > 0 ? gflop / (median / 1e3) : 0.0, peak_gflops);

  if (args.flag("--json")) {
    std::printf(
        "{\"model\": %s, \"create_ms\": %.3f, \"first_run_ms\": %.3f, \"median_ms\": %.3f, \"p90_ms\": %.3f, "
        "\"min_ms\": %.3f, \"cpu_median_ms\": %.3f, \"runs\": %lld, \"warmup\": %lld, \"threads\": %d, "
        "\"peak_rss_mb\": %.1f, \"planned_mb\": %s, \"omp_wait_policy\": %s%s}\n",
        json_string(path).c_str(), create_ms, first_run_ms, median, p90, times.front(), cpu_median, static_cast<long long>(runs),
        static_cast<long long>(warmup), session_opts.threads, rss, planned_mb,
        std::getenv("OMP_WAIT_POLICY") ? json_string(std::getenv("OMP_WAIT_POLICY")).c_str() : "null", flops_json);
  } else {
    std::printf("model          %s\n", path.c_str());
    std::printf("threads        %d%s\n", session_opts.threads, session_opts.threads ? "" : " (engine default)");
    std::printf("session create %10.2f ms\n", create_ms);
    std::printf("first run      %10.2f ms\n", first_run_ms);
    std::printf("median         %10.2f ms   (%lld runs after %lld warm-up)\n", median, static_cast<long long>(runs),
                static_cast<long long>(warmup));
    std::printf("p90            %10.2f ms\n", p90);
    std::printf("min            %10.2f ms\n", times.front());
    std::printf("CPU median     %10.2f ms   (user + system, all threads, per run)\n", cpu_median);
    std::printf("peak RSS       %10.1f MB\n", rss);
    if (plan)
      std::printf("planned        %10.3f MB   (arena for %zu buffers of %.3f MB; %llu taken from it, %llu fell back)\n",
                  static_cast<double>(plan->arena_bytes) / (1 << 20), plan->buffers,
                  static_cast<double>(plan->buffer_bytes) / (1 << 20), static_cast<unsigned long long>(plan->served),
                  static_cast<unsigned long long>(plan->fallbacks));
    else
      std::printf("planned        none\n");
    if (flops)
      std::printf("arithmetic     %10.3f GFLOP per run, %.1f GFLOP/s at the median: %.0f%% of the measured peak %.1f GFLOP/s\n",
                  gflop, median > 0 ? gflop / (median / 1e3) : 0.0,
                  peak_gflops > 0 && median > 0 ? 100 * gflop / (median / 1e3) / peak_gflops : 0.0, peak_gflops);
  }
  return 0;
}

}  // namespace onyx::cli
