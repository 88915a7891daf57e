#include "check/topological_order.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/checker.hpp"
#include "ops/graph_builder.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::ModelBuilder;

std::vector<std::string> op_order(const pb::Graph& g) {
  std::vector<std::string> ops;
  for (const pb::Node& n : g.node) ops.emplace_back(n.op_type.value_or(""));
  return ops;
}

pb::ModelDocument document(ModelBuilder& b, pb::Graph main, int64_t opset = 17) {
  pb::ModelDocument doc;
  doc.label = "m.onnx";
  doc.model.ir_version = 8;
  doc.model.opset_import.push_back({b.arena.save(""), opset, {}});
  main.name = b.arena.save("main");
  doc.model.graph = std::move(main);
  return doc;
}

bool mentions(const std::vector<std::string>& problems, const std::string& needle) {
  for (const std::string& p : problems)
    if (p.find(needle) != std::string::npos) return true;
  return false;
}

// What a float16 converter writes: the Cast of the graph input appended after the nodes that read it.
pb::Graph cast_appended_last(ModelBuilder& b) {
  pb::Graph g;
  b.input(g, "X", b.tensor_t(DataType::Float, std::vector<int64_t>{3}));
  b.output(g, "Y", b.tensor_t(DataType::Float, std::vector<int64_t>{3}));
  b.node(g, "Relu", {"X16"}, {"R"});
  b.attr_int(b.node(g, "Cast", {"R"}, {"Y"}), "to", static_cast<int64_t>(DataType::Float));
  b.attr_int(b.node(g, "Cast", {"X"}, {"X16"}), "to", static_cast<int64_t>(DataType::Float16));
  return g;
}

TEST(TopologicalOrder, ConverterCastAppendedLastIsSortedAndRuns) {
  ModelBuilder b;
  pb::ModelDocument doc = document(b, cast_appended_last(b));
  // The file breaks the spec: the checker says so, and names the late node.
  EXPECT_TRUE(mentions(check::check_model(doc), "topological order"));
  const std::vector<std::string> notes = check::sort_nodes_topologically(doc);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("m.onnx: graph 'main'"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("node #2 (Cast)"), std::string::npos) << notes[0];
  EXPECT_EQ(op_order(*doc.model.graph), (std::vector<std::string>{"Cast", "Relu", "Cast"}));
  EXPECT_EQ(doc.model.graph->node[0].input[0], "X");
  EXPECT_TRUE(check::check_model(doc).empty());

  // A session sorts at creation and computes the right values.
  Session s = Session::from_bytes(pb::serialize_model(document(b, cast_appended_last(b)).model));
  Tensor x = testing::make_tensor<float>(DataType::Float, {3}, {-1.5f, 0.25f, 2.0f});
  auto out = s.run({{"X", Datum::of(x)}});
  const Tensor& y = out.at(0).second.tensor;
  EXPECT_EQ(testing::values_of<float>(y), (std::vector<float>{0.0f, 0.25f, 2.0f}));
}

