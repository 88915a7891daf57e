// onnxruntime's C-level value objects (onnxruntime.capi._pybind_state) over onyx's values: OrtDevice, OrtValue
// (a Datum or a sparse tensor), OrtValueVector, SparseTensor with its format views, DLPack exchange, and
// SessionIOBinding. The Python package wraps them as onnxruntime's Python classes do.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "ir/datum.hpp"
#include "ir/tensor.hpp"
#include "onyx/session.hpp"

namespace onyx::python {

// onnxruntime's OrtSparseFormat numbering.
enum class SparseFormat : int { Undefined = 0, Coo = 1, Csrc = 2, BlockSparse = 4 };

// A sparse tensor in one of onnxruntime's layouts. Immutable once made: OrtValues and SparseTensor objects share it.
struct SparseValue {
  SparseFormat format = SparseFormat::Undefined;
  std::vector<int64_t> dims;  // the dense shape
  Tensor values;              // COO/CSR: [NNZ]; block-sparse: [num_blocks, block rows, block cols]
  Tensor indices;             // COO: int64 [NNZ] (linear) or [NNZ, rank]; block-sparse: int32 [2, num_blocks]
  Tensor inner, outer;        // CSR: int64 column of each value [NNZ], row starts [rows + 1]

  // The dense tensor it stands for; `what` starts error messages.
  Tensor dense(const std::string& what) const;
  // As onyx::SparseTensor (COO; CSR and block-sparse converted to coordinates).
  SparseTensor to_coo(const std::string& what) const;
};

struct OrtValue {
  Datum datum;                                // when not sparse
  std::shared_ptr<const SparseValue> sparse;  // when sparse
  // Whether the tensor's bytes may be written in place (update_inplace, bound outputs): memory onyx allocated
  // for this value, a writable numpy array's, or memory a caller bound by address. Otherwise writes copy first.
  bool writable = false;

  bool is_sparse() const { return sparse != nullptr; }
  bool is_tensor() const { return !sparse && datum.is_tensor(); }
};
using OrtValuePtr = std::shared_ptr<OrtValue>;

struct OrtValueVector {
  std::vector<OrtValuePtr> items;
};

// A C-level OrtValue, or an object holding one as `_ortvalue` (onnxruntime's Python OrtValue); null otherwise.
OrtValuePtr ortvalue_of(py::handle obj);
// An OrtValue as a feed of an input of the `declared` type: sparse tensors densified (onyx's engine computes
// sparse inputs dense). `what` starts error messages.
Datum feed_datum(const OrtValue& v, const Type& declared, const std::string& what);
// A run's output as an OrtValue: declared sparse outputs become COO sparse tensors of their nonzero elements.
OrtValuePtr output_value(Datum&& d, const Type& declared, const std::string& what);

// What a SessionIOBinding binds, checked against its session's inputs and outputs.
struct IoBinding {
  py::object session;  // the _Session, kept alive
  std::string label;   // the model, for messages
  std::vector<IoInfo> inputs, outputs;
  std::vector<std::pair<std::string, OrtValuePtr>> bound_inputs;
  struct Output {
    std::string name;
    OrtValuePtr target;  // null: onyx allocates the result
  };
  std::vector<Output> bound_outputs;
  std::vector<OrtValuePtr> results;  // of the last run, in the order of bound_outputs
};

// Writes a run's result into a preallocated target tensor (same element type and shape, else InvalidArgument).
void write_into(OrtValue& target, const Datum& result, const std::string& what);

// A _Session's label, inputs and outputs (module.cpp defines it: the class lives there).
struct SessionFacts {
  std::string label;
  std::vector<IoInfo> inputs, outputs;
};
SessionFacts session_facts(py::handle session);

// Registers OrtDevice, OrtValue, OrtValueVector, OrtSparseFormat, SparseTensor (and its views), SessionIOBinding
// and is_dlpack_uint8_tensor on the module.
void register_ortvalue(py::module_& m);

}  // namespace onyx::python
