// The HTTP/REST front of `onyx serve`: the KServe v2 protocol as Triton speaks it, with Triton's extensions
// (binary tensor data, model repository, statistics, model configuration), on an asynchronous Boost.Beast server.
// One acceptor and `threads` I/O threads share one io_context; each connection lives on its own strand, reads one
// request at a time (header first, so an oversized body is refused before it is read), hands inference to the
// Core and writes the answer when the Core's worker posts it back.
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cfloat>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <zlib.h>

#include "fronts.hpp"
#include "ir/tensor_alloc.hpp"

namespace onyx::serve {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;  // responses keep Triton's key order
using Clock = std::chrono::steady_clock;

constexpr std::string_view kHttpBinaryHeader = "Inference-Header-Content-Length";

ServeError http_bad(std::string message) { return ServeError(Code::InvalidArgument, std::move(message)); }

// ---------------------------------------------------------------------------------------------------------------
// Request body: read into a pooled 64-byte aligned buffer, placed so that the binary part after the JSON header
// (Inference-Header-Content-Length) starts 64-byte aligned. Input tensors can then view the body in place
// (zero copy) instead of being copied into aligned memory.

struct HttpBodyBuffer {
  std::shared_ptr<void> storage;  // keeps `data` alive; shared with the input tensors that view it
  const char* data = nullptr;
  size_t size = 0;
  std::string_view view() const { return {data, size}; }
};

// A gzip or deflate request body (Content-Encoding), inflated into a buffer laid out as HttpAlignedBody lays out a
// plain one (the binary part 64-byte aligned). The inflated size is bounded by the body limit, so a small
// compressed body cannot expand into an unbounded allocation.
HttpBodyBuffer http_inflate_body(std::string_view in, bool gzip, uint64_t json_len, uint64_t limit) {
  std::string out;
  for (int attempt = 0; attempt < 2; ++attempt) {
    // "deflate" means a zlib stream (RFC 9110), but some clients send raw deflate: retry raw once.
    const int window_bits = gzip ? 16 + MAX_WBITS : (attempt == 0 ? MAX_WBITS : -MAX_WBITS);
    z_stream z{};
    if (inflateInit2(&z, window_bits) != Z_OK) throw ServeError(Code::Internal, "cannot start zlib");
    out.clear();
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    int rc = Z_OK;
    char chunk[65536];
    while (rc != Z_STREAM_END) {
      z.next_out = reinterpret_cast<Bytef*>(chunk);
      z.avail_out = sizeof chunk;
      rc = inflate(&z, Z_NO_FLUSH);
      out.append(chunk, sizeof chunk - z.avail_out);
      if (out.size() > limit) {
        inflateEnd(&z);
        throw ServeError(Code::TooLarge, "the request body inflates to more than the limit of " +
                                             std::to_string(limit) + " bytes");
      }
      if (rc == Z_STREAM_END) break;
      if (rc != Z_OK && !(rc == Z_BUF_ERROR && z.avail_in > 0)) break;
      if (z.avail_in == 0 && z.avail_out != 0) break;  // input ended before the stream did
    }
    inflateEnd(&z);
    if (rc == Z_STREAM_END) {
      const size_t pad = (64 - json_len % 64) % 64;
      HttpBodyBuffer body;
      body.storage = allocate_buffer(out.size() + pad);
      char* base = static_cast<char*>(body.storage.get()) + pad;
      std::memcpy(base, out.data(), out.size());
      body.data = base;
      body.size = out.size();
      return body;
    }
    if (gzip || attempt == 1 || rc != Z_DATA_ERROR)
      throw ServeError(Code::InvalidArgument, std::string("the request body is not valid ") +
                                                  (gzip ? "gzip" : "deflate") + " data (Content-Encoding)");
  }
  throw ServeError(Code::InvalidArgument, "the request body is not valid deflate data (Content-Encoding)");
}

struct HttpAlignedBody {
  using value_type = HttpBodyBuffer;

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>& h, value_type& body) : body_(body) {
      auto it = h.find(kHttpBinaryHeader);
      if (it != h.end()) {
        auto v = it->value();
        uint64_t n = 0;
        auto [p, e] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (e == std::errc() && p == v.data() + v.size()) json_len_ = n;
      }
    }
    void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
      ec = {};
      if (length && *length > 0) reserve(*length);
    }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      ec = {};
      const size_t n = beast::buffer_bytes(buffers);
      if (n == 0) return 0;
      if (filled_ + n > capacity_) reserve(std::max(filled_ + n, capacity_ * 2));  // chunked bodies grow
      char* out = base_ + filled_;
      for (auto b : beast::buffers_range_ref(buffers)) {
        std::memcpy(out, b.data(), b.size());
        out += b.size();
      }
      filled_ += n;
      return n;
    }
    void finish(beast::error_code& ec) {
      ec = {};
      body_.data = base_;
      body_.size = filled_;
    }

   private:
    void reserve(uint64_t bytes) {
      // allocate_buffer gives 64-byte aligned memory; pad puts base_ + json_len_ on a 64-byte boundary.
      const size_t pad = (64 - json_len_ % 64) % 64;
      auto storage = allocate_buffer(static_cast<size_t>(bytes) + pad);
      char* base = static_cast<char*>(storage.get()) + pad;
      if (filled_) std::memcpy(base, base_, filled_);
      body_.storage = std::move(storage);
      base_ = base;
      capacity_ = static_cast<size_t>(bytes);
    }
    value_type& body_;
    uint64_t json_len_ = 0;
    char* base_ = nullptr;
    size_t filled_ = 0, capacity_ = 0;
  };
};

// ---------------------------------------------------------------------------------------------------------------
// JSON writing for responses: by hand, since large output tensors are the hot path (no DOM, no double rounding of
// float32 values: std::to_chars on the element's own type gives the shortest text that reads back exactly).


template <class T>
void http_append_number(std::string& out, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    // JSON has no NaN or infinities; Python's json module (and Triton's Python clients) read these words.
    if (std::isnan(v)) {
      out += "NaN";
      return;
    }
    if (std::isinf(v)) {
      out += v > 0 ? "Infinity" : "-Infinity";
      return;
    }
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void http_append_dims(std::string& out, const std::vector<int64_t>& dims) {
  out += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ',';
    http_append_number(out, dims[i]);
  }
  out += ']';
}

template <class T, class Conv>
void http_append_values(std::string& out, const Tensor& t, Conv conv) {
  const uint64_t n = t.element_count();
  const T* d = t.data<T>();
  out.reserve(out.size() + n * 12 + 2);
  out += '[';
  for (uint64_t i = 0; i < n; ++i) {
    if (i) out += ',';
    http_append_number(out, conv(d[i]));
  }
  out += ']';
}

// The flat "data" array of an output tensor.
void http_append_tensor_data(std::string& out, const Tensor& t) {
  auto same = [](auto v) { return v; };
  switch (t.dtype()) {
    case DataType::Float: return http_append_values<float>(out, t, same);
    case DataType::Double: return http_append_values<double>(out, t, same);
    case DataType::Float16:
      return http_append_values<uint16_t>(out, t, [](uint16_t h) { return half_to_float(h); });
    case DataType::BFloat16:
      return http_append_values<uint16_t>(out, t, [](uint16_t h) { return bfloat16_to_float(h); });
    case DataType::Int8: return http_append_values<int8_t>(out, t, [](int8_t v) { return int{v}; });
    case DataType::UInt8: return http_append_values<uint8_t>(out, t, [](uint8_t v) { return unsigned{v}; });
    case DataType::Int16: return http_append_values<int16_t>(out, t, same);
    case DataType::UInt16: return http_append_values<uint16_t>(out, t, same);
    case DataType::Int32: return http_append_values<int32_t>(out, t, same);
    case DataType::UInt32: return http_append_values<uint32_t>(out, t, same);
    case DataType::Int64: return http_append_values<int64_t>(out, t, same);
    case DataType::UInt64: return http_append_values<uint64_t>(out, t, same);
    case DataType::Bool: {
      const uint64_t n = t.element_count();
      const auto* d = t.data<uint8_t>();
      out += '[';
      for (uint64_t i = 0; i < n; ++i) {
        if (i) out += ',';
        out += d[i] ? "true" : "false";
      }
      out += ']';
      return;
    }
    case DataType::String: {
      out += '[';
      const auto& v = t.string_values();
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        append_json_string(out, v[i]);
      }
      out += ']';
      return;
    }
    default:
      throw ServeError(Code::Internal, "output '" + t.name() + "' has a type the protocol cannot carry");
  }
}

