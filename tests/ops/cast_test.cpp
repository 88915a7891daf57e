#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/scalar.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::make_tensor;
using testing::OneNode;
using testing::values;

Tensor floats(std::vector<int64_t> dims, std::vector<float> v) { return make_tensor<float>(DataType::Float, std::move(dims), v); }

TEST(Cast, FloatToIntTruncatesAndWraps_Opset13) {
  auto out = OneNode("Cast", 13)
                 .input("x", floats({4}, {1.9f, -1.9f, 300.0f, std::nanf("")}))
                 .attr_int("to", static_cast<int64_t>(DataType::Int8))
                 .run();
  const Tensor& y = out.at(0).tensor;
  EXPECT_EQ(y.dtype(), DataType::Int8);
  EXPECT_EQ(values<int8_t>(out.at(0)), (std::vector<int8_t>{1, -1, 44, 0}));  // 300 wraps like an int narrowing
}

// Float to every integer type, for the values C++ leaves undefined: NaN gives 0; +-inf and values out of range
// truncate, saturate to int64 (uint64 for uint64) and wrap to the width; -0 gives 0. Under UBSan (sanitized_ops).
template <class T>
void expect_defined_float_to_int(DataType dt) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x{std::nanf(""), -std::nanf(""), inf, -inf, -0.0f, 1e30f, -1e30f, 2.9f, -2.9f};
  for (DataType from : {DataType::Float, DataType::Double}) {
    Tensor in = from == DataType::Float ? floats({9}, x)
                                        : make_tensor<double>(DataType::Double, {9}, std::vector<double>(x.begin(), x.end()));
    auto out = OneNode("Cast", 13).input("x", in).attr_int("to", static_cast<int64_t>(dt)).run();
    const std::vector<T> got = values<T>(out.at(0));
    const int64_t hi = std::numeric_limits<int64_t>::max(), lo = std::numeric_limits<int64_t>::min();
    const bool u64 = std::is_same_v<T, uint64_t>;
    const std::vector<T> want{0,
                              0,
                              u64 ? std::numeric_limits<T>::max() : static_cast<T>(hi),
                              static_cast<T>(lo),
                              0,
                              u64 ? std::numeric_limits<T>::max() : static_cast<T>(hi),
                              static_cast<T>(lo),
                              static_cast<T>(2),
                              static_cast<T>(-2)};
    EXPECT_EQ(got, want) << dt << " from " << from;
  }
}

TEST(Cast, FloatToIntegerIsDefinedForNaNInfinityAndOutOfRange_Opset13) {
  testing::for_each_integer_type([]<class T>() { expect_defined_float_to_int<T>(dtype_of<T>()); });
}

TEST(Cast, V1TakesTheTypeByName_Opset1) {
  auto out = OneNode("Cast", 1).input("x", make_tensor<int32_t>(DataType::Int32, {2}, {3, -4})).attr_string("to", "DOUBLE").run();
  EXPECT_EQ(out.at(0).tensor.dtype(), DataType::Double);
  EXPECT_EQ(values<double>(out.at(0)), (std::vector<double>{3, -4}));
}

