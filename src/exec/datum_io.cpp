#include "exec/datum_io.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "base/element_count.hpp"
#include "base/error.hpp"
#include "format/mapped_file.hpp"
#include "format/model_read.hpp"
#include "format/tensor_data.hpp"
#include "ir/scalar.hpp"

namespace onyx {

namespace {

Type type_of_elem(int32_t elem_type, const Datum* first) {
  if (first) return first->type();
  Type t;
  if (elem_type == 1) t.kind = Type::Kind::Tensor;
  if (elem_type == 3) t.kind = Type::Kind::Sequence;
  if (elem_type == 4) t.kind = Type::Kind::Map;
  if (elem_type == 5) t.kind = Type::Kind::Optional;
  return t;
}

}  // namespace

Datum datum_from_tensor_proto(const pb::Tensor& t, std::string_view what) {
  // Test data never uses external files; a copy makes the value independent of the file's mapping.
  return Datum::of(tensor_from_proto(t, nullptr, what, nullptr).clone());
}

Datum datum_from_sequence_proto(const pb::SequenceValue& s, std::string_view what) {
  std::vector<Datum> items;
  for (const auto& t : s.tensor_values) items.push_back(datum_from_tensor_proto(t, what));
  for (const auto& q : s.sequence_values) items.push_back(datum_from_sequence_proto(q, what));
  for (const auto& m : s.map_values) items.push_back(datum_from_map_proto(m, what));
  for (const auto& o : s.optional_values) items.push_back(datum_from_optional_proto(o, what));
  if (!s.sparse_tensor_values.empty()) fail(what, ": sequences of sparse tensors are not supported");
  Type elem = type_of_elem(s.elem_type.value_or(0), items.empty() ? nullptr : &items[0]);
  if (elem.kind == Type::Kind::Tensor) elem.shape = {};  // elements may differ in shape
  return Datum::sequence(std::move(items), elem);
}

Datum datum_from_map_proto(const pb::MapValue& m, std::string_view what) {
  Datum d;
  d.kind = Datum::Kind::Map;
  auto key_type = static_cast<DataType>(m.key_type.value_or(0));
  if (key_type == DataType::String) {
    d.map_keys = Tensor::strings("", {static_cast<int64_t>(m.string_keys.size())},
                                 std::vector<std::string>(m.string_keys.begin(), m.string_keys.end()));
  } else {
    d.map_keys = Tensor::allocate(DataType::Int64, {static_cast<int64_t>(m.keys.size())});
    std::memcpy(d.map_keys.mutable_data<int64_t>(), m.keys.data(), m.keys.size() * 8);
  }
  d.map_values = std::make_shared<Datum>(m.values ? datum_from_sequence_proto(*m.values, what) : Datum{});
  return d;
}

Datum datum_from_optional_proto(const pb::OptionalValue& o, std::string_view what) {
  std::optional<Datum> v;
  if (o.tensor_value) v = datum_from_tensor_proto(*o.tensor_value, what);
  if (o.sequence_value) v = datum_from_sequence_proto(*o.sequence_value, what);
  if (o.map_value) v = datum_from_map_proto(*o.map_value, what);
  if (o.optional_value) v = datum_from_optional_proto(*o.optional_value, what);
  if (o.sparse_tensor_value) fail(what, ": optional sparse tensors are not supported");
  Type elem = type_of_elem(o.elem_type.value_or(0), v ? &*v : nullptr);
  return Datum::optional(std::move(v), elem);
}

namespace {

// numpy .npy: magic, version, header dict ('descr', 'fortran_order', 'shape'), then the raw data.
Datum read_npy(const std::filesystem::path& path) {
  auto file = MappedFile::open(path);
  std::string_view b = file->view();
  auto bad = [&](const std::string& why) { fail(path.string(), ": not a readable .npy file: ", why); };
  if (b.size() < 10 || b.substr(0, 6) != "\x93NUMPY") bad("missing magic");
  uint8_t major = static_cast<uint8_t>(b[6]);
  size_t header_len, start;
  if (major == 1) {
    header_len = static_cast<uint8_t>(b[8]) | (static_cast<uint8_t>(b[9]) << 8);
    start = 10;
  } else {
    if (b.size() < 12) bad("truncated header");
    uint32_t n;
    std::memcpy(&n, b.data() + 8, 4);
    header_len = n;
    start = 12;
  }
  if (start + header_len > b.size()) bad("truncated header");
  std::string header(b.substr(start, header_len));
  auto field = [&](const std::string& key) {
    auto k = header.find("'" + key + "'");
    if (k == std::string::npos) bad("no '" + key + "' in header");
    auto colon = header.find(':', k);
    return header.substr(colon + 1);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  if (field("fortran_order").find("True") < field("fortran_order").find(',')) bad("Fortran order is not supported");
  std::string shape = field("shape");
  shape = shape.substr(shape.find('(') + 1, shape.find(')') - shape.find('(') - 1);
  std::vector<int64_t> dims;
  for (size_t p = 0; p < shape.size();) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p >= shape.size()) break;
    size_t q = p;
    while (q < shape.size() && std::isdigit(static_cast<unsigned char>(shape[q]))) ++q;
    if (q == p) bad("bad shape");
    if (q - p > 18) bad("dimension " + shape.substr(p, q - p) + " is too large");
    dims.push_back(std::stoll(shape.substr(p, q - p)));
    p = q;
  }
  static const std::pair<const char*, DataType> kTypes[] = {
      {"<f4", DataType::Float}, {"<f8", DataType::Double}, {"<f2", DataType::Float16}, {"|i1", DataType::Int8},
      {"<i2", DataType::Int16}, {"<i4", DataType::Int32},  {"<i8", DataType::Int64},   {"|u1", DataType::UInt8},
      {"<u2", DataType::UInt16}, {"<u4", DataType::UInt32}, {"<u8", DataType::UInt64}, {"|b1", DataType::Bool},
      {"<c8", DataType::Complex64}, {"<c16", DataType::Complex128}};
  DataType dt = DataType::Undefined;
  for (const auto& [name, t] : kTypes)
    if (descr == name) dt = t;
  if (dt == DataType::Undefined) bad("element type '" + descr + "' is not supported");
  // The file must hold the data its header declares before anything is allocated for it.
  const auto checked_count = checked_element_count(dims);
  if (!checked_count) bad("the shape's element count overflows int64");
  const uint64_t count = *checked_count;
  const size_t data_start = start + header_len;
  const auto need = raw_byte_size(dt, count);
  if (!need || *need > b.size() - data_start)
    bad(cat("the shape needs ", count, " elements of ", dt, ", the file holds ", b.size() - data_start, " bytes of data"));
  Tensor t = Tensor::allocate(dt, dims);
  if (!t.bytes().empty()) std::memcpy(t.mutable_data<char>(), b.data() + data_start, t.bytes().size());
  return Datum::of(std::move(t));
}

}  // namespace

