#include "nn_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

std::vector<float> iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = float(i);
  return v;
}

TEST(Conv, SpecExampleWithAndWithoutPadding_Opset11) {
  auto with_pad = OneNode("Conv", 11)
                      .input("X", ftensor({1, 1, 5, 5}, iota(25)))
                      .input("W", ftensor({1, 1, 3, 3}, std::vector<float>(9, 1)))
                      .attr_ints("kernel_shape", {3, 3})
                      .attr_ints("pads", {1, 1, 1, 1})
                      .run();
  expect_near(floats(with_pad.at(0).tensor), {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
                                              93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
  auto no_pad = OneNode("Conv", 11)
                    .input("X", ftensor({1, 1, 5, 5}, iota(25)))
                    .input("W", ftensor({1, 1, 3, 3}, std::vector<float>(9, 1)))
                    .run();
  EXPECT_EQ(no_pad.at(0).tensor.dims(), (Dims{1, 1, 3, 3}));
  expect_near(floats(no_pad.at(0).tensor), {54, 63, 72, 99, 108, 117, 144, 153, 162});
}

TEST(Conv, StridesAutoPadSameUpperGroupsAndBias_Opset11) {
  // 2 channels, group 2: each output channel sees its own input channel; 1-D with stride 2 and SAME_UPPER.
  auto out = OneNode("Conv", 11)
                 .input("X", ftensor({1, 2, 5}, {1, 2, 3, 4, 5, 10, 20, 30, 40, 50}))
                 .input("W", ftensor({2, 1, 3}, {1, 1, 1, 0, 1, 0}))
                 .input("B", ftensor({2}, {0.5f, -1}))
                 .attr_int("group", 2)
                 .attr_ints("strides", {2})
                 .attr_string("auto_pad", "SAME_UPPER")
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{1, 2, 3}));
  // ceil(5/2)=3 outputs, total pad 2 -> 1 each side.
  expect_near(floats(out.at(0).tensor), {3.5f, 9.5f, 9.5f, 9, 29, 49});
}

TEST(Conv, Dilations3D_Opset22) {
  auto out = OneNode("Conv", 22)
                 .input("X", ftensor({1, 1, 3, 3, 3}, iota(27)))
                 .input("W", ftensor({1, 1, 2, 2, 2}, std::vector<float>(8, 1)))
                 .attr_ints("dilations", {2, 2, 2})
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{1, 1, 1, 1, 1}));
  expect_near(floats(out.at(0).tensor), {0 + 2 + 6 + 8 + 18 + 20 + 24 + 26});
}

TEST(Conv, BFloat16OnlyFromOpset22) {
  auto x = make_tensor<uint16_t>(DataType::BFloat16, {1, 1, 1}, {0x3f80});  // 1.0
  auto w = make_tensor<uint16_t>(DataType::BFloat16, {1, 1, 1}, {0x4000});  // 2.0
  auto out = OneNode("Conv", 22).input("X", x).input("W", w).run();
  EXPECT_EQ(out.at(0).tensor.data<uint16_t>()[0], 0x4000);
  expect_error([&] { OneNode("Conv", 11).input("X", x).input("W", w).run(); }, "allowed");
}

TEST(Conv, ChannelMismatchIsAnError) {
  expect_error([] {
    OneNode("Conv", 11).input("X", ftensor({1, 2, 3}, iota(6))).input("W", ftensor({1, 3, 1}, iota(3))).run();
  }, "channels");
}

TEST(ConvTranspose, SpecExample_Opset11) {
  auto out = OneNode("ConvTranspose", 11)
                 .input("X", ftensor({1, 1, 3, 3}, iota(9)))
                 .input("W", ftensor({1, 2, 3, 3}, std::vector<float>(18, 1)))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (Dims{1, 2, 5, 5}));
  std::vector<float> one = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  std::vector<float> want = one;
  want.insert(want.end(), one.begin(), one.end());
  expect_near(floats(out.at(0).tensor), want);
}

TEST(ConvTranspose, StridesPadsOutputPaddingAndOutputShape_Opset22) {
  // 1-D: X [1, 2], W ones(3), stride 2 -> full output length 5: [1,1,3,2,2].
  auto full = OneNode("ConvTranspose", 22)
                  .input("X", ftensor({1, 1, 2}, {1, 2}))
                  .input("W", ftensor({1, 1, 3}, {1, 1, 1}))
                  .attr_ints("strides", {2})
                  .run();
  expect_near(floats(full.at(0).tensor), {1, 1, 3, 2, 2});
  auto padded = OneNode("ConvTranspose", 22)
                    .input("X", ftensor({1, 1, 2}, {1, 2}))
                    .input("W", ftensor({1, 1, 3}, {1, 1, 1}))
                    .attr_ints("strides", {2})
                    .attr_ints("pads", {1, 0})
                    .attr_ints("output_padding", {1})
                    .run();
  expect_near(floats(padded.at(0).tensor), {1, 3, 2, 2, 0});
  // output_shape 6: total padding 5 - 6 = -1 -> one extra (zero) element at the end.
  auto shaped = OneNode("ConvTranspose", 22)
                    .input("X", ftensor({1, 1, 2}, {1, 2}))
                    .input("W", ftensor({1, 1, 3}, {1, 1, 1}))
                    .attr_ints("strides", {2})
                    .attr_ints("output_shape", {6})
                    .run();
  expect_near(floats(shaped.at(0).tensor), {1, 1, 3, 2, 2, 0});
}

TEST(ConvTranspose, LongKernelRunsInChunksOfInputPositions_Opset11) {
  const int64_t k = int64_t{1} << 20;  // 2^20 GEMM rows: two input positions per chunk
  auto out = OneNode("ConvTranspose", 11)
                 .input("X", ftensor({1, 1, 3}, {1, 2, 3}))
                 .input("W", ftensor({1, 1, k}, std::vector<float>(k, 1)))
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (Dims{1, 1, k + 2}));
  const float* p = y.data<float>();
  EXPECT_EQ(p[0], 1);
  EXPECT_EQ(p[1], 3);
  EXPECT_EQ(p[2], 6);
  EXPECT_EQ(p[k / 2], 6);
  EXPECT_EQ(p[k], 5);
  EXPECT_EQ(p[k + 1], 3);
}

TEST(ConvTranspose, WeightChannelMismatchIsAnError) {
  expect_error([] {
    OneNode("ConvTranspose", 11).input("X", ftensor({1, 2, 2}, iota(4))).input("W", ftensor({1, 1, 2}, iota(2))).run();
  }, "input channels");
}

}  // namespace
}  // namespace onyx
