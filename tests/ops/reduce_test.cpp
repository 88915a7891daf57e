#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/scalar.hpp"
#include "op_test_util.hpp"
#include "ops/registry.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::expect_error;
using testing::values;

Tensor axes(std::vector<int64_t> a) {
  int64_t n = static_cast<int64_t>(a.size());
  return make_tensor<int64_t>(DataType::Int64, {n}, a);
}

std::vector<float> iota_f(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i + 1);
  return v;
}


TEST(ReduceSum, SpecExampleKeepdimsWithAxesInput_Opset13) {
  auto out = OneNode("ReduceSum", 13)
                 .input("data", make_tensor<float>(DataType::Float, {3, 2, 2}, iota_f(12)))
                 .input("axes", axes({1}))
                 .attr_int("keepdims", 1)
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{4, 6, 12, 14, 20, 22}));
}

TEST(ReduceSum, AxesAttributeAndNegativeAxis_Opset11) {
  auto out = OneNode("ReduceSum", 11)
                 .input("data", make_tensor<float>(DataType::Float, {3, 2, 2}, iota_f(12)))
                 .attr_ints("axes", {-2})
                 .attr_int("keepdims", 0)
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{4, 6, 12, 14, 20, 22}));
}

TEST(ReduceSum, EmptyAxesReduceAllOrNothing_Opset13) {
  auto all = OneNode("ReduceSum", 13)
                 .input("data", make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4}))
                 .input("axes", axes({}))
                 .attr_int("keepdims", 0)
                 .run();
  EXPECT_TRUE(all.at(0).tensor.dims().empty());
  EXPECT_EQ(values<float>(all[0]), (std::vector<float>{10}));
  auto noop = OneNode("ReduceSum", 13)
                  .input("data", make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4}))
                  .input("axes", axes({}))
                  .attr_int("noop_with_empty_axes", 1)
                  .run();
  EXPECT_EQ(noop.at(0).tensor.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<float>(noop[0]), (std::vector<float>{1, 2, 3, 4}));
}

TEST(ReduceSum, IntegersWrapAround_Opset13) {
  const int32_t hi = std::numeric_limits<int32_t>::max();
  auto out = OneNode("ReduceSum", 13).input("data", make_tensor<int32_t>(DataType::Int32, {2}, {hi, 1})).run();
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{std::numeric_limits<int32_t>::min()}));
}

TEST(ReduceSum, Float16AccumulatesInDouble_Opset13) {
  // 4096 ones: a float16 accumulator would stop at 2048.
  std::vector<Float16> ones(4096, Float16(1.0f));
  auto out = OneNode("ReduceSum", 13).input("data", make_tensor<Float16>(DataType::Float16, {4096}, ones)).run();
  EXPECT_EQ(static_cast<float>(out.at(0).tensor.data<Float16>()[0]), 4096.0f);
}

TEST(ReduceSum, EmptySetAndNonReducedZeroAxis_Opset13) {
  auto out = OneNode("ReduceSum", 13)
                 .input("data", make_tensor<float>(DataType::Float, {2, 0, 4}, {}))
                 .input("axes", axes({1}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(values<float>(out[0]), std::vector<float>(8, 0.0f));
  auto zero = OneNode("ReduceSum", 13)
                  .input("data", make_tensor<float>(DataType::Float, {2, 0, 4}, {}))
                  .input("axes", axes({2}))
                  .run();
  EXPECT_EQ(zero.at(0).tensor.dims(), (std::vector<int64_t>{2, 0, 1}));
}

TEST(ReduceMean, SpecExample_Opset18) {
  auto out = OneNode("ReduceMean", 18)
                 .input("data", make_tensor<float>(DataType::Float, {3, 2, 2}, {5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2}))
                 .input("axes", axes({1}))
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{12.5f, 1.5f, 35, 1.5f, 57.5f, 1.5f}));
}

