#include "ir/type.hpp"

#include "base/error.hpp"

namespace onyx {

std::string Dim::to_string() const {
  if (value) return std::to_string(*value);
  return param.empty() ? "?" : param;
}

std::string Shape::to_string() const {
  if (!rank_known) return "[...]";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + dims[i].to_string();
  return s + "]";
}

Type Type::tensor(DataType elem, Shape shape) {
  Type t;
  t.kind = Kind::Tensor;
  t.elem = elem;
  t.shape = std::move(shape);
  return t;
}

std::string Type::to_string() const {
  auto in = [&] { return inner ? inner->to_string() : std::string("?"); };
  switch (kind) {
    case Kind::Tensor: return cat("tensor(", dtype_name(elem), ")");
    case Kind::SparseTensor: return cat("sparse_tensor(", dtype_name(elem), ")");
    case Kind::Sequence: return "seq(" + in() + ")";
    case Kind::Optional: return "optional(" + in() + ")";
    case Kind::Map: return cat("map(", dtype_name(key), ",", in(), ")");
    case Kind::Opaque: return "opaque(" + opaque_domain + "," + opaque_name + ")";
    case Kind::Unknown: break;
  }
  return "unknown";
}

std::string Type::to_string_with_shape() const {
  auto in = [&] { return inner ? inner->to_string_with_shape() : std::string("?"); };
  switch (kind) {
    case Kind::Tensor: return cat(dtype_name(elem), shape.rank_known ? shape.to_string() : "");
    case Kind::SparseTensor: return cat("sparse_tensor(", dtype_name(elem), shape.rank_known ? shape.to_string() : "", ")");
    case Kind::Sequence: return "seq(" + in() + ")";
    case Kind::Optional: return "optional(" + in() + ")";
    case Kind::Map: return cat("map(", dtype_name(key), ", ", in(), ")");
    default: return to_string();
  }
}

}  // namespace onyx
