// Reading the ONNX textual syntax (what `onyx print` and onnx.printer.to_text write, docs/Syntax.md of
// onnx/onnx) into an ONNX model: the entry point for `onyx parse` and for bindings.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace onyx {

// The model the text describes, as serialized ModelProto bytes. `source_name` names the text in error messages,
// which are onyx::Error "SOURCE:LINE:COLUMN: ...". See src/format/text_parser.hpp for what the text cannot carry.
std::string parse_model_text(std::string_view text, std::string_view source_name = "<text>");

// Reads the text file `text_path` and writes the model to `model_path`.
void parse_model_text_file(const std::filesystem::path& text_path, const std::filesystem::path& model_path);

}  // namespace onyx
