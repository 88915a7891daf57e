// ImageDecoder's JPEG, TIFF, WebP and JPEG 2000 decoders on top of libjpeg, libtiff, libwebp and libopenjp2.
// The libraries are C: no C++ exception may cross their frames, so their callbacks only record a message and the
// C++ side fails after the library call returns (libjpeg, whose error_exit must not return, longjmps back to a
// setjmp in a frame that holds nothing with a destructor). Messages and warnings never reach stderr.
// Results follow the ONNX reference implementation (Pillow): alpha is dropped, EXIF/TIFF orientation is not
// applied, gray images stay one channel.
#include "ops/image/image_codecs.hpp"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

// clang-format off: jpeglib.h needs FILE and size_t declared first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on
#include <openjpeg.h>
#include <tiffio.h>
#include <webp/decode.h>

#include "base/error.hpp"

namespace onyx::ops::image {

void check_size(int64_t w, int64_t h, const char* format) {
  if (w <= 0 || h <= 0) fail(format, " image has invalid size ", w, "x", h);
  if (w > kMaxPixels / h) fail(format, " image ", w, "x", h, " is too large (more than ", kMaxPixels, " pixels)");
}

namespace {

// Rounded a * b / 255 for a, b in 0..255.
uint8_t mul255(unsigned a, unsigned b) { return static_cast<uint8_t>((a * b + 127) / 255); }

// ---- JPEG ----

// A progressive JPEG may hold any number of scans, each a pass over the whole image; a small file with thousands
// of scans would keep the decoder busy for minutes. Real encoders write about ten.
constexpr int kMaxJpegScans = 1000;

struct JpegErrors {
  jpeg_error_mgr mgr;  // first member: libjpeg hands back &mgr as cinfo->err
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_error_exit(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  cinfo->err->format_message(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// Trace messages (level >= 0) and recoverable corrupt-data warnings are dropped; running out of data is a warning
// for libjpeg, which fills the rest with gray, but a truncated file is an error here (as in Pillow).
void jpeg_emit_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_error_exit(cinfo);
}

void jpeg_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxJpegScans) {
    auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
    std::snprintf(errors->message, sizeof errors->message, "more than %d progressive scans", kMaxJpegScans);
    std::longjmp(errors->jump, 1);
  }
}

// One libjpeg decompressor. Each step sets the jump target in its own frame (valid only while that frame runs)
// and returns false with errors.message set when libjpeg failed.
class JpegReader {
 public:
  JpegErrors errors{};
  jpeg_decompress_struct cinfo{};

  JpegReader() {
    cinfo.err = jpeg_std_error(&errors.mgr);
    errors.mgr.error_exit = jpeg_error_exit;
    errors.mgr.emit_message = jpeg_emit_message;
    progress_.progress_monitor = jpeg_progress;
  }
  ~JpegReader() {
    if (created_) jpeg_destroy_decompress(&cinfo);
  }
  JpegReader(const JpegReader&) = delete;
  JpegReader& operator=(const JpegReader&) = delete;

  bool read_header(const uint8_t* data, size_t size) {
    if (setjmp(errors.jump)) return false;
    jpeg_create_decompress(&cinfo);
    created_ = true;
    cinfo.progress = &progress_;
    jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
    jpeg_read_header(&cinfo, TRUE);
    return true;
  }
  bool start() {
    if (setjmp(errors.jump)) return false;
    jpeg_start_decompress(&cinfo);
    return true;
  }
  // Rows of output_width * output_components samples, back to back.
  bool read_rows(uint8_t* out) {
    if (setjmp(errors.jump)) return false;
    const size_t stride = static_cast<size_t>(cinfo.output_width) * static_cast<size_t>(cinfo.output_components);
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row = out + static_cast<size_t>(cinfo.output_scanline) * stride;
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    return true;
  }

