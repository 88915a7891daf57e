#include <gtest/gtest.h>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;
using testing::f32;
using testing::i64;

using testing::make_tensor;
using testing::ModelBuilder;
using testing::OneNode;
using testing::values_of;
using D = DataType;

Datum float_seq(std::vector<Tensor> ts) {
  std::vector<Datum> items;
  for (auto& t : ts) items.push_back(Datum::of(std::move(t)));
  return Datum::sequence(std::move(items), Type::tensor(D::Float));
}

// One sequence op fed a sequence input "s" (float elements) and optional tensor inputs.
struct SeqNode {
  ModelBuilder mb;
  pb::Graph g;
  std::map<std::string, Datum> feeds;
  pb::Node* node = nullptr;
  SeqNode(const std::string& op, std::vector<std::string> ins, int outputs = 1) {
    std::vector<std::string> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back("out" + std::to_string(i));
    node = &mb.node(g, op, ins, outs);
    for (auto& o : outs) mb.output(g, o);
  }
  SeqNode& seq(const std::string& name, Datum d) {
    mb.input(g, name, mb.seq_t(mb.tensor_t(d.elem_type.elem)));
    feeds[name] = std::move(d);
    return *this;
  }
  SeqNode& tensor(const std::string& name, Tensor t) {
    mb.input(g, name, mb.tensor_t(t.dtype(), t.dims()));
    feeds[name] = Datum::of(std::move(t));
    return *this;
  }
  std::vector<Datum> run(int64_t opset) { return mb.run(g, opset, feeds); }
};

TEST(SequenceConstruct, BuildsASequenceAndSequenceAtReadsIt_Opset11) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "a", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.input(g, "b", mb.tensor_t(D::Float, std::vector<int64_t>{3}));
  mb.input(g, "p", mb.tensor_t(D::Int64, std::vector<int64_t>{}));
  mb.node(g, "SequenceConstruct", {"a", "b"}, {"s"});
  mb.node(g, "SequenceAt", {"s", "p"}, {"t"});
  mb.node(g, "SequenceLength", {"s"}, {"n"});
  mb.output(g, "s");
  mb.output(g, "t");
  mb.output(g, "n");
  Session s = mb.session(std::move(g), 11);
  EXPECT_EQ(s.outputs().at(0).type.to_string(), "seq(tensor(float))");
  EXPECT_EQ(s.outputs().at(2).type.to_string_with_shape(), "int64[]");
  auto out = s.run({{"a", Datum::of(f32({2}, {1, 2}))}, {"b", Datum::of(f32({3}, {3, 4, 5}))},
                    {"p", Datum::of(i64({}, {-1}))}});
  ASSERT_EQ(out.at(0).second.elements.size(), 2u);
  EXPECT_EQ(values_of<float>(out.at(1).second.tensor), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(out.at(2).second.tensor.data<int64_t>()[0], 2);
}

TEST(SequenceConstruct, MixedElementTypesAreAnError_Opset11) {
  std::string e = error_of([] {
    OneNode("SequenceConstruct", 11).input("a", f32({1}, {1})).input("b", i64({1}, {1})).run();
  });
  EXPECT_NE(e.find("element types float and int64 differ"), std::string::npos) << e;
}

TEST(SequenceEmpty, TakesItsElementTypeFromDtype_Opset11) {
  auto out = OneNode("SequenceEmpty", 11).attr_int("dtype", static_cast<int64_t>(D::Int64)).run();
  ASSERT_EQ(out.at(0).kind, Datum::Kind::Sequence);
  EXPECT_TRUE(out.at(0).elements.empty());
  EXPECT_EQ(out.at(0).elem_type.elem, D::Int64);
  auto dflt = OneNode("SequenceEmpty", 11).run();
  EXPECT_EQ(dflt.at(0).elem_type.elem, D::Float);
  std::string e = error_of([] { OneNode("SequenceEmpty", 11).attr_int("dtype", 16).run(); });  // bfloat16
  EXPECT_NE(e.find("has element type bfloat16"), std::string::npos) << e;
}

TEST(SequenceInsert, InsertsAtFrontBackAndRejectsOutOfRange_Opset11) {
  auto seq = [] { return float_seq({f32({1}, {1}), f32({1}, {2})}); };
  {
    SeqNode n("SequenceInsert", {"s", "t"});
    auto out = n.seq("s", seq()).tensor("t", f32({1}, {9})).run(11);
    ASSERT_EQ(out.at(0).elements.size(), 3u);
    EXPECT_EQ(out.at(0).elements[2].tensor.data<float>()[0], 9);
  }
  {
    SeqNode n("SequenceInsert", {"s", "t", "p"});
    auto out = n.seq("s", seq()).tensor("t", f32({1}, {9})).tensor("p", i64({}, {-2})).run(11);
    ASSERT_EQ(out.at(0).elements.size(), 3u);
    EXPECT_EQ(out.at(0).elements[0].tensor.data<float>()[0], 9);
  }
  {
    SeqNode n("SequenceInsert", {"s", "t", "p"});
    n.seq("s", seq()).tensor("t", f32({1}, {9})).tensor("p", i64({}, {3}));
    std::string e = error_of([&] { n.run(11); });
    EXPECT_NE(e.find("position 3 is out of range [-2, 2]"), std::string::npos) << e;
  }
}

