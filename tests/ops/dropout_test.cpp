#include "nn_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

Tensor bool_scalar(bool v) {
  Tensor t = Tensor::allocate(DataType::Bool, {});
  t.mutable_data<bool>()[0] = v;
  return t;
}

TEST(Dropout, InferenceIsIdentityMaskTypeByVersion) {
  auto v7 = OneNode("Dropout", 7).input("X", ftensor({3}, {1, 2, 3})).attr_float("ratio", 0.9f).outputs(2).run();
  expect_near(floats(v7.at(0).tensor), {1, 2, 3});
  expect_near(floats(v7.at(1).tensor), {1, 1, 1});  // mask in the input type before v10
  auto v12 = OneNode("Dropout", 12).input("X", ftensor({3}, {1, 2, 3})).outputs(2).run();
  ASSERT_EQ(v12.at(1).tensor.dtype(), DataType::Bool);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(v12.at(1).tensor.data<bool>()[i]);
}

TEST(Dropout, TrainingModeScalesKeptElements_Opset13) {
  std::vector<float> ones(64, 1.0f);
  auto out = OneNode("Dropout", 13)
                 .input("X", ftensor({64}, ones))
                 .input("ratio", ftensor({}, {0.5f}))
                 .input("training_mode", bool_scalar(true))
                 .attr_int("seed", 7)
                 .outputs(2)
                 .run();
  const float* y = out.at(0).tensor.data<float>();
  const bool* m = out.at(1).tensor.data<bool>();
  int kept = 0;
  for (int i = 0; i < 64; ++i) {
    EXPECT_FLOAT_EQ(y[i], m[i] ? 2.0f : 0.0f);
    kept += m[i];
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 64);
  auto zero = OneNode("Dropout", 13)
                  .input("X", ftensor({2}, {1, 2}))
                  .input("ratio", ftensor({}, {0.0f}))
                  .input("training_mode", bool_scalar(true))
                  .run();
  expect_near(floats(zero.at(0).tensor), {1, 2});
}

TEST(Dropout, RatioOfOneInTrainingIsAnError) {
  expect_error([] {
    OneNode("Dropout", 22)
        .input("X", ftensor({1}, {1}))
        .input("ratio", ftensor({}, {1.0f}))
        .input("training_mode", bool_scalar(true))
        .run();
  }, "outside [0, 1)");
}

}  // namespace
}  // namespace onyx