 private:
  jpeg_progress_mgr progress_{};
  bool created_ = false;
};

}  // namespace

// Colour JPEGs decode to RGB even when gray is asked for, and ImageDecoder applies Pillow's luma formula: that
// reproduces the ONNX test data (test_image_decoder_decode_jpeg_grayscale) exactly, while libjpeg's own gray
// output (JCS_GRAYSCALE, the decoded Y channel, as OpenCV's IMREAD_GRAYSCALE gives) differs in 166 of its 1024
// pixels, by up to 16.
Image decode_jpeg(const uint8_t* data, size_t size) {
  JpegReader r;
  if (!r.read_header(data, size)) fail("JPEG data is invalid: ", r.errors.message);
  jpeg_decompress_struct& c = r.cinfo;
  check_size(c.image_width, c.image_height, "JPEG");
  bool cmyk = false;
  switch (c.jpeg_color_space) {
    case JCS_GRAYSCALE: c.out_color_space = JCS_GRAYSCALE; break;
    case JCS_RGB:
    case JCS_YCbCr: c.out_color_space = JCS_RGB; break;
    case JCS_CMYK:
    case JCS_YCCK:
      c.out_color_space = JCS_CMYK;
      cmyk = true;
      break;
    default: fail("JPEG image with ", c.num_components, " components in an unknown color space is not supported");
  }
  if (!r.start()) fail("JPEG data is invalid: ", r.errors.message);
  const int64_t w = c.output_width, h = c.output_height;
  check_size(w, h, "JPEG");
  std::vector<uint8_t> samples(static_cast<size_t>(w * h * c.output_components));
  if (!r.read_rows(samples.data())) fail("JPEG data is invalid: ", r.errors.message);
  Image img;
  img.width = w, img.height = h;
  if (!cmyk) {
    img.channels = c.output_components;
    img.px = std::move(samples);
    return img;
  }
  // Adobe's encoders store CMYK inverted and mark the file with an APP14 segment; Pillow reads such files as
  // inverted CMYK and converts with R = (255 - C)(255 - K) / 255.
  const bool inverted = c.saw_Adobe_marker;
  img.channels = 3;
  img.px.resize(static_cast<size_t>(w * h * 3));
  for (int64_t i = 0; i < w * h; ++i) {
    const uint8_t* s = samples.data() + i * 4;
    const unsigned k = inverted ? s[3] : 255u - s[3];
    for (int ch = 0; ch < 3; ++ch) img.px[i * 3 + ch] = mul255(inverted ? s[ch] : 255u - s[ch], k);
  }
  return img;
}

// ---- TIFF ----

namespace {

struct TiffSource {
  const uint8_t* data;
  uint64_t size;
  uint64_t pos = 0;
  char message[512] = "";  // the first error libtiff reported
};

tmsize_t tiff_read(thandle_t h, void* buf, tmsize_t want) {
  auto* s = static_cast<TiffSource*>(h);
  if (want < 0) return -1;
  const uint64_t n = s->pos >= s->size ? 0 : std::min<uint64_t>(static_cast<uint64_t>(want), s->size - s->pos);
  if (n) std::memcpy(buf, s->data + s->pos, n);
  s->pos += n;
  return static_cast<tmsize_t>(n);
}
tmsize_t tiff_write(thandle_t, void*, tmsize_t) { return -1; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<TiffSource*>(h);
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return static_cast<toff_t>(-1);
  const uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->pos : s->size;
  // Offsets are unsigned; a seek backwards arrives as a wrapped value, which unsigned addition undoes.
  s->pos = base + off;
  return s->pos;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TiffSource*>(h)->size; }
// The data is already in memory: libtiff reads strips and tiles in place. (Unmapped, libtiff 4.5 also refuses
// uncompressed tiles, comparing the tile size with its rounded-up read buffer.)
int tiff_map(thandle_t h, void** base, toff_t* size) {
  auto* s = static_cast<TiffSource*>(h);
  *base = const_cast<uint8_t*>(s->data);  // read only: the file is opened for reading
  *size = s->size;
  return 1;
}
void tiff_unmap(thandle_t, void*, toff_t) {}

int tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* s = static_cast<TiffSource*>(user);
  if (!s->message[0]) {
    int n = std::snprintf(s->message, sizeof s->message, "%s: ", module ? module : "libtiff");
    if (n < 0 || static_cast<size_t>(n) >= sizeof s->message) n = 0;
    std::vsnprintf(s->message + n, sizeof s->message - static_cast<size_t>(n), fmt, ap);
  }
  return 1;  // handled: libtiff's global handler (stderr) is not called
}
// Warnings (unknown tags and the like) do not stop decoding and are not printed.
int tiff_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
struct TiffOptionsFree {
  void operator()(TIFFOpenOptions* o) const { TIFFOpenOptionsFree(o); }
};

[[noreturn]] void tiff_fail(const TiffSource& src, const char* what) {
  fail("TIFF data is invalid: ", what, src.message[0] ? ": " : "", src.message);
}

}  // namespace

