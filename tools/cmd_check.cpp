// onyx check MODEL: structural checks; one line per problem and exit 1 if any.
#include <iostream>

#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "cli.hpp"
#include "format/onnx_proto.hpp"
#include "ir/model.hpp"
#include "onyx/session.hpp"
#include "format/model_read.hpp"

namespace onyx::cli {

const char* const kCheckUsage =
    "usage: onyx check MODEL\n"
    "\n"
    "Checks the model's structure: IR version and opset imports, operator versions, single assignment of every\n"
    "value, inputs defined before use (topological order, cycles), attributes, tensor data sizes and external\n"
    "data references; then binds each node to its operator version and infers types and shapes (so an\n"
    "unsupported operator version or an inference error is reported too). Prints 'MODEL: ok' or one line per\n"
    "problem (exit status 1).\n";

int cmd_check(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  if (print_help_if_asked(args, kCheckUsage)) return 0;
  expect_positional(args, 1, 1, kCheckUsage);
  pb::ModelDocument doc = pb::load_model_file(args.positional()[0]);
  std::vector<std::string> problems = check::check_model(doc);
  for (const auto& p : problems) std::cerr << p << "\n";
  if (!problems.empty()) return 1;
  {
    // Sessions accept some models that break the spec as ONNX Runtime does (check/runtime_ops.hpp); those the
    // checker does not see are reported here, before the session below would accept them.
    pb::ModelDocument lenient = doc;
    problems = check::accept_runtime_models(lenient, 4).spec_problems;
    for (const auto& p : problems) std::cerr << p << "\n";
    if (!problems.empty()) return 1;
  }
  build_model(doc);  // building the IR resolves every tensor, so its errors are reported here too
  // Binding every node to its operator version and inferring types and shapes reports what would fail at load.
  Session::from_file(args.positional()[0]);
  std::cout << doc.label << ": ok\n";
  return 0;
}

}  // namespace onyx::cli
