#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>

// clang-format off: jpeglib.h needs FILE and size_t declared first
#include <jpeglib.h>
// clang-format on
#include <openjpeg.h>
#include <tiffio.h>
#include <webp/decode.h>
#include <webp/encode.h>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;

using testing::make_tensor;
using testing::OneNode;
using testing::values_of;
using D = DataType;

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
  std::string e = error_of([] {
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

// ---- JPEG, TIFF, WebP, JPEG 2000: images encoded here with the same libraries ----

// A w x h image with smooth ramps (so lossy codecs stay close): channel 0 grows with x, 1 with y, 2 falls with both.
std::vector<uint8_t> ramps(int w, int h, int c) {
  std::vector<uint8_t> v;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        v.push_back(static_cast<uint8_t>(k == 0   ? 20 + 12 * x
                                         : k == 1 ? 30 + 20 * y
                                         : k == 2 ? 220 - 6 * x - 5 * y
                                                  : 90 + k));
  return v;
}

// Pillow's luma, as the decoder applies it for Grayscale.
std::vector<uint8_t> luma(const std::vector<uint8_t>& rgb) {
  std::vector<uint8_t> g;
  for (size_t i = 0; i + 2 < rgb.size(); i += 3)
    g.push_back(static_cast<uint8_t>((rgb[i] * 19595u + rgb[i + 1] * 38470u + rgb[i + 2] * 7471u + 0x8000u) >> 16));
  return g;
}

std::vector<uint8_t> swap_rb(std::vector<uint8_t> rgb) {
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) std::swap(rgb[i], rgb[i + 2]);
  return rgb;
}

// Largest difference between two equally long sample lists.
int max_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  int m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& px, int w, int h, int c, J_COLOR_SPACE space,
                                 bool progressive = false) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = c;
  cinfo.in_color_space = space;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 100, TRUE);
  for (int k = 0; k < cinfo.num_components; ++k) cinfo.comp_info[k].h_samp_factor = cinfo.comp_info[k].v_samp_factor = 1;
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(px.data()) + static_cast<size_t>(cinfo.next_scanline) * w * c;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> out(buf, buf + size);
  jpeg_destroy_compress(&cinfo);
  std::free(buf);
  return out;
}

// A growable in-memory file for libtiff's and openjpeg's writers.
struct MemFile {
  std::vector<uint8_t> bytes;
  uint64_t pos = 0;
  void write(const void* p, size_t n) {
    if (pos + n > bytes.size()) bytes.resize(pos + n);
    std::memcpy(bytes.data() + pos, p, n);
    pos += n;
  }
};

tmsize_t mem_read(thandle_t h, void* buf, tmsize_t n) {
  auto* m = static_cast<MemFile*>(h);
  const uint64_t k = m->pos >= m->bytes.size() ? 0 : std::min<uint64_t>(n, m->bytes.size() - m->pos);
  if (k) std::memcpy(buf, m->bytes.data() + m->pos, k);
  m->pos += k;
  return static_cast<tmsize_t>(k);
}
tmsize_t mem_write(thandle_t h, void* buf, tmsize_t n) {
  static_cast<MemFile*>(h)->write(buf, static_cast<size_t>(n));
  return n;
}
toff_t mem_seek(thandle_t h, toff_t off, int whence) {
  auto* m = static_cast<MemFile*>(h);
  m->pos = (whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->bytes.size()) + off;
  return m->pos;
}
int mem_close(thandle_t) { return 0; }
toff_t mem_size(thandle_t h) { return static_cast<MemFile*>(h)->bytes.size(); }
int mem_map(thandle_t, void**, toff_t*) { return 0; }
void mem_unmap(thandle_t, void*, toff_t) {}

struct TiffLayout {
  int w, h, spp, bits;
  uint16_t photometric;
  uint16_t compression = COMPRESSION_NONE;
  bool tiled = false;                        // one 16x16 tile
  std::function<void(TIFF*)> extra = {};     // more tags
};

