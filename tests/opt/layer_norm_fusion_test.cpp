// The PyTorch LayerNorm pattern -> LayerNormalization (standard from opset 17, ai.onyx below).
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

// x: [2, 4, 8], normalized over the last dim (or the last two).
std::string layer_norm_model(int64_t opset, bool affine, bool square_by_mul = false, int axes = 1) {
  GraphSpec g(opset);
  g.input("x", DataType::Float, {2, 4, 8});
  std::vector<int64_t> axis_list = axes == 1 ? std::vector<int64_t>{-1} : std::vector<int64_t>{-2, -1};
  auto reduce = [&](const std::string& in, const std::string& out) {
    if (opset >= 18) g.node("ReduceMean", {in, "axes"}, {out});
    else g.node("ReduceMean", {in}, {out}, {{"axes", axis_list}});
  };
  if (opset >= 18) g.ints("axes", {static_cast<int64_t>(axis_list.size())}, axis_list);
  g.floats("two", {}, {2.0f}).floats("eps", {}, {1e-5f});
  if (affine) g.random("gamma", axes == 1 ? std::vector<int64_t>{8} : std::vector<int64_t>{1, 4, 8}).random("beta", {8});
  reduce("x", "mean");
  g.node("Sub", {"x", "mean"}, {"d"});
  if (square_by_mul) g.node("Mul", {"d", "d"}, {"sq"});
  else g.node("Pow", {"d", "two"}, {"sq"});
  reduce("sq", "var");
  g.node("Add", {"var", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"std"}).node("Div", {"d", "std"}, {affine ? "n" : "y"});
  if (affine) g.node("Mul", {"n", "gamma"}, {"g"}).node("Add", {"g", "beta"}, {"y"});
  g.output("y");
  return g.bytes();
}

TEST(LayerNormFusion, BelowOpset17UsesTheInternalOp) {
  std::string bytes = layer_norm_model(13, true);
  Model m = load_ir(bytes);
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), V{"ai.onyx.LayerNormalization"});
  const Node& ln = *m.graph->nodes[0];
  EXPECT_EQ(ln.attribute("axis")->i, 2);
  EXPECT_FLOAT_EQ(ln.attribute("epsilon")->f, 1e-5f);
  EXPECT_EQ(ln.outputs[0]->name, "y");
  expect_same_outputs(bytes);
  expect_idempotent(bytes, 2);
}

TEST(LayerNormFusion, FromOpset17UsesTheStandardOp) {
  for (bool affine : {true, false}) {
    std::string bytes = layer_norm_model(18, affine, !affine);
    Model m = load_ir(bytes);
    optimize_ir(m, 2);
    EXPECT_EQ(op_list(m), V{"LayerNormalization"});
    EXPECT_EQ(m.graph->nodes[0]->inputs.size(), affine ? 3u : 2u);
    expect_same_outputs(bytes);
    expect_idempotent(bytes, 2);
  }
}

TEST(LayerNormFusion, OverSeveralTrailingAxes) {
  std::string bytes = layer_norm_model(17, true, false, 2);
  Model m = load_ir(bytes);
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), V{"LayerNormalization"});
  EXPECT_EQ(m.graph->nodes[0]->attribute("axis")->i, 1);
  expect_same_outputs(bytes);
}

TEST(LayerNormFusion, LeavesOtherReductions) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {2, 4, 8}).floats("two", {}, {2.0f}).floats("eps", {}, {1e-5f});
  g.node("ReduceMean", {"x"}, {"mean"}, {{"axes", std::vector<int64_t>{1}}})  // not the last axis
      .node("Sub", {"x", "mean"}, {"d"})
      .node("Pow", {"d", "two"}, {"sq"})
      .node("ReduceMean", {"sq"}, {"var"}, {{"axes", std::vector<int64_t>{1}}})
      .node("Add", {"var", "eps"}, {"ve"})
      .node("Sqrt", {"ve"}, {"std"})
      .node("Div", {"d", "std"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(m.graph->nodes.size(), 7u);
}

}  // namespace
}  // namespace onyx
