// Transpose/Reshape/Squeeze-Unsqueeze pairs that cancel or merge.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

TEST(LayoutCancellation, InverseTransposesVanish) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3, 4})
      .node("Transpose", {"x"}, {"t1"}, {{"perm", std::vector<int64_t>{0, 2, 1}}})
      .node("Transpose", {"t1"}, {"t2"}, {{"perm", std::vector<int64_t>{0, 2, 1}}})
      .node("Neg", {"t2"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), V{"Neg"});
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 1);
}

TEST(LayoutCancellation, TransposePairsMergeAndKeepOutputNames) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3, 4})
      .node("Relu", {"x"}, {"r"})
      .node("Transpose", {"r"}, {"t1"}, {{"perm", std::vector<int64_t>{1, 0, 2}}})
      .node("Transpose", {"t1"}, {"y"}, {{"perm", std::vector<int64_t>{0, 2, 1}}})
      .node("Transpose", {"r"}, {"u1"})  // default perm: reversal
      .node("Transpose", {"u1"}, {"z"})
      .output("y")
      .output("z");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  // The first pair becomes one Transpose; the reversals cancel, and Relu now produces z.
  EXPECT_EQ(op_list(m), (V{"Relu", "Transpose"}));
  EXPECT_EQ(m.graph->nodes[0]->outputs[0]->name, "z");
  EXPECT_EQ(m.graph->nodes[1]->attribute("perm")->ints, (std::vector<int64_t>{1, 2, 0}));
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 1);
}

TEST(LayoutCancellation, KeepsATransposeOthersRead) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3})
      .node("Transpose", {"x"}, {"t1"})
      .node("Transpose", {"t1"}, {"t2"})
      .node("Add", {"t2", "x"}, {"y"})
      .output("y")
      .output("t1");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (V{"Transpose", "Transpose", "Add"}));
}

TEST(LayoutCancellation, ReshapePairsMerge) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {-1, 6})
      .ints("s1", {3}, {-1, 2, 3})
      .ints("s2", {2}, {3, -1})
      .node("Reshape", {"x", "s1"}, {"r1"})
      .node("Reshape", {"r1", "s2"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), V{"Reshape"});
  EXPECT_EQ(m.graph->nodes[0]->inputs[0]->name, "x");
  expect_idempotent(g.bytes(), 1);
  // N = 2 in the random feeds: [2, 6] -> [3, 4].
  expect_same_outputs(g.bytes());
}

TEST(LayoutCancellation, ReshapeWithACopiedDimStays) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 6})
      .ints("s1", {3}, {2, 2, 3})
      .ints("s2", {2}, {0, -1})  // 0 copies dim 0 of the inner result
      .node("Reshape", {"x", "s1"}, {"r1"})
      .node("Reshape", {"r1", "s2"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (V{"Reshape", "Reshape"}));
}

TEST(LayoutCancellation, ReshapeToTheSameShapeVanishes) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 6})
      .ints("s", {2}, {2, -1})
      .node("Reshape", {"x", "s"}, {"r"})
      .node("Neg", {"r"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), V{"Neg"});
}

TEST(LayoutCancellation, SqueezeOfUnsqueezeVanishes) {
  for (int64_t opset : {11, 13}) {
    GraphSpec g(opset);
    g.input("x", DataType::Float, {2, 3});
    if (opset >= 13) {
      g.ints("axes", {2}, {0, -1})
          .node("Unsqueeze", {"x", "axes"}, {"u"})
          .ints("axes2", {2}, {3, 0})
          .node("Squeeze", {"u", "axes2"}, {"s"});
    } else {
      g.node("Unsqueeze", {"x"}, {"u"}, {{"axes", std::vector<int64_t>{0, -1}}})
          .node("Squeeze", {"u"}, {"s"}, {{"axes", std::vector<int64_t>{3, 0}}});
    }
    g.node("Neg", {"s"}, {"y"}).output("y");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 1);
    EXPECT_EQ(op_list(m), V{"Neg"}) << "opset " << opset;
    expect_same_outputs(g.bytes());
  }
}

TEST(LayoutCancellation, UnsqueezeOfSqueezeVanishesOnlyOverUnitDims) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 3, 1})
      .ints("axes", {1}, {2})
      .ints("other", {1}, {0})
      .node("Squeeze", {"x", "axes"}, {"s"})
      .node("Unsqueeze", {"s", "axes"}, {"u"})
      .node("Squeeze", {"x", "axes"}, {"s2"})
      .node("Unsqueeze", {"s2", "other"}, {"u2"})  // different axes: a real reshape
      .node("Add", {"u", "x"}, {"y"})
      .output("y")
      .output("u2");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (V{"Squeeze", "Unsqueeze", "Add"}));
  expect_same_outputs(g.bytes());
}

}  // namespace
}  // namespace onyx
