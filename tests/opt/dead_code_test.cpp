// Dead code elimination: unread nodes and initializers go; subgraph reads and interface initializers stay.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(DeadCode, RemovesUnreadChainsAndInitializers) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {3})
      .input("w", DataType::Float, {3})
      .floats("w", {3}, {1, 2, 3})   // an input with a default: part of the interface
      .floats("unused", {3}, {4, 5, 6})
      .node("Neg", {"x"}, {"n1"})
      .node("Exp", {"n1"}, {"n2"})
      .node("Add", {"n2", "unused"}, {"n3"})
      .node("Relu", {"x"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(m.graph->initializers.count("unused"), 0u);
  EXPECT_EQ(m.graph->initializers.count("w"), 1u);
  expect_idempotent(g.bytes(), 1);
}

TEST(DeadCode, KeepsValuesReadOnlyBySubgraphs) {
  GraphSpec body(17);
  body.node("Neg", {"a"}, {"t"}).output("t");
  GraphSpec other(17);
  other.node("Identity", {"x"}, {"e"}).output("e");
  GraphSpec g(17);
  g.input("x", DataType::Float, {3})
      .input("c", DataType::Bool, {})
      .node("Exp", {"x"}, {"a"})
      .node("If", {"c"}, {"y"})
      .graph_attr("then_branch", body)
      .graph_attr("else_branch", other)
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Exp", "If"}));
}

TEST(DeadCode, RemovesUnreadSubgraphNodesWithTheirOuterReads) {
  GraphSpec body(17);
  body.node("Neg", {"a"}, {"t"}).output("t");
  GraphSpec other(17);
  other.node("Identity", {"a"}, {"e"}).output("e");
  GraphSpec g(17);
  g.input("x", DataType::Float, {3})
      .input("c", DataType::Bool, {})
      .node("Exp", {"x"}, {"a"})
      .node("If", {"c"}, {"unread"})
      .graph_attr("then_branch", body)
      .graph_attr("else_branch", other)
      .node("Relu", {"x"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 1);
  EXPECT_EQ(op_list(m), (std::vector<std::string>{"Relu"}));  // the If, then the Exp only it read
  expect_idempotent(g.bytes(), 1);
}

}  // namespace
}  // namespace onyx