TEST(SequenceErase, RemovesLastByDefaultAndErrorsWhenEmpty_Opset11) {
  {
    SeqNode n("SequenceErase", {"s"});
    auto out = n.seq("s", float_seq({f32({1}, {1}), f32({1}, {2})})).run(11);
    ASSERT_EQ(out.at(0).elements.size(), 1u);
    EXPECT_EQ(out.at(0).elements[0].tensor.data<float>()[0], 1);
  }
  {
    SeqNode n("SequenceErase", {"s", "p"});
    auto out = n.seq("s", float_seq({f32({1}, {1}), f32({1}, {2})})).tensor("p", i64({}, {0})).run(11);
    EXPECT_EQ(out.at(0).elements[0].tensor.data<float>()[0], 2);
  }
  {
    SeqNode n("SequenceErase", {"s"});
    n.seq("s", float_seq({}));
    std::string e = error_of([&] { n.run(11); });
    EXPECT_NE(e.find("cannot erase from an empty sequence"), std::string::npos) << e;
  }
}

TEST(SequenceAt, OutOfRangePositionIsAnError_Opset11) {
  SeqNode n("SequenceAt", {"s", "p"});
  n.seq("s", float_seq({f32({1}, {1})})).tensor("p", i64({}, {-2}));
  std::string e = error_of([&] { n.run(11); });
  EXPECT_NE(e.find("(SequenceAt)"), std::string::npos) << e;
  EXPECT_NE(e.find("position -2 is out of range [-1, 0]"), std::string::npos) << e;
}

TEST(SplitToSequence, ScalarSplitGivesASmallerLastChunk_Opset11) {
  auto out = OneNode("SplitToSequence", 11)
                 .input("x", f32({5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}))
                 .input("split", i64({}, {2}))
                 .run();
  ASSERT_EQ(out.at(0).elements.size(), 3u);
  EXPECT_EQ(out.at(0).elements[0].tensor.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out.at(0).elements[2].tensor.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values_of<float>(out.at(0).elements[2].tensor), (std::vector<float>{9, 10}));
}

TEST(SplitToSequence, ListSplitAlongAxis1_Opset24) {
  auto out = OneNode("SplitToSequence", 24)
                 .input("x", f32({2, 3}, {1, 2, 3, 4, 5, 6}))
                 .input("split", i64({2}, {1, 2}))
                 .attr_int("axis", 1)
                 .run();
  ASSERT_EQ(out.at(0).elements.size(), 2u);
  EXPECT_EQ(values_of<float>(out.at(0).elements[0].tensor), (std::vector<float>{1, 4}));
  EXPECT_EQ(values_of<float>(out.at(0).elements[1].tensor), (std::vector<float>{2, 3, 5, 6}));
}

TEST(SplitToSequence, NoSplitWithoutKeepdimsDropsTheAxis_Opset11) {
  auto out = OneNode("SplitToSequence", 11)
                 .input("x", f32({2, 3}, {1, 2, 3, 4, 5, 6}))
                 .attr_int("axis", -1)
                 .attr_int("keepdims", 0)
                 .run();
  ASSERT_EQ(out.at(0).elements.size(), 3u);
  EXPECT_EQ(out.at(0).elements[1].tensor.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values_of<float>(out.at(0).elements[1].tensor), (std::vector<float>{2, 5}));
}

TEST(SplitToSequence, SplitsThatDoNotSumToTheAxisAreAnError_Opset11) {
  std::string e = error_of([] {
    OneNode("SplitToSequence", 11).input("x", f32({3}, {1, 2, 3})).input("split", i64({2}, {1, 1})).run();
  });
  EXPECT_NE(e.find("split lengths sum to 2, the axis has size 3"), std::string::npos) << e;
  std::string e2 = error_of([] {
    OneNode("SplitToSequence", 11).input("x", f32({3}, {1, 2, 3})).input("split", i64({}, {0})).run();
  });
  EXPECT_NE(e2.find("split must be positive, got 0"), std::string::npos) << e2;
}

TEST(SplitToSequence, EmptyTensorWithAHugeAxisIsRefused_Opset11) {
  Tensor x = Tensor::allocate(D::Float, {int64_t{1} << 40, 0});
  std::string e = error_of([&] { OneNode("SplitToSequence", 11).input("x", x).run(); });
  EXPECT_NE(e.find("chunks is refused (too many)"), std::string::npos) << e;
}

