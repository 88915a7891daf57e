#include <gtest/gtest.h>

#include <functional>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace {

using testing::make_tensor;
using testing::OneNode;
using testing::values_of;
using D = DataType;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

Tensor bytes(const std::vector<uint8_t>& b) { return make_tensor<uint8_t>(D::UInt8, {static_cast<int64_t>(b.size())}, b); }

Tensor decode(const std::vector<uint8_t>& b, const std::string& fmt = "RGB") {
  return OneNode("ImageDecoder", 20).input("x", bytes(b)).attr_string("pixel_format", fmt).run().at(0).tensor;
}

void put32(std::vector<uint8_t>& v, uint32_t x) {
  for (int k = 0; k < 4; ++k) v.push_back(static_cast<uint8_t>(x >> (8 * k)));
}
void put16(std::vector<uint8_t>& v, uint16_t x) {
  v.push_back(static_cast<uint8_t>(x));
  v.push_back(static_cast<uint8_t>(x >> 8));
}

// A 2x2 24-bit BMP, bottom-up: top row red, green; bottom row blue, white.
std::vector<uint8_t> bmp_2x2() {
  std::vector<uint8_t> v = {'B', 'M'};
  put32(v, 54 + 16);
  put32(v, 0);
  put32(v, 54);
  put32(v, 40);
  put32(v, 2);
  put32(v, 2);
  put16(v, 1);
  put16(v, 24);
  for (int k = 0; k < 6; ++k) put32(v, 0);
  // bottom row first (BGR), padded to 8 bytes
  for (uint8_t b : {255, 0, 0, 255, 255, 255, 0, 0}) v.push_back(b);
  for (uint8_t b : {0, 0, 255, 0, 255, 0, 0, 0}) v.push_back(b);
  return v;
}

const std::vector<uint8_t> kRGB2x2 = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255};

TEST(ImageDecoder, DecodesBmpAsRgbBgrAndGray_Opset20) {
  Tensor rgb = decode(bmp_2x2());
  ASSERT_EQ(rgb.dims(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(values_of<uint8_t>(rgb), kRGB2x2);
  Tensor bgr = decode(bmp_2x2(), "BGR");
  EXPECT_EQ(values_of<uint8_t>(bgr), (std::vector<uint8_t>{0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255}));
  Tensor gray = decode(bmp_2x2(), "Grayscale");
  ASSERT_EQ(gray.dims(), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(values_of<uint8_t>(gray), (std::vector<uint8_t>{76, 150, 29, 255}));  // Pillow's L conversion
}

TEST(ImageDecoder, DecodesAsciiAndBinaryPnm_Opset20) {
  std::string p3 = "P3\n# comment\n2 2\n255\n255 0 0  0 255 0\n0 0 255  255 255 255\n";
  EXPECT_EQ(values_of<uint8_t>(decode(std::vector<uint8_t>(p3.begin(), p3.end()))), kRGB2x2);
  std::vector<uint8_t> p6 = {'P', '6', ' ', '2', ' ', '2', ' ', '2', '5', '5', '\n'};
  p6.insert(p6.end(), kRGB2x2.begin(), kRGB2x2.end());
  EXPECT_EQ(values_of<uint8_t>(decode(p6)), kRGB2x2);
  std::string p2 = "P2 2 1 15 0 15";  // gray with maxval 15
  Tensor g = decode(std::vector<uint8_t>(p2.begin(), p2.end()));
  EXPECT_EQ(values_of<uint8_t>(g), (std::vector<uint8_t>{0, 0, 0, 255, 255, 255}));
}

// A PNG whose zlib stream holds one stored (uncompressed) block; CRCs are not checked.
std::vector<uint8_t> png_stored(uint32_t w, uint32_t h, uint8_t depth, uint8_t color, const std::vector<uint8_t>& filtered) {
  std::vector<uint8_t> v = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  auto be32 = [&](uint32_t x) {
    for (int k = 3; k >= 0; --k) v.push_back(static_cast<uint8_t>(x >> (8 * k)));
  };
  auto chunk = [&](const char* type, const std::vector<uint8_t>& body) {
    be32(static_cast<uint32_t>(body.size()));
    v.insert(v.end(), type, type + 4);
    v.insert(v.end(), body.begin(), body.end());
    be32(0);
  };
  std::vector<uint8_t> ihdr;
  for (uint32_t x : {w, h})
    for (int k = 3; k >= 0; --k) ihdr.push_back(static_cast<uint8_t>(x >> (8 * k)));
  for (uint8_t b : {depth, color, uint8_t{0}, uint8_t{0}, uint8_t{0}}) ihdr.push_back(b);
  chunk("IHDR", ihdr);
  std::vector<uint8_t> z = {0x78, 0x01, 0x01};
  const uint16_t len = static_cast<uint16_t>(filtered.size());
  z.push_back(static_cast<uint8_t>(len));
  z.push_back(static_cast<uint8_t>(len >> 8));
  z.push_back(static_cast<uint8_t>(~len));
  z.push_back(static_cast<uint8_t>(~len >> 8));
  z.insert(z.end(), filtered.begin(), filtered.end());
  for (int k = 0; k < 4; ++k) z.push_back(0);  // adler32 (not checked)
  chunk("IDAT", z);
  chunk("IEND", {});
  return v;
}

TEST(ImageDecoder, DecodesPngWithFilters_Opset20) {
  // 2x2 RGB: row 0 with Sub filter, row 1 with Up filter.
  std::vector<uint8_t> rows = {1, 255, 0, 0, 1, 255, 0,  // Sub: second pixel = (255+1, 0+255, 0+0) = (0, 255, 0)
                               2, 1, 0, 255, 255, 0, 255};  // Up: (255+1, 0+0, 0+255), (0+255, 255+0, 0+255)
  Tensor y = decode(png_stored(2, 2, 8, 2, rows));
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(values_of<uint8_t>(y), kRGB2x2);
  // 1-bit grayscale, 3 pixels 1,0,1 -> 255, 0, 255
  Tensor g = decode(png_stored(3, 1, 1, 0, {0, 0xA0}), "Grayscale");
  EXPECT_EQ(values_of<uint8_t>(g), (std::vector<uint8_t>{255, 0, 255}));
}

TEST(ImageDecoder, UnsupportedAndCorruptDataAreErrors_Opset20) {
  std::string e = error_of([] { decode({0xff, 0xd8, 0xff, 0xe0, 0, 0}); });
  EXPECT_NE(e.find("JPEG decoding is not available"), std::string::npos) << e;
  e = error_of([] {
    auto b = bmp_2x2();
    b.resize(60);
    decode(b);
  });
  EXPECT_NE(e.find("BMP pixel data is truncated"), std::string::npos) << e;
  e = error_of([] { decode({'h', 'e', 'l', 'l', 'o'}); });
  EXPECT_NE(e.find("not an image format"), std::string::npos) << e;
  e = error_of([] {
    std::vector<uint8_t> rows = {0, 1, 2, 3};  // one row short
    decode(png_stored(1, 2, 8, 2, rows));
  });
  EXPECT_NE(e.find("PNG image data is truncated"), std::string::npos) << e;
  e = error_of([] { decode(bmp_2x2(), "CMYK"); });
  EXPECT_NE(e.find("pixel_format must be RGB, BGR or Grayscale"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
