#include "ortvalue.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>

#include "base/element_count.hpp"
#include "base/error.hpp"

namespace onyx::python {

namespace {

// ---- OrtDevice ----

// onnxruntime's OrtDevice numbering: device types and memory types.
constexpr int kCpu = 0, kGpu = 1, kFpga = 2, kNpu = 3;

struct OrtDevice {
  int type = kCpu, mem_type = 0, id = 0, vendor = 0;
};

const char* device_type_name(int t) {
  switch (t) {
    case kCpu: return "CPU";
    case kGpu: return "GPU";
    case kFpga: return "FPGA";
    case kNpu: return "NPU";
    default: return "unknown";
  }
}

std::string device_text(const OrtDevice& d) {
  return cat("Device:[DeviceType:", d.type, " (", device_type_name(d.type), ") MemoryType:", d.mem_type,
             " DeviceId:", d.id, " Vendor:", d.vendor, "]");
}

[[noreturn]] void no_device(const std::string& what, const std::string& device) {
  raise("Fail", cat(what, ": onyx has only the CPU device; ", device, " is not available"));
}

// Raises unless `device` (an OrtDevice, onnxruntime's Python OrtDevice holding one as _ort_device, a device name,
// or None) is the CPU.
void require_cpu(py::handle device, const std::string& what) {
  if (device.is_none()) return;
  if (PyUnicode_Check(device.ptr())) {
    auto name = py::cast<std::string>(device);
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower != "cpu") no_device(what, cat("device '", name, "'"));
    return;
  }
  py::handle h = device;
  if (!py::isinstance<OrtDevice>(h) && py::hasattr(h, "_ort_device")) h = device.attr("_ort_device");
  if (!py::isinstance<OrtDevice>(h))
    raise("InvalidArgument", cat(what, ": expected an OrtDevice, got a ", std::string(py::str(py::type::handle_of(device).attr("__name__")))));
  const auto& d = py::cast<const OrtDevice&>(h);
  if (d.type != kCpu) no_device(what, device_text(d));
}

// ---- helpers ----

std::vector<int64_t> dims_from_python(py::handle shape, const std::string& what) {
  std::vector<int64_t> dims;
  try {
    for (py::handle d : py::reinterpret_borrow<py::iterable>(shape)) dims.push_back(py::cast<int64_t>(d));
  } catch (py::error_already_set&) {
    raise("InvalidArgument", cat(what, ": the shape must be a sequence of ints, got ", std::string(py::repr(shape))));
  } catch (py::cast_error&) {
    raise("InvalidArgument", cat(what, ": the shape must be a sequence of ints, got ", std::string(py::repr(shape))));
  }
  for (int64_t d : dims)
    if (d < 0) raise("InvalidArgument", cat(what, ": the shape has the negative dimension ", d));
  return dims;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += cat(i ? "," : "", dims[i]);
  return s + "]";
}

OrtValuePtr make_value(Datum d, bool writable) {
  auto v = std::make_shared<OrtValue>();
  v->datum = std::move(d);
  v->writable = writable;
  return v;
}

// A numpy array (or what numpy.asarray takes) as a tensor of its natural type, viewed where its layout allows.
Tensor tensor_from_array(py::handle obj, const std::string& what) {
  Datum d = datum_from_python(obj, Type::tensor(DataType::Undefined), what);
  return std::move(d.tensor);
}

// Whether a Datum made from `obj` views obj's own writable memory, or a private copy (writable either way),
// versus a read-only array's memory.
bool writable_source(py::handle obj, const Datum& d) {
  if (!d.is_tensor() || !py::isinstance<py::array>(obj)) return true;
  auto a = py::reinterpret_borrow<py::array>(obj);
  if (d.tensor.dtype() == DataType::String || d.tensor.bytes().data() != a.data()) return true;
  return a.writeable();
}

const Tensor& tensor_of(const OrtValue& v, const char* method) {
  if (!v.is_tensor())
    raise("Fail", cat("OrtValue.", method, "(): the value is ", v.is_sparse() ? "a sparse tensor" : v.datum.describe(),
                      ", not a tensor"));
  return v.datum.tensor;
}

std::string value_type_text(const OrtValue& v) {
  if (v.is_sparse()) return cat("sparse_tensor(", dtype_name(v.sparse->values.dtype()), ")");
  if (v.datum.kind == Datum::Kind::Empty) return "unknown";
  return v.datum.type().to_string();
}

// ---- sparse tensors ----

uint64_t dense_count(const std::vector<int64_t>& dims, const std::string& what) {
  auto n = checked_element_count(dims);
  if (!n) raise("InvalidArgument", cat(what, ": dense shape ", dims_text(dims), " is invalid or overflows int64"));
  return *n;
}

int64_t read_int(const Tensor& t, size_t i) {
  if (t.dtype() == DataType::Int32) {
    int32_t v;
    std::memcpy(&v, t.bytes().data() + i * sizeof v, sizeof v);
    return v;
  }
  int64_t v;
  std::memcpy(&v, t.bytes().data() + i * sizeof v, sizeof v);
  return v;
}

// The linear positions of a COO tensor's values, checked in range and distinct.
std::vector<uint64_t> coo_positions(const SparseTensor& s, const std::string& what) {
  const int64_t nnz = s.values.dims().empty() ? 0 : s.values.dims()[0];
  const uint64_t total = dense_count(s.dims, what);
  const size_t rank = s.dims.size();
  const auto& id = s.indices.dims();
  const bool linear = id.size() == 1 && id[0] == nnz;
  const bool coordinates = id.size() == 2 && id[0] == nnz && id[1] == static_cast<int64_t>(rank);
  if (s.indices.dtype() != DataType::Int64 || (!linear && !coordinates))
    raise("InvalidArgument", cat(what, ": indices must be int64 of shape [", nnz, "] (linear) or [", nnz, ", ", rank,
                                 "] (coordinates) for ", nnz, " values of a rank-", rank, " tensor, got ",
                                 dtype_name(s.indices.dtype()), dims_text(id)));
  std::vector<uint64_t> at(static_cast<size_t>(nnz));
  for (size_t k = 0; k < at.size(); ++k) {
    if (linear) {
      const int64_t v = read_int(s.indices, k);
      if (v < 0 || static_cast<uint64_t>(v) >= total)
        raise("InvalidArgument", cat(what, ": index ", v, " of value ", k, " is outside the ", total,
                                     " elements of the dense shape ", dims_text(s.dims)));
      at[k] = static_cast<uint64_t>(v);
    } else {
      uint64_t lin = 0;
      for (size_t j = 0; j < rank; ++j) {
        const int64_t v = read_int(s.indices, k * rank + j);
        if (v < 0 || v >= s.dims[j])
          raise("InvalidArgument", cat(what, ": index ", v, " of value ", k, " is outside axis ", j, " of size ", s.dims[j]));
        lin = lin * static_cast<uint64_t>(s.dims[j]) + static_cast<uint64_t>(v);
      }
      at[k] = lin;
    }
  }
  std::vector<uint64_t> sorted = at;
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end())
    raise("InvalidArgument", cat(what, ": two values are at the same position (linear index ", *dup, ")"));
  return at;
}

