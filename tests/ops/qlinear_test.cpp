#include <gtest/gtest.h>

#include "op_test_util.hpp"
#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::f32;

using D = DataType;
using testing::make_tensor;
using testing::OneNode;
using testing::expect_error;

template <class T>
std::vector<T> vals(const Datum& d) {
  const Tensor& t = d.tensor;
  return std::vector<T>(t.data<T>(), t.data<T>() + t.element_count());
}

Tensor u8(std::vector<int64_t> dims, const std::vector<uint8_t>& v) { return make_tensor<uint8_t>(D::UInt8, std::move(dims), v); }
Tensor i8(std::vector<int64_t> dims, const std::vector<int8_t>& v) { return make_tensor<int8_t>(D::Int8, std::move(dims), v); }

// ---- MatMulInteger ----

TEST(MatMulInteger, SpecExample_Opset10) {
  auto out = OneNode("MatMulInteger", 10)
                 .input("A", u8({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}))
                 .input("B", u8({3, 2}, {1, 4, 2, 5, 3, 6}))
                 .input("a_zp", u8({}, {12}))
                 .input("b_zp", u8({}, {0}))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), D::Int32);
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(vals<int32_t>(out[0]), (std::vector<int32_t>{-38, -83, -44, -98, -50, -113, -56, -128}));
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPointsWithBatch_Opset10) {
  // A [2, 2, 2] (batch 2), per-row zero points [2, 2, 1]; B [2, 2] per-column zero points [2].
  auto out = OneNode("MatMulInteger", 10)
                 .input("A", i8({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}))
                 .input("B", i8({2, 2}, {1, 0, 0, 1}))
                 .input("a_zp", i8({2, 2, 1}, {1, 0, 0, 0}))
                 .input("b_zp", i8({2}, {0, -1}))
                 .run();
  // batch 0: [[0,1],[3,4]] x [[1,1],[0,2]] = [[0,2],[3,11]]; batch 1: [[5,6],[7,8]] x same = [[5,17],[7,23]].
  EXPECT_EQ(vals<int32_t>(out[0]), (std::vector<int32_t>{0, 2, 3, 11, 5, 17, 7, 23}));
}

TEST(MatMulInteger, VectorOperandsDropTheirDim_Opset10) {
  auto out = OneNode("MatMulInteger", 10).input("A", u8({3}, {1, 2, 3})).input("B", u8({3, 2}, {1, 0, 0, 1, 1, 1})).run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(vals<int32_t>(out[0]), (std::vector<int32_t>{4, 5}));
}

TEST(MatMulInteger, InnerDimensionMismatchIsAnError_Opset10) {
  expect_error(OneNode("MatMulInteger", 10).input("A", u8({2, 3}, {1, 2, 3, 4, 5, 6})).input("B", u8({2, 2}, {1, 2, 3, 4})),
               "inner dimensions differ");
}

TEST(MatMulInteger, InferenceIsSymbolic_Opset10) {
  testing::GraphBuilder g(10);
  g.input("a", D::UInt8, {"N", "M", "4"}).input("b", D::Int8, {"4", "5"}).output("y");
  g.node("MatMulInteger", {"a", "b"}, {"y"});
  EXPECT_EQ(testing::output_type(g.session(), 0), "int32[N,M,5]");
}

// ---- QLinearMatMul ----

OneNode spec_qlinear_matmul(int opset) {
  return std::move(OneNode("QLinearMatMul", opset)
                       .input("a", u8({2, 4}, {208, 236, 0, 238, 3, 214, 255, 29}))
                       .input("a_scale", f32({}, {0.0066f}))
                       .input("a_zp", u8({}, {113}))
                       .input("b", u8({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}))
                       .input("b_scale", f32({}, {0.00705f}))
                       .input("b_zp", u8({}, {114}))
                       .input("y_scale", f32({}, {0.0107f}))
                       .input("y_zp", u8({}, {118})));
}

TEST(QLinearMatMul, SpecExample_Opset10And21) {
  for (int opset : {10, 21}) {
    auto out = spec_qlinear_matmul(opset).run();
    EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{168, 115, 255, 1, 66, 151})) << opset;
  }
}

TEST(QLinearMatMul, Float16ScalesOnlyFromOpset21) {
  auto h = [](float f) { return make_tensor<uint16_t>(D::Float16, {}, {float_to_half(f)}); };
  auto node = [&](int opset) {
    return std::move(OneNode("QLinearMatMul", opset)
                         .input("a", i8({1, 2}, {3, -1}))
                         .input("a_scale", h(0.5f))
                         .input("a_zp", i8({}, {1}))
                         .input("b", i8({2, 1}, {4, 2}))
                         .input("b_scale", h(2.f))
                         .input("b_zp", i8({}, {0}))
                         .input("y_scale", h(0.25f))
                         .input("y_zp", i8({}, {-3})));
  };
  // acc = 2*4 + (-2)*2 = 4; 4 * 0.5 * 2 / 0.25 = 16; + (-3) = 13.
  EXPECT_EQ(vals<int8_t>(node(21).run()[0]), (std::vector<int8_t>{13}));
  expect_error(node(10), "has element type float16");
}

