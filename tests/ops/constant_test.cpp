#include <gtest/gtest.h>

#include "ir/scalar.hpp"
#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using Dims = std::vector<int64_t>;

TEST(Constant, ValueIntsAndValueFloat_Opset13) {
  auto ints = OneNode("Constant", 13).attr_ints("value_ints", {4, 5, 6}).run();
  EXPECT_EQ(ints.at(0).tensor.dtype(), DataType::Int64);
  EXPECT_EQ(values_of<int64_t>(ints[0].tensor), (Dims{4, 5, 6}));
  auto f = OneNode("Constant", 12).attr_float("value_float", 2.5f).run();
  EXPECT_TRUE(f.at(0).tensor.dims().empty());
  EXPECT_EQ(values_of<float>(f[0].tensor), (std::vector<float>{2.5f}));
  auto s = OneNode("Constant", 13).attr_string("value_string", "hi").run();
  EXPECT_EQ(s.at(0).tensor.string_values(), (std::vector<std::string>{"hi"}));
}

TEST(Constant, TensorValueAndInferredShape) {
  GraphBuilder b(19);
  auto& n = b.node("Constant", {}, {"Y"});
  b.attr_tensor(n, "value", f32({2, 2}, {1, 2, 3, 4}));
  b.output("Y");
  Session s = b.session();
  EXPECT_EQ(output_type(s, 0), "float[2,2]");
  auto out = s.run({});
  EXPECT_EQ(values_of<float>(out.at(0).second.tensor), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Constant, VersionRulesAreErrors) {
  EXPECT_THROW(OneNode("Constant", 11).attr_ints("value_ints", {1}).run(), Error);  // value_ints needs 12
  try {
    OneNode("Constant", 13).attr_ints("value_ints", {1}).attr_float("value_float", 1).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exactly one"), std::string::npos) << e.what();
  }
}

TEST(ConstantOfShape, DefaultFloatZeroAndIntValue) {
  auto z = OneNode("ConstantOfShape", 9).input("S", i64({2}, {2, 3})).run();
  EXPECT_EQ(z.at(0).tensor.dtype(), DataType::Float);
  EXPECT_EQ(values_of<float>(z[0].tensor), std::vector<float>(6, 0.0f));
  GraphBuilder b(20);
  b.input("S", DataType::Int64, {"3"});
  auto& n = b.node("ConstantOfShape", {"S"}, {"Y"});
  b.attr_tensor(n, "value", make_tensor<int32_t>(DataType::Int32, {1}, {7}));
  b.output("Y");
  auto out = b.session().run({{"S", Datum::of(i64({3}, {1, 2, 2}))}});
  const Tensor& y = out.at(0).second.tensor;
  EXPECT_EQ(y.dims(), (Dims{1, 2, 2}));
  EXPECT_EQ(values_of<int32_t>(y), std::vector<int32_t>(4, 7));
  // An empty shape gives a scalar; a negative dim is an error.
  auto scalar = OneNode("ConstantOfShape", 9).input("S", make_tensor<int64_t>(DataType::Int64, {0}, {})).run();
  EXPECT_TRUE(scalar.at(0).tensor.dims().empty());
  EXPECT_THROW(OneNode("ConstantOfShape", 9).input("S", i64({1}, {-2})).run(), Error);
}

TEST(ConstantOfShape, HugeShapeIsRefusedBeforeAllocating) {
  try {
    OneNode("ConstantOfShape", 9).input("S", i64({3}, {1 << 20, 1 << 20, 1 << 20})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
  }
}

TEST(EyeLike, OffDiagonalAndDtype) {
  auto out = OneNode("EyeLike", 9).input("X", make_tensor<int32_t>(DataType::Int32, {3, 4}, std::vector<int32_t>(12))).attr_int("k", 1).run();
  EXPECT_EQ(values_of<int32_t>(out.at(0).tensor), (std::vector<int32_t>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  auto d = OneNode("EyeLike", 22).input("X", f32({2, 2}, {5, 5, 5, 5})).attr_int("dtype", static_cast<int64_t>(DataType::Double)).attr_int("k", -1).run();
  EXPECT_EQ(values_of<double>(d.at(0).tensor), (std::vector<double>{0, 0, 1, 0}));
  EXPECT_THROW(OneNode("EyeLike", 9).input("X", f32({2}, {1, 1})).run(), Error);
}

TEST(Range, SpecExamples_Opset11) {
  auto a = OneNode("Range", 11).input("s", f32({}, {3})).input("l", f32({}, {9})).input("d", f32({}, {3})).run();
  EXPECT_EQ(values_of<float>(a.at(0).tensor), (std::vector<float>{3, 6}));
  auto b = OneNode("Range", 11)
               .input("s", make_tensor<int32_t>(DataType::Int32, {}, {10}))
               .input("l", make_tensor<int32_t>(DataType::Int32, {}, {4}))
               .input("d", make_tensor<int32_t>(DataType::Int32, {}, {-2}))
               .run();
  EXPECT_EQ(values_of<int32_t>(b.at(0).tensor), (std::vector<int32_t>{10, 8, 6}));
  try {
    OneNode("Range", 11).input("s", f32({}, {1})).input("l", f32({}, {2})).input("d", f32({}, {0})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("delta is 0"), std::string::npos) << e.what();
  }
}

TEST(Range, Float16FromOpset27Only) {
  auto h = [](float f) { return Float16(f).bits; };
  auto in = [&](float f) { return make_tensor<uint16_t>(DataType::Float16, {}, {h(f)}); };
  auto out = OneNode("Range", 27).input("s", in(1)).input("l", in(2.5f)).input("d", in(0.5f)).run();
  EXPECT_EQ(values_of<uint16_t>(out.at(0).tensor), (std::vector<uint16_t>{h(1), h(1.5f), h(2)}));
  EXPECT_THROW(OneNode("Range", 11).input("s", in(1)).input("l", in(2)).input("d", in(1)).run(), Error);
}

}  // namespace
}  // namespace onyx