// `data`: the samples as stored, rows of w * spp * bits / 8 bytes.
std::vector<uint8_t> encode_tiff(const TiffLayout& t, const std::vector<uint8_t>& data) {
  MemFile f;
  TIFF* tif = TIFFClientOpen("test", "w", &f, mem_read, mem_write, mem_seek, mem_close, mem_size, mem_map, mem_unmap);
  EXPECT_NE(tif, nullptr);
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, t.w);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, t.h);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, t.spp);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, t.bits);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, t.photometric);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, t.compression);
  if (t.extra) t.extra(tif);
  const size_t row = static_cast<size_t>(t.w * t.spp * t.bits / 8);
  if (t.tiled) {
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, 16);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, 16);
    std::vector<uint8_t> tile(16 * 16 * t.spp * t.bits / 8, 0);
    for (int y = 0; y < t.h; ++y) std::memcpy(tile.data() + y * (tile.size() / 16), data.data() + y * row, row);
    EXPECT_GT(TIFFWriteTile(tif, tile.data(), 0, 0, 0, 0), 0);
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 3);
    for (int y = 0; y < t.h; ++y)
      EXPECT_EQ(TIFFWriteScanline(tif, const_cast<uint8_t*>(data.data()) + y * row, static_cast<uint32_t>(y), 0), 1);
  }
  TIFFClose(tif);
  return f.bytes;
}

std::vector<uint8_t> to_webp(const std::vector<uint8_t>& px, int w, int h, int c, float quality /* < 0: lossless */) {
  uint8_t* out = nullptr;
  size_t n;
  if (c == 4) n = WebPEncodeLosslessRGBA(px.data(), w, h, w * 4, &out);
  else if (quality < 0) n = WebPEncodeLosslessRGB(px.data(), w, h, w * 3, &out);
  else n = WebPEncodeRGB(px.data(), w, h, w * 3, quality, &out);
  EXPECT_GT(n, 0u);
  std::vector<uint8_t> v(out, out + n);
  WebPFree(out);
  return v;
}

OPJ_SIZE_T j2k_write(void* buf, OPJ_SIZE_T n, void* user) {
  static_cast<MemFile*>(user)->write(buf, n);
  return n;
}
OPJ_OFF_T j2k_skip(OPJ_OFF_T n, void* user) {
  auto* m = static_cast<MemFile*>(user);
  m->pos += static_cast<uint64_t>(n);
  if (m->pos > m->bytes.size()) m->bytes.resize(m->pos);
  return n;
}
OPJ_BOOL j2k_seek(OPJ_OFF_T at, void* user) {
  static_cast<MemFile*>(user)->pos = static_cast<uint64_t>(at);
  return OPJ_TRUE;
}

// Lossless (reversible 5/3 wavelet); `samples` interleaved, c components of `prec` bits.
std::vector<uint8_t> encode_j2k(const std::vector<int32_t>& samples, int w, int h, int c, int prec, bool jp2,
                                OPJ_COLOR_SPACE space) {
  std::vector<opj_image_cmptparm_t> parms(c);
  for (auto& p : parms) {
    p = opj_image_cmptparm_t{};
    p.dx = p.dy = 1;
    p.w = static_cast<OPJ_UINT32>(w), p.h = static_cast<OPJ_UINT32>(h);
    p.prec = static_cast<OPJ_UINT32>(prec);
  }
  opj_image_t* img = opj_image_create(static_cast<OPJ_UINT32>(c), parms.data(), space);
  img->x1 = static_cast<OPJ_UINT32>(w), img->y1 = static_cast<OPJ_UINT32>(h);
  for (int i = 0; i < w * h; ++i)
    for (int k = 0; k < c; ++k) img->comps[k].data[i] = samples[i * c + k];
  opj_cparameters_t params;
  opj_set_default_encoder_parameters(&params);
  params.numresolution = std::min(w, h) >= 2 ? 2 : 1;  // the default 6 needs at least 32 pixels a side
  params.tcp_numlayers = 1;  // one layer at rate 0: lossless
  params.tcp_rates[0] = 0;
  params.cp_disto_alloc = 1;
  params.tcp_mct = c == 3 ? 1 : 0;
  opj_codec_t* codec = opj_create_compress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_set_error_handler(codec, [](const char* msg, void*) { ADD_FAILURE() << "openjpeg: " << msg; }, nullptr);
  MemFile f;
  opj_stream_t* stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_FALSE);
  opj_stream_set_user_data(stream, &f, nullptr);
  opj_stream_set_write_function(stream, j2k_write);
  opj_stream_set_skip_function(stream, j2k_skip);
  opj_stream_set_seek_function(stream, j2k_seek);
  EXPECT_TRUE(opj_setup_encoder(codec, &params, img) && opj_start_compress(codec, img, stream) &&
              opj_encode(codec, stream) && opj_end_compress(codec, stream));
  opj_stream_destroy(stream);
  opj_destroy_codec(codec);
  opj_image_destroy(img);
  return f.bytes;
}

