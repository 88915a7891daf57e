// Identity elimination: readers move to the Identity's input; graph output names stay.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(IdentityElimination, ReadersReadTheInput) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {3})
      .node("Relu", {"x"}, {"a"})
      .node("Identity", {"a"}, {"b"})
      .node("Neg", {"b"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Relu", "Neg"}));
  EXPECT_EQ(m.graph->nodes[1]->inputs[0]->name, "a");
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 1);
}

TEST(IdentityElimination, AGraphOutputKeepsItsName) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {3})
      .node("Relu", {"x"}, {"a"})
      .node("Identity", {"a"}, {"y"})
      .node("Neg", {"a"}, {"z"})
      .output("y")
      .output("z");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Relu", "Neg"}));
  EXPECT_EQ(m.graph->nodes[0]->outputs[0]->name, "y");  // Relu now produces the output itself
  EXPECT_EQ(m.graph->nodes[1]->inputs[0]->name, "y");
  EXPECT_EQ(m.graph->outputs[0]->name, "y");
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 1);
}

TEST(IdentityElimination, KeepsInputToOutputIdentities) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {3}).node("Identity", {"x"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Identity"}));
}

TEST(IdentityElimination, TwoOutputsOfOneValueKeepOneIdentity) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {3})
      .node("Relu", {"x"}, {"a"})
      .node("Identity", {"a"}, {"y"})
      .node("Identity", {"a"}, {"z"})
      .output("y")
      .output("z");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  // Relu produces y; z = Identity(y) must stay, as both names are outputs.
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Relu", "Identity"}));
  expect_same_outputs(g.bytes());
}

TEST(IdentityElimination, RewiresReadsInsideSubgraphs) {
  GraphSpec then_g(17), else_g(17);
  then_g.node("Neg", {"b"}, {"t"}).output("t");
  else_g.node("Abs", {"b"}, {"e"}).output("e");
  GraphSpec g(17);
  g.input("x", DataType::Float, {3})
      .input("c", DataType::Bool, {})
      .node("Relu", {"x"}, {"a"})
      .node("Identity", {"a"}, {"b"})
      .node("If", {"c"}, {"y"})
      .graph_attr("then_branch", then_g)
      .graph_attr("else_branch", else_g)
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Relu", "If"}));
  const Graph& branch = *m.graph->nodes[1]->attributes[0].g;
  EXPECT_EQ(branch.nodes[0]->inputs[0]->name, "a");
  for (bool cond : {true, false}) {
    Session s0 = session_at(g.bytes(), 0), s1 = session_at(g.bytes(), 1);
    Tensor c = Tensor::allocate(DataType::Bool, {});
    c.mutable_data<bool>()[0] = cond;
    Tensor x = Tensor::allocate(DataType::Float, {3});
    for (int i = 0; i < 3; ++i) x.mutable_data<float>()[i] = static_cast<float>(i) - 1.5f;
    std::map<std::string, Datum> feeds = {{"x", Datum::of(x)}, {"c", Datum::of(c)}};
    EXPECT_FALSE(compare_datums(s0.run(feeds)[0].second, s1.run(feeds)[0].second));
  }
  expect_idempotent(g.bytes(), 1);
}

}  // namespace
}  // namespace onyx

namespace onyx {
namespace ONYX_TEST_FILE {

// Inference Dropout is an Identity; training-mode Dropout, or one whose mask is read, stays.
TEST(IdentityElimination, InferenceDropoutGoes) {
  using namespace testing;
  GraphSpec g(13);
  g.input("x", DataType::Float, {2, 3}).node("Relu", {"x"}, {"r"}).node("Dropout", {"r"}, {"d"}).node("Exp", {"d"}, {"y"}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Relu", "Exp"}));
  expect_same_outputs(g.bytes());

  GraphSpec masked(13);
  masked.input("x", DataType::Float, {2, 3}).node("Dropout", {"x"}, {"y", "mask"}).output("y").output("mask");
  Model mm = load_ir(masked.bytes());
  optimize_ir(mm, 1);
  EXPECT_EQ(op_list(mm), (std::vector<std::string>{"Dropout"}));

  GraphSpec training(13);
  training.input("x", DataType::Float, {2, 3}).input("t", DataType::Bool, {});
  training.floats("ratio", {}, {0.5f}).node("Dropout", {"x", "ratio", "t"}, {"d"}).node("Exp", {"d"}, {"y"}).output("y");
  Model mt = load_ir(training.bytes());
  optimize_ir(mt, 1);
  EXPECT_EQ(op_list(mt), (std::vector<std::string>{"Dropout", "Exp"}));

  GraphSpec v6(6);  // before opset 7, is_test = 0 (the default) means training
  v6.input("x", DataType::Float, {2, 3}).node("Dropout", {"x"}, {"d"}).node("Exp", {"d"}, {"y"}).output("y");
  Model m6 = load_ir(v6.bytes());
  optimize_ir(m6, 1);
  EXPECT_EQ(op_list(m6), (std::vector<std::string>{"Dropout", "Exp"}));
}

}  // namespace
}  // namespace onyx
