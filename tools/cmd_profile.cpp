// onyx profile MODEL: runs a model with per-node timing, writes a Chrome trace (Trace Event Format) and prints
// where the time went, per op type.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "base/error.hpp"
#include "cli.hpp"
#include "feeds.hpp"
#include "onyx/session.hpp"
#include "opt/optimizer.hpp"
#include "progress.hpp"
#include "text_escape.hpp"

namespace onyx::cli {

const char* const kProfileUsage =
    "usage: onyx profile MODEL [--input NAME=FILE ...] [--dummy | --seed N] [--dim SYMBOL=SIZE ...] [--runs N]\n"
    "                    [-o TRACE.json]\n"
    "\n"
    "Runs MODEL N times (default 1) timing every node, and prints a table per op type, slowest first: count, total\n"
    "and mean milliseconds, share of the total. Time spent in a subgraph (If, Loop, Scan) or a function body counts\n"
    "for the nodes that ran there, not for the node that called it.\n"
    ONYX_CLI_FEED_HELP
    "  --runs N            number of runs (default 1)\n"
    "  --level LEVEL       graph optimization of the session: basic, extended, all (default) or 0 (off)\n"
    "  --threads N         intra-op threads (default 0: one per physical core)\n"
    "  -o TRACE.json       write a Chrome trace: one complete event per node run (name = node name, cat = op type,\n"
    "                      args: op type, graph, run, inferred input types) inside one event per run; open it in\n"
    "                      chrome://tracing or ui.perfetto.dev\n";

namespace {

struct Event {
  const NodeTiming* timing;
  int64_t run;
  int64_t ts_ns;   // since the first run began
  int64_t self_ns;  // duration less the nodes that ran inside it (subgraph and function body nodes)
};

struct RunSpan {
  int64_t start_ns, duration_ns;
};

// IR nodes by the (graph label, node label) the profile reports, to find names and input types; labels that
// two nodes share map to null (no types rather than the wrong ones).
void index_nodes(const Graph& g, std::map<std::pair<std::string, std::string>, const Node*>& out) {
  std::string gl = g.label();
  for (const auto& n : g.nodes) {
    auto [it, fresh] = out.emplace(std::make_pair(gl, n->label()), n.get());
    if (!fresh) it->second = nullptr;
    for (const auto& a : n->attributes) {
      if (a.g) index_nodes(*a.g, out);
      for (const auto& sub : a.graphs) index_nodes(*sub, out);
    }
  }
}

// Subtracts from each event the time of the events nested in it (same thread, so nesting is by time alone).
void compute_self_times(std::vector<Event>& events) {
  std::vector<size_t> order(events.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (events[a].ts_ns != events[b].ts_ns) return events[a].ts_ns < events[b].ts_ns;
    return events[a].timing->duration_ns > events[b].timing->duration_ns;  // the enclosing one first
  });
  std::vector<size_t> open;
  for (size_t i : order) {
    Event& e = events[i];
    while (!open.empty()) {
      const Event& top = events[open.back()];
      if (top.ts_ns + top.timing->duration_ns > e.ts_ns) break;
      open.pop_back();
    }
    if (!open.empty()) {
      Event& parent = events[open.back()];
      parent.self_ns = std::max<int64_t>(0, parent.self_ns - e.timing->duration_ns);
    }
    open.push_back(i);
  }
}

std::string micros(int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}

void write_trace(const std::string& path, const std::string& model_path, const std::vector<Event>& events,
                 const std::vector<RunSpan>& runs,
                 const std::map<std::pair<std::string, std::string>, const Node*>& nodes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, ": cannot write");
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"model\":" << json_quote(model_path) << ",\"runs\":" << runs.size()
      << "},\n\"traceEvents\":[\n";
  // Metadata events: Chrome and Perfetto show these names instead of bare pid/tid numbers.
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":"
      << json_quote("onyx " + model_path) << "}},\n";
  out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"session run\"}}";
  for (size_t r = 0; r < runs.size(); ++r)
    out << ",\n{\"name\":\"run " << r << "\",\"cat\":\"run\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":"
        << micros(runs[r].start_ns) << ",\"dur\":" << micros(runs[r].duration_ns) << ",\"args\":{\"run\":" << r << "}}";
  for (const Event& e : events) {
    const NodeTiming& t = *e.timing;
    auto it = nodes.find({t.graph, t.node});
    const Node* n = it == nodes.end() ? nullptr : it->second;
    std::string name = !n ? t.node : n->name.empty() ? cat("#", n->index) : n->name;
    out << ",\n{\"name\":" << json_quote(name) << ",\"cat\":" << json_quote(t.op_type)
        << ",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":" << micros(e.ts_ns) << ",\"dur\":" << micros(t.duration_ns)
        << ",\"args\":{\"op_type\":" << json_quote(t.op_type) << ",\"graph\":" << json_quote(t.graph)
        << ",\"run\":" << e.run;
    if (n) {
      out << ",\"input_types\":[";
      for (size_t i = 0; i < n->inputs.size(); ++i)
        out << (i ? "," : "") << json_quote(n->inputs[i] ? n->inputs[i]->type.to_string_with_shape() : "");
      out << "]";
    }
    out << "}}";
  }
  out << "\n]}\n";
  out.close();
  if (!out) fail(path, ": write failed");
}

}  // namespace

