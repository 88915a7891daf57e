#include <gtest/gtest.h>

#include <cctype>

#include "op_test_util.hpp"
#include "ops/registry.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;
using testing::expect_error;
using testing::infer;
using testing::sym_shape;


Tensor data3x2() { return make_tensor<float>(DataType::Float, {3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}); }

Tensor pads(std::vector<int64_t> p) {
  int64_t n = static_cast<int64_t>(p.size());
  return make_tensor<int64_t>(DataType::Int64, {n}, p);
}

TEST(Pad, SpecExamplesConstantReflectEdge_Opset13) {
  auto c = OneNode("Pad", 13).input("x", data3x2()).input("pads", pads({0, 2, 0, 0})).input("v", make_tensor<float>(DataType::Float, {}, {0})).run();
  EXPECT_EQ(c.at(0).tensor.dims(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values<float>(c.at(0)), (std::vector<float>{0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f}));
  auto r = OneNode("Pad", 13).input("x", data3x2()).input("pads", pads({0, 2, 0, 0})).attr_string("mode", "reflect").run();
  EXPECT_EQ(values<float>(r.at(0)), (std::vector<float>{1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}));
  auto e = OneNode("Pad", 13).input("x", data3x2()).input("pads", pads({0, 2, 0, 0})).attr_string("mode", "edge").run();
  EXPECT_EQ(values<float>(e.at(0)), (std::vector<float>{1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}));
}

TEST(Pad, WrapOnlyFromOpset19) {
  auto w = OneNode("Pad", 19).input("x", data3x2()).input("pads", pads({2, 1, 1, 1})).attr_string("mode", "wrap").run();
  EXPECT_EQ(w.at(0).tensor.dims(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(values<float>(w.at(0)),
            (std::vector<float>{3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f,
                                3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f}));
  expect_error(OneNode("Pad", 18).input("x", data3x2()).input("pads", pads({0, 0, 0, 0})).attr_string("mode", "wrap"),
               "mode 'wrap' is not supported");
}

TEST(Pad, AttributeVersionsUseValue_Opset2And1) {
  auto v2 = OneNode("Pad", 2).input("x", make_tensor<float>(DataType::Float, {2}, {1, 2})).attr_ints("pads", {1, 2}).attr_float("value", 7).run();
  EXPECT_EQ(values<float>(v2.at(0)), (std::vector<float>{7, 1, 2, 7, 7}));
  auto v1 = OneNode("Pad", 1).input("x", make_tensor<float>(DataType::Float, {2}, {1, 2})).attr_ints("paddings", {0, 1}).run();
  EXPECT_EQ(values<float>(v1.at(0)), (std::vector<float>{1, 2, 0}));
}

TEST(Pad, AxesInputNegativePadsAndStrings_Opset18) {
  auto a = OneNode("Pad", 18)
               .input("x", data3x2())
               .input("pads", pads({-1, 1}))
               .input("v", make_tensor<float>(DataType::Float, {}, {9}))
               .input("axes", make_tensor<int64_t>(DataType::Int64, {1}, {0}))
               .run();
  EXPECT_EQ(a.at(0).tensor.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values<float>(a.at(0)), (std::vector<float>{2.3f, 3.4f, 4.5f, 5.7f, 9, 9}));
  auto s = OneNode("Pad", 18).input("x", Tensor::strings("", {2}, {"a", "b"})).input("pads", pads({1, 1})).attr_string("mode", "reflect").run();
  EXPECT_EQ(s.at(0).tensor.string_values(), (std::vector<std::string>{"b", "a", "b", "a"}));
}

TEST(Pad, Int4PacksConstant_Opset21) {
  Tensor x = Tensor::allocate(DataType::Int4, {3});
  x.mutable_data<uint8_t>()[0] = pack_int4(1, -2);
  x.mutable_data<uint8_t>()[1] = pack_int4(3, 0);
  Tensor v = Tensor::allocate(DataType::Int4, {});
  v.mutable_data<uint8_t>()[0] = pack_int4(-7, 0);
  auto out = OneNode("Pad", 21).input("x", x).input("pads", pads({1, 1})).input("v", v).run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{5}));
  std::vector<int> got;
  for (uint64_t i = 0; i < 5; ++i) got.push_back(unpack_int4(y.data<uint8_t>()[i / 2], i));
  EXPECT_EQ(got, (std::vector<int>{-7, 1, -2, 3, -7}));
}

TEST(Pad, BadPadsAreClearErrors_Opset13) {
  expect_error(OneNode("Pad", 13).input("x", data3x2()).input("pads", pads({0, 0, 0})), "pads has 3 values; expected 4");
  expect_error(OneNode("Pad", 13).input("x", data3x2()).input("pads", pads({0, -3, 0, 0})), "remove more than");
  expect_error(OneNode("Pad", 13).input("x", data3x2()).input("pads", pads({0, int64_t{1} << 40, 0, 0})), "out of range");
  expect_error(OneNode("Pad", 13).input("x", make_tensor<float>(DataType::Float, {0}, {})).input("pads", pads({1, 0})).attr_string("mode", "edge"),
               "cannot pad axis 0 of size 0");
}

TEST(Pad, InferenceUsesConstantPadsAndAxesAndKeepsSymbols_Opset18) {
  Tensor p = pads({1, 2});
  Tensor axes = make_tensor<int64_t>(DataType::Int64, {1}, {-1});
  auto out = infer("Pad", 18, {Type::tensor(DataType::Float, sym_shape({"N", "3"})), Type::tensor(DataType::Int64), Type::tensor(DataType::Float),
                               Type::tensor(DataType::Int64)},
                   {nullptr, &p, nullptr, &axes}, 1);
  EXPECT_EQ(out[0].shape.to_string(), "[N,6]");
  auto unknown = infer("Pad", 13, {Type::tensor(DataType::Float, sym_shape({"N", "3"})), Type::tensor(DataType::Int64)}, {}, 1);
  EXPECT_EQ(unknown[0].shape.to_string(), "[?,?]");
}

}  // namespace
}  // namespace onyx
