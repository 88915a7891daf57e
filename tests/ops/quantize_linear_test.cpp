#include <gtest/gtest.h>

#include <cmath>

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
  return std::vector<T>(t.data<T>(), t.data<T>() + t.bytes().size() / sizeof(T));
}

Tensor u8(D dt, std::vector<int64_t> dims, const std::vector<uint8_t>& v) { return make_tensor<uint8_t>(dt, std::move(dims), v); }

// ---- QuantizeLinear ----

TEST(QuantizeLinear, SpecExampleUint8_Opset10) {
  auto out = OneNode("QuantizeLinear", 10)
                 .input("x", f32({6}, {0, 2, 3, 1000, -254, -1000}))
                 .input("s", f32({}, {2}))
                 .input("zp", u8(D::UInt8, {}, {128}))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), D::UInt8);
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{128, 129, 130, 255, 1, 0}));
}

TEST(QuantizeLinear, RoundsHalfToEvenAndDefaultsToUint8_Opset13) {
  auto out = OneNode("QuantizeLinear", 13).input("x", f32({6}, {0.5f, 1.5f, 2.5f, -0.5f, 300, NAN})).input("s", f32({}, {1})).run();
  EXPECT_EQ(out[0].tensor.dtype(), D::UInt8);
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{0, 2, 2, 0, 255, 0}));
}

TEST(QuantizeLinear, PerAxisInt8_Opset13) {
  auto out = OneNode("QuantizeLinear", 13)
                 .input("x", f32({2, 2}, {2, 4, 6, 8}))
                 .input("s", f32({2}, {1, 2}))
                 .input("zp", make_tensor<int8_t>(D::Int8, {2}, {0, -1}))
                 .attr_int("axis", 1)
                 .run();
  EXPECT_EQ(vals<int8_t>(out[0]), (std::vector<int8_t>{2, 1, 6, 3}));
}

TEST(QuantizeLinear, PerAxisIsRefusedAtOpset10) {
  expect_error(OneNode("QuantizeLinear", 10).input("x", f32({2, 2}, {2, 4, 6, 8})).input("s", f32({2}, {1, 2})),
               "must be a scalar (per-tensor quantization) before opset 13");
}

TEST(QuantizeLinear, BlockedWithRemainderBlock_Opset21) {
  // x [2, 5], blocks of 2 along axis 1: scale [2, 3].
  auto out = OneNode("QuantizeLinear", 21)
                 .input("x", f32({2, 5}, {2, 2, 4, 4, 9, 3, 3, 6, 6, 10}))
                 .input("s", f32({2, 3}, {1, 2, 3, 1, 2, 5}))
                 .input("zp", u8(D::UInt8, {2, 3}, {0, 0, 0, 10, 10, 10}))
                 .attr_int("axis", 1)
                 .attr_int("block_size", 2)
                 .run();
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{2, 2, 2, 2, 3, 13, 13, 13, 13, 12}));
}

TEST(QuantizeLinear, BlockedScaleShapeIsChecked_Opset21) {
  expect_error(OneNode("QuantizeLinear", 21)
                   .input("x", f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
                   .input("s", f32({2, 3}, {1, 1, 1, 1, 1, 1}))
                   .attr_int("axis", 1)
                   .attr_int("block_size", 2),
               "does not match ceil(4 / block_size 2) = 2");
}

TEST(QuantizeLinear, Int4IsSaturatedAndPacked_Opset21) {
  auto out = OneNode("QuantizeLinear", 21)
                 .input("x", f32({5}, {-9, -1, 0, 3, 8}))
                 .input("s", f32({}, {1}))
                 .input("zp", u8(D::Int4, {}, {0}))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), D::Int4);
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{0xF8, 0x30, 0x07}));
}

TEST(QuantizeLinear, OutputDtypeWithoutZeroPoint_Opset21) {
  auto out = OneNode("QuantizeLinear", 21)
                 .input("x", f32({3}, {-40000, 1.5f, 70000}))
                 .input("s", f32({}, {1}))
                 .attr_int("output_dtype", static_cast<int64_t>(D::Int16))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), D::Int16);
  EXPECT_EQ(vals<int16_t>(out[0]), (std::vector<int16_t>{-32768, 2, 32767}));
}

