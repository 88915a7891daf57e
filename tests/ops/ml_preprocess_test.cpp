#include <gtest/gtest.h>

#include <cmath>

#include "ml_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(ArrayFeatureExtractor, SpecExampleSelectsColumns) {
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  auto out = MlNode("ArrayFeatureExtractor", 1).input("x", f32({3, 4}, x)).input("y", i64({2}, {0, 1})).run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 1, 4, 5, 8, 9}));
}

TEST(ArrayFeatureExtractor, OneDimensionalInputGivesOneRowAndStrings) {
  auto out = MlNode("ArrayFeatureExtractor", 1).input("x", strs({3}, {"a", "b", "c"})).input("y", i64({2}, {2, 0})).run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(out[0].tensor.string_values(), (std::vector<std::string>{"c", "a"}));
}

TEST(ArrayFeatureExtractor, IndexOutOfRangeIsAnError) {
  std::string e = error_of(MlNode("ArrayFeatureExtractor", 1).input("x", f32({2}, {1, 2})).input("y", i64({1}, {2})));
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
}

TEST(Binarizer, ThresholdAndNaN) {
  auto out = MlNode("Binarizer", 1)
                 .input("X", f32({4}, {0.5f, 1.0f, 1.5f, NAN}))
                 .attr_float("threshold", 1.0f)
                 .run();
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 0, 1, 0}));
  auto ints = MlNode("Binarizer", 1).input("X", i64({3}, {-1, 0, 5})).run();
  EXPECT_EQ(vals<int64_t>(ints[0]), (std::vector<int64_t>{0, 0, 1}));
}

TEST(Scaler, OffsetThenScalePerFeature) {
  auto out = MlNode("Scaler", 1)
                 .input("X", f64({2, 2}, {1, 2, 3, 4}))
                 .attr_floats("offset", {1, 2})
                 .attr_floats("scale", {2})
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), DataType::Float);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 0, 4, 4}));
  std::string e = error_of(MlNode("Scaler", 1).input("X", f32({1, 3}, {1, 2, 3})).attr_floats("offset", {1, 2}));
  EXPECT_NE(e.find("offset has 2 values"), std::string::npos) << e;
}

TEST(Normalizer, Modes) {
  auto l1 = MlNode("Normalizer", 1).input("X", f32({2, 2}, {1, 3, 0, 0})).attr_string("norm", "L1").run();
  EXPECT_EQ(vals<float>(l1[0]), (std::vector<float>{0.25f, 0.75f, 0, 0}));
  auto l2 = MlNode("Normalizer", 1).input("X", i32({2}, {3, -4})).attr_string("norm", "L2").run();
  EXPECT_EQ(vals<float>(l2[0]), (std::vector<float>{0.6f, -0.8f}));
  auto mx = MlNode("Normalizer", 1).input("X", f32({3}, {1, -4, 2})).attr_string("norm", "MAX").run();
  EXPECT_EQ(vals<float>(mx[0]), (std::vector<float>{0.25f, -1.0f, 0.5f}));
  std::string e = error_of(MlNode("Normalizer", 1).input("X", f32({2}, {1, 2})).attr_string("norm", "L3"));
  EXPECT_NE(e.find("norm 'L3'"), std::string::npos) << e;
}

TEST(Imputer, ReplacesNaNPerColumnAndIntegers) {
  auto out = MlNode("Imputer", 1)
                 .input("X", f32({2, 2}, {NAN, 1, 2, NAN}))
                 .attr_floats("imputed_value_floats", {10, 20})
                 .attr_float("replaced_value_float", NAN)
                 .run();
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{10, 1, 2, 20}));
  auto ints = MlNode("Imputer", 1)
                  .input("X", i64({3}, {-1, 5, -1}))
                  .attr_ints("imputed_value_int64s", {7})
                  .attr_int("replaced_value_int64", -1)
                  .run();
  EXPECT_EQ(vals<int64_t>(ints[0]), (std::vector<int64_t>{7, 5, 7}));
  std::string e = error_of(MlNode("Imputer", 1).input("X", i64({1}, {1})).attr_floats("imputed_value_floats", {1}));
  EXPECT_NE(e.find("imputed_value_int64s must be set"), std::string::npos) << e;
}

TEST(OneHotEncoder, AppendsCategoryDim) {
  auto out = MlNode("OneHotEncoder", 1).input("X", i64({1, 3}, {4, 1, 9})).attr_ints("cats_int64s", {1, 4, 7}).run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 1, 0, 1, 0, 0, 0, 0, 0}));
  auto s = MlNode("OneHotEncoder", 1).input("X", strs({2}, {"b", "a"})).attr_strings("cats_strings", {"a", "b"}).run();
  EXPECT_EQ(vals<float>(s[0]), (std::vector<float>{0, 1, 1, 0}));
  auto f = MlNode("OneHotEncoder", 1).input("X", f64({2}, {1.7, NAN})).attr_ints("cats_int64s", {0, 1}).run();
  EXPECT_EQ(vals<float>(f[0]), (std::vector<float>{0, 1, 0, 0}));  // 1.7 truncates to 1; NaN matches nothing
  std::string e = error_of(
      MlNode("OneHotEncoder", 1).input("X", i64({1}, {3})).attr_ints("cats_int64s", {1}).attr_int("zeros", 0));
  EXPECT_NE(e.find("not one of the categories"), std::string::npos) << e;
}