int cmd_profile(const std::vector<std::string>& argv) {
  std::vector<std::string> valued = kFeedValuedOptions;
  valued.insert(valued.end(), {"--runs", "-o", "--level", "--threads"});
  Args args(argv, valued, kFeedFlags);
  if (print_help_if_asked(args, kProfileUsage)) return 0;
  expect_positional(args, 1, 1, kProfileUsage);
  const std::string model_path = args.positional()[0];
  int64_t runs = parse_count("--runs", args.value("--runs").value_or("1"));
  if (runs < 1) fail("--runs: at least 1 run");
  Progress progress("onyx profile");
  progress.set_item("loading " + model_path);
  SessionOptions options = session_options(args);
  if (auto level = args.value("--level")) options.optimization_level = opt::parse_level(*level);
  options.threads = static_cast<int>(parse_int_option(args.value("--threads").value_or("0"), "--threads", 0, 1024));
  Session s = Session::from_file(model_path, options);
  std::map<std::string, Datum> feeds = make_feeds(s, args);

  // Each run's profile counts from that run's start; the runs are placed on one time line for the trace.
  std::vector<NodeTiming> timings;
  std::vector<RunSpan> spans;
  std::vector<size_t> first_timing;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < runs; ++r) {
    progress.set(static_cast<size_t>(r + 1), static_cast<size_t>(runs), "runs");
    first_timing.push_back(timings.size());
    RunOptions ro = run_options(args);
    ro.profile = &timings;
    auto started = std::chrono::steady_clock::now();
    s.run(feeds, {}, ro);
    auto ended = std::chrono::steady_clock::now();
    using std::chrono::nanoseconds;
    spans.push_back({std::chrono::duration_cast<nanoseconds>(started - t0).count(),
                     std::chrono::duration_cast<nanoseconds>(ended - started).count()});
  }
  progress.stop();

  std::vector<Event> events;
  events.reserve(timings.size());
  for (size_t r = 0; r < spans.size(); ++r) {
    size_t end = r + 1 < spans.size() ? first_timing[r + 1] : timings.size();
    for (size_t i = first_timing[r]; i < end; ++i)
      events.push_back({&timings[i], static_cast<int64_t>(r), spans[r].start_ns + timings[i].start_ns, timings[i].duration_ns});
  }
  compute_self_times(events);

  if (auto out = args.value("-o")) {
    std::map<std::pair<std::string, std::string>, const Node*> nodes;
    index_nodes(*s.model().graph, nodes);
    write_trace(*out, model_path, events, spans, nodes);
    std::cout << "wrote " << events.size() << " node events (" << runs << " run" << (runs == 1 ? "" : "s") << ") to "
              << *out << "; open it in chrome://tracing or ui.perfetto.dev\n";
  }

  struct Row {
    int64_t count = 0, ns = 0;
  };
  std::map<std::string, Row> by_op;
  int64_t total_ns = 0, wall_ns = 0;
  for (const Event& e : events) {
    Row& row = by_op[e.timing->op_type];
    ++row.count;
    row.ns += e.self_ns;
    total_ns += e.self_ns;
  }
  for (const RunSpan& r : spans) wall_ns += r.duration_ns;
  std::vector<std::pair<std::string, Row>> rows(by_op.begin(), by_op.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::printf("%-24s %8s %12s %10s %7s\n", "op type", "count", "total ms", "mean ms", "%");
  for (const auto& [op, row] : rows)
    std::printf("%-24s %8lld %12.3f %10.4f %7.2f\n", printable(op).c_str(), static_cast<long long>(row.count), row.ns / 1e6,
                row.ns / 1e6 / static_cast<double>(row.count), total_ns ? 100.0 * static_cast<double>(row.ns) / static_cast<double>(total_ns) : 0.0);
  std::printf("%-24s %8zu %12.3f\n", "all nodes", events.size(), total_ns / 1e6);
  std::printf("%lld run%s, %.3f ms per run (wall clock, inputs checked and outputs gathered included)\n",
              static_cast<long long>(runs), runs == 1 ? "" : "s", wall_ns / 1e6 / static_cast<double>(runs));
  return 0;
}

}  // namespace onyx::cli