Tensor int64_tensor(const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  Tensor t = Tensor::allocate(DataType::Int64, std::move(dims));
  if (!values.empty()) std::memcpy(t.mutable_data<int64_t>(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

// A read-only numpy array of a tensor of `s`, viewing its bytes (numeric types) while keeping `s` alive.
py::object read_only_array(const std::shared_ptr<const SparseValue>& s, const Tensor& t) {
  return tensor_to_numpy(Tensor(t), std::static_pointer_cast<const void>(s));
}

struct PySparseTensor {
  std::shared_ptr<const SparseValue> s;
};
struct SparseCooView {
  std::shared_ptr<const SparseValue> s;
};
struct SparseCsrView {
  std::shared_ptr<const SparseValue> s;
};
struct SparseBlockSparseView {
  std::shared_ptr<const SparseValue> s;
};

const char* format_name(SparseFormat f) {
  switch (f) {
    case SparseFormat::Coo: return "COO";
    case SparseFormat::Csrc: return "CSR";
    case SparseFormat::BlockSparse: return "block-sparse";
    default: return "undefined";
  }
}

void require_format(const SparseValue& s, SparseFormat f, const char* method) {
  if (s.format != f)
    raise("Fail", cat("SparseTensor.", method, "(): the tensor is in ", format_name(s.format), " format, not ",
                      format_name(f)));
}

// The values array of a sparse tensor: numeric types or strings, rank `rank`.
Tensor sparse_values(py::handle values, size_t rank, const std::string& what) {
  Tensor v = tensor_from_array(values, what + " values");
  if (v.dims().size() != rank)
    raise("InvalidArgument", cat(what, ": values must have rank ", rank, ", got shape ", dims_text(v.dims())));
  if (v.dtype() != DataType::String && dtype_bits(v.dtype()) % 8 != 0)
    raise("InvalidArgument", cat(what, ": sparse ", dtype_name(v.dtype()), " tensors are not supported"));
  return v;
}

Tensor index_array(py::handle a, DataType want, const std::string& what) {
  Tensor t = tensor_from_array(a, what);
  if (t.dtype() != want)
    raise("InvalidArgument", cat(what, " must be ", dtype_name(want), ", got ", dtype_name(t.dtype())));
  return t;
}

std::shared_ptr<const SparseValue> check_sparse(std::shared_ptr<SparseValue> s, const std::string& what) {
  coo_positions(s->to_coo(what), what);  // range and duplicate checks
  return s;
}

PySparseTensor coo_from_numpy(const std::vector<int64_t>& dims, py::handle values, py::handle indices, py::handle device) {
  const std::string what = "SparseTensor.sparse_coo_from_numpy";
  require_cpu(device, what);
  dense_count(dims, what);
  auto s = std::make_shared<SparseValue>();
  s->format = SparseFormat::Coo;
  s->dims = dims;
  s->values = sparse_values(values, 1, what);
  s->indices = index_array(indices, DataType::Int64, what + ": indices");
  return {check_sparse(std::move(s), what)};
}

PySparseTensor csr_from_numpy(const std::vector<int64_t>& dims, py::handle values, py::handle inner, py::handle outer,
                              py::handle device) {
  const std::string what = "SparseTensor.sparse_csr_from_numpy";
  require_cpu(device, what);
  if (dims.size() != 2) raise("InvalidArgument", cat(what, ": CSR tensors are 2-D, got dense shape ", dims_text(dims)));
  dense_count(dims, what);
  auto s = std::make_shared<SparseValue>();
  s->format = SparseFormat::Csrc;
  s->dims = dims;
  s->values = sparse_values(values, 1, what);
  s->inner = index_array(inner, DataType::Int64, what + ": inner indices");
  s->outer = index_array(outer, DataType::Int64, what + ": outer indices");
  return {check_sparse(std::move(s), what)};
}

PySparseTensor block_sparse_from_numpy(const std::vector<int64_t>& dims, py::handle values, py::handle indices,
                                       py::handle device) {
  const std::string what = "SparseTensor.sparse_block_sparse_from_numpy";
  require_cpu(device, what);
  if (dims.size() != 2)
    raise("InvalidArgument", cat(what, ": block-sparse tensors are 2-D, got dense shape ", dims_text(dims)));
  dense_count(dims, what);
  auto s = std::make_shared<SparseValue>();
  s->format = SparseFormat::BlockSparse;
  s->dims = dims;
  s->values = sparse_values(values, 3, what);
  s->indices = index_array(indices, DataType::Int32, what + ": indices");
  return {check_sparse(std::move(s), what)};
}

// The nonzero elements (non-empty strings) of a dense tensor as a COO sparse tensor with linear indices.
std::shared_ptr<const SparseValue> sparse_from_dense(const Tensor& t, const std::string& what) {
  auto s = std::make_shared<SparseValue>();
  s->format = SparseFormat::Coo;
  s->dims = t.dims();
  const uint64_t n = t.element_count();
  std::vector<int64_t> at;
  if (t.dtype() == DataType::String) {
    const auto& strs = t.string_values();
    for (uint64_t i = 0; i < n; ++i)
      if (!strs[i].empty()) at.push_back(static_cast<int64_t>(i));
    std::vector<std::string> vals;
    for (int64_t i : at) vals.push_back(strs[static_cast<size_t>(i)]);
    s->values = Tensor::strings({}, {static_cast<int64_t>(at.size())}, std::move(vals));
  } else {
    const int bits = dtype_bits(t.dtype());
    if (bits == 0 || bits % 8 != 0) fail(what, ": sparse ", t.dtype(), " outputs are not supported");
    const size_t size = static_cast<size_t>(bits / 8);
    const char* b = t.bytes().data();
    // Zero is the all-zero bit pattern (for floats, +0.0).
    for (uint64_t i = 0; i < n; ++i)
      if (std::any_of(b + i * size, b + (i + 1) * size, [](char c) { return c != 0; })) at.push_back(static_cast<int64_t>(i));
    s->values = Tensor::allocate(t.dtype(), {static_cast<int64_t>(at.size())});
    char* out = s->values.mutable_data<char>();
    for (size_t k = 0; k < at.size(); ++k) std::memcpy(out + k * size, b + static_cast<size_t>(at[k]) * size, size);
  }
  s->indices = int64_tensor(at, {static_cast<int64_t>(at.size())});
  return s;
}

// ---- DLPack (the exchange ABI of dlpack.h, v0.8 layout) ----

enum DLDeviceKind : int32_t { kDLCPU = 1 };
enum DLTypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };

struct DLDevice {
  int32_t device_type;  // a C enum in dlpack.h: int-sized
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// What an exported DLManagedTensor owns: the tensor (so its buffer outlives the consumer's use) and the arrays
// dl_tensor points at.
struct DlpackExport {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

DLDataType dl_type_of(DataType t) {
  const auto bits = static_cast<uint8_t>(dtype_bits(t));
  switch (t) {
    case DataType::Float:
    case DataType::Double:
    case DataType::Float16: return {kDLFloat, bits, 1};
    case DataType::Int8:
    case DataType::Int16:
    case DataType::Int32:
    case DataType::Int64: return {kDLInt, bits, 1};
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32:
    case DataType::UInt64: return {kDLUInt, bits, 1};
    // As onnxruntime exports bools (consumers that predate kDLBool read them): from_dlpack needs is_bool_tensor.
    case DataType::Bool: return {kDLUInt, 8, 1};
    case DataType::BFloat16: return {kDLBfloat, 16, 1};
    case DataType::Complex64:
    case DataType::Complex128: return {kDLComplex, bits, 1};
    default: raise("Fail", cat("to_dlpack: ", dtype_name(t), " tensors have no DLPack form"));
  }
}

std::optional<DataType> type_of_dl(DLDataType d, bool is_bool) {
  if (d.lanes != 1) return std::nullopt;
  switch (d.code) {
    case kDLFloat:
      if (d.bits == 16) return DataType::Float16;
      if (d.bits == 32) return DataType::Float;
      if (d.bits == 64) return DataType::Double;
      break;
    case kDLInt:
      if (d.bits == 8) return DataType::Int8;
      if (d.bits == 16) return DataType::Int16;
      if (d.bits == 32) return DataType::Int32;
      if (d.bits == 64) return DataType::Int64;
      break;
    case kDLUInt:
      if (d.bits == 8) return is_bool ? DataType::Bool : DataType::UInt8;
      if (d.bits == 16) return DataType::UInt16;
      if (d.bits == 32) return DataType::UInt32;
      if (d.bits == 64) return DataType::UInt64;
      break;
    case kDLBool:
      if (d.bits == 8) return DataType::Bool;
      break;
    case kDLBfloat:
      if (d.bits == 16) return DataType::BFloat16;
      break;
    case kDLComplex:
      if (d.bits == 64) return DataType::Complex64;
      if (d.bits == 128) return DataType::Complex128;
      break;
    default: break;
  }
  return std::nullopt;
}

// A capsule named "dltensor" (DLPack's protocol); a consumer renames it "used_dltensor" and owns the tensor then,
// so the capsule frees it only while unconsumed.
py::capsule dlpack_capsule(DLManagedTensor* m) {
  PyObject* cap = PyCapsule_New(m, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      if (mt && mt->deleter) mt->deleter(mt);
    }
  });
  if (!cap) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

py::capsule to_dlpack(const OrtValue& v) {
  const Tensor& t = tensor_of(v, "to_dlpack");
  DLDataType dt = dl_type_of(t.dtype());
  auto* e = new DlpackExport;
  e->tensor = t;
  e->shape = t.dims();
  e->strides.resize(e->shape.size());
  int64_t step = 1;
  for (size_t i = e->shape.size(); i-- > 0;) {
    e->strides[i] = step;
    step *= std::max<int64_t>(e->shape[i], 1);
  }
  DLTensor& d = e->managed.dl_tensor;
  d.data = const_cast<char*>(t.bytes().data());
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(e->shape.size());
  d.dtype = dt;
  d.shape = e->shape.empty() ? nullptr : e->shape.data();
  d.strides = e->strides.empty() ? nullptr : e->strides.data();
  d.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* self) { delete static_cast<DlpackExport*>(self->manager_ctx); };
  return dlpack_capsule(&e->managed);
}

OrtValuePtr from_dlpack(py::object obj, bool is_bool) {
  const std::string what = "OrtValue.from_dlpack";
  // Objects of the __dlpack__ protocol (numpy arrays, torch tensors) are taken as their capsule.
  if (!PyCapsule_CheckExact(obj.ptr()) && py::hasattr(obj, "__dlpack__")) obj = obj.attr("__dlpack__")();
  if (!PyCapsule_IsValid(obj.ptr(), "dltensor"))
    raise("InvalidArgument", cat(what, ": expected an unconsumed DLPack capsule (named 'dltensor'), got ",
                                 std::string(py::repr(obj))));
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(obj.ptr(), "dltensor"));
  const DLTensor& t = m->dl_tensor;
  // Everything is checked before the capsule is consumed: on error it still frees the tensor.
  if (t.device.device_type != kDLCPU)
    no_device(what, cat("DLPack device type ", t.device.device_type, " (id ", t.device.device_id, ")"));
  std::optional<DataType> dt = type_of_dl(t.dtype, is_bool);
  if (!dt)
    raise("InvalidArgument", cat(what, ": DLPack type code ", int(t.dtype.code), " with ", int(t.dtype.bits), " bits and ",
                                 t.dtype.lanes, " lanes has no ONNX element type"));
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape)) raise("InvalidArgument", cat(what, ": the DLPack tensor has no valid shape"));
  std::vector<int64_t> dims(t.shape, t.shape + t.ndim);
  for (int64_t d : dims)
    if (d < 0) raise("InvalidArgument", cat(what, ": the DLPack tensor has the negative dimension ", d));
  const uint64_t count = dense_count(dims, what);
  if (t.strides) {
    // Only compact row-major tensors are viewed; dims of size 1 may carry any stride.
    int64_t step = 1;
    for (int32_t i = t.ndim; i-- > 0;) {
      if (dims[static_cast<size_t>(i)] != 1 && t.strides[i] != step && count != 0)
        raise("InvalidArgument", cat(what, ": only compact row-major DLPack tensors are supported (strides differ)"));
      step *= std::max<int64_t>(dims[static_cast<size_t>(i)], 1);
    }
  }
  const uint64_t nbytes = count * static_cast<uint64_t>(dtype_bits(*dt) / 8);
  const char* data = static_cast<const char*>(t.data) + t.byte_offset;
  PyCapsule_SetName(obj.ptr(), "used_dltensor");
  std::shared_ptr<const void> keep(m, [](const void* p) {
    auto* mt = static_cast<DLManagedTensor*>(const_cast<void*>(p));
    if (mt->deleter) mt->deleter(mt);
  });
  return make_value(Datum::of(Tensor::view({}, *dt, std::move(dims), std::string_view(data, nbytes), std::move(keep))), true);
}

