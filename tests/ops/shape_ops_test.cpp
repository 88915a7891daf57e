#include <gtest/gtest.h>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using Dims = std::vector<int64_t>;


TEST(Reshape, ZeroCopiesAndMinusOneInfers_Opset13) {
  auto out = OneNode("Reshape", 13).input("X", iota_f32({2, 3, 4})).input("S", i64({4}, {2, 0, 1, -1})).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{2, 3, 1, 4}));
  EXPECT_EQ(values_of<float>(out[0].tensor)[23], 23.0f);
}

TEST(Reshape, AllowZeroKeepsZeroDims_Opset14) {
  auto out = OneNode("Reshape", 14)
                 .input("X", make_tensor<float>(DataType::Float, {0, 3, 4}, {}))
                 .input("S", i64({3}, {3, 4, 0}))
                 .attr_int("allowzero", 1)
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{3, 4, 0}));
}

TEST(Reshape, ShapeAttributeBeforeOpset5) {
  auto out = OneNode("Reshape", 1).input("X", iota_f32({2, 3})).attr_ints("shape", {3, -1}).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{3, 2}));
}

TEST(Reshape, BadShapesAreClearErrors_Opset14) {
  expect_error(OneNode("Reshape", 14).input("X", iota_f32({2, 3, 4})).input("S", i64({2}, {5, -1})), "cannot reshape [2,3,4]");
  expect_error(OneNode("Reshape", 14).input("X", iota_f32({2, 3})).input("S", i64({2}, {-1, -1})), "more than one -1");
  expect_error(OneNode("Reshape", 14).input("X", iota_f32({6})).input("S", i64({2}, {6, 0})), "copies an input dim");
}

TEST(Shape, FullShapeAndStartEnd_Opset15) {
  auto full = OneNode("Shape", 13).input("X", iota_f32({3, 4, 5})).run();
  EXPECT_EQ(values_of<int64_t>(full.at(0).tensor), (Dims{3, 4, 5}));
  auto sliced = OneNode("Shape", 15).input("X", iota_f32({3, 4, 5})).attr_int("start", -2).attr_int("end", 10).run();
  EXPECT_EQ(values_of<int64_t>(sliced.at(0).tensor), (Dims{4, 5}));
  auto empty = OneNode("Shape", 15).input("X", iota_f32({3, 4, 5})).attr_int("start", 2).attr_int("end", 1).run();
  EXPECT_EQ(empty.at(0).tensor.dims(), (Dims{0}));
}

TEST(Size, CountsElements_Opset13) {
  auto out = OneNode("Size", 13).input("X", iota_f32({3, 4, 5})).run();
  EXPECT_TRUE(out.at(0).tensor.dims().empty());
  EXPECT_EQ(values_of<int64_t>(out[0].tensor), (Dims{60}));
}

TEST(Flatten, AxisAndNegativeAxis) {
  auto out = OneNode("Flatten", 13).input("X", iota_f32({2, 3, 4, 5})).attr_int("axis", -1).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{24, 5}));
  auto zero = OneNode("Flatten", 9).input("X", iota_f32({2, 3})).attr_int("axis", 0).run();
  EXPECT_EQ(zero.at(0).tensor.dims(), (Dims{1, 6}));
  expect_error(OneNode("Flatten", 9).input("X", iota_f32({2, 3})).attr_int("axis", -1), "must not be negative before Flatten-11");
}

TEST(Squeeze, AttributeAxesThenInputAxes) {
  auto a = OneNode("Squeeze", 11).input("X", iota_f32({1, 3, 1, 5})).attr_ints("axes", {-2}).run();
  EXPECT_EQ(a.at(0).tensor.dims(), (Dims{1, 3, 5}));
  auto b = OneNode("Squeeze", 13).input("X", iota_f32({1, 3, 1, 5})).input("A", i64({1}, {0})).run();
  EXPECT_EQ(b.at(0).tensor.dims(), (Dims{3, 1, 5}));
  auto all = OneNode("Squeeze", 13).input("X", iota_f32({1, 3, 1, 5})).run();
  EXPECT_EQ(all.at(0).tensor.dims(), (Dims{3, 5}));
  expect_error(OneNode("Squeeze", 13).input("X", iota_f32({1, 3})).input("A", i64({1}, {1})), "its size is not 1");
}

