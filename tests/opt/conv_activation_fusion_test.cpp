// Conv + activation -> ai.onyx FusedConv, for each activation it takes.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

struct Case {
  const char* op;
  std::vector<Attr> attrs;
};

TEST(ConvActivationFusion, FusesEachActivation) {
  const std::vector<Case> cases = {
      {"Relu", {}},
      {"Sigmoid", {}},
      {"Tanh", {}},
      {"LeakyRelu", {{"alpha", 0.2f}}},
      {"HardSigmoid", {{"alpha", 0.3f}, {"beta", 0.4f}}},
      {"Elu", {}},
      {"HardSwish", {}},
  };
  for (const Case& c : cases) {
    GraphSpec g(17);
    g.input("x", DataType::Float, {1, 2, 4, 4}).random("w", {3, 2, 3, 3}).random("b", {3});
    g.node("Conv", {"x", "w", "b"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 1}}})
        .node(c.op, {"c"}, {"y"}, c.attrs)
        .output("y");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 2);
    ASSERT_EQ(op_list(m), V{"ai.onyx.FusedConv"}) << c.op;
    EXPECT_EQ(m.graph->nodes[0]->attribute("activation")->s, c.op);
    EXPECT_EQ(m.opset("ai.onyx"), 1);
    expect_same_outputs(g.bytes());
    expect_idempotent(g.bytes(), 2);
  }
}

TEST(ConvActivationFusion, ClipBoundsFromInputsOrAttributes) {
  GraphSpec g13(13);
  g13.input("x", DataType::Float, {1, 2, 4, 4}).random("w", {3, 2, 1, 1}, -3, 3).floats("lo", {}, {-0.5f}).floats("hi", {}, {0.75f});
  g13.node("Conv", {"x", "w"}, {"c"}).node("Clip", {"c", "lo", "hi"}, {"y"}).output("y");
  Model m = load_ir(g13.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), V{"ai.onyx.FusedConv"});
  EXPECT_EQ(m.graph->nodes[0]->attribute("activation_params")->floats, (std::vector<float>{-0.5f, 0.75f}));
  expect_same_outputs(g13.bytes());

  GraphSpec g6(6);
  g6.input("x", DataType::Float, {1, 2, 4, 4}).random("w", {3, 2, 1, 1}, -3, 3);
  g6.node("Conv", {"x", "w"}, {"c"}).node("Clip", {"c"}, {"y"}, {{"max", 0.5f}}).output("y");
  expect_same_outputs(g6.bytes());
  expect_idempotent(g6.bytes(), 2);
}

TEST(ConvActivationFusion, LeavesSharedResultsAndVariableBounds) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 2, 4, 4}).input("hi", DataType::Float, {}).random("w", {3, 2, 1, 1});
  g.node("Conv", {"x", "w"}, {"c"})
      .node("Relu", {"c"}, {"y"})
      .node("Neg", {"c"}, {"z"})
      .node("Conv", {"x", "w"}, {"c2"})
      .node("Clip", {"c2", "", "hi"}, {"t"})
      .output("y")
      .output("z")
      .output("t");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"Conv", "Relu", "Neg", "Conv", "Clip"}));
}

TEST(ConvActivationFusion, ConvBatchNormReluBecomesOneNode) {
  GraphSpec g(15);
  g.input("x", DataType::Float, {2, 3, 6, 6}).random("w", {4, 3, 3, 3});
  g.random("scale", {4}, 0.5f, 1.5f).random("bias", {4}).random("mean", {4}).random("var", {4}, 0.1f, 2.0f);
  g.node("Conv", {"x", "w"}, {"c"})
      .node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"bn"})
      .node("Relu", {"bn"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), V{"ai.onyx.FusedConv"});
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 2);
}

}  // namespace
}  // namespace onyx
