// onyx test-onnx DIR...: runs ONNX backend test folders (and the light models) and compares outputs the way the
// ONNX project does. Each test runs in a child process, so a crash or a hang fails that test only.
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>

#include "base/error.hpp"
#include "cli.hpp"
#include "exec/datum_io.hpp"
#include "onyx/session.hpp"
#include "opt/optimizer.hpp"
#include "progress.hpp"

namespace onyx::cli {

const char* const kTestOnnxUsage =
    "usage: onyx test-onnx DIR... [--expectations FILE] [--filter GLOB] [--timeout SECONDS] [--level LEVEL]\n"
    "                             [--verbose]\n"
    "\n"
    "Runs ONNX backend tests. DIR is a test folder (model.onnx + test_data_set_N/), a suite folder holding test\n"
    "folders, a root holding suites (node/, simple/, ...), or the light/ folder (light_X.onnx + light_X_output_0.pb,\n"
    "input arange(n)/n). Outputs must match as in the ONNX project: same count, shape and element type, strings\n"
    "exact, allclose(rtol=1e-3, atol=1e-7) with NaN equal to NaN.\n"
    "  --expectations FILE  tests not expected to pass, one per line: 'SUITE/TEST  KIND  reason' (GLOB patterns\n"
    "                       allowed); KIND is xfail (not passing yet), spec-differs (the expected data contradicts\n"
    "                       the spec; the reason gives the evidence), shape-only (random outputs: shape, type and\n"
    "                       range are compared: each element within [min, max] of the expected ones) or\n"
    "                       shape-type-only (random outputs whose range is itself random, such as the elements\n"
    "                       training-mode Dropout keeps: shape and type only).\n"
    "                       With this file, unexpected failures and unexpected passes make the exit status 1.\n"
    "  --filter GLOB        run only tests whose SUITE/TEST matches\n"
    "  --timeout SECONDS    per test (default 60)\n"
    "  --level LEVEL        graph optimization level of the sessions: 0, basic (1), extended (2) or all (3,\n"
    "                       the default, as sessions have it)\n"
    "Prints one line per failure, a table per suite and 'N passed, N failed'.\n";

namespace {

namespace fs = std::filesystem;

struct Case {
  std::string id;     // suite/test
  std::string suite;
  fs::path model;
  fs::path light_output;  // light models only
  fs::path dir;           // test folder (test_data_set_N inside)
};

struct Expectation {
  std::string pattern, kind, reason;
  bool used = false;
};

bool has_model(const fs::path& d) { return fs::is_regular_file(d / "model.onnx"); }

void collect_suite(const fs::path& suite_dir, std::vector<Case>& out) {
  std::string suite = suite_dir.filename().string();
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(suite_dir)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const auto& p : entries) {
    if (fs::is_directory(p) && has_model(p)) {
      out.push_back({suite + "/" + p.filename().string(), suite, p / "model.onnx", {}, p});
    } else if (p.extension() == ".onnx" && p.stem().string().rfind("light_", 0) == 0) {
      fs::path expected = p.parent_path() / (p.stem().string() + "_output_0.pb");
      if (fs::exists(expected)) out.push_back({suite + "/" + p.stem().string(), suite, p, expected, {}});
    }
  }
}

std::vector<Case> collect(const std::vector<std::string>& dirs) {
  std::vector<Case> cases;
  for (const auto& d : dirs) {
    fs::path p(d);
    if (!fs::is_directory(p)) fail("'", d, "' is not a directory");
    p = fs::weakly_canonical(p);
    if (has_model(p)) {
      cases.push_back({p.parent_path().filename().string() + "/" + p.filename().string(), p.parent_path().filename().string(),
                       p / "model.onnx", {}, p});
      continue;
    }
    bool is_suite = false;
    for (const auto& e : fs::directory_iterator(p))
      if ((e.is_directory() && has_model(e.path())) || (e.path().extension() == ".onnx")) is_suite = true;
    if (is_suite) {
      collect_suite(p, cases);
      continue;
    }
    std::vector<fs::path> suites;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_directory()) suites.push_back(e.path());
    std::sort(suites.begin(), suites.end());
    for (const auto& s : suites) collect_suite(s, cases);
  }
  return cases;
}

