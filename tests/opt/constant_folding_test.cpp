// Constant folding: all-constant nodes become initializers; random ops, graph-input initializers and results
// above the size limit stay.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

std::string chain_model() {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3})
      .floats("a", {2, 3}, {1, 2, 3, 4, 5, 6})
      .node("Constant", {}, {"b"}, {{"value_float", 0.5f}})
      .node("Mul", {"a", "b"}, {"ab"})
      .node("Neg", {"ab"}, {"c"})
      .node("Add", {"x", "c"}, {"y"})
      .output("y");
  return g.bytes();
}

TEST(ConstantFolding, FoldsChainsIntoOneInitializer) {
  Model m = load_ir(chain_model());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Add"}));
  const Value* c = m.graph->find("c");
  ASSERT_TRUE(c && c->initializer);
  EXPECT_EQ(c->initializer->dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_FLOAT_EQ(c->initializer->data<float>()[5], -3.0f);
  EXPECT_EQ(m.graph->initializers.count("a"), 0u);  // read by nothing once folded
  expect_same_outputs(chain_model());
  expect_idempotent(chain_model(), 1);
}

TEST(ConstantFolding, LevelZeroLeavesTheGraph) {
  Model m = load_ir(chain_model());
  optimize_ir(m, 0);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Constant", "Mul", "Neg", "Add"}));
}

TEST(ConstantFolding, KeepsRandomOpsAndOverridableInitializers) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2})
      .input("bias", DataType::Float, {2})
      .floats("bias", {2}, {1, 2})  // also a graph input: a feed may replace it
      .node("RandomUniform", {}, {"r"}, {{"shape", std::vector<int64_t>{2}}})
      .node("Neg", {"bias"}, {"nb"})
      .node("Add", {"x", "r"}, {"y0"})
      .node("Add", {"y0", "nb"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"RandomUniform", "Neg", "Add", "Add"}));
}

TEST(ConstantFolding, RespectsTheSizeLimit) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {64, 64})
      .ints("shape", {2}, {64, 64})
      .node("ConstantOfShape", {"shape"}, {"c"})
      .node("Add", {"x", "c"}, {"y"})
      .output("y");
  Model small = load_ir(g.bytes());
  optimize_ir(small, 1, 1024);  // 16 KiB of result > 1 KiB
  EXPECT_EQ(op_list(small), (std::vector<std::string>{"ConstantOfShape", "Add"}));
  Model big = load_ir(g.bytes());
  optimize_ir(big, 1);
  EXPECT_EQ(op_list(big), (std::vector<std::string>{"Add"}));
  ASSERT_TRUE(big.graph->find("c")->initializer);
  EXPECT_EQ(big.graph->find("c")->initializer->element_count(), 64u * 64u);
}

TEST(ConstantFolding, FoldsIntoGraphOutputsKeepingTheirNames) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {1})
      .floats("a", {2}, {1, 4})
      .node("Sqrt", {"a"}, {"s"})
      .node("Identity", {"x"}, {"y"})
      .output("s")
      .output("y");
  std::string bytes = g.bytes();
  Model m = load_ir(bytes);
  optimize_ir(m, 1);
  ASSERT_EQ(m.graph->outputs.size(), 2u);
  EXPECT_EQ(m.graph->outputs[0]->name, "s");
  ASSERT_TRUE(m.graph->outputs[0]->initializer);
  EXPECT_FLOAT_EQ(m.graph->outputs[0]->initializer->data<float>()[1], 2.0f);
  expect_same_outputs(bytes);
}

TEST(ConstantFolding, Ir3ModelsBecomeIr4WhenTheyGainConstants) {
  // IR 3 wants every initializer listed as an input; folded values are not inputs, so the model moves to IR 4.
  GraphSpec g(8);
  g.ir_version(3)
      .input("x", DataType::Float, {2})
      .input("w", DataType::Float, {2})
      .floats("w", {2}, {1, 2})
      .node("Constant", {}, {"c"})
      .node("Mul", {"x", "c"}, {"xc"})
      .node("Add", {"xc", "w"}, {"y"})
      .output("y");
  static const float three = 3.0f;
  pb::Attribute& value = g.graph().node[0].attribute.emplace_back();
  value.name = "value";
  value.type = static_cast<int32_t>(AttributeType::Tensor);
  value.t.emplace().data_type = static_cast<int32_t>(DataType::Float);
  value.t->raw_data = std::string_view(reinterpret_cast<const char*>(&three), sizeof three);
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Mul", "Add"}));
  EXPECT_EQ(m.ir_version, 4);
  expect_idempotent(g.bytes(), 1);  // the written model passes the checker
  expect_same_outputs(g.bytes());
}

}  // namespace
}  // namespace onyx
