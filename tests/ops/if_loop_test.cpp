#include <gtest/gtest.h>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;

using testing::make_tensor;
using testing::ModelBuilder;
using testing::values_of;
using D = DataType;

Tensor scalar_bool(bool v) { return make_tensor<uint8_t>(D::Bool, {}, {static_cast<uint8_t>(v)}); }
Tensor scalar_i64(int64_t v) { return make_tensor<int64_t>(D::Int64, {}, {v}); }

// If whose branches compute from outer-scope values: then a + b, else a - b.
pb::Graph if_model(ModelBuilder& mb, std::vector<int64_t> a_dims = {2}, std::vector<int64_t> b_dims = {2}) {
  pb::Graph g;
  mb.input(g, "cond", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(g, "a", mb.tensor_t(D::Float, a_dims));
  mb.input(g, "b", mb.tensor_t(D::Float, b_dims));
  pb::Graph then_g, else_g;
  mb.node(then_g, "Add", {"a", "b"}, {"t"});
  mb.output(then_g, "t");
  mb.node(else_g, "Sub", {"a", "b"}, {"e"});
  mb.output(else_g, "e");
  pb::Node& n = mb.node(g, "If", {"cond"}, {"y"});
  mb.attr_graph(n, "then_branch", std::move(then_g));
  mb.attr_graph(n, "else_branch", std::move(else_g));
  mb.output(g, "y");
  return g;
}

TEST(If, RunsTheChosenBranchWithOuterScopeValues_Opset11) {
  for (bool c : {true, false}) {
    ModelBuilder mb;
    auto out = mb.run(if_model(mb), 11,
                      {{"cond", Datum::of(scalar_bool(c))},
                       {"a", Datum::of(make_tensor<float>(D::Float, {2}, {5, 7}))},
                       {"b", Datum::of(make_tensor<float>(D::Float, {2}, {1, 2}))}});
    EXPECT_EQ(values_of<float>(out.at(0).tensor), c ? (std::vector<float>{6, 9}) : (std::vector<float>{4, 5}));
  }
}

TEST(If, InfersTheUnionOfTheBranchShapes_Opset16) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "cond", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(g, "a", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.input(g, "b", mb.tensor_t(D::Float, std::vector<int64_t>{3}));
  pb::Graph then_g, else_g;
  mb.node(then_g, "Add", {"a", "a"}, {"t"});
  mb.output(then_g, "t");
  mb.node(else_g, "Add", {"b", "b"}, {"e"});
  mb.output(else_g, "e");
  pb::Node& n = mb.node(g, "If", {"cond"}, {"y"});
  mb.attr_graph(n, "then_branch", std::move(then_g));
  mb.attr_graph(n, "else_branch", std::move(else_g));
  mb.output(g, "y");
  Session s = mb.session(std::move(g), 16);
  const Type& t = s.outputs().at(0).type;
  EXPECT_EQ(t.elem, D::Float);
  ASSERT_TRUE(t.shape.rank_known);
  ASSERT_EQ(t.shape.dims.size(), 1u);
  EXPECT_FALSE(t.shape.dims[0].value.has_value());  // 2 or 3
  auto out = s.run({{"cond", Datum::of(scalar_bool(false))},
                    {"a", Datum::of(make_tensor<float>(D::Float, {2}, {1, 2}))},
                    {"b", Datum::of(make_tensor<float>(D::Float, {3}, {1, 2, 3}))}});
  EXPECT_EQ(values_of<float>(out.at(0).second.tensor), (std::vector<float>{2, 4, 6}));
}

// Branches yielding sequences: allowed from opset 13, refused before.
pb::Graph if_seq_model(ModelBuilder& mb) {
  pb::Graph g;
  mb.input(g, "cond", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(g, "a", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  pb::Graph then_g, else_g;
  mb.node(then_g, "SequenceConstruct", {"a"}, {"t"});
  mb.output(then_g, "t");
  mb.node(else_g, "SequenceConstruct", {"a", "a"}, {"e"});
  mb.output(else_g, "e");
  pb::Node& n = mb.node(g, "If", {"cond"}, {"y"});
  mb.attr_graph(n, "then_branch", std::move(then_g));
  mb.attr_graph(n, "else_branch", std::move(else_g));
  mb.output(g, "y");
  return g;
}

TEST(If, SequenceOutputsNeedOpset13) {
  ModelBuilder mb;
  auto out = mb.run(if_seq_model(mb), 13,
                    {{"cond", Datum::of(scalar_bool(false))}, {"a", Datum::of(make_tensor<float>(D::Float, {2}, {1, 2}))}});
  ASSERT_EQ(out.at(0).kind, Datum::Kind::Sequence);
  EXPECT_EQ(out.at(0).elements.size(), 2u);
  ModelBuilder mb11;
  std::string e = error_of([&] { mb11.session(if_seq_model(mb11), 11); });
  EXPECT_NE(e.find("sequences need opset 13"), std::string::npos) << e;
}

TEST(If, BranchesWithDifferentElementTypesAreAnError_Opset16) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "cond", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(g, "a", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.input(g, "i", mb.tensor_t(D::Int64, std::vector<int64_t>{2}));
  pb::Graph then_g, else_g;
  mb.node(then_g, "Add", {"a", "a"}, {"t"});
  mb.output(then_g, "t");
  mb.node(else_g, "Add", {"i", "i"}, {"e"});
  mb.output(else_g, "e");
  pb::Node& n = mb.node(g, "If", {"cond"}, {"y"});
  mb.attr_graph(n, "then_branch", std::move(then_g));
  mb.attr_graph(n, "else_branch", std::move(else_g));
  mb.output(g, "y");
  std::string e = error_of([&] { mb.session(std::move(g), 16); });
  EXPECT_NE(e.find("(If)"), std::string::npos) << e;
  EXPECT_NE(e.find("element types float and int64 differ"), std::string::npos) << e;
}

TEST(If, ConditionMustHoldOneValue_Opset11) {
  ModelBuilder mb;
  pb::Graph g = if_model(mb);
  g.input[0].type = mb.tensor_t(D::Bool, std::vector<int64_t>{2});
  std::string e = error_of([&] {
    mb.run(std::move(g), 11,
           {{"cond", Datum::of(make_tensor<uint8_t>(D::Bool, {2}, {1, 0}))},
            {"a", Datum::of(make_tensor<float>(D::Float, {2}, {5, 7}))},
            {"b", Datum::of(make_tensor<float>(D::Float, {2}, {1, 2}))}});
  });
  EXPECT_NE(e.find("cond must hold one value"), std::string::npos) << e;
}

// Loop: y carried (y += x each iteration, x from the outer scope) and a scan output of y after each step.
pb::Graph loop_model(ModelBuilder& mb, bool with_m = true, bool with_cond = true) {
  pb::Graph g;
  if (with_m) mb.input(g, "M", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  if (with_cond) mb.input(g, "cond", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(g, "y0", mb.tensor_t(D::Float, std::vector<int64_t>{1}));
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{1}));
  pb::Graph body;
  mb.input(body, "i", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(body, "y_in", mb.tensor_t(D::Float, std::vector<int64_t>{1}));
  mb.node(body, "Add", {"y_in", "x"}, {"y_out"});
  mb.node(body, "Add", {"y_in", "x"}, {"scan"});
  mb.output(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.output(body, "y_out", mb.tensor_t(D::Float, std::vector<int64_t>{1}));
  mb.output(body, "scan", mb.tensor_t(D::Float, std::vector<int64_t>{1}));
  pb::Node& n = mb.node(g, "Loop", {with_m ? "M" : "", with_cond ? "cond" : "", "y0"}, {"y", "ys"});
  mb.attr_graph(n, "body", std::move(body));
  mb.output(g, "y");
  mb.output(g, "ys");
  return g;
}

TEST(Loop, CarriesValuesAndStacksScanOutputs_Opset11) {
  ModelBuilder mb;
  auto out = mb.run(loop_model(mb), 11,
                    {{"M", Datum::of(scalar_i64(4))},
                     {"cond", Datum::of(scalar_bool(true))},
                     {"y0", Datum::of(make_tensor<float>(D::Float, {1}, {1}))},
                     {"x", Datum::of(make_tensor<float>(D::Float, {1}, {2}))}});
  EXPECT_EQ(values_of<float>(out.at(0).tensor), (std::vector<float>{9}));
  EXPECT_EQ(out.at(1).tensor.dims(), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(values_of<float>(out.at(1).tensor), (std::vector<float>{3, 5, 7, 9}));
}

TEST(Loop, FalseConditionRunsNoIterationAndScanOutputsAreEmpty_Opset13) {
  ModelBuilder mb;
  Session s = mb.session(loop_model(mb, false, true), 13);
  // Inference: y keeps [1]; ys is [?, 1].
  const Type& ys = s.outputs().at(1).type;
  ASSERT_EQ(ys.shape.dims.size(), 2u);
  EXPECT_FALSE(ys.shape.dims[0].value.has_value());
  EXPECT_EQ(ys.shape.dims[1].value, 1);
  auto out = s.run({{"cond", Datum::of(scalar_bool(false))},
                    {"y0", Datum::of(make_tensor<float>(D::Float, {1}, {1}))},
                    {"x", Datum::of(make_tensor<float>(D::Float, {1}, {2}))}});
  EXPECT_EQ(values_of<float>(out.at(0).second.tensor), (std::vector<float>{1}));
  EXPECT_EQ(out.at(1).second.tensor.dims(), (std::vector<int64_t>{0, 1}));
}

TEST(Loop, EndlessLoopIsRefused_Opset11) {
  ModelBuilder mb;
  std::string e = error_of([&] {
    mb.run(loop_model(mb, false, true), 11,
           {{"cond", Datum::of(scalar_bool(true))},
            {"y0", Datum::of(make_tensor<float>(D::Float, {1}, {1}))},
            {"x", Datum::of(make_tensor<float>(D::Float, {1}, {2}))}});
  });
  EXPECT_NE(e.find("the loop would never end"), std::string::npos) << e;
}

TEST(Loop, NegativeTripCountRunsNoIteration_Opset1) {
  ModelBuilder mb;
  auto out = mb.run(loop_model(mb, true, false), 1,
                    {{"M", Datum::of(scalar_i64(-3))},
                     {"y0", Datum::of(make_tensor<float>(D::Float, {1}, {1}))},
                     {"x", Datum::of(make_tensor<float>(D::Float, {1}, {2}))}});
  EXPECT_EQ(values_of<float>(out.at(0).tensor), (std::vector<float>{1}));
}

// A sequence carried through the loop (opset 13+): each iteration appends its iteration number.
pb::Graph loop_seq_model(ModelBuilder& mb) {
  pb::Graph g;
  mb.input(g, "M", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(g, "s0", mb.seq_t(mb.tensor_t(D::Int64)));
  pb::Graph body;
  mb.input(body, "i", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(body, "s_in", mb.seq_t(mb.tensor_t(D::Int64)));
  mb.node(body, "SequenceInsert", {"s_in", "i"}, {"s_out"});
  mb.output(body, "c");
  mb.output(body, "s_out");
  pb::Node& n = mb.node(g, "Loop", {"M", "", "s0"}, {"s"});
  mb.attr_graph(n, "body", std::move(body));
  mb.output(g, "s");
  return g;
}

TEST(Loop, SequencesAreCarriedFromOpset13) {
  ModelBuilder mb;
  auto out = mb.run(loop_seq_model(mb), 13,
                    {{"M", Datum::of(scalar_i64(3))}, {"s0", Datum::sequence({}, Type::tensor(D::Int64))}});
  ASSERT_EQ(out.at(0).kind, Datum::Kind::Sequence);
  ASSERT_EQ(out.at(0).elements.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(out.at(0).elements[i].tensor.data<int64_t>()[0], i);
  ModelBuilder mb11;
  std::string e = error_of([&] { mb11.session(loop_seq_model(mb11), 11); });
  EXPECT_NE(e.find("sequences need opset 13"), std::string::npos) << e;
}

TEST(Loop, OptionalStateStartsEmpty_Opset16) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "M", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(g, "o0", mb.opt_t(mb.tensor_t(D::Int64, std::vector<int64_t>{})));
  pb::Graph body;
  mb.input(body, "i", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(body, "o_in", mb.opt_t(mb.tensor_t(D::Int64, std::vector<int64_t>{})));
  mb.node(body, "OptionalHasElement", {"o_in"}, {"has"});
  mb.node(body, "Optional", {"i"}, {"o_out"});
  mb.output(body, "c");
  mb.output(body, "o_out");
  mb.output(body, "has");
  pb::Node& n = mb.node(g, "Loop", {"M", "", "o0"}, {"o", "hs"});
  mb.attr_graph(n, "body", std::move(body));
  mb.output(g, "o");
  mb.output(g, "hs");
  auto out = mb.run(std::move(g), 16,
                    {{"M", Datum::of(scalar_i64(3))}, {"o0", Datum::optional(std::nullopt, Type::tensor(D::Int64))}});
  ASSERT_EQ(out.at(0).kind, Datum::Kind::Optional);
  ASSERT_EQ(out.at(0).elements.size(), 1u);
  EXPECT_EQ(out.at(0).elements[0].tensor.data<int64_t>()[0], 2);
  EXPECT_EQ(values_of<bool>(out.at(1).tensor), (std::vector<bool>{false, true, true}));
}

TEST(Loop, ScanOutputShapeChangingBetweenIterationsIsAnError_Opset13) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "M", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(g, "s0", mb.seq_t(mb.tensor_t(D::Int64)));
  pb::Graph body;
  mb.input(body, "i", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.input(body, "c", mb.tensor_t(D::Bool, std::vector<int64_t>{}));
  mb.input(body, "s_in", mb.seq_t(mb.tensor_t(D::Int64)));
  mb.node(body, "SequenceInsert", {"s_in", "i"}, {"s_out"});
  pb::Node& cat_node = mb.node(body, "ConcatFromSequence", {"s_out"}, {"all"});
  mb.attr_int(cat_node, "axis", 0);
  mb.attr_int(cat_node, "new_axis", 1);
  mb.output(body, "c");
  mb.output(body, "s_out");
  mb.output(body, "all");
  pb::Node& n = mb.node(g, "Loop", {"M", "", "s0"}, {"s", "scan"});
  mb.attr_graph(n, "body", std::move(body));
  mb.output(g, "s");
  mb.output(g, "scan");
  std::string e = error_of([&] {
    mb.run(std::move(g), 13, {{"M", Datum::of(scalar_i64(3))}, {"s0", Datum::sequence({}, Type::tensor(D::Int64))}});
  });
  EXPECT_NE(e.find("scan output 0 has shape [2] at iteration 1 but [1] at iteration 0"), std::string::npos) << e;
}

TEST(Loop, BodyWithTheWrongNumberOfInputsIsRefused_Opset11) {
  ModelBuilder mb;
  pb::Graph g = loop_model(mb);
  mb.input(*g.node[0].attribute[0].g, "extra", mb.tensor_t(D::Float, std::vector<int64_t>{1}));
  std::string e = error_of([&] { mb.session(std::move(g), 11); });
  EXPECT_NE(e.find("(Loop)"), std::string::npos) << e;
  EXPECT_NE(e.find("body takes 4 inputs"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