std::vector<Expectation> read_expectations(const fs::path& path) {
  std::ifstream in(path);
  if (!in) fail(path.string(), ": cannot read");
  std::vector<Expectation> list;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    std::istringstream ss(line);
    Expectation e;
    if (!(ss >> e.pattern)) continue;
    if (!(ss >> e.kind) ||
        (e.kind != "xfail" && e.kind != "shape-only" && e.kind != "shape-type-only" && e.kind != "spec-differs"))
      fail(path.string(), ":", lineno, ": expected 'PATTERN xfail|spec-differs|shape-only|shape-type-only REASON'");
    if (e.kind == "spec-differs") e.kind = "xfail";  // expected to fail: the test data contradicts the spec
    std::getline(ss, e.reason);
    e.reason.erase(0, e.reason.find_first_not_of(" \t"));
    if (e.reason.empty()) fail(path.string(), ":", lineno, ": '", e.pattern, "' needs a reason");
    list.push_back(std::move(e));
  }
  return list;
}

Expectation* match(std::vector<Expectation>& list, const std::string& id) {
  for (auto& e : list)
    if (fnmatch(e.pattern.c_str(), id.c_str(), 0) == 0) return &e;
  return nullptr;
}

// How outputs are compared: values (allclose), range (shape-only), or shape and type alone (shape-type-only).
enum class Check { Values, Range, ShapeType };

Check check_for(const Expectation* e) {
  if (e && e->kind == "shape-only") return Check::Range;
  if (e && e->kind == "shape-type-only") return Check::ShapeType;
  return Check::Values;
}

// Runs one test in this process; returns "" on success or the reason it failed.
std::string run_case(const Case& c, Check check, int level) {
  SessionOptions options;
  options.optimization_level = level;
  Session s = Session::from_file(c.model, options);
  auto compare = [&](const Datum& want, const Datum& got) -> std::optional<std::string> {
    if (check == Check::Values) return compare_datums(want, got);
    if (check == Check::Range) return compare_datums_range(want, got);
    if (want.kind != got.kind) return cat("expected ", want.describe(), ", got ", got.describe());
    if (want.is_tensor() && (want.tensor.dims() != got.tensor.dims() || want.tensor.dtype() != got.tensor.dtype()))
      return cat("expected ", want.describe(), ", got ", got.describe());
    return std::nullopt;
  };
  if (!c.light_output.empty()) {
    std::map<std::string, Datum> feeds;
    for (const auto& in : s.inputs()) {
      std::vector<int64_t> dims;
      for (const Dim& d : in.type.shape.dims) dims.push_back(d.value.value_or(1));
      Tensor t = Tensor::allocate(DataType::Float, dims);
      float* p = t.mutable_data<float>();
      uint64_t n = t.element_count();
      for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n));
      feeds[in.name] = Datum::of(std::move(t));
    }
    auto out = s.run(feeds);
    Datum want = load_datum(c.light_output, s.outputs()[0].type);
    if (auto d = compare(want, out.at(0).second)) return "output 0: " + *d;
    return "";
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(c.dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_N folder";
  const Graph& g = *s.model().graph;
  for (const auto& set : sets) {
    std::map<std::string, Datum> feeds;
    // input_K.pb are the graph's inputs in order (initializers that are also inputs included).
    for (size_t k = 0;; ++k) {
      fs::path f = set / cat("input_", k, ".pb");
      if (!fs::exists(f)) break;
      if (k >= g.inputs.size()) return cat(f.filename().string(), " has no matching graph input");
      feeds[g.inputs[k]->name] = load_datum(f, g.inputs[k]->type);
    }
    auto out = s.run(feeds);
    size_t expected_count = 0;
    while (fs::exists(set / cat("output_", expected_count, ".pb"))) ++expected_count;
    if (expected_count != out.size()) return cat("expected ", expected_count, " outputs, got ", out.size());
    for (size_t k = 0; k < out.size(); ++k) {
      Datum want = load_datum(set / cat("output_", k, ".pb"), g.outputs[k]->type);
      if (auto d = compare(want, out[k].second)) return cat(set.filename().string(), " output ", k, " '", out[k].first, "': ", *d);
    }
  }
  return "";
}

