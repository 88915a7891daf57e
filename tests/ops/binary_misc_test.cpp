#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::expect_error;
using testing::values;

TEST(Pow, SpecExample_Opset15) {
  auto out = OneNode("Pow", 15)
                 .input("X", make_tensor<float>(DataType::Float, {3}, {1, 2, 3}))
                 .input("Y", make_tensor<float>(DataType::Float, {3}, {4, 5, 6}))
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{1, 32, 729}));
}

TEST(Pow, MixedTypesKeepTheBaseType_Opset12) {
  auto out = OneNode("Pow", 12)
                 .input("X", make_tensor<int64_t>(DataType::Int64, {4}, {2, 3, -2, 7}))
                 .input("Y", make_tensor<float>(DataType::Float, {4}, {3, 0.5f, 3, -1}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dtype(), DataType::Int64);
  EXPECT_EQ(values<int64_t>(out.at(0)), (std::vector<int64_t>{8, 1, -8, 0}));  // 3^0.5 = 1.73 -> 1; 7^-1 -> 0
  auto ints = OneNode("Pow", 15)
                  .input("X", make_tensor<int32_t>(DataType::Int32, {4}, {2, -1, 1, 3}))
                  .input("Y", make_tensor<int8_t>(DataType::Int8, {4}, {10, -3, -5, 2}))
                  .run();
  EXPECT_EQ(values<int32_t>(ints.at(0)), (std::vector<int32_t>{1024, -1, 1, 9}));
}

TEST(Pow, DifferentTypesRefusedBeforeOpset12AndLegacyBroadcast) {
  expect_error(OneNode("Pow", 7)
                   .input("X", make_tensor<float>(DataType::Float, {1}, {2}))
                   .input("Y", make_tensor<double>(DataType::Double, {1}, {2})),
               "different element types");
  auto out = OneNode("Pow", 1)
                 .input("X", make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4}))
                 .input("Y", make_tensor<float>(DataType::Float, {2}, {2, 3}))
                 .attr_int("broadcast", 1)
                 .attr_int("axis", 0)
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{1, 4, 27, 64}));
  expect_error(OneNode("Pow", 1)
                   .input("X", make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4}))
                   .input("Y", make_tensor<float>(DataType::Float, {2}, {2, 3})),
               "broadcast is not set");
}

TEST(Pow, IntegerZeroToNegativePowerIsAnError_Opset15) {
  expect_error(OneNode("Pow", 15)
                   .input("X", make_tensor<int32_t>(DataType::Int32, {1}, {0}))
                   .input("Y", make_tensor<int32_t>(DataType::Int32, {1}, {-2})),
               "integer 0 raised to the negative power -2");
}

TEST(Mod, SignFollowsDivisorUnlessFmod_Opset13) {
  auto out = OneNode("Mod", 13)
                 .input("X", make_tensor<int32_t>(DataType::Int32, {6}, {-4, 7, 5, 4, -7, 8}))
                 .input("Y", make_tensor<int32_t>(DataType::Int32, {6}, {2, -3, 8, -2, 3, 5}))
                 .run();
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{0, -2, 5, 0, 2, 3}));
  auto f = OneNode("Mod", 13)
               .input("X", make_tensor<int32_t>(DataType::Int32, {6}, {-4, 7, 5, 4, -7, 8}))
               .input("Y", make_tensor<int32_t>(DataType::Int32, {6}, {2, -3, 8, -2, 3, 5}))
               .attr_int("fmod", 1)
               .run();
  EXPECT_EQ(values<int32_t>(f.at(0)), (std::vector<int32_t>{0, 1, 5, 0, -1, 3}));
}

