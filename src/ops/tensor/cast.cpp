// ai.onnx Cast, CastLike and BitCast.
//   Cast 1: `to` is a string naming the type ("FLOAT", "INT32", ...); numeric types and bool.
//   Cast 6: `to` is an int (TensorProto.DataType). Cast 9 adds string. Cast 13 adds bfloat16.
//   Cast 19 adds float8e4m3fn/e4m3fnuz/e5m2/e5m2fnuz and the `saturate` attribute (default 1).
//   Cast 21 adds int4/uint4, 23 float4e2m1, 24 float8e8m0 (with `round_mode` up/down/nearest), 25 int2/uint2.
//   Before 24, +-inf cast to float8e4m3fnuz/e5m2fnuz gives NaN even when saturating; from 24 it gives +-max.
//   CastLike 15, 19, 21, 23, 24, 25: the type of the second input, with the types and attributes of the Cast of
//     the same step.
//   BitCast 26: reinterprets the bytes (little endian) as `to`, which must have the same bit width; every type
//     but string.
// Conversions:
//   - float -> float: round to nearest even; float8 per `saturate` (out of range: +-max when saturating, else
//     NaN or inf for e5m2); float8e8m0 per `round_mode` and `saturate`; float4e2m1 always saturates.
//   - float -> integer: truncation toward zero, through int64 (saturated), then wrapped to the width like an
//     integer narrowing; NaN gives 0.
//   - integer -> integer: two's complement wrap. Anything -> bool: nonzero is true (NaN too).
//   - -> int4/uint4/int2/uint2: floats round half to even; then the low 4 (2) bits are kept, like any integer
//     narrowing (so -9 -> int4 gives 7); NaN gives 0.
//   - string -> number: plain or scientific decimal, "INF"/"+INF"/"-INF"/"NaN" in any case; integers parse
//     exactly, "100.5" to an integer gives 100; "true"/"false" also read as 1/0. Anything else is an error.
//   - number -> string: integers in decimal; floats as the shortest decimal that reads back to the same value of
//     the source type, laid out like Python's repr ("0.5", "1e-05", "100.0"); "NaN", "INF", "-INF";
//     bools "True"/"False".
// Inference: a Cast/CastLike of a shape tensor (symbolic dim values, see InferContext) from int32/int64 to
// int32/int64 keeps its dim values when the static ones fit the target.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/half.hpp"
#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
using Types = std::vector<DataType>;

// One element on its way between types: exact integers or a double.
struct Num {
  enum Kind : uint8_t { Int, UInt, Float } kind = Int;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  static Num of_int(int64_t v) { return Num{Int, v, 0, 0}; }
  static Num of_uint(uint64_t v) { return Num{UInt, 0, v, 0}; }
  static Num of_float(double v) { return Num{Float, 0, 0, v}; }
  double as_double() const { return kind == Int ? static_cast<double>(i) : kind == UInt ? static_cast<double>(u) : f; }
};

struct CastOptions {
  bool saturate = true;
  E8M0Round round = E8M0Round::Up;
  bool fnuz_inf_is_nan = false;  // Cast-19..23: saturating +-inf to the FNUZ types gives NaN (+-max from 24)
};

// double -> integer T: truncate, saturate to int64 (uint64 for uint64), then wrap to T's width. NaN gives 0.
template <class T>
T float_to_int(double d) {
  if (std::isnan(d)) return 0;
  d = std::trunc(d);
  constexpr double k2p63 = 9223372036854775808.0;
  constexpr double k2p64 = 18446744073709551616.0;
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (d >= 0) return d >= k2p64 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(d);
  }
  int64_t v = d >= k2p63 ? std::numeric_limits<int64_t>::max()
              : d < -k2p63 ? std::numeric_limits<int64_t>::min()
                           : static_cast<int64_t>(d);
  return static_cast<T>(v);
}

template <class T>
T num_to_int(const Num& n) {
  switch (n.kind) {
    case Num::Int: return static_cast<T>(n.i);
    case Num::UInt: return static_cast<T>(n.u);
    case Num::Float: return float_to_int<T>(n.f);
  }
  return T{};
}

