#include <gtest/gtest.h>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count()); }

OneNode roi_align(int opset) {
  return std::move(OneNode("RoiAlign", opset)
                       .input("X", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {0, 10}))
                       .input("rois", make_tensor<float>(DataType::Float, {1, 4}, {0, 0, 2, 1}))
                       .input("batch_indices", make_tensor<int64_t>(DataType::Int64, {1}, {0}))
                       .attr_int("sampling_ratio", 1));
}

TEST(RoiAlign, HalfPixelDefaultChangedInVersion16) {
  auto v10 = roi_align(10).run();
  ASSERT_EQ(v10.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_NEAR(values(v10.at(0).tensor)[0], 10, 1e-6);
  auto v16 = roi_align(16).run();
  EXPECT_NEAR(values(v16.at(0).tensor)[0], 5, 1e-6);
  auto legacy = roi_align(16).attr_string("coordinate_transformation_mode", "output_half_pixel").run();
  EXPECT_NEAR(values(legacy.at(0).tensor)[0], 10, 1e-6);
  auto mx = roi_align(22).attr_string("mode", "max").run();
  EXPECT_NEAR(values(mx.at(0).tensor)[0], 5, 1e-6);
}

TEST(RoiAlign, BatchIndexOutOfRangeIsAnError_Opset16) {
  try {
    OneNode("RoiAlign", 16)
        .input("X", make_tensor<float>(DataType::Float, {1, 1, 1, 2}, {0, 10}))
        .input("rois", make_tensor<float>(DataType::Float, {1, 4}, {0, 0, 2, 1}))
        .input("batch_indices", make_tensor<int64_t>(DataType::Int64, {1}, {3}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch index 3 is out of range"), std::string::npos) << e.what();
  }
}

TEST(MaxRoiPool, QuadrantMaxima_Opset1) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  auto out = OneNode("MaxRoiPool", 1)
                 .input("X", make_tensor<float>(DataType::Float, {1, 1, 4, 4}, x))
                 .input("rois", make_tensor<float>(DataType::Float, {1, 5}, {0, 0, 0, 3, 3}))
                 .attr_ints("pooled_shape", {2, 2})
                 .run();
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(values(out.at(0).tensor), (std::vector<float>{5, 7, 13, 15}));
}

TEST(NonMaxSuppression, SuppressByIouSpecExample_Opset11) {
  auto out = OneNode("NonMaxSuppression", 11)
                 .input("boxes", make_tensor<float>(DataType::Float, {1, 6, 4},
                                                    {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101}))
                 .input("scores", make_tensor<float>(DataType::Float, {1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}))
                 .input("max", make_tensor<int64_t>(DataType::Int64, {1}, {3}))
                 .input("iou", make_tensor<float>(DataType::Float, {1}, {0.5f}))
                 .input("score", make_tensor<float>(DataType::Float, {1}, {0.0f}))
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + 9), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

TEST(NonMaxSuppression, DefaultsSelectNothingAndShapesAreChecked_Opset10) {
  auto out = OneNode("NonMaxSuppression", 10)
                 .input("boxes", make_tensor<float>(DataType::Float, {1, 1, 4}, {0, 0, 1, 1}))
                 .input("scores", make_tensor<float>(DataType::Float, {1, 1, 1}, {0.9f}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{0, 3}));
  try {
    OneNode("NonMaxSuppression", 10)
        .input("boxes", make_tensor<float>(DataType::Float, {1, 1, 4}, {0, 0, 1, 1}))
        .input("scores", make_tensor<float>(DataType::Float, {1, 1, 2}, {0.9f, 0.1f}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not match boxes shape"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
