#include <gtest/gtest.h>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count()); }

TEST(MaxUnpool, SpecExamplesWithAndWithoutOutputShape_Opset11) {
  auto plain = OneNode("MaxUnpool", 11)
                   .input("X", make_tensor<float>(DataType::Float, {1, 1, 2, 2}, {5, 6, 7, 8}))
                   .input("I", make_tensor<int64_t>(DataType::Int64, {1, 1, 2, 2}, {5, 7, 13, 15}))
                   .attr_ints("kernel_shape", {2, 2})
                   .attr_ints("strides", {2, 2})
                   .run();
  ASSERT_EQ(plain.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(values(plain.at(0).tensor), (std::vector<float>{0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}));
  auto shaped = OneNode("MaxUnpool", 9)
                    .input("X", make_tensor<float>(DataType::Float, {1, 1, 2, 2}, {5, 6, 7, 8}))
                    .input("I", make_tensor<int64_t>(DataType::Int64, {1, 1, 2, 2}, {5, 7, 13, 15}))
                    .input("output_shape", make_tensor<int64_t>(DataType::Int64, {4}, {1, 1, 5, 5}))
                    .attr_ints("kernel_shape", {2, 2})
                    .attr_ints("strides", {2, 2})
                    .run();
  ASSERT_EQ(shaped.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 5, 5}));
  std::vector<float> want(25, 0);
  want[6] = 5, want[8] = 6, want[16] = 7, want[18] = 8;
  EXPECT_EQ(values(shaped.at(0).tensor), want);
}

TEST(MaxUnpool, IndexOutOfRangeIsAnError_Opset22) {
  try {
    OneNode("MaxUnpool", 22)
        .input("X", make_tensor<float>(DataType::Float, {1, 1, 1, 1}, {5}))
        .input("I", make_tensor<int64_t>(DataType::Int64, {1, 1, 1, 1}, {4}))
        .attr_ints("kernel_shape", {2, 2})
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 4 is out of range [0, 4)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