TEST(QuantizeLinear, OutputDtypeMustMatchZeroPoint_Opset21) {
  expect_error(OneNode("QuantizeLinear", 21)
                   .input("x", f32({1}, {1}))
                   .input("s", f32({}, {1}))
                   .input("zp", make_tensor<int8_t>(D::Int8, {}, {0}))
                   .attr_int("output_dtype", static_cast<int64_t>(D::UInt8)),
               "does not match y_zero_point type int8");
}

TEST(QuantizeLinear, Float8SaturateAttribute_Opset19) {
  auto sat = OneNode("QuantizeLinear", 19)
                 .input("x", f32({3}, {1000, -1000, 3}))
                 .input("s", f32({}, {1}))
                 .input("zp", u8(D::Float8E4M3FN, {}, {0}))
                 .run();
  EXPECT_EQ(vals<uint8_t>(sat[0]), (std::vector<uint8_t>{0x7E, 0xFE, 0x44}));  // +-448, 3
  auto nosat = OneNode("QuantizeLinear", 19)
                   .input("x", f32({1}, {100000}))
                   .input("s", f32({}, {1}))
                   .input("zp", u8(D::Float8E5M2, {}, {0}))
                   .attr_int("saturate", 0)
                   .run();
  EXPECT_EQ(vals<uint8_t>(nosat[0]), (std::vector<uint8_t>{0x7C}));  // e5m2 overflow without saturation: +inf
}

TEST(QuantizeLinear, Float4E2M1_Opset23) {
  auto out = OneNode("QuantizeLinear", 23)
                 .input("x", f32({3}, {1, 5.2f, 200}))
                 .input("s", f32({}, {2}))
                 .input("zp", u8(D::Float4E2M1, {}, {0}))
                 .run();
  // 0.5 -> code 1, 2.6 -> 3 (code 5), 100 -> saturates to 6 (code 7); packed two per byte.
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{0x51, 0x07}));
}

TEST(QuantizeLinear, Float4E2M1IsRefusedAtOpset21) {
  expect_error(OneNode("QuantizeLinear", 21).input("x", f32({1}, {1})).input("s", f32({}, {1})).input("zp", u8(D::Float4E2M1, {}, {0})),
               "has element type float4e2m1");
}

TEST(QuantizeLinear, PrecisionAttributeRoundsTheQuotient_Opset23) {
  auto plain = OneNode("QuantizeLinear", 23)
                   .input("x", f32({1}, {2049}))
                   .input("s", f32({}, {1}))
                   .attr_int("output_dtype", static_cast<int64_t>(D::Int16))
                   .run();
  EXPECT_EQ(vals<int16_t>(plain[0]), (std::vector<int16_t>{2049}));
  auto half = OneNode("QuantizeLinear", 23)
                  .input("x", f32({1}, {2049}))
                  .input("s", f32({}, {1}))
                  .attr_int("output_dtype", static_cast<int64_t>(D::Int16))
                  .attr_int("precision", static_cast<int64_t>(D::Float16))
                  .run();
  EXPECT_EQ(vals<int16_t>(half[0]), (std::vector<int16_t>{2048}));  // 2049 is not a float16 (tie to even)
}

TEST(QuantizeLinear, E8M0ScaleOnlyFromOpset24) {
  // 2^1 = bits 128.
  auto out = OneNode("QuantizeLinear", 24)
                 .input("x", f32({2}, {6, -6}))
                 .input("s", u8(D::Float8E8M0, {}, {128}))
                 .input("zp", make_tensor<int8_t>(D::Int8, {}, {0}))
                 .run();
  EXPECT_EQ(vals<int8_t>(out[0]), (std::vector<int8_t>{3, -3}));
  expect_error(OneNode("QuantizeLinear", 23)
                   .input("x", f32({2}, {6, -6}))
                   .input("s", u8(D::Float8E8M0, {}, {128}))
                   .input("zp", make_tensor<int8_t>(D::Int8, {}, {0})),
               "has element type float8e8m0");
}

