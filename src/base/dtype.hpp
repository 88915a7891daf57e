// Element types of ONNX tensors: the TensorProto.DataType numbering, names, storage sizes,
// and bit-exact conversions between float and the small float formats ONNX defines.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>

namespace onyx {

// Values are the TensorProto.DataType numbers, so a proto's int32 converts by static_cast.
enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
};

// True when v is one of the enumerators above, Undefined (0) included.
bool is_known_dtype(int32_t v);

// ONNX's lowercase name as used in type strings ("float", "int4", "float8e4m3fn", ...);
// "undefined" for Undefined and "dtype(N)" for a value outside the enum.
std::string_view dtype_name(DataType t);

// Inverse of dtype_name for the 26 element types; "undefined" and anything else give nullopt.
std::optional<DataType> dtype_from_name(std::string_view name);

// Writes dtype_name(t), so DataType works with onyx::cat.
std::ostream& operator<<(std::ostream& os, DataType t);

// Bits one element takes in raw_data: 2 or 4 for packed sub-byte types, 8 for bool and
// float8, 128 for complex128; 0 for String, Undefined and unknown values.
int dtype_bits(DataType t);

// Bytes of raw_data holding `element_count` elements; sub-byte types are packed and the last
// byte padded. nullopt for types with no raw form (String, Undefined, unknown) or on overflow.
std::optional<uint64_t> raw_byte_size(DataType t, uint64_t element_count);

// The typed TensorProto field that holds a type's elements when raw_data is not used.
enum class StorageField { FloatData, Int32Data, StringData, Int64Data, DoubleData, Uint64Data, None };

// Per onnx.proto: float_data for float and complex64 (two floats per element); int32_data for
// the integer types up to 32 bits, bool, float16/bfloat16 and float8 (bit patterns, one element
// per value), and for 4-bit types (one packed byte = two elements per value) and 2-bit types
// (one packed byte = four elements per value); string_data; int64_data for int64; double_data
// for double and complex128; uint64_data for uint32 and uint64. None for Undefined/unknown.
StorageField storage_field(DataType t);

// ---- IEEE binary16 and bfloat16 ----
// Round to nearest, ties to even; overflow gives +-inf; NaN stays NaN (payload kept where it fits).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

// ---- float8 (docs/Operators.md, Cast) ----
// Round to nearest, ties to even. saturate=true: finite values beyond the largest finite value
// and +-inf become +-max (all four types). saturate=false: overflow gives NaN, except E5M2 which
// gives +-inf. The FNUZ types have one NaN (0x80) and no -0 (-0 and negative underflow give 0).
uint8_t float_to_f8e4m3fn(float f, bool saturate = true);
float f8e4m3fn_to_float(uint8_t v);
uint8_t float_to_f8e4m3fnuz(float f, bool saturate = true);
float f8e4m3fnuz_to_float(uint8_t v);
uint8_t float_to_f8e5m2(float f, bool saturate = true);
float f8e5m2_to_float(uint8_t v);
uint8_t float_to_f8e5m2fnuz(float f, bool saturate = true);
float f8e5m2fnuz_to_float(uint8_t v);

// ---- float8e8m0: unsigned power of two 2^(v-127), 0xFF is NaN, no zero ----
// Cast's round_mode: Up = to the next power of two away from zero (the default), Down = towards
// zero, Nearest = nearest power of two with the midpoint 1.5*2^e rounding up.
enum class E8M0Round { Up, Down, Nearest };
// saturate=true: inf, too large and too small (0 included) clamp to 2^127 / 2^-127;
// saturate=false: they give NaN. NaN gives NaN. The spec leaves negatives unspecified; the
// magnitude is used.
uint8_t float_to_f8e8m0(float f, bool saturate = true, E8M0Round mode = E8M0Round::Up);
float f8e8m0_to_float(uint8_t v);

// ---- float4e2m1: code in the low nibble, values +-{0, 0.5, 1, 1.5, 2, 3, 4, 6} ----
// Round to nearest even, always saturating: +-inf and beyond +-6 give +-6; NaN gives +6
// (docs/docsgen technical/float4.md).
uint8_t float_to_f4e2m1(float f);
float f4e2m1_to_float(uint8_t v);  // uses the low nibble only

// ---- packed sub-byte integers ----
// Element i sits in byte i/2 (4-bit) or i/4 (2-bit), starting from the least significant bits.
// `index` may be the element's index in the tensor: only index % 2 (resp. % 4) is used.
int8_t unpack_int4(uint8_t byte, uint64_t index);
uint8_t unpack_uint4(uint8_t byte, uint64_t index);
int8_t unpack_int2(uint8_t byte, uint64_t index);
uint8_t unpack_uint2(uint8_t byte, uint64_t index);
// Pack consecutive elements into one byte, first element in the low bits. Bits beyond the
// element width are dropped, so two's-complement negatives pack correctly.
uint8_t pack_int4(int8_t first, int8_t second);
uint8_t pack_uint4(uint8_t first, uint8_t second);
uint8_t pack_int2(int8_t e0, int8_t e1, int8_t e2, int8_t e3);
uint8_t pack_uint2(uint8_t e0, uint8_t e1, uint8_t e2, uint8_t e3);

// Element `index` of a little-endian raw_data buffer of type t, as double (complex: the real
// part; bool: 0 or 1). For printing and tests; the caller guarantees the buffer is big enough.
// Throws onyx::Error for String, Undefined and unknown types.
double double_of(DataType t, const void* raw_data, uint64_t index);

}  // namespace onyx