std::string http_error_body(std::string_view message) {
  std::string s = "{\"error\":";
  append_json_string(s, message);
  s += '}';
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Request parsing helpers.

std::string http_shape_text(const std::vector<int64_t>& dims) {
  std::string s;
  http_append_dims(s, dims);
  return s;
}

std::string http_percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

const char* http_json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a non-integer number";
    default: return "a number";
  }
}

std::string http_value_text(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// ---- Inputs' "data" arrays, captured by a SAX parse ----
// A DOM holds each JSON number as a 16-byte node that must be allocated, walked and freed node by node (a
// million-element input took half a second); the request parser below builds the DOM for everything but the
// inputs' "data" arrays, whose scalars it collects flat, with what it needs to check their nesting.

struct HttpLeaf {
  enum Kind : uint8_t { Int, Uint, Float, Bool, String, Null } kind;
  union {
    int64_t i;
    uint64_t u;
    double d;
    bool b;
    size_t s;  // index into HttpDataArray::strings
  };
};

struct HttpDataArray {
  std::vector<HttpLeaf> leaves;
  std::vector<std::string> strings;
  std::vector<int64_t> dims;  // the size of the arrays at each depth, as first seen
  size_t leaf_depth = 0;      // the depth (1: the top array) the scalars sit at; 0: none yet
  bool irregular = false;     // arrays of one depth differ in size, or scalars sit at several depths
};

const char* http_leaf_kind(const HttpLeaf& v) {
  switch (v.kind) {
    case HttpLeaf::Null: return "null";
    case HttpLeaf::Bool: return "a boolean";
    case HttpLeaf::String: return "a string";
    case HttpLeaf::Float: return "a non-integer number";
    default: return "a number";
  }
}

std::string http_leaf_text(const HttpLeaf& v, const HttpDataArray& a) {
  switch (v.kind) {
    case HttpLeaf::Int: return std::to_string(v.i);
    case HttpLeaf::Uint: return std::to_string(v.u);
    case HttpLeaf::Float: {
      std::string s;
      http_append_number(s, v.d);
      return s;
    }
    case HttpLeaf::Bool: return v.b ? "true" : "false";
    case HttpLeaf::String: return json(a.strings[v.s]).dump().substr(0, 40);
    default: return "null";
  }
}

// Checks the captured nesting against `dims`: flat (count scalars) or nested exactly as `dims` say.
void http_check_data(const HttpDataArray& a, const std::vector<int64_t>& dims, uint64_t count, const std::string& what) {
  const size_t depth = a.dims.size();
  if (depth <= 1) {
    if (a.leaves.size() != count)
      throw http_bad(what + ": \"data\" has " + std::to_string(a.leaves.size()) + " elements but shape " +
                     http_shape_text(dims) + " has " + std::to_string(count));
    return;
  }
  if (a.irregular || (a.leaf_depth != 0 && a.leaf_depth != depth) || a.dims != dims)
    throw http_bad(what + ": nested \"data\" does not match shape " + http_shape_text(dims));
}

template <class T>
T http_leaf_int(const HttpLeaf& v, uint64_t i, const HttpDataArray& a, const std::string& what, std::string_view dt) {
  auto range = [&] {
    return http_bad(what + ": element " + std::to_string(i) + " (" + http_leaf_text(v, a) + ") is out of range for " +
                    std::string(dt));
  };
  if (v.kind == HttpLeaf::Uint) {
    if (v.u > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw range();
    return static_cast<T>(v.u);
  }
  if (v.kind == HttpLeaf::Int) {
    if constexpr (std::is_unsigned_v<T>) {
      if (v.i < 0 || static_cast<uint64_t>(v.i) > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw range();
    } else {
      if (v.i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          v.i > static_cast<int64_t>(std::numeric_limits<T>::max()))
        throw range();
    }
    return static_cast<T>(v.i);
  }
  throw http_bad(what + ": element " + std::to_string(i) + " is " + http_leaf_kind(v) + ", not an integer as " +
                 std::string(dt) + " needs");
}

double http_leaf_float(const HttpLeaf& v, uint64_t i, const HttpDataArray& a, const std::string& what,
                       std::string_view dt, double max) {
  double d;
  switch (v.kind) {
    case HttpLeaf::Float: d = v.d; break;
    case HttpLeaf::Int: d = static_cast<double>(v.i); break;
    case HttpLeaf::Uint: d = static_cast<double>(v.u); break;
    default:
      throw http_bad(what + ": element " + std::to_string(i) + " is " + http_leaf_kind(v) + ", not a number as " +
                     std::string(dt) + " needs");
  }
  if (std::fabs(d) > max)
    throw http_bad(what + ": element " + std::to_string(i) + " (" + http_leaf_text(v, a) + ") is out of range for " +
                   std::string(dt));
  return d;
}

template <class T, class Conv>
Tensor http_fill(const HttpDataArray& a, DataType dt, const std::vector<int64_t>& dims, Conv conv) {
  Tensor t = allocate_for_overwrite(dt, dims);
  T* out = t.mutable_data<T>();
  const size_t n = a.leaves.size();
  for (size_t i = 0; i < n; ++i) out[i] = conv(a.leaves[i], i);
  return t;
}

template <class T>
Tensor http_fill_ints(const HttpDataArray& a, DataType dt, const std::vector<int64_t>& dims, const std::string& what,
                      std::string_view dtname) {
  return http_fill<T>(a, dt, dims,
                      [&](const HttpLeaf& v, uint64_t i) { return http_leaf_int<T>(v, i, a, what, dtname); });
}

// An input tensor from its captured JSON "data" (whose strings it takes).
Tensor http_tensor_from_data(HttpDataArray& a, DataType dt, std::string_view dtname, const std::vector<int64_t>& dims,
                             uint64_t count, const std::string& what) {
  http_check_data(a, dims, count, what);
  switch (dt) {
    case DataType::Float:
      return http_fill<float>(a, dt, dims, [&](const HttpLeaf& v, uint64_t i) {
        return static_cast<float>(http_leaf_float(v, i, a, what, dtname, FLT_MAX));
      });
    case DataType::Double:
      return http_fill<double>(a, dt, dims, [&](const HttpLeaf& v, uint64_t i) {
        return http_leaf_float(v, i, a, what, dtname, DBL_MAX);
      });
    case DataType::Float16:
      return http_fill<uint16_t>(a, dt, dims, [&](const HttpLeaf& v, uint64_t i) {
        return float_to_half(static_cast<float>(http_leaf_float(v, i, a, what, dtname, 65504.0)));
      });
    case DataType::BFloat16:
      return http_fill<uint16_t>(a, dt, dims, [&](const HttpLeaf& v, uint64_t i) {
        return float_to_bfloat16(static_cast<float>(http_leaf_float(v, i, a, what, dtname, 3.3895313892515355e38)));
      });
    case DataType::Int8: return http_fill_ints<int8_t>(a, dt, dims, what, dtname);
    case DataType::UInt8: return http_fill_ints<uint8_t>(a, dt, dims, what, dtname);
    case DataType::Int16: return http_fill_ints<int16_t>(a, dt, dims, what, dtname);
    case DataType::UInt16: return http_fill_ints<uint16_t>(a, dt, dims, what, dtname);
    case DataType::Int32: return http_fill_ints<int32_t>(a, dt, dims, what, dtname);
    case DataType::UInt32: return http_fill_ints<uint32_t>(a, dt, dims, what, dtname);
    case DataType::Int64: return http_fill_ints<int64_t>(a, dt, dims, what, dtname);
    case DataType::UInt64: return http_fill_ints<uint64_t>(a, dt, dims, what, dtname);
    case DataType::Bool:
      return http_fill<uint8_t>(a, dt, dims, [&](const HttpLeaf& v, uint64_t i) -> uint8_t {
        if (v.kind != HttpLeaf::Bool)
          throw http_bad(what + ": element " + std::to_string(i) + " is " + http_leaf_kind(v) +
                         ", not true or false as BOOL needs");
        return v.b ? 1 : 0;
      });
    case DataType::String: {
      std::vector<std::string> values(a.leaves.size());
      for (size_t i = 0; i < a.leaves.size(); ++i) {
        const HttpLeaf& v = a.leaves[i];
        if (v.kind != HttpLeaf::String)
          throw http_bad(what + ": element " + std::to_string(i) + " is " + http_leaf_kind(v) +
                         ", not a string as BYTES needs");
        values[i] = std::move(a.strings[v.s]);
      }
      return Tensor::strings({}, dims, std::move(values));
    }
    default:
      throw http_bad(what + ": datatype " + std::string(dtname) + " is not supported");
  }
}

// ---- A fast path for large numeric "data" arrays ----
// nlohmann's lexer takes about 100 ns a number (strtod on a copied token): 15 ms for a 224x224 RGB image. Before the
// SAX parse, a scan finds the arrays that are the "data" of an object in the top-level "inputs" array and hold only
// numbers, booleans and nulls in valid JSON, and the parse sees `null` in their place; the SAX handler then takes
// each such array's scalars from the original text with std::from_chars. Any doubt (a key with an escape, an array
// with a string or an object, anything malformed) leaves the array, or the whole request, to nlohmann, so the answers
// and error messages are those of the plain parse.

struct HttpFastData {
  std::string text;                                  // the JSON with the fast arrays replaced by null
  std::vector<std::optional<std::string_view>> data; // each "data" value at the inputs' depth, in order: its array
                                                     // text when replaced
};

const char* http_skip_ws(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  return p;
}

// A JSON number's extent from p (RFC 8259 grammar); nullptr when none starts there.
const char* http_number_end(const char* p, const char* end) {
  if (p < end && *p == '-') ++p;
  if (p >= end) return nullptr;
  if (*p == '0') {
    ++p;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && *p >= '0' && *p <= '9') ++p;
  } else {
    return nullptr;
  }
  if (p < end && *p == '.') {
    ++p;
    if (p >= end || *p < '0' || *p > '9') return nullptr;
    while (p < end && *p >= '0' && *p <= '9') ++p;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (p >= end || *p < '0' || *p > '9') return nullptr;
    while (p < end && *p >= '0' && *p <= '9') ++p;
  }
  return p;
}

// The end of a valid array of numbers, booleans, nulls and nested such arrays starting at p ('['); nullptr if the
// array is anything else (nlohmann then parses it and reports what is wrong).
const char* http_scalar_array_end(const char* p, const char* end) {
  int depth = 0;
  bool expect_value = true;  // after '[' or ','
  bool after_open = false;
  while (p < end) {
    p = http_skip_ws(p, end);
    if (p >= end) return nullptr;
    const char c = *p;
    if (expect_value) {
      if (c == '[') {
        ++depth;
        ++p;
        after_open = true;
        continue;
      }
      if (c == ']' && after_open) {  // an empty array
        --depth;
        ++p;
        after_open = false;
        expect_value = false;
        if (depth == 0) return p;
        continue;
      }
      after_open = false;
      if (c == 't' && end - p >= 4 && std::memcmp(p, "true", 4) == 0) {
        p += 4;
      } else if (c == 'f' && end - p >= 5 && std::memcmp(p, "false", 5) == 0) {
        p += 5;
      } else if (c == 'n' && end - p >= 4 && std::memcmp(p, "null", 4) == 0) {
        p += 4;
      } else {
        p = http_number_end(p, end);
        if (!p) return nullptr;
      }
      expect_value = false;
      continue;
    }
    if (c == ',') {
      expect_value = true;
      ++p;
    } else if (c == ']') {
      --depth;
      ++p;
      if (depth == 0) return p;
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

// Finds the inputs' "data" arrays that the fast path can take. nullopt: none, or the text's structure is not the
// plain one the scan follows (then nlohmann parses all of it).
std::optional<HttpFastData> http_find_fast_data(std::string_view text, size_t min_bytes) {
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  struct Open {
    bool object;
    std::string_view key;  // objects: the last key
  };
  std::vector<Open> stack;
  HttpFastData out;
  std::vector<std::pair<const char*, const char*>> replaced;
  std::string_view inputs_parent_key;
  bool any = false;
  const char* p = begin;
  while (p < end) {
    p = http_skip_ws(p, end);
    if (p >= end) break;
    const char c = *p;
    if (c == '"') {
      const char* q = p + 1;
      bool escaped = false;
      while (q < end && *q != '"') {
        if (*q == '\\') {
          escaped = true;
          if (++q == end) break;  // a backslash that ends the text: never step past the end
        }
        ++q;
      }
      if (q >= end) return std::nullopt;
      const std::string_view str(p + 1, static_cast<size_t>(q - p - 1));
      p = q + 1;
      const char* after = http_skip_ws(p, end);
      if (!stack.empty() && stack.back().object && after < end && *after == ':') {
        if (escaped) return std::nullopt;  // a key nlohmann would unescape: the scan could miss "data" or "inputs"
        stack.back().key = str;
        p = after + 1;
        // The value of "data" in an object of the root's "inputs" array.
        const char* v = http_skip_ws(p, end);
        if (str == "data" && stack.size() == 3 && stack[0].object && stack[0].key == "inputs" && !stack[1].object &&
            stack[2].object) {
          const char* array_end = v < end && *v == '[' ? http_scalar_array_end(v, end) : nullptr;
          if (array_end && static_cast<size_t>(array_end - v) >= min_bytes) {
            out.data.emplace_back(std::string_view(v, static_cast<size_t>(array_end - v)));
            replaced.emplace_back(v, array_end);
            any = true;
            p = array_end;
          } else {
            out.data.emplace_back(std::nullopt);
          }
        }
      }
      continue;
    }
    if (c == '{' || c == '[') {
      stack.push_back({c == '{', {}});
      ++p;
    } else if (c == '}' || c == ']') {
      if (stack.empty()) return std::nullopt;
      stack.pop_back();
      ++p;
    } else {
      ++p;  // commas, colons, scalars: nlohmann checks them
    }
  }
  if (!any) return std::nullopt;
  const char* from = begin;
  for (const auto& [b, e] : replaced) {
    out.text.append(from, b);
    out.text += "null";
    from = e;
  }
  out.text.append(from, end);
  return out;
}

// nlohmann's SAX interface: builds the DOM (as nlohmann's own DOM parser does: a stack of the open containers)
// except for arrays under "data" in the objects of the top-level "inputs" array, which go to `arrays`; the DOM
// holds a binary value there (which JSON text cannot produce) whose subtype is the array's index.
class HttpInferSax {
 public:
  json root;
  std::vector<HttpDataArray> arrays;
  std::string error;       // malformed JSON
  std::string data_error;  // well-formed JSON that no input's "data" can be

  // The fast arrays (http_find_fast_data), one entry per "data" value at the inputs' depth.
  std::vector<std::optional<std::string_view>> fast;

  bool null() {
    if (fast_pending_) {
      const std::string_view text = *fast_pending_;
      fast_pending_.reset();
      return fast_array(text);
    }
    return scalar(nullptr, HttpLeaf{HttpLeaf::Null, {}});
  }
  bool boolean(bool v) {
    HttpLeaf l{HttpLeaf::Bool, {}};
    l.b = v;
    return scalar(v, l);
  }
  bool number_integer(json::number_integer_t v) { return scalar(v, HttpLeaf{HttpLeaf::Int, {v}}); }
  bool number_unsigned(json::number_unsigned_t v) {
    HttpLeaf l{HttpLeaf::Uint, {}};
    l.u = v;
    return scalar(v, l);
  }
  bool number_float(json::number_float_t v, const json::string_t&) {
    HttpLeaf l{HttpLeaf::Float, {}};
    l.d = v;
    return scalar(v, l);
  }
  bool string(json::string_t& v) {
    if (capture_) {
      HttpLeaf l{HttpLeaf::String, {}};
      l.s = capture_->strings.size();
      capture_->strings.push_back(std::move(v));
      return leaf(l);
    }
    add(std::move(v));
    return true;
  }
  bool binary(json::binary_t&) { return false; }  // not produced by JSON text
  bool start_object(std::size_t) {
    if (capture_) {
      data_error = "an input's \"data\" holds an object, not numbers, booleans or strings";
      return false;
    }
    stack_.push_back(add(json::object()));
    return true;
  }
  bool key(json::string_t& k) {
    key_ = std::move(k);
    fast_pending_.reset();
    if (!fast.empty() && !capture_ && key_ == "data" && stack_.size() == 3 && stack_[1] == inputs_ &&
        stack_[2]->is_object() && fast_next_ < fast.size())
      fast_pending_ = fast[fast_next_++];
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    if (capture_) {
      HttpDataArray& a = *capture_;
      ++counts_.back();
      counts_.push_back(0);
      if (a.dims.size() < counts_.size()) a.dims.push_back(-1);
      return true;
    }
    if (stack_.size() == 3 && stack_[1] == inputs_ && stack_[2]->is_object() && key_ == "data") {
      (*stack_[2])["data"] = json::binary({}, static_cast<std::uint64_t>(arrays.size()));
      capture_ = &arrays.emplace_back();
      counts_.assign(1, 0);
      capture_->dims.push_back(-1);
      return true;
    }
    json* a = add(json::array());
    if (stack_.size() == 1 && stack_[0]->is_object() && key_ == "inputs") inputs_ = a;
    stack_.push_back(a);
    return true;
  }
  bool end_array() {
    if (capture_) {
      HttpDataArray& a = *capture_;
      const size_t depth = counts_.size();
      const auto n = static_cast<int64_t>(counts_.back());
      if (a.dims[depth - 1] == -1)
        a.dims[depth - 1] = n;
      else if (a.dims[depth - 1] != n)
        a.irregular = true;
      counts_.pop_back();
      if (counts_.empty()) capture_ = nullptr;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error = e.what();
    return false;
  }

 private:
  // Replays a validated array's events (http_scalar_array_end checked its grammar) as nlohmann would send them.
  bool fast_array(std::string_view text) {
    const char* p = text.data();
    const char* const end = p + text.size();
    while (p < end) {
      p = http_skip_ws(p, end);
      if (p >= end) break;
      const char c = *p;
      if (c == '[') {
        if (!start_array(0)) return false;
        ++p;
      } else if (c == ']') {
        if (!end_array()) return false;
        ++p;
      } else if (c == ',') {
        ++p;
      } else if (c == 't') {
        boolean(true);
        p += 4;
      } else if (c == 'f') {
        boolean(false);
        p += 5;
      } else if (c == 'n') {
        scalar(nullptr, HttpLeaf{HttpLeaf::Null, {}});
        p += 4;
      } else {
        const char* e = http_number_end(p, end);
        bool integral = true;
        for (const char* q = p; q < e; ++q) integral = integral && *q != '.' && *q != 'e' && *q != 'E';
        // nlohmann's kinds: a negative integer is number_integer, a non-negative one number_unsigned, and an
        // integer out of their range, or any fraction or exponent, number_float.
        if (integral && *p == '-') {
          int64_t v = 0;
          if (std::from_chars(p, e, v).ec == std::errc()) {
            number_integer(v);
            p = e;
            continue;
          }
        } else if (integral) {
          uint64_t v = 0;
          if (std::from_chars(p, e, v).ec == std::errc()) {
            number_unsigned(v);
            p = e;
            continue;
          }
        }
        double d = 0;
        if (std::from_chars(p, e, d).ec == std::errc::result_out_of_range) {
          // from_chars refuses underflow too, which JSON parsers read as 0 or a subnormal: ask strtod.
          d = std::strtod(std::string(p, e).c_str(), nullptr);
          if (!std::isfinite(d)) {
            data_error = "an input's \"data\" holds a number out of the range of a double: " + std::string(p, e);
            return false;
          }
        }
        number_float(d, {});
        p = e;
      }
    }
    return true;
  }

  template <class V>
  bool scalar(V&& v, const HttpLeaf& l) {
    if (capture_) return leaf(l);
    add(std::forward<V>(v));
    return true;
  }
  bool leaf(const HttpLeaf& l) {
    HttpDataArray& a = *capture_;
    ++counts_.back();
    if (a.leaf_depth == 0)
      a.leaf_depth = counts_.size();
    else if (a.leaf_depth != counts_.size())
      a.irregular = true;
    a.leaves.push_back(l);
    return true;
  }
  template <class V>
  json* add(V&& v) {
    if (stack_.empty()) {
      root = json(std::forward<V>(v));
      return &root;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.get_ref<json::array_t&>().emplace_back(std::forward<V>(v));
      return &top.get_ref<json::array_t&>().back();
    }
    json& slot = top[key_];
    slot = json(std::forward<V>(v));
    return &slot;
  }

  std::vector<json*> stack_;  // the open containers of the DOM
  std::string key_;           // the last object key
  json* inputs_ = nullptr;    // the top-level "inputs" array
  HttpDataArray* capture_ = nullptr;
  std::vector<uint64_t> counts_;  // while capturing: elements so far in each open array
  size_t fast_next_ = 0;          // the next entry of `fast`
  std::optional<std::string_view> fast_pending_;  // the array that the coming null stands for
};

const json* http_member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string http_get_string(const json& obj, const char* key, const std::string& what, bool required) {
  const json* v = http_member(obj, key);
  if (!v) {
    if (required) throw http_bad(what + ": \"" + key + "\" is missing");
    return {};
  }
  if (!v->is_string()) throw http_bad(what + ": \"" + key + "\" must be a string, not " + http_json_kind(*v));
  return v->get<std::string>();
}

const json* http_get_object(const json& obj, const char* key, const std::string& what) {
  const json* v = http_member(obj, key);
  if (v && !v->is_null() && !v->is_object())
    throw http_bad(what + ": \"" + key + "\" must be an object, not " + http_json_kind(*v));
  return v && v->is_object() ? v : nullptr;
}

std::optional<bool> http_get_bool(const json* params, const char* key, const std::string& what) {
  if (!params) return std::nullopt;
  const json* v = http_member(*params, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw http_bad(what + ": parameter \"" + key + "\" must be true or false");
  return v->get<bool>();
}

std::optional<uint64_t> http_get_uint(const json* params, const char* key, const std::string& what) {
  if (!params) return std::nullopt;
  const json* v = http_member(*params, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer() && v->get<int64_t>() >= 0) return static_cast<uint64_t>(v->get<int64_t>());
  throw http_bad(what + ": parameter \"" + key + "\" must be a non-negative integer, not " + http_value_text(*v));
}

json http_parse_json(std::string_view text, const char* what) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw http_bad(std::string("malformed JSON in ") + what + ": " + e.what());
  }
}

// Everything the response needs to know about the request once the Core answers.
struct HttpInferContext {
  bool binary_default = false;  // request parameter binary_data_output
};

// Builds the Core's request from the body (JSON, or JSON + binary tensor data).
InferRequest http_parse_infer(const HttpBodyBuffer& body, std::optional<uint64_t> header_len, HttpInferContext& ctx) {
  const std::string_view all = body.view();
  std::string_view json_text = all, binary;
  if (header_len) {
    if (*header_len > all.size())
      throw http_bad(std::string(kHttpBinaryHeader) + " " + std::to_string(*header_len) +
                     " is larger than the body (" + std::to_string(all.size()) + " bytes)");
    json_text = all.substr(0, *header_len);
    binary = all.substr(*header_len);
  }
  if (json_text.empty()) throw http_bad("the inference request has no JSON body");
  HttpInferSax sax;
  // Small requests go through nlohmann alone: the scan pays off on arrays of a few hundred numbers and more.
  const auto fast = http_find_fast_data(json_text, 4096);
  if (fast) {
    sax.fast = fast->data;
    json_text = fast->text;
  }
  if (!json::sax_parse(json_text.begin(), json_text.end(), &sax))
    throw http_bad(!sax.data_error.empty() ? sax.data_error : "malformed JSON in the inference request: " + sax.error);
  const json& j = sax.root;
  if (!j.is_object()) throw http_bad("the inference request must be a JSON object");

  InferRequest r;
  if (const json* id = http_member(j, "id")) {
    if (!id->is_string()) throw http_bad("the request's \"id\" must be a string");
    r.id = id->get<std::string>();
  }
  const json* params = http_get_object(j, "parameters", "the request");
  if (auto b = http_get_bool(params, "binary_data_output", "the request")) ctx.binary_default = *b;
  if (auto t = http_get_uint(params, "timeout", "the request")) r.timeout_us = *t;

  const json* inputs = http_member(j, "inputs");
  if (!inputs || !inputs->is_array()) throw http_bad("the request's \"inputs\" must be an array");
  r.inputs.reserve(inputs->size());
  uint64_t offset = 0;  // into `binary`
  for (const json& in : *inputs) {
    if (!in.is_object()) throw http_bad("each of the request's \"inputs\" must be an object");
    InferTensor tensor;
    tensor.name = http_get_string(in, "name", "an input", true);
    const std::string what = "input '" + tensor.name + "'";
    const std::string dtname = http_get_string(in, "datatype", what, true);
    const auto dt = dtype_from_v2(dtname);
    if (!dt) throw http_bad(what + ": unknown datatype '" + dtname + "'");
    const json* shape = http_member(in, "shape");
    if (!shape || !shape->is_array()) throw http_bad(what + ": \"shape\" must be an array of integers");
    std::vector<int64_t> dims;
    dims.reserve(shape->size());
    uint64_t count = 1;
    bool overflow = false;
    for (const json& d : *shape) {
      if (!d.is_number_integer()) throw http_bad(what + ": \"shape\" must be an array of integers");
      if (d.is_number_unsigned() && d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        throw http_bad(what + ": dimension " + http_value_text(d) + " is too large");
      const int64_t v = d.get<int64_t>();
      if (v < 0) throw http_bad(what + ": shape " + http_value_text(*shape) + " has a negative dimension");
      dims.push_back(v);
      overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(v), &count);
    }
    if (overflow || count > static_cast<uint64_t>(INT64_MAX))
      throw http_bad(what + ": shape " + http_shape_text(dims) + " has too many elements");
    const json* iparams = http_get_object(in, "parameters", what);
    if (iparams && iparams->contains("shared_memory_region"))
      throw http_bad(what + ": shared memory is not supported");
    const auto binary_size = http_get_uint(iparams, "binary_data_size", what);
    const json* data = http_member(in, "data");
    if (data && binary_size) throw http_bad(what + ": has both \"data\" and binary_data_size");
    if (binary_size) {
      if (!header_len)
        throw http_bad(what + ": binary_data_size given but the request has no " + std::string(kHttpBinaryHeader) +
                       " header");
      if (*binary_size > binary.size() - offset)
        throw http_bad(what + ": binary_data_size " + std::to_string(*binary_size) + " runs past the body's end (" +
                       std::to_string(binary.size() - offset) + " binary bytes left): the body is truncated");
      const std::string_view raw = binary.substr(offset, *binary_size);
      offset += *binary_size;
      if (*dt == DataType::String) {
        tensor.data = Tensor::strings(tensor.name, std::move(dims), decode_bytes_elements(raw, count, tensor.name));
      } else {
        const size_t esize = v2_element_size(*dt);
        if (esize == 0) throw http_bad(what + ": datatype " + dtname + " is not supported");
        const uint64_t expected = count * esize;
        if (count != 0 && expected / count != esize) throw http_bad(what + ": too many elements");
        if (raw.size() != expected)
          throw http_bad(what + ": binary_data_size is " + std::to_string(raw.size()) + " bytes but " + dtname +
                         " " + http_shape_text(dims) + " needs " + std::to_string(expected));
        const bool aligned = reinterpret_cast<uintptr_t>(raw.data()) % std::min<size_t>(esize, 8) == 0;
        if (aligned) {
          tensor.data = Tensor::view(tensor.name, *dt, std::move(dims), raw, body.storage, /*mapped=*/false);
        } else {
          // Misaligned (the JSON part's length is not a multiple of the element size): kernels read through typed
          // pointers, so copy into aligned memory.
          Tensor t = allocate_for_overwrite(*dt, std::move(dims));
          if (!raw.empty()) std::memcpy(t.mutable_data<char>(), raw.data(), raw.size());
          t.set_name(tensor.name);
          tensor.data = std::move(t);
        }
        if (*dt == DataType::Bool)
          if (auto bad = invalid_bool(tensor.data))
            throw http_bad(what + ": BOOL element " + std::to_string(bad->index) + " is byte " +
                           std::to_string(bad->byte) + ", not 0 or 1");
      }
    } else if (data) {
      if (!data->is_binary()) throw http_bad(what + ": \"data\" must be an array, not " + http_json_kind(*data));
      tensor.data = http_tensor_from_data(sax.arrays.at(data->get_binary().subtype()), *dt, dtname, dims, count, what);
      tensor.data.set_name(tensor.name);
    } else {
      throw http_bad(what + ": has neither \"data\" nor binary_data_size");
    }
    r.inputs.push_back(std::move(tensor));
  }
  if (offset != binary.size())
    throw http_bad("the body has " + std::to_string(binary.size()) + " bytes of binary data but the inputs' "
                   "binary_data_size add up to " + std::to_string(offset));

  if (const json* outputs = http_member(j, "outputs")) {
    if (!outputs->is_array()) throw http_bad("the request's \"outputs\" must be an array");
    for (const json& out : *outputs) {
      if (!out.is_object()) throw http_bad("each of the request's \"outputs\" must be an object");
      RequestedOutput o;
      o.name = http_get_string(out, "name", "an output", true);
      const std::string what = "output '" + o.name + "'";
      const json* oparams = http_get_object(out, "parameters", what);
      if (oparams && oparams->contains("shared_memory_region"))
        throw http_bad(what + ": shared memory is not supported");
      o.binary = http_get_bool(oparams, "binary_data", what).value_or(ctx.binary_default);
      if (oparams)
        if (const json* c = http_member(*oparams, "classification")) {
          if (!c->is_number_integer()) throw http_bad(what + ": parameter \"classification\" must be an integer");
          o.classification = c->get<int64_t>();
        }
      r.outputs.push_back(std::move(o));
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// JSON of the Core's metadata, statistics and configuration.

void http_duration(ojson& j, const char* key, const Duration& d) { j[key] = {{"count", d.count}, {"ns", d.ns}}; }

std::string http_stats_json(const std::vector<ModelStats>& stats) {
  ojson list = ojson::array();
  for (const ModelStats& s : stats) {
    ojson inf = ojson::object();
    http_duration(inf, "success", s.success);
    http_duration(inf, "fail", s.fail);
    http_duration(inf, "queue", s.queue);
    http_duration(inf, "compute_input", s.compute_input);
    http_duration(inf, "compute_infer", s.compute_infer);
    http_duration(inf, "compute_output", s.compute_output);
    http_duration(inf, "cache_hit", Duration{});  // no response cache: Triton reports zeros
    http_duration(inf, "cache_miss", Duration{});
    ojson batches = ojson::array();
    for (const BatchStat& b : s.batch_stats) {
      ojson bj = {{"batch_size", b.batch_size}};
      http_duration(bj, "compute_input", b.compute_input);
      http_duration(bj, "compute_infer", b.compute_infer);
      http_duration(bj, "compute_output", b.compute_output);
      batches.push_back(std::move(bj));
    }
    list.push_back({{"name", s.name},
                    {"version", s.version},
                    {"last_inference", s.last_inference_ms},
                    {"inference_count", s.inference_count},
                    {"execution_count", s.execution_count},
                    {"inference_stats", std::move(inf)},
                    {"batch_stats", std::move(batches)}});
  }
  return ojson{{"model_stats", std::move(list)}}.dump();
}

ojson http_tensor_meta(const std::vector<TensorMeta>& v) {
  ojson a = ojson::array();
  for (const TensorMeta& t : v) a.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
  return a;
}

// Protobuf's JSON writes 64-bit integers as strings; Triton's clients read dims and the like as numbers, as Triton
// writes them. Walks the JSON alongside the message's descriptor and turns those strings back into numbers.
void http_fix_int64(ojson& j, const google::protobuf::Descriptor* desc) {
  using FD = google::protobuf::FieldDescriptor;
  if (!j.is_object() || !desc) return;
  for (auto& [key, value] : j.items()) {
    const FD* f = desc->FindFieldByName(key);  // the JSON keeps the proto's field names
    if (!f) continue;
    auto fix_scalar = [](ojson& v, const FD* fd) {
      if (!v.is_string()) return;
      const std::string s = v.get<std::string>();
      if (fd->cpp_type() == FD::CPPTYPE_INT64) {
        int64_t x = 0;
        auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), x);
        if (e == std::errc() && p == s.data() + s.size()) v = x;
      } else if (fd->cpp_type() == FD::CPPTYPE_UINT64) {
        uint64_t x = 0;
        auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), x);
        if (e == std::errc() && p == s.data() + s.size()) v = x;
      }
    };
    auto fix_value = [&](ojson& v, const FD* fd) {
      if (fd->cpp_type() == FD::CPPTYPE_MESSAGE)
        http_fix_int64(v, fd->message_type());
      else
        fix_scalar(v, fd);
    };
    if (f->is_map()) {
      const FD* vf = f->message_type()->FindFieldByName("value");
      if (value.is_object() && vf)
        for (auto& [k, mv] : value.items()) fix_value(mv, vf);
    } else if (f->is_repeated()) {
      if (value.is_array())
        for (ojson& e : value) fix_value(e, f);
    } else {
      fix_value(value, f);
    }
  }
}

std::string http_config_json(const inference::ModelConfig& config) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;  // Triton shows defaults too (max_batch_size 0, ...)
  std::string out;
  auto st = google::protobuf::util::MessageToJsonString(config, &out, opts);
  if (!st.ok()) throw ServeError(Code::Internal, "cannot write the model configuration as JSON: " + st.ToString());
  ojson j = ojson::parse(out);
  http_fix_int64(j, inference::ModelConfig::descriptor());
  return j.dump();
}

// ---------------------------------------------------------------------------------------------------------------
// The server.

struct HttpSession;

// State the sessions share with the front; held by every session, so a session a Core worker still holds after
// stop() can be destroyed safely (its socket's io_context outlives it).
struct HttpShared {
  HttpShared(Core& c, HttpOptions o) : core(c), options(std::move(o)) {}
  Core& core;
  HttpOptions options;
  // One io_context per I/O thread, each connection on one of them: a connection's reads, handlers and writes stay
  // on one thread. With one io_context run by several threads, a completion could wake another thread (a
  // cross-core hand-off of some 10 µs, twice a request).
  std::vector<std::unique_ptr<net::io_context>> iocs = [n = std::max(1, options.threads)] {
    std::vector<std::unique_ptr<net::io_context>> v;
    for (int i = 0; i < n; ++i) v.push_back(std::make_unique<net::io_context>(1));
    return v;
  }();
  std::atomic<size_t> next_ioc{0};
  net::io_context& pick_ioc() { return *iocs[next_ioc.fetch_add(1) % iocs.size()]; }
  std::mutex mutex;
  bool stopped = false;  // under mutex: no new session starts, no response is posted
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions;
};

struct HttpReply {
  int status = 200;
  std::string body;
  std::string_view content_type = "application/json";
};

struct HttpSession : std::enable_shared_from_this<HttpSession> {
  HttpSession(tcp::socket s, std::shared_ptr<HttpShared> sh)
      : shared(std::move(sh)), socket(std::move(s)), linger_timer(socket.get_executor()) {}

  ~HttpSession() {
    std::lock_guard lock(shared->mutex);
    shared->sessions.erase(this);
  }

  void start() {
    {
      std::lock_guard lock(shared->mutex);
      if (shared->stopped) {
        close();
        return;
      }
      shared->sessions.emplace(this, weak_from_this());
    }
    read_header();
  }

  // Posted by stop(): ends whatever the session waits for.
  void close() {
    beast::error_code ec;
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
    linger_timer.cancel();
  }

  void read_header() {
    parser.emplace();
    parser->header_limit(64 * 1024);
    parser->body_limit(shared->options.max_body);
    http::async_read_header(socket, buffer, *parser,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  // Read errors: the peer gone (close quietly), a body over the limit (413) or bad HTTP (400).
  void on_read_error(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      send_error(413, "the request body is larger than the limit of " + std::to_string(shared->options.max_body) +
                          " bytes",
                 /*unread_body=*/true);
      return;
    }
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == net::error::eof ||
        ec.category() != beast::http::make_error_code(http::error::bad_method).category()) {
      close();
      return;
    }
    send_error(400, "bad HTTP request: " + ec.message(), /*unread_body=*/true);
  }

  void on_header(beast::error_code ec) {
    received = Clock::now();
    if (ec) return on_read_error(ec);
    auto& req = parser->get();
    keep_alive = req.keep_alive();
    version11 = req.version() >= 11;
    method = req.method_string();
    target = req.target();
    const auto length = parser->content_length();
    bytes_in = length.value_or(0);
    if (length && *length > shared->options.max_body) return on_read_error(http::error::body_limit);
    if (parser->is_done()) return handle();
    auto expect = req.find(http::field::expect);
    if (expect != req.end() && beast::iequals(expect->value(), "100-continue")) {
      // curl and others wait (up to a second) for this before sending a body.
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(socket, net::buffer(kContinue.data(), kContinue.size()),
                       [self = shared_from_this()](beast::error_code ec2, size_t) {
                         if (ec2) return self->close();
                         self->read_body();
                       });
      return;
    }
    read_body();
  }

  void read_body() {
    // Beast reads as much as the buffer's spare capacity (at least 512 bytes): a small buffer would take a body of
    // a megabyte in thousands of reads.
    if (buffer.capacity() < 65536) buffer.reserve(65536);
    http::async_read(socket, buffer, *parser, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->on_read_error(ec);
      self->bytes_in = self->parser->get().body().size;
      self->handle();
    });
  }

  // Dispatches a complete request. Errors thrown by the routes become {"error": ...} answers.
  void handle() {
    try {
      decode_content_encoding();
      route();
    } catch (const ServeError& e) {
      send_error(http_status(e.code()), e.what());
    } catch (const json::exception& e) {
      send_error(400, e.what());
    } catch (const std::exception& e) {
      send_error(500, e.what());
    }
  }

  // Triton's HTTP endpoint takes gzip and deflate request bodies; the body is replaced by its inflated bytes.
  void decode_content_encoding() {
    auto& req = parser->get();
    auto it = req.find(http::field::content_encoding);
    if (it == req.end()) return;
    const auto enc = it->value();
    if (enc.empty() || beast::iequals(enc, "identity")) return;
    const bool gzip = beast::iequals(enc, "gzip");
    if (!gzip && !beast::iequals(enc, "deflate"))
      throw ServeError(Code::InvalidArgument,
                       "unsupported Content-Encoding '" + std::string(enc) + "' (gzip, deflate or identity)");
    uint64_t json_len = 0;
    if (auto h = req.find(kHttpBinaryHeader); h != req.end()) {
      const auto v = h->value();
      std::from_chars(v.data(), v.data() + v.size(), json_len);
    }
    req.body() = http_inflate_body(req.body().view(), gzip, json_len, shared->options.max_body);
  }

  void require(http::verb v) {
    if (parser->get().method() != v)
      throw MethodNotAllowed{std::string(v == http::verb::get ? "GET" : "POST")};
  }
  struct MethodNotAllowed {
    std::string allowed;
  };

  void route() {
    std::string_view path = target;
    if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
    std::vector<std::string> seg;
    for (size_t i = 0; i < path.size();) {
      size_t j = path.find('/', i);
      if (j == std::string_view::npos) j = path.size();
      if (j > i) seg.push_back(http_percent_decode(path.substr(i, j - i)));
      i = j + 1;
    }
    try {
      if (!route_v2(seg)) send_error(404, "no route for " + std::string(path));
    } catch (const MethodNotAllowed& m) {
      send_error(405, "method " + method + " is not allowed for " + std::string(path) + " (use " + m.allowed + ")");
    }
  }

  // True when the path names a route (the answer is then sent or on its way).
  bool route_v2(const std::vector<std::string>& seg) {
    Core& core = shared->core;
    const size_t n = seg.size();
    if (n == 0 || seg[0] != "v2") return false;
    if (n == 1) {
      require(http::verb::get);
      const ServerMeta m = core.server_metadata();
      send(200, ojson{{"name", m.name}, {"version", m.version}, {"extensions", m.extensions}}.dump());
      return true;
    }
    if (seg[1] == "health" && n == 3) {
      if (seg[2] == "live") {
        require(http::verb::get);
        send(core.live() ? 200 : 400, {}, {});  // Triton: 400 when not live
        return true;
      }
      if (seg[2] == "ready") {
        require(http::verb::get);
        send(core.ready() ? 200 : 503, {}, {});
        return true;
      }
      return false;
    }
    if (seg[1] == "models") {
      if (n == 2) return false;
      if (n == 3 && seg[2] == "stats") {
        require(http::verb::get);
        send(200, http_stats_json(core.statistics("", "")));
        return true;
      }
      const std::string& model = seg[2];
      std::string version;
      size_t i = 3;
      if (n >= 5 && seg[3] == "versions") {
        version = seg[4];
        i = 5;
      } else if (n == 4 && seg[3] == "versions") {
        return false;
      }
      if (i == n) {
        require(http::verb::get);
        const ModelMeta m = core.model_metadata(model, version);
        send(200, ojson{{"name", m.name},
                       {"versions", m.versions},
                       {"platform", m.platform},
                       {"inputs", http_tensor_meta(m.inputs)},
                       {"outputs", http_tensor_meta(m.outputs)}}
                      .dump());
        return true;
      }
      if (i + 1 != n) return false;
      const std::string& action = seg[i];
      if (action == "infer") {
        require(http::verb::post);
        start_infer(model, version);
        return true;
      }
      if (action == "ready") {
        require(http::verb::get);
        if (!core.model_ready(model, version)) {
          // model_ready() does not tell an unknown model from one not ready: the metadata call does (NotFound).
          try {
            core.model_metadata(model, version);
          } catch (const ServeError& e) {
            if (e.code() == Code::NotFound) throw;
          }
          send(503, {}, {});
          return true;
        }
        send(200, {}, {});
        return true;
      }
      if (action == "config") {
        require(http::verb::get);
        send(200, http_config_json(core.model_config(model, version)));
        return true;
      }
      if (action == "stats") {
        require(http::verb::get);
        send(200, http_stats_json(core.statistics(model, version)));
        return true;
      }
      return false;
    }
    if (seg[1] == "repository") {
      if (n == 3 && seg[2] == "index") {
        require(http::verb::post);
        bool ready_only = false;
        const std::string_view body = parser->get().body().view();
        if (body.find_first_not_of(" \t\r\n") != std::string_view::npos) {
          const json j = http_parse_json(body, "the repository index request");
          if (!j.is_object()) throw http_bad("the repository index request must be a JSON object");
          if (auto r = http_get_bool(&j, "ready", "the repository index request")) ready_only = *r;
        }
        ojson list = ojson::array();
        for (const RepoEntry& e : core.repository_index(ready_only))
          list.push_back({{"name", e.name}, {"version", e.version}, {"state", e.state}, {"reason", e.reason}});
        send(200, list.dump());
        return true;
      }
      if (n == 5 && seg[2] == "models" && (seg[4] == "load" || seg[4] == "unload")) {
        require(http::verb::post);
        const std::string& model = seg[3];
        const std::string_view body = parser->get().body().view();
        std::string config;
        if (body.find_first_not_of(" \t\r\n") != std::string_view::npos) {
          const json j = http_parse_json(body, "the repository request");
          if (!j.is_object()) throw http_bad("the repository request must be a JSON object");
          if (const json* params = http_get_object(j, "parameters", "the repository request")) {
            for (auto& [key, value] : params->items()) {
              if (seg[4] == "unload") break;  // unload_dependents: nothing depends on anything here
              if (key == "config") {
                if (value.is_string())
                  config = value.get<std::string>();
                else if (value.is_object())
                  config = value.dump();
                else
                  throw http_bad("parameter \"config\" must be a JSON string");
              } else if (key.rfind("file:", 0) == 0) {
                throw http_bad("parameter \"" + key + "\": loading model files from the request is not supported");
              }
            }
          }
        }
        if (seg[4] == "load")
          core.load_model(model, config);
        else
          core.unload_model(model);
        send(200, {}, {});
        return true;
      }
      return false;
    }
    return false;
  }

  void start_infer(const std::string& model, const std::string& version) {
    auto& req = parser->get();
    std::optional<uint64_t> header_len;
    if (auto it = req.find(kHttpBinaryHeader); it != req.end()) {
      const auto v = it->value();
      uint64_t x = 0;
      auto [p, e] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (e != std::errc() || p != v.data() + v.size())
        throw http_bad(std::string(kHttpBinaryHeader) + " is not a number: " + std::string(v));
      header_len = x;
    }
    HttpInferContext ctx;
    InferRequest r = http_parse_infer(req.body(), header_len, ctx);
    r.model = model;
    r.version = version;
    r.received = received;
    shared->core.infer(std::move(r), [self = shared_from_this(), ctx](Status st, InferResponse resp) {
      // A Core worker's thread: hand the answer to the connection's strand; never touch the socket here.
      std::lock_guard lock(self->shared->mutex);
      if (self->shared->stopped) return;  // the I/O threads are gone or going; the client is disconnected
      net::post(self->socket.get_executor(), [self, ctx, st = std::move(st), resp = std::move(resp)]() mutable {
        self->finish_infer(ctx, std::move(st), std::move(resp));
      });
    });
  }

  void finish_infer(const HttpInferContext& ctx, Status st, InferResponse resp) {
    if (!st.ok()) return send_error(http_status(st.code), st.message);
    try {
      std::string js;
      js.reserve(256);
      js += "{\"model_name\":";
      append_json_string(js, resp.model);
      js += ",\"model_version\":";
      append_json_string(js, resp.version);
      if (!resp.id.empty()) {
        js += ",\"id\":";
        append_json_string(js, resp.id);
      }
      js += ",\"outputs\":[";
      std::vector<std::string_view> binaries;
      out_strings.clear();
      out_strings.reserve(resp.outputs.size());  // no reallocation: `binaries` views these strings
      out_tensors.clear();
      for (size_t i = 0; i < resp.outputs.size(); ++i) {
        const InferTensor& o = resp.outputs[i];
        const Tensor& t = o.data;
        const std::string_view dt = dtype_to_v2(t.dtype());
        if (dt.empty())
          throw ServeError(Code::Internal, "output '" + o.name + "' has type " + std::string(dtype_name(t.dtype())) +
                                               ", which the protocol cannot carry");
        bool binary = ctx.binary_default;
        if (i < resp.requested.size() && resp.requested[i].name == o.name) {
          binary = resp.requested[i].binary;
        } else {
          for (const RequestedOutput& r : resp.requested)
            if (r.name == o.name) binary = r.binary;
        }
        if (i) js += ',';
        js += "{\"name\":";
        append_json_string(js, o.name);
        js += ",\"datatype\":\"";
        js += dt;
        js += "\",\"shape\":";
        http_append_dims(js, t.dims());
        if (binary) {
          std::string_view bytes;
          if (t.dtype() == DataType::String) {
            out_strings.push_back(encode_bytes_elements(t.string_values()));
            bytes = out_strings.back();
          } else {
            bytes = t.bytes();
            out_tensors.push_back(t);  // keeps the bytes alive until written
          }
          binaries.push_back(bytes);
          js += ",\"parameters\":{\"binary_data_size\":";
          http_append_number(js, static_cast<uint64_t>(bytes.size()));
          js += "}}";
        } else {
          js += ",\"data\":";
          http_append_tensor_data(js, t);
          js += '}';
        }
      }
      js += "]}";
      if (binaries.empty()) return send(200, std::move(js));
      size_t total = js.size();
      for (auto b : binaries) total += b.size();
      const std::string extra = std::string(kHttpBinaryHeader) + ": " + std::to_string(js.size()) + "\r\n";
      write_response(200, "application/octet-stream", extra, std::move(js), total, binaries);
    } catch (const ServeError& e) {
      send_error(http_status(e.code()), e.what());
    } catch (const std::exception& e) {
      send_error(500, e.what());
    }
  }

  void send(int status, std::string body, std::string_view content_type = "application/json") {
    const size_t n = body.size();
    if (n == 0) content_type = {};
    write_response(status, content_type, {}, std::move(body), n, {});
  }

  // `unread_body`: the request's body (if any) was not read, so the connection cannot carry another request.
  void send_error(int status, std::string_view message, bool unread_body = false) {
    if (unread_body) {
      keep_alive = false;
      linger = true;
    }
    send(status, http_error_body(message));
  }

  // One gathered write: status line, headers and `body` in one buffer, then the binary outputs (not copied).
  void write_response(int status, std::string_view content_type, std::string_view extra_headers, std::string body,
                      size_t content_length, const std::vector<std::string_view>& tail) {
    status_code = status;
    head.clear();
    head.reserve(160 + body.size());
    head += "HTTP/1.1 ";
    head += std::to_string(status);
    head += ' ';
    const auto reason = http::obsolete_reason(static_cast<http::status>(status));
    head.append(reason.data(), reason.size());
    head += "\r\nServer: onyx\r\n";
    if (!content_type.empty()) {
      head += "Content-Type: ";
      head += content_type;
      head += "\r\n";
    }
    head += extra_headers;
    head += "Content-Length: ";
    head += std::to_string(content_length);
    head += "\r\n";
    if (!keep_alive)
      head += "Connection: close\r\n";
    else if (!version11)
      head += "Connection: keep-alive\r\n";
    head += "\r\n";
    head += body;
    bufs.clear();
    bufs.emplace_back(head.data(), head.size());
    for (auto b : tail)
      if (!b.empty()) bufs.emplace_back(b.data(), b.size());
    bytes_out = head.size() + (content_length - body.size());
    net::async_write(socket, bufs, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_write(ec); });
  }

  void on_write(beast::error_code ec) {
    if (shared->options.access_log) log_access();
    out_tensors.clear();
    out_strings.clear();
    if (ec) return close();
    if (keep_alive) return read_header();
    beast::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_send, ignored);
    if (!linger) return close();
    // The client may still be sending the body we refused: read and drop it for a moment, so that closing does
    // not reset the connection before the client has read our answer.
    linger_timer.expires_after(std::chrono::seconds(2));
    linger_timer.async_wait([self = shared_from_this()](beast::error_code e) {
      if (!e) self->close();
    });
    drain();
  }

  void drain() {
    socket.async_read_some(net::buffer(drain_buf), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->drain();
    });
  }

  void log_access() {
    std::string line = "{\"time\":\"" + access_log_time() + "\",\"method\":";
    append_json_string(line, method);
    line += ",\"path\":";
    append_json_string(line, target);
    line += ",\"status\":" + std::to_string(status_code);
    line += ",\"bytes_in\":" + std::to_string(bytes_in);
    line += ",\"bytes_out\":" + std::to_string(bytes_out);
    line += ",\"duration_us\":" +
            std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - received).count());
    line += "}\n";
    std::fwrite(line.data(), 1, line.size(), stderr);  // one call per line, so threads do not interleave
  }

  std::shared_ptr<HttpShared> shared;
  tcp::socket socket;
  beast::flat_buffer buffer;
  std::optional<http::request_parser<HttpAlignedBody>> parser;
  net::steady_timer linger_timer;
  // The request being served.
  Clock::time_point received;
  std::string method, target;
  uint64_t bytes_in = 0, bytes_out = 0;
  bool keep_alive = true, version11 = true, linger = false;
  int status_code = 0;
  // The response being written.
  std::string head;
  std::vector<std::string> out_strings;
  std::vector<Tensor> out_tensors;
  std::vector<net::const_buffer> bufs;
  std::array<char, 16384> drain_buf{};
};