std::vector<int32_t> widen(const std::vector<uint8_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

TEST(ImageDecoder, DecodesJpegInEveryPixelFormat_Opset20) {
  const std::vector<uint8_t> rgb = ramps(16, 8, 3);
  for (bool progressive : {false, true}) {
    SCOPED_TRACE(progressive ? "progressive" : "baseline");
    const std::vector<uint8_t> jpg = encode_jpeg(rgb, 16, 8, 3, JCS_RGB, progressive);
    Tensor y = decode(jpg);
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{8, 16, 3}));
    const std::vector<uint8_t> got = values_of<uint8_t>(y);
    EXPECT_LE(max_diff(got, rgb), 3);  // quality 100, no chroma subsampling
    EXPECT_EQ(values_of<uint8_t>(decode(jpg, "BGR")), swap_rb(got));
    Tensor g = decode(jpg, "Grayscale");
    ASSERT_EQ(g.dims(), (std::vector<int64_t>{8, 16, 1}));
    EXPECT_EQ(values_of<uint8_t>(g), luma(got));
  }
  // A gray JPEG: one channel, repeated for RGB.
  std::vector<uint8_t> gray = ramps(16, 8, 1);
  const std::vector<uint8_t> gjpg = encode_jpeg(gray, 16, 8, 1, JCS_GRAYSCALE);
  const std::vector<uint8_t> g = values_of<uint8_t>(decode(gjpg, "Grayscale"));
  EXPECT_LE(max_diff(g, gray), 2);
  std::vector<uint8_t> g3;
  for (uint8_t v : g) g3.insert(g3.end(), {v, v, v});
  EXPECT_EQ(values_of<uint8_t>(decode(gjpg)), g3);
}

TEST(ImageDecoder, DecodesAdobeCmykJpeg_Opset20) {
  // libjpeg marks CMYK files with Adobe's APP14 segment, so the samples read back as inverted CMYK: R = C * K / 255.
  const std::vector<uint8_t> cmyk = ramps(16, 8, 4);
  const std::vector<uint8_t> rgb = values_of<uint8_t>(decode(encode_jpeg(cmyk, 16, 8, 4, JCS_CMYK)));
  std::vector<uint8_t> want;
  for (size_t i = 0; i < cmyk.size(); i += 4)
    for (int k = 0; k < 3; ++k) want.push_back(static_cast<uint8_t>((cmyk[i + k] * cmyk[i + 3] + 127) / 255));
  EXPECT_LE(max_diff(rgb, want), 3);
}

