// The range comparison used for conformance tests whose expected outputs come from a random source.
#include "exec/datum_io.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;

Datum f32(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Datum::of(make_tensor<float>(DataType::Float, {n}, v));
}

void expect_mismatch(const Datum& expected, const Datum& actual, const std::string& fragment) {
  auto d = compare_datums_range(expected, actual);
  ASSERT_TRUE(d.has_value()) << "expected a mismatch containing: " << fragment;
  EXPECT_NE(d->find(fragment), std::string::npos) << *d;
}

TEST(CompareRange, ValuesAnywhereInTheExpectedRangePass) {
  // Another draw of the same random op: different values, same range.
  EXPECT_EQ(compare_datums_range(f32({0, 1, 0.5f, 1}), f32({1, 0, 0, 0.25f})), std::nullopt);
  EXPECT_EQ(compare_datums_range(f32({-2, 3}), f32({-2, 3})), std::nullopt);
}

TEST(CompareRange, AWrongOutputFails) {
  expect_mismatch(f32({0, 1, 0.5f, 1}), f32({0, 1.5f, 0, 0}), "element 1 of 4: got 1.5, outside the expected range [0, 1]");
  expect_mismatch(f32({0, 1}), f32({-0.001f, 0}), "outside the expected range");
  Datum ints = Datum::of(make_tensor<int64_t>(DataType::Int64, {2}, {0, 3}));
  expect_mismatch(ints, Datum::of(make_tensor<int64_t>(DataType::Int64, {2}, {4, 0})), "got 4, outside");
}

TEST(CompareRange, ShapeAndTypeStillCount) {
  expect_mismatch(f32({0, 1}), f32({0, 1, 1}), "shape: expected [2], got [3]");
  expect_mismatch(f32({0, 1}), Datum::of(make_tensor<double>(DataType::Double, {2}, {0, 1})), "element type");
}

TEST(CompareRange, NanOnlyWhereExpected) {
  const float nan = std::nanf("");
  EXPECT_EQ(compare_datums_range(f32({nan, 1, 2}), f32({nan, 2, 1})), std::nullopt);
  expect_mismatch(f32({nan, 1, 2}), f32({1, nan, 2}), "element 1 of 3: got NaN");
  expect_mismatch(f32({nan, nan}), f32({nan, 0}), "expected NaN");
}

TEST(CompareRange, BooleansTakeAnyValue) {
  Datum all_false = Datum::of(make_tensor<uint8_t>(DataType::Bool, {3}, {0, 0, 0}));
  Datum all_true = Datum::of(make_tensor<uint8_t>(DataType::Bool, {3}, {1, 1, 1}));
  EXPECT_EQ(compare_datums_range(all_false, all_true), std::nullopt);
}

TEST(CompareRange, SequencesElementByElement) {
  Type elem = Type::tensor(DataType::Float);
  Datum e = Datum::sequence({f32({0, 1}), f32({5, 6})}, elem);
  EXPECT_EQ(compare_datums_range(e, Datum::sequence({f32({1, 0}), f32({6, 5})}, elem)), std::nullopt);
  expect_mismatch(e, Datum::sequence({f32({1, 0}), f32({1, 5})}, elem), "element 1: element 0 of 2: got 1");
}

}  // namespace
}  // namespace onyx