TEST(LabelEncoder, V1ConvertsBothWays) {
  auto to_int = MlNode("LabelEncoder", 1)
                    .input("X", strs({3}, {"b", "z", "a"}))
                    .attr_strings("classes_strings", {"a", "b"})
                    .attr_int("default_int64", 9)
                    .run();
  EXPECT_EQ(vals<int64_t>(to_int[0]), (std::vector<int64_t>{1, 9, 0}));
  auto to_str = MlNode("LabelEncoder", 1).input("X", i64({3}, {1, 5, 0})).attr_strings("classes_strings", {"a", "b"}).run();
  EXPECT_EQ(to_str[0].tensor.string_values(), (std::vector<std::string>{"b", "_Unused", "a"}));
}

TEST(LabelEncoder, V2SpecExampleStringToInt) {
  auto out = MlNode("LabelEncoder", 2)
                 .input("X", strs({5}, {"a", "b", "d", "c", "g"}))
                 .attr_strings("keys_strings", {"a", "b", "c"})
                 .attr_ints("values_int64s", {0, 1, 2})
                 .attr_int("default_int64", 42)
                 .run();
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{0, 1, 42, 2, 42}));
}

TEST(LabelEncoder, V2FloatKeysMatchNaN) {
  auto out = MlNode("LabelEncoder", 2)
                 .input("X", f32({3}, {NAN, 1.0f, -0.0f}))
                 .attr_floats("keys_floats", {NAN, 0.0f})
                 .attr_strings("values_strings", {"nan", "zero"})
                 .run();
  EXPECT_EQ(out[0].tensor.string_values(), (std::vector<std::string>{"nan", "_Unused", "zero"}));
}

TEST(LabelEncoder, V4TensorAttributes) {
  auto out = MlNode("LabelEncoder", 4)
                 .input("X", strs({5}, {"a", "b", "d", "c", "g"}))
                 .attr_tensor("keys_tensor", strs({3}, {"a", "b", "c"}))
                 .attr_tensor("values_tensor", make_tensor<int16_t>(DataType::Int16, {3}, {0, 1, 2}))
                 .attr_tensor("default_tensor", make_tensor<int16_t>(DataType::Int16, {1}, {42}))
                 .run();
  EXPECT_EQ(out[0].tensor.dtype(), DataType::Int16);
  EXPECT_EQ(vals<int16_t>(out[0]), (std::vector<int16_t>{0, 1, 42, 2, 42}));
}

TEST(LabelEncoder, V4RepeatedKeyLastWinsAndTensorsNeedV4) {
  auto out = MlNode("LabelEncoder", 4)
                 .input("X", i64({1}, {3}))
                 .attr_ints("keys_int64s", {3, 3})
                 .attr_floats("values_floats", {1.0f, 2.0f})
                 .run();
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{2.0f}));
  std::string e = error_of(MlNode("LabelEncoder", 2)
                               .input("X", i64({1}, {3}))
                               .attr_tensor("keys_tensor", i64({1}, {3}))
                               .attr_ints("values_int64s", {1}));
  EXPECT_NE(e.find("attribute 'keys_tensor' is not one of LabelEncoder-2's"), std::string::npos) << e;  // at load
  std::string mismatch = error_of(MlNode("LabelEncoder", 2)
                                      .input("X", f32({1}, {3}))
                                      .attr_ints("keys_int64s", {3})
                                      .attr_ints("values_int64s", {1}));
  EXPECT_NE(mismatch.find("the keys are int64"), std::string::npos) << mismatch;
}

TEST(CategoryMapper, BothDirections) {
  auto s2i = MlNode("CategoryMapper", 1)
                 .input("X", strs({2, 2}, {"x", "y", "q", "x"}))
                 .attr_strings("cats_strings", {"x", "y"})
                 .attr_ints("cats_int64s", {10, 20})
                 .run();
  EXPECT_EQ(s2i[0].tensor.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(vals<int64_t>(s2i[0]), (std::vector<int64_t>{10, 20, -1, 10}));
  auto i2s = MlNode("CategoryMapper", 1)
                 .input("X", i64({2}, {20, 5}))
                 .attr_strings("cats_strings", {"x", "y"})
                 .attr_ints("cats_int64s", {10, 20})
                 .attr_string("default_string", "?")
                 .run();
  EXPECT_EQ(i2s[0].tensor.string_values(), (std::vector<std::string>{"y", "?"}));
}

TEST(FeatureVectorizer, CutsPadsAndConcatenates) {
  auto out = MlNode("FeatureVectorizer", 1)
                 .input("a", f32({2, 3}, {1, 2, 3, 4, 5, 6}))
                 .input("b", f32({2, 1}, {7, 8}))
                 .attr_ints("inputdimensions", {2, 2})
                 .run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 2, 7, 0, 4, 5, 8, 0}));
  std::string e = error_of(MlNode("FeatureVectorizer", 1).input("a", f32({2, 1}, {1, 2})).input("b", f32({3, 1}, {1, 2, 3})));
  EXPECT_NE(e.find("rows"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
