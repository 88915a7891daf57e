// The decoded image ImageDecoder works on, and the decoders built on Debian's codec libraries (image_codecs.cpp):
// JPEG (libjpeg), TIFF (libtiff), WebP (libwebp), JPEG 2000 (libopenjp2). Each fails with a message starting with
// the format's name on corrupt, truncated or oversized data; none prints or exits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace onyx::ops::image {

// 8-bit samples, rows top to bottom, `channels` 1 (gray) or 3 (RGB).
struct Image {
  int64_t width = 0, height = 0;
  int channels = 3;
  std::vector<uint8_t> px;
};

// Largest image decoded, in pixels: 3-channel output stays under 400 MB and a 4-byte-per-pixel work buffer under
// 512 MB, well below 1 << 30 bytes.
constexpr int64_t kMaxPixels = int64_t{1} << 27;

// Fails unless w and h are positive and w * h is at most kMaxPixels; `format` names the format in the message.
void check_size(int64_t w, int64_t h, const char* format);

// Each returns RGB for colour images and one channel for gray ones.
Image decode_jpeg(const uint8_t* data, size_t size);
Image decode_tiff(const uint8_t* data, size_t size);
Image decode_webp(const uint8_t* data, size_t size);
Image decode_jpeg2000(const uint8_t* data, size_t size);

}  // namespace onyx::ops::image
