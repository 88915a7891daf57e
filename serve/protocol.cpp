// The protocol's vocabulary shared by both fronts: status codes per transport, KServe v2 and Triton config
// datatype names, and the length-prefixed raw form of BYTES tensors.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "core.hpp"

namespace onyx::serve {

int http_status(Code c) {
  switch (c) {
    case Code::Ok: return 200;
    case Code::InvalidArgument: return 400;
    case Code::NotFound: return 404;
    case Code::Unavailable: return 503;
    case Code::TooLarge: return 413;
    case Code::Internal: return 500;
  }
  return 500;
}

int grpc_status_code(Code c) {
  // The numbers of grpc::StatusCode (and google.rpc.Code), so this file needs no gRPC header.
  switch (c) {
    case Code::Ok: return 0;
    case Code::InvalidArgument: return 3;
    case Code::NotFound: return 5;
    case Code::Unavailable: return 14;
    case Code::TooLarge: return 8;  // RESOURCE_EXHAUSTED
    case Code::Internal: return 13;
  }
  return 13;
}

namespace {
struct ProtocolTypeName {
  DataType dtype;
  const char* v2;
  inference::DataType config;
};
constexpr ProtocolTypeName kProtocolTypes[] = {
    {DataType::Bool, "BOOL", inference::TYPE_BOOL},       {DataType::UInt8, "UINT8", inference::TYPE_UINT8},
    {DataType::UInt16, "UINT16", inference::TYPE_UINT16}, {DataType::UInt32, "UINT32", inference::TYPE_UINT32},
    {DataType::UInt64, "UINT64", inference::TYPE_UINT64}, {DataType::Int8, "INT8", inference::TYPE_INT8},
    {DataType::Int16, "INT16", inference::TYPE_INT16},    {DataType::Int32, "INT32", inference::TYPE_INT32},
    {DataType::Int64, "INT64", inference::TYPE_INT64},    {DataType::Float16, "FP16", inference::TYPE_FP16},
    {DataType::Float, "FP32", inference::TYPE_FP32},      {DataType::Double, "FP64", inference::TYPE_FP64},
    {DataType::String, "BYTES", inference::TYPE_STRING},  {DataType::BFloat16, "BF16", inference::TYPE_BF16},
};
}  // namespace

std::optional<DataType> dtype_from_v2(std::string_view name) {
  for (const auto& t : kProtocolTypes)
    if (name == t.v2) return t.dtype;
  return std::nullopt;
}

std::string_view dtype_to_v2(DataType t) {
  for (const auto& p : kProtocolTypes)
    if (p.dtype == t) return p.v2;
  return {};
}

std::optional<DataType> dtype_from_config(inference::DataType t) {
  for (const auto& p : kProtocolTypes)
    if (p.config == t) return p.dtype;
  return std::nullopt;
}

inference::DataType dtype_to_config(DataType t) {
  for (const auto& p : kProtocolTypes)
    if (p.dtype == t) return p.config;
  return inference::TYPE_INVALID;
}

size_t v2_element_size(DataType t) {
  if (t == DataType::String || dtype_to_v2(t).empty()) return 0;
  return static_cast<size_t>(dtype_bits(t) / 8);
}

std::vector<std::string> decode_bytes_elements(std::string_view raw, uint64_t count, const std::string& what) {
  std::vector<std::string> out;
  // Each element needs at least its 4-byte length: a count the buffer cannot hold is refused before reserving.
  if (count > raw.size() / 4)
    throw ServeError(Code::InvalidArgument, "input '" + what + "': BYTES data holds fewer than the " +
                                                std::to_string(count) + " elements its shape needs");
  out.reserve(count);
  size_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (raw.size() - pos < 4)
      throw ServeError(Code::InvalidArgument, "input '" + what + "': BYTES data ends inside the length of element " +
                                                  std::to_string(i) + " of " + std::to_string(count));
    uint32_t len = 0;
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data() + pos);
    len = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    pos += 4;
    if (raw.size() - pos < len)
      throw ServeError(Code::InvalidArgument, "input '" + what + "': BYTES element " + std::to_string(i) + " says " +
                                                  std::to_string(len) + " bytes but only " +
                                                  std::to_string(raw.size() - pos) + " remain");
    out.emplace_back(raw.substr(pos, len));
    pos += len;
  }
  if (pos != raw.size())
    throw ServeError(Code::InvalidArgument, "input '" + what + "': BYTES data has " + std::to_string(raw.size() - pos) +
                                                " bytes after its " + std::to_string(count) + " elements");
  return out;
}

std::string encode_bytes_elements(const std::vector<std::string>& values) {
  size_t total = 0;
  for (const auto& v : values) total += 4 + v.size();
  std::string out;
  out.reserve(total);
  for (const auto& v : values) {
    const auto n = static_cast<uint32_t>(v.size());
    const char len[4] = {char(n & 0xff), char(n >> 8 & 0xff), char(n >> 16 & 0xff), char(n >> 24 & 0xff)};
    out.append(len, 4);
    out.append(v);
  }
  return out;
}

// JSON string text: control characters escaped, valid UTF-8 copied, any other byte written as \u00XX.
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      size_t j = i + 1;
      while (j < n && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\') ++j;
      out.append(s.data() + i, j - i);
      i = j;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x20) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
      }
      ++i;
      continue;
    }
    // Non-ASCII: copy a valid UTF-8 sequence as is; a byte that starts none is written as \u00XX (its Latin-1
    // reading), so arbitrary BYTES never make the response invalid JSON.
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool valid = len > 0 && i + len <= n;
    for (size_t k = 1; valid && k < len; ++k) valid = (p[i + k] & 0xC0) == 0x80;
    if (valid && len == 3 && ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0))) valid = false;
    if (valid && len == 4 && ((c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90))) valid = false;
    if (valid) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    }
  }
  out += '"';
}

std::string access_log_time() {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char when[96];
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return when;
}

}  // namespace onyx::serve
