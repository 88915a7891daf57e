#include "convert.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <optional>

#include "base/error.hpp"
#include "base/dtype.hpp"

namespace onyx::python {

namespace {

py::module_ numpy() { return py::module_::import("numpy"); }

std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }

// Text for a Python str; bytes that are not UTF-8 stay bytes rather than failing the whole conversion.
py::object text_or_bytes(const std::string& s) {
  PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), nullptr);
  if (u) return py::reinterpret_steal<py::object>(u);
  PyErr_Clear();
  return py::bytes(s);
}

// How values of an element type appear in numpy.
enum class Carrier { Same, Bits, Unpacked, String };

Carrier carrier_of(DataType t) {
  switch (t) {
    case DataType::String: return Carrier::String;
    case DataType::BFloat16:
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::Float8E8M0: return Carrier::Bits;
    case DataType::Int4:
    case DataType::UInt4:
    case DataType::Int2:
    case DataType::UInt2:
    case DataType::Float4E2M1: return Carrier::Unpacked;
    default: return Carrier::Same;
  }
}

const char* numpy_name(DataType t) {
  switch (t) {
    case DataType::Float: return "float32";
    case DataType::Double: return "float64";
    case DataType::Float16: return "float16";
    case DataType::Int8:
    case DataType::Int4:
    case DataType::Int2: return "int8";
    case DataType::Int16: return "int16";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::UInt8:
    case DataType::UInt4:
    case DataType::UInt2:
    case DataType::Float4E2M1:
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::Float8E8M0: return "uint8";
    case DataType::UInt16:
    case DataType::BFloat16: return "uint16";
    case DataType::UInt32: return "uint32";
    case DataType::UInt64: return "uint64";
    case DataType::Bool: return "bool";
    case DataType::Complex64: return "complex64";
    case DataType::Complex128: return "complex128";
    case DataType::String: return "object";
    default: return nullptr;
  }
}

// The element type a numpy dtype holds natively; nullopt for dtypes ONNX has no type for (float128, datetime,
// structured, ...).
std::optional<DataType> natural_type(const py::object& dtype) {
  std::string kind = py::str(dtype.attr("kind"));
  auto size = py::cast<int64_t>(dtype.attr("itemsize"));
  switch (kind.empty() ? '?' : kind[0]) {
    case 'b': return DataType::Bool;
    case 'i':
      if (size == 1) return DataType::Int8;
      if (size == 2) return DataType::Int16;
      if (size == 4) return DataType::Int32;
      if (size == 8) return DataType::Int64;
      break;
    case 'u':
      if (size == 1) return DataType::UInt8;
      if (size == 2) return DataType::UInt16;
      if (size == 4) return DataType::UInt32;
      if (size == 8) return DataType::UInt64;
      break;
    case 'f':
      if (size == 2) return DataType::Float16;
      if (size == 4) return DataType::Float;
      if (size == 8) return DataType::Double;
      break;
    case 'c':
      if (size == 8) return DataType::Complex64;
      if (size == 16) return DataType::Complex128;
      break;
    case 'O':
    case 'U':
    case 'S': return DataType::String;
    default: break;
  }
  return std::nullopt;
}

// How a type numpy lacks is passed in, for error messages.
std::string carrier_hint(DataType t) {
  switch (carrier_of(t)) {
    case Carrier::Bits: return cat(" (", dtype_name(t), " values are passed as their bit patterns in ", numpy_name(t), ")");
    case Carrier::Unpacked:
      return cat(" (", dtype_name(t), " values are passed unpacked, one per element, as ", numpy_name(t), ")");
    default: return "";
  }
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

void check_shape(const Type& expected, const std::vector<int64_t>& dims, const std::string& what) {
  if (expected.kind != Type::Kind::Tensor || !expected.shape.rank_known) return;
  const auto& want = expected.shape.dims;
  if (want.size() != dims.size())
    raise("InvalidArgument", cat(what, ": expected rank ", want.size(), " ", expected.shape.to_string(),
                                 ", got an array of shape ", dims_text(dims)));
  for (size_t i = 0; i < dims.size(); ++i)
    if (want[i].value && *want[i].value != dims[i])
      raise("InvalidArgument", cat(what, ": dimension ", i, " must be ", *want[i].value, " (model shape ",
                                   expected.shape.to_string(), "), got an array of shape ", dims_text(dims)));
}

std::vector<int64_t> array_dims(const py::array& a) {
  std::vector<int64_t> dims;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) dims.push_back(static_cast<int64_t>(a.shape(i)));
  return dims;
}

