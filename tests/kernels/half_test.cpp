// The float16 <-> float32 array conversions: the F16C build against the scalar one (every float16 value, and
// float32 values around every rounding boundary, overflow, subnormals, inf and NaN), and against base/dtype.hpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/dtype.hpp"
#include "kernels/half.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

// Runs `f` with the scalar build forced, then with the best build (restoring it afterwards).
template <class F>
void both_builds(F f) {
  kernels::force_scalar_half_conversion(true);
  f();
  kernels::force_scalar_half_conversion(false);
  f();
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> b;
  for (float x : v) b.push_back(std::bit_cast<uint32_t>(x));
  return b;
}

TEST(HalfConversion, EveryHalfValueWidensExactly) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<std::vector<uint32_t>> results;
  both_builds([&] {
    std::vector<float> out(all.size() + 3);  // a length that is no multiple of the vector width
    std::vector<uint16_t> in = all;
    in.insert(in.end(), {0x3C00, 0xBC00, 0x7C00});
    kernels::half_to_float_array(in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const float want = half_to_float(in[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(out[i])) << "half 0x" << std::hex << in[i];
        // Quiet, with the payload kept.
        EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want) | 0x00400000u) << std::hex << in[i];
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want)) << "half 0x" << std::hex << in[i];
      }
    }
    results.push_back(bits_of(out));
  });
  EXPECT_EQ(results[0], results[1]);
}

TEST(HalfConversion, NarrowingRoundsToNearestEvenLikeTheScalarConversion) {
  std::vector<float> in;
  // Every half value, and the float32 values just around each halfway point between neighbouring halves.
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const float lo = half_to_float(static_cast<uint16_t>(h)), hi = half_to_float(static_cast<uint16_t>(h + 1));
    const float mid = lo + (hi - lo) / 2;
    for (float x : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      in.push_back(x);
      in.push_back(-x);
    }
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 10000; ++i) in.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  const float inf = std::numeric_limits<float>::infinity();
  in.insert(in.end(), {65504.0f, 65519.99f, 65520.0f, 1e10f, -1e10f, inf, -inf, 1e-8f, -1e-8f, 1e-40f, 0.0f, -0.0f,
                       std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0x7F800001u),
                       std::bit_cast<float>(0xFFA00000u)});
  std::vector<std::vector<uint16_t>> results;
  both_builds([&] {
    std::vector<uint16_t> out(in.size());
    kernels::float_to_half_array(in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (std::isnan(in[i])) {
        const uint32_t quiet = std::bit_cast<uint32_t>(in[i]) | 0x00400000u;
        ASSERT_EQ(out[i], float_to_half(std::bit_cast<float>(quiet))) << "float bits 0x" << std::hex << quiet;
      } else {
        ASSERT_EQ(out[i], float_to_half(in[i])) << "float " << in[i];
      }
    }
    results.push_back(out);
  });
  EXPECT_EQ(results[0], results[1]);
}

TEST(HalfConversion, LargeArraysSplitOverThreadsGiveTheSameResult) {
  std::vector<float> in(1 << 20);
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.0f, 100.0f);
  for (float& x : in) x = d(rng);
  std::vector<uint16_t> half(in.size()), one(in.size());
  kernels::float_to_half_array(in.data(), half.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) one[i] = float_to_half(in[i]);
  EXPECT_EQ(half, one);
  std::vector<float> back(in.size());
  kernels::half_to_float_array(half.data(), back.data(), half.size());
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(back[i], half_to_float(half[i]));
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
