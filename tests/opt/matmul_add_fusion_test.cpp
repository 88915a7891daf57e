// MatMul + constant Add -> Gemm on 2-D operands.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

TEST(MatMulAddFusion, BecomesGemm) {
  for (std::vector<int64_t> bias_dims : {std::vector<int64_t>{5}, {1, 5}, {4, 1}, {4, 5}, {}}) {
    GraphSpec g(13);
    g.input("x", DataType::Float, {4, 3}).input("w", DataType::Float, {3, 5}).random("b", bias_dims);
    g.node("MatMul", {"x", "w"}, {"mm"}).node("Add", {"b", "mm"}, {"y"}).output("y");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 2);
    EXPECT_EQ(op_list(m), V{"Gemm"});
    EXPECT_EQ(m.graph->nodes[0]->outputs[0]->name, "y");
    expect_same_outputs(g.bytes());
    expect_idempotent(g.bytes(), 2);
  }
}

TEST(MatMulAddFusion, LeavesWhatGemmCannotDo) {
  GraphSpec g(13);
  g.input("x3", DataType::Float, {2, 4, 3})
      .input("x", DataType::Float, {4, 3})
      .input("b_in", DataType::Float, {5})
      .random("w", {3, 5})
      .random("b", {5})
      .random("wide", {2, 4, 5})
      .node("MatMul", {"x3", "w"}, {"m1"})  // 3-D: no Gemm (matmul-epilogue-fusion makes a FusedMatMul)
      .node("Add", {"m1", "b"}, {"y1"})
      .node("MatMul", {"x", "w"}, {"m2"})
      .node("Add", {"m2", "b_in"}, {"y2"})  // addend not constant
      .node("MatMul", {"x", "w"}, {"m3"})
      .node("Add", {"m3", "wide"}, {"y3"})  // addend widens the result
      .output("y1")
      .output("y2")
      .output("y3");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"ai.onyx.FusedMatMul", "MatMul", "Add", "MatMul", "Add"}));
}

TEST(MatMulAddFusion, NeedsOpsetSeven) {
  GraphSpec g(6);
  g.input("x", DataType::Float, {4, 3}).random("w", {3, 5}).random("b", {5});
  g.node("MatMul", {"x", "w"}, {"mm"}).node("Add", {"mm", "b"}, {"y"}, {{"broadcast", 1}}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"MatMul", "Add"}));
}

}  // namespace
}  // namespace onyx
