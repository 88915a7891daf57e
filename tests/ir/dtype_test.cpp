#include "base/dtype.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include "base/error.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- enum, names, sizes, storage ----

TEST(DType, EnumValuesMatchOnnx) {
  EXPECT_EQ(static_cast<int32_t>(DataType::Float), 1);
  EXPECT_EQ(static_cast<int32_t>(DataType::String), 8);
  EXPECT_EQ(static_cast<int32_t>(DataType::BFloat16), 16);
  EXPECT_EQ(static_cast<int32_t>(DataType::Float8E5M2FNUZ), 20);
  EXPECT_EQ(static_cast<int32_t>(DataType::Float4E2M1), 23);
  EXPECT_EQ(static_cast<int32_t>(DataType::Float8E8M0), 24);
  EXPECT_EQ(static_cast<int32_t>(DataType::Int2), 26);
}

TEST(DType, KnownRange) {
  EXPECT_TRUE(is_known_dtype(0));
  for (int32_t v = 1; v <= 26; ++v) EXPECT_TRUE(is_known_dtype(v)) << v;
  EXPECT_FALSE(is_known_dtype(27));
  EXPECT_FALSE(is_known_dtype(-1));
}

TEST(DType, NamesRoundTrip) {
  const std::vector<std::pair<DataType, std::string_view>> expected = {
      {DataType::Float, "float"},
      {DataType::UInt8, "uint8"},
      {DataType::Int8, "int8"},
      {DataType::UInt16, "uint16"},
      {DataType::Int16, "int16"},
      {DataType::Int32, "int32"},
      {DataType::Int64, "int64"},
      {DataType::String, "string"},
      {DataType::Bool, "bool"},
      {DataType::Float16, "float16"},
      {DataType::Double, "double"},
      {DataType::UInt32, "uint32"},
      {DataType::UInt64, "uint64"},
      {DataType::Complex64, "complex64"},
      {DataType::Complex128, "complex128"},
      {DataType::BFloat16, "bfloat16"},
      {DataType::Float8E4M3FN, "float8e4m3fn"},
      {DataType::Float8E4M3FNUZ, "float8e4m3fnuz"},
      {DataType::Float8E5M2, "float8e5m2"},
      {DataType::Float8E5M2FNUZ, "float8e5m2fnuz"},
      {DataType::UInt4, "uint4"},
      {DataType::Int4, "int4"},
      {DataType::Float4E2M1, "float4e2m1"},
      {DataType::Float8E8M0, "float8e8m0"},
      {DataType::UInt2, "uint2"},
      {DataType::Int2, "int2"},
  };
  ASSERT_EQ(expected.size(), 26u);
  for (const auto& [t, name] : expected) {
    EXPECT_EQ(dtype_name(t), name);
    ASSERT_TRUE(dtype_from_name(name).has_value()) << name;
    EXPECT_EQ(*dtype_from_name(name), t) << name;
  }
  EXPECT_EQ(dtype_name(DataType::Undefined), "undefined");
  EXPECT_FALSE(dtype_from_name("undefined").has_value());
  EXPECT_FALSE(dtype_from_name("Float").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
}

TEST(DType, UnknownNameIsStable) {
  const std::string_view a = dtype_name(static_cast<DataType>(99));
  const std::string_view b = dtype_name(static_cast<DataType>(-3));
  EXPECT_EQ(a, "dtype(99)");
  EXPECT_EQ(b, "dtype(-3)");
  EXPECT_EQ(dtype_name(static_cast<DataType>(99)).data(), a.data());  // interned
  EXPECT_EQ(cat(DataType::Int4, "/", static_cast<DataType>(99)), "int4/dtype(99)");
}

TEST(DType, Bits) {
  EXPECT_EQ(dtype_bits(DataType::Undefined), 0);
  EXPECT_EQ(dtype_bits(DataType::String), 0);
  EXPECT_EQ(dtype_bits(DataType::Int2), 2);
  EXPECT_EQ(dtype_bits(DataType::UInt2), 2);
  EXPECT_EQ(dtype_bits(DataType::Int4), 4);
  EXPECT_EQ(dtype_bits(DataType::UInt4), 4);
  EXPECT_EQ(dtype_bits(DataType::Float4E2M1), 4);
  EXPECT_EQ(dtype_bits(DataType::Bool), 8);
  EXPECT_EQ(dtype_bits(DataType::Float8E8M0), 8);
  EXPECT_EQ(dtype_bits(DataType::Float8E4M3FN), 8);
  EXPECT_EQ(dtype_bits(DataType::BFloat16), 16);
  EXPECT_EQ(dtype_bits(DataType::Float), 32);
  EXPECT_EQ(dtype_bits(DataType::UInt32), 32);
  EXPECT_EQ(dtype_bits(DataType::Complex64), 64);
  EXPECT_EQ(dtype_bits(DataType::Complex128), 128);
  EXPECT_EQ(dtype_bits(static_cast<DataType>(99)), 0);
}

TEST(DType, RawByteSize) {
  EXPECT_EQ(raw_byte_size(DataType::Float, 3), 12u);
  EXPECT_EQ(raw_byte_size(DataType::Complex128, 2), 32u);
  EXPECT_EQ(raw_byte_size(DataType::Bool, 5), 5u);
  EXPECT_EQ(raw_byte_size(DataType::Int4, 0), 0u);
  EXPECT_EQ(raw_byte_size(DataType::Int4, 1), 1u);
  EXPECT_EQ(raw_byte_size(DataType::Int4, 2), 1u);
  EXPECT_EQ(raw_byte_size(DataType::UInt4, 3), 2u);
  EXPECT_EQ(raw_byte_size(DataType::Float4E2M1, 7), 4u);
  EXPECT_EQ(raw_byte_size(DataType::Int2, 1), 1u);
  EXPECT_EQ(raw_byte_size(DataType::UInt2, 4), 1u);
  EXPECT_EQ(raw_byte_size(DataType::UInt2, 5), 2u);
  EXPECT_FALSE(raw_byte_size(DataType::String, 1).has_value());
  EXPECT_FALSE(raw_byte_size(DataType::Undefined, 1).has_value());
  EXPECT_FALSE(raw_byte_size(static_cast<DataType>(99), 1).has_value());

  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(raw_byte_size(DataType::UInt8, kMax), kMax);
  EXPECT_EQ(raw_byte_size(DataType::Float, kMax / 4), kMax / 4 * 4);
  EXPECT_FALSE(raw_byte_size(DataType::Float, kMax / 4 + 1).has_value());
  EXPECT_FALSE(raw_byte_size(DataType::Complex128, uint64_t{1} << 60).has_value());
  // Packed types never overflow: the byte count is below the element count.
  EXPECT_EQ(raw_byte_size(DataType::Int4, kMax), kMax / 2 + 1);
  EXPECT_EQ(raw_byte_size(DataType::Int2, kMax), kMax / 4 + 1);
}

TEST(DType, StorageField) {
  EXPECT_EQ(storage_field(DataType::Float), StorageField::FloatData);
  EXPECT_EQ(storage_field(DataType::Complex64), StorageField::FloatData);
  EXPECT_EQ(storage_field(DataType::Double), StorageField::DoubleData);
  EXPECT_EQ(storage_field(DataType::Complex128), StorageField::DoubleData);
  EXPECT_EQ(storage_field(DataType::Int64), StorageField::Int64Data);
  EXPECT_EQ(storage_field(DataType::UInt32), StorageField::Uint64Data);
  EXPECT_EQ(storage_field(DataType::UInt64), StorageField::Uint64Data);
  EXPECT_EQ(storage_field(DataType::String), StorageField::StringData);
  for (DataType t : {DataType::UInt8, DataType::Int8, DataType::UInt16, DataType::Int16,
                     DataType::Int32, DataType::Bool, DataType::Float16, DataType::BFloat16,
                     DataType::Float8E4M3FN, DataType::Float8E4M3FNUZ, DataType::Float8E5M2,
                     DataType::Float8E5M2FNUZ, DataType::Float8E8M0, DataType::UInt4,
                     DataType::Int4, DataType::Float4E2M1, DataType::UInt2, DataType::Int2}) {
    EXPECT_EQ(storage_field(t), StorageField::Int32Data) << dtype_name(t);
  }
  EXPECT_EQ(storage_field(DataType::Undefined), StorageField::None);
  EXPECT_EQ(storage_field(static_cast<DataType>(99)), StorageField::None);
}

// ---- half ----

TEST(Half, AllValuesRoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = half_to_float(h);
    const bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    EXPECT_EQ(std::isnan(f), is_nan) << std::hex << i;
    // Bit-exact, NaN payloads included.
    EXPECT_EQ(float_to_half(f), h) << std::hex << i;
  }
}