Tensor string_tensor(const py::object& arr, const std::vector<int64_t>& dims, const std::string& what) {
  py::list flat = arr.attr("ravel")().attr("tolist")();
  std::vector<std::string> values;
  values.reserve(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) {
    py::object e = flat[i];
    if (PyUnicode_Check(e.ptr())) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(e.ptr(), &n);
      if (!s) {
        PyErr_Clear();
        raise("InvalidArgument", cat(what, ": element ", i, " of the string tensor cannot be encoded as UTF-8"));
      }
      values.emplace_back(s, static_cast<size_t>(n));
    } else if (PyBytes_Check(e.ptr())) {
      values.emplace_back(PyBytes_AS_STRING(e.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(e.ptr())));
    } else {
      raise("InvalidArgument",
            cat(what, ": element ", i, " of the string tensor is a ", type_name(e), ", expected str or bytes"));
    }
  }
  return Tensor::strings({}, dims, std::move(values));
}

// Packs one-value-per-byte int8/uint8 data into a 4- or 2-bit tensor, first element in the low bits.
Tensor packed_tensor(const py::object& arr, DataType type, const std::vector<int64_t>& dims, const std::string& what) {
  py::array c = numpy().attr("ascontiguousarray")(arr);
  Tensor t = Tensor::allocate(type, dims);
  const int bits = dtype_bits(type);
  const bool is_signed = type == DataType::Int4 || type == DataType::Int2;
  const int lo = is_signed ? -(1 << (bits - 1)) : 0;
  const int hi = is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
  const uint64_t per_byte = static_cast<uint64_t>(8 / bits);
  const auto* src = static_cast<const uint8_t*>(c.data());
  auto* out = t.mutable_data<uint8_t>();
  for (uint64_t i = 0; i < t.element_count(); ++i) {
    int v = is_signed ? static_cast<int8_t>(src[i]) : src[i];
    if (v < lo || v > hi)
      raise("InvalidArgument", cat(what, ": element ", i, " is ", v, ", outside ", dtype_name(type), "'s range [", lo,
                                   ", ", hi, "]"));
    unsigned shift = static_cast<unsigned>((i % per_byte) * static_cast<uint64_t>(bits));
    out[i / per_byte] = static_cast<uint8_t>(out[i / per_byte] | ((static_cast<unsigned>(v) & ((1u << bits) - 1)) << shift));
  }
  return t;
}

Datum tensor_from_python(py::handle obj, const Type& expected, const std::string& what) {
  const bool typed = expected.kind == Type::Kind::Tensor || expected.kind == Type::Kind::SparseTensor;
  const DataType want = typed ? expected.elem : DataType::Undefined;
  py::object arr;
  if (py::isinstance<py::array>(obj)) {
    arr = py::reinterpret_borrow<py::object>(obj);
  } else {
    if (obj.is_none()) raise("InvalidArgument", cat(what, ": got None, expected ", typed ? expected.to_string() : "a tensor"));
    py::object dtype = py::none();
    if (want != DataType::Undefined && numpy_name(want)) dtype = py::dtype::from_args(py::str(numpy_name(want)));
    try {
      arr = numpy().attr("asarray")(obj, dtype);
    } catch (py::error_already_set& e) {
      raise("InvalidArgument", cat(what, ": cannot make an array of a ", type_name(obj), ": ", e.what()));
    }
  }
  py::object dtype = arr.attr("dtype");
  std::optional<DataType> natural = natural_type(dtype);
  if (!natural)
    raise("InvalidArgument", cat(what, ": numpy dtype ", std::string(py::str(dtype)), " has no ONNX element type"));
  DataType type = *natural;
  if (want != DataType::Undefined && want != type) {
    // Types numpy lacks come as their carrier (bit patterns, or unpacked values).
    bool carried = carrier_of(want) != Carrier::Same && carrier_of(want) != Carrier::String &&
                   natural_type(py::dtype::from_args(py::str(numpy_name(want)))) == type;
    if (!carried)
      raise("InvalidArgument", cat(what, ": expected ", Type::tensor(want).to_string(), ", got an array of ",
                                   std::string(py::str(dtype)), carrier_hint(want)));
    type = want;
  }
  py::array a = py::reinterpret_borrow<py::array>(arr);
  std::vector<int64_t> dims = array_dims(a);
  check_shape(expected, dims, what);
  if (type == DataType::String) return Datum::of(string_tensor(arr, dims, what));
  if (carrier_of(type) == Carrier::Unpacked) return Datum::of(packed_tensor(arr, type, dims, what));
  py::object flags = arr.attr("flags");
  bool viewable = py::cast<bool>(flags.attr("c_contiguous")) && py::cast<bool>(flags.attr("aligned")) &&
                  py::cast<bool>(dtype.attr("isnative"));
  if (!viewable) {
    arr = numpy().attr("array")(arr, py::arg("dtype") = dtype.attr("newbyteorder")("="), py::arg("order") = "C");
    a = py::reinterpret_borrow<py::array>(arr);
  }
  auto nbytes = py::cast<size_t>(arr.attr("nbytes"));
  std::string_view bytes(static_cast<const char*>(a.data()), nbytes);
  return Datum::of(Tensor::view({}, type, std::move(dims), bytes, keep_python(arr)));
}