TEST(Unsqueeze, AxesIndexTheOutput) {
  auto a = OneNode("Unsqueeze", 13).input("X", iota_f32({3, 4, 5})).input("A", i64({2}, {0, 4})).run();
  EXPECT_EQ(a.at(0).tensor.dims(), (Dims{1, 3, 4, 5, 1}));
  auto b = OneNode("Unsqueeze", 11).input("X", iota_f32({3, 4})).attr_ints("axes", {-1, 1}).run();
  EXPECT_EQ(b.at(0).tensor.dims(), (Dims{3, 1, 4, 1}));
  expect_error(OneNode("Unsqueeze", 13).input("X", iota_f32({3})).input("A", i64({2}, {0, 0})), "more than once");
}

TEST(Identity, PassesTensorsThrough_Opset21) {
  auto out = OneNode("Identity", 21).input("X", iota_f32({2, 2})).run();
  EXPECT_EQ(values_of<float>(out.at(0).tensor), (std::vector<float>{0, 1, 2, 3}));
}

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds at session creation, so Reshape's output shape is known.
TEST(ShapeInference, ShapeGatherConcatReshapeChainFolds) {
  GraphBuilder b(13);
  b.input("X", DataType::Float, {"2", "3", "4"});
  b.initializer("zero", i64({}, {0})).initializer("axes0", i64({1}, {0})).initializer("minus1", i64({1}, {-1}));
  b.node("Shape", {"X"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"n"});
  b.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  auto& c = b.node("Concat", {"n1", "minus1"}, {"target"});
  b.attr_int(c, "axis", 0);
  b.node("Reshape", {"X", "target"}, {"Y"});
  b.output("Y");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[2,12]");
  auto out = s.run({{"X", Datum::of(iota_f32({2, 3, 4}))}});
  EXPECT_EQ(out.at(0).second.tensor.dims(), (Dims{2, 12}));
}

TEST(ShapeInference, ReshapeKeepsSymbolicBatch) {
  GraphBuilder b(14);
  b.input("X", DataType::Float, {"N", "3", "4", "4"});
  b.initializer("shape", i64({2}, {0, -1}));
  b.node("Reshape", {"X", "shape"}, {"Y"});
  auto& f = b.node("Flatten", {"X"}, {"F"});
  b.attr_int(f, "axis", 1);
  b.node("Transpose", {"X"}, {"T"});
  b.output("Y").output("F").output("T");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[N,48]");
  EXPECT_EQ(output_type(s, 1), "float[N,48]");
  EXPECT_EQ(output_type(s, 2), "float[4,4,3,N]");
}

TEST(ShapeInference, ShapeOfStaticTailIsKnownWithSymbolicBatch) {
  GraphBuilder b(15);
  b.input("X", DataType::Float, {"N", "3", "8"});
  b.initializer("head", i64({1}, {-1}));
  auto& sh = b.node("Shape", {"X"}, {"tail"});
  b.attr_int(sh, "start", 1);
  auto& c = b.node("Concat", {"head", "tail"}, {"target"});
  b.attr_int(c, "axis", 0);
  b.node("Reshape", {"X", "target"}, {"Y"});
  b.output("Y");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[N,3,8]");
}

}  // namespace
}  // namespace onyx

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

// x.view(x.size(0), -1) as PyTorch exports it: the batch dim stays symbolic through Shape/Gather/Concat.
TEST(ShapeInference, SymbolicShapeValuesReachReshapeExpandAndConstantOfShape) {
  GraphBuilder b(13);
  b.input("X", DataType::Float, {"N", "3", "4", "4"});
  b.initializer("zero", i64({}, {0})).initializer("axes0", i64({1}, {0})).initializer("minus1", i64({1}, {-1}));
  b.initializer("two", i64({1}, {2}));
  b.node("Shape", {"X"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"n"});
  b.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  auto& c = b.node("Concat", {"n1", "minus1"}, {"target"});
  b.attr_int(c, "axis", 0);
  b.node("Reshape", {"X", "target"}, {"Y"});
  auto& c2 = b.node("Concat", {"n1", "two"}, {"ns"});
  b.attr_int(c2, "axis", 0);
  b.node("ConstantOfShape", {"ns"}, {"Z"});
  b.node("Expand", {"minus1", "ns"}, {"E"});
  b.output("Y").output("Z").output("E");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[N,48]");
  EXPECT_EQ(output_type(s, 1), "float[N,2]");
  EXPECT_EQ(output_type(s, 2), "int64[N,2]");
  auto out = s.run({{"X", Datum::of(iota_f32({2, 3, 4, 4}))}});
  EXPECT_EQ(out.at(0).second.tensor.dims(), (std::vector<int64_t>{2, 48}));
  EXPECT_EQ(out.at(1).second.tensor.dims(), (std::vector<int64_t>{2, 2}));
}

}  // namespace
}  // namespace onyx
