#include <gtest/gtest.h>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count()); }

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "at " << i;
}

Tensor image() { return make_tensor<float>(DataType::Float, {1, 1, 2, 2}, {1, 2, 3, 4}); }

TEST(GridSample, BilinearCenterAndCorners_Opset16) {
  auto out = OneNode("GridSample", 16)
                 .input("X", image())
                 .input("grid", make_tensor<float>(DataType::Float, {1, 1, 3, 2}, {0, 0, -1, -1, 1, 1}))
                 .attr_int("align_corners", 1)
                 .run();
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 1, 3}));
  expect_near(values(out.at(0).tensor), {2.5f, 1, 4});
}

TEST(GridSample, NearestAndPaddingModes_Opset20) {
  auto nearest = OneNode("GridSample", 20)
                     .input("X", image())
                     .input("grid", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {0.6f, -0.6f}))
                     .attr_string("mode", "nearest")
                     .run();
  expect_near(values(nearest.at(0).tensor), {2});
  auto zeros = OneNode("GridSample", 20)
                   .input("X", image())
                   .input("grid", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {-3, -3}))
                   .run();
  expect_near(values(zeros.at(0).tensor), {0});
  auto border = OneNode("GridSample", 20)
                    .input("X", image())
                    .input("grid", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {-3, -3}))
                    .attr_string("padding_mode", "border")
                    .run();
  expect_near(values(border.at(0).tensor), {1});
}

TEST(GridSample, VolumetricLinear_Opset20) {
  auto out = OneNode("GridSample", 20)
                 .input("X", make_tensor<float>(DataType::Float, {1, 1, 2, 1, 1}, {10, 20}))
                 .input("grid", make_tensor<float>(DataType::Float, {1, 1, 1, 1, 3}, {0, 0, 0}))
                 .attr_int("align_corners", 1)
                 .run();
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 1, 1, 1}));
  expect_near(values(out.at(0).tensor), {15});
}

TEST(GridSample, ModeNamesDependOnVersion) {
  try {
    OneNode("GridSample", 16).input("X", image()).input("grid", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {0, 0})).attr_string("mode", "linear").run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mode 'linear' is not supported in GridSample-16"), std::string::npos) << e.what();
  }
  try {
    OneNode("GridSample", 16)
        .input("X", make_tensor<float>(DataType::Float, {1, 1, 2}, {1, 2}))
        .input("grid", make_tensor<float>(DataType::Float, {1, 1, 1}, {0}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4-D"), std::string::npos) << e.what();
  }
}

TEST(AffineGrid, IdentityThetaGivesBaseGrid_Opset20) {
  auto out = OneNode("AffineGrid", 20)
                 .input("theta", make_tensor<float>(DataType::Float, {1, 2, 3}, {1, 0, 0, 0, 1, 0}))
                 .input("size", make_tensor<int64_t>(DataType::Int64, {4}, {1, 1, 2, 2}))
                 .run();
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 2, 2, 2}));
  expect_near(values(out.at(0).tensor), {-0.5f, -0.5f, 0.5f, -0.5f, -0.5f, 0.5f, 0.5f, 0.5f});
  auto ac = OneNode("AffineGrid", 20)
                .input("theta", make_tensor<float>(DataType::Float, {1, 2, 3}, {2, 0, 1, 0, 1, 0}))
                .input("size", make_tensor<int64_t>(DataType::Int64, {4}, {1, 1, 1, 2}))
                .attr_int("align_corners", 1)
                .run();
  expect_near(values(ac.at(0).tensor), {-1, -1, 3, -1});
}

TEST(AffineGrid, ThetaShapeMustMatchSize_Opset20) {
  try {
    OneNode("AffineGrid", 20)
        .input("theta", make_tensor<float>(DataType::Float, {1, 2, 3}, {1, 0, 0, 0, 1, 0}))
        .input("size", make_tensor<int64_t>(DataType::Int64, {5}, {1, 1, 2, 2, 2}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not match size"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
