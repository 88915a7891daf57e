// C++ element types for every ONNX tensor type, and dispatch from a DataType to code templated on them.
// The small float types store their bit pattern and convert through the exact conversions of dtype.hpp.
#pragma once
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "base/error.hpp"
#include "base/dtype.hpp"

namespace onyx {

#define ONYX_SMALL_FLOAT(Name, Bits, to_f, from_f)                          \
  struct Name {                                                             \
    Bits bits = 0;                                                          \
    Name() = default;                                                       \
    explicit Name(float f) : bits(from_f(f)) {}                             \
    static Name from_bits(Bits b) {                                         \
      Name n;                                                               \
      n.bits = b;                                                           \
      return n;                                                             \
    }                                                                       \
    operator float() const { return to_f(bits); }                           \
  };

inline uint8_t f8e4m3fn_sat(float f) { return float_to_f8e4m3fn(f, true); }
inline uint8_t f8e4m3fnuz_sat(float f) { return float_to_f8e4m3fnuz(f, true); }
inline uint8_t f8e5m2_sat(float f) { return float_to_f8e5m2(f, true); }
inline uint8_t f8e5m2fnuz_sat(float f) { return float_to_f8e5m2fnuz(f, true); }
inline uint8_t f8e8m0_default(float f) { return float_to_f8e8m0(f); }

ONYX_SMALL_FLOAT(Float16, uint16_t, half_to_float, float_to_half)
ONYX_SMALL_FLOAT(BFloat16, uint16_t, bfloat16_to_float, float_to_bfloat16)
ONYX_SMALL_FLOAT(Float8E4M3FN, uint8_t, f8e4m3fn_to_float, f8e4m3fn_sat)
ONYX_SMALL_FLOAT(Float8E4M3FNUZ, uint8_t, f8e4m3fnuz_to_float, f8e4m3fnuz_sat)
ONYX_SMALL_FLOAT(Float8E5M2, uint8_t, f8e5m2_to_float, f8e5m2_sat)
ONYX_SMALL_FLOAT(Float8E5M2FNUZ, uint8_t, f8e5m2fnuz_to_float, f8e5m2fnuz_sat)
ONYX_SMALL_FLOAT(Float8E8M0, uint8_t, f8e8m0_to_float, f8e8m0_default)
#undef ONYX_SMALL_FLOAT

// Packed sub-byte types are not addressable per element; kernels see them through these tags and read them with
// unpack_* from dtype.hpp.
struct Int4Tag {};
struct UInt4Tag {};
struct Int2Tag {};
struct UInt2Tag {};
struct Float4E2M1Tag {};

template <class T>
constexpr bool is_small_float_v =
    std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16> || std::is_same_v<T, Float8E4M3FN> ||
    std::is_same_v<T, Float8E4M3FNUZ> || std::is_same_v<T, Float8E5M2> || std::is_same_v<T, Float8E5M2FNUZ> ||
    std::is_same_v<T, Float8E8M0>;
template <class T>
constexpr bool is_float_like_v = std::is_floating_point_v<T> || is_small_float_v<T>;

// ---- Conversions through double: the one rule of every kernel that computes in double ----

// An element as double (the small float types through float: exact; (u)int64 beyond 2^53 rounds).
template <class T>
double to_double(T v) {
  if constexpr (is_small_float_v<T>) return static_cast<float>(v);
  else return static_cast<double>(v);
}

// double -> float, where a value beyond float's range gives +-inf (a C++ conversion of it is undefined).
inline float narrow_to_float(double d) {
  constexpr double kLimit = 3.4028235677973366e38;  // 2^128 - 2^103: values this large round to infinity
  if (d >= kLimit) return std::numeric_limits<float>::infinity();
  if (d <= -kLimit) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

// double -> T. Float types round once (the small ones through float, saturating or not as their conversion from
// float does); bool is d != 0; integers truncate toward zero and saturate at T's range, NaN giving 0.
template <class T>
T from_double(double d) {
  if constexpr (std::is_same_v<T, double>) {
    return d;
  } else if constexpr (std::is_same_v<T, float>) {
    return narrow_to_float(d);
  } else if constexpr (is_small_float_v<T>) {
    return T(narrow_to_float(d));
  } else if constexpr (std::is_same_v<T, bool>) {
    return d != 0;
  } else {
    static_assert(std::is_integral_v<T>, "from_double: an element type");
    if (std::isnan(d)) return T{0};
    d = std::trunc(d);
    if (d <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(d);
  }
}

template <class T>
constexpr DataType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DataType::Float;
  else if constexpr (std::is_same_v<T, double>) return DataType::Double;
  else if constexpr (std::is_same_v<T, int8_t>) return DataType::Int8;
  else if constexpr (std::is_same_v<T, int16_t>) return DataType::Int16;
  else if constexpr (std::is_same_v<T, int32_t>) return DataType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>) return DataType::Int64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DataType::UInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DataType::UInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DataType::UInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DataType::UInt64;
  else if constexpr (std::is_same_v<T, bool>) return DataType::Bool;
  else if constexpr (std::is_same_v<T, std::string>) return DataType::String;
  else if constexpr (std::is_same_v<T, Float16>) return DataType::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DataType::BFloat16;
  else if constexpr (std::is_same_v<T, Float8E4M3FN>) return DataType::Float8E4M3FN;
  else if constexpr (std::is_same_v<T, Float8E4M3FNUZ>) return DataType::Float8E4M3FNUZ;
  else if constexpr (std::is_same_v<T, Float8E5M2>) return DataType::Float8E5M2;
  else if constexpr (std::is_same_v<T, Float8E5M2FNUZ>) return DataType::Float8E5M2FNUZ;
  else if constexpr (std::is_same_v<T, Float8E8M0>) return DataType::Float8E8M0;
  else if constexpr (std::is_same_v<T, std::complex<float>>) return DataType::Complex64;
  else if constexpr (std::is_same_v<T, std::complex<double>>) return DataType::Complex128;
  else if constexpr (std::is_same_v<T, Int4Tag>) return DataType::Int4;
  else if constexpr (std::is_same_v<T, UInt4Tag>) return DataType::UInt4;
  else if constexpr (std::is_same_v<T, Int2Tag>) return DataType::Int2;
  else if constexpr (std::is_same_v<T, UInt2Tag>) return DataType::UInt2;
  else if constexpr (std::is_same_v<T, Float4E2M1Tag>) return DataType::Float4E2M1;
  else static_assert(sizeof(T) == 0, "not an element type");
}

// Calls f(T{}) with T the C++ type of `t` (tags for packed types). Throws for Undefined/unknown types.
template <class F>
decltype(auto) visit_dtype(DataType t, F&& f) {
  switch (t) {
    case DataType::Float: return f(float{});
    case DataType::Double: return f(double{});
    case DataType::Int8: return f(int8_t{});
    case DataType::Int16: return f(int16_t{});
    case DataType::Int32: return f(int32_t{});
    case DataType::Int64: return f(int64_t{});
    case DataType::UInt8: return f(uint8_t{});
    case DataType::UInt16: return f(uint16_t{});
    case DataType::UInt32: return f(uint32_t{});
    case DataType::UInt64: return f(uint64_t{});
    case DataType::Bool: return f(bool{});
    case DataType::String: return f(std::string{});
    case DataType::Float16: return f(Float16{});
    case DataType::BFloat16: return f(BFloat16{});
    case DataType::Float8E4M3FN: return f(Float8E4M3FN{});
    case DataType::Float8E4M3FNUZ: return f(Float8E4M3FNUZ{});
    case DataType::Float8E5M2: return f(Float8E5M2{});
    case DataType::Float8E5M2FNUZ: return f(Float8E5M2FNUZ{});
    case DataType::Float8E8M0: return f(Float8E8M0{});
    case DataType::Complex64: return f(std::complex<float>{});
    case DataType::Complex128: return f(std::complex<double>{});
    case DataType::Int4: return f(Int4Tag{});
    case DataType::UInt4: return f(UInt4Tag{});
    case DataType::Int2: return f(Int2Tag{});
    case DataType::UInt2: return f(UInt2Tag{});
    case DataType::Float4E2M1: return f(Float4E2M1Tag{});
    case DataType::Undefined: break;
  }
  fail("no element type for ", t);
}

}  // namespace onyx