TEST(SplitToSequence, Float8NeedsOpset24) {
  Tensor x = Tensor::allocate(D::Float8E4M3FN, {4});
  auto out = OneNode("SplitToSequence", 24).input("x", x).run();
  EXPECT_EQ(out.at(0).elements.size(), 4u);
  std::string e = error_of([&] { OneNode("SplitToSequence", 11).input("x", x).run(); });
  EXPECT_NE(e.find("has element type float8e4m3fn"), std::string::npos) << e;
}

TEST(ConcatFromSequence, ConcatenatesOrStacks_Opset11) {
  auto seq = [] { return float_seq({f32({1, 2}, {1, 2}), f32({1, 2}, {3, 4})}); };
  {
    SeqNode n("ConcatFromSequence", {"s"});
    n.mb.attr_int(*n.node, "axis", 1);
    auto out = n.seq("s", seq()).run(11);
    EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 4}));
    EXPECT_EQ(values_of<float>(out.at(0).tensor), (std::vector<float>{1, 2, 3, 4}));
  }
  {
    SeqNode n("ConcatFromSequence", {"s"});
    n.mb.attr_int(*n.node, "axis", -1);
    n.mb.attr_int(*n.node, "new_axis", 1);
    auto out = n.seq("s", seq()).run(11);
    EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 2, 2}));
    EXPECT_EQ(values_of<float>(out.at(0).tensor), (std::vector<float>{1, 3, 2, 4}));
  }
}

TEST(ConcatFromSequence, BadAxisAndEmptySequenceAreErrors_Opset11) {
  {
    SeqNode n("ConcatFromSequence", {"s"});
    n.mb.attr_int(*n.node, "axis", 2);
    n.seq("s", float_seq({f32({1, 2}, {1, 2})}));
    std::string e = error_of([&] { n.run(11); });
    EXPECT_NE(e.find("axis 2 is out of range for rank 2"), std::string::npos) << e;
  }
  {
    SeqNode n("ConcatFromSequence", {"s"});
    n.mb.attr_int(*n.node, "axis", 0);
    n.seq("s", float_seq({}));
    std::string e = error_of([&] { n.run(11); });
    EXPECT_NE(e.find("cannot concatenate an empty sequence"), std::string::npos) << e;
  }
}

// SequenceMap body: out = x + y.
pb::Graph add_body(ModelBuilder& mb) {
  pb::Graph body;
  mb.input(body, "x", mb.tensor_t(D::Float));
  mb.input(body, "y", mb.tensor_t(D::Float));
  mb.node(body, "Add", {"x", "y"}, {"z"});
  mb.output(body, "z", mb.tensor_t(D::Float));
  return body;
}

TEST(SequenceMap, AddsATensorOrASecondSequence_Opset17) {
  {
    SeqNode n("SequenceMap", {"s", "t"});
    n.mb.attr_graph(*n.node, "body", add_body(n.mb));
    auto out = n.seq("s", float_seq({f32({1}, {1}), f32({2}, {2, 3})})).tensor("t", f32({1}, {10})).run(17);
    ASSERT_EQ(out.at(0).elements.size(), 2u);
    EXPECT_EQ(values_of<float>(out.at(0).elements[1].tensor), (std::vector<float>{12, 13}));
  }
  {
    SeqNode n("SequenceMap", {"s", "u"});
    n.mb.attr_graph(*n.node, "body", add_body(n.mb));
    auto out = n.seq("s", float_seq({f32({1}, {1}), f32({1}, {2})})).seq("u", float_seq({f32({1}, {5}), f32({1}, {7})})).run(17);
    EXPECT_EQ(values_of<float>(out.at(0).elements[0].tensor), (std::vector<float>{6}));
    EXPECT_EQ(values_of<float>(out.at(0).elements[1].tensor), (std::vector<float>{9}));
  }
}

TEST(SequenceMap, SequencesOfDifferentLengthsAreAnError_Opset17) {
  SeqNode n("SequenceMap", {"s", "u"});
  n.mb.attr_graph(*n.node, "body", add_body(n.mb));
  n.seq("s", float_seq({f32({1}, {1}), f32({1}, {2})})).seq("u", float_seq({f32({1}, {5})}));
  std::string e = error_of([&] { n.run(17); });
  EXPECT_NE(e.find("input 1 is a sequence of 1 tensors, input 0 has 2"), std::string::npos) << e;
}

TEST(SequenceMap, EmptyInputGivesEmptyTypedSequences_Opset17) {
  SeqNode n("SequenceMap", {"s", "t"});
  n.mb.attr_graph(*n.node, "body", add_body(n.mb));
  auto out = n.seq("s", float_seq({})).tensor("t", f32({1}, {10})).run(17);
  EXPECT_TRUE(out.at(0).elements.empty());
  EXPECT_EQ(out.at(0).elem_type.elem, D::Float);
}

}  // namespace
}  // namespace onyx