bool is_dlpack_uint8_tensor(py::handle capsule) {
  const char* name = PyCapsule_IsValid(capsule.ptr(), "dltensor") ? "dltensor" : "used_dltensor";
  if (!PyCapsule_IsValid(capsule.ptr(), name))
    raise("InvalidArgument", cat("is_dlpack_uint8_tensor: expected a DLPack capsule, got ", std::string(py::repr(capsule))));
  const auto* m = static_cast<const DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), name));
  return m->dl_tensor.dtype.code == kDLUInt && m->dl_tensor.dtype.bits == 8;
}

// ---- OrtValue methods ----

OrtValuePtr from_numpy(py::handle obj, py::handle device) {
  const std::string what = "OrtValue.ortvalue_from_numpy";
  require_cpu(device, what);
  Datum d = datum_from_python(obj, Type{}, what);
  const bool writable = writable_source(obj, d);
  return make_value(std::move(d), writable);
}

OrtValuePtr from_numpy_with_onnx_type(py::handle obj, int onnx_type) {
  const std::string what = "OrtValue.ortvalue_from_numpy_with_onnx_type";
  DataType type = element_type_from_python(py::int_(onnx_type), what);
  if (type == DataType::String) {
    Datum d = datum_from_python(obj, Type::tensor(DataType::String), what);
    return make_value(std::move(d), true);
  }
  const int bits = dtype_bits(type);
  if (bits % 8 != 0)
    raise("InvalidArgument", cat(what, ": ", dtype_name(type), " elements are smaller than a byte; numpy cannot hold them"));
  Datum d = datum_from_python(obj, Type::tensor(DataType::Undefined), what);
  if (d.tensor.dtype() == DataType::String)
    raise("InvalidArgument", cat(what, ": a string array cannot be read as ", dtype_name(type)));
  const int have = dtype_bits(d.tensor.dtype());
  if (have != bits)
    raise("InvalidArgument", cat(what, ": the array's ", dtype_name(d.tensor.dtype()), " elements take ", have / 8,
                                 " bytes, ", dtype_name(type), " elements ", bits / 8));
  const bool writable = writable_source(obj, d);
  // The same bytes under the other type; the original tensor (and the array it views) stays alive.
  auto held = std::make_shared<Tensor>(std::move(d.tensor));
  Tensor t = Tensor::view({}, type, held->dims(), held->bytes(), held);
  return make_value(Datum::of(std::move(t)), writable);
}