TEST(QLinearMatMul, Float8Operands_Opset21) {
  // a = [1, 2] (e4m3fn 0x38, 0x40), b = [[3], [0.5]] (0x44, 0x30); acc = 4; scales 1 -> y = 4 (e4m3fn 0x48).
  auto out = OneNode("QLinearMatMul", 21)
                 .input("a", make_tensor<uint8_t>(D::Float8E4M3FN, {1, 2}, {0x38, 0x40}))
                 .input("a_scale", f32({}, {1}))
                 .input("a_zp", make_tensor<uint8_t>(D::Float8E4M3FN, {}, {0}))
                 .input("b", make_tensor<uint8_t>(D::Float8E4M3FN, {2, 1}, {0x44, 0x30}))
                 .input("b_scale", f32({}, {1}))
                 .input("b_zp", make_tensor<uint8_t>(D::Float8E4M3FN, {}, {0}))
                 .input("y_scale", f32({}, {1}))
                 .input("y_zp", make_tensor<uint8_t>(D::Float8E4M3FN, {}, {0}))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), D::Float8E4M3FN);
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{0x48}));
}

TEST(QLinearMatMul, ScaleShapeIsChecked_Opset10) {
  OneNode bad = std::move(OneNode("QLinearMatMul", 10)
                              .input("a", u8({2, 4}, {208, 236, 0, 238, 3, 214, 255, 29}))
                              .input("a_scale", f32({3}, {1, 1, 1}))
                              .input("a_zp", u8({}, {113}))
                              .input("b", u8({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}))
                              .input("b_scale", f32({}, {0.00705f}))
                              .input("b_zp", u8({}, {114}))
                              .input("y_scale", f32({}, {0.0107f}))
                              .input("y_zp", u8({}, {118})));
  expect_error(bad, "a_scale has shape [3]");
}

TEST(QLinearMatMul, PerRowAndPerColumnScales_Opset10) {
  // a [2, 1] with per-row scales [1, 2]; b [1, 2] with per-column scales [1, 3]; acc = a x b.
  auto out = OneNode("QLinearMatMul", 10)
                 .input("a", i8({2, 1}, {2, 3}))
                 .input("a_scale", f32({2}, {1, 2}))
                 .input("a_zp", i8({2}, {0, 0}))
                 .input("b", i8({1, 2}, {1, 1}))
                 .input("b_scale", f32({2}, {1, 3}))
                 .input("b_zp", i8({2}, {0, 0}))
                 .input("y_scale", f32({}, {1}))
                 .input("y_zp", i8({}, {0}))
                 .run();
  // y[m, n] = a[m] * b[n] * a_scale[m] * b_scale[n] = [[2, 6], [6, 18]].
  EXPECT_EQ(vals<int8_t>(out[0]), (std::vector<int8_t>{2, 6, 6, 18}));
}

TEST(QLinearConv, InferenceUsesTheZeroPointType_Opset10) {
  testing::GraphBuilder g(10);
  g.input("x", D::UInt8, {"N", "1", "5", "5"}).output("y");
  g.initializer("xs", f32({}, {1})).initializer("xz", u8({}, {0}));
  g.initializer("w", i8({4, 1, 3, 3}, std::vector<int8_t>(36, 1))).initializer("ws", f32({}, {1})).initializer("wz", i8({}, {0}));
  g.initializer("ys", f32({}, {1})).initializer("yz", i8({}, {0}));
  auto& n = g.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"});
  g.attr(n, "auto_pad", pb::AttrType::String).s = g.s("SAME_LOWER");
  EXPECT_EQ(testing::output_type(g.session(), 0), "int8[N,4,5,5]");
}

// ---- ConvInteger ----