// An I/O thread's loop: a handler that throws is reported and the loop goes on, so one bad request never stops
// the thread (and with it every connection it serves).
void http_run_io(net::io_context& ioc, const char* what) {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "onyx serve: %s: %s\n", what, e.what());
    }
  }
}

}  // namespace


struct HttpFront::Impl {
  std::shared_ptr<HttpShared> shared;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  // Keep each io_context's run() going while its thread has no connection.
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards;
  int port = 0;
  bool running = false;

  void accept() {
    acceptor->async_accept(net::make_strand(shared->pick_ioc()), [this](beast::error_code ec, tcp::socket s) {
      if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
      if (!ec) {
        beast::error_code ignored;
        s.set_option(tcp::no_delay(true), ignored);
        std::make_shared<HttpSession>(std::move(s), shared)->start();
      }
      // Transient errors (too many open files, ...) must not stop the server: go on accepting.
      accept();
    });
  }
};

HttpFront::HttpFront(Core& core, HttpOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->shared = std::make_shared<HttpShared>(core, std::move(options));
}

HttpFront::~HttpFront() { stop(); }

void HttpFront::start() {
  Impl& m = *impl_;
  if (m.running) return;
  const HttpOptions& o = m.shared->options;
  try {
    const tcp::endpoint ep(net::ip::make_address(o.address), static_cast<unsigned short>(o.port));
    m.acceptor.emplace(net::make_strand(*m.shared->iocs[0]));  // its handlers and stop()'s close never overlap
    m.acceptor->open(ep.protocol());
    m.acceptor->set_option(net::socket_base::reuse_address(true));
    m.acceptor->bind(ep);
    m.acceptor->listen(net::socket_base::max_listen_connections);
    m.port = m.acceptor->local_endpoint().port();
  } catch (const std::exception& e) {
    m.acceptor.reset();
    throw ServeError(Code::Unavailable,
                     "cannot listen for HTTP on " + o.address + ":" + std::to_string(o.port) + ": " + e.what());
  }
  m.running = true;
  m.accept();
  for (auto& ioc : m.shared->iocs) {
    m.guards.push_back(net::make_work_guard(*ioc));
    m.threads.emplace_back([shared = m.shared, ioc = ioc.get()] { http_run_io(*ioc, "HTTP I/O thread"); });
  }
}

