// The checks of tensors and sparse tensors: types, dims, storage fields, external data, sizes.
#include "check/checker_parts.hpp"

#include "base/element_count.hpp"

namespace onyx::check {
namespace detail {

// ---- tensors ----------------------------------------------------------------------------------

void Checker::check_tensor(const pb::Tensor& t, const Where& where) {
  if (!t.data_type) {
    problem(where, " has no data_type");
    return;
  }
  const int32_t type_value = *t.data_type;
  if (type_value == 0) {
    problem(where, " has data_type UNDEFINED");
    return;
  }
  if (!is_known_dtype(type_value)) {
    problem(where, " has unknown data_type ", type_value);
    return;
  }
  const auto dtype = static_cast<DataType>(type_value);

  bool dims_ok = true;
  for (size_t k = 0; k < t.dims.size(); ++k) {
    if (t.dims[k] < 0) {
      problem(where, " has negative dimension ", t.dims[k], " at axis ", k, " (dims ", dims_text(t.dims), ")");
      dims_ok = false;
    }
  }
  if (!dims_ok) return;
  const auto count = checked_element_count(t.dims);
  if (!count) {
    problem(where, " has dims ", dims_text(t.dims), " whose element count overflows 64 bits");
    return;
  }
  const uint64_t n = *count;
  const auto shape = [&] {
    return cat(n, " element", n == 1 ? "" : "s", " of ", dtype, " (dims ", dims_text(t.dims), ")");
  };

  // The inline data fields that hold something.
  struct Field {
    std::string_view name;
    size_t size;
    StorageField kind;
  };
  std::vector<Field> typed;
  if (!t.float_data.empty()) typed.push_back({"float_data", t.float_data.size(), StorageField::FloatData});
  if (!t.int32_data.empty()) typed.push_back({"int32_data", t.int32_data.size(), StorageField::Int32Data});
  if (!t.string_data.empty()) typed.push_back({"string_data", t.string_data.size(), StorageField::StringData});
  if (!t.int64_data.empty()) typed.push_back({"int64_data", t.int64_data.size(), StorageField::Int64Data});
  if (!t.double_data.empty()) typed.push_back({"double_data", t.double_data.size(), StorageField::DoubleData});
  if (!t.uint64_data.empty()) typed.push_back({"uint64_data", t.uint64_data.size(), StorageField::Uint64Data});
  const bool has_raw = t.raw_data && !t.raw_data->empty();

  if (t.data_location && *t.data_location != 0 && *t.data_location != 1) {
    problem(where, " has unknown data_location ", *t.data_location, " (0 DEFAULT or 1 EXTERNAL)");
    return;
  }
  if (t.data_location && *t.data_location == 1) {
    if (has_raw || !typed.empty()) {
      problem(where, " is stored externally but also holds data in '", has_raw ? "raw_data" : typed[0].name, "'");
    }
    std::vector<std::pair<std::string_view, std::string_view>> entries;
    entries.reserve(t.external_data.size());
    for (const auto& e : t.external_data) entries.emplace_back(e.key.value_or(""), e.value.value_or(""));
    const Str name = t.name.value_or("");
    try {
      const ExternalDataRef ref = parse_external_data(entries, name);
      if (opts_.check_external_data) {
        const auto bytes = raw_byte_size(dtype, n);
        if (!bytes) {
          problem(where, ": ", dtype, " tensors cannot be stored externally (they have no raw byte form)");
          return;
        }
        if (!resolver_) resolver_.emplace(doc_.dir, doc_.memory_files);
        resolver_->resolve(ref, *bytes, name);
      }
    } catch (const Error& e) {
      problem(where, ": ", e.what());
    }
    return;
  }

  if (typed.size() + (has_raw ? 1 : 0) > 1) {
    std::string list = has_raw ? "'raw_data'" : "";
    for (const auto& f : typed) list += cat(list.empty() ? "" : " and ", "'", f.name, "'");
    problem(where, " holds data in more than one field: ", list);
    return;
  }

  if (typed.empty()) {
    // raw_data (possibly present but empty) or nothing at all.
    if (dtype == DataType::String) {
      if (has_raw) {
        problem(where, ": string tensors keep their values in 'string_data', not 'raw_data'");
      } else if (n != 0) {
        problem(where, " has no data for its ", shape());
      }
      return;
    }
    if (!t.raw_data) {
      if (n != 0) problem(where, " has no data for its ", shape());
      return;
    }
    const auto expected = raw_byte_size(dtype, n);
    if (!expected) {
      problem(where, ": the raw size of its ", shape(), " overflows 64 bits");
    } else if (t.raw_data->size() != *expected) {
      problem(where, " has ", t.raw_data->size(), " bytes of raw_data but its ", shape(), " take ", *expected,
              " bytes");
    }
    return;
  }

  const Field& f = typed[0];
  const StorageField expected_field = storage_field(dtype);
  if (f.kind != expected_field) {
    if (dtype == DataType::String) {
      problem(where, " holds its values in '", f.name, "' but string tensors use 'string_data'");
    } else {
      problem(where, " holds its values in '", f.name, "' but ", dtype, " tensors use '",
              storage_field_name(expected_field), "' (or 'raw_data')");
    }
    return;
  }
  uint64_t expected = n;
  std::string_view why;
  if (dtype == DataType::Complex64 || dtype == DataType::Complex128) {
    expected = 2 * n;  // n <= 2^63 - 1, so this fits
    why = " (two per complex element)";
  } else if (f.kind == StorageField::Int32Data && dtype_bits(dtype) < 8) {
    const auto per_value = static_cast<uint64_t>(8 / dtype_bits(dtype));
    expected = n / per_value + (n % per_value != 0 ? 1 : 0);
    why = per_value == 2 ? " (two packed 4-bit elements per value)" : " (four packed 2-bit elements per value)";
  }
  if (f.size != expected) {
    problem(where, " has ", f.size, " values in '", f.name, "' but its ", shape(), " need ", expected, why);
  }
}

void Checker::check_sparse_tensor(const pb::SparseTensor& t, const Where& where) {
  for (size_t k = 0; k < t.dims.size(); ++k) {
    if (t.dims[k] < 0) {
      problem(where, " has negative dimension ", t.dims[k], " at axis ", k, " (dims ", dims_text(t.dims), ")");
    }
  }
  if (t.dims.empty()) problem(where, " has no dims (the shape of the dense tensor)");
  if (!t.values) {
    problem(where, " has no values tensor");
    return;
  }
  check_tensor(*t.values, [&] { return cat(where, ": values"); });
  if (t.values->dims.size() != 1) {
    problem(where, ": values must have rank 1 ([NNZ]) but has dims ", dims_text(t.values->dims));
    return;
  }
  const int64_t nnz = t.values->dims[0];
  if (!t.indices) {
    if (nnz != 0) problem(where, " has ", nnz, " values but no indices tensor");
    return;
  }
  const auto& idx = *t.indices;
  check_tensor(idx, [&] { return cat(where, ": indices"); });
  if (idx.data_type && *idx.data_type != static_cast<int32_t>(DataType::Int64)) {
    problem(where, ": indices must be int64 but are ", static_cast<DataType>(*idx.data_type));
  }
  const auto rank = static_cast<int64_t>(t.dims.size());
  const bool linear = idx.dims.size() == 1 && idx.dims[0] == nnz;
  const bool tuples = idx.dims.size() == 2 && idx.dims[0] == nnz && idx.dims[1] == rank;
  if (!linear && !tuples) {
    problem(where, ": indices have dims ", dims_text(idx.dims), " but must be [", nnz, "] or [", nnz, ", ", rank,
            "] for ", nnz, " values of a rank-", rank, " tensor");
  }
}

}  // namespace detail

}  // namespace onyx::check
