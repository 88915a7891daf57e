#include <gtest/gtest.h>

#include <cmath>

#include "ir/scalar.hpp"

#include <cctype>

#include "op_test_util.hpp"
#include "ops/registry.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;
using testing::expect_error;
using testing::infer;
using testing::sym_shape;


TEST(Unique, NotSortedWithAllOutputs_Opset11) {
  auto out = OneNode("Unique", 11)
                 .input("x", make_tensor<float>(DataType::Float, {6}, {2, 1, 1, 3, 4, 3}))
                 .attr_int("sorted", 0)
                 .outputs(4)
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>(out.at(1)), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>(out.at(2)), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(values<int64_t>(out.at(3)), (std::vector<int64_t>{1, 2, 2, 1}));
}

TEST(Unique, SortedAlongAxis_Opset11) {
  auto out = OneNode("Unique", 11)
                 .input("x", make_tensor<int32_t>(DataType::Int32, {3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4}))
                 .attr_int("axis", 0)
                 .outputs(4)
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(values<int64_t>(out.at(1)), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(values<int64_t>(out.at(2)), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(values<int64_t>(out.at(3)), (std::vector<int64_t>{2, 1}));
}

TEST(Unique, StringsAndNaNs_Opset11) {
  auto s = OneNode("Unique", 11).input("x", Tensor::strings("", {4}, {"b", "a", "b", "c"})).run();
  EXPECT_EQ(s.at(0).tensor.string_values(), (std::vector<std::string>{"a", "b", "c"}));
  auto n = OneNode("Unique", 11).input("x", make_tensor<float>(DataType::Float, {3}, {NAN, 1, NAN})).run();
  auto v = values<float>(n.at(0));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_TRUE(std::isnan(v[1]));
}

TEST(TopK, TiesKeepLowerIndexFirstAndSmallest_Opset11) {
  auto out = OneNode("TopK", 11)
                 .input("x", make_tensor<int32_t>(DataType::Int32, {2, 4}, {3, 1, 3, 2, 0, 0, 5, 0}))
                 .input("k", make_tensor<int64_t>(DataType::Int64, {1}, {3}))
                 .outputs(2)
                 .run();
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{3, 3, 2, 5, 0, 0}));
  EXPECT_EQ(values<int64_t>(out.at(1)), (std::vector<int64_t>{0, 2, 3, 2, 0, 1}));
  auto small = OneNode("TopK", 11)
                   .input("x", make_tensor<float>(DataType::Float, {2, 2}, {4, 1, 2, 3}))
                   .input("k", make_tensor<int64_t>(DataType::Int64, {1}, {1}))
                   .attr_int("largest", 0)
                   .attr_int("axis", 0)
                   .outputs(2)
                   .run();
  EXPECT_EQ(values<float>(small.at(0)), (std::vector<float>{2, 1}));
  EXPECT_EQ(values<int64_t>(small.at(1)), (std::vector<int64_t>{1, 0}));
}

TEST(TopK, KAttributeInVersion1_Opset1) {
  auto out = OneNode("TopK", 1).input("x", make_tensor<float>(DataType::Float, {4}, {1, 4, 2, 3})).attr_int("k", 2).outputs(2).run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{4, 3}));
  EXPECT_EQ(values<int64_t>(out.at(1)), (std::vector<int64_t>{1, 3}));
}

TEST(TopK, BFloat16FromOpset24AndKTooLarge) {
  Tensor x = Tensor::allocate(DataType::BFloat16, {3});
  for (int i = 0; i < 3; ++i) x.mutable_data<BFloat16>()[i] = BFloat16(static_cast<float>(i));
  auto out = OneNode("TopK", 24).input("x", x).input("k", make_tensor<int64_t>(DataType::Int64, {1}, {1})).outputs(2).run();
  EXPECT_EQ(static_cast<float>(out.at(0).tensor.data<BFloat16>()[0]), 2.0f);
  EXPECT_THROW(OneNode("TopK", 11).input("x", x).input("k", make_tensor<int64_t>(DataType::Int64, {1}, {1})).outputs(2).run(), Error);
  expect_error(OneNode("TopK", 11)
                   .input("x", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                   .input("k", make_tensor<int64_t>(DataType::Int64, {1}, {3}))
                   .outputs(2),
               "k = 3 exceeds the axis dimension 2");
}

TEST(TopK, InferenceSetsKOnTheAxis_Opset11) {
  Tensor k = make_tensor<int64_t>(DataType::Int64, {1}, {2});
  auto out = infer("TopK", 11, {Type::tensor(DataType::Float, sym_shape({"N", "5"})), Type::tensor(DataType::Int64)}, {nullptr, &k}, 2);
  EXPECT_EQ(out[0].shape.to_string(), "[N,2]");
  EXPECT_EQ(out[1].elem, DataType::Int64);
  auto v1 = infer("TopK", 1, {Type::tensor(DataType::Float, sym_shape({"4", "N"}))}, {}, 2, {{"k", 3}, {"axis", 0}});
  EXPECT_EQ(v1[0].shape.to_string(), "[3,N]");
  EXPECT_THROW(infer("TopK", 1, {Type::tensor(DataType::Float, sym_shape({"2"}))}, {}, 2, {{"k", 3}}), Error);
}

}  // namespace
}  // namespace onyx