// Value for a sub-byte integer type (docs/docsgen/source/technical/int4.md): floats round to the nearest integer
// (ties to even), then every value keeps its low bits like any integer narrowing; NaN gives 0. The caller masks.
int64_t num_to_small_int(const Num& n) {
  switch (n.kind) {
    case Num::Int: return n.i;
    case Num::UInt: return static_cast<int64_t>(n.u);
    case Num::Float: return float_to_int<int64_t>(std::isnan(n.f) ? 0.0 : std::nearbyint(n.f));
  }
  return 0;
}

bool num_to_bool(const Num& n) {
  switch (n.kind) {
    case Num::Int: return n.i != 0;
    case Num::UInt: return n.u != 0;
    case Num::Float: return n.f != 0 || std::isnan(n.f);
  }
  return false;
}

// ---- string parsing ----

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Parses one string element; exact integers when `want_int` and the text is an integer.
Num parse_number(const std::string& text, bool want_int) {
  std::string_view s = trim(text);
  if (iequals(s, "inf") || iequals(s, "+inf")) return Num::of_float(std::numeric_limits<double>::infinity());
  if (iequals(s, "-inf")) return Num::of_float(-std::numeric_limits<double>::infinity());
  if (iequals(s, "nan") || iequals(s, "+nan") || iequals(s, "-nan")) return Num::of_float(std::numeric_limits<double>::quiet_NaN());
  if (iequals(s, "true")) return Num::of_int(1);
  if (iequals(s, "false")) return Num::of_int(0);
  std::string_view body = s;
  if (!body.empty() && body.front() == '+') body.remove_prefix(1);
  if (!body.empty() && body.front() != '+') {
    const char* b = body.data();
    const char* e = b + body.size();
    if (want_int) {
      int64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec == std::errc() && r.ptr == e) return Num::of_int(v);
      uint64_t u = 0;
      auto ru = std::from_chars(b, e, u);
      if (ru.ec == std::errc() && ru.ptr == e) return Num::of_uint(u);
    }
    double d = 0;
    auto r = std::from_chars(b, e, d);
    if (r.ptr == e && r.ec == std::errc()) return Num::of_float(d);
    if (r.ptr == e && r.ec == std::errc::result_out_of_range) {
      // from_chars leaves d unchanged on range errors: tell overflow from underflow by the exponent's sign.
      const bool neg = body.front() == '-';
      const auto ex = body.find_first_of("eE");
      const bool tiny = ex != std::string_view::npos && ex + 1 < body.size() && body[ex + 1] == '-';
      d = tiny ? 0.0 : std::numeric_limits<double>::infinity();
      return Num::of_float(neg ? -d : d);
    }
  }
  fail("cannot parse the string '", text, "' as a number");
}

// ---- number formatting ----

// Lays out a shortest scientific form ("-d.ddde+XX") like Python's repr: fixed notation for exponents in
// [-4, 16), scientific otherwise; integral fixed values end in ".0".
std::string python_layout(std::string_view sci) {
  std::string sign;
  if (!sci.empty() && sci.front() == '-') {
    sign = "-";
    sci.remove_prefix(1);
  }
  size_t epos = sci.find('e');
  std::string_view mant = sci.substr(0, epos);
  int exp = 0;
  if (epos != std::string_view::npos) {
    std::string_view es = sci.substr(epos + 1);
    if (!es.empty() && es.front() == '+') es.remove_prefix(1);
    std::from_chars(es.data(), es.data() + es.size(), exp);
  }
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (digits == "0") return sign + "0.0";
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else {
      size_t int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out = digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    }
    return sign + out;
  }
  std::string out = digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return sign + out + eb;
}

std::string special_float_string(double d) {
  if (std::isnan(d)) return "NaN";
  return d > 0 ? "INF" : "-INF";
}