TEST(ImageDecoder, DecodesTiffLayoutsExactly_Opset20) {
  const std::vector<uint8_t> rgb = ramps(16, 8, 3);
  for (uint16_t comp : {COMPRESSION_NONE, COMPRESSION_LZW, COMPRESSION_ADOBE_DEFLATE, COMPRESSION_PACKBITS}) {
    SCOPED_TRACE(comp);
    const std::vector<uint8_t> tif = encode_tiff({16, 8, 3, 8, PHOTOMETRIC_RGB, comp}, rgb);
    Tensor y = decode(tif);
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{8, 16, 3}));
    EXPECT_EQ(values_of<uint8_t>(y), rgb);
    EXPECT_EQ(values_of<uint8_t>(decode(tif, "BGR")), swap_rb(rgb));
    EXPECT_EQ(values_of<uint8_t>(decode(tif, "Grayscale")), luma(rgb));
  }
  // Tiled (through libtiff's RGBA conversion).
  EXPECT_EQ(values_of<uint8_t>(decode(encode_tiff({16, 8, 3, 8, PHOTOMETRIC_RGB, COMPRESSION_NONE, true}, rgb))), rgb);
  // RGBA with unassociated alpha: colours as stored (not premultiplied), alpha dropped.
  const std::vector<uint8_t> rgba = ramps(16, 8, 4);
  auto unassoc = [](TIFF* t) {
    uint16_t extra = EXTRASAMPLE_UNASSALPHA;
    TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, &extra);
  };
  std::vector<uint8_t> rgb_of_rgba;
  for (size_t i = 0; i < rgba.size(); i += 4) rgb_of_rgba.insert(rgb_of_rgba.end(), {rgba[i], rgba[i + 1], rgba[i + 2]});
  EXPECT_EQ(values_of<uint8_t>(decode(encode_tiff({16, 8, 4, 8, PHOTOMETRIC_RGB, COMPRESSION_NONE, false, unassoc}, rgba))),
            rgb_of_rgba);
  // 8-bit gray stays one channel; min-is-white inverts.
  const std::vector<uint8_t> gray = ramps(16, 8, 1);
  EXPECT_EQ(values_of<uint8_t>(decode(encode_tiff({16, 8, 1, 8, PHOTOMETRIC_MINISBLACK}, gray), "Grayscale")), gray);
  std::vector<uint8_t> inverted;
  for (uint8_t v : gray) inverted.push_back(static_cast<uint8_t>(255 - v));
  EXPECT_EQ(values_of<uint8_t>(decode(encode_tiff({16, 8, 1, 8, PHOTOMETRIC_MINISWHITE}, inverted), "Grayscale")), gray);
  // 16-bit RGB with samples v * 257 read back as v; the Orientation tag is not applied (rows stay in stored order).
  std::vector<uint8_t> wide;
  for (uint8_t v : rgb) {
    const uint16_t s = static_cast<uint16_t>(v * 257);
    wide.resize(wide.size() + 2);
    std::memcpy(wide.data() + wide.size() - 2, &s, 2);
  }
  auto bottom_right = [](TIFF* t) { TIFFSetField(t, TIFFTAG_ORIENTATION, ORIENTATION_BOTRIGHT); };
  const TiffLayout wide_layout{16, 8, 3, 16, PHOTOMETRIC_RGB, COMPRESSION_NONE, false, bottom_right};
  EXPECT_EQ(values_of<uint8_t>(decode(encode_tiff(wide_layout, wide))), rgb);
  // 2-bit palette.
  auto palette = [](TIFF* t) {
    static uint16_t r[4] = {0, 65535, 0, 0}, g[4] = {0, 0, 65535, 0}, b[4] = {0, 0, 0, 65535};
    TIFFSetField(t, TIFFTAG_COLORMAP, r, g, b);
  };
  Tensor p = decode(encode_tiff({4, 1, 1, 2, PHOTOMETRIC_PALETTE, COMPRESSION_NONE, false, palette}, {0x1B}));  // 0 1 2 3
  EXPECT_EQ(values_of<uint8_t>(p), (std::vector<uint8_t>{0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255}));
}