// Forks, runs the case in the child, returns its verdict ("" = pass).
std::string run_isolated(const Case& c, Check check, int timeout_s, int level) {
  int fds[2];
  if (pipe(fds) != 0) fail("pipe failed");
  std::cout.flush();
  pid_t pid = fork();
  if (pid < 0) fail("fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string verdict;
    try {
      verdict = run_case(c, check, level);
    } catch (const std::exception& e) {
      verdict = e.what();
      if (verdict.empty()) verdict = "error";
    }
    if (!verdict.empty()) verdict = "F" + verdict;
    else verdict = "P";
    ssize_t ignored = write(fds[1], verdict.data(), verdict.size());
    (void)ignored;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (;;) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, left);
    if (r <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    msg.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) return cat("timed out after ", timeout_s, " s");
  if (WIFSIGNALED(status)) return cat("crashed (signal ", WTERMSIG(status), ": ", strsignal(WTERMSIG(status)), ")");
  if (msg.empty()) return "the test process ended without a verdict";
  return msg[0] == 'P' ? "" : msg.substr(1);
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

}  // namespace

int cmd_test_onnx(const std::vector<std::string>& argv) {
  Args args(argv, {"--expectations", "--filter", "--timeout", "--level"}, {"--verbose"});
  if (print_help_if_asked(args, kTestOnnxUsage)) return 0;
  expect_positional(args, 1, 64, kTestOnnxUsage);
  std::vector<Expectation> expectations;
  auto exp_path = args.value("--expectations");
  if (exp_path) expectations = read_expectations(*exp_path);
  int timeout = std::stoi(args.value("--timeout").value_or("60"));
  // Sessions as users get them unless asked otherwise.
  const int level = args.value("--level") ? opt::parse_level(*args.value("--level")) : SessionOptions{}.optimization_level;
  std::vector<Case> cases = collect(args.positional());
  if (auto f = args.value("--filter")) {
    std::vector<Case> kept;
    for (auto& c : cases)
      if (fnmatch(f->c_str(), c.id.c_str(), 0) == 0) kept.push_back(c);
    cases = std::move(kept);
  }
  struct Row {
    int passed = 0, failed = 0, expected_fail = 0;
  };
  std::map<std::string, Row> table;
  int passed = 0, failed = 0, unexpected = 0;
  Progress progress("onyx test-onnx");
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    progress.set(i + 1, cases.size(), c.id);
    Expectation* e = match(expectations, c.id);
    if (e) e->used = true;
    std::string verdict = run_isolated(c, check_for(e), timeout, level);
    Row& row = table[c.suite];
    bool xfail = e && e->kind == "xfail";
    if (verdict.empty()) {
      ++passed;
      ++row.passed;
      if (xfail) {
        ++unexpected;
        progress.above([&] { std::cout << "UNEXPECTED PASS " << c.id << " (listed: " << e->reason << ")\n"; });
      }
    } else {
      ++failed;
      ++row.failed;
      if (xfail) ++row.expected_fail;
      if (!xfail || args.flag("--verbose")) {
        progress.above([&] { std::cout << (xfail ? "xfail " : "FAIL ") << c.id << ": " << one_line(verdict) << "\n"; });
      }
      if (!xfail && exp_path) ++unexpected;
    }
  }
  progress.stop();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n%-22s %8s %8s %8s\n", "suite", "passed", "failed", "expected");
  for (const auto& [suite, row] : table) std::printf("%-22s %8d %8d %8d\n", suite.c_str(), row.passed, row.failed, row.expected_fail);
  if (exp_path) {
    for (const auto& e : expectations)
      if (!e.used && e.pattern.find_first_of("*?[") == std::string::npos)
        std::cout << "note: expectation '" << e.pattern << "' matches no test\n";
    std::printf("%d unexpected results\n", unexpected);
  }
  std::printf("(%.1f s)\n%d passed, %d failed\n", secs, passed, failed);
  if (exp_path) return unexpected ? 1 : 0;
  return failed ? 1 : 0;
}

}  // namespace onyx::cli