TEST(ReduceMean, AxesAttributeAtOpset13AndIntegerTruncation) {
  auto out = OneNode("ReduceMean", 13)
                 .input("data", make_tensor<int64_t>(DataType::Int64, {2, 2}, {1, 2, -3, -4}))
                 .attr_ints("axes", {1})
                 .attr_int("keepdims", 0)
                 .run();
  EXPECT_EQ(values<int64_t>(out.at(0)), (std::vector<int64_t>{1, -3}));
}

TEST(ReduceMax, BoolAtOpset20AndRefusedAt18) {
  auto out = OneNode("ReduceMax", 20)
                 .input("data", make_tensor<uint8_t>(DataType::Bool, {2, 2}, {1, 0, 0, 0}))
                 .input("axes", axes({1}))
                 .attr_int("keepdims", 0)
                 .run();
  EXPECT_EQ(values<bool>(out.at(0)), (std::vector<bool>{true, false}));
  auto mn = OneNode("ReduceMin", 20)
                .input("data", make_tensor<uint8_t>(DataType::Bool, {2, 2}, {1, 0, 1, 1}))
                .input("axes", axes({1}))
                .attr_int("keepdims", 0)
                .run();
  EXPECT_EQ(values<bool>(mn.at(0)), (std::vector<bool>{false, true}));
  expect_error(OneNode("ReduceMax", 18).input("data", make_tensor<uint8_t>(DataType::Bool, {1}, {1})),
               "has element type bool");
}

TEST(ReduceMax, Int8FromOpset12Only) {
  auto out = OneNode("ReduceMax", 12)
                 .input("data", make_tensor<int8_t>(DataType::Int8, {3}, {-5, 7, 2}))
                 .attr_int("keepdims", 0)
                 .run();
  EXPECT_EQ(values<int8_t>(out.at(0)), (std::vector<int8_t>{7}));
  expect_error(OneNode("ReduceMax", 11).input("data", make_tensor<int8_t>(DataType::Int8, {1}, {1})),
               "has element type int8");
}

TEST(ReduceMax, PropagatesNaN_Opset18) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = OneNode("ReduceMax", 18).input("data", make_tensor<float>(DataType::Float, {3}, {1, nan, 3})).run();
  EXPECT_TRUE(std::isnan(out.at(0).tensor.data<float>()[0]));
}

TEST(Reduce, EmptySetIdentities_Opset18) {
  const float inf = std::numeric_limits<float>::infinity();
  auto run = [](const char* op) {
    auto out = OneNode(op, 18)
                   .input("data", make_tensor<float>(DataType::Float, {2, 0, 4}, {}))
                   .input("axes", axes({1}))
                   .attr_int("keepdims", 1)
                   .run();
    EXPECT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{2, 1, 4})) << op;
    return out.at(0).tensor.data<float>()[0];
  };
  EXPECT_EQ(run("ReduceMin"), inf);
  EXPECT_EQ(run("ReduceMax"), -inf);
  EXPECT_EQ(run("ReduceProd"), 1.0f);
  EXPECT_EQ(run("ReduceLogSumExp"), -inf);
  EXPECT_EQ(run("ReduceLogSum"), -inf);
  EXPECT_EQ(run("ReduceL1"), 0.0f);
  EXPECT_EQ(run("ReduceL2"), 0.0f);
  EXPECT_EQ(run("ReduceSumSquare"), 0.0f);
  // Integers: ReduceMin of nothing is the type's maximum.
  auto imin = OneNode("ReduceMin", 18)
                  .input("data", make_tensor<int32_t>(DataType::Int32, {0, 2}, {}))
                  .input("axes", axes({0}))
                  .attr_int("keepdims", 0)
                  .run();
  EXPECT_EQ(values<int32_t>(imin.at(0)), (std::vector<int32_t>(2, std::numeric_limits<int32_t>::max())));
}

