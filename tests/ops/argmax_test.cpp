#include <gtest/gtest.h>

#include <limits>

#include "ir/scalar.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;

std::vector<int64_t> indices(const Datum& d) {
  const Tensor& t = d.tensor;
  EXPECT_EQ(t.dtype(), DataType::Int64);
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.element_count());
}

TEST(ArgMax, SpecExampleKeepdims_Opset13) {
  auto out = OneNode("ArgMax", 13)
                 .input("data", make_tensor<float>(DataType::Float, {2, 2}, {2, 1, 3, 10}))
                 .attr_int("axis", 1)
                 .attr_int("keepdims", 1)
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(indices(out[0]), (std::vector<int64_t>{0, 1}));
}

TEST(ArgMax, DefaultAxisZeroNoKeepdims_Opset11) {
  auto out = OneNode("ArgMax", 11)
                 .input("data", make_tensor<int32_t>(DataType::Int32, {2, 2}, {2, 1, 3, 10}))
                 .attr_int("keepdims", 0)
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(indices(out[0]), (std::vector<int64_t>{1, 1}));
}

TEST(ArgMin, SelectLastIndexFromOpset12) {
  Tensor data = make_tensor<float>(DataType::Float, {2, 2}, {2, 2, 3, 10});
  auto last = OneNode("ArgMin", 12).input("data", data).attr_int("axis", 1).attr_int("select_last_index", 1).run();
  EXPECT_EQ(indices(last.at(0)), (std::vector<int64_t>{1, 0}));
  auto first = OneNode("ArgMin", 12).input("data", data).attr_int("axis", 1).run();
  EXPECT_EQ(indices(first.at(0)), (std::vector<int64_t>{0, 0}));
}

TEST(ArgMax, NegativeAxisAndBFloat16_Opset13) {
  std::vector<BFloat16> v = {BFloat16(1.0f), BFloat16(5.0f), BFloat16(-2.0f), BFloat16(-1.0f)};
  auto out = OneNode("ArgMax", 13)
                 .input("data", make_tensor<BFloat16>(DataType::BFloat16, {2, 2}, v))
                 .attr_int("axis", -1)
                 .attr_int("keepdims", 0)
                 .run();
  EXPECT_EQ(indices(out.at(0)), (std::vector<int64_t>{1, 1}));
}

TEST(ArgMax, NaNWinsAndInt64IsExact_Opset13) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = OneNode("ArgMax", 13).input("data", make_tensor<float>(DataType::Float, {3}, {1, nan, 5})).run();
  EXPECT_EQ(indices(out.at(0)), (std::vector<int64_t>{1}));
  const int64_t big = (int64_t{1} << 62) + 1;
  auto exact = OneNode("ArgMax", 13).input("data", make_tensor<int64_t>(DataType::Int64, {2}, {big - 1, big})).run();
  EXPECT_EQ(indices(exact.at(0)), (std::vector<int64_t>{1}));
}

TEST(ArgMax, EmptyAxisAndBadAxisAreErrors_Opset13) {
  try {
    OneNode("ArgMax", 13).input("data", make_tensor<float>(DataType::Float, {2, 0}, {})).attr_int("axis", 1).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("of size 0"), std::string::npos) << e.what();
  }
  try {
    OneNode("ArgMin", 13).input("data", make_tensor<float>(DataType::Float, {2}, {1, 2})).attr_int("axis", 1).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(ArgMin)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
