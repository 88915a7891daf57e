// The conversions through double that every kernel computing in double shares (ir/scalar.hpp): one rule for
// values past a type's range, NaN, and rounding.
#include "ir/scalar.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace onyx {
namespace ONYX_TEST_FILE {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(FromDouble, FloatTypesRoundOnceAndOverflowToInfinity) {
  EXPECT_EQ(from_double<double>(1e300), 1e300);
  EXPECT_EQ(from_double<float>(1e300), std::numeric_limits<float>::infinity());
  EXPECT_EQ(from_double<float>(-1e39), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(from_double<float>(3.4028234663852886e38), std::numeric_limits<float>::max());
  EXPECT_EQ(from_double<float>(0.1), 0.1f);
  EXPECT_TRUE(std::isnan(from_double<float>(kNaN)));
  EXPECT_TRUE(std::isinf(static_cast<float>(from_double<Float16>(1e300))));
  EXPECT_EQ(static_cast<float>(from_double<Float16>(65504.0)), 65504.0f);
  EXPECT_EQ(static_cast<float>(from_double<BFloat16>(1.0 + 1.0 / 512)), 1.0f);  // 8 bits: rounds to even
  // Float8E4M3FN has no infinity: its conversion saturates.
  EXPECT_EQ(static_cast<float>(from_double<Float8E4M3FN>(1e300)), 448.0f);
}

TEST(FromDouble, IntegersTruncateAndSaturateAndNaNIsZero) {
  EXPECT_EQ(from_double<int32_t>(2.9), 2);
  EXPECT_EQ(from_double<int32_t>(-2.9), -2);
  EXPECT_EQ(from_double<int8_t>(1000.0), 127);
  EXPECT_EQ(from_double<int8_t>(-1000.0), -128);
  EXPECT_EQ(from_double<uint8_t>(-3.0), 0);
  EXPECT_EQ(from_double<int64_t>(1e30), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(from_double<int64_t>(-1e30), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(from_double<uint64_t>(1e30), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(from_double<int32_t>(kNaN), 0);
  EXPECT_EQ(from_double<int32_t>(std::numeric_limits<double>::infinity()), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(from_double<bool>(0.0), false);
  EXPECT_EQ(from_double<bool>(0.25), true);
}

TEST(ToDouble, EveryTypeExactlyWhereItFits) {
  EXPECT_EQ(to_double(Float16(0.5f)), 0.5);
  EXPECT_EQ(to_double(int64_t{1} << 53), 9007199254740992.0);
  EXPECT_EQ(to_double(uint8_t{255}), 255.0);
  EXPECT_EQ(to_double(true), 1.0);
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