template <class Int>
void put_key(Tensor& keys, size_t i, py::handle key, const std::string& what) {
  py::int_ k;
  try {
    k = py::reinterpret_steal<py::int_>(PyNumber_Index(key.ptr()));
    if (!k) throw py::error_already_set();
  } catch (py::error_already_set&) {
    raise("InvalidArgument", cat(what, ": map key ", std::string(py::repr(key)), " is not an integer"));
  }
  // Through Python's own range check: an out-of-range key is an error, not a wrapped value.
  try {
    keys.mutable_data<Int>()[i] = py::cast<Int>(k);
  } catch (py::cast_error&) {
    raise("InvalidArgument", cat(what, ": map key ", std::string(py::repr(key)), " does not fit ", dtype_name(keys.dtype())));
  }
}

Datum map_from_python(py::handle obj, const Type& expected, const std::string& what) {
  if (!PyDict_Check(obj.ptr()))
    raise("InvalidArgument", cat(what, ": expected ", expected.to_string(), " (a dict), got a ", type_name(obj)));
  py::dict dict = py::reinterpret_borrow<py::dict>(obj);
  DataType key = expected.key;
  if (key == DataType::Undefined)
    key = dict.size() && PyUnicode_Check((*dict.begin()).first.ptr()) ? DataType::String : DataType::Int64;
  const Type value_type = expected.inner ? *expected.inner : Type{};
  Datum d;
  d.kind = Datum::Kind::Map;
  std::vector<Datum> values;
  std::vector<std::string> string_keys;
  Tensor keys;
  if (key != DataType::String) keys = Tensor::allocate(key, {static_cast<int64_t>(dict.size())});
  size_t i = 0;
  for (auto [k, v] : dict) {
    std::string key_text = py::repr(k);
    if (key == DataType::String) {
      if (!PyUnicode_Check(k.ptr())) raise("InvalidArgument", cat(what, ": map key ", key_text, " is not a str"));
      string_keys.push_back(py::cast<std::string>(k));
    } else {
      switch (key) {
        case DataType::Int8: put_key<int8_t>(keys, i, k, what); break;
        case DataType::Int16: put_key<int16_t>(keys, i, k, what); break;
        case DataType::Int32: put_key<int32_t>(keys, i, k, what); break;
        case DataType::Int64: put_key<int64_t>(keys, i, k, what); break;
        case DataType::UInt8: put_key<uint8_t>(keys, i, k, what); break;
        case DataType::UInt16: put_key<uint16_t>(keys, i, k, what); break;
        case DataType::UInt32: put_key<uint32_t>(keys, i, k, what); break;
        case DataType::UInt64: put_key<uint64_t>(keys, i, k, what); break;
        default: raise("InvalidArgument", cat(what, ": maps with ", dtype_name(key), " keys are not supported"));
      }
    }
    values.push_back(datum_from_python(v, value_type, cat(what, "[", key_text, "]")));
    ++i;
  }
  if (key == DataType::String) keys = Tensor::strings({}, {static_cast<int64_t>(string_keys.size())}, std::move(string_keys));
  d.map_keys = std::move(keys);
  Type elem = value_type;
  if (elem.kind == Type::Kind::Unknown && !values.empty()) elem = values[0].type();
  d.map_values = std::make_shared<Datum>(Datum::sequence(std::move(values), elem));
  return d;
}

Datum sequence_from_python(py::handle obj, const Type& expected, const std::string& what) {
  if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr()))
    raise("InvalidArgument", cat(what, ": expected ", expected.to_string(), " (a list), got a ", type_name(obj)));
  const Type inner = expected.inner ? *expected.inner : Type{};
  std::vector<Datum> items;
  size_t i = 0;
  for (py::handle e : py::reinterpret_borrow<py::sequence>(obj)) items.push_back(datum_from_python(e, inner, cat(what, "[", i++, "]")));
  Type elem = inner;
  if (elem.kind == Type::Kind::Unknown && !items.empty()) {
    elem = items[0].type();
    if (elem.kind == Type::Kind::Tensor) elem.shape = {};  // elements may differ in shape
  }
  return Datum::sequence(std::move(items), elem);
}

