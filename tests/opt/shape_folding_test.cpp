// Shape-computation folding: Shape/Gather/Concat chains on statically known dims become initializers.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(ShapeFolding, FoldsAShapeChainIntoTheReshapeTarget) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2, 3, 4})
      .ints("one", {}, {1})
      .ints("zero", {1}, {0})
      .ints("minus_one", {1}, {-1})
      .node("Shape", {"x"}, {"s"})
      .node("Gather", {"s", "one"}, {"d1"})
      .node("Unsqueeze", {"d1", "zero"}, {"d1v"})
      .node("Concat", {"minus_one", "d1v"}, {"target"}, {{"axis", 0}})
      .node("Reshape", {"x", "target"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Reshape"}));
  const Value* target = m.graph->nodes[0]->inputs[1];
  ASSERT_TRUE(target->initializer);
  EXPECT_EQ(target->initializer->data<int64_t>()[0], -1);
  EXPECT_EQ(target->initializer->data<int64_t>()[1], 3);
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 1);
}

TEST(ShapeFolding, FoldsTheKnownPartOfASymbolicShape) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {-1, 3})
      .ints("idx", {1}, {1})
      .node("Shape", {"x"}, {"s"})
      .node("Gather", {"s", "idx"}, {"d"})  // [3] although dim 0 is N
      .node("Cast", {"d"}, {"df"}, {{"to", 1}})
      .node("Mul", {"x", "df"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Mul"}));
  expect_same_outputs(g.bytes());
}

TEST(ShapeFolding, LeavesUnknownShapesAlone) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {-1, 3}).node("Shape", {"x"}, {"s"}).output("s");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Shape"}));
}

}  // namespace
}  // namespace onyx
