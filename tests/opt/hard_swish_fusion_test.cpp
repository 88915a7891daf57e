// HardSwish patterns, x * Clip(x + 3, 0, 6) / 6 in the orders exporters write, -> HardSwish, fused into the
// convolution that produces x.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

// order 0: (x * c) / 6; 1: (c * x) * (1/6); 2: x * (c / 6); 3: (c * (1/6)) * x. `conv`: x comes from a Conv.
std::string hard_swish_model(int64_t opset, int order, bool conv, float six = 6.0f) {
  GraphSpec g(opset);
  g.input("in", DataType::Float, {1, 2, 5, 5}).floats("three", {}, {3.0f}).floats("six", {}, {six});
  g.floats("sixth", {}, {1.0f / 6.0f}).floats("zero", {}, {0.0f});
  if (conv) g.random("w", {3, 2, 3, 3}).node("Conv", {"in", "w"}, {"x"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  else g.node("Sin", {"in"}, {"x"});
  g.node("Add", {order % 2 ? "three" : "x", order % 2 ? "x" : "three"}, {"a"});
  if (opset < 11) g.node("Clip", {"a"}, {"c"}, {{"min", 0.0f}, {"max", 6.0f}});
  else g.node("Clip", {"a", "zero", "six"}, {"c"});
  if (order == 0) g.node("Mul", {"x", "c"}, {"m"}).node("Div", {"m", "six"}, {"y"});
  if (order == 1) g.node("Mul", {"c", "x"}, {"m"}).node("Mul", {"m", "sixth"}, {"y"});
  if (order == 2) g.node("Div", {"c", "six"}, {"d"}).node("Mul", {"x", "d"}, {"y"});
  if (order == 3) g.node("Mul", {"c", "sixth"}, {"d"}).node("Mul", {"d", "x"}, {"y"});
  g.output("y");
  return g.bytes();
}

TEST(HardSwishFusion, EachOrderBecomesOneOp) {
  for (int64_t opset : {int64_t{9}, int64_t{11}, int64_t{14}})
    for (int order = 0; order < 4; ++order) {
      const std::string bytes = hard_swish_model(opset, order, false);
      Model m = load_ir(bytes);
      optimize_ir(m, 2);
      EXPECT_EQ(op_list(m), (V{"Sin", opset >= 14 ? "HardSwish" : "ai.onyx.HardSwish"}))
          << "opset " << opset << " order " << order << ": " << ::testing::PrintToString(op_list(m));
      expect_same_outputs(bytes, 1e-5, 1e-6);
      expect_idempotent(bytes, 2);
    }
}

TEST(HardSwishFusion, FusesIntoTheConvolution) {
  for (int64_t opset : {int64_t{11}, int64_t{14}}) {
    const std::string bytes = hard_swish_model(opset, 0, true);
    Model m = load_ir(bytes);
    optimize_ir(m, 2);
    EXPECT_EQ(op_list(m), V{"ai.onyx.FusedConv"}) << opset;
    expect_same_outputs(bytes, 1e-5, 1e-6);
    Model all = load_ir(bytes);
    optimize_ir(all, 3);
    EXPECT_EQ(op_list(all), (V{"Transpose", "ai.onyx.NhwcConv", "Transpose"})) << opset;
  }
}

TEST(HardSwishFusion, LeavesOtherConstants) {
  const std::string bytes = hard_swish_model(14, 0, false, 5.0f);  // Clip(x + 3, 0, 5) / 5 is another function
  Model m = load_ir(bytes);
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"Sin", "Add", "Clip", "Mul", "Div"}));
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