template <class F>
std::string format_shortest(F v) {
  if (!std::isfinite(v)) return special_float_string(v);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  return python_layout(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
}

// Shortest decimal for a value of a small float type: the fewest digits that convert back to the same bits.
template <class T>
std::string format_small_float(T v) {
  const float f = static_cast<float>(v);
  if (!std::isfinite(f)) return special_float_string(f);
  auto bits_of = [](float x) -> uint32_t {
    if constexpr (std::is_same_v<T, Float8E8M0>) return float_to_f8e8m0(x, true, E8M0Round::Nearest);
    else return T(x).bits;
  };
  char buf[64];
  for (int p = 0; p < 12; ++p) {
    auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific, p);
    float back = 0;
    std::from_chars(buf, r.ptr, back);
    if (bits_of(back) == static_cast<uint32_t>(v.bits)) return python_layout(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  return format_shortest(f);
}

// ---- reading and writing elements ----

constexpr uint64_t kChunk = 4096;  // a multiple of 4, so packed bytes never straddle chunks

// Reads elements [begin, begin + count) of x as Nums.
void read_chunk(const Tensor& x, uint64_t begin, uint64_t count, Num* out, bool want_int) {
  const uint8_t* bytes = x.data<uint8_t>();
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t i = begin + k;
      if constexpr (std::is_same_v<T, bool>) {
        out[k] = Num::of_int(bytes[i] != 0);
      } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        out[k] = Num::of_int(x.data<T>()[i]);
      } else if constexpr (std::is_integral_v<T>) {
        out[k] = Num::of_uint(x.data<T>()[i]);
      } else if constexpr (std::is_floating_point_v<T>) {
        out[k] = Num::of_float(x.data<T>()[i]);
      } else if constexpr (is_small_float_v<T>) {
        out[k] = Num::of_float(static_cast<float>(x.data<T>()[i]));
      } else if constexpr (std::is_same_v<T, Int4Tag>) {
        out[k] = Num::of_int(unpack_int4(bytes[i / 2], i));
      } else if constexpr (std::is_same_v<T, UInt4Tag>) {
        out[k] = Num::of_uint(unpack_uint4(bytes[i / 2], i));
      } else if constexpr (std::is_same_v<T, Int2Tag>) {
        out[k] = Num::of_int(unpack_int2(bytes[i / 4], i));
      } else if constexpr (std::is_same_v<T, UInt2Tag>) {
        out[k] = Num::of_uint(unpack_uint2(bytes[i / 4], i));
      } else if constexpr (std::is_same_v<T, Float4E2M1Tag>) {
        uint8_t b = bytes[i / 2];
        out[k] = Num::of_float(f4e2m1_to_float(i % 2 ? static_cast<uint8_t>(b >> 4) : b));
      } else if constexpr (std::is_same_v<T, std::string>) {
        out[k] = parse_number(x.string_values()[i], want_int);
      } else {
        fail("casting from ", x.dtype(), " is not supported");
      }
    }
  });
}

uint8_t to_float8(DataType dt, float f, const CastOptions& o) {
  switch (dt) {
    case D::Float8E4M3FN: return float_to_f8e4m3fn(f, o.saturate);
    case D::Float8E4M3FNUZ: return o.fnuz_inf_is_nan && std::isinf(f) ? 0x80 : float_to_f8e4m3fnuz(f, o.saturate);
    case D::Float8E5M2: return float_to_f8e5m2(f, o.saturate);
    case D::Float8E5M2FNUZ: return o.fnuz_inf_is_nan && std::isinf(f) ? 0x80 : float_to_f8e5m2fnuz(f, o.saturate);
    case D::Float8E8M0: return float_to_f8e8m0(f, o.saturate, o.round);
    default: break;
  }
  fail("not a float8 type: ", dt);
}

