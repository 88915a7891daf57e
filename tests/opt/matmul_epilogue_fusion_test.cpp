// MatMul + bias + residual + activation -> ai.onyx FusedMatMul, in the forms transformer exporters write.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

TEST(MatMulEpilogueFusion, BiasAndGelu) {
  GraphSpec g(20);
  g.input("x", DataType::Float, {2, 5, 8}).random("w", {8, 6}).random("b", {6});
  g.node("MatMul", {"x", "w"}, {"p"}).node("Add", {"p", "b"}, {"q"}).node("Gelu", {"q"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), V{"ai.onyx.FusedMatMul"});
  EXPECT_EQ(m.graph->nodes[0]->inputs.size(), 3u);
  EXPECT_EQ(m.graph->nodes[0]->attribute("activation")->s, "Gelu");
  EXPECT_EQ(m.opset("ai.onyx"), 1);
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 2);
}

TEST(MatMulEpilogueFusion, BiasThenResidualSumWithTheResidualFirst) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {1, 4, 8}).input("r", DataType::Float, {1, 4, 6}).random("w", {8, 6}).random("b", {6});
  g.node("MatMul", {"x", "w"}, {"p"}).node("Add", {"p", "b"}, {"q"}).node("Add", {"r", "q"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), V{"ai.onyx.FusedMatMul"});
  const Node& f = *m.graph->nodes[0];
  ASSERT_EQ(f.inputs.size(), 4u);
  EXPECT_EQ(f.inputs[2]->name, "b");
  EXPECT_EQ(f.inputs[3]->name, "r");
  EXPECT_EQ(f.attribute("activation"), nullptr);
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 2);
}

TEST(MatMulEpilogueFusion, ResidualAndReluWithoutBias) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {3, 8}).input("r", DataType::Float, {3, 6}).random("w", {8, 6});
  g.node("MatMul", {"x", "w"}, {"p"}).node("Sum", {"p", "r"}, {"q"}).node("Relu", {"q"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), V{"ai.onyx.FusedMatMul"});
  const Node& f = *m.graph->nodes[0];
  ASSERT_EQ(f.inputs.size(), 4u);
  EXPECT_EQ(f.inputs[2], nullptr);
  EXPECT_EQ(f.attribute("activation")->s, "Relu");
  expect_same_outputs(g.bytes());
}

// Below opset 20 gelu-fusion makes ai.onyx's Gelu of the erf form; it fuses like the standard one.
TEST(MatMulEpilogueFusion, ExportedErfGeluBelowOpset20) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3, 8}).random("w", {8, 6}).random("b", {6});
  g.floats("sqrt2", {}, {1.4142135f}).floats("one", {}, {1.0f}).floats("half", {}, {0.5f});
  g.node("MatMul", {"x", "w"}, {"p"})
      .node("Add", {"p", "b"}, {"q"})
      .node("Div", {"q", "sqrt2"}, {"d"})
      .node("Erf", {"d"}, {"e"})
      .node("Add", {"e", "one"}, {"e1"})
      .node("Mul", {"q", "e1"}, {"m"})
      .node("Mul", {"m", "half"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), V{"ai.onyx.FusedMatMul"});
  EXPECT_EQ(m.graph->nodes[0]->attribute("activation")->s, "Gelu");
  expect_same_outputs(g.bytes());
}

TEST(MatMulEpilogueFusion, LeavesWhatItCannotApply) {
  GraphSpec g(20);
  g.input("x", DataType::Float, {2, 4, 8}).input("wv", DataType::Float, {8, 6}).random("w", {8, 6});
  g.random("b", {6}).random("row", {1, 6}).input("rb", DataType::Float, {4, 6});
  g.node("MatMul", {"x", "w"}, {"p1"})  // the tanh Gelu is another function: only the bias fuses
      .node("Add", {"p1", "b"}, {"q1"})
      .node("Gelu", {"q1"}, {"y1"}, {{"approximate", "tanh"}})
      .node("MatMul", {"x", "wv"}, {"p2"})  // B is not a constant
      .node("Add", {"p2", "b"}, {"y2"})
      .node("MatMul", {"x", "w"}, {"p3"})  // a [1, N] constant and a Z that broadcasts: neither fuses
      .node("Add", {"p3", "row"}, {"q3"})
      .node("Add", {"q3", "rb"}, {"y3"})
      .node("MatMul", {"x", "w"}, {"p4"})  // the product is also an output
      .node("Relu", {"p4"}, {"y4"})
      .output("y1")
      .output("y2")
      .output("y3")
      .output("y4")
      .output("p4");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"ai.onyx.FusedMatMul", "Gelu", "MatMul", "Add", "MatMul", "Add", "Add", "MatMul", "Relu"}));
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 2);
}

}  // namespace
}  // namespace onyx
