#include <cmath>

#include "nn_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(BatchNormalization, InferenceFormula_Opset15) {
  auto out = OneNode("BatchNormalization", 15)
                 .input("X", ftensor({1, 2, 1, 2}, {-1, 0, 1, 2}))
                 .input("scale", ftensor({2}, {1, 1.5f}))
                 .input("B", ftensor({2}, {0, 1}))
                 .input("mean", ftensor({2}, {0, 3}))
                 .input("var", ftensor({2}, {1, 1.5f}))
                 .run();
  const float e = 1e-5f;
  expect_near(floats(out.at(0).tensor), {-1 / std::sqrt(1 + e), 0, 1.5f * (1 - 3) / std::sqrt(1.5f + e) + 1,
                                         1.5f * (2 - 3) / std::sqrt(1.5f + e) + 1});
}

TEST(BatchNormalization, TrainingModeUpdatesRunningStats_Opset15) {
  auto out = OneNode("BatchNormalization", 15)
                 .input("X", ftensor({2, 1, 1}, {1, 3}))
                 .input("scale", ftensor({1}, {1}))
                 .input("B", ftensor({1}, {0}))
                 .input("mean", ftensor({1}, {10}))
                 .input("var", ftensor({1}, {4}))
                 .attr_int("training_mode", 1)
                 .attr_float("momentum", 0.5f)
                 .attr_float("epsilon", 0)
                 .outputs(3)
                 .run();
  expect_near(floats(out.at(0).tensor), {-1, 1});  // batch mean 2, population var 1
  expect_near(floats(out.at(1).tensor), {6});      // 10 * 0.5 + 2 * 0.5
  expect_near(floats(out.at(2).tensor), {2.5f});   // 4 * 0.5 + 1 * 0.5
}

TEST(BatchNormalization, PerActivationParametersWithSpatial0_Opset7) {
  auto out = OneNode("BatchNormalization", 7)
                 .input("X", ftensor({1, 1, 2}, {1, 1}))
                 .input("scale", ftensor({1, 2}, {1, 2}))
                 .input("B", ftensor({1, 2}, {0, 0}))
                 .input("mean", ftensor({1, 2}, {0, 0}))
                 .input("var", ftensor({1, 2}, {1, 1}))
                 .attr_int("spatial", 0)
                 .attr_float("epsilon", 0)
                 .run();
  expect_near(floats(out.at(0).tensor), {1, 2});
  expect_error([] {
    OneNode("BatchNormalization", 9)
        .input("X", ftensor({1, 2, 1}, {1, 1}))
        .input("scale", ftensor({3}, {1, 1, 1}))
        .input("B", ftensor({2}, {0, 0}))
        .input("mean", ftensor({2}, {0, 0}))
        .input("var", ftensor({2}, {1, 1}))
        .run();
  }, "scale has 3 elements");
}

TEST(InstanceNormalization, PerChannelStatistics_Opset6) {
  auto out = OneNode("InstanceNormalization", 6)
                 .input("X", ftensor({1, 2, 2}, {1, 3, 5, 5}))
                 .input("scale", ftensor({2}, {2, 1}))
                 .input("B", ftensor({2}, {0, 7}))
                 .run();
  expect_near(floats(out.at(0).tensor), {-2, 2, 7, 7}, 1e-3f);
}

TEST(LayerNormalization, AxisAndMeanInvStdOutputs_Opset17) {
  auto out = OneNode("LayerNormalization", 17)
                 .input("X", ftensor({2, 2}, {1, 3, 2, 2}))
                 .input("Scale", ftensor({2}, {1, 2}))
                 .input("B", ftensor({2}, {0, 1}))
                 .outputs(3)
                 .run();
  expect_near(floats(out.at(0).tensor), {-1, 3, 0, 1}, 1e-3f);
  EXPECT_EQ(out.at(1).tensor.dims(), (Dims{2, 1}));
  expect_near(floats(out.at(1).tensor), {2, 2});
  expect_near(floats(out.at(2).tensor), {1 / std::sqrt(1 + 1e-5f), 1 / std::sqrt(1e-5f)}, 1e-2f);  // default epsilon
  expect_error([] {
    OneNode("LayerNormalization", 17).input("X", ftensor({2}, {1, 2})).input("Scale", ftensor({2}, {1, 1})).attr_int("axis", 1).run();
  }, "out of range");
}

