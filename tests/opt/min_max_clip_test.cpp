// Max / Min against a constant scalar -> Clip, which the convolution fusions then apply inside the product.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

TEST(MinMaxToClip, TfliteReluAfterAConvolutionFuses) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 3, 6, 6}).random("w", {4, 3, 3, 3}).floats("zero", {1, 1, 1, 1}, {0.0f});
  g.node("Conv", {"x", "w"}, {"c"}).node("Max", {"c", "zero"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), V{"ai.onyx.FusedConv"});
  EXPECT_EQ(m.graph->nodes[0]->attribute("activation")->s, "Clip");
  expect_same_outputs(g.bytes(), 0, 0);
  expect_idempotent(g.bytes(), 2);
}

TEST(MinMaxToClip, EitherOperandAndOldOpsets) {
  for (int64_t opset : {9, 13}) {
    GraphSpec g(opset);
    g.input("x", DataType::Float, {2, 5}).floats("c", {}, {0.25f}).floats("row", {5}, {0, 1, 2, 3, 4});
    g.node("Min", {"c", "x"}, {"y1"})       // the constant first
        .node("Max", {"x", "row"}, {"y2"})  // not one value: stays
        .output("y1")
        .output("y2");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 2);
    EXPECT_EQ(op_list(m), (V{"Clip", "Max"})) << opset;
    expect_same_outputs(g.bytes(), 0, 0);
  }
}

TEST(MinMaxToClip, IntegersStay) {
  GraphSpec g(13);
  g.input("x", DataType::Int64, {4}).ints("c", {}, {3});
  g.node("Max", {"x", "c"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), V{"Max"});
}

}  // namespace
}  // namespace onyx