OrtValuePtr from_shape_and_type(py::handle shape, py::handle element_type, py::handle device) {
  const std::string what = "OrtValue.ortvalue_from_shape_and_type";
  require_cpu(device, what);
  DataType type = element_type_from_python(element_type, what);
  return make_value(Datum::of(Tensor::allocate(type, dims_from_python(shape, what))), true);
}

uintptr_t data_ptr(const OrtValue& v) {
  if (v.is_sparse()) return reinterpret_cast<uintptr_t>(v.sparse->values.bytes().data());
  const Tensor& t = tensor_of(v, "data_ptr");
  if (t.dtype() == DataType::String) return reinterpret_cast<uintptr_t>(t.string_values().data());
  return reinterpret_cast<uintptr_t>(t.bytes().data());
}

std::vector<int64_t> value_shape(const OrtValue& v) {
  if (v.is_sparse()) return v.sparse->dims;
  return tensor_of(v, "shape").dims();
}

int element_type(const OrtValue& v) {
  if (v.is_sparse()) return static_cast<int>(v.sparse->values.dtype());
  const Datum& d = v.datum;
  if (d.is_tensor()) return static_cast<int>(d.tensor.dtype());
  // Sequences and optionals of tensors: their elements' type.
  if ((d.kind == Datum::Kind::Sequence || d.kind == Datum::Kind::Optional) && d.elem_type.kind == Type::Kind::Tensor)
    return static_cast<int>(d.elem_type.elem);
  raise("Fail", cat("OrtValue.element_type(): the value is ", d.describe(), ", which has no element type"));
}