// Writes Nums into elements [begin, begin + count) of y (a zero-filled tensor).
void write_chunk(Tensor& y, uint64_t begin, uint64_t count, const Num* in, const CastOptions& o) {
  uint8_t* bytes = y.mutable_data<uint8_t>();
  const DataType dt = y.dtype();
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t i = begin + k;
      const Num& n = in[k];
      if constexpr (std::is_same_v<T, bool>) {
        bytes[i] = num_to_bool(n) ? 1 : 0;
      } else if constexpr (std::is_integral_v<T>) {
        y.mutable_data<T>()[i] = num_to_int<T>(n);
      } else if constexpr (std::is_same_v<T, double>) {
        y.mutable_data<T>()[i] = n.as_double();
      } else if constexpr (std::is_same_v<T, float>) {
        y.mutable_data<T>()[i] = n.kind == Num::Float ? narrow_to_float(n.f) : n.kind == Num::Int ? static_cast<float>(n.i) : static_cast<float>(n.u);
      } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        y.mutable_data<T>()[i] = T(narrow_to_float(n.as_double()));
      } else if constexpr (is_small_float_v<T>) {
        bytes[i] = to_float8(dt, narrow_to_float(n.as_double()), o);
      } else if constexpr (std::is_same_v<T, Int4Tag>) {
        bytes[i / 2] |= static_cast<uint8_t>((num_to_small_int(n) & 0xF) << (4 * (i % 2)));
      } else if constexpr (std::is_same_v<T, UInt4Tag>) {
        bytes[i / 2] |= static_cast<uint8_t>((num_to_small_int(n) & 0xF) << (4 * (i % 2)));
      } else if constexpr (std::is_same_v<T, Int2Tag>) {
        bytes[i / 4] |= static_cast<uint8_t>((num_to_small_int(n) & 0x3) << (2 * (i % 4)));
      } else if constexpr (std::is_same_v<T, UInt2Tag>) {
        bytes[i / 4] |= static_cast<uint8_t>((num_to_small_int(n) & 0x3) << (2 * (i % 4)));
      } else if constexpr (std::is_same_v<T, Float4E2M1Tag>) {
        bytes[i / 2] |= static_cast<uint8_t>((float_to_f4e2m1(narrow_to_float(n.as_double())) & 0xF) << (4 * (i % 2)));
      } else {
        fail("casting to ", dt, " is not supported");
      }
    }
  });
}

// Every element of x as a string.
void write_strings(const Tensor& x, Tensor& y) {
  std::vector<std::string>& out = y.mutable_strings();
  const uint64_t n = x.element_count();
  if (x.dtype() == D::String) {
    out = x.string_values();
    return;
  }
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      const uint8_t* p = x.data<uint8_t>();
      for (uint64_t i = 0; i < n; ++i) out[i] = p[i] ? "True" : "False";
    } else if constexpr (std::is_integral_v<T>) {
      const T* p = x.data<T>();
      for (uint64_t i = 0; i < n; ++i) out[i] = std::to_string(p[i]);
    } else if constexpr (std::is_floating_point_v<T>) {
      const T* p = x.data<T>();
      for (uint64_t i = 0; i < n; ++i) out[i] = format_shortest(p[i]);
    } else if constexpr (is_small_float_v<T>) {
      const T* p = x.data<T>();
      for (uint64_t i = 0; i < n; ++i) out[i] = format_small_float(p[i]);
    } else if constexpr (std::is_same_v<T, Float4E2M1Tag>) {
      const uint8_t* p = x.data<uint8_t>();
      for (uint64_t i = 0; i < n; ++i) out[i] = format_shortest(f4e2m1_to_float(i % 2 ? static_cast<uint8_t>(p[i / 2] >> 4) : p[i / 2]));
    } else if constexpr (std::is_same_v<T, Int4Tag> || std::is_same_v<T, UInt4Tag> || std::is_same_v<T, Int2Tag> ||
                         std::is_same_v<T, UInt2Tag>) {
      std::vector<Num> buf(1);
      for (uint64_t i = 0; i < n; ++i) {
        read_chunk(x, i, 1, buf.data(), true);
        out[i] = buf[0].kind == Num::Int ? std::to_string(buf[0].i) : std::to_string(buf[0].u);
      }
    } else {
      fail("casting from ", x.dtype(), " is not supported");
    }
  });
}

bool is_integer_like(DataType t) {
  switch (t) {
    case D::Int8: case D::Int16: case D::Int32: case D::Int64: case D::UInt8: case D::UInt16: case D::UInt32:
    case D::UInt64: case D::Bool: case D::Int4: case D::UInt4: case D::Int2: case D::UInt2:
      return true;
    default:
      return false;
  }
}

