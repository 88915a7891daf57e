#include "base/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <ostream>
#include <string>

#include "base/error.hpp"

namespace onyx {

namespace {

constexpr int32_t kLastDtype = static_cast<int32_t>(DataType::Int2);

// Indexed by the enum value.
constexpr std::array<std::string_view, kLastDtype + 1> kNames = {
    "undefined",    "float",          "uint8",       "int8",           "uint16",
    "int16",        "int32",          "int64",       "string",         "bool",
    "float16",      "double",         "uint32",      "uint64",         "complex64",
    "complex128",   "bfloat16",       "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
    "float8e5m2fnuz", "uint4",        "int4",        "float4e2m1",     "float8e8m0",
    "uint2",        "int2",
};

// ---- generic small-float encoding ----

// A binary float format without sign: `man_bits` stored mantissa bits, exponent field 0 is
// subnormal with exponent 1 - bias, and `max_code` is the largest finite magnitude code.
struct Format {
  int man_bits;
  int bias;
  uint32_t max_code;
};

// Magnitude code of finite, nonzero |f| rounded to nearest even in format `fmt`, ignoring the
// format's range at the top; `overflow` says the rounded value exceeds max_code.
uint32_t encode_magnitude(float f, const Format& fmt, bool& overflow) {
  const uint32_t bits = std::bit_cast<uint32_t>(f) & 0x7FFFFFFFu;
  const uint32_t fexp = bits >> 23;
  const uint32_t fman = bits & 0x7FFFFFu;
  // |f| = sig * 2^e2 exactly.
  const uint64_t sig = fexp ? (fman | 0x800000u) : fman;
  const int e2 = fexp ? static_cast<int>(fexp) - 150 : -149;
  const int top = e2 + static_cast<int>(std::bit_width(sig)) - 1;  // floor(log2 |f|)
  const int min_exp = 1 - fmt.bias;
  // The result is q * 2^qe with q an integer of at most man_bits + 1 bits.
  int qe = (top > min_exp ? top : min_exp) - fmt.man_bits;
  uint64_t q;
  if (e2 >= qe) {
    q = sig << (e2 - qe);  // exact: |f| has no more bits than the target keeps
  } else {
    const int shift = qe - e2;
    if (shift > 40) {
      q = 0;  // sig < 2^24, so |f| is far below half a quantum
    } else {
      q = sig >> shift;
      const uint64_t rest = sig & ((uint64_t{1} << shift) - 1);
      const uint64_t half = uint64_t{1} << (shift - 1);
      if (rest > half || (rest == half && (q & 1))) ++q;
    }
  }
  const uint64_t one = uint64_t{1} << fmt.man_bits;
  if (q >= 2 * one) {  // rounding carried into the next binade
    q >>= 1;
    ++qe;
  }
  uint64_t code;
  if (q < one) {
    code = q;  // subnormal (or zero); qe is min_exp - man_bits here
  } else {
    const int64_t exp_field = int64_t{qe} + fmt.man_bits + fmt.bias;
    code = (static_cast<uint64_t>(exp_field) << fmt.man_bits) | (q - one);
  }
  overflow = code > fmt.max_code;
  return overflow ? fmt.max_code : static_cast<uint32_t>(code);
}

// Value of a finite magnitude code (no sign) in format `fmt`.
float decode_magnitude(uint32_t code, const Format& fmt) {
  const uint32_t exp_field = code >> fmt.man_bits;
  const uint32_t man = code & ((1u << fmt.man_bits) - 1);
  if (exp_field == 0) return std::ldexp(static_cast<float>(man), 1 - fmt.bias - fmt.man_bits);
  return std::ldexp(static_cast<float>(man | (1u << fmt.man_bits)),
                    static_cast<int>(exp_field) - fmt.bias - fmt.man_bits);
}

constexpr Format kHalf{10, 15, 0x7BFF};
constexpr Format kE4M3FN{3, 7, 0x7E};  // 0x7F is NaN
constexpr Format kE4M3FNUZ{3, 8, 0x7F};
constexpr Format kE5M2{2, 15, 0x7B};  // 0x7C is inf
constexpr Format kE5M2FNUZ{2, 16, 0x7F};
constexpr Format kE2M1{1, 1, 0x7};

bool sign_of(float f) { return std::signbit(f); }

// The four float8 types differ only in format, in what overflow and NaN give, and in whether
// negative zero exists.
struct F8Kind {
  Format fmt;
  bool uz;              // single NaN 0x80, no negative zero
  uint8_t nosat_over;   // magnitude code for overflow/inf when not saturating (uz: unused)
};

uint8_t float_to_f8(float f, bool saturate, const F8Kind& k) {
  const uint8_t sign = sign_of(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return k.uz ? 0x80 : static_cast<uint8_t>(sign | 0x7F);
  if (std::isinf(f)) {
    if (saturate) return static_cast<uint8_t>(sign | k.fmt.max_code);
    return k.uz ? 0x80 : static_cast<uint8_t>(sign | k.nosat_over);
  }
  if (f == 0.0f) return k.uz ? 0x00 : sign;
  bool overflow = false;
  const uint32_t code = encode_magnitude(f, k.fmt, overflow);
  if (overflow && !saturate) return k.uz ? 0x80 : static_cast<uint8_t>(sign | k.nosat_over);
  if (code == 0 && k.uz) return 0x00;  // underflow to zero: the UZ types have only +0
  return static_cast<uint8_t>(sign | code);
}

constexpr F8Kind kKindE4M3FN{kE4M3FN, false, 0x7F};
constexpr F8Kind kKindE4M3FNUZ{kE4M3FNUZ, true, 0};
constexpr F8Kind kKindE5M2{kE5M2, false, 0x7C};
constexpr F8Kind kKindE5M2FNUZ{kE5M2FNUZ, true, 0};

float with_sign(bool negative, float magnitude) { return negative ? -magnitude : magnitude; }

// Little-endian load of `n` bytes, independent of host byte order.
uint64_t load_le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

int64_t sign_extend(uint64_t v, int bits) {
  const uint64_t m = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((v ^ m) - m);
}

}  // namespace

bool is_known_dtype(int32_t v) { return v >= 0 && v <= kLastDtype; }

std::string_view dtype_name(DataType t) {
  const auto v = static_cast<int32_t>(t);
  if (is_known_dtype(v)) return kNames[static_cast<size_t>(v)];
  // Unknown values are rare; intern their names so the returned views stay valid forever.
  static std::mutex mu;
  static std::map<int32_t, std::string> unknown;
  std::lock_guard<std::mutex> lock(mu);
  auto it = unknown.find(v);
  if (it == unknown.end()) it = unknown.emplace(v, cat("dtype(", v, ")")).first;
  return it->second;
}

std::optional<DataType> dtype_from_name(std::string_view name) {
  for (int32_t v = 1; v <= kLastDtype; ++v) {
    if (kNames[static_cast<size_t>(v)] == name) return static_cast<DataType>(v);
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, DataType t) { return os << dtype_name(t); }

int dtype_bits(DataType t) {
  switch (t) {
    case DataType::UInt2:
    case DataType::Int2:
      return 2;
    case DataType::UInt4:
    case DataType::Int4:
    case DataType::Float4E2M1:
      return 4;
    case DataType::UInt8:
    case DataType::Int8:
    case DataType::Bool:
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::Float8E8M0:
      return 8;
    case DataType::UInt16:
    case DataType::Int16:
    case DataType::Float16:
    case DataType::BFloat16:
      return 16;
    case DataType::Float:
    case DataType::Int32:
    case DataType::UInt32:
      return 32;
    case DataType::Int64:
    case DataType::UInt64:
    case DataType::Double:
    case DataType::Complex64:
      return 64;
    case DataType::Complex128:
      return 128;
    case DataType::Undefined:
    case DataType::String:
      return 0;
  }
  return 0;  // value outside the enum
}

std::optional<uint64_t> raw_byte_size(DataType t, uint64_t element_count) {
  const int bits = dtype_bits(t);
  if (bits == 0) return std::nullopt;
  if (bits < 8) {
    // Cannot overflow: the result is smaller than element_count.
    const uint64_t per_byte = static_cast<uint64_t>(8 / bits);
    return element_count / per_byte + (element_count % per_byte != 0 ? 1 : 0);
  }
  const uint64_t bytes = static_cast<uint64_t>(bits / 8);
  if (element_count > std::numeric_limits<uint64_t>::max() / bytes) return std::nullopt;
  return element_count * bytes;
}

StorageField storage_field(DataType t) {
  switch (t) {
    case DataType::Float:
    case DataType::Complex64:
      return StorageField::FloatData;
    case DataType::UInt8:
    case DataType::Int8:
    case DataType::UInt16:
    case DataType::Int16:
    case DataType::Int32:
    case DataType::Bool:
    case DataType::Float16:
    case DataType::BFloat16:
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::Float8E8M0:
    case DataType::UInt4:
    case DataType::Int4:
    case DataType::Float4E2M1:
    case DataType::UInt2:
    case DataType::Int2:
      return StorageField::Int32Data;
    case DataType::String:
      return StorageField::StringData;
    case DataType::Int64:
      return StorageField::Int64Data;
    case DataType::Double:
    case DataType::Complex128:
      return StorageField::DoubleData;
    case DataType::UInt32:
    case DataType::UInt64:
      return StorageField::Uint64Data;
    case DataType::Undefined:
      return StorageField::None;
  }
  return StorageField::None;
}

// ---- half ----

uint16_t float_to_half(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if (std::isnan(f)) {
    // Keep the top payload bits; force a nonzero mantissa so the result is not inf.
    uint16_t payload = static_cast<uint16_t>((bits >> 13) & 0x3FFu);
    if (payload == 0) payload = 0x200;
    return static_cast<uint16_t>(sign | 0x7C00u | payload);
  }
  if (std::isinf(f)) return static_cast<uint16_t>(sign | 0x7C00u);
  if (f == 0.0f) return sign;
  bool overflow = false;
  const uint32_t code = encode_magnitude(f, kHalf, overflow);
  return static_cast<uint16_t>(sign | (overflow ? 0x7C00u : code));
}

float half_to_float(uint16_t h) {
  const bool neg = (h & 0x8000u) != 0;
  const uint32_t mag = h & 0x7FFFu;
  if ((mag & 0x7C00u) == 0x7C00u) {
    // inf or NaN: move exponent and payload into place bit-exactly.
    const uint32_t bits = (neg ? 0x80000000u : 0u) | 0x7F800000u | ((mag & 0x3FFu) << 13);
    return std::bit_cast<float>(bits);
  }
  return with_sign(neg, decode_magnitude(mag, kHalf));
}

// ---- bfloat16 ----

uint16_t float_to_bfloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) {
    // Truncation could clear every payload bit and give inf; set the quiet bit.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // Adding 0x7FFF plus the kept LSB rounds ties to even; a carry into the exponent is the
  // correct next binade, and overflow lands exactly on inf.
  const uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// ---- float8 ----

uint8_t float_to_f8e4m3fn(float f, bool saturate) { return float_to_f8(f, saturate, kKindE4M3FN); }

float f8e4m3fn_to_float(uint8_t v) {
  const bool neg = (v & 0x80) != 0;
  if ((v & 0x7F) == 0x7F) return with_sign(neg, std::numeric_limits<float>::quiet_NaN());
  return with_sign(neg, decode_magnitude(v & 0x7Fu, kE4M3FN));
}

uint8_t float_to_f8e4m3fnuz(float f, bool saturate) {
  return float_to_f8(f, saturate, kKindE4M3FNUZ);
}

float f8e4m3fnuz_to_float(uint8_t v) {
  if (v == 0x80) return std::numeric_limits<float>::quiet_NaN();
  return with_sign((v & 0x80) != 0, decode_magnitude(v & 0x7Fu, kE4M3FNUZ));
}

uint8_t float_to_f8e5m2(float f, bool saturate) { return float_to_f8(f, saturate, kKindE5M2); }

float f8e5m2_to_float(uint8_t v) {
  const bool neg = (v & 0x80) != 0;
  const uint32_t mag = v & 0x7Fu;
  if (mag == 0x7C) return with_sign(neg, std::numeric_limits<float>::infinity());
  if (mag > 0x7C) return with_sign(neg, std::numeric_limits<float>::quiet_NaN());
  return with_sign(neg, decode_magnitude(mag, kE5M2));
}

uint8_t float_to_f8e5m2fnuz(float f, bool saturate) {
  return float_to_f8(f, saturate, kKindE5M2FNUZ);
}

float f8e5m2fnuz_to_float(uint8_t v) {
  if (v == 0x80) return std::numeric_limits<float>::quiet_NaN();
  return with_sign((v & 0x80) != 0, decode_magnitude(v & 0x7Fu, kE5M2FNUZ));
}

// ---- float8e8m0 ----

uint8_t float_to_f8e8m0(float f, bool saturate, E8M0Round mode) {
  constexpr uint8_t kNaN = 0xFF, kMax = 0xFE, kMin = 0x00;
  if (std::isnan(f)) return kNaN;
  if (std::isinf(f)) return saturate ? kMax : kNaN;
  if (f == 0.0f) return saturate ? kMin : kNaN;
  const uint32_t bits = std::bit_cast<uint32_t>(f) & 0x7FFFFFFFu;
  const uint32_t fexp = bits >> 23;
  const uint32_t fman = bits & 0x7FFFFFu;
  // |f| = (1 + frac) * 2^e with frac in [0, 1); frac holds 23 (normal) or more bits.
  int e;
  uint64_t frac;   // numerator of frac over 2^frac_bits
  int frac_bits;
  if (fexp != 0) {
    e = static_cast<int>(fexp) - 127;
    frac = fman;
    frac_bits = 23;
  } else {
    const int width = static_cast<int>(std::bit_width(fman));  // fman != 0 here
    e = -150 + width;
    frac = fman & ((1u << (width - 1)) - 1);
    frac_bits = width - 1;
  }
  int r = e;
  if (frac != 0) {
    switch (mode) {
      case E8M0Round::Up:
        r = e + 1;
        break;
      case E8M0Round::Down:
        break;
      case E8M0Round::Nearest:
        // Midpoint of 2^e and 2^(e+1) is 1.5 * 2^e; ties go up.
        if (frac_bits > 0 && frac >= (uint64_t{1} << (frac_bits - 1))) r = e + 1;
        break;
    }
  }
  if (r > 127) return saturate ? kMax : kNaN;
  if (r < -127) return saturate ? kMin : kNaN;
  return static_cast<uint8_t>(r + 127);
}

float f8e8m0_to_float(uint8_t v) {
  if (v == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(v) - 127);
}

// ---- float4e2m1 ----

uint8_t float_to_f4e2m1(float f) {
  if (std::isnan(f)) return 0x7;
  const uint8_t sign = sign_of(f) ? 0x8 : 0x0;
  if (std::isinf(f)) return static_cast<uint8_t>(sign | 0x7);
  if (f == 0.0f) return sign;
  bool overflow = false;
  const uint32_t code = encode_magnitude(f, kE2M1, overflow);  // clamps on overflow
  return static_cast<uint8_t>(sign | code);
}

float f4e2m1_to_float(uint8_t v) {
  return with_sign((v & 0x8) != 0, decode_magnitude(v & 0x7u, kE2M1));
}

// ---- packed sub-byte integers ----

int8_t unpack_int4(uint8_t byte, uint64_t index) {
  return static_cast<int8_t>(sign_extend(unpack_uint4(byte, index), 4));
}

uint8_t unpack_uint4(uint8_t byte, uint64_t index) {
  return static_cast<uint8_t>((byte >> ((index & 1) * 4)) & 0x0F);
}

int8_t unpack_int2(uint8_t byte, uint64_t index) {
  return static_cast<int8_t>(sign_extend(unpack_uint2(byte, index), 2));
}

uint8_t unpack_uint2(uint8_t byte, uint64_t index) {
  return static_cast<uint8_t>((byte >> ((index & 3) * 2)) & 0x03);
}

uint8_t pack_int4(int8_t first, int8_t second) {
  return pack_uint4(static_cast<uint8_t>(first), static_cast<uint8_t>(second));
}

uint8_t pack_uint4(uint8_t first, uint8_t second) {
  return static_cast<uint8_t>((first & 0x0F) | ((second & 0x0F) << 4));
}

uint8_t pack_int2(int8_t e0, int8_t e1, int8_t e2, int8_t e3) {
  return pack_uint2(static_cast<uint8_t>(e0), static_cast<uint8_t>(e1), static_cast<uint8_t>(e2),
                    static_cast<uint8_t>(e3));
}

uint8_t pack_uint2(uint8_t e0, uint8_t e1, uint8_t e2, uint8_t e3) {
  return static_cast<uint8_t>((e0 & 0x3) | ((e1 & 0x3) << 2) | ((e2 & 0x3) << 4) |
                              ((e3 & 0x3) << 6));
}

// ---- reading raw_data ----

double double_of(DataType t, const void* raw_data, uint64_t index) {
  const auto* p = static_cast<const unsigned char*>(raw_data);
  const int bits = dtype_bits(t);
  if (bits == 0) fail("double_of: element type ", t, " has no numeric raw form");
  if (bits < 8) {
    const uint8_t byte = p[index / static_cast<uint64_t>(8 / bits)];
    switch (t) {
      case DataType::UInt4:
        return unpack_uint4(byte, index);
      case DataType::Int4:
        return unpack_int4(byte, index);
      case DataType::Float4E2M1:
        return f4e2m1_to_float(unpack_uint4(byte, index));
      case DataType::UInt2:
        return unpack_uint2(byte, index);
      case DataType::Int2:
        return unpack_int2(byte, index);
      default:
        break;
    }
    fail("double_of: unhandled sub-byte type ", t);
  }
  const int bytes = bits / 8;
  // Complex types: the real part is the first half of the element.
  const int load = (t == DataType::Complex64 || t == DataType::Complex128) ? bytes / 2 : bytes;
  const uint64_t v = load_le(p + index * static_cast<uint64_t>(bytes), load);
  switch (t) {
    case DataType::Float:
    case DataType::Complex64:
      return std::bit_cast<float>(static_cast<uint32_t>(v));
    case DataType::Double:
    case DataType::Complex128:
      return std::bit_cast<double>(v);
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32:
      return static_cast<double>(v);
    case DataType::UInt64:
      return static_cast<double>(v);
    case DataType::Int8:
      return static_cast<double>(sign_extend(v, 8));
    case DataType::Int16:
      return static_cast<double>(sign_extend(v, 16));
    case DataType::Int32:
      return static_cast<double>(sign_extend(v, 32));
    case DataType::Int64:
      return static_cast<double>(static_cast<int64_t>(v));
    case DataType::Bool:
      return v != 0 ? 1.0 : 0.0;
    case DataType::Float16:
      return half_to_float(static_cast<uint16_t>(v));
    case DataType::BFloat16:
      return bfloat16_to_float(static_cast<uint16_t>(v));
    case DataType::Float8E4M3FN:
      return f8e4m3fn_to_float(static_cast<uint8_t>(v));
    case DataType::Float8E4M3FNUZ:
      return f8e4m3fnuz_to_float(static_cast<uint8_t>(v));
    case DataType::Float8E5M2:
      return f8e5m2_to_float(static_cast<uint8_t>(v));
    case DataType::Float8E5M2FNUZ:
      return f8e5m2fnuz_to_float(static_cast<uint8_t>(v));
    case DataType::Float8E8M0:
      return f8e8m0_to_float(static_cast<uint8_t>(v));
    default:
      break;
  }
  fail("double_of: unhandled element type ", t);
}

}  // namespace onyx
