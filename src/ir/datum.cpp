#include "ir/datum.hpp"

#include "base/error.hpp"

namespace onyx {

namespace {
std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}
}  // namespace

std::string Datum::describe() const {
  switch (kind) {
    case Kind::Tensor: return cat("tensor(", dtype_name(tensor.dtype()), ")", dims_string(tensor.dims()));
    case Kind::Sequence: return cat("seq(", elem_type.to_string(), ") of ", elements.size());
    case Kind::Map: return cat("map(", dtype_name(map_keys.dtype()), ",...) of ", map_keys.element_count());
    case Kind::Optional: return elements.empty() ? "optional(none)" : "optional(" + elements[0].describe() + ")";
    case Kind::Empty: break;
  }
  return "empty";
}

Type Datum::type() const {
  switch (kind) {
    case Kind::Tensor: {
      Shape s;
      s.rank_known = true;
      for (int64_t d : tensor.dims()) s.dims.push_back(Dim{d, {}, {}});
      return Type::tensor(tensor.dtype(), s);
    }
    case Kind::Sequence:
    case Kind::Optional: {
      Type t;
      t.kind = kind == Kind::Sequence ? Type::Kind::Sequence : Type::Kind::Optional;
      t.inner = std::make_shared<const Type>(elem_type);
      return t;
    }
    case Kind::Map: {
      Type t;
      t.kind = Type::Kind::Map;
      t.key = map_keys.dtype();
      t.inner = std::make_shared<const Type>(map_values ? map_values->type() : Type{});
      return t;
    }
    case Kind::Empty: break;
  }
  return {};
}

}  // namespace onyx