std::vector<py::ssize_t> c_strides(const std::vector<py::ssize_t>& shape, py::ssize_t itemsize) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t step = itemsize;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i] ? shape[i] : 1;
  }
  return strides;
}

std::vector<py::ssize_t> shape_of(const Tensor& t) {
  std::vector<py::ssize_t> shape;
  for (int64_t d : t.dims()) shape.push_back(static_cast<py::ssize_t>(d));
  return shape;
}

py::object strings_to_numpy(const Tensor& t) {
  py::list items;
  for (const std::string& s : t.string_values()) items.append(text_or_bytes(s));
  py::object arr = numpy().attr("empty")(py::len(items), py::arg("dtype") = "object");
  // Item by item: numpy.array(list) would turn equal-length bytes into a 2-D array.
  for (size_t i = 0; i < py::len(items); ++i) arr[py::int_(i)] = items[i];
  return arr.attr("reshape")(py::tuple(py::cast(shape_of(t))));
}

py::object unpacked_to_numpy(const Tensor& t) {
  py::dtype dt = numpy_dtype(t.dtype());
  std::vector<py::ssize_t> shape = shape_of(t);
  py::array arr(dt, shape, c_strides(shape, 1));
  auto* out = static_cast<uint8_t*>(arr.mutable_data());
  const auto* in = t.data<uint8_t>();
  for (uint64_t i = 0; i < t.element_count(); ++i) {
    switch (t.dtype()) {
      case DataType::Int4: out[i] = static_cast<uint8_t>(unpack_int4(in[i / 2], i)); break;
      case DataType::Int2: out[i] = static_cast<uint8_t>(unpack_int2(in[i / 4], i)); break;
      case DataType::UInt2: out[i] = unpack_uint2(in[i / 4], i); break;
      default: out[i] = unpack_uint4(in[i / 2], i); break;  // uint4 and float4e2m1 codes
    }
  }
  return arr;
}

}  // namespace

// A reference to a Python object for as long as a tensor views its memory. Tensors may be released on a thread
// running without the GIL (during a run), so the release takes it.
std::shared_ptr<const void> keep_python(py::handle obj) {
  obj.inc_ref();
  return std::shared_ptr<const void>(obj.ptr(), [](PyObject* p) {
    py::gil_scoped_acquire gil;
    Py_DECREF(p);
  });
}

DataType element_type_from_python(py::handle obj, const std::string& what) {
  // bool is an int in Python, but np.bool_ / bool given as a type are dtypes, never TensorProto numbers.
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) {
    auto v = py::cast<int64_t>(obj);
    if (v <= 0 || v > INT32_MAX || !is_known_dtype(static_cast<int32_t>(v)))
      raise("InvalidArgument", cat(what, ": ", v, " is not an ONNX element type (TensorProto.DataType)"));
    return static_cast<DataType>(v);
  }
  py::object dtype;
  try {
    dtype = numpy().attr("dtype")(obj);
  } catch (py::error_already_set&) {
    raise("InvalidArgument", cat(what, ": ", std::string(py::repr(obj)), " is neither a numpy dtype nor an ONNX element type"));
  }
  std::optional<DataType> t = natural_type(dtype);
  if (!t) raise("InvalidArgument", cat(what, ": numpy dtype ", std::string(py::str(dtype)), " has no ONNX element type"));
  return *t;
}

void raise(const char* cls, const std::string& message) { throw PyError(cls, message); }

void register_error_translation() {
  py::register_exception_translator([](std::exception_ptr p) {
    auto set = [](const std::string& cls, const std::string& message) {
      py::object text = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "replace"));
      try {
        py::object type = py::module_::import("onyx._errors").attr(cls.c_str());
        PyErr_SetObject(type.ptr(), text.ptr());
      } catch (py::error_already_set&) {
        PyErr_SetObject(PyExc_RuntimeError, text.ptr());  // the package is incomplete; keep the message
      }
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PyError& e) {
      set(e.cls, e.what());
    } catch (const Error& e) {
      set("Fail", e.what());
    }
  });
}

py::dtype numpy_dtype(DataType t) {
  const char* name = numpy_name(t);
  if (!name) fail("element type ", dtype_name(t), " has no numpy form");
  return py::dtype::from_args(py::str(name));
}