void HttpFront::stop() {
  Impl& m = *impl_;
  if (!m.running) return;
  m.running = false;
  std::vector<std::shared_ptr<HttpSession>> live;
  {
    std::lock_guard lock(m.shared->mutex);
    m.shared->stopped = true;
    for (auto& [p, w] : m.shared->sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  // Close on the I/O threads (sockets are not thread-safe); once nothing is pending, run() returns.
  net::post(m.acceptor->get_executor(), [&m] {
    beast::error_code ignored;
    m.acceptor->close(ignored);
  });
  for (auto& s : live) net::post(s->socket.get_executor(), [s] { s->close(); });
  live.clear();
  m.guards.clear();
  for (auto& t : m.threads) t.join();
  m.threads.clear();
  m.acceptor.reset();
}

int HttpFront::port() const { return impl_->port; }

// ---- The metrics port (GET /metrics): here rather than in metrics.cpp, so that Beast compiles once ----

namespace {

// One connection to the metrics port: keep-alive requests, one at a time, on the front's single thread.
struct MetricsSession : std::enable_shared_from_this<MetricsSession> {
  MetricsSession(tcp::socket s, const Core& c) : socket(std::move(s)), core(c) {}

  void read() {
    parser.emplace();
    parser->body_limit(64 * 1024);  // scrapes have no body
    http::async_read(socket, buffer, *parser, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->answer();
    });
  }

  void answer() {
    const auto& req = parser->get();
    std::string_view path(req.target().data(), req.target().size());
    if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
    response = {};
    response.version(11);
    response.keep_alive(req.keep_alive());
    response.set(http::field::server, "onyx");
    if (path == "/metrics" && (req.method() == http::verb::get || req.method() == http::verb::head)) {
      response.result(http::status::ok);
      response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      try {
        response.body() = prometheus_metrics(core);
      } catch (const std::exception& e) {
        response.result(http::status::internal_server_error);
        response.body() = std::string("cannot collect the metrics: ") + e.what() + "\n";
      }
    } else {
      response.result(http::status::not_found);
      response.set(http::field::content_type, "text/plain");
      response.body() = "not found: the metrics are at GET /metrics\n";
    }
    response.prepare_payload();
    if (req.method() == http::verb::head) response.body().clear();  // Content-Length still tells the size
    http::async_write(socket, response, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || !self->response.keep_alive()) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  tcp::socket socket;
  const Core& core;
  beast::flat_buffer buffer;
  std::optional<http::request_parser<http::string_body>> parser;
  http::response<http::string_body> response;
};

}  // namespace

struct MetricsFront::Impl {
  Impl(const Core& c, MetricsOptions o) : core(c), options(std::move(o)) {}
  const Core& core;
  MetricsOptions options;
  // Declared before the acceptor: destroying the io_context destroys the handlers still queued, and with them
  // the sessions they hold, after the acceptor is gone.
  net::io_context ioc{1};
  std::optional<tcp::acceptor> acceptor;
  std::thread thread;
  int port = 0;
  bool running = false;

  void accept() {
    acceptor->async_accept(ioc, [this](beast::error_code ec, tcp::socket s) {
      if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
      if (!ec) {
        beast::error_code ignored;
        s.set_option(tcp::no_delay(true), ignored);
        std::make_shared<MetricsSession>(std::move(s), core)->read();
      }
      accept();
    });
  }
};

MetricsFront::MetricsFront(const Core& core, MetricsOptions options)
    : impl_(std::make_unique<Impl>(core, std::move(options))) {}

MetricsFront::~MetricsFront() { stop(); }

void MetricsFront::start() {
  Impl& m = *impl_;
  if (m.running) return;
  try {
    const tcp::endpoint ep(net::ip::make_address(m.options.address), static_cast<unsigned short>(m.options.port));
    m.acceptor.emplace(m.ioc);
    m.acceptor->open(ep.protocol());
    m.acceptor->set_option(net::socket_base::reuse_address(true));
    m.acceptor->bind(ep);
    m.acceptor->listen(net::socket_base::max_listen_connections);
    m.port = m.acceptor->local_endpoint().port();
  } catch (const std::exception& e) {
    m.acceptor.reset();
    throw ServeError(Code::Unavailable, "cannot listen for metrics on " + m.options.address + ":" +
                                            std::to_string(m.options.port) + ": " + e.what());
  }
  m.running = true;
  m.accept();
  m.thread = std::thread([&m] { http_run_io(m.ioc, "metrics thread"); });
}

void MetricsFront::stop() {
  Impl& m = *impl_;
  if (!m.running) return;
  m.running = false;
  // Scrapes hold no state worth finishing: stop the loop; the sessions go with the io_context's queued handlers.
  m.ioc.stop();
  if (m.thread.joinable()) m.thread.join();
  beast::error_code ignored;
  m.acceptor->close(ignored);
}

int MetricsFront::port() const { return impl_->port; }

}  // namespace onyx::serve