// 8-bit contiguous gray and RGB strips (with or without alpha, any compression) are read as stored; everything
// else (palettes, YCbCr, CMYK, 1..16-bit samples, tiles, separate planes) goes through libtiff's RGBA conversion.
// The direct path matters for unassociated alpha, which the RGBA conversion premultiplies into the colours while
// Pillow drops it.
Image decode_tiff(const uint8_t* data, size_t size) {
  TiffSource src{data, size};
  std::unique_ptr<TIFFOpenOptions, TiffOptionsFree> opts(TIFFOpenOptionsAlloc());
  if (!opts) fail("TIFF: out of memory");
  TIFFOpenOptionsSetErrorHandlerExtR(opts.get(), tiff_error, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(opts.get(), tiff_warning, &src);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts.get(), tmsize_t{1} << 30);
  std::unique_ptr<TIFF, TiffCloser> tif(TIFFClientOpenExt("ImageDecoder input", "r", &src, tiff_read, tiff_write,
                                                          tiff_seek, tiff_close, tiff_size, tiff_map, tiff_unmap,
                                                          opts.get()));
  if (!tif) tiff_fail(src, "cannot read the header");
  uint32_t w32 = 0, h32 = 0;
  if (!TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &w32) || !TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &h32))
    tiff_fail(src, "no image width or length");
  const int64_t w = w32, h = h32;
  check_size(w, h, "TIFF");
  uint16_t bits = 0, spp = 0, photometric = 0, planar = 0;
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_PLANARCONFIG, &planar);
  if (!TIFFGetField(tif.get(), TIFFTAG_PHOTOMETRIC, &photometric))
    photometric = spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  Image img;
  img.width = w, img.height = h;
  const bool gray = photometric == PHOTOMETRIC_MINISBLACK && (spp == 1 || spp == 2);
  const bool rgb = photometric == PHOTOMETRIC_RGB && spp >= 3;
  if (bits == 8 && planar == PLANARCONFIG_CONTIG && !TIFFIsTiled(tif.get()) && (gray || rgb)) {
    img.channels = gray ? 1 : 3;
    if (TIFFScanlineSize64(tif.get()) != static_cast<uint64_t>(w) * spp) tiff_fail(src, "unexpected row size");
    std::vector<uint8_t> row(static_cast<size_t>(w) * spp);
    img.px.resize(static_cast<size_t>(w * h * img.channels));
    for (int64_t y = 0; y < h; ++y) {
      if (TIFFReadScanline(tif.get(), row.data(), static_cast<uint32_t>(y), 0) < 0)
        tiff_fail(src, "cannot read pixel data");
      uint8_t* out = img.px.data() + y * w * img.channels;
      for (int64_t x = 0; x < w; ++x)
        for (int ch = 0; ch < img.channels; ++ch) out[x * img.channels + ch] = row[x * spp + ch];
    }
    return img;
  }
  char emsg[1024] = "";
  if (!TIFFRGBAImageOK(tif.get(), emsg)) fail("TIFF image is not supported: ", emsg);
  TIFFRGBAImage rgba{};
  if (!TIFFRGBAImageBegin(&rgba, tif.get(), 1, emsg)) fail("TIFF image is not supported: ", emsg);
  struct RgbaEnd {
    TIFFRGBAImage* r;
    ~RgbaEnd() { TIFFRGBAImageEnd(r); }
  } end{&rgba};
  // Rows in stored order, as Pillow returns them: neither flipped to libtiff's default bottom-up raster nor
  // re-oriented by the Orientation tag.
  rgba.orientation = ORIENTATION_TOPLEFT;
  rgba.req_orientation = ORIENTATION_TOPLEFT;
  std::vector<uint32_t> raster(static_cast<size_t>(w * h));
  if (!TIFFRGBAImageGet(&rgba, raster.data(), w32, h32)) tiff_fail(src, "cannot read pixel data");
  img.channels = photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE ? 1 : 3;
  img.px.resize(static_cast<size_t>(w * h * img.channels));
  for (size_t i = 0; i < raster.size(); ++i) {
    const uint32_t p = raster[i];
    if (img.channels == 1) {
      img.px[i] = static_cast<uint8_t>(TIFFGetR(p));
    } else {
      img.px[i * 3] = static_cast<uint8_t>(TIFFGetR(p));
      img.px[i * 3 + 1] = static_cast<uint8_t>(TIFFGetG(p));
      img.px[i * 3 + 2] = static_cast<uint8_t>(TIFFGetB(p));
    }
  }
  return img;
}