TEST(QuantizeLinear, UInt2Packed_Opset25) {
  auto out = OneNode("QuantizeLinear", 25)
                 .input("x", f32({5}, {0, 1, 2, 3, 4}))
                 .input("s", f32({}, {1}))
                 .input("zp", u8(D::UInt2, {}, {0}))
                 .run();
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{0xE4, 0x03}));
  expect_error(OneNode("QuantizeLinear", 24).input("x", f32({1}, {1})).input("s", f32({}, {1})).input("zp", u8(D::UInt2, {}, {0})),
               "has element type uint2");
}

TEST(QuantizeLinear, Float16InputAndScaleMustMatch_Opset19) {
  auto out = OneNode("QuantizeLinear", 19)
                 .input("x", make_tensor<uint16_t>(D::Float16, {2}, {float_to_half(3.f), float_to_half(-5.f)}))
                 .input("s", make_tensor<uint16_t>(D::Float16, {}, {float_to_half(2.f)}))
                 .input("zp", make_tensor<int8_t>(D::Int8, {}, {1}))
                 .run();
  EXPECT_EQ(vals<int8_t>(out[0]), (std::vector<int8_t>{3, -1}));  // 1.5 -> 2, -2.5 -> -2
  expect_error(OneNode("QuantizeLinear", 19)
                   .input("x", make_tensor<uint16_t>(D::Float16, {1}, {float_to_half(3.f)}))
                   .input("s", f32({}, {2})),
               "must have the same type");
}

TEST(QuantizeLinear, InferenceKeepsSymbolicShape_Opset21) {
  testing::GraphBuilder g(21);
  g.input("x", D::Float, {"N", "4"}).output("y");
  g.initializer("s", f32({}, {1}));
  g.initializer("zp", u8(D::UInt4, {}, {0}));
  g.node("QuantizeLinear", {"x", "s", "zp"}, {"y"});
  EXPECT_EQ(testing::output_type(g.session(), 0), "uint4[N,4]");
}

// ---- DequantizeLinear ----

TEST(DequantizeLinear, SpecExample_Opset10) {
  auto out = OneNode("DequantizeLinear", 10)
                 .input("x", u8(D::UInt8, {4}, {0, 3, 128, 255}))
                 .input("s", f32({}, {2}))
                 .input("zp", u8(D::UInt8, {}, {128}))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), D::Float);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{-256, -250, 0, 254}));
}

TEST(DequantizeLinear, PerAxisAndInt32_Opset13) {
  auto out = OneNode("DequantizeLinear", 13)
                 .input("x", make_tensor<int8_t>(D::Int8, {2, 2}, {1, 2, 3, 4}))
                 .input("s", f32({2}, {1, 10}))
                 .input("zp", make_tensor<int8_t>(D::Int8, {2}, {0, 1}))
                 .attr_int("axis", -1)
                 .run();
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 10, 3, 30}));
  auto i32 = OneNode("DequantizeLinear", 13).input("x", make_tensor<int32_t>(D::Int32, {2}, {-7, 1 << 20})).input("s", f32({}, {0.5f})).run();
  EXPECT_EQ(vals<float>(i32[0]), (std::vector<float>{-3.5f, 524288}));
}

TEST(DequantizeLinear, Float8ToFloat16_Opset19) {
  auto out = OneNode("DequantizeLinear", 19)
                 .input("x", u8(D::Float8E4M3FN, {2}, {0x38, 0x7E}))  // 1, 448
                 .input("s", make_tensor<uint16_t>(D::Float16, {}, {float_to_half(2.f)}))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), D::Float16);
  auto v = vals<uint16_t>(out[0]);
  EXPECT_EQ(half_to_float(v[0]), 2.f);
  EXPECT_EQ(half_to_float(v[1]), 896.f);
}

TEST(DequantizeLinear, BlockedInt4_Opset21) {
  // x int4 [2, 3] = {1, -2, 3, -4, 5, -6}; blocks of 2 along axis 1 -> scale [2, 2].
  auto out = OneNode("DequantizeLinear", 21)
                 .input("x", u8(D::Int4, {2, 3}, {pack_int4(1, -2), pack_int4(3, -4), pack_int4(5, -6)}))
                 .input("s", f32({2, 2}, {1, 10, 2, 20}))
                 .input("zp", u8(D::Int4, {2, 2}, {pack_int4(0, 1), pack_int4(-1, 0)}))
                 .attr_int("axis", 1)
                 .attr_int("block_size", 2)
                 .run();
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, -2, 20, -6, 12, -120}));
}

