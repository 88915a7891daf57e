// MatMulInteger -> Cast -> Mul(scale) [-> Add(bias)] -> ai.onyx MatMulIntegerToFloat, in the form dynamic
// quantization tools write (DynamicQuantizeLinear feeding A, the scale a_scale * b_scale).
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

std::vector<uint8_t> bytes_of(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 73 + seed * 31 + (i * i) % 17) & 0xFF);
  return v;
}

// x -> DynamicQuantizeLinear -> MatMulInteger(., wq, xz, wz) -> Cast -> Mul(., xs * ws) [-> Add(., b)].
GraphSpec dynamic_quantized(int64_t K, int64_t N, bool per_column, bool bias, bool scale_first) {
  GraphSpec g(14);
  g.input("x", DataType::Float, {2, 5, K});
  g.init("wq", DataType::UInt8, {K, N}, bytes_of(static_cast<size_t>(K * N), 1));
  g.init("wz", DataType::UInt8, per_column ? std::vector<int64_t>{N} : std::vector<int64_t>{},
         bytes_of(per_column ? static_cast<size_t>(N) : 1, 2));
  g.random("ws", per_column ? std::vector<int64_t>{N} : std::vector<int64_t>{}, 0.001f, 0.01f);
  g.random("b", {N});
  g.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"})
      .node("MatMulInteger", {"xq", "wq", "xz", "wz"}, {"acc"})
      .node("Cast", {"acc"}, {"accf"}, {{"to", 1}})
      .node("Mul", {"xs", "ws"}, {"s"})
      .node("Mul", scale_first ? std::vector<std::string>{"s", "accf"} : std::vector<std::string>{"accf", "s"}, {"p"});
  if (bias) g.node("Add", {"p", "b"}, {"y"}).output("y");
  else g.output("p");
  return g;
}

TEST(MatMulIntegerFusion, PerColumnScaleAndBias) {
  GraphSpec g = dynamic_quantized(8, 6, true, true, false);
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), (V{"DynamicQuantizeLinear", "Mul", "ai.onyx.MatMulIntegerToFloat"}));
  EXPECT_EQ(m.graph->nodes[2]->inputs.size(), 6u);
  EXPECT_EQ(m.graph->nodes[2]->inputs[5]->name, "b");
  EXPECT_EQ(m.opset("ai.onyx"), 1);
  // Rounded as the Cast, Mul and Add are: the same values.
  expect_same_outputs(g.bytes(), 0, 0);
  expect_idempotent(g.bytes(), 2);
}

TEST(MatMulIntegerFusion, ScalarScaleFirstWithoutBias) {
  GraphSpec g = dynamic_quantized(40, 70, false, false, true);
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), (V{"DynamicQuantizeLinear", "Mul", "ai.onyx.MatMulIntegerToFloat"}));
  EXPECT_EQ(m.graph->nodes[2]->inputs.size(), 5u);
  expect_same_outputs(g.bytes(), 0, 0);
}

TEST(MatMulIntegerFusion, LeavesWhatItCannotApply) {
  GraphSpec g(14);
  g.input("x", DataType::Float, {3, 8}).input("s2", DataType::Float, {3, 1});
  g.init("wq", DataType::Int8, {8, 4}, std::vector<int8_t>(32, 3));
  g.floats("sc", {}, {0.5f});
  g.node("DynamicQuantizeLinear", {"x"}, {"a", "as", "az"})
      .node("MatMulInteger", {"a", "wq"}, {"p1"})  // the scale is per row: it does not fuse
      .node("Cast", {"p1"}, {"f1"}, {{"to", 1}})
      .node("Mul", {"f1", "s2"}, {"y1"})
      .node("MatMulInteger", {"a", "wq"}, {"p2"})  // the int32 product is also an output
      .node("Cast", {"p2"}, {"f2"}, {{"to", 1}})
      .node("Mul", {"f2", "sc"}, {"y2"})
      .node("MatMulInteger", {"a", "wq"}, {"p3"})  // cast to double
      .node("Cast", {"p3"}, {"f3"}, {{"to", 11}})
      .output("y1")
      .output("y2")
      .output("p2")
      .output("f3");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "MatMulInteger", "Cast", "Mul", "MatMulInteger", "Cast"}));
  expect_same_outputs(g.bytes(), 0, 0);
}

}  // namespace
}  // namespace onyx
