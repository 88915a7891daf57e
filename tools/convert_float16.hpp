// `onyx convert --float16`: the options it adds to `onyx convert`, read here so cmd_convert.cpp only hooks them in.
#pragma once
#include <string>
#include <vector>

#include "cli.hpp"

namespace onyx::cli {

// `valued` / `flags` with the options of `onyx convert` this file reads added.
std::vector<std::string> with_float16_valued(std::vector<std::string> valued);
std::vector<std::string> with_float16_flags(std::vector<std::string> flags);

// Their lines for convert's usage text (a literal, to join convert's own).
#define ONYX_FLOAT16_USAGE \
  "  --float16                        convert float32 tensors, initializers and Constants to float16 (values\n" \
  "                                   clamped into float16's range); ops in the block list and ops onyx has no\n" \
  "                                   float16 kernel for stay float32 between Casts\n" \
  "  --keep-io-types                  with --float16: graph inputs and outputs stay float32 (Casts inside)\n" \
  "  --op-block-list A,B              with --float16: op types kept float32 (replaces the default list: the\n" \
  "                                   ai.onnx.ml ops, NonMaxSuppression, TopK, RoiAlign, Resize, Upsample, Range,\n" \
  "                                   CumSum, Min, Max, RandomUniformLike; '' for none)\n" \
  "  --node-block-list n1,n2          with --float16: node names kept float32\n" \
  "  --min-positive-val V             with --float16: non-zero magnitudes below V become V (default 1e-7)\n" \
  "  --max-finite-val V               with --float16: finite magnitudes above V become V (default 1e4)\n"

// With --float16: converts `doc` to float16 in place (reading the other options) and prints what changed; else
// refuses the float16-only options. Throws onyx::Error naming the model, node and value on failure.
void convert_float16_from_args(const Args& args, pb::ModelDocument& doc);

}  // namespace onyx::cli
