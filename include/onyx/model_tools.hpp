// The model tools of onnx's own toolkit, on onyx's engine: shape inference written into the model
// (onnx.shape_inference.infer_shapes), extraction of a sub-model (onnx.utils.extract_model) and composition of two
// models (onnx.compose.merge_models). Each works on the decoded protobuf messages, so what it does not touch
// (doc strings, metadata, unknown fields, external data references) is written back as it was read.
// Entry points for `onyx infer`, `onyx extract`, `onyx merge` and the Python package.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "format/onnx_proto.hpp"
#include "format/save.hpp"

namespace onyx::opt {

// ---- Shape inference output (src/opt/infer_output.cpp) ----

struct InferShapesReport {
  size_t added = 0;    // value_info entries written for values the model did not declare
  size_t refined = 0;  // declared types (value_info, graph outputs) completed with what inference found
  size_t unknown = 0;  // node outputs inference gave no type (left as they were)
};

// Adds to `doc` the types and shapes onyx infers (symbolic dims as dim_param) for every node output of the main
// graph and of its subgraphs: a value_info entry where the model declares none, and declared types (value_info,
// graph outputs) completed where inference knows more. Nothing else changes. The model must pass the checker;
// nodes whose inference fails (an invalid model, an op onyx lacks, a model-local function call) keep their outputs
// as declared. Throws onyx::Error naming the model and the problem.
InferShapesReport infer_shapes(pb::ModelDocument& doc);
// The same from file `in` to file `out` (tensor data stays inline or external as it was).
InferShapesReport infer_shapes_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                    const SaveOptions& save = {});

// Value by value, how two inferences agree: the types `reference` declares (e.g. written by
// onnx.shape_inference) against those onyx infers for the same model.
struct ShapeTally {
  size_t agree = 0;           // the same type (symbol names aside: any symbol matches any symbol)
  size_t onyx_more = 0;       // onyx knows more (an element type, rank or dim the reference leaves unknown)
  size_t reference_more = 0;  // the reference knows more
  size_t mixed = 0;           // each knows something the other does not
  size_t disagree = 0;        // both know an element type, rank or dim, and they differ
  std::vector<std::string> disagreements;    // "graph path/value: reference T, onyx T"
  std::vector<std::string> reference_extra;  // the values where the reference knows more (or mixed)
  ShapeTally& operator+=(const ShapeTally& o);
  // "agree 10, onyx more 2, reference more 1, mixed 0, disagree 0"
  std::string summary() const;
};

// Compares the types `reference` declares in value_info (and, with `outputs_too`, the main graph's outputs)
// with what onyx infers for the same model stripped of its value_info entries (and of the main graph outputs'
// shapes, with `outputs_too`: the reference then shows what its own inference gave them).
ShapeTally check_inferred_shapes(const pb::ModelDocument& reference, bool outputs_too = false);

// ---- Extraction (src/opt/extract_merge.cpp) ----

// The sub-model of `doc`'s main graph computing `outputs` from `inputs` (value names of the main graph), as
// onnx.utils.extract_model: the nodes needed in their order, the initializers and value_info they use, the new
// inputs and outputs typed by inference. Everything else of the model (opsets, functions, metadata) is kept.
// Throws naming the value when a name is not a value of the main graph, or when an output needs a graph input
// that is not among `inputs`.
pb::ModelDocument extract_model(const pb::ModelDocument& doc, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs);
void extract_model_file(const std::filesystem::path& in, const std::filesystem::path& out,
                        const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                        const SaveOptions& save = {});

// ---- Composition (src/opt/extract_merge.cpp) ----

struct MergeOptions {
  std::string prefix1, prefix2;  // put before every name of the first / second model (empty: none)
};

// One model computing `b` on the outputs of `a`, as onnx.compose.merge_models: `io_map` pairs an output of `a`
// with the input of `b` it feeds (names before prefixing). The merged graph has `a`'s nodes then `b`'s, `a`'s
// inputs then `b`'s unconnected ones, `a`'s unconnected outputs then `b`'s outputs. Throws naming the problem:
// a domain imported at two opset versions, names used by both (use the prefixes), an io_map name that is not an
// output of `a` / input of `b`, element types that differ across a connection, metadata with two values, a
// model-local function defined by both. The IR version is the higher of the two.
pb::ModelDocument merge_models(const pb::ModelDocument& a, const pb::ModelDocument& b,
                               const std::vector<std::pair<std::string, std::string>>& io_map,
                               const MergeOptions& options = {});
void merge_model_files(const std::filesystem::path& a, const std::filesystem::path& b,
                       const std::filesystem::path& out,
                       const std::vector<std::pair<std::string, std::string>>& io_map,
                       const MergeOptions& options = {}, const SaveOptions& save = {});

}  // namespace onyx::opt
