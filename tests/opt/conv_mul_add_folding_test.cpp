// Conv followed by per-channel constant Mul/Add folds into the Conv's weights and bias.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

TEST(ConvMulAddFolding, FoldsPerChannelScaleAndShift) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 2, 5, 5}).random("w", {3, 2, 3, 3}).random("s", {3, 1, 1}).random("t", {1, 3, 1, 1});
  g.floats("k", {}, {0.5f});
  g.node("Conv", {"x", "w"}, {"c"})
      .node("Mul", {"c", "s"}, {"m"})
      .node("Add", {"t", "m"}, {"a"})
      .node("Mul", {"a", "k"}, {"y"})  // a scalar scales every channel
      .output("y");
  Model m = load_ir(g.bytes());
  const std::string_view w_data = m.graph->find("w")->initializer->bytes();  // a view of the model's bytes
  const std::string w_before(w_data);
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), V{"Conv"});
  EXPECT_EQ(m.graph->nodes[0]->outputs[0]->name, "y");
  EXPECT_EQ(std::string(w_data), w_before);  // new weights were made; the model's own stay as they were
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 2);
}

TEST(ConvMulAddFolding, LeavesConstantsThatVaryElsewhere) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 2, 5, 5}).random("w", {3, 2, 1, 1}).random("col", {5}).random("plane", {3, 5, 5});
  g.node("Conv", {"x", "w"}, {"c"})
      .node("Mul", {"c", "col"}, {"m"})  // varies along the last axis
      .node("Conv", {"x", "w"}, {"c2"})
      .node("Add", {"c2", "plane"}, {"p"})  // varies along the spatial axes
      .output("m")
      .output("p");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"Conv", "Mul", "Conv", "Add"}));
}

}  // namespace
}  // namespace onyx
