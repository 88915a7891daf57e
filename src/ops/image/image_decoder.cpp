// ai.onnx ImageDecoder (20, the only version): decodes an encoded image (1-D uint8) into uint8 [H, W, 3] (RGB or
// BGR, by `pixel_format`, default RGB) or [H, W, 1] (Grayscale).
// Formats decoded here, without external libraries:
//   BMP: 1/4/8-bit palette, 16-bit (5-5-5 or bit fields), 24-bit, 32-bit (BGRX or bit fields); uncompressed,
//        bottom-up or top-down; BITMAPCOREHEADER and BITMAPINFOHEADER..V5.
//   PNM: P1-P6 (ASCII and binary bitmap, graymap, pixmap; maxval up to 65535, scaled to 8 bits).
//   PNG: every color type and bit depth, Adam7 interlacing, with its own inflate (RFC 1950/1951).
// JPEG, TIFF, WebP and JPEG 2000 go to libjpeg, libtiff, libwebp and libopenjp2 (image_codecs.cpp).
// Alpha is dropped; 16-bit samples keep their high byte; low bit depth grays scale to 0..255 (the library-decoded
// formats scale other depths in their own ways: see image_codecs.cpp).
// Grayscale from color uses ITU-R 601-2 luma with Pillow's rounding: (19595 R + 38470 G + 7471 B + 32768) >> 16
// (for JPEG too: see decode_jpeg).
#include <array>
#include <cstring>

#include "ops/image/image_codecs.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
using image::check_size;
using image::Image;

// ---- BMP ----

uint32_t le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24); }
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// Extracts a bit-field channel and scales it to 8 bits.
uint8_t mask_channel(uint32_t v, uint32_t mask) {
  if (mask == 0) return 0;
  int shift = 0;
  while (!((mask >> shift) & 1)) ++shift;
  uint32_t max = mask >> shift;
  uint32_t x = (v & mask) >> shift;
  if (max == 255) return static_cast<uint8_t>(x);
  return static_cast<uint8_t>(static_cast<uint64_t>(x) * 255 / max);
}

Image decode_bmp(const uint8_t* d, size_t n) {
  if (n < 26) fail("BMP data is truncated");
  const uint32_t pixel_offset = le32(d + 10);
  const uint32_t dib = le32(d + 14);
  int64_t w, h;
  int bpp;
  uint32_t compression = 0, colors_used = 0;
  size_t palette_entry = 4;
  if (dib == 12) {
    w = le16(d + 18);
    h = static_cast<int16_t>(le16(d + 20));
    bpp = le16(d + 24);
    palette_entry = 3;
  } else if (dib >= 40 && dib <= 124) {
    if (n < 14 + static_cast<size_t>(dib)) fail("BMP header is truncated");
    w = static_cast<int32_t>(le32(d + 18));
    h = static_cast<int32_t>(le32(d + 22));
    bpp = le16(d + 28);
    compression = le32(d + 30);
    colors_used = le32(d + 46);
  } else {
    fail("BMP header size ", dib, " is not supported");
  }
  const bool top_down = h < 0;
  if (top_down) h = -h;
  check_size(w, h, "BMP");
  uint32_t masks[3] = {0, 0, 0};  // r, g, b
  if (compression == 3 || compression == 6) {
    if (bpp != 16 && bpp != 32) fail("BMP bit fields need 16 or 32 bits per pixel, got ", bpp);
    size_t at = dib >= 52 ? 14 + 40 : 14 + dib;
    if (n < at + 12) fail("BMP bit masks are truncated");
    for (int k = 0; k < 3; ++k) masks[k] = le32(d + at + 4 * k);
  } else if (compression != 0) {
    fail("BMP compression ", compression, " (RLE or embedded JPEG/PNG) is not supported");
  } else if (bpp == 16) {
    masks[0] = 0x7C00, masks[1] = 0x03E0, masks[2] = 0x001F;
  } else if (bpp == 32) {
    masks[0] = 0x00FF0000, masks[1] = 0x0000FF00, masks[2] = 0x000000FF;
  }
  std::vector<std::array<uint8_t, 3>> palette;
  if (bpp <= 8) {
    if (bpp != 1 && bpp != 2 && bpp != 4 && bpp != 8) fail("BMP bit depth ", bpp, " is not supported");
    size_t count = colors_used ? colors_used : (size_t{1} << bpp);
    if (count > 256) fail("BMP palette has ", count, " colors");
    size_t at = 14 + dib;
    if (n < at + count * palette_entry) fail("BMP palette is truncated");
    for (size_t k = 0; k < count; ++k) {
      const uint8_t* e = d + at + k * palette_entry;
      palette.push_back({e[2], e[1], e[0]});
    }
  } else if (bpp != 16 && bpp != 24 && bpp != 32) {
    fail("BMP bit depth ", bpp, " is not supported");
  }
  const uint64_t row_bytes = ((static_cast<uint64_t>(w) * bpp + 31) / 32) * 4;
  if (pixel_offset > n || (n - pixel_offset) / row_bytes < static_cast<uint64_t>(h)) fail("BMP pixel data is truncated");
  Image img;
  img.width = w, img.height = h, img.channels = 3;
  img.px.resize(static_cast<size_t>(w * h * 3));
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* row = d + pixel_offset + (top_down ? y : h - 1 - y) * row_bytes;
    uint8_t* out = img.px.data() + y * w * 3;
    for (int64_t x = 0; x < w; ++x, out += 3) {
      if (bpp <= 8) {
        const int64_t bit = x * bpp;
        const unsigned idx = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        if (idx >= palette.size()) fail("BMP pixel uses color ", idx, " beyond the palette");
        std::memcpy(out, palette[idx].data(), 3);
      } else if (bpp == 24) {
        out[0] = row[x * 3 + 2], out[1] = row[x * 3 + 1], out[2] = row[x * 3];
      } else {
        uint32_t v = bpp == 16 ? le16(row + x * 2) : le32(row + x * 4);
        for (int k = 0; k < 3; ++k) out[k] = mask_channel(v, masks[k]);
      }
    }
  }
  return img;
}

