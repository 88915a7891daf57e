// The protocol's vocabulary shared by both fronts: status codes per transport, KServe v2 and Triton config
// datatype names, and the length-prefixed raw form of BYTES tensors.
#include <cstring>

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

}  // namespace onyx::serve
