#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/scalar.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;

TEST(Unary, AbsOfIntMinWrapsAndFloatsWork_Opset13) {
  const int32_t lo = std::numeric_limits<int32_t>::min();
  auto out = OneNode("Abs", 13).input("X", make_tensor<int32_t>(DataType::Int32, {3}, {-5, 7, lo})).run();
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{5, 7, lo}));
  auto f = OneNode("Abs", 13).input("X", make_tensor<float>(DataType::Float, {2}, {-1.5f, 2})).run();
  EXPECT_EQ(values<float>(f.at(0)), (std::vector<float>{1.5f, 2}));
}

TEST(Unary, V1IgnoresConsumedInputs_Opset1) {
  auto out = OneNode("Neg", 1)
                 .input("X", make_tensor<float>(DataType::Float, {2}, {-4, 2}))
                 .attr_ints("consumed_inputs", {0})
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{4, -2}));
}

TEST(Unary, SqrtExpLogReciprocalCeilFloor_Opset13) {
  auto x = [] { return make_tensor<float>(DataType::Float, {3}, {1.0f, 4.0f, 2.5f}); };
  EXPECT_EQ(values<float>(OneNode("Sqrt", 13).input("X", x()).run().at(0)), (std::vector<float>{1, 2, std::sqrt(2.5f)}));
  EXPECT_EQ(values<float>(OneNode("Reciprocal", 13).input("X", x()).run().at(0)), (std::vector<float>{1, 0.25f, 0.4f}));
  EXPECT_EQ(values<float>(OneNode("Ceil", 13).input("X", x()).run().at(0)), (std::vector<float>{1, 4, 3}));
  EXPECT_EQ(values<float>(OneNode("Floor", 13).input("X", x()).run().at(0)), (std::vector<float>{1, 4, 2}));
  auto e = values<float>(OneNode("Exp", 13).input("X", x()).run().at(0));
  EXPECT_FLOAT_EQ(e[0], std::exp(1.0f));
  auto l = values<float>(OneNode("Log", 13).input("X", x()).run().at(0));
  EXPECT_FLOAT_EQ(l[1], std::log(4.0f));
}

TEST(Unary, RoundHalfToEven_SpecExample_Opset11) {
  auto out = OneNode("Round", 11)
                 .input("X", make_tensor<float>(DataType::Float, {8}, {0.1f, 0.5f, 0.9f, 1.2f, 1.5f, 2.5f, -1.5f, -4.5f}))
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{0, 0, 1, 1, 2, 2, -2, -4}));
}

TEST(Unary, SignOfIntsAndFloats_Opset13) {
  auto i = OneNode("Sign", 13).input("X", make_tensor<int8_t>(DataType::Int8, {3}, {-3, 0, 9})).run();
  EXPECT_EQ(values<int8_t>(i.at(0)), (std::vector<int8_t>{-1, 0, 1}));
  auto f = OneNode("Sign", 9).input("X", make_tensor<double>(DataType::Double, {3}, {-0.5, 0, 2})).run();
  EXPECT_EQ(values<double>(f.at(0)), (std::vector<double>{-1, 0, 1}));
}

TEST(Unary, TrigonometryAndErf_Opset22) {
  auto x = [] { return make_tensor<float>(DataType::Float, {3}, {-0.5f, 0, 0.5f}); };
  auto s = values<float>(OneNode("Asin", 22).input("x", x()).run().at(0));
  EXPECT_FLOAT_EQ(s[2], std::asin(0.5f));
  auto t = values<float>(OneNode("Atanh", 22).input("x", x()).run().at(0));
  EXPECT_FLOAT_EQ(t[0], std::atanh(-0.5f));
  auto e = values<float>(OneNode("Erf", 13).input("x", x()).run().at(0));
  EXPECT_FLOAT_EQ(e[2], std::erf(0.5f));
}

TEST(Unary, Float16ComputesThroughFloat_Opset13) {
  Tensor x = Tensor::allocate(DataType::Float16, {2});
  x.mutable_data<Float16>()[0] = Float16(4.0f);
  x.mutable_data<Float16>()[1] = Float16(0.25f);
  auto out = OneNode("Sqrt", 13).input("X", x).run();
  EXPECT_EQ(static_cast<float>(out.at(0).tensor.data<Float16>()[0]), 2.0f);
  EXPECT_EQ(static_cast<float>(out.at(0).tensor.data<Float16>()[1]), 0.5f);
}

TEST(Unary, IsInfDetectsSignsPerAttributes_Opset20) {
  const float inf = std::numeric_limits<float>::infinity();
  auto x = [&] { return make_tensor<float>(DataType::Float, {4}, {-inf, 1, inf, std::nanf("")}); };
  auto both = OneNode("IsInf", 10).input("x", x()).run();
  EXPECT_EQ(values<bool>(both.at(0)), (std::vector<bool>{true, false, true, false}));
  auto neg = OneNode("IsInf", 20).input("x", x()).attr_int("detect_positive", 0).run();
  EXPECT_EQ(values<bool>(neg.at(0)), (std::vector<bool>{true, false, false, false}));
  auto nan = OneNode("IsNaN", 20).input("x", x()).run();
  EXPECT_EQ(values<bool>(nan.at(0)), (std::vector<bool>{false, false, false, true}));
}

TEST(Unary, Not_Opset1) {
  auto out = OneNode("Not", 1).input("x", make_tensor<uint8_t>(DataType::Bool, {3}, {1, 0, 1})).run();
  EXPECT_EQ(values<bool>(out.at(0)), (std::vector<bool>{false, true, false}));
}

TEST(Unary, TypeOutsideTheVersionIsRefused) {
  // Sqrt-6 has no bfloat16 (added in 13); Abs-1 has no integers (added in 6).
  EXPECT_THROW(OneNode("Sqrt", 12).input("X", Tensor::allocate(DataType::BFloat16, {1})).run(), Error);
  try {
    OneNode("Abs", 5).input("X", make_tensor<int32_t>(DataType::Int32, {1}, {1})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has element type int32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