TEST(Half, MonotonicValues) {
  // Consecutive positive finite codes decode to strictly increasing floats.
  for (uint16_t h = 0; h < 0x7BFF; ++h) {
    EXPECT_LT(half_to_float(h), half_to_float(static_cast<uint16_t>(h + 1))) << h;
  }
}

TEST(Half, SpotValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // tie with the next binade rounds to inf
  EXPECT_EQ(float_to_half(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half(1e10f), 0x7C00);
  EXPECT_EQ(float_to_half(kInf), 0x7C00);
  EXPECT_EQ(float_to_half(-kInf), 0xFC00);
  EXPECT_EQ(float_to_half(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(kNaN))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(-kNaN))));
  // A float NaN whose payload lives only in low bits must not become inf.
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::bit_cast<float>(0x7F800001u)))));
  // Subnormals: smallest is 2^-24; 2^-25 ties to even (0); 1.5 * 2^-25 rounds up.
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp ties to even 2
  // Largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
  // Ties to even in normal range: 1 + 2^-11 is halfway between 0x3C00 and 0x3C01.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(float_to_half(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  // Float subnormals vanish.
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(half_to_float(0x7C00), kInf);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
}

// ---- bfloat16 ----

TEST(BFloat16, AllValuesRoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto b = static_cast<uint16_t>(i);
    const float f = bfloat16_to_float(b);
    const bool is_nan = (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
    EXPECT_EQ(std::isnan(f), is_nan) << std::hex << i;
    if (is_nan) {
      EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(f)))) << std::hex << i;
    } else {
      EXPECT_EQ(float_to_bfloat16(f), b) << std::hex << i;
    }
  }
}

