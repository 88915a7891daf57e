#include <gtest/gtest.h>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count()); }

TEST(DeformConv, ZeroOffsetsIsPlainConvolution_Opset19) {
  auto out = OneNode("DeformConv", 19)
                 .input("X", make_tensor<float>(DataType::Float, {1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}))
                 .input("W", make_tensor<float>(DataType::Float, {1, 1, 2, 2}, {1, 1, 1, 1}))
                 .input("offset", make_tensor<float>(DataType::Float, {1, 8, 2, 2}, std::vector<float>(32, 0)))
                 .run();
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(values(out.at(0).tensor), (std::vector<float>{8, 12, 20, 24}));
}

TEST(DeformConv, FractionalOffsetsMaskAndBias_Opset22) {
  auto out = OneNode("DeformConv", 22)
                 .input("X", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {2, 4}))
                 .input("W", make_tensor<float>(DataType::Float, {1, 1, 1, 1}, {1}))
                 .input("offset", make_tensor<float>(DataType::Float, {1, 2, 1, 2}, {0, 0, 0.5f, 0.5f}))
                 .input("B", make_tensor<float>(DataType::Float, {1}, {10}))
                 .input("mask", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {0.5f, 0.5f}))
                 .run();
  EXPECT_EQ(values(out.at(0).tensor), (std::vector<float>{11.5f, 11}));
}

TEST(DeformConv, OffsetShapeIsChecked_Opset19) {
  try {
    OneNode("DeformConv", 19)
        .input("X", make_tensor<float>(DataType::Float, {1, 1, 3, 3}, std::vector<float>(9, 1)))
        .input("W", make_tensor<float>(DataType::Float, {1, 1, 2, 2}, {1, 1, 1, 1}))
        .input("offset", make_tensor<float>(DataType::Float, {1, 4, 2, 2}, std::vector<float>(16, 0)))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("offset shape"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
