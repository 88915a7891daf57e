#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;

Tensor floats(std::vector<int64_t> dims, std::vector<float> v) { return make_tensor<float>(DataType::Float, std::move(dims), v); }

TEST(Activation, ReluFloatAndIntegerFromV14) {
  auto f = OneNode("Relu", 13).input("x", floats({3}, {-1, 0, 2})).run();
  EXPECT_EQ(values<float>(f.at(0)), (std::vector<float>{0, 0, 2}));
  auto i = OneNode("Relu", 14).input("x", make_tensor<int32_t>(DataType::Int32, {3}, {-1, 0, 2})).run();
  EXPECT_EQ(values<int32_t>(i.at(0)), (std::vector<int32_t>{0, 0, 2}));
  // Relu-13 has no integer types.
  EXPECT_THROW(OneNode("Relu", 13).input("x", make_tensor<int32_t>(DataType::Int32, {1}, {1})).run(), Error);
}

TEST(Activation, LeakyReluEluSelu_SpecExamples) {
  auto l = values<float>(OneNode("LeakyRelu", 16).input("x", floats({3}, {-1, 0, 1})).attr_float("alpha", 0.1f).run().at(0));
  EXPECT_FLOAT_EQ(l[0], -0.1f);
  EXPECT_FLOAT_EQ(l[2], 1.0f);
  auto e = values<float>(OneNode("Elu", 6).input("x", floats({3}, {-1, 0, 1})).attr_float("alpha", 2.0f).run().at(0));
  EXPECT_FLOAT_EQ(e[0], 2.0f * (std::exp(-1.0f) - 1));  // -1.2642411
  auto s = values<float>(
      OneNode("Selu", 6).input("x", floats({3}, {-1, 0, 1})).attr_float("alpha", 2.0f).attr_float("gamma", 3.0f).run().at(0));
  EXPECT_NEAR(s[0], -3.79272318, 1e-6);
  EXPECT_FLOAT_EQ(s[2], 3.0f);
  // Selu default constants.
  auto sd = values<float>(OneNode("Selu", 22).input("x", floats({1}, {-1})).run().at(0));
  EXPECT_NEAR(sd[0], 1.0507009873554805 * 1.6732632423543772 * (std::exp(-1.0) - 1), 1e-6);
}

TEST(Activation, V1AttributesAndConsumedInputs_Opset1) {
  auto out = OneNode("LeakyRelu", 1).input("x", floats({2}, {-2, 3})).attr_ints("consumed_inputs", {0}).run();
  auto v = values<float>(out.at(0));
  EXPECT_FLOAT_EQ(v[0], -0.02f);
  EXPECT_FLOAT_EQ(v[1], 3.0f);
}

TEST(Activation, SigmoidFamily) {
  auto s = values<float>(OneNode("Sigmoid", 13).input("x", floats({3}, {-1, 0, 1})).run().at(0));
  EXPECT_FLOAT_EQ(s[0], 0.26894142f);
  EXPECT_FLOAT_EQ(s[1], 0.5f);
  auto hs = values<float>(OneNode("HardSigmoid", 6).input("x", floats({3}, {-1, 0, 1})).attr_float("alpha", 0.5f).attr_float("beta", 0.6f).run().at(0));
  EXPECT_FLOAT_EQ(hs[0], 0.1f);
  EXPECT_FLOAT_EQ(hs[2], 1.0f);
  auto hw = values<float>(OneNode("HardSwish", 14).input("x", floats({3}, {-4, 1, 4})).run().at(0));
  EXPECT_FLOAT_EQ(hw[0], 0);
  EXPECT_FLOAT_EQ(hw[1], 1.0f * (1.0f / 6 + 0.5f));
  EXPECT_FLOAT_EQ(hw[2], 4);
  auto sw = values<float>(OneNode("Swish", 24).input("x", floats({1}, {2})).attr_float("alpha", 0.5f).run().at(0));
  EXPECT_FLOAT_EQ(sw[0], 2.0f / (1.0f + std::exp(-1.0f)));
}

TEST(Activation, SoftplusSoftsignMishCeluThresholded) {
  auto sp = values<float>(OneNode("Softplus", 1).input("x", floats({3}, {-1, 0, 100})).run().at(0));
  EXPECT_FLOAT_EQ(sp[0], std::log(std::exp(-1.0f) + 1));
  EXPECT_FLOAT_EQ(sp[2], 100.0f);  // no overflow
  auto ss = values<float>(OneNode("Softsign", 22).input("x", floats({2}, {-1, 3})).run().at(0));
  EXPECT_EQ(ss, (std::vector<float>{-0.5f, 0.75f}));
  auto m = values<float>(OneNode("Mish", 18).input("x", floats({1}, {1})).run().at(0));
  EXPECT_NEAR(m[0], 0.86509836, 1e-6);
  auto c = values<float>(OneNode("Celu", 12).input("x", floats({2}, {-1, 2})).attr_float("alpha", 2.0f).run().at(0));
  EXPECT_NEAR(c[0], 2.0 * (std::exp(-0.5) - 1), 1e-6);
  EXPECT_FLOAT_EQ(c[1], 2);
  auto t = values<float>(OneNode("ThresholdedRelu", 10).input("x", floats({3}, {1, 2, 3})).attr_float("alpha", 2.0f).run().at(0));
  EXPECT_EQ(t, (std::vector<float>{0, 0, 3}));
  // Celu-12 is float only; Celu-28 takes double.
  EXPECT_THROW(OneNode("Celu", 12).input("x", make_tensor<double>(DataType::Double, {1}, {1})).run(), Error);
  auto cd = values<double>(OneNode("Celu", 28).input("x", make_tensor<double>(DataType::Double, {1}, {3})).run().at(0));
  EXPECT_EQ(cd[0], 3);
}