TEST(Reduce, OtherOpsSpecValues_Opset18) {
  Tensor data = make_tensor<float>(DataType::Float, {2, 2}, {1, -2, 3, 4});
  auto one = [&](const char* op) {
    auto out = OneNode(op, 18).input("data", data).input("axes", axes({1})).attr_int("keepdims", 0).run();
    return values<float>(out.at(0));
  };
  EXPECT_EQ(one("ReduceProd"), (std::vector<float>{-2, 12}));
  EXPECT_EQ(one("ReduceL1"), (std::vector<float>{3, 7}));
  EXPECT_EQ(one("ReduceSumSquare"), (std::vector<float>{5, 25}));
  EXPECT_FLOAT_EQ(one("ReduceL2")[1], 5.0f);
  EXPECT_FLOAT_EQ(one("ReduceLogSum")[1], std::log(7.0f));
  EXPECT_FLOAT_EQ(one("ReduceLogSumExp")[1], std::log(std::exp(3.0f) + std::exp(4.0f)));
  // LogSumExp stays finite where exp overflows.
  auto big = OneNode("ReduceLogSumExp", 18).input("data", make_tensor<float>(DataType::Float, {2}, {1000, 1000})).run();
  EXPECT_FLOAT_EQ(big.at(0).tensor.data<float>()[0], 1000.0f + std::log(2.0f));
}

TEST(ReduceSumSquare, NoopWithEmptyAxesSquaresEachElement_Opset18) {
  auto out = OneNode("ReduceSumSquare", 18)
                 .input("data", make_tensor<float>(DataType::Float, {3}, {1, -2, 3}))
                 .input("axes", axes({}))
                 .attr_int("noop_with_empty_axes", 1)
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{1, 4, 9}));
}

TEST(ReduceProd, AttributeAxesAtOpset13AndIntegerWrap) {
  auto out = OneNode("ReduceProd", 13)
                 .input("data", make_tensor<int32_t>(DataType::Int32, {2}, {65536, 65536}))
                 .attr_ints("axes", {0})
                 .run();
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{0}));
}

TEST(Reduce, BadAxesAreClearErrors_Opset18) {
  Tensor data = make_tensor<float>(DataType::Float, {2, 2}, {1, 2, 3, 4});
  expect_error(OneNode("ReduceL2", 18).input("data", data).input("axes", axes({2})), "out of range for rank 2");
  expect_error(OneNode("ReduceL2", 18).input("data", data).input("axes", axes({1, -1})), "more than once");
  expect_error(OneNode("ReduceSum", 11).input("data", data).attr_ints("axes", {-3}), "(ReduceSum)");
}

// Inference with a constant axes input and symbolic dims, through the registered def.
TEST(Reduce, InferenceWithConstantAxesKeepsSymbolicDims) {
  Node n;
  n.op_type = "ReduceMean";
  Attribute keep;
  keep.name = "keepdims";
  keep.type = AttributeType::Int;
  keep.i = 0;
  n.attributes.push_back(std::move(keep));
  const ops::OpDef& def = ops::builtin_registry().resolve(n, 18);
  Shape s;
  s.rank_known = true;
  s.dims = {Dim{{}, "N", {}}, Dim{3, {}, {}}, Dim{{}, "L", {}}};
  Type in = Type::tensor(DataType::Float, s);
  Tensor ax = make_tensor<int64_t>(DataType::Int64, {1}, {1});
  Type at = Type::tensor(DataType::Int64, Shape{true, {Dim{1, {}, {}}}});
  ops::InferContext ctx{n, 18, ops::AttributeView(n), {&in, &at}, {nullptr, &ax}, {Type{}}, {std::nullopt}, {}, {}};
  def.infer(ctx);
  EXPECT_EQ(ctx.output_types[0].to_string_with_shape(), "float[N,L]");
  // Unknown axes with keepdims=0: the rank follows from the axes' length.
  ops::InferContext c2{n, 18, ops::AttributeView(n), {&in, &at}, {nullptr, nullptr}, {Type{}}, {std::nullopt}, {}, {}};
  def.infer(c2);
  EXPECT_EQ(c2.output_types[0].shape.dims.size(), 2u);
}

}  // namespace
}  // namespace onyx