TEST(BFloat16, SpotValues) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.00390625f), 0x3F80);  // 1 + 2^-8: tie, to even
  EXPECT_EQ(float_to_bfloat16(1.01171875f), 0x3F82);  // 1 + 3 * 2^-8: tie, to even
  EXPECT_EQ(float_to_bfloat16(std::nextafter(1.00390625f, 2.0f)), 0x3F81);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
  EXPECT_EQ(float_to_bfloat16(-kInf), 0xFF80);
  EXPECT_EQ(float_to_bfloat16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(kNaN))));
  // Payload only in the low 16 bits: truncation alone would give inf.
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::bit_cast<float>(0x7F800001u)))));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::bit_cast<float>(0xFF80FFFFu)))));
}

// ---- float8: helpers shared by the four types ----

struct F8Funcs {
  uint8_t (*enc)(float, bool);
  float (*dec)(uint8_t);
  bool (*is_nan_code)(uint8_t);
};

bool nan_e4m3fn(uint8_t v) { return (v & 0x7F) == 0x7F; }
bool nan_uz(uint8_t v) { return v == 0x80; }
bool nan_e5m2(uint8_t v) { return (v & 0x7F) > 0x7C; }

const F8Funcs kE4M3FN{float_to_f8e4m3fn, f8e4m3fn_to_float, nan_e4m3fn};
const F8Funcs kE4M3FNUZ{float_to_f8e4m3fnuz, f8e4m3fnuz_to_float, nan_uz};
const F8Funcs kE5M2{float_to_f8e5m2, f8e5m2_to_float, nan_e5m2};
const F8Funcs kE5M2FNUZ{float_to_f8e5m2fnuz, f8e5m2fnuz_to_float, nan_uz};

void check_round_trip(const F8Funcs& t) {
  for (int i = 0; i < 256; ++i) {
    const auto v = static_cast<uint8_t>(i);
    const float f = t.dec(v);
    EXPECT_EQ(std::isnan(f), t.is_nan_code(v)) << i;
    for (bool sat : {true, false}) {
      const uint8_t back = t.enc(f, sat);
      if (t.is_nan_code(v)) {
        EXPECT_TRUE(t.is_nan_code(back)) << i;
      } else if (std::isinf(f) && sat) {
        // E5M2 inf saturates to max under saturate=true, per the Cast table.
        EXPECT_EQ(back, static_cast<uint8_t>((v & 0x80) | 0x7B)) << i;
      } else {
        EXPECT_EQ(back, v) << i << " saturate=" << sat;
      }
    }
  }
}

// Every float halfway between two consecutive finite codes rounds to the even one.
void check_ties(const F8Funcs& t, uint8_t max_code) {
  for (uint8_t c = 0; c < max_code; ++c) {
    const double lo = t.dec(c);
    const double hi = t.dec(static_cast<uint8_t>(c + 1));
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact in float
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const uint8_t even = (c & 1) ? static_cast<uint8_t>(c + 1) : c;
    EXPECT_EQ(t.enc(mid, true), even) << int(c);
    EXPECT_EQ(t.enc(std::nextafter(mid, 0.0f), true), c) << int(c);
    EXPECT_EQ(t.enc(std::nextafter(mid, kInf), true), c + 1) << int(c);
    // Same on the negative side.
    EXPECT_EQ(t.enc(-mid, true) & 0x7F, even) << int(c);
  }
}

