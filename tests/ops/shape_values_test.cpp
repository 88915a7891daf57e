// Symbolic shape values through whole sessions: Shape gives the dims of its input as dim values, and the ops that
// move or combine the elements of shape tensors (Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, Flatten, Cast,
// Mul, Div) carry them forward to the ops that take a shape (Reshape, Expand, ConstantOfShape, Tile).
#include <gtest/gtest.h>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

// x.view(x.size(0), -1): Shape -> Gather (scalar index) -> Unsqueeze -> Concat -> Reshape keeps the batch symbol.
TEST(ShapeValues, ShapeGatherUnsqueezeConcatReshapeKeepsSymbolicBatch) {
  GraphBuilder b(13);
  b.input("X", DataType::Float, {"N", "3", "4", "4"});
  b.initializer("zero", i64({}, {0})).initializer("axes0", i64({1}, {0})).initializer("minus1", i64({1}, {-1}));
  b.node("Shape", {"X"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"n"});
  b.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  auto& c = b.node("Concat", {"n1", "minus1"}, {"target"});
  b.attr_int(c, "axis", 0);
  b.node("Reshape", {"X", "target"}, {"Y"});
  b.output("Y").output("target");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[N,48]");
  EXPECT_EQ(output_type(s, 1), "int64[2]");
  for (int64_t n : {1, 2, 5}) {
    auto out = s.run({{"X", Datum::of(iota_f32({n, 3, 4, 4}))}});
    EXPECT_EQ(out.at(0).second.tensor.dims(), (std::vector<int64_t>{n, 48}));
    EXPECT_EQ(values_of<int64_t>(out.at(1).second.tensor), (std::vector<int64_t>{n, -1}));
  }
}

// Slice, Cast to int32 and back, Mul by a constant, Gather with 1-D indices and Div build [N, 6, 4] from [N, 3, 8].
TEST(ShapeValues, SliceCastGatherAndArithmeticReachReshape) {
  GraphBuilder b(13);
  b.input("X", DataType::Float, {"N", "3", "8"});
  b.initializer("s0", i64({1}, {0})).initializer("s2", i64({1}, {2})).initializer("scale", i64({2}, {1, 2}));
  b.initializer("idx2", i64({1}, {2})).initializer("two", i64({1}, {2}));
  b.node("Shape", {"X"}, {"s"});
  b.node("Slice", {"s", "s0", "s2"}, {"head"});  // {N, 3}
  b.attr_int(b.node("Cast", {"head"}, {"h32"}), "to", static_cast<int64_t>(DataType::Int32));
  b.attr_int(b.node("Cast", {"h32"}, {"h64"}), "to", static_cast<int64_t>(DataType::Int64));
  b.node("Mul", {"h64", "scale"}, {"m"});     // {N, 6}
  b.node("Gather", {"s", "idx2"}, {"last"});  // {8}
  b.node("Div", {"last", "two"}, {"half"});   // {4}
  b.attr_int(b.node("Concat", {"m", "half"}, {"target"}), "axis", 0);
  b.node("Reshape", {"X", "target"}, {"Y"});
  b.output("Y");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[N,6,4]");
  auto out = s.run({{"X", Datum::of(iota_f32({2, 3, 8}))}});
  EXPECT_EQ(out.at(0).second.tensor.dims(), (std::vector<int64_t>{2, 6, 4}));
}

// Squeeze to 0-D and back, Shape with start, Flatten and Reshape of shape tensors; Tile, Expand and
// ConstantOfShape take the results.
TEST(ShapeValues, SqueezeFlattenAndShapeStartReachTileExpandConstantOfShape) {
  GraphBuilder b(15);  // Shape-15: start/end
  b.input("X", DataType::Float, {"N", "3", "8"});
  b.initializer("i0", i64({1}, {0})).initializer("axes0", i64({1}, {0})).initializer("one", i64({1}, {1}));
  b.initializer("flat", i64({1}, {-1})).initializer("W", iota_f32({1, 2, 3}));
  b.node("Shape", {"X"}, {"s"});
  b.node("Gather", {"s", "i0"}, {"n1d"});        // {N} (1-D)
  b.node("Squeeze", {"n1d", "axes0"}, {"n0d"});  // N (0-D)
  b.node("Unsqueeze", {"n0d", "axes0"}, {"n"});  // {N}
  b.attr_int(b.node("Concat", {"n", "one", "one"}, {"reps"}), "axis", 0);
  b.node("Tile", {"W", "reps"}, {"T"});  // [N, 2, 3]
  b.attr_int(b.node("Shape", {"X"}, {"tail"}), "start", 1);  // {3, 8}
  b.node("Flatten", {"tail"}, {"tail2d"});                   // [1, 2] holding {3, 8}
  b.node("Reshape", {"tail2d", "flat"}, {"tail1d"});         // {3, 8}
  b.attr_int(b.node("Concat", {"n", "tail1d"}, {"full"}), "axis", 0);
  b.node("ConstantOfShape", {"full"}, {"Z"});  // [N, 3, 8]
  b.attr_int(b.node("Concat", {"one", "n", "one"}, {"e"}), "axis", 0);
  b.node("Expand", {"W", "e"}, {"E"});  // [1, 2, 3] with [1, N, 1]: [1, ?, 3] (N may be 1 or 2)
  b.output("T").output("Z").output("E");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[N,2,3]");
  EXPECT_EQ(output_type(s, 1), "float[N,3,8]");
  auto out = s.run({{"X", Datum::of(iota_f32({2, 3, 8}))}});
  EXPECT_EQ(out.at(0).second.tensor.dims(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(out.at(1).second.tensor.dims(), (std::vector<int64_t>{2, 3, 8}));
  EXPECT_EQ(out.at(2).second.tensor.dims(), (std::vector<int64_t>{1, 2, 3}));
}

// Arithmetic on a symbol that no identity keeps gives an unknown dim; static elements stay exact.
TEST(ShapeValues, ArithmeticLosesOnlyTheSymbol) {
  GraphBuilder b(13);
  b.input("X", DataType::Float, {"N", "3", "4"});
  b.node("Shape", {"X"}, {"s"});
  b.node("Add", {"s", "s"}, {"twice"});  // {?, 6, 8}
  b.node("Sub", {"s", "s"}, {"none"});   // {0, 0, 0}
  b.node("ConstantOfShape", {"twice"}, {"Z"});
  b.node("ConstantOfShape", {"none"}, {"E"});
  b.output("Z").output("E");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[?,6,8]");
  EXPECT_EQ(output_type(s, 1), "float[0,0,0]");
  auto out = s.run({{"X", Datum::of(iota_f32({2, 3, 4}))}});
  EXPECT_EQ(out.at(0).second.tensor.dims(), (std::vector<int64_t>{4, 6, 8}));
  EXPECT_EQ(out.at(1).second.tensor.dims(), (std::vector<int64_t>{0, 0, 0}));
}

}  // namespace
}  // namespace onyx
