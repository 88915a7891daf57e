// onyx print MODEL: the ONNX textual syntax.
#include <iostream>

#include "cli.hpp"
#include "format/onnx_proto.hpp"
#include "format/text_printer.hpp"

namespace onyx::cli {

const char* const kPrintUsage =
    "usage: onyx print MODEL\n"
    "\n"
    "Prints the model in the ONNX textual syntax, as onnx's printer writes it.\n";

int cmd_print(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  if (print_help_if_asked(args, kPrintUsage)) return 0;
  expect_positional(args, 1, 1, kPrintUsage);
  pb::ModelDocument doc = pb::load_model_file(args.positional()[0]);
  std::cout << pb::to_text(doc.model) << "\n";
  return 0;
}

}  // namespace onyx::cli