TEST(Float8, RoundTripAllCodes) {
  check_round_trip(kE4M3FN);
  check_round_trip(kE4M3FNUZ);
  check_round_trip(kE5M2);
  check_round_trip(kE5M2FNUZ);
}

TEST(Float8, TiesToEvenEverywhere) {
  check_ties(kE4M3FN, 0x7E);
  check_ties(kE4M3FNUZ, 0x7F);
  check_ties(kE5M2, 0x7B);
  check_ties(kE5M2FNUZ, 0x7F);
}

TEST(Float8, E4M3FN) {
  EXPECT_EQ(f8e4m3fn_to_float(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(f8e4m3fn_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(f8e4m3fn_to_float(0xFF)));
  EXPECT_EQ(f8e4m3fn_to_float(0x38), 1.0f);
  EXPECT_EQ(f8e4m3fn_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(float_to_f8e4m3fn(448.0f), 0x7E);
  EXPECT_EQ(float_to_f8e4m3fn(-448.0f), 0xFE);
  // 1 + 1/16 is halfway between 1 (0x38) and 1.125 (0x39): even wins.
  EXPECT_EQ(float_to_f8e4m3fn(1.0625f), 0x38);
  EXPECT_EQ(float_to_f8e4m3fn(1.1875f), 0x3A);
  // Saturation: 464 is a tie between 448 and (unrepresentable) 480, so it stays 448 either way.
  EXPECT_EQ(float_to_f8e4m3fn(464.0f, false), 0x7E);
  EXPECT_EQ(float_to_f8e4m3fn(465.0f, true), 0x7E);
  EXPECT_EQ(float_to_f8e4m3fn(465.0f, false), 0x7F);
  EXPECT_EQ(float_to_f8e4m3fn(480.0f, false), 0x7F);
  EXPECT_EQ(float_to_f8e4m3fn(-1e9f, false), 0xFF);
  EXPECT_EQ(float_to_f8e4m3fn(1e9f, true), 0x7E);
  EXPECT_EQ(float_to_f8e4m3fn(kInf, true), 0x7E);
  EXPECT_EQ(float_to_f8e4m3fn(-kInf, true), 0xFE);
  EXPECT_EQ(float_to_f8e4m3fn(kInf, false), 0x7F);
  EXPECT_EQ(float_to_f8e4m3fn(-kInf, false), 0xFF);
  EXPECT_EQ(float_to_f8e4m3fn(kNaN) & 0x7F, 0x7F);
  EXPECT_EQ(float_to_f8e4m3fn(-kNaN, false), 0xFF);
  EXPECT_EQ(float_to_f8e4m3fn(-0.0f), 0x80);
  EXPECT_EQ(float_to_f8e4m3fn(std::ldexp(1.0f, -10)), 0x00);  // tie with 0, even
  EXPECT_EQ(float_to_f8e4m3fn(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(float_to_f8e4m3fn(-std::ldexp(1.0f, -12)), 0x80);
}

TEST(Float8, E4M3FNUZ) {
  EXPECT_EQ(f8e4m3fnuz_to_float(0x7F), 240.0f);
  EXPECT_EQ(f8e4m3fnuz_to_float(0xFF), -240.0f);
  EXPECT_TRUE(std::isnan(f8e4m3fnuz_to_float(0x80)));
  EXPECT_EQ(f8e4m3fnuz_to_float(0x40), 1.0f);
  EXPECT_EQ(f8e4m3fnuz_to_float(0x01), std::ldexp(1.0f, -10));
  EXPECT_EQ(float_to_f8e4m3fnuz(1.0f), 0x40);
  EXPECT_EQ(float_to_f8e4m3fnuz(240.0f), 0x7F);
  EXPECT_EQ(float_to_f8e4m3fnuz(1.0625f), 0x40);  // tie, even
  // 240 has an odd mantissa, so the tie 248 rounds up to 256: out of range.
  EXPECT_EQ(float_to_f8e4m3fnuz(247.0f, false), 0x7F);
  EXPECT_EQ(float_to_f8e4m3fnuz(248.0f, false), 0x80);
  EXPECT_EQ(float_to_f8e4m3fnuz(248.0f, true), 0x7F);
  EXPECT_EQ(float_to_f8e4m3fnuz(249.0f, true), 0x7F);
  EXPECT_EQ(float_to_f8e4m3fnuz(249.0f, false), 0x80);
  EXPECT_EQ(float_to_f8e4m3fnuz(-1e9f, true), 0xFF);
  EXPECT_EQ(float_to_f8e4m3fnuz(-1e9f, false), 0x80);
  EXPECT_EQ(float_to_f8e4m3fnuz(kInf, true), 0x7F);
  EXPECT_EQ(float_to_f8e4m3fnuz(-kInf, true), 0xFF);
  EXPECT_EQ(float_to_f8e4m3fnuz(kInf, false), 0x80);
  EXPECT_EQ(float_to_f8e4m3fnuz(-kInf, false), 0x80);
  EXPECT_EQ(float_to_f8e4m3fnuz(kNaN), 0x80);
  EXPECT_EQ(float_to_f8e4m3fnuz(-kNaN), 0x80);
  EXPECT_EQ(float_to_f8e4m3fnuz(-0.0f), 0x00);
  EXPECT_EQ(float_to_f8e4m3fnuz(-std::ldexp(1.0f, -12)), 0x00);  // no -0, and never 0x80
  EXPECT_EQ(float_to_f8e4m3fnuz(-std::ldexp(1.0f, -10)), 0x81);
}

TEST(Float8, E5M2) {
  EXPECT_EQ(f8e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(f8e5m2_to_float(0x7C), kInf);
  EXPECT_EQ(f8e5m2_to_float(0xFC), -kInf);
  EXPECT_TRUE(std::isnan(f8e5m2_to_float(0x7D)));
  EXPECT_TRUE(std::isnan(f8e5m2_to_float(0x7E)));
  EXPECT_TRUE(std::isnan(f8e5m2_to_float(0xFF)));
  EXPECT_EQ(f8e5m2_to_float(0x3C), 1.0f);
  EXPECT_EQ(f8e5m2_to_float(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(float_to_f8e5m2(57344.0f), 0x7B);
  EXPECT_EQ(float_to_f8e5m2(1.125f), 0x3C);  // tie between 1 and 1.25, even
  EXPECT_EQ(float_to_f8e5m2(1.375f), 0x3E);  // tie between 1.25 and 1.5, even
  EXPECT_EQ(float_to_f8e5m2(61439.0f, false), 0x7B);
  EXPECT_EQ(float_to_f8e5m2(61440.0f, false), 0x7C);  // tie rounds up to inf
  EXPECT_EQ(float_to_f8e5m2(61440.0f, true), 0x7B);
  EXPECT_EQ(float_to_f8e5m2(-1e9f, false), 0xFC);
  EXPECT_EQ(float_to_f8e5m2(-1e9f, true), 0xFB);
  EXPECT_EQ(float_to_f8e5m2(kInf, true), 0x7B);
  EXPECT_EQ(float_to_f8e5m2(-kInf, true), 0xFB);
  EXPECT_EQ(float_to_f8e5m2(kInf, false), 0x7C);
  EXPECT_EQ(float_to_f8e5m2(-kInf, false), 0xFC);
  EXPECT_TRUE(std::isnan(f8e5m2_to_float(float_to_f8e5m2(kNaN))));
  EXPECT_TRUE(std::isnan(f8e5m2_to_float(float_to_f8e5m2(-kNaN, false))));
  EXPECT_EQ(float_to_f8e5m2(-0.0f), 0x80);
}

TEST(Float8, E5M2FNUZ) {
  EXPECT_EQ(f8e5m2fnuz_to_float(0x7F), 57344.0f);
  EXPECT_TRUE(std::isnan(f8e5m2fnuz_to_float(0x80)));
  EXPECT_EQ(f8e5m2fnuz_to_float(0x40), 1.0f);
  EXPECT_EQ(f8e5m2fnuz_to_float(0x01), std::ldexp(1.0f, -17));
  EXPECT_EQ(float_to_f8e5m2fnuz(1.0f), 0x40);
  EXPECT_EQ(float_to_f8e5m2fnuz(1.125f), 0x40);
  EXPECT_EQ(float_to_f8e5m2fnuz(61440.0f, true), 0x7F);
  EXPECT_EQ(float_to_f8e5m2fnuz(61440.0f, false), 0x80);
  EXPECT_EQ(float_to_f8e5m2fnuz(kInf, true), 0x7F);
  EXPECT_EQ(float_to_f8e5m2fnuz(-kInf, true), 0xFF);
  EXPECT_EQ(float_to_f8e5m2fnuz(kInf, false), 0x80);
  EXPECT_EQ(float_to_f8e5m2fnuz(kNaN), 0x80);
  EXPECT_EQ(float_to_f8e5m2fnuz(-0.0f), 0x00);
  EXPECT_EQ(float_to_f8e5m2fnuz(-std::ldexp(1.0f, -19)), 0x00);
}

// ---- float8e8m0 ----

TEST(Float8E8M0, Decode) {
  EXPECT_EQ(f8e8m0_to_float(127), 1.0f);
  EXPECT_EQ(f8e8m0_to_float(128), 2.0f);
  EXPECT_EQ(f8e8m0_to_float(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(f8e8m0_to_float(0xFE), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(f8e8m0_to_float(0xFF)));
}

TEST(Float8E8M0, RoundTripAllCodes) {
  for (int i = 0; i < 256; ++i) {
    const auto v = static_cast<uint8_t>(i);
    const float f = f8e8m0_to_float(v);
    for (bool sat : {true, false}) {
      for (E8M0Round m : {E8M0Round::Up, E8M0Round::Down, E8M0Round::Nearest}) {
        EXPECT_EQ(float_to_f8e8m0(f, sat, m), v) << i;
      }
    }
  }
}

TEST(Float8E8M0, Rounding) {
  EXPECT_EQ(float_to_f8e8m0(1.5f), 128);  // default: up
  EXPECT_EQ(float_to_f8e8m0(1.0001f), 128);
  EXPECT_EQ(float_to_f8e8m0(1.99f, true, E8M0Round::Down), 127);
  EXPECT_EQ(float_to_f8e8m0(1.5f, true, E8M0Round::Nearest), 128);  // tie goes up
  EXPECT_EQ(float_to_f8e8m0(std::nextafter(1.5f, 0.0f), true, E8M0Round::Nearest), 127);
  EXPECT_EQ(float_to_f8e8m0(3.0f, true, E8M0Round::Nearest), 129);
  EXPECT_EQ(float_to_f8e8m0(0.3f, true, E8M0Round::Nearest), 125);  // 0.25 vs 0.5
  EXPECT_EQ(float_to_f8e8m0(0.38f, true, E8M0Round::Nearest), 126);
  // Float subnormals: 2^-127 is code 0; 1.5 * 2^-128 rounds up to it.
  EXPECT_EQ(float_to_f8e8m0(std::ldexp(1.0f, -127)), 0);
  EXPECT_EQ(float_to_f8e8m0(std::ldexp(1.5f, -128)), 0);
  EXPECT_EQ(float_to_f8e8m0(std::ldexp(1.5f, -127)), 1);
  EXPECT_EQ(float_to_f8e8m0(std::ldexp(1.5f, -127), true, E8M0Round::Down), 0);
}

TEST(Float8E8M0, Saturation) {
  const float big = std::numeric_limits<float>::max();  // rounds up past 2^127
  EXPECT_EQ(float_to_f8e8m0(big, true), 0xFE);
  EXPECT_EQ(float_to_f8e8m0(big, false), 0xFF);
  EXPECT_EQ(float_to_f8e8m0(big, false, E8M0Round::Down), 0xFE);
  EXPECT_EQ(float_to_f8e8m0(kInf, true), 0xFE);
  EXPECT_EQ(float_to_f8e8m0(kInf, false, E8M0Round::Nearest), 0xFF);
  EXPECT_EQ(float_to_f8e8m0(kNaN, true), 0xFF);
  EXPECT_EQ(float_to_f8e8m0(0.0f, true), 0x00);
  EXPECT_EQ(float_to_f8e8m0(0.0f, false, E8M0Round::Nearest), 0xFF);
  const float tiny = std::ldexp(1.0f, -140);
  EXPECT_EQ(float_to_f8e8m0(tiny, true), 0x00);
  EXPECT_EQ(float_to_f8e8m0(tiny, false), 0xFF);
}

// ---- float4e2m1 ----

TEST(Float4E2M1, AllCodes) {
  const float expected[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint8_t c = 0; c < 16; ++c) {
    const float f = f4e2m1_to_float(c);
    EXPECT_EQ(std::fabs(f), expected[c & 7]) << int(c);
    EXPECT_EQ(std::signbit(f), (c & 8) != 0) << int(c);
    EXPECT_EQ(float_to_f4e2m1(f), c) << int(c);
  }
  EXPECT_EQ(f4e2m1_to_float(0xF7), 6.0f);  // high nibble ignored
}

TEST(Float4E2M1, RoundingAndSaturation) {
  // Every midpoint goes to the even code.
  EXPECT_EQ(float_to_f4e2m1(0.25f), 0x0);
  EXPECT_EQ(float_to_f4e2m1(0.26f), 0x1);
  EXPECT_EQ(float_to_f4e2m1(0.75f), 0x2);
  EXPECT_EQ(float_to_f4e2m1(1.25f), 0x2);
  EXPECT_EQ(float_to_f4e2m1(1.75f), 0x4);
  EXPECT_EQ(float_to_f4e2m1(2.5f), 0x4);
  EXPECT_EQ(float_to_f4e2m1(3.5f), 0x6);
  EXPECT_EQ(float_to_f4e2m1(5.0f), 0x6);
  EXPECT_EQ(float_to_f4e2m1(5.01f), 0x7);
  EXPECT_EQ(float_to_f4e2m1(-2.6f), 0xD);
  EXPECT_EQ(float_to_f4e2m1(100.0f), 0x7);
  EXPECT_EQ(float_to_f4e2m1(-100.0f), 0xF);
  EXPECT_EQ(float_to_f4e2m1(kInf), 0x7);
  EXPECT_EQ(float_to_f4e2m1(-kInf), 0xF);
  EXPECT_EQ(float_to_f4e2m1(kNaN), 0x7);
  EXPECT_EQ(float_to_f4e2m1(-0.0f), 0x8);
  EXPECT_EQ(float_to_f4e2m1(-0.1f), 0x8);
}

// ---- packed integers ----

TEST(SubByte, Int4) {
  // Element 0 in the low nibble.
  EXPECT_EQ(pack_int4(-1, 7), 0x7F);
  EXPECT_EQ(pack_int4(-8, 0), 0x08);
  EXPECT_EQ(pack_uint4(0x3, 0xA), 0xA3);
  for (int lo = -8; lo <= 7; ++lo) {
    for (int hi = -8; hi <= 7; ++hi) {
      const uint8_t b = pack_int4(static_cast<int8_t>(lo), static_cast<int8_t>(hi));
      EXPECT_EQ(unpack_int4(b, 0), lo);
      EXPECT_EQ(unpack_int4(b, 1), hi);
      // Element index form: only the parity matters.
      EXPECT_EQ(unpack_int4(b, 6), lo);
      EXPECT_EQ(unpack_int4(b, 7), hi);
    }
  }
  for (int lo = 0; lo <= 15; ++lo) {
    for (int hi = 0; hi <= 15; ++hi) {
      const uint8_t b = pack_uint4(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
      EXPECT_EQ(unpack_uint4(b, 0), lo);
      EXPECT_EQ(unpack_uint4(b, 1), hi);
    }
  }
}

TEST(SubByte, Int2) {
  // x0 | x1 << 2 | x2 << 4 | x3 << 6
  EXPECT_EQ(pack_uint2(1, 2, 3, 0), 0x39);
  EXPECT_EQ(pack_int2(-1, 0, 1, -2), 0x93);
  for (int i = 0; i < 256; ++i) {
    const auto b = static_cast<uint8_t>(i);
    const uint8_t u[4] = {unpack_uint2(b, 0), unpack_uint2(b, 1), unpack_uint2(b, 2),
                          unpack_uint2(b, 3)};
    EXPECT_EQ(pack_uint2(u[0], u[1], u[2], u[3]), b);
    const int8_t s[4] = {unpack_int2(b, 0), unpack_int2(b, 1), unpack_int2(b, 2),
                         unpack_int2(b, 3)};
    for (int k = 0; k < 4; ++k) {
      EXPECT_GE(s[k], -2);
      EXPECT_LE(s[k], 1);
      EXPECT_EQ(unpack_int2(b, static_cast<uint64_t>(k + 4)), s[k]);
    }
    EXPECT_EQ(pack_int2(s[0], s[1], s[2], s[3]), b);
  }
}

// ---- double_of ----

template <class T>
std::vector<unsigned char> bytes_of(std::initializer_list<T> values) {
  std::vector<unsigned char> out;
  for (T v : values) {
    unsigned char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    if constexpr (std::endian::native == std::endian::big) std::reverse(buf, buf + sizeof(T));
    out.insert(out.end(), buf, buf + sizeof(T));
  }
  return out;
}

TEST(DoubleOf, NumericTypes) {
  EXPECT_EQ(double_of(DataType::Float, bytes_of<float>({1.5f, -2.25f}).data(), 1), -2.25);
  EXPECT_EQ(double_of(DataType::Double, bytes_of<double>({0.1, 3.0}).data(), 0), 0.1);
  EXPECT_EQ(double_of(DataType::Int8, bytes_of<int8_t>({5, -128}).data(), 1), -128);
  EXPECT_EQ(double_of(DataType::UInt8, bytes_of<uint8_t>({5, 200}).data(), 1), 200);
  EXPECT_EQ(double_of(DataType::Int16, bytes_of<int16_t>({-300}).data(), 0), -300);
  EXPECT_EQ(double_of(DataType::UInt16, bytes_of<uint16_t>({65535}).data(), 0), 65535);
  EXPECT_EQ(double_of(DataType::Int32, bytes_of<int32_t>({1, -7}).data(), 1), -7);
  EXPECT_EQ(double_of(DataType::UInt32, bytes_of<uint32_t>({4000000000u}).data(), 0), 4e9);
  EXPECT_EQ(double_of(DataType::Int64, bytes_of<int64_t>({-(int64_t{1} << 40)}).data(), 0),
            -std::ldexp(1.0, 40));
  EXPECT_EQ(double_of(DataType::UInt64, bytes_of<uint64_t>({uint64_t{1} << 63}).data(), 0),
            std::ldexp(1.0, 63));
  EXPECT_EQ(double_of(DataType::Bool, bytes_of<uint8_t>({0, 1}).data(), 1), 1.0);
  EXPECT_EQ(double_of(DataType::Bool, bytes_of<uint8_t>({0, 1}).data(), 0), 0.0);
  EXPECT_EQ(double_of(DataType::Complex64, bytes_of<float>({1, 2, 3, 4}).data(), 1), 3.0);
  EXPECT_EQ(double_of(DataType::Complex128, bytes_of<double>({1, 2, 3, 4}).data(), 1), 3.0);
  EXPECT_EQ(double_of(DataType::Float16, bytes_of<uint16_t>({0x3C00, 0xC000}).data(), 1), -2.0);
  EXPECT_EQ(double_of(DataType::BFloat16, bytes_of<uint16_t>({0x3F80}).data(), 0), 1.0);
  EXPECT_EQ(double_of(DataType::Float8E4M3FN, bytes_of<uint8_t>({0x7E}).data(), 0), 448.0);
  EXPECT_EQ(double_of(DataType::Float8E4M3FNUZ, bytes_of<uint8_t>({0x7F}).data(), 0), 240.0);
  EXPECT_EQ(double_of(DataType::Float8E5M2, bytes_of<uint8_t>({0x7B}).data(), 0), 57344.0);
  EXPECT_EQ(double_of(DataType::Float8E5M2FNUZ, bytes_of<uint8_t>({0x40}).data(), 0), 1.0);
  EXPECT_EQ(double_of(DataType::Float8E8M0, bytes_of<uint8_t>({128}).data(), 0), 2.0);
}

TEST(DoubleOf, PackedTypes) {
  const std::vector<uint8_t> int4 = {pack_int4(-3, 5), pack_int4(-8, 0)};
  EXPECT_EQ(double_of(DataType::Int4, int4.data(), 0), -3);
  EXPECT_EQ(double_of(DataType::Int4, int4.data(), 1), 5);
  EXPECT_EQ(double_of(DataType::Int4, int4.data(), 2), -8);
  EXPECT_EQ(double_of(DataType::UInt4, int4.data(), 0), 13);
  const std::vector<uint8_t> f4 = {0x00, 0xF2};  // elements 0, 0, 1.0, -6
  EXPECT_EQ(double_of(DataType::Float4E2M1, f4.data(), 2), 1.0);
  EXPECT_EQ(double_of(DataType::Float4E2M1, f4.data(), 3), -6.0);
  const std::vector<uint8_t> int2 = {0x00, pack_int2(1, -2, -1, 0)};
  EXPECT_EQ(double_of(DataType::Int2, int2.data(), 4), 1);
  EXPECT_EQ(double_of(DataType::Int2, int2.data(), 5), -2);
  EXPECT_EQ(double_of(DataType::Int2, int2.data(), 6), -1);
  EXPECT_EQ(double_of(DataType::UInt2, int2.data(), 6), 3);
}

TEST(DoubleOf, NonNumericThrows) {
  const uint8_t byte = 0;
  EXPECT_THROW(double_of(DataType::String, &byte, 0), Error);
  EXPECT_THROW(double_of(DataType::Undefined, &byte, 0), Error);
  EXPECT_THROW(double_of(static_cast<DataType>(99), &byte, 0), Error);
}

}  // namespace
}  // namespace onyx
