// The `onyx` command line: `onyx COMMAND [ARGS]`; each command answers --help; errors print one line and exit 1.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include <unistd.h>

#include "base/error.hpp"
#include "cli.hpp"

namespace {

// The OpenMP workers (libgomp's, which onyx and oneDNN share) sleep while they wait, by default: spinning workers
// hold cores that other processes need, and on a busy host every run then slows badly (oww_embedding at 2 threads
// beside a compiler: 42 ms a run spinning, 1.1 ms sleeping; on an idle host spinning wins, 0.75 ms against 1.3).
// libgomp reads OMP_WAIT_POLICY once, as it loads, from the environment the process started with (libc's own
// initializer restores that one after an executable's preinit functions, so a setenv there is lost): a command
// that runs models runs itself again with the policy in its environment, before any library has started.
// ONYX_SPIN_WAIT=1 keeps libgomp's own policy (spin about 3 ms, then sleep) for latency-critical runs on an otherwise idle machine; an
// OMP_WAIT_POLICY or GOMP_SPINCOUNT that the user set stays as it is.
bool names(const char* entry, std::string_view var) {
  const std::string_view e(entry);
  return e.starts_with(var) && e.substr(var.size()).starts_with('=');
}

void default_to_sleeping_workers(int argc, char** argv, char** envp) {
  // Only the commands that run models start workers; the others skip the second start (about 10 ms).
  if (argc < 2) return;
  const std::string_view command = argv[1];
  if (command != "run" && command != "bench" && command != "profile" && command != "test-onnx" && command != "demo" &&
      command != "serve")
    return;
  size_t n = 0;
  for (; envp[n]; ++n)
    if (names(envp[n], "OMP_WAIT_POLICY") || names(envp[n], "GOMP_SPINCOUNT") ||
        std::string_view(envp[n]) == "ONYX_SPIN_WAIT=1")
      return;
  char** env = static_cast<char**>(std::malloc((n + 2) * sizeof(char*)));
  if (!env) return;
  static char passive[] = "OMP_WAIT_POLICY=PASSIVE";
  std::memcpy(env, envp, n * sizeof(char*));
  env[n] = passive;
  env[n + 1] = nullptr;
  execve("/proc/self/exe", argv, env);
  std::free(env);  // no /proc: run on under libgomp's own policy
}
[[gnu::section(".preinit_array"), gnu::used]] void (*const set_wait_policy)(int, char**, char**) =
    default_to_sleeping_workers;

}  // namespace

namespace onyx::cli {

Args::Args(const std::vector<std::string>& argv, const std::vector<std::string>& valued, const std::vector<std::string>& flags) {
  auto is = [](const std::vector<std::string>& list, const std::string& s) {
    for (const auto& x : list)
      if (x == s) return true;
    return false;
  };
  bool only_positional = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positional || a.size() < 2 || a[0] != '-' || a == "-") {
      positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    std::string name = a, val;
    bool has_inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      name = a.substr(0, eq);
      val = a.substr(eq + 1);
      has_inline_value = true;
    }
    if (is(valued, name)) {
      if (!has_inline_value) {
        if (i + 1 >= argv.size()) fail("option ", name, " needs a value");
        val = argv[++i];
      }
      options_.emplace_back(name, val);
    } else if (is(flags, name) && !has_inline_value) {
      options_.emplace_back(name, "");
    } else {
      fail("unknown option '", a, "' (see --help)");
    }
  }
}

bool Args::flag(const std::string& name) const {
  for (const auto& [k, v] : options_)
    if (k == name) return true;
  return false;
}

std::optional<std::string> Args::value(const std::string& name) const {
  std::optional<std::string> r;
  for (const auto& [k, v] : options_)
    if (k == name) r = v;
  return r;
}

std::vector<std::string> Args::values(const std::string& name) const {
  std::vector<std::string> r;
  for (const auto& [k, v] : options_)
    if (k == name) r.push_back(v);
  return r;
}

bool print_help_if_asked(const Args& args, const char* usage) {
  if (!args.help()) return false;
  std::cout << usage;
  return true;
}

void expect_positional(const Args& args, size_t lo, size_t hi, const char* usage) {
  size_t n = args.positional().size();
  if (n < lo || n > hi) {
    std::string u = usage;
    fail("expected ", lo == hi ? std::to_string(lo) : cat(lo, " to ", hi), " argument", hi == 1 ? "" : "s", "; ",
         u.substr(0, u.find('\n')));
  }
}

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"info", "summarize a model: producer, opsets, inputs/outputs, op histogram, parameters", kInfoUsage, cmd_info},
      {"check", "check a model's structure (exit 1 and one line per problem if invalid)", kCheckUsage, cmd_check},
      {"convert", "re-write a model, optionally moving tensor data to or from an external file", kConvertUsage, cmd_convert},
      {"optimize", "optimize a model's graph (folding, fusions) and write it", kOptimizeUsage, cmd_optimize},
      {"quantize", "quantize a model to int8 (ONNX Runtime's dynamic and static QDQ forms)", kQuantizeUsage, cmd_quantize},
      {"infer", "write a model with the types and shapes onyx infers as value_info", kInferUsage, cmd_infer}, {"extract", "write the sub-model computing given outputs from given inputs", kExtractUsage, cmd_extract}, {"merge", "connect two models' outputs to inputs into one model", kMergeUsage, cmd_merge},
      {"print", "print a model in the ONNX textual syntax", kPrintUsage, cmd_print},
      {"parse", "read a model in the ONNX textual syntax and write it (the inverse of print)", kParseUsage, cmd_parse},
      {"run", "run a model on given or generated inputs and summarize the outputs", kRunUsage, cmd_run},
      {"bench", "time session creation and runs of a model; peak memory", kBenchUsage, cmd_bench},
      {"bench-models", "write the benchmark models (BERT-base, MobileNetV2, GPT-2 blocks, LSTM)", kBenchModelsUsage,
       cmd_bench_models},
      {"demo", "write the built-in demo model, check it and show it", kDemoUsage, cmd_demo},
      {"test-onnx", "run ONNX backend conformance tests", kTestOnnxUsage, cmd_test_onnx},
      {"profile", "run a model timing every node: a table per op type and a Chrome trace", kProfileUsage, cmd_profile},
      {"graph", "draw a model's graph with Graphviz (SVG, PNG or DOT)", kGraphUsage, cmd_graph},
      {"ops", "list the operators onyx implements, with versions and element types", kOpsUsage, cmd_ops},
#ifdef ONYX_HAVE_SERVE
      {"serve", "serve models over HTTP and gRPC (KServe v2 / Triton protocol)", kServeUsage, cmd_serve},
#endif
  };
  return list;
}

}  // namespace onyx::cli

namespace {

void print_main_help() {
  std::cout << "usage: onyx COMMAND [ARGS]   (onyx COMMAND --help for details)\n\ncommands:\n";
  for (const auto& c : onyx::cli::commands()) std::printf("  %-12s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_main_help();
    return argc < 2 ? 2 : 0;
  }
  std::vector<std::string> rest(argv + 2, argv + argc);
  for (const auto& c : onyx::cli::commands()) {
    if (c.name != std::string(argv[1])) continue;
    try {
      return c.run(rest);
    } catch (const onyx::Error& e) {
      std::cerr << "onyx " << c.name << ": error: " << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "onyx " << c.name << ": error: " << e.what() << "\n";
      return 1;
    }
  }
  std::cerr << "onyx: unknown command '" << argv[1] << "' (see onyx --help)\n";
  return 2;
}
