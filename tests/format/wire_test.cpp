#include "format/wire.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace onyx::wire {
namespace ONYX_TEST_FILE {

std::string encode_varint(uint64_t v) {
  Sink s;
  s.varint(v);
  return s.str();
}

TEST(Wire, VarintRoundTripsAtBoundaries) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{300}, uint64_t{1} << 35,
                     std::numeric_limits<uint64_t>::max()}) {
    std::string b = encode_varint(v);
    Reader r(b, "test");
    EXPECT_EQ(r.varint(), v);
    EXPECT_TRUE(r.done());
  }
  EXPECT_EQ(encode_varint(300), std::string("\xac\x02"));
  EXPECT_EQ(encode_varint(std::numeric_limits<uint64_t>::max()).size(), 10u);
}

TEST(Wire, TruncatedVarintIsAnError) {
  std::string b = "\x80\x80";
  Reader r(b, "x.onnx");
  EXPECT_THROW(r.varint(), Error);
}

TEST(Wire, OverlongVarintIsAnError) {
  std::string eleven(10, '\x80');
  eleven += '\x01';
  Reader r(eleven, "x");
  EXPECT_THROW(r.varint(), Error);
  std::string overflow(9, '\xff');
  overflow += '\x02';  // the 10th byte may only carry one bit
  Reader r2(overflow, "x");
  EXPECT_THROW(r2.varint(), Error);
}

TEST(Wire, LengthPastTheEndIsAnErrorNamingTheSource) {
  std::string b = "\x0a\x05" "abc";
  Reader r(b, "model.onnx", "GraphProto");
  uint32_t f;
  WireType t;
  ASSERT_TRUE(r.tag(f, t));
  EXPECT_EQ(f, 1u);
  EXPECT_EQ(t, kLen);
  try {
    r.bytes();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.onnx: malformed GraphProto"), std::string::npos) << e.what();
  }
}

TEST(Wire, HugeLengthIsRejectedWithoutAllocating) {
  Sink s;
  s.key(1, kLen);
  s.varint(uint64_t{1} << 62);
  std::string b = s.str();
  Reader r(b, "x");
  uint32_t f;
  WireType t;
  ASSERT_TRUE(r.tag(f, t));
  EXPECT_THROW(r.bytes(), Error);
}

TEST(Wire, InvalidWireTypesAndFieldZeroAreErrors) {
  for (std::string b : {std::string("\x0e", 1), std::string("\x0f", 1), std::string("\x00", 1)}) {
    Reader r(b, "x");
    uint32_t f;
    WireType t;
    EXPECT_THROW(r.tag(f, t), Error) << int(b[0]);
  }
}

TEST(Wire, FixedWidthValues) {
  Sink s;
  s.fixed32(0x01020304u);
  s.fixed64(0x0102030405060708ull);
  std::string b = s.str();
  Reader r(b, "x");
  EXPECT_EQ(r.fixed32(), 0x01020304u);
  EXPECT_EQ(r.fixed64(), 0x0102030405060708ull);
  EXPECT_THROW(r.fixed32(), Error);
}

TEST(Wire, SkipsGroupsAndRejectsUnbalancedOnes) {
  Sink s;
  s.key(5, kStartGroup);
  s.key(1, kVarint);
  s.varint(7);
  s.key(5, kEndGroup);
  std::string b = s.str();
  Reader r(b, "x");
  uint32_t f;
  WireType t;
  ASSERT_TRUE(r.tag(f, t));
  r.skip(f, t);
  EXPECT_TRUE(r.done());

  Sink bad;
  bad.key(5, kStartGroup);
  bad.key(6, kEndGroup);
  std::string b2 = bad.str();
  Reader r2(b2, "x");
  ASSERT_TRUE(r2.tag(f, t));
  EXPECT_THROW(r2.skip(f, t), Error);
}

TEST(Wire, DeeplyNestedGroupsAreBounded) {
  Sink s;
  for (int i = 0; i < 100; ++i) s.key(1, kStartGroup);
  std::string b = s.str();
  Reader r(b, "x");
  uint32_t f;
  WireType t;
  ASSERT_TRUE(r.tag(f, t));
  EXPECT_THROW(r.skip(f, t), Error);
}

TEST(Wire, NestedMessagesKeepLargeBytesAsViews) {
  std::string big(10000, 'z');
  Sink child;
  child.bytes_field(9, big);
  Sink parent;
  parent.message_field(5, std::move(child));
  std::string out = parent.str();
  Reader r(out, "x");
  uint32_t f;
  WireType t;
  ASSERT_TRUE(r.tag(f, t));
  std::string_view inner = r.bytes();
  Reader ri(inner, "x");
  ASSERT_TRUE(ri.tag(f, t));
  EXPECT_EQ(f, 9u);
  EXPECT_EQ(ri.bytes(), big);
}

}  // namespace
}  // namespace onyx::wire