py::list shape_list(const Type& t) {
  py::list out;
  if ((t.kind != Type::Kind::Tensor && t.kind != Type::Kind::SparseTensor) || !t.shape.rank_known) return out;
  for (const Dim& d : t.shape.dims) {
    if (d.value) out.append(py::int_(*d.value));
    else if (!d.param.empty()) out.append(py::str(d.param));
    else out.append(py::none());
  }
  return out;
}

Datum datum_from_python(py::handle obj, const Type& expected, const std::string& what) {
  switch (expected.kind) {
    case Type::Kind::Sequence: return sequence_from_python(obj, expected, what);
    case Type::Kind::Map: return map_from_python(obj, expected, what);
    case Type::Kind::Optional: {
      const Type inner = expected.inner ? *expected.inner : Type{};
      if (obj.is_none()) return Datum::optional(std::nullopt, inner);
      return Datum::optional(datum_from_python(obj, inner, what), inner);
    }
    case Type::Kind::Tensor:
    case Type::Kind::SparseTensor: return tensor_from_python(obj, expected, what);
    default: break;
  }
  // No declared type: go by what the value is.
  if (PyDict_Check(obj.ptr())) return map_from_python(obj, expected, what);
  if ((PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) && py::len(obj) > 0 &&
      py::isinstance<py::array>(py::reinterpret_borrow<py::sequence>(obj)[0]))
    return sequence_from_python(obj, expected, what);
  return tensor_from_python(obj, expected, what);
}

py::object tensor_to_numpy(Tensor&& t, const std::shared_ptr<const void>& owner) {
  py::object out;
  if (t.dtype() == DataType::String) {
    out = strings_to_numpy(t);
  } else if (carrier_of(t.dtype()) == Carrier::Unpacked) {
    out = unpacked_to_numpy(t);
  } else {
    py::dtype dt = numpy_dtype(t.dtype());
    std::vector<py::ssize_t> shape = shape_of(t);
    std::vector<py::ssize_t> strides = c_strides(shape, py::cast<py::ssize_t>(dt.attr("itemsize")));
    const char* data = t.bytes().data();
    if (!data || t.element_count() == 0) {
      out = py::array(dt, shape, strides);
    } else if (owner) {
      // Inspection: a view of the model's memory, kept alive by `owner`.
      auto* held = new std::shared_ptr<const void>(owner);
      py::capsule base(held, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
      out = py::array(dt, shape, strides, data, base);
    } else if (t.is_writable() && !t.is_view() && t.owns_buffer_alone()) {
      // A buffer onyx allocated and nothing else refers to: numpy takes it over.
      auto* held = new Tensor(std::move(t));
      py::capsule base(held, [](void* p) { delete static_cast<Tensor*>(p); });
      out = py::array(dt, shape, strides, held->bytes().data(), base);
    } else {
      out = py::array(dt, shape, strides, data);  // no base: pybind11 copies
    }
  }
  if (owner) out.attr("flags").attr("writeable") = false;
  return out;
}

py::object datum_to_python(Datum&& d) {
  switch (d.kind) {
    case Datum::Kind::Tensor: return tensor_to_numpy(std::move(d.tensor));
    case Datum::Kind::Sequence: {
      py::list items;
      for (Datum& e : d.elements) items.append(datum_to_python(std::move(e)));
      return items;
    }
    case Datum::Kind::Optional:
      if (d.elements.empty()) return py::none();
      return datum_to_python(std::move(d.elements[0]));
    case Datum::Kind::Map: {
      py::object keys = tensor_to_numpy(Tensor(d.map_keys));
      py::list key_list = keys.attr("tolist")();
      const size_t n = key_list.size();
      py::list values;
      if (d.map_values && d.map_values->kind == Datum::Kind::Sequence) {
        for (const Datum& e : d.map_values->elements) {
          py::object v = datum_to_python(Datum(e));
          // One-element tensors are the map's scalar values (as MapProto stores them): plain Python numbers.
          if (e.is_tensor() && e.tensor.element_count() == 1) v = v.attr("item")();
          values.append(v);
        }
      } else if (d.map_values && d.map_values->is_tensor()) {
        py::object arr = tensor_to_numpy(Tensor(d.map_values->tensor));
        bool scalars = d.map_values->tensor.dims().size() == 1;
        for (size_t i = 0; i < py::len(arr); ++i) {
          py::object row = arr[py::int_(i)];
          values.append(scalars ? row.attr("item")() : row);
        }
      }
      if (values.size() != n) fail("a map output has ", n, " keys and ", values.size(), " values");
      py::dict out;
      for (size_t i = 0; i < n; ++i) out[key_list[i]] = values[i];
      return out;
    }
    case Datum::Kind::Empty: break;
  }
  return py::none();
}

}  // namespace onyx::python