bool is_tensor_sequence(const OrtValue& v) {
  if (v.is_sparse() || v.datum.kind != Datum::Kind::Sequence) return false;
  if (v.datum.elem_type.kind == Type::Kind::Tensor) return true;
  return std::all_of(v.datum.elements.begin(), v.datum.elements.end(), [](const Datum& e) { return e.is_tensor(); });
}

uint64_t size_in_bytes(const OrtValue& v) {
  const Tensor& t = tensor_of(v, "tensor_size_in_bytes");
  if (t.dtype() == DataType::String) return t.element_count() * sizeof(std::string);
  return t.bytes().size();
}

py::object to_numpy(const OrtValue& v) {
  if (v.is_sparse()) raise("Fail", "OrtValue.numpy(): the value is a sparse tensor; use as_sparse_tensor()");
  return tensor_to_numpy(Tensor(tensor_of(v, "numpy")));  // shared buffer: numpy gets a copy
}

// Makes v's tensor safe to write: a private copy unless v may write its memory in place.
Tensor& writable_tensor(OrtValue& v) {
  Tensor& t = v.datum.tensor;
  if (!v.writable) {
    t = t.clone();
    v.writable = true;
  }
  return t;
}

void copy_into(OrtValue& v, const Tensor& src) {
  Tensor& t = writable_tensor(v);
  if (t.dtype() == DataType::String) {
    t.mutable_strings() = src.string_values();
  } else if (!src.bytes().empty()) {
    std::memcpy(const_cast<char*>(t.bytes().data()), src.bytes().data(), src.bytes().size());
  }
}

void update_inplace(OrtValue& v, py::handle array) {
  const std::string what = "OrtValue.update_inplace";
  const Tensor& t = tensor_of(v, "update_inplace");
  Datum d = datum_from_python(array, Type::tensor(t.dtype()), what);
  if (d.tensor.element_count() != t.element_count())
    raise("InvalidArgument", cat(what, ": the array has ", d.tensor.element_count(), " elements, the tensor ",
                                 dims_text(t.dims()), " has ", t.element_count()));
  copy_into(v, d.tensor);
}

PySparseTensor as_sparse_tensor(const OrtValue& v) {
  if (!v.is_sparse())
    raise("Fail", cat("OrtValue.as_sparse_tensor(): the value is ", v.datum.describe(), ", not a sparse tensor"));
  return {v.sparse};
}

const OrtValuePtr& vector_at(const OrtValueVector& v, int64_t i) {
  if (i < 0 || static_cast<uint64_t>(i) >= v.items.size())
    throw py::index_error(cat("OrtValueVector index ", i, " is out of range (", v.items.size(), " values)"));
  return v.items[static_cast<size_t>(i)];
}

// ---- SessionIOBinding ----

const IoInfo& find_io(const IoBinding& b, const std::string& name, bool input) {
  const auto& list = input ? b.inputs : b.outputs;
  for (const IoInfo& i : list)
    if (i.name == name) return i;
  std::string names;
  for (const IoInfo& i : list) names += (names.empty() ? "'" : ", '") + i.name + "'";
  raise("InvalidArgument", cat(b.label, ": '", name, "' is not an ", input ? "input" : "output", " of the model (",
                               input ? "inputs: " : "outputs: ", names.empty() ? "none" : names, ")"));
}

void bind_in(IoBinding& b, const std::string& name, OrtValuePtr v) {
  for (auto& [n, bound] : b.bound_inputs)
    if (n == name) {
      bound = std::move(v);
      return;
    }
  b.bound_inputs.emplace_back(name, std::move(v));
}

void bind_out(IoBinding& b, const std::string& name, OrtValuePtr target) {
  for (auto& o : b.bound_outputs)
    if (o.name == name) {
      o.target = std::move(target);
      return;
    }
  b.bound_outputs.push_back({name, std::move(target)});
}

// A tensor over caller-owned memory at `address` (the caller keeps it alive and valid).
OrtValuePtr raw_value(py::handle element_type, py::handle shape, uintptr_t address, const std::string& what) {
  DataType type = element_type_from_python(element_type, what);
  if (type == DataType::String) raise("InvalidArgument", cat(what, ": string tensors cannot be bound by address"));
  std::vector<int64_t> dims = dims_from_python(shape, what);
  auto bytes = raw_byte_size(type, dense_count(dims, what));
  if (!bytes) raise("InvalidArgument", cat(what, ": the tensor's size overflows"));
  if (address == 0 && *bytes != 0) raise("InvalidArgument", cat(what, ": data_ptr is null"));
  std::string_view view(reinterpret_cast<const char*>(address), static_cast<size_t>(*bytes));
  return make_value(Datum::of(Tensor::view({}, type, std::move(dims), view, nullptr)), true);
}

}  // namespace

// ---- SparseValue ----

