#include <gtest/gtest.h>

#include <limits>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using Dims = std::vector<int64_t>;

TEST(Slice, SpecExampleWithSteps_Opset13) {
  // data [[1,2,3,4],[5,6,7,8]], starts [1,0], ends [2,3], axes [0,1], steps [1,2] -> [[5,7]]
  auto out = OneNode("Slice", 13)
                 .input("X", f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
                 .input("s", i64({2}, {1, 0}))
                 .input("e", i64({2}, {2, 3}))
                 .input("a", i64({2}, {0, 1}))
                 .input("st", i64({2}, {1, 2}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{1, 2}));
  EXPECT_EQ(values_of<float>(out[0].tensor), (std::vector<float>{5, 7}));
}

TEST(Slice, NegativeStepsAndClamping_Opset13) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto rev = OneNode("Slice", 13)
                 .input("X", iota_f32({5}))
                 .input("s", i64({1}, {-1}))
                 .input("e", i64({1}, {-big}))
                 .input("a", i64({1}, {0}))
                 .input("st", i64({1}, {-2}))
                 .run();
  EXPECT_EQ(values_of<float>(rev.at(0).tensor), (std::vector<float>{4, 2, 0}));
  auto clamp = OneNode("Slice", 10)
                   .input("X", iota_f32({2, 3}))
                   .input("s", make_tensor<int32_t>(DataType::Int32, {1}, {1}))
                   .input("e", make_tensor<int32_t>(DataType::Int32, {1}, {1000}))
                   .input("a", make_tensor<int32_t>(DataType::Int32, {1}, {-1}))
                   .run();
  EXPECT_EQ(values_of<float>(clamp.at(0).tensor), (std::vector<float>{1, 2, 4, 5}));
  auto empty = OneNode("Slice", 13).input("X", iota_f32({4})).input("s", i64({1}, {10})).input("e", i64({1}, {12})).run();
  EXPECT_EQ(empty.at(0).tensor.dims(), (Dims{0}));
}

TEST(Slice, AttributesInOpset1) {
  auto out = OneNode("Slice", 1).input("X", iota_f32({3, 4})).attr_ints("starts", {1, 1}).attr_ints("ends", {-1, 3}).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{1, 2}));
  EXPECT_EQ(values_of<float>(out[0].tensor), (std::vector<float>{5, 6}));
}

TEST(Slice, ZeroStepAndRepeatedAxesAreErrors_Opset13) {
  try {
    OneNode("Slice", 13).input("X", iota_f32({4})).input("s", i64({1}, {0})).input("e", i64({1}, {4})).input("a", i64({1}, {0})).input("st", i64({1}, {0})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step cannot be 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OneNode("Slice", 13).input("X", iota_f32({4, 4})).input("s", i64({2}, {0, 0})).input("e", i64({2}, {1, 1})).input("a", i64({2}, {1, -1})).run(), Error);
}

TEST(Slice, InferenceKeepsUnslicedSymbolicDims) {
  GraphBuilder b(13);
  b.input("X", DataType::Float, {"N", "10", "M"});
  b.initializer("s", i64({1}, {2})).initializer("e", i64({1}, {-1})).initializer("a", i64({1}, {1}));
  b.node("Slice", {"X", "s", "e", "a"}, {"Y"});
  b.output("Y");
  EXPECT_EQ(output_type(b.session(), 0), "float[N,7,M]");
}

}  // namespace
}  // namespace onyx
