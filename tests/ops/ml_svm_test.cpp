#include <gtest/gtest.h>

#include <cmath>

#include "ml_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(SVMRegressor, LinearModeAndOneClass) {
  auto out = MlNode("SVMRegressor", 1)
                 .input("X", f32({2, 2}, {1, 1, -2, 0}))
                 .attr_floats("coefficients", {1, 2})
                 .attr_floats("rho", {0.5f})
                 .run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{3.5f, -1.5f}));
  auto oc = MlNode("SVMRegressor", 1)
                .input("X", f32({2, 2}, {1, 1, -2, 0}))
                .attr_floats("coefficients", {1, 2})
                .attr_floats("rho", {0.5f})
                .attr_int("one_class", 1)
                .run();
  EXPECT_EQ(vals<float>(oc[0]), (std::vector<float>{1, -1}));
}

TEST(SVMRegressor, RbfSupportVectors) {
  auto out = MlNode("SVMRegressor", 1)
                 .input("X", f64({1, 2}, {0, 0}))
                 .attr_int("n_supports", 2)
                 .attr_floats("support_vectors", {0, 0, 1, 1})
                 .attr_floats("coefficients", {1, -1})
                 .attr_floats("rho", {0})
                 .attr_string("kernel_type", "RBF")
                 .attr_floats("kernel_params", {0.5f, 0, 0})
                 .run();
  EXPECT_NEAR(vals<float>(out[0])[0], 1 - std::exp(-1.0), 1e-6);
  std::string e = error_of(MlNode("SVMRegressor", 1)
                               .input("X", f32({1, 3}, {0, 0, 0}))
                               .attr_int("n_supports", 2)
                               .attr_floats("support_vectors", {0, 0, 1, 1})
                               .attr_floats("coefficients", {1, -1})
                               .attr_floats("rho", {0}));
  EXPECT_NE(e.find("support vectors have 2 features"), std::string::npos) << e;
}

TEST(SVMClassifier, LinearModeThreeClasses) {
  auto out = MlNode("SVMClassifier", 1)
                 .input("X", f32({2, 2}, {1, 0, 0, 3}))
                 .attr_floats("coefficients", {1, 0, 0, 1, -1, -1})
                 .attr_floats("rho", {0})
                 .attr_ints("classlabels_ints", {0, 1, 2})
                 .outputs(2)
                 .run();
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(vals<float>(out[1]), (std::vector<float>{1, 0, -1, 0, 3, -3}));
}

TEST(SVMClassifier, BinarySupportVectorsVote) {
  auto out = MlNode("SVMClassifier", 1)
                 .input("X", f32({2, 2}, {1, 1, -1, -1}))
                 .attr_ints("vectors_per_class", {1, 1})
                 .attr_floats("support_vectors", {0, 0, 2, 2})
                 .attr_floats("coefficients", {1, -1})
                 .attr_floats("rho", {0})
                 .attr_ints("classlabels_ints", {5, 7})
                 .outputs(2)
                 .run();
  // Decision values: -<x, (2,2)>: -4 for the first row (class 7 wins), +4 for the second (class 5).
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{7, 5}));
  EXPECT_EQ(vals<float>(out[1]), (std::vector<float>{4, -4, -4, 4}));
}

TEST(SVMClassifier, ThreeClassesOneVsOneWithProbabilities) {
  auto out = MlNode("SVMClassifier", 1)
                 .input("X", f32({1, 1}, {5}))
                 .attr_ints("vectors_per_class", {1, 1, 1})
                 .attr_floats("support_vectors", {0, 5, 10})
                 .attr_floats("coefficients", {1, 1, -1, -1, -1, 1})
                 .attr_floats("rho", {0, 0, 0})
                 .attr_floats("prob_a", {-1, -1, -1})
                 .attr_floats("prob_b", {0, 0, 0})
                 .attr_strings("classlabels_strings", {"a", "b", "c"})
                 .attr_string("kernel_type", "RBF")
                 .attr_floats("kernel_params", {0.1f, 0, 0})
                 .outputs(2)
                 .run();
  std::vector<float> z = vals<float>(out[1]);
  ASSERT_EQ(z.size(), 3u);
  EXPECT_NEAR(z[0] + z[1] + z[2], 1.0, 1e-5);
  EXPECT_EQ(out[0].tensor.string_values().size(), 1u);
}

TEST(SVMClassifier, BadVectorsPerClassIsAnError) {
  std::string e = error_of(MlNode("SVMClassifier", 1)
                               .outputs(2)
                               .input("X", f32({1, 1}, {5}))
                               .attr_ints("vectors_per_class", {1, 1})
                               .attr_floats("support_vectors", {0, 5})
                               .attr_floats("coefficients", {1, 1})
                               .attr_floats("rho", {0})
                               .attr_ints("classlabels_ints", {0, 1, 2}));
  EXPECT_NE(e.find("vectors_per_class has 2 entries for 3 classes"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
