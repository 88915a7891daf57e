// BatchNormalization folded into Conv, Gemm and MatMul with constant weights, into new initializers.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

void add_bn_params(GraphSpec& g, int64_t c) {
  g.random("scale", {c}, 0.5f, 1.5f).random("bias", {c}).random("mean", {c}).random("var", {c}, 0.1f, 2.0f);
}

TEST(BatchNormFolding, FoldsIntoConvWithNewWeights) {
  for (bool with_bias : {true, false}) {
    GraphSpec g(15);
    g.input("x", DataType::Float, {1, 3, 5, 5}).random("w", {4, 3, 3, 3});
    if (with_bias) g.random("b", {4});
    add_bn_params(g, 4);
    g.node("Conv", with_bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"}, {"c"},
           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
        .node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"}, {{"epsilon", 1e-3f}})
        .output("y");
    Model m = load_ir(g.bytes());
    const std::string_view w_data = m.graph->find("w")->initializer->bytes();  // a view of the model's bytes
    const std::string w_before(w_data);
    optimize_ir(m, 2);
    EXPECT_EQ(op_list(m), V{"Conv"});
    const Node& conv = *m.graph->nodes[0];
    ASSERT_EQ(conv.inputs.size(), 3u);
    EXPECT_NE(conv.inputs[1]->name, "w");  // a new tensor; the model's own is not written
    EXPECT_EQ(std::string(w_data), w_before);
    EXPECT_EQ(conv.outputs[0]->name, "y");
    expect_same_outputs(g.bytes());
    expect_idempotent(g.bytes(), 2);
  }
}

TEST(BatchNormFolding, FoldsIntoGemmAndMatMul) {
  GraphSpec g(15);
  g.input("x", DataType::Float, {2, 3}).random("w", {5, 3}).random("c", {5}).random("w2", {3, 5});
  add_bn_params(g, 5);
  g.node("Gemm", {"x", "w", "c"}, {"gm"}, {{"transB", 1}, {"alpha", 0.5f}, {"beta", 2.0f}})
      .node("BatchNormalization", {"gm", "scale", "bias", "mean", "var"}, {"y"})
      .node("MatMul", {"x", "w2"}, {"mm"})
      .node("BatchNormalization", {"mm", "scale", "bias", "mean", "var"}, {"z"})
      .output("y")
      .output("z");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"Gemm", "Gemm"}));
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 2);
}

TEST(BatchNormFolding, LeavesTrainingModeAndSharedResults) {
  GraphSpec g(15);
  g.input("x", DataType::Float, {1, 2, 3, 3}).random("w", {2, 2, 1, 1});
  add_bn_params(g, 2);
  g.node("Conv", {"x", "w"}, {"c"})
      .node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"})
      .node("Neg", {"c"}, {"z"})  // c has another reader
      .node("Conv", {"x", "w"}, {"c2"})
      .node("BatchNormalization", {"c2", "scale", "bias", "mean", "var"}, {"t", "rm", "rv"}, {{"training_mode", 1}})
      .output("y")
      .output("z")
      .output("t");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"Conv", "BatchNormalization", "Neg", "Conv", "BatchNormalization"}));
}

TEST(BatchNormFolding, NotAtLevelOne) {
  GraphSpec g(15);
  g.input("x", DataType::Float, {1, 2, 3, 3}).random("w", {2, 2, 1, 1});
  add_bn_params(g, 2);
  g.node("Conv", {"x", "w"}, {"c"}).node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (V{"Conv", "BatchNormalization"}));
}

}  // namespace
}  // namespace onyx
