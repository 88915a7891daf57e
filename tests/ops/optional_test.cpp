#include <gtest/gtest.h>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;

using testing::make_tensor;
using testing::ModelBuilder;
using testing::OneNode;
using testing::values_of;
using D = DataType;

// Optional(x) -> OptionalHasElement, OptionalGetElement.
TEST(Optional, WrapsItsInputAndGivesItBack_Opset15) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.node(g, "Optional", {"x"}, {"o"});
  mb.node(g, "OptionalHasElement", {"o"}, {"has"});
  mb.node(g, "OptionalGetElement", {"o"}, {"y"});
  mb.output(g, "o");
  mb.output(g, "has");
  mb.output(g, "y");
  Session s = mb.session(std::move(g), 15);
  EXPECT_EQ(s.outputs().at(0).type.to_string(), "optional(tensor(float))");
  EXPECT_EQ(s.outputs().at(2).type.to_string_with_shape(), "float[2]");
  auto out = s.run({{"x", Datum::of(make_tensor<float>(D::Float, {2}, {1, 2}))}});
  EXPECT_EQ(out.at(0).second.kind, Datum::Kind::Optional);
  EXPECT_TRUE(out.at(1).second.tensor.data<bool>()[0]);
  EXPECT_EQ(values_of<float>(out.at(2).second.tensor), (std::vector<float>{1, 2}));
}

pb::Graph empty_optional_model(ModelBuilder& mb, bool get) {
  pb::Graph g;
  pb::Node& n = mb.node(g, "Optional", {}, {"o"});
  mb.attr_type(n, "type", mb.seq_t(mb.tensor_t(D::Int64)));
  mb.node(g, get ? "OptionalGetElement" : "OptionalHasElement", {"o"}, {"r"});
  mb.output(g, "o");
  mb.output(g, "r");
  return g;
}

TEST(Optional, EmptyFromTheTypeAttribute_Opset15) {
  ModelBuilder mb;
  auto out = mb.run(empty_optional_model(mb, false), 15, {});
  ASSERT_EQ(out.at(0).kind, Datum::Kind::Optional);
  EXPECT_TRUE(out.at(0).is_none());
  EXPECT_EQ(out.at(0).elem_type.to_string(), "seq(tensor(int64))");
  EXPECT_FALSE(out.at(1).tensor.data<bool>()[0]);
}

TEST(OptionalGetElement, EmptyOptionalIsAnError_Opset18) {
  ModelBuilder mb;
  std::string e = error_of([&] { mb.run(empty_optional_model(mb, true), 18, {}); });
  EXPECT_NE(e.find("(OptionalGetElement)"), std::string::npos) << e;
  EXPECT_NE(e.find("the optional input is empty"), std::string::npos) << e;
}

TEST(Optional, NeedsAnInputOrAType_Opset15) {
  std::string e = error_of([] { OneNode("Optional", 15).run(); });
  EXPECT_NE(e.find("Optional needs an input or the 'type' attribute"), std::string::npos) << e;
}

TEST(OptionalHasElement, PlainTensorsAreAcceptedFromOpset18) {
  auto x = make_tensor<float>(D::Float, {1}, {1});
  auto out = OneNode("OptionalHasElement", 18).input("x", x).run();
  EXPECT_TRUE(out.at(0).tensor.data<bool>()[0]);
  auto got = OneNode("OptionalGetElement", 18).input("x", x).run();
  EXPECT_EQ(values_of<float>(got.at(0).tensor), (std::vector<float>{1}));
  std::string e = error_of([&] { OneNode("OptionalHasElement", 15).input("x", x).run(); });
  EXPECT_NE(e.find("expected an optional (tensors and sequences need opset 18)"), std::string::npos) << e;
  std::string e2 = error_of([&] { OneNode("OptionalGetElement", 15).input("x", x).run(); });
  EXPECT_NE(e2.find("expected an optional (tensors and sequences need opset 18)"), std::string::npos) << e2;
}

TEST(OptionalHasElement, MissingInputIsFalseFromOpset18) {
  auto out = OneNode("OptionalHasElement", 18).omitted_input().run();
  EXPECT_FALSE(out.at(0).tensor.data<bool>()[0]);
  auto none = OneNode("OptionalHasElement", 18).run();
  EXPECT_FALSE(none.at(0).tensor.data<bool>()[0]);
  std::string e = error_of([] { OneNode("OptionalHasElement", 15).run(); });
  EXPECT_NE(e.find("0 inputs, but OptionalHasElement-15 takes 1"), std::string::npos) << e;
}

TEST(OptionalHasElement, OptionalFeedsWithAndWithoutAValue_Opset18) {
  for (bool with : {true, false}) {
    ModelBuilder mb;
    pb::Graph g;
    mb.input(g, "o", mb.opt_t(mb.tensor_t(D::Float, std::vector<int64_t>{1})));
    mb.node(g, "OptionalHasElement", {"o"}, {"has"});
    mb.output(g, "has");
    std::optional<Datum> v;
    if (with) v = Datum::of(make_tensor<float>(D::Float, {1}, {3}));
    auto out = mb.run(std::move(g), 18, {{"o", Datum::optional(v, Type::tensor(D::Float))}});
    EXPECT_EQ(out.at(0).tensor.data<bool>()[0], with);
  }
}

}  // namespace
}  // namespace onyx