TEST(Activation, GeluBothForms_Opset20) {
  auto n = values<float>(OneNode("Gelu", 20).input("x", floats({1}, {1})).run().at(0));
  EXPECT_NEAR(n[0], 0.8413447, 1e-6);
  auto t = values<float>(OneNode("Gelu", 20).input("x", floats({1}, {1})).attr_string("approximate", "tanh").run().at(0));
  EXPECT_NEAR(t[0], 0.8411920, 1e-6);
  try {
    OneNode("Gelu", 20).input("x", floats({1}, {1})).attr_string("approximate", "cubic").run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("approximate must be"), std::string::npos) << e.what();
  }
}

TEST(Activation, ShrinkHardAndSoft_Opset9) {
  auto h = values<float>(OneNode("Shrink", 9).input("x", floats({5}, {-2, -1, 0, 1, 2})).attr_float("lambd", 1.5f).run().at(0));
  EXPECT_EQ(h, (std::vector<float>{-2, 0, 0, 0, 2}));
  auto s = values<float>(
      OneNode("Shrink", 9).input("x", floats({5}, {-2, -1, 0, 1, 2})).attr_float("lambd", 1.5f).attr_float("bias", 1.5f).run().at(0));
  EXPECT_EQ(s, (std::vector<float>{-0.5f, 0, 0, 0, 0.5f}));
  auto i = values<int32_t>(OneNode("Shrink", 9).input("x", make_tensor<int32_t>(DataType::Int32, {3}, {-3, 0, 3})).attr_float("bias", 1).run().at(0));
  EXPECT_EQ(i, (std::vector<int32_t>{-2, 0, 2}));
}

TEST(Activation, PReluBroadcastsSlopeUnidirectionally_Opset16) {
  auto out = OneNode("PRelu", 16)
                 .input("x", floats({2, 3}, {-1, -2, 3, -4, 5, -6}))
                 .input("slope", floats({3}, {0.5f, 1, 2}))
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{-0.5f, -2, 3, -2, 5, -12}));
  auto i = OneNode("PRelu", 9)
               .input("x", make_tensor<int64_t>(DataType::Int64, {2}, {-3, 3}))
               .input("slope", make_tensor<int64_t>(DataType::Int64, {1}, {2}))
               .run();
  EXPECT_EQ(values<int64_t>(i.at(0)), (std::vector<int64_t>{-6, 3}));
  try {  // slope must not make the output larger than X
    OneNode("PRelu", 16).input("x", floats({3}, {1, 2, 3})).input("slope", floats({2, 3}, {1, 1, 1, 1, 1, 1})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not broadcast to X"), std::string::npos) << e.what();
  }
}

TEST(Activation, PReluBeforeV7AppliesA1DSlopePerChannel_Opset6) {
  auto out = OneNode("PRelu", 6)
                 .input("x", floats({1, 2, 2}, {-1, -1, -1, 4}))
                 .input("slope", floats({2}, {0.5f, 3}))
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{-0.5f, -0.5f, -3, 4}));
}

TEST(Activation, ClipAttributesBeforeV11) {
  auto v1 = values<float>(OneNode("Clip", 1).input("x", floats({3}, {-5, 0, 5})).attr_float("max", 1).run().at(0));
  EXPECT_EQ(v1, (std::vector<float>{-5, 0, 1}));  // no min: unbounded below
  auto v6 = values<float>(OneNode("Clip", 6).input("x", floats({3}, {-5, 0, 5})).attr_float("min", -1).attr_float("max", 1).run().at(0));
  EXPECT_EQ(v6, (std::vector<float>{-1, 0, 1}));
}

TEST(Activation, ClipInputsFromV11_MinGreaterThanMaxGivesMax) {
  auto out = OneNode("Clip", 13)
                 .input("x", floats({3}, {-2, 0, 2}))
                 .input("min", floats({}, {1}))
                 .input("max", floats({}, {-1}))
                 .run();
  EXPECT_EQ(values<float>(out.at(0)), (std::vector<float>{-1, -1, -1}));
  auto only_max = OneNode("Clip", 12)
                      .input("x", make_tensor<int8_t>(DataType::Int8, {3}, {-100, 0, 100}))
                      .omitted_input()
                      .input("max", make_tensor<int8_t>(DataType::Int8, {}, {50}))
                      .run();
  EXPECT_EQ(values<int8_t>(only_max.at(0)), (std::vector<int8_t>{-100, 0, 50}));
  const float nan = std::nanf("");
  auto n = values<float>(OneNode("Clip", 11).input("x", floats({1}, {nan})).input("min", floats({}, {0})).run().at(0));
  EXPECT_TRUE(std::isnan(n[0]));
  try {
    OneNode("Clip", 13).input("x", floats({2}, {1, 2})).input("min", floats({2}, {0, 0})).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("min must be a scalar"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx

namespace onyx {
namespace ONYX_TEST_FILE {

TEST(Tanh, SpecExample_Opset13) {
  auto out = testing::OneNode("Tanh", 13)
                 .input("X", testing::make_tensor<float>(DataType::Float, {3}, {-1, 0, 1}))
                 .run();
  const float* y = out.at(0).tensor.data<float>();
  EXPECT_NEAR(y[0], -0.76159416f, 1e-6);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_NEAR(y[2], 0.76159416f, 1e-6);
}

}  // namespace
}  // namespace onyx
