#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::expect_error;
using testing::values;

OneNode three(const char* op, int64_t opset) {
  return std::move(OneNode(op, opset)
                       .input("a", make_tensor<float>(DataType::Float, {3}, {3, 2, 1}))
                       .input("b", make_tensor<float>(DataType::Float, {3}, {1, 4, 4}))
                       .input("c", make_tensor<float>(DataType::Float, {3}, {2, 5, 3})));
}

TEST(Variadic, SpecExamples_Opset13) {
  EXPECT_EQ(values<float>(three("Max", 13).run().at(0)), (std::vector<float>{3, 5, 4}));
  EXPECT_EQ(values<float>(three("Min", 13).run().at(0)), (std::vector<float>{1, 2, 1}));
  EXPECT_EQ(values<float>(three("Sum", 13).run().at(0)), (std::vector<float>{6, 11, 8}));
  EXPECT_EQ(values<float>(three("Mean", 13).run().at(0)), (std::vector<float>{2, 11.0f / 3, 8.0f / 3}));
  auto one = OneNode("Sum", 13).input("a", make_tensor<float>(DataType::Float, {2}, {3, 2})).run();
  EXPECT_EQ(values<float>(one.at(0)), (std::vector<float>{3, 2}));
}

TEST(Variadic, BroadcastFromOpset8AndSameShapesBefore) {
  auto out = OneNode("Sum", 8)
                 .input("a", make_tensor<double>(DataType::Double, {2, 1}, {1, 2}))
                 .input("b", make_tensor<double>(DataType::Double, {3}, {10, 20, 30}))
                 .run();
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<double>(out.at(0)), (std::vector<double>{11, 21, 31, 12, 22, 32}));
  expect_error(OneNode("Sum", 6)
                   .input("a", make_tensor<double>(DataType::Double, {2, 1}, {1, 2}))
                   .input("b", make_tensor<double>(DataType::Double, {3}, {10, 20, 30})),
               "must have the same shape before opset 8");
  auto legacy = OneNode("Max", 1)
                    .input("a", make_tensor<float>(DataType::Float, {2}, {1, 5}))
                    .input("b", make_tensor<float>(DataType::Float, {2}, {3, 4}))
                    .attr_ints("consumed_inputs", {0, 0})
                    .run();
  EXPECT_EQ(values<float>(legacy.at(0)), (std::vector<float>{3, 5}));
}

TEST(Variadic, IntegersFromOpset12AndNaNPropagates) {
  auto out = OneNode("Min", 12)
                 .input("a", make_tensor<int8_t>(DataType::Int8, {3}, {-128, 5, 127}))
                 .input("b", make_tensor<int8_t>(DataType::Int8, {1}, {0}))
                 .run();
  EXPECT_EQ(values<int8_t>(out.at(0)), (std::vector<int8_t>{-128, 0, 0}));
  expect_error(OneNode("Max", 8)
                   .input("a", make_tensor<int32_t>(DataType::Int32, {1}, {1}))
                   .input("b", make_tensor<int32_t>(DataType::Int32, {1}, {2})),
               "allowed");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = OneNode("Max", 13)
               .input("a", make_tensor<float>(DataType::Float, {2}, {nan, 1}))
               .input("b", make_tensor<float>(DataType::Float, {2}, {1, nan}))
               .run();
  auto got = values<float>(m.at(0));
  EXPECT_TRUE(std::isnan(got[0]) && std::isnan(got[1]));
}

TEST(Variadic, Float16AndErrors) {
  // 1.0 = 0x3c00, 2.0 = 0x4000, 1.5 = 0x3e00 in float16.
  auto out = OneNode("Mean", 13)
                 .input("a", make_tensor<uint16_t>(DataType::Float16, {1}, {0x3c00}))
                 .input("b", make_tensor<uint16_t>(DataType::Float16, {1}, {0x4000}))
                 .run();
  EXPECT_EQ(values<uint16_t>(out.at(0)), (std::vector<uint16_t>{0x3e00}));
  expect_error(OneNode("Sum", 13)
                   .input("a", make_tensor<float>(DataType::Float, {1}, {1}))
                   .input("b", make_tensor<double>(DataType::Double, {1}, {1})),
               "different element types");
  expect_error(OneNode("Mean", 13)
                   .input("a", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                   .input("b", make_tensor<float>(DataType::Float, {3}, {1, 2, 3})),
               "do not broadcast");
}

}  // namespace
}  // namespace onyx