Datum load_datum(const std::filesystem::path& path, const Type& expected) {
  if (path.extension() == ".npy") return read_npy(path);
  auto file = MappedFile::open(path);
  std::string label = path.string();
  switch (expected.kind) {
    case Type::Kind::Sequence: return datum_from_sequence_proto(pb::parse_sequence(file->view(), label), label);
    case Type::Kind::Map: return datum_from_map_proto(pb::parse_map(file->view(), label), label);
    case Type::Kind::Optional: return datum_from_optional_proto(pb::parse_optional(file->view(), label), label);
    default: return datum_from_tensor_proto(pb::parse_tensor(file->view(), label), label);
  }
}

namespace {

pb::Tensor tensor_proto(const Tensor& t, const std::string& name, pb::Arena& arena) {
  pb::Tensor p;
  p.name = arena.save(name);
  p.data_type = static_cast<int32_t>(t.dtype());
  p.dims = t.dims();
  if (t.dtype() == DataType::String) {
    for (const auto& s : t.string_values()) p.string_data.push_back(arena.save(s));
  } else {
    p.raw_data = arena.save(std::string(t.bytes()));
  }
  return p;
}

pb::SequenceValue sequence_proto(const Datum& d, const std::string& name, pb::Arena& arena);
pb::MapValue map_proto(const Datum& d, const std::string& name, pb::Arena& arena);
pb::OptionalValue optional_proto(const Datum& d, const std::string& name, pb::Arena& arena);

int32_t elem_kind(const Type& t) {
  switch (t.kind) {
    case Type::Kind::Tensor: return 1;
    case Type::Kind::SparseTensor: return 2;
    case Type::Kind::Sequence: return 3;
    case Type::Kind::Map: return 4;
    case Type::Kind::Optional: return 5;
    default: return 0;
  }
}

pb::SequenceValue sequence_proto(const Datum& d, const std::string& name, pb::Arena& arena) {
  pb::SequenceValue s;
  s.name = arena.save(name);
  s.elem_type = elem_kind(d.elem_type);
  for (const Datum& e : d.elements) {
    switch (e.kind) {
      case Datum::Kind::Tensor: s.tensor_values.push_back(tensor_proto(e.tensor, "", arena)); break;
      case Datum::Kind::Sequence: s.sequence_values.push_back(sequence_proto(e, "", arena)); break;
      case Datum::Kind::Map: s.map_values.push_back(map_proto(e, "", arena)); break;
      case Datum::Kind::Optional: s.optional_values.push_back(optional_proto(e, "", arena)); break;
      case Datum::Kind::Empty: fail("a sequence element is empty");
    }
  }
  return s;
}

pb::MapValue map_proto(const Datum& d, const std::string& name, pb::Arena& arena) {
  pb::MapValue m;
  m.name = arena.save(name);
  m.key_type = static_cast<int32_t>(d.map_keys.dtype());
  if (d.map_keys.dtype() == DataType::String) {
    for (const auto& k : d.map_keys.string_values()) m.string_keys.push_back(arena.save(k));
  } else {
    for (int64_t k : std::vector<int64_t>(d.map_keys.data<int64_t>(), d.map_keys.data<int64_t>() + d.map_keys.element_count()))
      m.keys.push_back(k);
  }
  if (d.map_values) m.values.emplace() = sequence_proto(*d.map_values, "", arena);
  return m;
}

pb::OptionalValue optional_proto(const Datum& d, const std::string& name, pb::Arena& arena) {
  pb::OptionalValue o;
  o.name = arena.save(name);
  o.elem_type = elem_kind(d.elem_type);
  if (!d.elements.empty()) {
    const Datum& e = d.elements[0];
    switch (e.kind) {
      case Datum::Kind::Tensor: o.tensor_value = tensor_proto(e.tensor, "", arena); break;
      case Datum::Kind::Sequence: o.sequence_value.emplace() = sequence_proto(e, "", arena); break;
      case Datum::Kind::Map: o.map_value.emplace() = map_proto(e, "", arena); break;
      case Datum::Kind::Optional: o.optional_value.emplace() = optional_proto(e, "", arena); break;
      case Datum::Kind::Empty: break;
    }
  }
  return o;
}

}  // namespace