Tensor cast_tensor(const Tensor& x, DataType to, const CastOptions& o) {
  if (x.dtype() == to && to != D::Bool) return x;  // same type: values unchanged (shares the buffer)
  Tensor y = Tensor::allocate(to, x.dims());
  // float16 <-> float32, the casts at the edges of half-precision models, take the vector conversions (the same
  // bits as the element loop below).
  if (x.dtype() == D::Float16 && to == D::Float) {
    kernels::half_to_float_array(x.data<uint16_t>(), y.mutable_data<float>(), x.element_count());
    return y;
  }
  if (x.dtype() == D::Float && to == D::Float16) {
    kernels::float_to_half_array(x.data<float>(), y.mutable_data<uint16_t>(), x.element_count());
    return y;
  }
  // Integer products and quantized values to float32 (the casts after MatMulInteger / ConvInteger): one rounding,
  // as the element loop's exact conversion to double and then to float.
  if (to == D::Float && (x.dtype() == D::Int32 || x.dtype() == D::UInt8 || x.dtype() == D::Int8)) {
    float* py = y.mutable_data<float>();
    const int64_t n = static_cast<int64_t>(x.element_count());
    if (x.dtype() == D::Int32) {
      const int32_t* px = x.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) py[i] = static_cast<float>(px[i]);
    } else if (x.dtype() == D::UInt8) {
      const uint8_t* px = x.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) py[i] = static_cast<float>(px[i]);
    } else {
      const int8_t* px = x.data<int8_t>();
      for (int64_t i = 0; i < n; ++i) py[i] = static_cast<float>(px[i]);
    }
    return y;
  }
  if (to == D::String) {
    write_strings(x, y);
    return y;
  }
  const uint64_t n = x.element_count();
  std::vector<Num> buf(std::min<uint64_t>(n, kChunk));
  const bool want_int = is_integer_like(to);
  for (uint64_t begin = 0; begin < n; begin += kChunk) {
    const uint64_t count = std::min(kChunk, n - begin);
    read_chunk(x, begin, count, buf.data(), want_int);
    write_chunk(y, begin, count, buf.data(), o);
  }
  return y;
}

// ---- versions, attributes, registration ----

// Every type but complex; string from 9.
Types cast_types(int version) {
  Types t = numeric_bool_types(version);
  if (version >= 9) t.push_back(D::String);
  return t;
}

Types bitcast_types() {
  Types t;
  for (DataType d : all_tensor_types())
    if (d != D::String) t.push_back(d);
  return t;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The `to` attribute: a type name (Cast-1) or a TensorProto.DataType number.
DataType read_to(const AttributeView& attrs, const char* op) {
  const Attribute* a = attrs.find("to");
  if (!a) fail(op, " needs the attribute 'to'");
  if (a->type == AttributeType::String) {
    auto dt = dtype_from_name(lower(a->s));
    if (!dt) fail(op, " attribute 'to' names no element type: '", a->s, "'");
    return *dt;
  }
  const int64_t v = attrs.get_int("to");
  if (v < 1 || v > std::numeric_limits<int32_t>::max() || !is_known_dtype(static_cast<int32_t>(v)))
    fail(op, " attribute 'to' is not an element type: ", v);
  return static_cast<DataType>(v);
}

void check_allowed(DataType t, const Types& allowed, const char* op, int version, const char* what) {
  if (std::find(allowed.begin(), allowed.end(), t) != allowed.end()) return;
  fail(op, "(", version, ") cannot cast to ", t, " (", what, ")");
}

CastOptions read_options(const AttributeView& attrs, int version) {
  CastOptions o;
  if (version >= 19) o.saturate = attrs.get_int("saturate", 1) != 0;
  o.fnuz_inf_is_nan = version >= 19 && version < 24;
  if (version >= 24) {
    const std::string m = attrs.get_string("round_mode", "up");
    if (m == "up") o.round = E8M0Round::Up;
    else if (m == "down") o.round = E8M0Round::Down;
    else if (m == "nearest") o.round = E8M0Round::Nearest;
    else fail("round_mode must be \"up\", \"down\" or \"nearest\", got \"", m, "\"");
  }
  return o;
}

// Integer shape values keep their dim values through int32/int64 casts (unless a static one would wrap).
void cast_dim_values(InferContext& ctx, DataType to) {
  const DataType from = ctx.input_dtype(0);
  if (!ctx.has_input_dim_values(0) || (from != DataType::Int64 && from != DataType::Int32)) return;
  if (to != DataType::Int64 && to != DataType::Int32) return;
  if (to == DataType::Int32)
    for (const Dim& d : *ctx.input_dim_values[0])
      if (d.value && (*d.value < std::numeric_limits<int32_t>::min() || *d.value > std::numeric_limits<int32_t>::max())) return;
  ctx.forward_dim_values();
}

void add_cast(Registry& r, int version) {
  const Types types = cast_types(version);
  auto infer = [types, version](InferContext& ctx) {
    DataType to = read_to(ctx.attrs, "Cast");
    check_allowed(to, types, "Cast", version, "the type of attribute 'to'");
    read_options(ctx.attrs, version);
    Shape s = ctx.has_input(0) ? ctx.input_type(0).shape : Shape{};
    ctx.set_output(0, Type::tensor(to, s));
    cast_dim_values(ctx, to);
  };
  auto kernel = [types, version](const KernelInit& init) {
    DataType to = read_to(init.attrs, "Cast");
    check_allowed(to, types, "Cast", version, "the type of attribute 'to'");
    CastOptions o = read_options(init.attrs, version);
    return make_kernel([to, o](KernelContext& ctx) { ctx.set_output(0, cast_tensor(ctx.input(0), to, o)); });
  };
  r.add(OpDef{"", "Cast", version, {{{0}, types}}, infer, kernel});
}

void add_castlike(Registry& r, int version) {
  const Types types = cast_types(version);
  auto infer = [version](InferContext& ctx) {
    read_options(ctx.attrs, version);
    DataType to = ctx.has_input(1) ? ctx.input_dtype(1) : D::Undefined;
    if (to == D::Undefined) return;
    Shape s = ctx.has_input(0) ? ctx.input_type(0).shape : Shape{};
    ctx.set_output(0, Type::tensor(to, s));
    cast_dim_values(ctx, to);
  };
  auto kernel = [version](const KernelInit& init) {
    CastOptions o = read_options(init.attrs, version);
    return make_kernel([o](KernelContext& ctx) { ctx.set_output(0, cast_tensor(ctx.input(0), ctx.input(1).dtype(), o)); });
  };
  r.add(OpDef{"", "CastLike", version, {{{0, 1}, types}}, infer, kernel});
}

DataType bitcast_target(const AttributeView& attrs, DataType from) {
  DataType to = read_to(attrs, "BitCast");
  if (to == D::String) fail("BitCast cannot produce string");
  if (from != D::Undefined && dtype_bits(from) != dtype_bits(to))
    fail("BitCast from ", from, " (", dtype_bits(from), " bits) to ", to, " (", dtype_bits(to), " bits): the bit widths differ");
  return to;
}

}  // namespace

