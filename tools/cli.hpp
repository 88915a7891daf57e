// Shared pieces of the `onyx` command line: argument parsing and the command table.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"

namespace onyx::cli {

// Parsed arguments of one command: positional values and --options (with or without values).
class Args {
 public:
  // `valued` lists the options that take a value; every other --option is a flag.
  Args(const std::vector<std::string>& argv, const std::vector<std::string>& valued, const std::vector<std::string>& flags);
  const std::vector<std::string>& positional() const { return positional_; }
  bool flag(const std::string& name) const;
  std::optional<std::string> value(const std::string& name) const;
  std::vector<std::string> values(const std::string& name) const;
  bool help() const { return help_; }

 private:
  std::vector<std::string> positional_;
  std::vector<std::pair<std::string, std::string>> options_;
  bool help_ = false;
};

struct Command {
  const char* name;
  const char* summary;
  const char* usage;  // full --help text
  std::function<int(const std::vector<std::string>&)> run;
};

const std::vector<Command>& commands();

// The built-in demo model (written by `onyx demo`).
pb::ModelDocument make_demo_model();

// Prints `usage` when --help was given and returns true; the caller then exits 0.
bool print_help_if_asked(const Args& args, const char* usage);
// Throws an onyx::Error with "usage: ..." when the number of positional arguments is outside [lo, hi].
void expect_positional(const Args& args, size_t lo, size_t hi, const char* usage);

int cmd_info(const std::vector<std::string>& argv);
int cmd_check(const std::vector<std::string>& argv);
int cmd_convert(const std::vector<std::string>& argv);
int cmd_print(const std::vector<std::string>& argv);
int cmd_parse(const std::vector<std::string>& argv);
int cmd_demo(const std::vector<std::string>& argv);
int cmd_test_onnx(const std::vector<std::string>& argv);
int cmd_run(const std::vector<std::string>& argv);
int cmd_profile(const std::vector<std::string>& argv);
int cmd_graph(const std::vector<std::string>& argv);
int cmd_ops(const std::vector<std::string>& argv);
int cmd_bench(const std::vector<std::string>& argv);
int cmd_bench_models(const std::vector<std::string>& argv);
int cmd_optimize(const std::vector<std::string>& argv);
int cmd_quantize(const std::vector<std::string>& argv);
int cmd_infer(const std::vector<std::string>& argv), cmd_extract(const std::vector<std::string>& argv), cmd_merge(const std::vector<std::string>& argv); extern const char* const kInferUsage, * const kExtractUsage, * const kMergeUsage;  // cmd_model_tools.cpp
int cmd_serve(const std::vector<std::string>& argv);  // serve/cmd_serve.cpp, in builds with ONYX_SERVE

extern const char* const kInfoUsage;
extern const char* const kCheckUsage;
extern const char* const kConvertUsage;
extern const char* const kPrintUsage;
extern const char* const kParseUsage;
extern const char* const kDemoUsage;
extern const char* const kTestOnnxUsage;
extern const char* const kRunUsage;
extern const char* const kProfileUsage;
extern const char* const kGraphUsage;
extern const char* const kOpsUsage;
extern const char* const kBenchUsage;
extern const char* const kBenchModelsUsage;
extern const char* const kOptimizeUsage;
extern const char* const kQuantizeUsage;
extern const char* const kServeUsage;

}  // namespace onyx::cli