// ---- WebP ----

namespace {

const char* webp_status(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated data";
    default: return "unknown error";
  }
}

}  // namespace

Image decode_webp(const uint8_t* data, size_t size) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) fail("WebP: libwebp version mismatch");
  VP8StatusCode st = WebPGetFeatures(data, size, &config.input);
  if (st != VP8_STATUS_OK) fail("WebP data is invalid: ", webp_status(st));
  if (config.input.has_animation) fail("WebP animations are not supported");
  const int64_t w = config.input.width, h = config.input.height;
  check_size(w, h, "WebP");
  Image img;
  img.width = w, img.height = h, img.channels = 3;
  img.px.resize(static_cast<size_t>(w * h * 3));
  // Decoded straight into the image; with MODE_RGB libwebp drops any alpha channel.
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = img.px.data();
  config.output.u.RGBA.stride = static_cast<int>(w * 3);
  config.output.u.RGBA.size = img.px.size();
  st = WebPDecode(data, size, &config);
  WebPFreeDecBuffer(&config.output);  // frees nothing for external memory, but is the documented pairing
  if (st != VP8_STATUS_OK) fail("WebP data is invalid: ", webp_status(st));
  return img;
}

// ---- JPEG 2000 ----

namespace {

struct J2kSource {
  const uint8_t* data;
  uint64_t size;
  uint64_t pos = 0;
  std::string error{};  // set by the error callback, which catches everything it could throw
};

OPJ_SIZE_T j2k_read(void* buf, OPJ_SIZE_T want, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (s->pos >= s->size) return static_cast<OPJ_SIZE_T>(-1);  // end of stream
  const uint64_t n = std::min<uint64_t>(want, s->size - s->pos);
  std::memcpy(buf, s->data + s->pos, n);
  s->pos += n;
  return static_cast<OPJ_SIZE_T>(n);
}
OPJ_OFF_T j2k_skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (n < 0) {
    if (static_cast<uint64_t>(-n) > s->pos) return -1;
  } else if (static_cast<uint64_t>(n) > s->size - std::min(s->pos, s->size)) {
    n = static_cast<OPJ_OFF_T>(s->size - std::min(s->pos, s->size));
  }
  s->pos += static_cast<uint64_t>(n);
  return n;
}
OPJ_BOOL j2k_seek(OPJ_OFF_T at, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (at < 0 || static_cast<uint64_t>(at) > s->size) return OPJ_FALSE;
  s->pos = static_cast<uint64_t>(at);
  return OPJ_TRUE;
}

// Called from inside openjpeg: must not throw, so a failed append (out of memory) is swallowed.
void j2k_error(const char* msg, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  try {
    if (!s->error.empty()) return;  // the first error is the cause; later ones are consequences
    s->error = msg;
    while (!s->error.empty() && (s->error.back() == '\n' || s->error.back() == ' ')) s->error.pop_back();
  } catch (...) {
  }
}
void j2k_quiet(const char*, void*) {}

