#include <gtest/gtest.h>

#include <cmath>

#include "ml_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(LinearRegressor, TwoTargetsWithIntercepts) {
  auto out = MlNode("LinearRegressor", 1)
                 .input("X", f32({2, 2}, {1, 2, 3, 4}))
                 .attr_floats("coefficients", {0.5f, 1, 2, 0})
                 .attr_floats("intercepts", {1, -1})
                 .attr_int("targets", 2)
                 .run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{3.5f, 1, 6.5f, 5}));
}

TEST(LinearRegressor, OneDimensionalInputAndLogistic) {
  auto out = MlNode("LinearRegressor", 1)
                 .input("X", i32({2}, {1, 1}))
                 .attr_floats("coefficients", {1, -1})
                 .attr_string("post_transform", "LOGISTIC")
                 .run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_FLOAT_EQ(vals<float>(out[0])[0], 0.5f);
}

TEST(LinearRegressor, WrongCoefficientCountIsAnError) {
  std::string e = error_of(MlNode("LinearRegressor", 1).input("X", f32({1, 3}, {1, 2, 3})).attr_floats("coefficients", {1, 2}));
  EXPECT_NE(e.find("expected targets * C"), std::string::npos) << e;
}

TEST(LinearClassifier, MulticlassSoftmax) {
  auto out = MlNode("LinearClassifier", 1)
                 .input("X", f32({2, 2}, {1, 0, 0, 1}))
                 .attr_floats("coefficients", {1, 0, 0, 1, 0.5f, 0.5f})
                 .attr_floats("intercepts", {0, 0, 0})
                 .attr_ints("classlabels_ints", {10, 20, 30})
                 .attr_string("post_transform", "SOFTMAX")
                 .outputs(2)
                 .run();
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{10, 20}));
  ASSERT_EQ(out[1].tensor.dims(), (std::vector<int64_t>{2, 3}));
  std::vector<float> z = vals<float>(out[1]);
  double e1 = std::exp(1.0), e5 = std::exp(0.5), s = e1 + 1 + e5;
  EXPECT_NEAR(z[0], e1 / s, 1e-6);
  EXPECT_NEAR(z[1], 1 / s, 1e-6);
  EXPECT_NEAR(z[2], e5 / s, 1e-6);
}

TEST(LinearClassifier, BinaryWithOneCoefficientRow) {
  auto out = MlNode("LinearClassifier", 1)
                 .input("X", f64({2, 2}, {3, 1, 0, 2}))
                 .attr_floats("coefficients", {1, -1})
                 .attr_floats("intercepts", {0})
                 .attr_strings("classlabels_strings", {"neg", "pos"})
                 .attr_string("post_transform", "LOGISTIC")
                 .outputs(2)
                 .run();
  EXPECT_EQ(out[0].tensor.string_values(), (std::vector<std::string>{"pos", "neg"}));
  std::vector<float> z = vals<float>(out[1]);
  ASSERT_EQ(z.size(), 4u);
  EXPECT_NEAR(z[0], 1 / (1 + std::exp(2.0)), 1e-6);
  EXPECT_NEAR(z[1], 1 / (1 + std::exp(-2.0)), 1e-6);
  auto none = MlNode("LinearClassifier", 1)
                  .input("X", f32({1, 2}, {3, 1}))
                  .attr_floats("coefficients", {1, -1})
                  .attr_ints("classlabels_ints", {0, 1})
                  .outputs(2)
                  .run();
  EXPECT_EQ(vals<float>(none[1]), (std::vector<float>{-2, 2}));
  EXPECT_EQ(vals<int64_t>(none[0]), (std::vector<int64_t>{1}));
}

TEST(LinearClassifier, BadPostTransformIsAnError) {
  std::string e = error_of(MlNode("LinearClassifier", 1)
                               .outputs(2)
                               .input("X", f32({1, 1}, {1}))
                               .attr_floats("coefficients", {1})
                               .attr_ints("classlabels_ints", {0, 1})
                               .attr_string("post_transform", "TANH"));
  EXPECT_NE(e.find("post_transform 'TANH'"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