TEST(DequantizeLinear, OutputDtypeAndE8M0Scale_Opset24) {
  auto out = OneNode("DequantizeLinear", 24)
                 .input("x", make_tensor<int8_t>(D::Int8, {2}, {3, -5}))
                 .input("s", u8(D::Float8E8M0, {}, {126}))  // 0.5
                 .attr_int("output_dtype", static_cast<int64_t>(D::BFloat16))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), D::BFloat16);
  auto v = vals<uint16_t>(out[0]);
  EXPECT_EQ(bfloat16_to_float(v[0]), 1.5f);
  EXPECT_EQ(bfloat16_to_float(v[1]), -2.5f);
  expect_error(OneNode("DequantizeLinear", 24).input("x", make_tensor<int8_t>(D::Int8, {1}, {3})).input("s", u8(D::Float8E8M0, {}, {126})),
               "needs the output_dtype attribute");
}

TEST(DequantizeLinear, Int2_Opset25) {
  auto out = OneNode("DequantizeLinear", 25)
                 .input("x", u8(D::Int2, {4}, {pack_int2(-2, -1, 0, 1)}))
                 .input("s", f32({}, {3}))
                 .run();
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{-6, -3, 0, 3}));
}

TEST(DequantizeLinear, ZeroPointTypeMustMatch_Opset21) {
  expect_error(OneNode("DequantizeLinear", 21)
                   .input("x", make_tensor<int8_t>(D::Int8, {1}, {3}))
                   .input("s", f32({}, {1}))
                   .input("zp", u8(D::UInt8, {}, {1})),
               "must have the same type");
}

TEST(DequantizeLinear, ScaleLengthMustMatchAxis_Opset13) {
  expect_error(OneNode("DequantizeLinear", 13)
                   .input("x", make_tensor<int8_t>(D::Int8, {2, 2}, {1, 2, 3, 4}))
                   .input("s", f32({3}, {1, 2, 3})),
               "per-axis scale has 3 elements but x has 2 along axis 1");
}

TEST(DequantizeLinear, Float8InputOnlyFromOpset19) {
  expect_error(OneNode("DequantizeLinear", 13).input("x", u8(D::Float8E4M3FN, {1}, {0x38})).input("s", f32({}, {1})),
               "has element type float8e4m3fn");
}

TEST(QuantizeLinear, NegativeBlockSizeIsAnError_Opset21) {
  expect_error(OneNode("QuantizeLinear", 21).input("x", f32({2}, {1, 2})).input("s", f32({1}, {1})).attr_int("block_size", -2),
               "block_size must be positive");
}

// ---- DynamicQuantizeLinear ----

TEST(DynamicQuantizeLinear, SpecExample_Opset11) {
  auto out = OneNode("DynamicQuantizeLinear", 11).input("x", f32({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f})).outputs(3).run();
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_FLOAT_EQ(vals<float>(out[1])[0], 5.f / 255.f);
  EXPECT_EQ(out[1].tensor.dims(), std::vector<int64_t>{});
  EXPECT_EQ(vals<uint8_t>(out[2])[0], 153);
}

TEST(DynamicQuantizeLinear, AllZerosGiveZeroScale_Opset11) {
  auto out = OneNode("DynamicQuantizeLinear", 11).input("x", f32({3}, {0, 0, 0})).outputs(3).run();
  EXPECT_EQ(vals<uint8_t>(out[0]), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(vals<float>(out[1])[0], 0.f);
  EXPECT_EQ(vals<uint8_t>(out[2])[0], 0);
}

TEST(DynamicQuantizeLinear, InfiniteInputIsAnError_Opset11) {
  expect_error(OneNode("DynamicQuantizeLinear", 11).input("x", f32({2}, {INFINITY, 1})).outputs(3), "infinite");
}

}  // namespace
}  // namespace onyx
