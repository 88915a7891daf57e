// Values between Python and onyx: numpy arrays, lists, dicts and None to Datums and back, and the errors the
// Python package raises (classes of onyx._errors).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "ir/datum.hpp"
#include "ir/type.hpp"

namespace onyx::python {

namespace py = pybind11;

// An error for Python: `cls` names a class of onyx._errors ("InvalidArgument", "Fail", ...).
struct PyError : std::runtime_error {
  PyError(std::string cls_name, const std::string& message) : std::runtime_error(message), cls(std::move(cls_name)) {}
  std::string cls;
};
[[noreturn]] void raise(const char* cls, const std::string& message);
// Registers the translation of PyError and onyx::Error (as Fail) to Python exceptions.
void register_error_translation();

// A Python value as a Datum of the `expected` type (Unknown: as the value suggests). Arrays that are C-contiguous,
// aligned, in native byte order and of the expected element type are viewed, not copied; the view holds a
// reference to the array. `what` names the value in errors ("model: input 'X'").
Datum datum_from_python(py::handle obj, const Type& expected, const std::string& what);

// A Datum as Python: tensors as numpy arrays (onyx's buffer handed over when nothing else shares it, else a copy),
// sequences as lists, maps as dicts, empty optionals as None.
py::object datum_to_python(Datum&& d);

// A tensor as a numpy array. With an `owner` (model inspection): a read-only array viewing the tensor's bytes where
// their layout allows, keeping `owner` alive. Without: as datum_to_python does.
py::object tensor_to_numpy(Tensor&& t, const std::shared_ptr<const void>& owner = nullptr);

// The numpy dtype an element type is presented as: float16 natively; bfloat16 as uint16 and the float8 types as
// uint8 (their bit patterns); int4/int2 as int8 and uint4/uint2/float4e2m1 as uint8 (one element per byte).
py::dtype numpy_dtype(DataType t);

// An element type given as onnxruntime takes one: an int (TensorProto.DataType) or anything numpy.dtype accepts
// (np.float32, "int64", a dtype). `what` starts the error message for anything else.
DataType element_type_from_python(py::handle obj, const std::string& what);

// A reference to a Python object as a tensor's keep-alive; its release takes the GIL (tensors may be released on
// threads running without it).
std::shared_ptr<const void> keep_python(py::handle obj);

// The ORT-style shape list of a type: ints for static dims, strings for symbolic ones, None for unknown ones;
// empty when the type is not a tensor or its rank is unknown.
py::list shape_list(const Type& t);

}  // namespace onyx::python