struct J2kCodecFree {
  void operator()(opj_codec_t* c) const { opj_destroy_codec(c); }
};
struct J2kStreamFree {
  void operator()(opj_stream_t* s) const { opj_stream_destroy(s); }
};
struct J2kImageFree {
  void operator()(opj_image_t* i) const { opj_image_destroy(i); }
};

// A sample of a component at its precision, scaled to 0..255 (signed samples shifted to unsigned first).
uint8_t j2k_to8(int32_t v, const opj_image_comp_t& c) {
  int64_t x = v;
  if (c.sgnd) x += int64_t{1} << (c.prec - 1);
  const int64_t max = (int64_t{1} << c.prec) - 1;
  x = std::clamp<int64_t>(x, 0, max);
  if (c.prec == 8) return static_cast<uint8_t>(x);
  return static_cast<uint8_t>((x * 255 + max / 2) / max);
}

uint8_t clamp8(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

// The channel count of a JP2 file's palette box (jp2h/pclr), 0 when it has none. openjpeg applies the palette
// while decoding, replacing the components by that many new ones of the same size, so the count is checked
// before anything is allocated for it.
uint32_t jp2_palette_channels(const uint8_t* d, size_t n) {
  uint32_t found = 0;
  // Walks the boxes of [begin, end): length (4 bytes; 1: 8 more follow; 0: to the end), type, content. Only the
  // top level's jp2h is entered, so nested boxes cannot make the recursion deep.
  auto walk = [&](auto&& self, size_t begin, size_t end, bool top) -> void {
    size_t at = begin;
    while (end - at >= 8) {
      uint64_t len = (uint64_t{d[at]} << 24) | (d[at + 1] << 16) | (d[at + 2] << 8) | d[at + 3];
      size_t header = 8;
      if (len == 1) {
        if (end - at < 16) return;
        len = 0;
        for (int k = 0; k < 8; ++k) len = (len << 8) | d[at + 8 + k];
        header = 16;
      } else if (len == 0) {
        len = end - at;
      }
      if (len < header || len > end - at) return;  // malformed: openjpeg reports it
      const uint8_t* type = d + at + 4;
      if (top && !std::memcmp(type, "jp2h", 4)) self(self, at + header, at + len, false);
      if (!top && !std::memcmp(type, "pclr", 4) && len >= header + 3) found = d[at + header + 2];
      at += len;
    }
  };
  walk(walk, 0, n, true);
  return found;
}

}  // namespace

