#include <gtest/gtest.h>

#include <cmath>

#include "ir/scalar.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;

Tensor input_2x3() { return make_tensor<float>(DataType::Float, {2, 3}, {-1, -2, -3, -0.5f, -1, -2}); }

TEST(NegativeLogLikelihoodLoss, MeanSumNone_Opset13) {
  Tensor target = make_tensor<int64_t>(DataType::Int64, {2}, {2, 0});
  auto mean = OneNode("NegativeLogLikelihoodLoss", 13).input("input", input_2x3()).input("target", target).run();
  EXPECT_TRUE(mean.at(0).tensor.dims().empty());
  EXPECT_FLOAT_EQ(values<float>(mean[0])[0], 1.75f);
  auto sum = OneNode("NegativeLogLikelihoodLoss", 13)
                 .input("input", input_2x3())
                 .input("target", target)
                 .attr_string("reduction", "sum")
                 .run();
  EXPECT_FLOAT_EQ(values<float>(sum.at(0))[0], 3.5f);
  auto none = OneNode("NegativeLogLikelihoodLoss", 13)
                  .input("input", input_2x3())
                  .input("target", target)
                  .attr_string("reduction", "none")
                  .run();
  EXPECT_EQ(values<float>(none.at(0)), (std::vector<float>{3, 0.5f}));
}

TEST(NegativeLogLikelihoodLoss, WeightsAndIgnoreIndex_Opset12) {
  auto out = OneNode("NegativeLogLikelihoodLoss", 12)
                 .input("input", input_2x3())
                 .input("target", make_tensor<int32_t>(DataType::Int32, {2}, {2, 1}))
                 .input("weight", make_tensor<float>(DataType::Float, {3}, {1, 2, 4}))
                 .attr_int("ignore_index", 1)
                 .run();
  // Only sample 0 counts: 3 * 4 / 4.
  EXPECT_FLOAT_EQ(values<float>(out.at(0))[0], 3.0f);
}

TEST(NegativeLogLikelihoodLoss, HigherDims_Opset13) {
  // input [1, 2, 2]: N=1, C=2, d1=2.
  auto out = OneNode("NegativeLogLikelihoodLoss", 13)
                 .input("input", make_tensor<double>(DataType::Double, {1, 2, 2}, {-1, -2, -3, -4}))
                 .input("target", make_tensor<int64_t>(DataType::Int64, {1, 2}, {1, 0}))
                 .attr_string("reduction", "none")
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values<double>(out[0]), (std::vector<double>{3, 2}));
}

TEST(NegativeLogLikelihoodLoss, BFloat16FromOpset22Only) {
  std::vector<BFloat16> v = {BFloat16(-1.0f), BFloat16(-2.0f)};
  auto out = OneNode("NegativeLogLikelihoodLoss", 22)
                 .input("input", make_tensor<BFloat16>(DataType::BFloat16, {1, 2}, v))
                 .input("target", make_tensor<int64_t>(DataType::Int64, {1}, {1}))
                 .run();
  EXPECT_EQ(static_cast<float>(out.at(0).tensor.data<BFloat16>()[0]), 2.0f);
  EXPECT_THROW(OneNode("NegativeLogLikelihoodLoss", 13)
                   .input("input", make_tensor<BFloat16>(DataType::BFloat16, {1, 2}, v))
                   .input("target", make_tensor<int64_t>(DataType::Int64, {1}, {1}))
                   .run(),
               Error);
}

TEST(NegativeLogLikelihoodLoss, BadTargetsAreClearErrors_Opset13) {
  try {
    OneNode("NegativeLogLikelihoodLoss", 13)
        .input("input", input_2x3())
        .input("target", make_tensor<int64_t>(DataType::Int64, {2}, {3, 0}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(NegativeLogLikelihoodLoss)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("target value 3 is out of range [0, 3)"), std::string::npos) << e.what();
  }
  try {
    OneNode("NegativeLogLikelihoodLoss", 13)
        .input("input", input_2x3())
        .input("target", make_tensor<int64_t>(DataType::Int64, {3}, {0, 0, 0}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
  }
}

TEST(SoftmaxCrossEntropyLoss, MeanWithLogProb_Opset13) {
  auto out = OneNode("SoftmaxCrossEntropyLoss", 13)
                 .input("scores", make_tensor<float>(DataType::Float, {2, 2}, {0, 0, 1000, 0}))
                 .input("labels", make_tensor<int64_t>(DataType::Int64, {2}, {0, 1}))
                 .outputs(2)
                 .run();
  // Sample 0: log 2; sample 1: 1000 (stable log-softmax).
  EXPECT_FLOAT_EQ(values<float>(out.at(0))[0], (std::log(2.0f) + 1000.0f) / 2);
  ASSERT_EQ(out.at(1).tensor.dims(), (std::vector<int64_t>{2, 2}));
  std::vector<float> lp = values<float>(out[1]);
  EXPECT_FLOAT_EQ(lp[0], -std::log(2.0f));
  EXPECT_FLOAT_EQ(lp[2], 0.0f);
  EXPECT_FLOAT_EQ(lp[3], -1000.0f);
}

TEST(SoftmaxCrossEntropyLoss, NoneWithWeightsAndNegativeIgnoreIndex_Opset12) {
  auto out = OneNode("SoftmaxCrossEntropyLoss", 12)
                 .input("scores", make_tensor<float>(DataType::Float, {2, 2}, {0, 0, 0, 0}))
                 .input("labels", make_tensor<int32_t>(DataType::Int32, {2}, {1, -1}))
                 .input("weights", make_tensor<float>(DataType::Float, {2}, {1, 3}))
                 .attr_string("reduction", "none")
                 .attr_int("ignore_index", -1)
                 .run();
  std::vector<float> l = values<float>(out.at(0));
  EXPECT_FLOAT_EQ(l[0], 3 * std::log(2.0f));
  EXPECT_EQ(l[1], 0.0f);
}

TEST(SoftmaxCrossEntropyLoss, BadReductionIsAnError_Opset13) {
  try {
    OneNode("SoftmaxCrossEntropyLoss", 13)
        .input("scores", make_tensor<float>(DataType::Float, {1, 2}, {0, 0}))
        .input("labels", make_tensor<int64_t>(DataType::Int64, {1}, {0}))
        .attr_string("reduction", "avg")
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reduction 'avg'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
