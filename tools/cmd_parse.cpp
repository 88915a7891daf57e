// onyx parse MODEL.txt OUT.onnx: the ONNX textual syntax back into a model (the inverse of `onyx print`).
#include <iostream>
#include <iterator>

#include "cli.hpp"
#include "format/text_parser.hpp"
#include "onyx/parse.hpp"

namespace onyx::cli {

const char* const kParseUsage =
    "usage: onyx parse MODEL.txt OUT.onnx\n"
    "\n"
    "Reads a model in the ONNX textual syntax (as `onyx print` and onnx.printer.to_text write it, or as\n"
    "onnx.parser.parse_model reads it) and writes it as OUT.onnx. MODEL.txt may be '-' for standard input.\n"
    "Errors name the line and column: MODEL.txt:12:7: expected ')' after ...\n"
    "The text does not carry doc strings (other than the model's), metadata other than the model's, denotations,\n"
    "sparse initializers or whether tensor values were raw_data; see the README.\n";

int cmd_parse(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  if (print_help_if_asked(args, kParseUsage)) return 0;
  expect_positional(args, 2, 2, kParseUsage);
  const std::string& in = args.positional()[0];
  if (in == "-") {
    std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    const pb::ModelDocument doc = pb::parse_model_text(text, "<stdin>");
    pb::write_model_file(doc.model, args.positional()[1]);
  } else {
    parse_model_text_file(in, args.positional()[1]);
  }
  return 0;
}

}  // namespace onyx::cli