Image decode_jpeg2000(const uint8_t* data, size_t size) {
  const bool jp2 = size >= 12 && std::memcmp(data, "\0\0\0\x0cjP  \r\n\x87\n", 12) == 0;
  J2kSource src{data, size};
  std::unique_ptr<opj_codec_t, J2kCodecFree> codec(opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K));
  std::unique_ptr<opj_stream_t, J2kStreamFree> stream(opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE));
  if (!codec || !stream) fail("JPEG 2000: out of memory");
  opj_set_error_handler(codec.get(), j2k_error, &src);
  opj_set_warning_handler(codec.get(), j2k_quiet, nullptr);
  opj_set_info_handler(codec.get(), j2k_quiet, nullptr);
  opj_stream_set_user_data(stream.get(), &src, nullptr);
  opj_stream_set_user_data_length(stream.get(), size);
  opj_stream_set_read_function(stream.get(), j2k_read);
  opj_stream_set_skip_function(stream.get(), j2k_skip);
  opj_stream_set_seek_function(stream.get(), j2k_seek);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  auto invalid = [&](const char* what) {
    fail("JPEG 2000 data is invalid: ", what, src.error.empty() ? "" : ": ", src.error);
  };
  // Strict: a truncated codestream is an error, not a partly gray image.
  if (!opj_setup_decoder(codec.get(), &params) || !opj_decoder_set_strict_mode(codec.get(), OPJ_TRUE))
    invalid("cannot set up the decoder");
  opj_image_t* raw = nullptr;
  if (!opj_read_header(stream.get(), codec.get(), &raw)) {
    if (raw) opj_image_destroy(raw);
    invalid("cannot read the header");
  }
  std::unique_ptr<opj_image_t, J2kImageFree> image(raw);
  const int64_t w = static_cast<int64_t>(image->x1) - image->x0, h = static_cast<int64_t>(image->y1) - image->y0;
  check_size(w, h, "JPEG 2000");
  const uint32_t header_nc = image->numcomps;
  if (header_nc < 1 || header_nc > 4) fail("JPEG 2000 image with ", header_nc, " components is not supported (1 to 4)");
  const uint32_t palette = jp2 ? jp2_palette_channels(data, size) : 0;
  if (palette > 4) fail("JPEG 2000 palette with ", palette, " channels is not supported (1 to 4)");
  // openjpeg holds every component, and every palette channel, as 32-bit samples: at most 2 * kMaxPixels of them
  // (1 GiB).
  int64_t samples = 0, largest = 0;
  for (uint32_t k = 0; k < header_nc; ++k) {
    const int64_t n = static_cast<int64_t>(image->comps[k].w) * image->comps[k].h;
    samples += n;
    largest = std::max(largest, n);
  }
  if (std::max(samples, palette * largest) > 2 * kMaxPixels)
    fail("JPEG 2000 image ", w, "x", h, " with ", std::max(header_nc, palette), " components is too large");
  if (!opj_decode(codec.get(), stream.get(), image.get()) || !opj_end_decompress(codec.get(), stream.get()))
    invalid("cannot decode the image");
  // The components as decoded (a palette or channel definitions may have replaced those of the header).
  const uint32_t nc = image->numcomps;
  if (nc < 1 || nc > 4) fail("JPEG 2000 image with ", nc, " components is not supported (1 to 4)");
  for (uint32_t k = 0; k < nc; ++k) {
    const opj_image_comp_t& c = image->comps[k];
    if (c.prec < 1 || c.prec > 31) fail("JPEG 2000 component ", k, " has unsupported precision ", c.prec);
    if (!c.data || c.w == 0 || c.h == 0 || c.dx == 0 || c.dy == 0) invalid("a component has no data");
  }

  // Sample of component k under canvas pixel (x, y): components may be subsampled and start at their own offset.
  auto sample = [&](uint32_t k, int64_t x, int64_t y) {
    const opj_image_comp_t& c = image->comps[k];
    const int64_t cx = std::clamp<int64_t>((image->x0 + x) / c.dx - c.x0, 0, c.w - 1);
    const int64_t cy = std::clamp<int64_t>((image->y0 + y) / c.dy - c.y0, 0, c.h - 1);
    return j2k_to8(c.data[cy * c.w + cx], c);
  };
  // Colour needs three components; a fourth is alpha (dropped) or K of CMYK; two are gray and alpha.
  const bool color = nc >= 3;
  const bool ycc = color && (image->color_space == OPJ_CLRSPC_SYCC ||
                             (image->color_space == OPJ_CLRSPC_UNSPECIFIED &&
                              (image->comps[1].dx > 1 || image->comps[1].dy > 1 || image->comps[2].dx > 1 ||
                               image->comps[2].dy > 1)));
  const bool cmyk = nc == 4 && image->color_space == OPJ_CLRSPC_CMYK;
  Image img;
  img.width = w, img.height = h, img.channels = color ? 3 : 1;
  img.px.resize(static_cast<size_t>(w * h * img.channels));
  uint8_t* out = img.px.data();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      if (!color) {
        *out++ = sample(0, x, y);
        continue;
      }
      const uint8_t a = sample(0, x, y), b = sample(1, x, y), c = sample(2, x, y);
      if (ycc) {  // full-range BT.601 (JFIF) YCbCr
        const double cb = b - 128.0, cr = c - 128.0;
        *out++ = clamp8(a + 1.402 * cr);
        *out++ = clamp8(a - 0.344136 * cb - 0.714136 * cr);
        *out++ = clamp8(a + 1.772 * cb);
      } else if (cmyk) {
        const unsigned k = 255u - sample(3, x, y);
        *out++ = mul255(255u - a, k);
        *out++ = mul255(255u - b, k);
        *out++ = mul255(255u - c, k);
      } else {
        *out++ = a, *out++ = b, *out++ = c;
      }
    }
  }
  return img;
}

}  // namespace onyx::ops::image
