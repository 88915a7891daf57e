#include "format/tensor_data.hpp"

#include "base/element_count.hpp"

#include <cstring>
#include <string>

namespace onyx {

uint64_t tensor_element_count(const pb::Tensor& t, std::string_view what) {
  for (int64_t d : t.dims)
    if (d < 0) fail(what, ": negative dimension ", d);
  const auto n = checked_element_count(t.dims);
  if (!n) fail(what, ": element count overflows int64");
  return *n;
}

bool is_external(const pb::Tensor& t) { return t.data_location.value_or(0) == 1; }

std::vector<std::pair<std::string_view, std::string_view>> external_entries(const pb::Tensor& t) {
  std::vector<std::pair<std::string_view, std::string_view>> e;
  e.reserve(t.external_data.size());
  for (const auto& kv : t.external_data) e.emplace_back(kv.key.value_or(""), kv.value.value_or(""));
  return e;
}

namespace {

template <class Src, class Dst>
std::shared_ptr<std::string> narrow(const std::vector<Src>& v) {
  auto s = std::make_shared<std::string>(v.size() * sizeof(Dst), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    Dst d = static_cast<Dst>(v[i]);
    std::memcpy(s->data() + i * sizeof(Dst), &d, sizeof(Dst));
  }
  return s;
}

}  // namespace

const char* storage_field_name(StorageField f) {
  switch (f) {
    case StorageField::FloatData: return "float_data";
    case StorageField::Int32Data: return "int32_data";
    case StorageField::StringData: return "string_data";
    case StorageField::Int64Data: return "int64_data";
    case StorageField::DoubleData: return "double_data";
    case StorageField::Uint64Data: return "uint64_data";
    case StorageField::None: break;
  }
  return "none";
}

TensorBytes tensor_raw_bytes(const pb::Tensor& t, ExternalDataResolver* resolver, std::string_view what) {
  auto dtype = static_cast<DataType>(t.data_type.value_or(0));
  if (!is_known_dtype(t.data_type.value_or(0)) || dtype == DataType::Undefined)
    fail(what, ": unknown data_type ", t.data_type.value_or(0));
  if (dtype == DataType::String) fail(what, ": string tensors have no raw bytes");
  uint64_t n = tensor_element_count(t, what);
  auto bytes = raw_byte_size(dtype, n);
  if (!bytes) fail(what, ": byte size of ", n, " ", dtype, " elements overflows");
  if (is_external(t)) {
    if (!resolver) fail(what, ": external data is not allowed here");
    ExternalDataRef ref = parse_external_data(external_entries(t), t.name.value_or(""));
    auto view = resolver->resolve(ref, *bytes, t.name.value_or(""));
    return {view.bytes, view.keep};
  }
  if (t.raw_data) {
    if (t.raw_data->size() != *bytes)
      fail(what, ": raw_data has ", t.raw_data->size(), " bytes, but ", n, " ", dtype, " elements need ", *bytes);
    return {*t.raw_data, nullptr};
  }
  StorageField field = storage_field(dtype);
  bool complex = dtype == DataType::Complex64 || dtype == DataType::Complex128;
  uint64_t per_value_elements = dtype_bits(dtype) < 8 ? 8 / dtype_bits(dtype) : 1;
  uint64_t want = complex ? n * 2 : (n + per_value_elements - 1) / per_value_elements;
  auto check_count = [&](size_t have) {
    if (have != want) fail(what, ": ", storage_field_name(field), " has ", have, " values, but ", n, " ", dtype, " elements need ", want);
  };
  std::shared_ptr<std::string> out;
  switch (field) {
    case StorageField::FloatData:
      check_count(t.float_data.size());
      out = narrow<float, float>(t.float_data);
      break;
    case StorageField::DoubleData:
      check_count(t.double_data.size());
      out = narrow<double, double>(t.double_data);
      break;
    case StorageField::Int64Data:
      check_count(t.int64_data.size());
      out = narrow<int64_t, int64_t>(t.int64_data);
      break;
    case StorageField::Uint64Data:
      check_count(t.uint64_data.size());
      out = dtype == DataType::UInt32 ? narrow<uint64_t, uint32_t>(t.uint64_data) : narrow<uint64_t, uint64_t>(t.uint64_data);
      break;
    case StorageField::Int32Data:
      check_count(t.int32_data.size());
      switch (dtype_bits(dtype)) {
        case 32: out = narrow<int32_t, int32_t>(t.int32_data); break;
        case 16: out = narrow<int32_t, uint16_t>(t.int32_data); break;
        default: out = narrow<int32_t, uint8_t>(t.int32_data); break;  // 8-bit elements or packed sub-byte bytes
      }
      break;
    case StorageField::StringData:
    case StorageField::None: fail(what, ": ", dtype, " has no typed storage field");
  }
  if (out->size() != *bytes) fail(what, ": converted data has ", out->size(), " bytes, expected ", *bytes);
  return {*out, out};
}

}  // namespace onyx