// ---- PNM ----

Image decode_pnm(const uint8_t* d, size_t n) {
  const char kind = static_cast<char>(d[1]);
  size_t p = 2;
  auto skip_space = [&]() {
    while (p < n) {
      if (d[p] == '#') {
        while (p < n && d[p] != '\n' && d[p] != '\r') ++p;
      } else if (d[p] == ' ' || d[p] == '\t' || d[p] == '\n' || d[p] == '\r' || d[p] == '\v' || d[p] == '\f') {
        ++p;
      } else {
        break;
      }
    }
  };
  auto number = [&](const char* what) -> int64_t {
    skip_space();
    if (p >= n || d[p] < '0' || d[p] > '9') fail("PNM header: expected the ", what);
    int64_t v = 0;
    while (p < n && d[p] >= '0' && d[p] <= '9') {
      v = v * 10 + (d[p++] - '0');
      if (v > (int64_t{1} << 31)) fail("PNM header: ", what, " is too large");
    }
    return v;
  };
  const int64_t w = number("width"), h = number("height");
  check_size(w, h, "PNM");
  const bool bitmap = kind == '1' || kind == '4';
  const int64_t maxval = bitmap ? 1 : number("maxval");
  if (maxval < 1 || maxval > 65535) fail("PNM maxval ", maxval, " is out of range 1..65535");
  const bool ascii = kind <= '3';
  const int channels = (kind == '3' || kind == '6') ? 3 : 1;
  Image img;
  img.width = w, img.height = h, img.channels = channels;
  const size_t samples = static_cast<size_t>(w * h * channels);
  img.px.resize(samples);
  auto scale = [&](int64_t v) -> uint8_t {
    if (v > maxval) fail("PNM sample ", v, " exceeds maxval ", maxval);
    if (bitmap) return v ? 0 : 255;  // 1 is black
    return static_cast<uint8_t>(maxval == 255 ? v : v * 255 / maxval);
  };
  if (ascii) {
    for (size_t i = 0; i < samples; ++i) {
      if (bitmap) {
        skip_space();
        if (p >= n || (d[p] != '0' && d[p] != '1')) fail("PNM bitmap data is truncated or invalid");
        img.px[i] = scale(d[p++] - '0');
      } else {
        img.px[i] = scale(number("sample"));
      }
    }
    return img;
  }
  if (p >= n) fail("PNM data is truncated");
  ++p;  // the single whitespace after the header
  if (bitmap) {
    const size_t row_bytes = static_cast<size_t>((w + 7) / 8);
    if ((n - p) / row_bytes < static_cast<size_t>(h)) fail("PNM bitmap data is truncated");
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) img.px[y * w + x] = scale((d[p + y * row_bytes + x / 8] >> (7 - x % 8)) & 1);
    return img;
  }
  const size_t bytes = maxval > 255 ? 2 : 1;
  if ((n - p) / bytes < samples) fail("PNM pixel data is truncated");
  for (size_t i = 0; i < samples; ++i) {
    int64_t v = bytes == 2 ? (d[p + 2 * i] << 8) | d[p + 2 * i + 1] : d[p + i];
    img.px[i] = scale(v);
  }
  return img;
}