SparseTensor SparseValue::to_coo(const std::string& what) const {
  switch (format) {
    case SparseFormat::Coo: return {values, indices, dims};
    case SparseFormat::Csrc: {
      const int64_t nnz = values.dims()[0];
      const int64_t rows = dims[0], cols = dims[1];
      if (inner.dims() != std::vector<int64_t>{nnz})
        raise("InvalidArgument", cat(what, ": inner indices must have shape [", nnz, "] for ", nnz, " values, got ",
                                     dims_text(inner.dims())));
      // No outer indices at all: a tensor without values (onnxruntime allows both index arrays empty).
      const bool empty = nnz == 0 && outer.element_count() == 0;
      if (!empty && outer.dims() != std::vector<int64_t>{rows + 1})
        raise("InvalidArgument", cat(what, ": outer indices must have shape [", rows + 1, "] (rows + 1), got ",
                                     dims_text(outer.dims())));
      std::vector<int64_t> coords;
      coords.reserve(static_cast<size_t>(nnz) * 2);
      if (!empty) {
        if (read_int(outer, 0) != 0 || read_int(outer, static_cast<size_t>(rows)) != nnz)
          raise("InvalidArgument", cat(what, ": outer indices must start at 0 and end at the number of values, ", nnz));
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t begin = read_int(outer, static_cast<size_t>(r)), end = read_int(outer, static_cast<size_t>(r + 1));
          if (end < begin || end > nnz)
            raise("InvalidArgument", cat(what, ": outer indices must not decrease (row ", r, ": ", begin, " to ", end, ")"));
          for (int64_t k = begin; k < end; ++k) {
            const int64_t c = read_int(inner, static_cast<size_t>(k));
            if (c < 0 || c >= cols)
              raise("InvalidArgument", cat(what, ": inner index ", c, " of value ", k, " is outside the ", cols, " columns"));
            coords.push_back(r);
            coords.push_back(c);
          }
        }
      }
      return {values, int64_tensor(coords, {nnz, 2}), dims};
    }
    case SparseFormat::BlockSparse: {
      const auto& vd = values.dims();
      const int64_t blocks = vd[0], bh = vd[1], bw = vd[2];
      if (bh <= 0 || bw <= 0 || dims[0] % bh != 0 || dims[1] % bw != 0)
        raise("InvalidArgument", cat(what, ": blocks of ", bh, "x", bw, " do not tile the dense shape ", dims_text(dims)));
      if (indices.dims() != std::vector<int64_t>{2, blocks})
        raise("InvalidArgument", cat(what, ": indices must have shape [2, ", blocks, "] (block row and column of each of ",
                                     blocks, " blocks), got ", dims_text(indices.dims())));
      std::vector<int64_t> coords;
      coords.reserve(static_cast<size_t>(blocks * bh * bw) * 2);
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t br = read_int(indices, static_cast<size_t>(b)), bc = read_int(indices, static_cast<size_t>(blocks + b));
        if (br < 0 || br >= dims[0] / bh || bc < 0 || bc >= dims[1] / bw)
          raise("InvalidArgument", cat(what, ": block ", b, " at block row ", br, ", column ", bc, " is outside the ",
                                       dims[0] / bh, "x", dims[1] / bw, " grid of blocks"));
        for (int64_t i = 0; i < bh; ++i)
          for (int64_t j = 0; j < bw; ++j) {
            coords.push_back(br * bh + i);
            coords.push_back(bc * bw + j);
          }
      }
      const int64_t n = blocks * bh * bw;
      return {values.reshaped({n}), int64_tensor(coords, {n, 2}), dims};
    }
    default: break;
  }
  raise("Fail", cat(what, ": the sparse tensor has no format"));
}

Tensor SparseValue::dense(const std::string& what) const {
  SparseTensor coo = to_coo(what);
  coo_positions(coo, what);
  return densify(coo, what);
}

// ---- shared with module.cpp ----

OrtValuePtr ortvalue_of(py::handle obj) {
  if (py::isinstance<OrtValue>(obj)) return py::cast<OrtValuePtr>(obj);
  if (!py::isinstance<py::array>(obj) && py::hasattr(obj, "_ortvalue")) {
    py::object inner = obj.attr("_ortvalue");
    if (py::isinstance<OrtValue>(inner)) return py::cast<OrtValuePtr>(inner);
  }
  return nullptr;
}

Datum feed_datum(const OrtValue& v, const Type&, const std::string& what) {
  if (v.is_sparse()) return Datum::of(v.sparse->dense(what));
  if (v.datum.kind == Datum::Kind::Empty) raise("InvalidArgument", cat(what, ": the OrtValue holds no value"));
  return v.datum;
}

OrtValuePtr output_value(Datum&& d, const Type& declared, const std::string& what) {
  if (declared.kind == Type::Kind::SparseTensor && d.is_tensor()) {
    auto v = std::make_shared<OrtValue>();
    v->sparse = sparse_from_dense(d.tensor, what);
    return v;
  }
  // Writable in place only where nothing else (an input, the model, another output) shares the buffer.
  const bool alone = d.is_tensor() && d.tensor.is_writable() && !d.tensor.is_view() && d.tensor.owns_buffer_alone();
  return make_value(std::move(d), alone);
}

void write_into(OrtValue& target, const Datum& result, const std::string& what) {
  if (!target.is_tensor()) raise("InvalidArgument", cat(what, ": the bound output is not a tensor"));
  if (!result.is_tensor()) raise("InvalidArgument", cat(what, ": the result is ", result.describe(), ", not a tensor"));
  const Tensor& t = target.datum.tensor;
  const Tensor& r = result.tensor;
  if (t.dtype() != r.dtype() || t.dims() != r.dims())
    raise("InvalidArgument", cat(what, ": the result is ", dtype_name(r.dtype()), dims_text(r.dims()),
                                 " but the bound output is ", dtype_name(t.dtype()), dims_text(t.dims())));
  if (r.bytes().data() == t.bytes().data() && t.dtype() != DataType::String) return;  // already there
  copy_into(target, r);
}

