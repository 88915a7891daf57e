#include <gtest/gtest.h>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;
using testing::expect_error;

TEST(ScatterElements, SpecExampleWithAxis_Opset13) {
  auto out = OneNode("ScatterElements", 13)
                 .input("data", make_tensor<float>(DataType::Float, {1, 5}, {1, 2, 3, 4, 5}))
                 .input("indices", make_tensor<int64_t>(DataType::Int64, {1, 2}, {1, 3}))
                 .input("updates", make_tensor<float>(DataType::Float, {1, 2}, {1.1f, 2.1f}))
                 .attr_int("axis", 1)
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{1, 1.1f, 3, 2.1f, 5}));
}

TEST(ScatterElements, NegativeIndicesAndReductions_Opset18) {
  auto out = OneNode("ScatterElements", 18)
                 .input("data", make_tensor<int32_t>(DataType::Int32, {4}, {1, 2, 3, 4}))
                 .input("indices", make_tensor<int32_t>(DataType::Int32, {3}, {-1, 0, -1}))
                 .input("updates", make_tensor<int32_t>(DataType::Int32, {3}, {10, 7, 2}))
                 .attr_string("reduction", "max")
                 .run();
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{7, 2, 3, 10}));
  auto add = OneNode("ScatterElements", 16)
                 .input("data", make_tensor<int32_t>(DataType::Int32, {2}, {1, 2}))
                 .input("indices", make_tensor<int64_t>(DataType::Int64, {3}, {1, 1, 0}))
                 .input("updates", make_tensor<int32_t>(DataType::Int32, {3}, {5, 6, 7}))
                 .attr_string("reduction", "add")
                 .run();
  EXPECT_EQ(values<int32_t>(add.at(0)), (std::vector<int32_t>{8, 13}));
}

TEST(ScatterElements, MaxReductionIsRefusedBeforeOpset18) {
  expect_error(OneNode("ScatterElements", 16)
                   .input("data", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                   .input("indices", make_tensor<int64_t>(DataType::Int64, {1}, {0}))
                   .input("updates", make_tensor<float>(DataType::Float, {1}, {5}))
                   .attr_string("reduction", "max"),
               "reduction 'max' is not supported");
}

TEST(ScatterElements, OutOfRangeIndexIsAnError) {
  expect_error(OneNode("ScatterElements", 13)
                   .input("data", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                   .input("indices", make_tensor<int64_t>(DataType::Int64, {1}, {2}))
                   .input("updates", make_tensor<float>(DataType::Float, {1}, {5})),
               "index 2 is out of range");
}

TEST(Scatter, Opset9RefusesNegativeIndicesOpset11Accepts) {
  auto make = [](int opset) {
    return OneNode("Scatter", opset)
        .input("data", make_tensor<float>(DataType::Float, {3}, {0, 0, 0}))
        .input("indices", make_tensor<int64_t>(DataType::Int64, {1}, {-1}))
        .input("updates", make_tensor<float>(DataType::Float, {1}, {9}));
  };
  EXPECT_EQ(values<float>(make(11).run().at(0)), (std::vector<float>{0, 0, 9}));
  expect_error(make(9), "out of range");
}

TEST(ScatterND, SpecExampleSlicesWithMul_Opset16) {
  // data [4, 2]; update rows 0 and 2.
  auto out = OneNode("ScatterND", 16)
                 .input("data", make_tensor<float>(DataType::Float, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}))
                 .input("indices", make_tensor<int64_t>(DataType::Int64, {2, 1}, {0, 2}))
                 .input("updates", make_tensor<float>(DataType::Float, {2, 2}, {2, 2, 3, 3}))
                 .attr_string("reduction", "mul")
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{2, 4, 3, 4, 15, 18, 7, 8}));
}

TEST(ScatterND, StringsAndShapeError_Opset13) {
  auto out = OneNode("ScatterND", 13)
                 .input("data", Tensor::strings("", {3}, {"a", "b", "c"}))
                 .input("indices", make_tensor<int64_t>(DataType::Int64, {1, 1}, {1}))
                 .input("updates", Tensor::strings("", {1}, {"z"}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"a", "z", "c"}));
  expect_error(OneNode("ScatterND", 13)
                   .input("data", make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4}))
                   .input("indices", make_tensor<int64_t>(DataType::Int64, {1, 1}, {0}))
                   .input("updates", make_tensor<float>(DataType::Float, {1, 3}, {1, 2, 3})),
               "updates shape [1,3] should be [1,2]");
}

TEST(TensorScatter, LinearAndCircular_Opset24) {
  // past [2, 4, 1] (batch, seq, dim), update [2, 2, 1].
  auto run = [](const std::string& mode, std::vector<int64_t> wi) {
    return OneNode("TensorScatter", 24)
        .input("past", make_tensor<float>(DataType::Float, {2, 4, 1}, {0, 0, 0, 0, 0, 0, 0, 0}))
        .input("update", make_tensor<float>(DataType::Float, {2, 2, 1}, {1, 2, 3, 4}))
        .input("write_indices", make_tensor<int64_t>(DataType::Int64, {2}, wi))
        .attr_string("mode", mode)
        .attr_int("axis", 1);
  };
  EXPECT_EQ(values<float>(run("linear", {1, 2}).run().at(0)), (std::vector<float>{0, 1, 2, 0, 0, 0, 3, 4}));
  EXPECT_EQ(values<float>(run("circular", {3, 0}).run().at(0)), (std::vector<float>{2, 0, 0, 1, 3, 4, 0, 0}));
  expect_error(run("linear", {3, 0}), "exceeds the cache length");
}

}  // namespace
}  // namespace onyx
