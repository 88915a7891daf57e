// A value at run time: a tensor, a sequence of values, a map, or an optional (which may be empty).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.hpp"
#include "ir/type.hpp"

namespace onyx {

struct Datum {
  enum class Kind { Empty, Tensor, Sequence, Map, Optional };
  Kind kind = Kind::Empty;
  Tensor tensor;                  // Kind::Tensor
  std::vector<Datum> elements;    // Kind::Sequence; Kind::Optional holds 0 or 1 element
  Tensor map_keys;                // Kind::Map: keys (1-D) and their values
  std::shared_ptr<Datum> map_values;
  Type elem_type;                 // Sequence/Optional: element type (so empty ones keep their type)

  static Datum of(Tensor t) {
    Datum d;
    d.kind = Kind::Tensor;
    d.tensor = std::move(t);
    return d;
  }
  static Datum sequence(std::vector<Datum> items, Type elem) {
    Datum d;
    d.kind = Kind::Sequence;
    d.elements = std::move(items);
    d.elem_type = std::move(elem);
    return d;
  }
  static Datum optional(std::optional<Datum> v, Type elem) {
    Datum d;
    d.kind = Kind::Optional;
    if (v) d.elements.push_back(std::move(*v));
    d.elem_type = std::move(elem);
    return d;
  }
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_none() const { return kind == Kind::Optional && elements.empty(); }
  // "tensor(float)[2,3]", "seq(tensor(int64)) of 3", "optional(none)", for messages and summaries.
  std::string describe() const;
  // The runtime type (shapes of tensors filled in).
  Type type() const;
};

}  // namespace onyx