TEST(Mod, FloatFmodAndEdgeCases_Opset10) {
  auto out = OneNode("Mod", 10)
                 .input("X", make_tensor<float>(DataType::Float, {3}, {-4.3f, 7.2f, 5.0f}))
                 .input("Y", make_tensor<float>(DataType::Float, {3}, {2.1f, -3.4f, 8.0f}))
                 .attr_int("fmod", 1)
                 .run();
  auto got = values<float>(out.at(0));
  EXPECT_NEAR(got[0], std::fmod(-4.3f, 2.1f), 1e-6);
  EXPECT_NEAR(got[1], std::fmod(7.2f, -3.4f), 1e-6);
  EXPECT_EQ(got[2], 5.0f);
  const int64_t lo = std::numeric_limits<int64_t>::min();
  auto edge = OneNode("Mod", 10)
                  .input("X", make_tensor<int64_t>(DataType::Int64, {2}, {lo, -5}))
                  .input("Y", make_tensor<int64_t>(DataType::Int64, {2}, {-1, 3}))
                  .run();
  EXPECT_EQ(values<int64_t>(edge.at(0)), (std::vector<int64_t>{0, 1}));
  expect_error(OneNode("Mod", 13)
                   .input("X", make_tensor<int16_t>(DataType::Int16, {1}, {3}))
                   .input("Y", make_tensor<int16_t>(DataType::Int16, {1}, {0})),
               "integer modulo by zero");
  expect_error(OneNode("Mod", 13)
                   .input("X", make_tensor<float>(DataType::Float, {1}, {3}))
                   .input("Y", make_tensor<float>(DataType::Float, {1}, {2})),
               "fmod must be 1");
  expect_error(OneNode("Mod", 10)
                   .input("X", make_tensor<uint16_t>(DataType::BFloat16, {1}, {0}))
                   .input("Y", make_tensor<uint16_t>(DataType::BFloat16, {1}, {0}))
                   .attr_int("fmod", 1),
               "allowed");
}

TEST(BitShift, LeftRightAndWideShifts_Opset11) {
  auto left = OneNode("BitShift", 11)
                  .input("X", make_tensor<uint8_t>(DataType::UInt8, {4}, {16, 4, 1, 255}))
                  .input("Y", make_tensor<uint8_t>(DataType::UInt8, {4}, {1, 2, 3, 8}))
                  .attr_string("direction", "LEFT")
                  .run();
  EXPECT_EQ(values<uint8_t>(left.at(0)), (std::vector<uint8_t>{32, 16, 8, 0}));
  auto right = OneNode("BitShift", 11)
                   .input("X", make_tensor<uint64_t>(DataType::UInt64, {3}, {16, 4, 1}))
                   .input("Y", make_tensor<uint64_t>(DataType::UInt64, {1}, {64}))
                   .attr_string("direction", "RIGHT")
                   .run();
  EXPECT_EQ(values<uint64_t>(right.at(0)), (std::vector<uint64_t>{0, 0, 0}));
  expect_error(OneNode("BitShift", 11)
                   .input("X", make_tensor<uint8_t>(DataType::UInt8, {1}, {1}))
                   .input("Y", make_tensor<uint8_t>(DataType::UInt8, {1}, {1}))
                   .attr_string("direction", "UP"),
               "direction must be");
}

TEST(Bitwise, AndOrXorNotWithBroadcast_Opset18) {
  auto a = [] { return make_tensor<int16_t>(DataType::Int16, {2, 2}, {0x0f, -1, 3, 5}); };
  auto b = [] { return make_tensor<int16_t>(DataType::Int16, {2}, {0x3c, 6}); };
  EXPECT_EQ(values<int16_t>(OneNode("BitwiseAnd", 18).input("A", a()).input("B", b()).run().at(0)),
            (std::vector<int16_t>{0x0c, 6, 0, 4}));
  EXPECT_EQ(values<int16_t>(OneNode("BitwiseOr", 18).input("A", a()).input("B", b()).run().at(0)),
            (std::vector<int16_t>{0x3f, -1, 0x3f, 7}));
  EXPECT_EQ(values<int16_t>(OneNode("BitwiseXor", 18).input("A", a()).input("B", b()).run().at(0)),
            (std::vector<int16_t>{0x33, -7, 0x3f, 3}));
  EXPECT_EQ(values<int16_t>(OneNode("BitwiseNot", 18).input("X", a()).run().at(0)),
            (std::vector<int16_t>{-16, 0, -4, -6}));
  auto u = OneNode("BitwiseNot", 18).input("X", make_tensor<uint8_t>(DataType::UInt8, {2}, {0, 200})).run();
  EXPECT_EQ(values<uint8_t>(u.at(0)), (std::vector<uint8_t>{255, 55}));
  expect_error(OneNode("BitwiseAnd", 18)
                   .input("A", make_tensor<int16_t>(DataType::Int16, {1}, {1}))
                   .input("B", make_tensor<int32_t>(DataType::Int32, {1}, {1})),
               "different element types");
}

}  // namespace
}  // namespace onyx