TEST(GroupNormalization, ScalePerGroupInV18PerChannelInV21) {
  auto run = [](int64_t opset, std::vector<float> scale) {
    const int64_t n = static_cast<int64_t>(scale.size());
    return OneNode("GroupNormalization", opset)
        .input("X", ftensor({1, 2, 1}, {1, 3}))
        .input("scale", ftensor({n}, scale))
        .input("bias", ftensor({n}, std::vector<float>(scale.size(), 0)))
        .attr_int("num_groups", 1)
        .attr_float("epsilon", 0)
        .run();
  };
  expect_near(floats(run(18, {2}).at(0).tensor), {-2, 2});
  expect_near(floats(run(21, {1, 3}).at(0).tensor), {-1, 3});
  expect_error([&] { run(21, {2}); }, "scale has 1 elements");
}

TEST(RMSNormalization, OutputTakesScaleType_Opset23) {
  auto out = OneNode("RMSNormalization", 23)
                 .input("X", ftensor({1, 2}, {3, 4}))
                 .input("scale", ftensor({2}, {1, 2}))
                 .attr_float("epsilon", 0)
                 .run();
  const float rms = std::sqrt(12.5f);
  expect_near(floats(out.at(0).tensor), {3 / rms, 8 / rms});
}

TEST(LpNormalization, L1AndL2AlongAxis) {
  auto l2 = OneNode("LpNormalization", 1).input("X", ftensor({2, 2}, {3, 4, 0, 0})).run();
  expect_near(floats(l2.at(0).tensor), {0.6f, 0.8f, 0, 0});
  auto l1 = OneNode("LpNormalization", 22).input("X", ftensor({2, 2}, {1, 2, 3, 2})).attr_int("axis", 0).attr_int("p", 1).run();
  expect_near(floats(l1.at(0).tensor), {0.25f, 0.5f, 0.75f, 0.5f});
  expect_error([] { OneNode("LpNormalization", 22).input("X", ftensor({1}, {1})).attr_int("p", 3).run(); }, "expected 1 or 2");
}

TEST(MeanVarianceNormalization, DefaultAxes_Opset13) {
  auto out = OneNode("MeanVarianceNormalization", 13).input("X", ftensor({1, 2, 1, 2}, {1, 3, 10, 10})).run();
  expect_near(floats(out.at(0).tensor), {-1, 1, 0, 0}, 1e-5f);
  auto axes = OneNode("MeanVarianceNormalization", 9).input("X", ftensor({2, 2}, {1, 3, 5, 9})).attr_ints("axes", {0}).run();
  expect_near(floats(axes.at(0).tensor), {-1, -1, 1, 1}, 1e-5f);
}

TEST(LRN, ChannelWindow_Opset13) {
  auto out = OneNode("LRN", 13)
                 .input("X", ftensor({1, 3, 1}, {1, 2, 3}))
                 .attr_int("size", 3)
                 .attr_float("alpha", 3)
                 .attr_float("beta", 1)
                 .attr_float("bias", 1)
                 .run();
  // channel 0 window {0,1}: 1 + (1+4) = 6; channel 1 {0,1,2}: 1 + 14 = 15; channel 2 {1,2}: 1 + 13 = 14.
  expect_near(floats(out.at(0).tensor), {1.f / 6, 2.f / 15, 3.f / 14});
  expect_error([] { OneNode("LRN", 13).input("X", ftensor({1, 1}, {1})).attr_int("size", 0).run(); }, "size");
}

}  // namespace
}  // namespace onyx
