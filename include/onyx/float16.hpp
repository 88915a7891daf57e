// Converting a float32 model to float16, as onnxconverter-common's convert_float_to_float16 does: float32
// initializers, Constant values and tensor types become float16 (values clamped into float16's range); ops that
// must not or cannot compute in float16 stay float32 between Cast nodes. The entry point for `onyx convert
// --float16` and for the Python binding onyx.convert_float_to_float16.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "format/onnx_proto.hpp"
#include "ir/model.hpp"

namespace onyx::opt {

struct Float16Options {
  // Graph inputs and outputs stay float32; Casts to and from float16 go inside the graph.
  bool keep_io_types = false;
  // Op types (any domain) that stay float32. nullopt: default_float16_op_block_list(). Ops whose onyx kernels
  // take no float16 for a float input are blocked in any case, as are calls of model-local functions.
  std::optional<std::vector<std::string>> op_block_list;
  // Node names that stay float32.
  std::vector<std::string> node_block_list;
  // Non-zero magnitudes below min_positive_val become ±min_positive_val, finite ones above max_finite_val become
  // ±max_finite_val (float16 holds 5.96e-8 to 65504; infinities and NaN stay).
  float min_positive_val = 1e-7f;
  float max_finite_val = 1e4f;
};

struct Float16Report {
  uint64_t tensors_converted = 0;  // initializers and tensor attributes (Constant values...)
  uint64_t float32_bytes = 0;      // their bytes before
  uint64_t float16_bytes = 0;      // and after
  uint64_t clamped_small = 0;      // values raised to ±min_positive_val
  uint64_t clamped_large = 0;      // values lowered to ±max_finite_val
  uint64_t casts_inserted = 0;
  std::map<std::string, uint64_t> blocked_ops;  // op type -> nodes kept float32
};

// The op types onnxconverter-common keeps float32 by default (ai.onnx.ml ops, index-like or sort-like ops whose
// float16 results would change: Range, TopK, NonMaxSuppression, Resize, CumSum, Min, Max, ...).
const std::vector<std::string>& default_float16_op_block_list();

// Converts `model` (built from a checked document) in place. Subgraphs (If/Loop/Scan bodies) are converted with
// their nodes; a node with subgraphs cannot be kept float32 (an error naming it). Throws onyx::Error naming the
// model, node and value on what cannot be converted.
Float16Report convert_float_to_float16(Model& model, const Float16Options& options = {});

// Checks `doc`, converts it and returns the serialized float16 model (checked again; tensor data inline).
std::string convert_float_to_float16(const pb::ModelDocument& doc, const Float16Options& options,
                                     Float16Report* report = nullptr);

}  // namespace onyx::opt