std::string serialize_datum(const Datum& d, const std::string& name) {
  pb::Arena arena;
  switch (d.kind) {
    case Datum::Kind::Tensor: return pb::serialize_tensor(tensor_proto(d.tensor, name, arena));
    case Datum::Kind::Sequence: return pb::serialize_sequence(sequence_proto(d, name, arena));
    case Datum::Kind::Map: return pb::serialize_map(map_proto(d, name, arena));
    case Datum::Kind::Optional: return pb::serialize_optional(optional_proto(d, name, arena));
    case Datum::Kind::Empty: break;
  }
  fail("value '", name, "' is empty");
}

void save_datum(const Datum& d, const std::string& name, const std::filesystem::path& path) {
  std::string bytes = serialize_datum(d, name);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path.string(), ": cannot open for writing");
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) fail(path.string(), ": write failed");
}

namespace {

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace

std::optional<std::string> compare_datums(const Datum& e, const Datum& a, double rtol, double atol) {
  if (e.kind != a.kind) return cat("expected ", e.describe(), ", got ", a.describe());
  switch (e.kind) {
    case Datum::Kind::Sequence:
    case Datum::Kind::Optional: {
      if (e.elements.size() != a.elements.size())
        return cat("expected ", e.elements.size(), " elements, got ", a.elements.size());
      for (size_t i = 0; i < e.elements.size(); ++i)
        if (auto d = compare_datums(e.elements[i], a.elements[i], rtol, atol)) return cat("element ", i, ": ", *d);
      return std::nullopt;
    }
    case Datum::Kind::Map: {
      if (auto d = compare_datums(Datum::of(e.map_keys), Datum::of(a.map_keys), 0, 0)) return "keys: " + *d;
      if (e.map_values && a.map_values) return compare_datums(*e.map_values, *a.map_values, rtol, atol);
      return std::nullopt;
    }
    case Datum::Kind::Empty: return std::nullopt;
    case Datum::Kind::Tensor: break;
  }
  const Tensor& x = e.tensor;
  const Tensor& y = a.tensor;
  if (x.dims() != y.dims()) return cat("shape: expected ", dims_str(x.dims()), ", got ", dims_str(y.dims()));
  if (x.dtype() == DataType::String || y.dtype() == DataType::String) {
    if (x.dtype() != y.dtype()) return cat("element type: expected ", x.dtype(), ", got ", y.dtype());
    for (size_t i = 0; i < x.string_values().size(); ++i)
      if (x.string_values()[i] != y.string_values()[i])
        return cat("element ", i, ": expected \"", x.string_values()[i], "\", got \"", y.string_values()[i], "\"");
    return std::nullopt;
  }
  if (x.dtype() != y.dtype()) return cat("element type: expected ", x.dtype(), ", got ", y.dtype());
  uint64_t n = x.element_count();
  if (x.dtype() == DataType::Complex64 || x.dtype() == DataType::Complex128) n *= 2;
  bool packed = dtype_bits(x.dtype()) < 8;
  for (uint64_t i = 0; i < n; ++i) {
    double ev, av;
    if (packed) {
      // Compare packed sub-byte values element by element through their float value.
      ev = double_of(x.dtype(), x.bytes().data(), i);
      av = double_of(y.dtype(), y.bytes().data(), i);
    } else if (x.dtype() == DataType::Complex64) {
      ev = x.data<float>()[i];
      av = y.data<float>()[i];
    } else if (x.dtype() == DataType::Complex128) {
      ev = x.data<double>()[i];
      av = y.data<double>()[i];
    } else {
      ev = double_of(x.dtype(), x.bytes().data(), i);
      av = double_of(y.dtype(), y.bytes().data(), i);
    }
    if (std::isnan(ev) && std::isnan(av)) continue;
    if (std::isinf(ev) || std::isinf(av)) {
      if (ev == av) continue;
    } else if (std::abs(ev - av) <= atol + rtol * std::abs(ev)) {
      continue;
    }
    return cat("element ", i, " of ", n, ": expected ", ev, ", got ", av);
  }
  return std::nullopt;
}

std::optional<std::string> compare_datums_range(const Datum& e, const Datum& a) {
  if (e.kind != a.kind) return cat("expected ", e.describe(), ", got ", a.describe());
  switch (e.kind) {
    case Datum::Kind::Sequence:
    case Datum::Kind::Optional: {
      if (e.elements.size() != a.elements.size())
        return cat("expected ", e.elements.size(), " elements, got ", a.elements.size());
      for (size_t i = 0; i < e.elements.size(); ++i)
        if (auto d = compare_datums_range(e.elements[i], a.elements[i])) return cat("element ", i, ": ", *d);
      return std::nullopt;
    }
    case Datum::Kind::Map: {
      if (e.map_values && a.map_values) return compare_datums_range(*e.map_values, *a.map_values);
      return std::nullopt;
    }
    case Datum::Kind::Empty: return std::nullopt;
    case Datum::Kind::Tensor: break;
  }
  const Tensor& x = e.tensor;
  const Tensor& y = a.tensor;
  if (x.dims() != y.dims()) return cat("shape: expected ", dims_str(x.dims()), ", got ", dims_str(y.dims()));
  if (x.dtype() != y.dtype()) return cat("element type: expected ", x.dtype(), ", got ", y.dtype());
  if (x.dtype() == DataType::String || x.dtype() == DataType::Bool) return std::nullopt;
  uint64_t n = x.element_count();
  // Complex values: real and imaginary parts are checked against one range.
  const bool complex = x.dtype() == DataType::Complex64 || x.dtype() == DataType::Complex128;
  if (complex) n *= 2;
  auto value = [&](const Tensor& t, uint64_t i) {
    if (t.dtype() == DataType::Complex64) return static_cast<double>(t.data<float>()[i]);
    if (t.dtype() == DataType::Complex128) return t.data<double>()[i];
    return double_of(t.dtype(), t.bytes().data(), i);
  };
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (uint64_t i = 0; i < n; ++i) {
    const double v = value(x, i);
    if (std::isnan(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  for (uint64_t i = 0; i < n; ++i) {
    const double av = value(y, i);
    if (std::isnan(av)) {
      if (std::isnan(value(x, i))) continue;
      return cat("element ", i, " of ", n, ": got NaN, expected a value in [", lo, ", ", hi, "]");
    }
    if (av < lo || av > hi) {
      if (lo > hi) return cat("element ", i, " of ", n, ": got ", av, ", expected NaN (every expected element is NaN)");
      return cat("element ", i, " of ", n, ": got ", av, ", outside the expected range [", lo, ", ", hi, "]");
    }
  }
  return std::nullopt;
}

}  // namespace onyx
