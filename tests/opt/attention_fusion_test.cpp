// Scaled dot-product attention -> Attention (standard from opset 23, ai.onyx below).
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

// Q [2, 3, 4, 5], K, V [2, 3, 6, 5]; scale by Mul or Div; optional mask of `mask_dims`.
std::string attention_model(int64_t opset, const char* scale_op, std::vector<int64_t> mask_dims) {
  GraphSpec g(opset);
  g.input("q", DataType::Float, {2, 3, 4, 5}).input("k", DataType::Float, {2, 3, 6, 5}).input("v", DataType::Float, {2, 3, 6, 5});
  g.node("Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}).node("MatMul", {"q", "kt"}, {"qk"});
  std::string scores = "qk";
  if (std::string(scale_op) == "Mul") {
    g.floats("s", {}, {0.25f}).node("Mul", {"qk", "s"}, {"scaled"});
    scores = "scaled";
  } else if (std::string(scale_op) == "Div") {
    g.floats("s", {}, {2.0f}).node("Div", {"qk", "s"}, {"scaled"});
    scores = "scaled";
  }
  if (!mask_dims.empty()) {
    g.random("mask", mask_dims, -3, 0).node("Add", {"mask", scores}, {"masked"});
    scores = "masked";
  }
  g.node("Softmax", {scores}, {"p"}, opset < 13 ? std::vector<Attr>{{"axis", 3}} : std::vector<Attr>{})
      .node("MatMul", {"p", "v"}, {"y"})
      .output("y");
  return g.bytes();
}

TEST(AttentionFusion, MatchesScaleAndMaskVariants) {
  for (const char* scale : {"Mul", "Div", ""})
    for (auto mask : {std::vector<int64_t>{}, {2, 1, 4, 6}, {4, 6}}) {
      std::string bytes = attention_model(17, scale, mask);
      Model m = load_ir(bytes);
      optimize_ir(m, 2);
      ASSERT_EQ(op_list(m), V{"ai.onyx.Attention"}) << "scale '" << scale << "'";
      const Node& att = *m.graph->nodes[0];
      EXPECT_EQ(att.inputs.size(), mask.empty() ? 3u : 4u);
      EXPECT_FLOAT_EQ(att.attribute("scale")->f, std::string(scale) == "Mul" ? 0.25f : std::string(scale) == "Div" ? 0.5f : 1.0f);
      expect_same_outputs(bytes);
      expect_idempotent(bytes, 2);
    }
}

TEST(AttentionFusion, StandardFromOpset23AndOldSoftmax) {
  std::string bytes = attention_model(23, "Mul", {2, 1, 4, 6});
  Model m = load_ir(bytes);
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), V{"Attention"});
  expect_same_outputs(bytes);

  std::string old = attention_model(11, "Div", {});
  Model m11 = load_ir(old);
  optimize_ir(m11, 2);
  EXPECT_EQ(op_list(m11), V{"ai.onyx.Attention"});
  expect_same_outputs(old);
}

TEST(AttentionFusion, LeavesBroadcastMasksAndOtherAxes) {
  Model m = load_ir(attention_model(17, "Mul", {2, 1, 4, 1}));  // Attention would pad, not broadcast, this mask
  optimize_ir(m, 2);
  EXPECT_EQ(m.graph->nodes.size(), 6u);

  GraphSpec g(17);
  g.input("q", DataType::Float, {2, 3, 4, 5}).input("k", DataType::Float, {2, 3, 6, 5}).input("v", DataType::Float, {2, 3, 6, 5});
  g.node("Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})
      .node("MatMul", {"q", "kt"}, {"qk"})
      .node("Softmax", {"qk"}, {"p"}, {{"axis", 2}})
      .node("MatMul", {"p", "v"}, {"y"})
      .output("y");
  Model m2 = load_ir(g.bytes());
  optimize_ir(m2, 2);
  EXPECT_EQ(m2.graph->nodes.size(), 4u);
}

// K's transpose straight from the heads' split: Transpose(K' [b, s, h, d], perm [0, 2, 3, 1]) becomes K =
// Transpose(K', [0, 2, 1, 3]) read by the Attention.
TEST(AttentionFusion, KeyTransposedFromTheHeadsSplit) {
  GraphSpec g(17);
  g.input("q", DataType::Float, {2, 3, 4, 5}).input("k", DataType::Float, {2, 6, 3, 5}).input("v", DataType::Float, {2, 3, 6, 5});
  g.random("mask", {2, 1, 1, 6}, -3, 0).floats("s", {}, {2.0f});
  g.node("Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})
      .node("MatMul", {"q", "kt"}, {"qk"})
      .node("Div", {"qk", "s"}, {"scaled"})
      .node("Add", {"scaled", "mask"}, {"masked"})
      .node("Softmax", {"masked"}, {"p"})
      .node("MatMul", {"p", "v"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), (V{"Transpose", "ai.onyx.Attention"}));
  EXPECT_EQ(*opt::attr_ints(*m.graph->nodes[0], "perm"), (std::vector<int64_t>{0, 2, 1, 3}));
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 2);
}

// GPT-2's causal mask: Where(constant bool mask, scores, -10000) becomes an additive float mask of the Attention.
// A Where with a fill that is not far below the scores stays.
TEST(AttentionFusion, CausalWhereBecomesAnAdditiveMask) {
  for (float fill : {-10000.0f, -5.0f}) {
    GraphSpec g(17);
    g.input("q", DataType::Float, {1, 2, 4, 5}).input("k", DataType::Float, {1, 2, 4, 5}).input("v", DataType::Float, {1, 2, 4, 5});
    std::vector<uint8_t> causal(16);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) causal[static_cast<size_t>(i * 4 + j)] = j <= i;
    g.init("causal", DataType::Bool, {1, 1, 4, 4}, causal).floats("fill", {}, {fill}).floats("s", {}, {2.0f});
    g.node("Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})
        .node("MatMul", {"q", "kt"}, {"qk"})
        .node("Div", {"qk", "s"}, {"scaled"})
        .node("Where", {"causal", "scaled", "fill"}, {"masked"})
        .node("Softmax", {"masked"}, {"p"})
        .node("MatMul", {"p", "v"}, {"y"})
        .output("y");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 2);
    if (fill < -1e4f + 1) {
      ASSERT_EQ(op_list(m), V{"ai.onyx.Attention"});
      EXPECT_EQ(m.graph->nodes[0]->inputs.size(), 4u);
    } else {
      EXPECT_EQ(op_list(m), (V{"Transpose", "MatMul", "Div", "Where", "Softmax", "MatMul"}));
    }
    expect_same_outputs(g.bytes());
    expect_idempotent(g.bytes(), 2);
  }
}

}  // namespace
}  // namespace onyx
