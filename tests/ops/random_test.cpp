#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"
#include "ops/registry.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;

using testing::make_tensor;
using testing::OneNode;
using testing::values_of;
using D = DataType;

TEST(RandomUniform, ShapeRangeAndSeedReproducibility_Opset22) {
  auto run = [](float seed) {
    return OneNode("RandomUniform", 22)
        .attr_ints("shape", {3, 100})
        .attr_float("low", -2)
        .attr_float("high", 3)
        .attr_float("seed", seed)
        .run()
        .at(0)
        .tensor;
  };
  Tensor a = run(7), b = run(7), c = run(8);
  ASSERT_EQ(a.dims(), (std::vector<int64_t>{3, 100}));
  EXPECT_EQ(a.dtype(), D::Float);
  auto va = values_of<float>(a);
  for (float v : va) EXPECT_TRUE(v >= -2 && v < 3) << v;
  EXPECT_EQ(va, values_of<float>(b));
  EXPECT_NE(va, values_of<float>(c));
}

TEST(RandomNormal, MeanAndScaleAndDtype_Opset1) {
  Tensor t = OneNode("RandomNormal", 1)
                 .attr_ints("shape", {20000})
                 .attr_float("mean", 5)
                 .attr_float("scale", 2)
                 .attr_int("dtype", 11)
                 .attr_float("seed", 1)
                 .run()
                 .at(0)
                 .tensor;
  EXPECT_EQ(t.dtype(), D::Double);
  double sum = 0, sq = 0;
  for (double v : values_of<double>(t)) sum += v, sq += v * v;
  const double mean = sum / 20000, var = sq / 20000 - mean * mean;
  EXPECT_NEAR(mean, 5, 0.1);
  EXPECT_NEAR(std::sqrt(var), 2, 0.1);
}

TEST(RandomNormal, Bfloat16OnlyFromOpset22) {
  auto t = OneNode("RandomNormal", 22).attr_ints("shape", {2}).attr_int("dtype", 16).run();
  EXPECT_EQ(t.at(0).tensor.dtype(), D::BFloat16);
  std::string e = error_of([] { OneNode("RandomNormal", 21).attr_ints("shape", {2}).attr_int("dtype", 16).run(); });
  EXPECT_NE(e.find("dtype 16 is not an allowed type"), std::string::npos) << e;
  e = error_of([] { OneNode("RandomNormal", 22).attr_ints("shape", {-1}).run(); });
  EXPECT_NE(e.find("negative dim"), std::string::npos) << e;
}

TEST(RandomUniformLike, CopiesShapeAndTakesTypeFromInputOrDtype_Opset1) {
  auto same = OneNode("RandomUniformLike", 1).input("x", make_tensor<double>(D::Double, {2, 3}, {0, 0, 0, 0, 0, 0})).run();
  EXPECT_EQ(same.at(0).tensor.dtype(), D::Double);
  EXPECT_EQ(same.at(0).tensor.dims(), (std::vector<int64_t>{2, 3}));
  auto typed = OneNode("RandomNormalLike", 1).input("x", make_tensor<int32_t>(D::Int32, {4}, {0, 0, 0, 0})).attr_int("dtype", 1).run();
  EXPECT_EQ(typed.at(0).tensor.dtype(), D::Float);
  std::string e = error_of([] { OneNode("RandomNormalLike", 1).input("x", make_tensor<int32_t>(D::Int32, {1}, {0})).run(); });
  EXPECT_NE(e.find("without dtype, the input's type"), std::string::npos) << e;
}

TEST(Multinomial, SamplesOnlyPossibleClasses_Opset7) {
  // Class 1 has all the probability in row 0; classes 0 and 2 share row 1.
  const float ninf = -INFINITY;
  auto out = OneNode("Multinomial", 7)
                 .input("x", make_tensor<float>(D::Float, {2, 3}, {ninf, 0, ninf, 0, ninf, 0}))
                 .attr_int("sample_size", 50)
                 .attr_int("dtype", 7)
                 .attr_float("seed", 3)
                 .run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 50}));
  auto v = values_of<int64_t>(y);
  int zeros = 0, twos = 0;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(v[i], 1);
  for (int i = 50; i < 100; ++i) {
    EXPECT_TRUE(v[i] == 0 || v[i] == 2);
    zeros += v[i] == 0, twos += v[i] == 2;
  }
  EXPECT_GT(zeros, 5);
  EXPECT_GT(twos, 5);
  std::string e = error_of([] { OneNode("Multinomial", 7).input("x", make_tensor<float>(D::Float, {1, 2}, {NAN, 0})).run(); });
  EXPECT_NE(e.find("NaN"), std::string::npos) << e;
}

TEST(Bernoulli, ZeroAndOneProbabilitiesAreCertainAndDtypeApplies_Opset15) {
  auto out = OneNode("Bernoulli", 15)
                 .input("p", make_tensor<float>(D::Float, {6}, {0, 1, 0, 1, 0.5f, 0.5f}))
                 .attr_int("dtype", 9)
                 .attr_float("seed", 0)
                 .run();
  const Tensor& y = out.at(0).tensor;
  EXPECT_EQ(y.dtype(), D::Bool);
  auto v = values_of<bool>(y);
  EXPECT_EQ(std::vector<bool>(v.begin(), v.begin() + 4), (std::vector<bool>{false, true, false, true}));
  auto same = OneNode("Bernoulli", 22).input("p", make_tensor<double>(D::Double, {2}, {1, 0})).run();
  EXPECT_EQ(same.at(0).tensor.dtype(), D::Double);
  EXPECT_EQ(values_of<double>(same.at(0).tensor), (std::vector<double>{1, 0}));
}

// Determinism is a property of the op's definition, which folding at creation and the optimizer read.
TEST(Registry, RandomOpsAndDropoutAreNotDeterministic) {
  const ops::Registry& r = ops::builtin_registry();
  for (const char* op : {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                         "Bernoulli", "Dropout"}) {
    EXPECT_FALSE(r.deterministic("", op)) << op;
    EXPECT_FALSE(r.deterministic("ai.onnx", op)) << op;
    for (int v : r.versions("", op)) EXPECT_FALSE(r.find("", op, v)->deterministic) << op << "-" << v;
  }
  for (const char* op : {"Add", "Conv", "Shape", "Constant"}) EXPECT_TRUE(r.deterministic("", op)) << op;
  ops::Registry empty;
  EXPECT_THROW(empty.set_nondeterministic("", "RandomNormal"), Error);
}

}  // namespace
}  // namespace onyx