void register_ortvalue(py::module_& m) {
  py::class_<OrtDevice>(m, "OrtDevice", "A device as onnxruntime names one; onyx runs on the CPU only.")
      .def(py::init([](int type, int mem_type, int id, int vendor) { return OrtDevice{type, mem_type, id, vendor}; }),
           py::arg("device_type"), py::arg("mem_type"), py::arg("device_id"), py::arg("vendor_id") = 0)
      .def_static("cpu", [] { return kCpu; })
      .def_static("cuda", [] { return kGpu; })
      .def_static("dml", [] { return kGpu; })
      .def_static("fpga", [] { return kFpga; })
      .def_static("npu", [] { return kNpu; })
      .def_static("default_memory", [] { return 0; })
      .def("device_id", [](const OrtDevice& d) { return d.id; })
      .def("device_type", [](const OrtDevice& d) { return d.type; })
      .def("device_mem_type", [](const OrtDevice& d) { return d.mem_type; })
      .def("device_vendor_id", [](const OrtDevice& d) { return d.vendor; })
      .def("__str__", &device_text)
      .def("__repr__", [](const OrtDevice& d) {
        return cat("OrtDevice(device_type=", d.type, ", mem_type=", d.mem_type, ", device_id=", d.id,
                   ", vendor_id=", d.vendor, ")");
      });

  py::enum_<SparseFormat>(m, "OrtSparseFormat")
      .value("ORT_SPARSE_UNDEFINED", SparseFormat::Undefined)
      .value("ORT_SPARSE_COO", SparseFormat::Coo)
      .value("ORT_SPARSE_CSRC", SparseFormat::Csrc)
      .value("ORT_SPARSE_BLOCK_SPARSE", SparseFormat::BlockSparse);

  py::class_<SparseCooView>(m, "SparseCooView")
      .def("indices", [](const SparseCooView& v) { return read_only_array(v.s, v.s->indices); });
  py::class_<SparseCsrView>(m, "SparseCsrView")
      .def("inner", [](const SparseCsrView& v) { return read_only_array(v.s, v.s->inner); })
      .def("outer", [](const SparseCsrView& v) { return read_only_array(v.s, v.s->outer); });
  py::class_<SparseBlockSparseView>(m, "SparseBlockSparseView")
      .def("indices", [](const SparseBlockSparseView& v) { return read_only_array(v.s, v.s->indices); });

  py::class_<PySparseTensor>(m, "SparseTensor", "A sparse tensor in COO, CSR or block-sparse format (CPU memory).")
      .def_static("sparse_coo_from_numpy", &coo_from_numpy, py::arg("dense_shape"), py::arg("values"),
                  py::arg("indices"), py::arg("ort_device"))
      .def_static("sparse_csr_from_numpy", &csr_from_numpy, py::arg("dense_shape"), py::arg("values"),
                  py::arg("inner_indices"), py::arg("outer_indices"), py::arg("ort_device"))
      .def_static("sparse_block_sparse_from_numpy", &block_sparse_from_numpy, py::arg("dense_shape"),
                  py::arg("values"), py::arg("indices"), py::arg("ort_device"))
      .def("values", [](const PySparseTensor& t) { return read_only_array(t.s, t.s->values); })
      .def("as_coo_view",
           [](const PySparseTensor& t) {
             require_format(*t.s, SparseFormat::Coo, "as_coo_view");
             return SparseCooView{t.s};
           })
      .def("as_csrc_view",
           [](const PySparseTensor& t) {
             require_format(*t.s, SparseFormat::Csrc, "as_csrc_view");
             return SparseCsrView{t.s};
           })
      .def("as_blocksparse_view",
           [](const PySparseTensor& t) {
             require_format(*t.s, SparseFormat::BlockSparse, "as_blocksparse_view");
             return SparseBlockSparseView{t.s};
           })
      .def("format", [](const PySparseTensor& t) { return t.s->format; })
      .def("dense_shape", [](const PySparseTensor& t) { return t.s->dims; })
      .def("data_type", [](const PySparseTensor& t) { return cat("sparse_tensor(", dtype_name(t.s->values.dtype()), ")"); })
      .def("device_name", [](const PySparseTensor&) { return std::string("cpu"); })
      .def("to_cuda",
           [](const PySparseTensor&, py::handle) -> PySparseTensor {
             raise("Fail", "SparseTensor.to_cuda: onyx has only the CPU device; CUDA is not available");
           },
           py::arg("ort_device"))
      .def("to_dense", [](const PySparseTensor& t) { return tensor_to_numpy(t.s->dense("SparseTensor.to_dense")); });

  py::class_<OrtValue, OrtValuePtr>(m, "OrtValue",
                                    "A value of onyx (tensor, sequence, map, optional or sparse tensor) on the CPU.")
      .def_static("ortvalue_from_numpy", &from_numpy, py::arg("array"), py::arg("device") = py::none())
      .def_static("ortvalue_from_numpy_with_onnx_type", &from_numpy_with_onnx_type, py::arg("array"),
                  py::arg("onnx_element_type"))
      .def_static("ortvalue_from_shape_and_type", &from_shape_and_type, py::arg("shape"), py::arg("element_type"),
                  py::arg("device") = py::none())
      .def_static("ort_value_from_sparse_tensor",
                  [](const PySparseTensor& t) {
                    auto v = std::make_shared<OrtValue>();
                    v->sparse = t.s;
                    return v;
                  },
                  py::arg("sparse_tensor"))
      .def_static("from_dlpack", &from_dlpack, py::arg("data"), py::arg("is_bool_tensor"))
      .def("data_ptr", &data_ptr)
      .def("device_name", [](const OrtValue&) { return std::string("cpu"); })
      .def("shape", &value_shape)
      .def("data_type", &value_type_text)
      .def("element_type", &element_type)
      .def("has_value", [](const OrtValue& v) { return v.is_sparse() || (v.datum.kind != Datum::Kind::Empty && !v.datum.is_none()); })
      .def("is_tensor", &OrtValue::is_tensor)
      .def("is_sparse_tensor", &OrtValue::is_sparse)
      .def("is_tensor_sequence", &is_tensor_sequence)
      .def("tensor_size_in_bytes", &size_in_bytes)
      .def("numpy", &to_numpy)
      .def("update_inplace", &update_inplace, py::arg("np_array"))
      .def("as_sparse_tensor", &as_sparse_tensor)
      .def("to_dlpack", &to_dlpack)
      .def(
          "__dlpack__",
          [](const OrtValue& v, py::handle, py::handle, py::handle dl_device, py::handle) {
            if (!dl_device.is_none() && py::cast<std::pair<int, int>>(dl_device) != std::pair<int, int>(kDLCPU, 0))
              no_device("OrtValue.__dlpack__", cat("DLPack device ", std::string(py::repr(dl_device))));
            return to_dlpack(v);
          },
          py::arg("stream") = py::none(), py::kw_only(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const OrtValue&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); })
      .def("__repr__", [](const OrtValue& v) {
        return cat("OrtValue(", v.is_sparse() ? value_type_text(v) + dims_text(v.sparse->dims) : v.datum.describe(), ")");
      });

  m.def("is_dlpack_uint8_tensor", &is_dlpack_uint8_tensor, py::arg("dlp"));

  py::class_<OrtValueVector>(m, "OrtValueVector")
      .def(py::init<>())
      .def("__len__", [](const OrtValueVector& v) { return v.items.size(); })
      .def("__getitem__", [](const OrtValueVector& v, int64_t i) { return vector_at(v, i); })
      .def("__iter__", [](const OrtValueVector& v) { return py::make_iterator(v.items.begin(), v.items.end()); },
           py::keep_alive<0, 1>())
      .def("push_back", [](OrtValueVector& v, OrtValuePtr x) { v.items.push_back(std::move(x)); })
      .def("reserve", [](OrtValueVector& v, size_t n) { v.items.reserve(n); })
      .def("numpy_at", [](const OrtValueVector& v, int64_t i) { return to_numpy(*vector_at(v, i)); })
      .def("element_type_at", [](const OrtValueVector& v, int64_t i) { return element_type(*vector_at(v, i)); })
      .def("bool_tensor_indices",
           [](const OrtValueVector& v) {
             std::vector<int64_t> out;
             for (size_t i = 0; i < v.items.size(); ++i)
               if (v.items[i]->is_tensor() && v.items[i]->datum.tensor.dtype() == DataType::Bool)
                 out.push_back(static_cast<int64_t>(i));
             return out;
           })
      .def("dlpack_at", [](const OrtValueVector& v, int64_t i) { return to_dlpack(*vector_at(v, i)); });

  py::class_<IoBinding>(m, "SessionIOBinding", "Inputs and outputs bound to a session for run_with_iobinding.")
      .def(py::init([](py::object session) {
             SessionFacts f = session_facts(session);
             IoBinding b;
             b.session = std::move(session);
             b.label = std::move(f.label);
             b.inputs = std::move(f.inputs);
             b.outputs = std::move(f.outputs);
             return b;
           }),
           py::arg("session"))
      .def(
          "bind_input",
          [](IoBinding& b, const std::string& name, py::handle array) {
            const IoInfo& info = find_io(b, name, true);
            const std::string what = cat(b.label, ": input '", name, "'");
            if (OrtValuePtr v = ortvalue_of(array)) return bind_in(b, name, std::move(v));
            Datum d = datum_from_python(array, info.type.kind == Type::Kind::SparseTensor ? Type{} : info.type, what);
            const bool writable = writable_source(array, d);
            bind_in(b, name, make_value(std::move(d), writable));
          },
          py::arg("name"), py::arg("array_on_cpu"))
      .def(
          "bind_input",
          [](IoBinding& b, const std::string& name, py::handle device, py::handle element_type, py::handle shape,
             uintptr_t data_ptr) {
            find_io(b, name, true);
            const std::string what = cat(b.label, ": input '", name, "'");
            require_cpu(device, what);
            bind_in(b, name, raw_value(element_type, shape, data_ptr, what));
          },
          py::arg("name"), py::arg("device"), py::arg("element_type"), py::arg("shape"), py::arg("data_ptr"))
      .def(
          "bind_ortvalue_input",
          [](IoBinding& b, const std::string& name, py::handle value) {
            find_io(b, name, true);
            OrtValuePtr v = ortvalue_of(value);
            if (!v) raise("InvalidArgument", cat(b.label, ": input '", name, "': expected an OrtValue"));
            bind_in(b, name, std::move(v));
          },
          py::arg("name"), py::arg("ortvalue"))
      .def(
          "bind_output",
          [](IoBinding& b, const std::string& name, py::handle device) {
            find_io(b, name, false);
            require_cpu(device, cat(b.label, ": output '", name, "'"));
            bind_out(b, name, nullptr);
          },
          py::arg("name"), py::arg("device") = py::none())
      .def(
          "bind_output",
          [](IoBinding& b, const std::string& name, py::handle device, py::handle element_type, py::handle shape,
             uintptr_t data_ptr) {
            find_io(b, name, false);
            const std::string what = cat(b.label, ": output '", name, "'");
            require_cpu(device, what);
            bind_out(b, name, raw_value(element_type, shape, data_ptr, what));
          },
          py::arg("name"), py::arg("device"), py::arg("element_type"), py::arg("shape"), py::arg("data_ptr"))
      .def(
          "bind_ortvalue_output",
          [](IoBinding& b, const std::string& name, py::handle value) {
            find_io(b, name, false);
            OrtValuePtr v = ortvalue_of(value);
            if (!v) raise("InvalidArgument", cat(b.label, ": output '", name, "': expected an OrtValue"));
            if (!v->is_tensor())
              raise("InvalidArgument", cat(b.label, ": output '", name, "': only tensor OrtValues can receive outputs"));
            bind_out(b, name, std::move(v));
          },
          py::arg("name"), py::arg("ortvalue"))
      .def("clear_binding_inputs", [](IoBinding& b) { b.bound_inputs.clear(); })
      .def("clear_binding_outputs", [](IoBinding& b) {
        b.bound_outputs.clear();
        b.results.clear();
      })
      .def("get_outputs", [](const IoBinding& b) { return OrtValueVector{b.results}; })
      .def("copy_outputs_to_cpu",
           [](const IoBinding& b) {
             py::list out;
             for (const OrtValuePtr& v : b.results) {
               if (v->is_sparse()) out.append(tensor_to_numpy(v->sparse->dense("copy_outputs_to_cpu")));
               else out.append(datum_to_python(Datum(v->datum)));
             }
             return out;
           })
      .def("synchronize_inputs", [](const IoBinding&) {})   // CPU memory: nothing is in flight
      .def("synchronize_outputs", [](const IoBinding&) {});
}

}  // namespace onyx::python
