// The model tools (include/onyx/model_tools.hpp): shape inference written into the model, its comparison with
// another inference, extraction and composition. tests/python/test_model_tools.py compares them with onnx's.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "onyx/model_tools.hpp"
#include "opt_test_util.hpp"

namespace onyx::testing {
namespace {

// X[N,3] -> Relu -> r -> Neg -> Y;  X2[N,4] @ W -> m -> Add(B) -> Z
std::string mt_tools_model() {
  return GraphSpec(17)
      .input("X", DataType::Float, {-1, 3})
      .input("X2", DataType::Float, {-1, 4})
      .floats("W", {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})
      .floats("B", {2}, {1, -1})
      .node("Relu", {"X"}, {"r"})
      .node("Neg", {"r"}, {"Y"})
      .node("MatMul", {"X2", "W"}, {"m"})
      .node("Add", {"m", "B"}, {"Z"})
      .output("Y", DataType::Float, {-1, 3})
      .output("Z")
      .bytes();
}

const pb::ValueInfo* mt_find_vi(const std::vector<pb::ValueInfo>& list, std::string_view name) {
  for (const pb::ValueInfo& vi : list)
    if (vi.name == name) return &vi;
  return nullptr;
}

std::string mt_shape_text(const pb::ValueInfo& vi) {
  return type_from_proto(*vi.type).to_string_with_shape();
}

TEST(ModelTools, InferShapesAddsValueInfoAndKeepsTheRest) {
  pb::ModelDocument doc = pb::load_model_bytes(mt_tools_model(), "tools.onnx");
  const std::vector<pb::Node> before = doc.model.graph->node;
  opt::InferShapesReport r = opt::infer_shapes(doc);
  EXPECT_EQ(r.added, 2u);    // r, m
  EXPECT_EQ(r.refined, 1u);  // Z had no type
  const pb::Graph& g = *doc.model.graph;
  ASSERT_NE(mt_find_vi(g.value_info, "r"), nullptr);
  EXPECT_EQ(mt_shape_text(*mt_find_vi(g.value_info, "r")), "float[N,3]");
  EXPECT_EQ(mt_shape_text(*mt_find_vi(g.value_info, "m")), "float[N,2]");
  EXPECT_EQ(mt_shape_text(*mt_find_vi(g.output, "Z")), "float[N,2]");
  ASSERT_EQ(g.node.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(g.node[i].op_type, before[i].op_type);
  // Written and read back, the model passes the checker.
  pb::ModelDocument back = pb::load_model_bytes(pb::serialize_model(doc.model), "back.onnx");
  EXPECT_NO_THROW(check::check_model_or_throw(back));
}

TEST(ModelTools, CheckInferredShapesTalliesAgreementAndDisagreement) {
  pb::ModelDocument doc = pb::load_model_bytes(mt_tools_model(), "tools.onnx");
  opt::infer_shapes(doc);
  pb::ModelDocument ref = pb::load_model_bytes(pb::serialize_model(doc.model), "ref.onnx");
  opt::ShapeTally t = opt::check_inferred_shapes(ref);
  EXPECT_EQ(t.agree, 2u);
  EXPECT_EQ(t.disagree, 0u);
  // A reference that says m is [N,5]: a disagreement named by value.
  for (pb::ValueInfo& vi : ref.model.graph->value_info)
    if (vi.name == "m") vi.type->tensor_type->shape->dim[1].dim_value = 5;
  t = opt::check_inferred_shapes(ref);
  EXPECT_EQ(t.disagree, 1u);
  ASSERT_EQ(t.disagreements.size(), 1u);
  EXPECT_NE(t.disagreements[0].find("m: reference float[N,5], onyx float[N,2]"), std::string::npos)
      << t.disagreements[0];
  // A reference without a dim onyx knows: onyx knows more.
  for (pb::ValueInfo& vi : ref.model.graph->value_info)
    if (vi.name == "m") vi.type->tensor_type->shape->dim[1].dim_value.reset();
  t = opt::check_inferred_shapes(ref);
  EXPECT_EQ(t.onyx_more, 1u);
}

TEST(ModelTools, ExtractKeepsWhatTheOutputsNeed) {
  pb::ModelDocument doc = pb::load_model_bytes(mt_tools_model(), "tools.onnx");
  pb::ModelDocument part = opt::extract_model(doc, {"X2"}, {"Z"});
  const pb::Graph& g = *part.model.graph;
  ASSERT_EQ(g.node.size(), 2u);
  EXPECT_EQ(g.node[0].op_type, "MatMul");
  EXPECT_EQ(g.initializer.size(), 2u);
  ASSERT_EQ(g.output.size(), 1u);
  EXPECT_EQ(mt_shape_text(g.output[0]), "float[N,2]");
  // An intermediate value as input, its type from inference.
  part = opt::extract_model(doc, {"r"}, {"Y"});
  ASSERT_EQ(part.model.graph->input.size(), 1u);
  EXPECT_EQ(mt_shape_text(part.model.graph->input[0]), "float[N,3]");
  try {
    opt::extract_model(doc, {"X2"}, {"Y"});
    FAIL() << "extracting Y without X";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output 'Y' cannot be computed from the inputs 'X2': it needs graph input 'X'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(opt::extract_model(doc, {"X"}, {"nope"}), Error);
}

TEST(ModelTools, MergeConnectsAndPrefixes) {
  pb::ModelDocument a = pb::load_model_bytes(mt_tools_model(), "a.onnx");
  std::string b_bytes = GraphSpec(17)
                            .input("in", DataType::Float, {-1, 2})
                            .node("Relu", {"in"}, {"r"})
                            .output("r", DataType::Float, {-1, 2})
                            .bytes();
  pb::ModelDocument b = pb::load_model_bytes(b_bytes, "b.onnx");
  try {
    opt::merge_models(a, b, {{"Z", "in"}});
    FAIL() << "both models use 'r'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("both use the names 'r'"), std::string::npos) << e.what();
  }
  pb::ModelDocument m = opt::merge_models(a, b, {{"Z", "in"}}, {"", "b_"});
  const pb::Graph& g = *m.model.graph;
  ASSERT_EQ(g.node.size(), 5u);
  EXPECT_EQ(g.node[4].input[0], "Z");  // b's input reads a's output
  EXPECT_EQ(g.node[4].output[0], "b_r");
  ASSERT_EQ(g.input.size(), 2u);
  ASSERT_EQ(g.output.size(), 2u);
  EXPECT_EQ(g.output[0].name, "Y");
  EXPECT_EQ(g.output[1].name, "b_r");
  EXPECT_THROW(opt::merge_models(a, b, {{"Y", "in"}}, {"", "b_"}), Error);  // [N,3] into [N,2]
  EXPECT_THROW(opt::merge_models(a, b, {{"Z", "nope"}}, {"", "b_"}), Error);
}

}  // namespace
}  // namespace onyx::testing
