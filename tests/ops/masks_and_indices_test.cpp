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


Tensor bools(std::vector<uint8_t> v) { return make_tensor<uint8_t>(DataType::Bool, {static_cast<int64_t>(v.size())}, v); }

TEST(OneHot, AxisAndNegativeIndices_Opset11) {
  auto out = OneNode("OneHot", 11)
                 .input("indices", make_tensor<int64_t>(DataType::Int64, {3}, {0, -1, 5}))
                 .input("depth", make_tensor<float>(DataType::Float, {}, {3.0f}))
                 .input("values", make_tensor<int32_t>(DataType::Int32, {2}, {0, 1}))
                 .attr_int("axis", 0)
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{3, 3}));
  // Column i is the one-hot of indices[i]; 5 is out of range (all off), -1 is the last class.
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{1, 0, 0, 0, 0, 0, 0, 1, 0}));
}

TEST(OneHot, Opset9TreatsNegativeIndicesAsOff) {
  auto out = OneNode("OneHot", 9)
                 .input("indices", make_tensor<float>(DataType::Float, {2}, {1.7f, -1}))
                 .input("depth", make_tensor<int64_t>(DataType::Int64, {1}, {2}))
                 .input("values", make_tensor<float>(DataType::Float, {2}, {2, 5}))
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{2, 5, 2, 2}));
  expect_error(OneNode("OneHot", 11)
                   .input("indices", make_tensor<int64_t>(DataType::Int64, {1}, {0}))
                   .input("depth", make_tensor<int64_t>(DataType::Int64, {1}, {int64_t{1} << 40}))
                   .input("values", make_tensor<float>(DataType::Float, {2}, {0, 1})),
               "too large");
}

TEST(NonZero, SpecExampleAndStrings_Opset13) {
  auto out = OneNode("NonZero", 13).input("x", make_tensor<uint8_t>(DataType::Bool, {2, 2}, {1, 0, 1, 1})).run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<int64_t>(out.at(0)), (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));
  auto s = OneNode("NonZero", 9).input("x", Tensor::strings("", {3}, {"", "x", "y"})).run();
  EXPECT_EQ(values<int64_t>(s.at(0)), (std::vector<int64_t>{1, 2}));
}

TEST(Compress, AxisFlattenedAndShortCondition_Opset11) {
  auto a = OneNode("Compress", 11)
               .input("x", make_tensor<float>(DataType::Float, {3, 2}, {1, 2, 3, 4, 5, 6}))
               .input("c", bools({0, 1, 1}))
               .attr_int("axis", -2)
               .run();
  EXPECT_EQ(values<float>(a.at(0)), (std::vector<float>{3, 4, 5, 6}));
  auto f = OneNode("Compress", 9).input("x", make_tensor<float>(DataType::Float, {3, 2}, {1, 2, 3, 4, 5, 6})).input("c", bools({0, 1, 0, 0, 1})).run();
  EXPECT_EQ(values<float>(f.at(0)), (std::vector<float>{2, 5}));
  expect_error(OneNode("Compress", 11).input("x", make_tensor<float>(DataType::Float, {2}, {1, 2})).input("c", bools({0, 0, 1})),
               "condition selects index 2 beyond the 2 available");
}

TEST(Trilu, UpperLowerWithK_Opset14) {
  Tensor x = make_tensor<int32_t>(DataType::Int32, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto up = OneNode("Trilu", 14).input("x", x).input("k", make_tensor<int64_t>(DataType::Int64, {}, {1})).run();
  EXPECT_EQ(values<int32_t>(up.at(0)), (std::vector<int32_t>{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  auto low = OneNode("Trilu", 14).input("x", x).attr_int("upper", 0).run();
  EXPECT_EQ(values<int32_t>(low.at(0)), (std::vector<int32_t>{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  auto big = OneNode("Trilu", 14).input("x", x).input("k", make_tensor<int64_t>(DataType::Int64, {}, {INT64_MIN})).run();
  EXPECT_EQ(values<int32_t>(big.at(0)), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  expect_error(OneNode("Trilu", 14).input("x", make_tensor<int32_t>(DataType::Int32, {3}, {1, 2, 3})), "rank >= 2");
}

TEST(ReverseSequence, TimeMajorAndBatchMajor_Opset10) {
  Tensor x = make_tensor<float>(DataType::Float, {4, 4}, {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15});
  auto t = OneNode("ReverseSequence", 10).input("x", x).input("l", make_tensor<int64_t>(DataType::Int64, {4}, {4, 3, 2, 1})).run();
  EXPECT_EQ(values<float>(t.at(0)), (std::vector<float>{3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15}));
  auto b = OneNode("ReverseSequence", 10)
               .input("x", make_tensor<float>(DataType::Float, {2, 3}, {1, 2, 3, 4, 5, 6}))
               .input("l", make_tensor<int64_t>(DataType::Int64, {2}, {3, 2}))
               .attr_int("batch_axis", 0)
               .attr_int("time_axis", 1)
               .run();
  EXPECT_EQ(values<float>(b.at(0)), (std::vector<float>{3, 2, 1, 5, 4, 6}));
  expect_error(OneNode("ReverseSequence", 10).input("x", x).input("l", make_tensor<int64_t>(DataType::Int64, {4}, {5, 1, 1, 1})),
               "sequence length 5 is out of range");
}

TEST(OneHot, InferenceInsertsDepth_Opset11) {
  Tensor depth = make_tensor<int64_t>(DataType::Int64, {}, {10});
  auto out = infer("OneHot", 11, {Type::tensor(DataType::Int64, sym_shape({"N", "2"})), Type::tensor(DataType::Int64), Type::tensor(DataType::Float)},
                   {nullptr, &depth}, 1, {{"axis", 1}});
  EXPECT_EQ(out[0].shape.to_string(), "[N,10,2]");
  EXPECT_EQ(out[0].elem, DataType::Float);
  auto nz = infer("NonZero", 13, {Type::tensor(DataType::Float, sym_shape({"N", "2", "3"}))}, {}, 1);
  EXPECT_EQ(nz[0].shape.to_string(), "[3,?]");
}

}  // namespace
}  // namespace onyx