// ---- inflate (RFC 1951) ----

class Inflater {
 public:
  Inflater(const uint8_t* d, size_t n, size_t limit) : d_(d), n_(n), limit_(limit) {}

  std::vector<uint8_t> run() {
    bool last = false;
    while (!last) {
      last = bits(1);
      const unsigned type = bits(2);
      if (type == 0) stored();
      else if (type == 1) fixed();
      else if (type == 2) dynamic();
      else fail("PNG data: invalid deflate block type");
    }
    return std::move(out_);
  }

 private:
  struct Huffman {
    std::array<uint16_t, 16> count{};
    std::vector<uint16_t> symbols;
  };
  const uint8_t* d_;
  size_t n_, limit_;
  size_t pos_ = 0;
  uint32_t bitbuf_ = 0;
  int bitcnt_ = 0;
  std::vector<uint8_t> out_;

  unsigned bits(int need) {
    uint32_t v = bitbuf_;
    while (bitcnt_ < need) {
      if (pos_ >= n_) fail("PNG data: compressed stream is truncated");
      v |= static_cast<uint32_t>(d_[pos_++]) << bitcnt_;
      bitcnt_ += 8;
    }
    bitbuf_ = v >> need;
    bitcnt_ -= need;
    return v & ((1u << need) - 1);
  }
  void put(uint8_t b) {
    if (out_.size() >= limit_) fail("PNG data: decompressed data is larger than the image");
    out_.push_back(b);
  }
  void stored() {
    bitbuf_ = 0;
    bitcnt_ = 0;
    if (n_ - pos_ < 4) fail("PNG data: stored block is truncated");
    const unsigned len = d_[pos_] | (d_[pos_ + 1] << 8);
    const unsigned nlen = d_[pos_ + 2] | (d_[pos_ + 3] << 8);
    pos_ += 4;
    if (len != (~nlen & 0xFFFF)) fail("PNG data: stored block length check failed");
    if (n_ - pos_ < len) fail("PNG data: stored block is truncated");
    for (unsigned k = 0; k < len; ++k) put(d_[pos_ + k]);
    pos_ += len;
  }
  static Huffman build(const uint8_t* lengths, int n) {
    Huffman h;
    for (int s = 0; s < n; ++s) ++h.count[lengths[s]];
    h.count[0] = 0;
    int left = 1;
    for (int len = 1; len < 16; ++len) {
      left <<= 1;
      left -= h.count[len];
      if (left < 0) fail("PNG data: over-subscribed Huffman code");
    }
    std::array<uint16_t, 16> offs{};
    for (int len = 1; len < 15; ++len) offs[len + 1] = offs[len] + h.count[len];
    int total = 0;
    for (int len = 1; len < 16; ++len) total += h.count[len];
    h.symbols.assign(total, 0);
    for (int s = 0; s < n; ++s)
      if (lengths[s]) h.symbols[offs[lengths[s]]++] = static_cast<uint16_t>(s);
    return h;
  }
  int decode(const Huffman& h) {
    int code = 0, first = 0, index = 0;
    for (int len = 1; len < 16; ++len) {
      code |= static_cast<int>(bits(1));
      const int count = h.count[len];
      if (code - count < first) return h.symbols[index + (code - first)];
      index += count;
      first += count;
      first <<= 1;
      code <<= 1;
    }
    fail("PNG data: invalid Huffman code");
  }
  void codes(const Huffman& lit, const Huffman& dist) {
    static const uint16_t kLenBase[] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                        35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const uint8_t kLenExtra[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const uint16_t kDistBase[] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
                                         193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static const uint8_t kDistExtra[] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    while (true) {
      int sym = decode(lit);
      if (sym < 256) {
        put(static_cast<uint8_t>(sym));
      } else if (sym == 256) {
        return;
      } else {
        sym -= 257;
        if (sym >= 29) fail("PNG data: invalid length symbol");
        const size_t len = kLenBase[sym] + bits(kLenExtra[sym]);
        const int ds = decode(dist);
        if (ds >= 30) fail("PNG data: invalid distance symbol");
        const size_t dist_v = kDistBase[ds] + bits(kDistExtra[ds]);
        if (dist_v > out_.size()) fail("PNG data: distance reaches before the start");
        for (size_t k = 0; k < len; ++k) put(out_[out_.size() - dist_v]);
      }
    }
  }
  void fixed() {
    uint8_t lengths[288 + 30];
    int s = 0;
    for (; s < 144; ++s) lengths[s] = 8;
    for (; s < 256; ++s) lengths[s] = 9;
    for (; s < 280; ++s) lengths[s] = 7;
    for (; s < 288; ++s) lengths[s] = 8;
    for (int k = 0; k < 30; ++k) lengths[288 + k] = 5;
    codes(build(lengths, 288), build(lengths + 288, 30));
  }
  void dynamic() {
    const int nlen = static_cast<int>(bits(5)) + 257, ndist = static_cast<int>(bits(5)) + 1, ncode = static_cast<int>(bits(4)) + 4;
    if (nlen > 286 || ndist > 30) fail("PNG data: bad dynamic block counts");
    static const uint8_t kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    uint8_t lengths[320] = {};
    for (int k = 0; k < ncode; ++k) lengths[kOrder[k]] = static_cast<uint8_t>(bits(3));
    Huffman lencode = build(lengths, 19);
    std::memset(lengths, 0, sizeof lengths);
    int idx = 0;
    while (idx < nlen + ndist) {
      int sym = decode(lencode);
      if (sym < 16) {
        lengths[idx++] = static_cast<uint8_t>(sym);
        continue;
      }
      uint8_t value = 0;
      int rep;
      if (sym == 16) {
        if (idx == 0) fail("PNG data: repeat with no previous length");
        value = lengths[idx - 1];
        rep = 3 + static_cast<int>(bits(2));
      } else if (sym == 17) {
        rep = 3 + static_cast<int>(bits(3));
      } else {
        rep = 11 + static_cast<int>(bits(7));
      }
      if (idx + rep > nlen + ndist) fail("PNG data: too many code lengths");
      while (rep--) lengths[idx++] = value;
    }
    if (lengths[256] == 0) fail("PNG data: no end-of-block code");
    codes(build(lengths, nlen), build(lengths + nlen, ndist));
  }
};

// ---- PNG ----

uint32_t be32(const uint8_t* p) { return (static_cast<uint32_t>(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }

uint8_t paeth(int a, int b, int c) {
  int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return static_cast<uint8_t>(a);
  return static_cast<uint8_t>(pb <= pc ? b : c);
}

// Undoes the filters of one (sub)image of w x h pixels starting at raw[0]; returns the bytes consumed.
size_t unfilter(uint8_t* raw, size_t avail, int64_t w, int64_t h, int bits_pp, std::vector<uint8_t>& rows) {
  const size_t row_bytes = static_cast<size_t>((w * bits_pp + 7) / 8);
  const size_t bpp = std::max(1, bits_pp / 8);
  const size_t need = (row_bytes + 1) * static_cast<size_t>(h);
  if (avail < need) fail("PNG image data is truncated");
  rows.assign(row_bytes * static_cast<size_t>(h), 0);
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t filter = raw[y * (row_bytes + 1)];
    const uint8_t* src = raw + y * (row_bytes + 1) + 1;
    uint8_t* cur = rows.data() + y * row_bytes;
    const uint8_t* prev = y > 0 ? cur - row_bytes : nullptr;
    for (size_t i = 0; i < row_bytes; ++i) {
      const int a = i >= bpp ? cur[i - bpp] : 0, b = prev ? prev[i] : 0, c = (prev && i >= bpp) ? prev[i - bpp] : 0;
      int v = src[i];
      switch (filter) {
        case 0: break;
        case 1: v += a; break;
        case 2: v += b; break;
        case 3: v += (a + b) / 2; break;
        case 4: v += paeth(a, b, c); break;
        default: fail("PNG row has invalid filter type ", static_cast<int>(filter));
      }
      cur[i] = static_cast<uint8_t>(v);
    }
  }
  return need;
}

Image decode_png(const uint8_t* d, size_t n) {
  size_t p = 8;
  int64_t w = 0, h = 0;
  int depth = 0, color = -1, interlace = 0;
  std::vector<uint8_t> idat;
  std::vector<std::array<uint8_t, 3>> palette;
  bool seen_header = false;
  while (true) {
    if (n - p < 12) fail("PNG data is truncated (no IEND chunk)");
    const uint32_t len = be32(d + p);
    const uint8_t* type = d + p + 4;
    if (len > n - p - 12) fail("PNG chunk is truncated");
    const uint8_t* body = d + p + 8;
    if (!std::memcmp(type, "IHDR", 4)) {
      if (len < 13) fail("PNG IHDR chunk is too short");
      w = be32(body), h = be32(body + 4);
      depth = body[8], color = body[9], interlace = body[12];
      if (body[10] != 0 || body[11] != 0) fail("PNG compression or filter method is not 0");
      if (interlace > 1) fail("PNG interlace method ", interlace, " is not supported");
      seen_header = true;
    } else if (!std::memcmp(type, "PLTE", 4)) {
      if (len % 3 || len > 768) fail("PNG palette has invalid length ", len);
      for (uint32_t k = 0; k < len; k += 3) palette.push_back({body[k], body[k + 1], body[k + 2]});
    } else if (!std::memcmp(type, "IDAT", 4)) {
      idat.insert(idat.end(), body, body + len);
    } else if (!std::memcmp(type, "IEND", 4)) {
      break;
    } else if (!(type[0] & 0x20)) {
      fail("PNG has an unknown critical chunk");
    }
    p += 12 + len;
  }
  if (!seen_header) fail("PNG has no IHDR chunk");
  check_size(w, h, "PNG");
  int samples;
  switch (color) {
    case 0: samples = 1; break;
    case 2: samples = 3; break;
    case 3: samples = 1; break;
    case 4: samples = 2; break;
    case 6: samples = 4; break;
    default: fail("PNG color type ", color, " is invalid");
  }
  const bool depth_ok = depth == 8 || depth == 16 || (color == 0 && (depth == 1 || depth == 2 || depth == 4)) ||
                        (color == 3 && (depth == 1 || depth == 2 || depth == 4));
  if (!depth_ok || (color == 3 && depth == 16)) fail("PNG bit depth ", depth, " is invalid for color type ", color);
  if (color == 3 && palette.empty()) fail("PNG palette image has no PLTE chunk");
  const int bits_pp = samples * depth;
  // Size of the filtered data: every pass's rows with their filter bytes.
  struct Pass {
    int x0, y0, dx, dy;
  };
  const std::vector<Pass> passes = interlace ? std::vector<Pass>{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                                                 {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
                                             : std::vector<Pass>{{0, 0, 1, 1}};
  size_t expected = 0;
  for (const Pass& ps : passes) {
    const int64_t pw = (w - ps.x0 + ps.dx - 1) / ps.dx, ph = (h - ps.y0 + ps.dy - 1) / ps.dy;
    if (pw > 0 && ph > 0) expected += static_cast<size_t>(((pw * bits_pp + 7) / 8 + 1) * ph);
  }
  if (idat.size() < 2 || (idat[0] & 0x0F) != 8 || ((idat[0] << 8) | idat[1]) % 31 != 0 || (idat[1] & 0x20))
    fail("PNG image data is not a zlib stream");
  std::vector<uint8_t> raw = Inflater(idat.data() + 2, idat.size() - 2, expected).run();

  Image img;
  img.width = w, img.height = h;
  img.channels = (color == 0 || color == 4) ? 1 : 3;
  img.px.assign(static_cast<size_t>(w * h * img.channels), 0);
  std::vector<uint8_t> rows;
  size_t off = 0;
  for (const Pass& ps : passes) {
    const int64_t pw = (w - ps.x0 + ps.dx - 1) / ps.dx, ph = (h - ps.y0 + ps.dy - 1) / ps.dy;
    if (pw <= 0 || ph <= 0) continue;
    off += unfilter(raw.data() + off, raw.size() - off, pw, ph, bits_pp, rows);
    const size_t row_bytes = static_cast<size_t>((pw * bits_pp + 7) / 8);
    for (int64_t y = 0; y < ph; ++y) {
      const uint8_t* row = rows.data() + y * row_bytes;
      for (int64_t x = 0; x < pw; ++x) {
        uint8_t* out = img.px.data() + ((ps.y0 + y * ps.dy) * w + ps.x0 + x * ps.dx) * img.channels;
        auto sample = [&](int s) -> unsigned {  // sample s of pixel x, at the image's depth
          if (depth == 8) return row[x * samples + s];
          if (depth == 16) return row[(x * samples + s) * 2];  // high byte
          const int64_t bit = x * depth;
          return (row[bit / 8] >> (8 - depth - bit % 8)) & ((1u << depth) - 1);
        };
        if (color == 3) {
          unsigned idx = sample(0);
          if (idx >= palette.size()) fail("PNG pixel uses color ", idx, " beyond the palette");
          std::memcpy(out, palette[idx].data(), 3);
        } else if (img.channels == 1) {
          unsigned v = sample(0);
          if (depth < 8) v = v * 255 / ((1u << depth) - 1);
          out[0] = static_cast<uint8_t>(v);
        } else {
          for (int k = 0; k < 3; ++k) out[k] = static_cast<uint8_t>(sample(k));
        }
      }
    }
  }
  return img;
}

// ---- dispatch ----

Image decode_image(const uint8_t* d, size_t n) {
  auto starts = [&](const char* magic, size_t len) { return n >= len && std::memcmp(d, magic, len) == 0; };
  if (starts("\x89PNG\r\n\x1a\n", 8)) return decode_png(d, n);
  if (starts("BM", 2)) return decode_bmp(d, n);
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return decode_pnm(d, n);
  if (starts("\xff\xd8\xff", 3)) return image::decode_jpeg(d, n);
  // Classic TIFF (42) and BigTIFF (43), either byte order.
  if (starts("II*\0", 4) || starts("MM\0*", 4) || starts("II+\0", 4) || starts("MM\0+", 4))
    return image::decode_tiff(d, n);
  if (n >= 12 && starts("RIFF", 4) && std::memcmp(d + 8, "WEBP", 4) == 0) return image::decode_webp(d, n);
  // The JP2 file signature box, or a bare codestream (SOC then SIZ marker).
  if (starts("\0\0\0\x0cjP  \r\n\x87\n", 12) || starts("\xff\x4f\xff\x51", 4)) return image::decode_jpeg2000(d, n);
  fail("the data is not an image format ImageDecoder knows (BMP, PNM, PNG, JPEG, JPEG 2000, TIFF, WebP)");
}

enum class PixelFormat { RGB, BGR, Gray };

PixelFormat pixel_format(const AttributeView& attrs) {
  std::string f = attrs.get_string("pixel_format", std::string("RGB"));
  if (f == "RGB") return PixelFormat::RGB;
  if (f == "BGR") return PixelFormat::BGR;
  if (f == "Grayscale") return PixelFormat::Gray;
  fail("pixel_format must be RGB, BGR or Grayscale, got '", f, "'");
}

void run_decoder(KernelContext& ctx, PixelFormat fmt) {
  const Tensor& x = ctx.input(0);
  if (x.dims().size() != 1) ctx.error(cat("encoded_stream must be 1-D, got shape ", shape_of(x.dims()).to_string()));
  Image img = decode_image(x.data<uint8_t>(), static_cast<size_t>(x.element_count()));
  const int64_t pixels = img.width * img.height;
  const int out_c = fmt == PixelFormat::Gray ? 1 : 3;
  Tensor& y = ctx.allocate_output(0, D::UInt8, {img.height, img.width, out_c});
  uint8_t* py = y.mutable_data<uint8_t>();
  for (int64_t i = 0; i < pixels; ++i) {
    const uint8_t* s = img.px.data() + i * img.channels;
    uint8_t* o = py + i * out_c;
    if (fmt == PixelFormat::Gray) {
      o[0] = img.channels == 1 ? s[0] : static_cast<uint8_t>((s[0] * 19595u + s[1] * 38470u + s[2] * 7471u + 0x8000u) >> 16);
    } else if (img.channels == 1) {
      o[0] = o[1] = o[2] = s[0];
    } else if (fmt == PixelFormat::RGB) {
      o[0] = s[0], o[1] = s[1], o[2] = s[2];
    } else {
      o[0] = s[2], o[1] = s[1], o[2] = s[0];
    }
  }
}

}  // namespace

void register_image_decoder(Registry& r) {
  add_versions(
      r, "", "ImageDecoder", {20}, {{{0}, {D::UInt8}}},
      [](InferContext& ctx) {
        const int c = pixel_format(ctx.attrs) == PixelFormat::Gray ? 1 : 3;
        Shape s;
        s.rank_known = true;
        s.dims = {Dim{}, Dim{}, known_dim(c)};
        ctx.set_output(0, Type::tensor(D::UInt8, s));
      },
      [](const KernelInit& init) {
        PixelFormat fmt = pixel_format(init.attrs);
        return make_kernel([fmt](KernelContext& ctx) { run_decoder(ctx, fmt); });
      });
}

}  // namespace onyx::ops