void register_cast(Registry& r) {
  for (int v : {1, 6, 9, 13, 19, 21, 23, 24, 25}) add_cast(r, v);
  for (int v : {15, 19, 21, 23, 24, 25}) add_castlike(r, v);

  r.add(OpDef{"", "BitCast", 26, {{{0}, bitcast_types()}},
              [](InferContext& ctx) {
                DataType to = bitcast_target(ctx.attrs, ctx.has_input(0) ? ctx.input_dtype(0) : D::Undefined);
                Shape s = ctx.has_input(0) ? ctx.input_type(0).shape : Shape{};
                ctx.set_output(0, Type::tensor(to, s));
              },
              [](const KernelInit& init) {
                DataType to = bitcast_target(init.attrs, D::Undefined);
                return make_kernel([to](KernelContext& ctx) {
                  const Tensor& x = ctx.input(0);
                  if (x.dtype() == D::String) ctx.error("BitCast cannot take a string tensor");
                  if (dtype_bits(x.dtype()) != dtype_bits(to))
                    ctx.error(cat("BitCast from ", x.dtype(), " to ", to, ": the bit widths differ"));
                  Tensor y = Tensor::allocate(to, x.dims());
                  std::string_view src = x.bytes();
                  if (src.size() != y.bytes().size()) ctx.error("BitCast: input and output byte sizes differ");
                  if (!src.empty()) std::memcpy(y.mutable_data<char>(), src.data(), src.size());
                  if (to == D::Bool) {  // keep bool bytes 0 or 1
                    uint8_t* p = y.mutable_data<uint8_t>();
                    for (size_t i = 0; i < src.size(); ++i) p[i] = p[i] != 0;
                  }
                  ctx.set_output(0, std::move(y));
                });
              }});
  r.set_gradient("", "Cast", grad::same_elements);
}

}  // namespace onyx::ops