TEST(TopologicalOrder, OrderedGraphIsLeftAsItIs) {
  ModelBuilder b;
  pb::Graph g;
  b.input(g, "X", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.output(g, "Z", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.node(g, "Neg", {"X"}, {"A"});
  b.node(g, "Abs", {"X"}, {"B"});
  b.node(g, "Add", {"A", "B"}, {"Z"});
  pb::ModelDocument doc = document(b, std::move(g));
  EXPECT_TRUE(check::sort_nodes_topologically(doc).empty());
  EXPECT_EQ(op_order(*doc.model.graph), (std::vector<std::string>{"Neg", "Abs", "Add"}));
}

TEST(TopologicalOrder, SortIsStable) {
  // Independent nodes keep their order; only what must move does.
  ModelBuilder b;
  pb::Graph g;
  b.input(g, "X", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.output(g, "Z", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.node(g, "Neg", {"X"}, {"A"});
  b.node(g, "Add", {"A", "C"}, {"Z"});
  b.node(g, "Abs", {"X"}, {"B"});
  b.node(g, "Sqrt", {"B"}, {"C"});
  b.node(g, "Exp", {"X"}, {"D"});
  pb::ModelDocument doc = document(b, std::move(g));
  EXPECT_EQ(check::sort_nodes_topologically(doc).size(), 1u);
  EXPECT_EQ(op_order(*doc.model.graph), (std::vector<std::string>{"Neg", "Abs", "Sqrt", "Add", "Exp"}));
}

TEST(TopologicalOrder, SubgraphReadOfALaterValueOrdersItsNode) {
  // The If's branches read V, which a node listed after the If produces; the If must follow that node.
  ModelBuilder b;
  pb::Graph g;
  b.input(g, "C", b.tensor_t(DataType::Bool, std::vector<int64_t>{}));
  b.input(g, "X", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.output(g, "Y", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  pb::Node& if_node = b.node(g, "If", {"C"}, {"Y"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    pb::Graph body;
    b.output(body, std::string(branch) + "_out", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
    b.node(body, branch[0] == 't' ? "Neg" : "Abs", {"V"}, {std::string(branch) + "_out"});
    b.attr_graph(if_node, branch, std::move(body));
  }
  b.node(g, "Relu", {"X"}, {"V"});
  pb::ModelDocument doc = document(b, std::move(g));
  EXPECT_TRUE(mentions(check::check_model(doc), "topological order"));
  ASSERT_EQ(check::sort_nodes_topologically(doc).size(), 1u);
  EXPECT_EQ(op_order(*doc.model.graph), (std::vector<std::string>{"Relu", "If"}));
  EXPECT_TRUE(check::check_model(doc).empty());
}

TEST(TopologicalOrder, NodesOfASubgraphAreSortedToo) {
  ModelBuilder b;
  pb::Graph g;
  b.input(g, "C", b.tensor_t(DataType::Bool, std::vector<int64_t>{}));
  b.input(g, "X", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.output(g, "Y", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  pb::Node& if_node = b.node(g, "If", {"C"}, {"Y"});
  pb::Graph then_body;
  b.output(then_body, "t", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.node(then_body, "Neg", {"u"}, {"t"});
  b.node(then_body, "Abs", {"X"}, {"u"});
  b.attr_graph(if_node, "then_branch", std::move(then_body));
  pb::Graph else_body;
  b.output(else_body, "e", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.node(else_body, "Identity", {"X"}, {"e"});
  b.attr_graph(if_node, "else_branch", std::move(else_body));
  pb::ModelDocument doc = document(b, std::move(g));
  const std::vector<std::string> notes = check::sort_nodes_topologically(doc);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("attribute 'then_branch'"), std::string::npos) << notes[0];
  EXPECT_EQ(op_order(*doc.model.graph->node[0].attribute[0].g), (std::vector<std::string>{"Abs", "Neg"}));
  EXPECT_TRUE(check::check_model(doc).empty());

  Session s = Session::from_bytes(pb::serialize_model(doc.model));
  Tensor cond = Tensor::allocate(DataType::Bool, {});
  cond.mutable_data<bool>()[0] = true;
  auto out = s.run({{"C", Datum::of(cond)}, {"X", Datum::of(testing::make_tensor<float>(DataType::Float, {2}, {-3.0f, 4.0f}))}});
  EXPECT_EQ(testing::values_of<float>(out.at(0).second.tensor), (std::vector<float>{-3.0f, -4.0f}));
}

TEST(TopologicalOrder, CycleIsLeftForTheCheckerToName) {
  ModelBuilder b;
  pb::Graph g;
  b.input(g, "X", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.output(g, "Z", b.tensor_t(DataType::Float, std::vector<int64_t>{2}));
  b.node(g, "Add", {"X", "B"}, {"A"});
  b.node(g, "Neg", {"A"}, {"B"});
  b.node(g, "Abs", {"A"}, {"Z"});
  pb::ModelDocument doc = document(b, std::move(g));
  EXPECT_TRUE(check::sort_nodes_topologically(doc).empty());
  EXPECT_EQ(op_order(*doc.model.graph), (std::vector<std::string>{"Add", "Neg", "Abs"}));
  EXPECT_TRUE(mentions(check::check_model(doc), "cycle"));
  EXPECT_THROW(Session::from_bytes(pb::serialize_model(doc.model)), Error);
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