TEST(ConvInteger, SpecExamples_Opset10) {
  auto x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  auto w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  auto out = OneNode("ConvInteger", 10).input("x", x).input("w", w).input("x_zp", u8({}, {1})).run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(vals<int32_t>(out[0]), (std::vector<int32_t>{12, 16, 24, 28}));
  auto padded = OneNode("ConvInteger", 10).input("x", x).input("w", w).input("x_zp", u8({}, {1})).attr_ints("pads", {1, 1, 1, 1}).run();
  EXPECT_EQ(vals<int32_t>(padded[0]), (std::vector<int32_t>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
}

TEST(ConvInteger, GroupsStridesPerChannelZeroPointAndSameUpper_Opset10) {
  // x [1, 2, 1, 4], two groups of one channel; w [2, 1, 1, 2] with per-channel zero points [0, 1].
  auto out = OneNode("ConvInteger", 10)
                 .input("x", i8({1, 2, 1, 4}, {1, 2, 3, 4, -1, -2, -3, -4}))
                 .input("w", i8({2, 1, 1, 2}, {1, 1, 2, 3}))
                 .omitted_input()
                 .input("w_zp", i8({2}, {0, 1}))
                 .attr_int("group", 2)
                 .attr_ints("strides", {1, 2})
                 .attr_string("auto_pad", "SAME_UPPER")
                 .run();
  // Output width ceil(4/2) = 2, total pad 0. Channel 0: [1+2, 3+4]; channel 1 (w-1 = [1, 2]): [-1-4, -3-8].
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_EQ(vals<int32_t>(out[0]), (std::vector<int32_t>{3, 7, -5, -11}));
}

TEST(ConvInteger, GroupMismatchIsAnError_Opset10) {
  expect_error(OneNode("ConvInteger", 10).input("x", u8({1, 3, 2, 2}, std::vector<uint8_t>(12, 1))).input("w", u8({2, 2, 1, 1}, {1, 1, 1, 1})),
               "do not match 3 input channels");
}

TEST(ConvInteger, InferenceComputesSpatialDims_Opset10) {
  testing::GraphBuilder g(10);
  g.input("x", D::UInt8, {"N", "3", "10", "W"}).input("w", D::UInt8, {"8", "3", "3", "3"}).output("y");
  auto& n = g.node("ConvInteger", {"x", "w"}, {"y"});
  g.attr_ints(n, "strides", {2, 2});
  g.attr_ints(n, "pads", {1, 1, 1, 1});
  EXPECT_EQ(testing::output_type(g.session(), 0), "int32[N,8,5,?]");
}

// ---- QLinearConv ----

TEST(QLinearConv, BiasAndRequantization_Opset10) {
  auto out = OneNode("QLinearConv", 10)
                 .input("x", u8({1, 1, 2, 2}, {10, 20, 30, 40}))
                 .input("x_scale", f32({}, {0.5f}))
                 .input("x_zp", u8({}, {10}))
                 .input("w", i8({1, 1, 1, 1}, {2}))
                 .input("w_scale", f32({}, {0.25f}))
                 .input("w_zp", i8({}, {0}))
                 .input("y_scale", f32({}, {0.5f}))
                 .input("y_zp", u8({}, {5}))
                 .input("B", make_tensor<int32_t>(D::Int32, {1}, {3}))
                 .run();
  // acc = (x - 10) * 2 + 3 = [3, 23, 43, 63]; * 0.25 = [0.75, 5.75, 10.75, 15.75] -> [1, 6, 11, 16] + 5.
  EXPECT_EQ(out[0].tensor.dtype(), D::UInt8);
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{6, 11, 16, 21}));
}

TEST(QLinearConv, PerChannelWeightScaleAndSaturation_Opset10) {
  auto out = OneNode("QLinearConv", 10)
                 .input("x", i8({1, 1, 1, 2}, {100, -100}))
                 .input("x_scale", f32({}, {1}))
                 .input("x_zp", i8({}, {0}))
                 .input("w", i8({2, 1, 1, 1}, {1, 1}))
                 .input("w_scale", f32({2}, {1, 0.01f}))
                 .input("w_zp", i8({2}, {0, 0}))
                 .input("y_scale", f32({}, {0.5f}))
                 .input("y_zp", i8({}, {0}))
                 .run();
  // Channel 0: 100 / 0.5 = 200 -> 127, -200 -> -128; channel 1: 100 * 0.02 = 2, -2.
  EXPECT_EQ(vals<int8_t>(out[0]), (std::vector<int8_t>{127, -128, 2, -2}));
}

TEST(QLinearConv, ScalarXScaleIsRequired_Opset10) {
  expect_error(OneNode("QLinearConv", 10)
                   .input("x", u8({1, 1, 1, 1}, {1}))
                   .input("x_scale", f32({2}, {1, 1}))
                   .input("x_zp", u8({}, {0}))
                   .input("w", u8({1, 1, 1, 1}, {1}))
                   .input("w_scale", f32({}, {1}))
                   .input("w_zp", u8({}, {0}))
                   .input("y_scale", f32({}, {1}))
                   .input("y_zp", u8({}, {0})),
               "x_scale must be a scalar");
}

}  // namespace
}  // namespace onyx