TEST(ImageDecoder, DecodesWebp_Opset20) {
  const std::vector<uint8_t> rgb = ramps(16, 8, 3);
  const std::vector<uint8_t> lossless = to_webp(rgb, 16, 8, 3, -1);
  Tensor y = decode(lossless);
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{8, 16, 3}));
  EXPECT_EQ(values_of<uint8_t>(y), rgb);
  EXPECT_EQ(values_of<uint8_t>(decode(lossless, "BGR")), swap_rb(rgb));
  EXPECT_EQ(values_of<uint8_t>(decode(lossless, "Grayscale")), luma(rgb));
  // With alpha (kept exact by the lossless encoder where alpha is not 0): dropped.
  const std::vector<uint8_t> rgba = ramps(16, 8, 4);
  std::vector<uint8_t> rgb_of_rgba;
  for (size_t i = 0; i < rgba.size(); i += 4) rgb_of_rgba.insert(rgb_of_rgba.end(), {rgba[i], rgba[i + 1], rgba[i + 2]});
  EXPECT_EQ(values_of<uint8_t>(decode(to_webp(rgba, 16, 8, 4, -1))), rgb_of_rgba);
  // Lossy: YUV 4:2:0 inside, so only close.
  EXPECT_LE(max_diff(values_of<uint8_t>(decode(to_webp(rgb, 16, 8, 3, 100))), rgb), 12);
}

TEST(ImageDecoder, DecodesJpeg2000Exactly_Opset20) {
  const std::vector<uint8_t> rgb = ramps(16, 8, 3);
  const std::vector<uint8_t> jp2 = encode_j2k(widen(rgb), 16, 8, 3, 8, true, OPJ_CLRSPC_SRGB);
  Tensor y = decode(jp2);
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{8, 16, 3}));
  EXPECT_EQ(values_of<uint8_t>(y), rgb);
  EXPECT_EQ(values_of<uint8_t>(decode(jp2, "BGR")), swap_rb(rgb));
  EXPECT_EQ(values_of<uint8_t>(decode(jp2, "Grayscale")), luma(rgb));
  // A bare gray codestream of 12-bit samples, scaled to 8 bits with rounding.
  const std::vector<int32_t> twelve = {0, 4095, 2048, 16};
  Tensor g = decode(encode_j2k(twelve, 4, 1, 1, 12, false, OPJ_CLRSPC_GRAY), "Grayscale");
  ASSERT_EQ(g.dims(), (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(values_of<uint8_t>(g), (std::vector<uint8_t>{0, 255, 128, 1}));
}

// A JP2 file of one 8-bit component given a palette: pclr (entries, then one byte per channel) and cmap (each
// channel maps component 0 through its palette column) boxes appended to the jp2h header box.
std::vector<uint8_t> with_palette(std::vector<uint8_t> jp2, const std::vector<std::vector<uint8_t>>& entries) {
  const uint8_t channels = static_cast<uint8_t>(entries[0].size());
  auto box = [](const char* type, const std::vector<uint8_t>& content) {
    std::vector<uint8_t> b;
    const uint32_t len = static_cast<uint32_t>(content.size() + 8);
    for (int k = 3; k >= 0; --k) b.push_back(static_cast<uint8_t>(len >> (8 * k)));
    b.insert(b.end(), type, type + 4);
    b.insert(b.end(), content.begin(), content.end());
    return b;
  };
  std::vector<uint8_t> pclr = {0, static_cast<uint8_t>(entries.size()), channels};
  pclr.insert(pclr.end(), channels, 7);  // 8-bit unsigned columns
  for (const auto& e : entries) pclr.insert(pclr.end(), e.begin(), e.end());
  std::vector<uint8_t> cmap;
  for (uint8_t c = 0; c < channels; ++c) cmap.insert(cmap.end(), {0, 0, 1, c});
  std::vector<uint8_t> added = box("pclr", pclr), more = box("cmap", cmap);
  added.insert(added.end(), more.begin(), more.end());
  for (size_t at = 0; at + 8 <= jp2.size();) {
    const uint32_t len = static_cast<uint32_t>(jp2[at] << 24 | jp2[at + 1] << 16 | jp2[at + 2] << 8 | jp2[at + 3]);
    if (std::memcmp(jp2.data() + at + 4, "jp2h", 4) == 0) {
      const uint32_t grown = len + static_cast<uint32_t>(added.size());
      for (int k = 0; k < 4; ++k) jp2[at + k] = static_cast<uint8_t>(grown >> (8 * (3 - k)));
      jp2.insert(jp2.begin() + static_cast<std::ptrdiff_t>(at + len), added.begin(), added.end());
      return jp2;
    }
    at += len;
  }
  ADD_FAILURE() << "no jp2h box";
  return jp2;
}

TEST(ImageDecoder, DecodesJpeg2000Palettes_Opset20) {
  const std::vector<uint8_t> gray = encode_j2k({0, 1, 2, 3}, 4, 1, 1, 8, true, OPJ_CLRSPC_GRAY);
  Tensor y = decode(with_palette(gray, {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}}));
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 4, 3}));
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30}));
  // Five palette channels would become five components: refused before decoding.
  const std::vector<std::vector<uint8_t>> five = {{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}, {0, 0, 0, 0, 0}, {9, 9, 9, 9, 9}};
  const std::string e = error_of([&] { decode(with_palette(gray, five)); });
  EXPECT_NE(e.find("JPEG 2000 palette with 5 channels is not supported"), std::string::npos) << e;
}