TEST(Cast, StringsParseAndFormat_Opset9) {
  Tensor s = Tensor::strings("x", {6}, {"3.14", "1e-5", "+INF", "-inf", "NaN", " 100 "});
  auto out = OneNode("Cast", 9).input("x", s).attr_int("to", static_cast<int64_t>(DataType::Float)).run();
  auto v = values<float>(out.at(0));
  EXPECT_FLOAT_EQ(v[0], 3.14f);
  EXPECT_FLOAT_EQ(v[1], 1e-5f);
  EXPECT_EQ(v[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[3], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_EQ(v[5], 100.0f);

  auto back = OneNode("Cast", 9)
                  .input("x", floats({6}, {0.9767611f, 1e-5f, 100.0f, -2.5f, std::numeric_limits<float>::infinity(), 1e20f}))
                  .attr_int("to", static_cast<int64_t>(DataType::String))
                  .run();
  EXPECT_EQ(back.at(0).tensor.string_values(),
            (std::vector<std::string>{"0.9767611", "1e-05", "100.0", "-2.5", "INF", "1e+20"}));

  // Integers parse exactly; "100.5" to an integer gives 100.
  Tensor big = Tensor::strings("x", {2}, {"9007199254740993", "100.5"});
  auto i = OneNode("Cast", 9).input("x", big).attr_int("to", static_cast<int64_t>(DataType::Int64)).run();
  EXPECT_EQ(values<int64_t>(i.at(0)), (std::vector<int64_t>{9007199254740993LL, 100}));
}

TEST(Cast, SmallFloatsBoolsAndDoublesFormatShortest_Opset25) {
  Tensor h = Tensor::allocate(DataType::Float16, {2});
  h.mutable_data<Float16>()[0] = Float16(0.1f);
  h.mutable_data<Float16>()[1] = Float16(-65504.0f);
  auto hs = OneNode("Cast", 25).input("x", h).attr_int("to", static_cast<int64_t>(DataType::String)).run();
  EXPECT_EQ(hs.at(0).tensor.string_values(), (std::vector<std::string>{"0.1", "-65500.0"}));
  auto ds = OneNode("Cast", 25)
                .input("x", make_tensor<double>(DataType::Double, {2}, {0.1, 1e16}))
                .attr_int("to", static_cast<int64_t>(DataType::String))
                .run();
  EXPECT_EQ(ds.at(0).tensor.string_values(), (std::vector<std::string>{"0.1", "1e+16"}));
  auto bs = OneNode("Cast", 25)
                .input("x", make_tensor<uint8_t>(DataType::Bool, {2}, {1, 0}))
                .attr_int("to", static_cast<int64_t>(DataType::String))
                .run();
  EXPECT_EQ(bs.at(0).tensor.string_values(), (std::vector<std::string>{"True", "False"}));
}

TEST(Cast, UnparsableStringIsAnError_Opset13) {
  try {
    OneNode("Cast", 13).input("x", Tensor::strings("x", {1}, {"Hello World!"})).attr_int("to", 1).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot parse the string 'Hello World!'"), std::string::npos) << e.what();
  }
}

TEST(Cast, Float8SaturateAttribute_Opset19) {
  auto sat = OneNode("Cast", 19).input("x", floats({2}, {1000.0f, -1000.0f})).attr_int("to", static_cast<int64_t>(DataType::Float8E4M3FN)).run();
  const uint8_t* p = sat.at(0).tensor.data<uint8_t>();
  EXPECT_EQ(f8e4m3fn_to_float(p[0]), 448.0f);
  EXPECT_EQ(f8e4m3fn_to_float(p[1]), -448.0f);
  auto nosat = OneNode("Cast", 19)
                   .input("x", floats({1}, {1000.0f}))
                   .attr_int("to", static_cast<int64_t>(DataType::Float8E4M3FN))
                   .attr_int("saturate", 0)
                   .run();
  EXPECT_TRUE(std::isnan(f8e4m3fn_to_float(nosat.at(0).tensor.data<uint8_t>()[0])));
  // float8 does not exist before Cast-19.
  try {
    OneNode("Cast", 18).input("x", floats({1}, {1})).attr_int("to", static_cast<int64_t>(DataType::Float8E4M3FN)).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot cast to float8e4m3fn"), std::string::npos) << e.what();
  }
}

TEST(Cast, Int4RoundsHalfToEvenWrapsAndPacks_Opset21) {
  auto out = OneNode("Cast", 21).input("x", floats({5}, {2.5f, -9.0f, 100.0f, 3.5f, -1.2f})).attr_int("to", static_cast<int64_t>(DataType::Int4)).run();
  const Tensor& y = out.at(0).tensor;
  ASSERT_EQ(y.bytes().size(), 3u);
  const uint8_t* b = y.data<uint8_t>();
  EXPECT_EQ(unpack_int4(b[0], 0), 2);
  EXPECT_EQ(unpack_int4(b[0], 1), 7);   // -9 keeps its low 4 bits
  EXPECT_EQ(unpack_int4(b[1], 0), 4);   // 100 = 0x64
  EXPECT_EQ(unpack_int4(b[1], 1), 4);
  EXPECT_EQ(unpack_int4(b[2], 0), -1);
  // and back to int8
  auto back = OneNode("Cast", 21).input("x", y).attr_int("to", static_cast<int64_t>(DataType::Int8)).run();
  EXPECT_EQ(values<int8_t>(back.at(0)), (std::vector<int8_t>{2, 7, 4, 4, -1}));
}

TEST(Cast, E8M0RoundModes_Opset24) {
  auto run = [](const char* mode) {
    auto out = OneNode("Cast", 24)
                   .input("x", floats({1}, {3.0f}))
                   .attr_int("to", static_cast<int64_t>(DataType::Float8E8M0))
                   .attr_string("round_mode", mode)
                   .run();
    return f8e8m0_to_float(out.at(0).tensor.data<uint8_t>()[0]);
  };
  EXPECT_EQ(run("up"), 4.0f);
  EXPECT_EQ(run("down"), 2.0f);
  EXPECT_EQ(run("nearest"), 4.0f);
  EXPECT_THROW(run("sideways"), Error);
}

TEST(CastLike, TakesTheSecondInputsType_Opset15) {
  auto out = OneNode("CastLike", 15)
                 .input("x", floats({2}, {1.5f, -2.0f}))
                 .input("like", make_tensor<double>(DataType::Double, {1}, {0}))
                 .run();
  EXPECT_EQ(out.at(0).tensor.dtype(), DataType::Double);
  EXPECT_EQ(values<double>(out.at(0)), (std::vector<double>{1.5, -2.0}));
}

TEST(BitCast, ReinterpretsBitsAndChecksWidths_Opset26) {
  auto out = OneNode("BitCast", 26).input("x", floats({2}, {1.0f, -2.0f})).attr_int("to", static_cast<int64_t>(DataType::Int32)).run();
  EXPECT_EQ(values<int32_t>(out.at(0)), (std::vector<int32_t>{0x3f800000, static_cast<int32_t>(0xc0000000u)}));
  try {
    OneNode("BitCast", 26).input("x", floats({1}, {1})).attr_int("to", static_cast<int64_t>(DataType::Int64)).run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bit widths differ"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
