#include <gtest/gtest.h>

#include <numeric>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;
using testing::expect_error;

TEST(CenterCropPad, CropsOneAxisAndPadsAnother_Opset18) {
  // [3, 2] -> [2, 4]: rows 0..1 kept (start (3-2)/2 = 0), one zero column before and after.
  auto out = OneNode("CenterCropPad", 18)
                 .input("x", make_tensor<float>(DataType::Float, {3, 2}, {1, 2, 3, 4, 5, 6}))
                 .input("shape", make_tensor<int64_t>(DataType::Int64, {2}, {2, 4}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{0, 1, 2, 0, 0, 3, 4, 0}));
  auto axes = OneNode("CenterCropPad", 18)
                  .input("x", make_tensor<int32_t>(DataType::Int32, {1, 5}, {1, 2, 3, 4, 5}))
                  .input("shape", make_tensor<int32_t>(DataType::Int32, {1}, {2}))
                  .attr_ints("axes", {-1})
                  .run();
  EXPECT_EQ(values<int32_t>(axes.at(0)), (std::vector<int32_t>{2, 3}));
  expect_error(OneNode("CenterCropPad", 18)
                   .input("x", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                   .input("shape", make_tensor<int64_t>(DataType::Int64, {2}, {1, 1})),
               "shape has 2 values for 1 axes");
}

TEST(Col2Im, SumsOverlappingBlocks_Opset18) {
  // One channel, image [1, 3], blocks [1, 2] with stride 1: 2 positions, overlapping at the middle pixel.
  auto out = OneNode("Col2Im", 18)
                 .input("x", make_tensor<float>(DataType::Float, {1, 2, 2}, {1, 2, 10, 20}))
                 .input("image", make_tensor<int64_t>(DataType::Int64, {2}, {1, 3}))
                 .input("block", make_tensor<int64_t>(DataType::Int64, {2}, {1, 2}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 1, 3}));
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{1, 12, 20}));
}

TEST(Col2Im, SpecExample5x5WithBlocksOf1x5_Opset18) {
  std::vector<float> v(25);
  std::iota(v.begin(), v.end(), 1.0f);
  auto out = OneNode("Col2Im", 18)
                 .input("x", make_tensor<float>(DataType::Float, {1, 5, 5}, v))
                 .input("image", make_tensor<int64_t>(DataType::Int64, {2}, {5, 5}))
                 .input("block", make_tensor<int64_t>(DataType::Int64, {2}, {1, 5}))
                 .run();
  // Column l of the input is image row l.
  auto y = values<float>(out.at(0));
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 6.0f);
  EXPECT_EQ(y[5], 2.0f);
  expect_error(OneNode("Col2Im", 18)
                   .input("x", make_tensor<float>(DataType::Float, {1, 5, 4}, std::vector<float>(20)))
                   .input("image", make_tensor<int64_t>(DataType::Int64, {2}, {5, 5}))
                   .input("block", make_tensor<int64_t>(DataType::Int64, {2}, {1, 5})),
               "differs from the number of blocks 5");
}

}  // namespace
}  // namespace onyx