// Every prefix of a valid file and a set of corrupted copies either decode or fail with an error naming the format
// (libraries' messages are caught, nothing is printed, nothing exits); half a file always fails.
void expect_clean_failures(const std::vector<uint8_t>& good, const char* format, size_t corrupt_from) {
  SCOPED_TRACE(format);
  auto check = [&](const std::vector<uint8_t>& bad) {
    try {
      decode(bad);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(format), std::string::npos) << e.what();
    }
  };
  for (size_t n = 2; n < good.size(); ++n) check(std::vector<uint8_t>(good.begin(), good.begin() + n));
  std::mt19937 rng(7);
  for (int k = 0; k < 200; ++k) {
    std::vector<uint8_t> bad = good;
    for (int flips = 0; flips < 3; ++flips)
      bad[corrupt_from + rng() % (bad.size() - corrupt_from)] ^= static_cast<uint8_t>(1 + rng() % 255);
    check(bad);
  }
  const std::string e = error_of([&] { decode(std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2)); });
  EXPECT_NE(e.find(std::string(format) + " data is invalid"), std::string::npos) << e;
}

TEST(ImageDecoder, TruncatedAndCorruptDataAreErrors_Opset20) {
  const std::vector<uint8_t> rgb = ramps(16, 8, 3);
  const std::vector<uint8_t> jpg = encode_jpeg(rgb, 16, 8, 3, JCS_RGB);
  // Corruption past the headers only, so no corrupted size makes a test decode a huge image.
  expect_clean_failures(jpg, "JPEG", jpg.size() / 2);
  expect_clean_failures(encode_jpeg(rgb, 16, 8, 3, JCS_RGB, true), "JPEG", jpg.size() / 2);
  // libtiff writes the directory after the pixel data: corrupt the data only.
  expect_clean_failures(encode_tiff({16, 8, 3, 8, PHOTOMETRIC_RGB, COMPRESSION_LZW}, rgb), "TIFF", 8);
  const std::vector<uint8_t> webp = to_webp(rgb, 16, 8, 3, 90);
  expect_clean_failures(webp, "WebP", 30);
  const std::vector<uint8_t> j2k = encode_j2k(widen(rgb), 16, 8, 3, 8, false, OPJ_CLRSPC_SRGB);
  expect_clean_failures(j2k, "JPEG 2000", j2k.size() / 2);
  expect_clean_failures(encode_j2k(widen(rgb), 16, 8, 3, 8, true, OPJ_CLRSPC_SRGB), "JPEG 2000", j2k.size() / 2);

  std::string e = error_of([] { decode({0xff, 0xd8, 0xff, 0xe0, 0, 0}); });
  EXPECT_NE(e.find("JPEG data is invalid"), std::string::npos) << e;
  e = error_of([] { decode({'I', 'I', 42, 0, 0xff, 0xff, 0xff, 0x0f}); });  // directory offset beyond the end
  EXPECT_NE(e.find("TIFF data is invalid: cannot read the header"), std::string::npos) << e;
  e = error_of([] { decode({'R', 'I', 'F', 'F', 4, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' '}); });
  EXPECT_NE(e.find("WebP data is invalid"), std::string::npos) << e;
  e = error_of([] { decode({0xff, 0x4f, 0xff, 0x51, 0, 2}); });
  EXPECT_NE(e.find("JPEG 2000 data is invalid: cannot read the header"), std::string::npos) << e;
}

