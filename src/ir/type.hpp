// Types of ONNX values: tensors with (possibly symbolic) shapes, sparse tensors, sequences, maps, optionals.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.hpp"

namespace onyx {
// One dimension: a known size, a named symbol ("N", "batch"), or unknown.
struct Dim {
  std::optional<int64_t> value;
  std::string param;  // symbol name when value is empty; empty for an unknown dim
  std::string denotation;
  bool is_static() const { return value.has_value(); }
  std::string to_string() const;  // "3", "N" or "?"
};

// A tensor shape; `rank_known` is false when the model gives no shape at all.
struct Shape {
  bool rank_known = false;
  std::vector<Dim> dims;
  std::string to_string() const;  // "[N,3,224,224]"; "[...]" when the rank is unknown
  bool operator==(const Shape&) const = default;
};
inline bool operator==(const Dim& a, const Dim& b) { return a.value == b.value && a.param == b.param; }

struct Type {
  enum class Kind { Unknown, Tensor, SparseTensor, Sequence, Map, Optional, Opaque };
  Kind kind = Kind::Unknown;
  DataType elem = DataType::Undefined;   // tensor and sparse tensor element type
  Shape shape;                           // tensor and sparse tensor
  DataType key = DataType::Undefined;    // map key type
  std::shared_ptr<const Type> inner;     // sequence / optional element, map value
  std::string opaque_domain, opaque_name;
  std::string denotation;

  static Type tensor(DataType elem, Shape shape = {});
  // onnxruntime-style type string: "tensor(float)", "seq(tensor(int64))", "map(string,tensor(float))", ...
  std::string to_string() const;
  // Type string with the shape: "float[N,3]", "seq(float[2])".
  std::string to_string_with_shape() const;
};

}  // namespace onyx
