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

std::string error_of(OneNode n) {
  try {
    n.run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Resize, UpsampleScalesNearestSpecExample_Opset19) {
  auto out = OneNode("Resize", 19)
                 .input("X", make_tensor<float>(DataType::Float, {1, 1, 2, 2}, {1, 2, 3, 4}))
                 .omitted_input()
                 .input("scales", make_tensor<float>(DataType::Float, {4}, {1, 1, 2, 3}))
                 .attr_string("mode", "nearest")
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 1, 4, 6}));
  EXPECT_EQ(values(y), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(Resize, DownsampleLinearAlignCornersUsesFractionalOutputLength_Opset13) {
  auto out = OneNode("Resize", 13)
                 .input("X", make_tensor<float>(DataType::Float, {1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
                 .omitted_input()
                 .input("scales", make_tensor<float>(DataType::Float, {4}, {1, 1, 0.6f, 0.6f}))
                 .attr_string("mode", "linear")
                 .attr_string("coordinate_transformation_mode", "align_corners")
                 .run();
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 1, 2}));
  expect_near(values(out.at(0).tensor), {1, 3.142857f});
}

TEST(Resize, Version10IsAsymmetricWhereVersion11DefaultsToHalfPixel) {
  auto v10 = OneNode("Resize", 10)
                 .input("X", make_tensor<float>(DataType::Float, {1, 2}, {1, 2}))
                 .input("scales", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                 .attr_string("mode", "linear")
                 .run();
  expect_near(values(v10.at(0).tensor), {1, 1.5f, 2, 2});
  auto v11 = OneNode("Resize", 11)
                 .input("X", make_tensor<float>(DataType::Float, {1, 2}, {1, 2}))
                 .input("roi", make_tensor<float>(DataType::Float, {0}, {}))
                 .input("scales", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                 .attr_string("mode", "linear")
                 .run();
  expect_near(values(v11.at(0).tensor), {1, 1.25f, 1.75f, 2});
}

TEST(Resize, CubicAndSizesKeepAspectRatio_Opset18) {
  auto out = OneNode("Resize", 18)
                 .input("X", make_tensor<float>(DataType::Float, {1, 1, 2, 2}, {1, 2, 3, 4}))
                 .omitted_input()
                 .omitted_input()
                 .input("sizes", make_tensor<int64_t>(DataType::Int64, {2}, {7, 8}))
                 .attr_ints("axes", {2, 3})
                 .attr_string("keep_aspect_ratio_policy", "not_larger")
                 .attr_string("mode", "cubic")
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 7, 7}));
}

TEST(Resize, TfCropAndResizeExtrapolates_Opset13) {
  auto out = OneNode("Resize", 13)
                 .input("X", make_tensor<float>(DataType::Float, {1, 3}, {10, 20, 30}))
                 .input("roi", make_tensor<float>(DataType::Float, {4}, {0, 0.5f, 1, 1.5f}))
                 .omitted_input()
                 .input("sizes", make_tensor<int64_t>(DataType::Int64, {2}, {1, 3}))
                 .attr_string("mode", "linear")
                 .attr_string("coordinate_transformation_mode", "tf_crop_and_resize")
                 .attr_float("extrapolation_value", -1)
                 .run();
  expect_near(values(out.at(0).tensor), {20, 30, -1});
}

TEST(Resize, NearestCopiesStrings_Opset19) {
  auto out = OneNode("Resize", 19)
                 .input("X", Tensor::strings("X", {2}, {"a", "b"}))
                 .omitted_input()
                 .input("scales", make_tensor<float>(DataType::Float, {1}, {2}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.string_values(), (std::vector<std::string>{"a", "a", "b", "b"}));
}

TEST(Resize, ScalesAndSizesTogetherAreAnError_Opset13) {
  std::string e = error_of(OneNode("Resize", 13)
                               .input("X", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                               .omitted_input()
                               .input("scales", make_tensor<float>(DataType::Float, {1}, {2}))
                               .input("sizes", make_tensor<int64_t>(DataType::Int64, {1}, {4})));
  EXPECT_NE(e.find("only one of 'scales' and 'sizes'"), std::string::npos) << e;
  e = error_of(OneNode("Resize", 18)
                   .input("X", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                   .omitted_input()
                   .input("scales", make_tensor<float>(DataType::Float, {1}, {2}))
                   .attr_string("coordinate_transformation_mode", "half_pixel_symmetric"));
  EXPECT_NE(e.find("half_pixel_symmetric"), std::string::npos) << e;  // only from Resize-19
}

TEST(Upsample, AttributeScalesVersusInputScales) {
  auto v7 = OneNode("Upsample", 7)
                .input("X", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {1, 2}))
                .attr_floats("scales", {1, 1, 2, 2})
                .run();
  EXPECT_EQ(values(v7.at(0).tensor), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
  auto v9 = OneNode("Upsample", 9)
                .input("X", make_tensor<int32_t>(DataType::Int32, {1, 2}, {5, 7}))
                .input("scales", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                .attr_string("mode", "linear")
                .run();
  const Tensor& y = v9.at(0).tensor;
  EXPECT_EQ(std::vector<int32_t>(y.data<int32_t>(), y.data<int32_t>() + 4), (std::vector<int32_t>{5, 6, 7, 7}));
  std::string e = error_of(OneNode("Upsample", 10)
                               .input("X", make_tensor<float>(DataType::Float, {2}, {1, 2}))
                               .input("scales", make_tensor<float>(DataType::Float, {1}, {2})));
  EXPECT_NE(e.find("deprecated"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