// Sizes come from headers: a small file claiming a huge image is refused before anything is allocated.
TEST(ImageDecoder, HugeImagesAreRefused_Opset20) {
  const std::vector<uint8_t> rgb = ramps(16, 8, 3);
  std::vector<uint8_t> jpg = encode_jpeg(rgb, 16, 8, 3, JCS_RGB);
  for (size_t i = 2; i + 8 < jpg.size(); ++i) {
    if (jpg[i] == 0xff && jpg[i + 1] == 0xc0) {  // SOF0: length, precision, height, width
      jpg[i + 5] = jpg[i + 7] = 0xea;  // 60000 (libjpeg itself refuses more than 65500)
      jpg[i + 6] = jpg[i + 8] = 0x60;
      break;
    }
  }
  std::string e = error_of([&] { decode(jpg); });
  EXPECT_NE(e.find("JPEG image 60000x60000 is too large"), std::string::npos) << e;

  // TIFF: the width and length entries of the (only) directory set to 65535.
  std::vector<uint8_t> tif = encode_tiff({16, 8, 3, 8, PHOTOMETRIC_RGB}, rgb);
  uint32_t ifd;
  std::memcpy(&ifd, tif.data() + 4, 4);
  const uint16_t entries = static_cast<uint16_t>(tif[ifd] | tif[ifd + 1] << 8);
  for (uint16_t k = 0; k < entries; ++k) {
    uint8_t* entry = tif.data() + ifd + 2 + 12 * k;
    const uint16_t tag = static_cast<uint16_t>(entry[0] | entry[1] << 8);
    if (tag == TIFFTAG_IMAGEWIDTH || tag == TIFFTAG_IMAGELENGTH) entry[8] = entry[9] = 0xff;
  }
  e = error_of([&] { decode(tif); });
  EXPECT_NE(e.find("TIFF image 65535x65535 is too large"), std::string::npos) << e;

  // WebP (lossy): 14-bit width and height after the VP8 frame tag and start code.
  std::vector<uint8_t> webp = to_webp(rgb, 16, 8, 3, 90);
  ASSERT_EQ(std::memcmp(webp.data() + 12, "VP8 ", 4), 0);
  webp[26] = webp[28] = 0xff;
  webp[27] = webp[29] = 0x3f;
  e = error_of([&] { decode(webp); });
  EXPECT_NE(e.find("WebP image 16383x16383 is too large"), std::string::npos) << e;

  // JPEG 2000 codestream: SIZ's image size (Xsiz, Ysiz at 8 and 12) and tile size (XTsiz, YTsiz at 24 and 28) set
  // to 20000 (one tile).
  std::vector<uint8_t> j2k = encode_j2k(widen(rgb), 16, 8, 3, 8, false, OPJ_CLRSPC_SRGB);
  ASSERT_TRUE(j2k[2] == 0xff && j2k[3] == 0x51);
  for (int at : {8, 12, 24, 28}) {
    const uint8_t size[4] = {0x00, 0x00, 0x4e, 0x20};
    std::memcpy(j2k.data() + at, size, 4);
  }
  e = error_of([&] { decode(j2k); });
  EXPECT_NE(e.find("JPEG 2000 image 20000x20000 is too large"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
