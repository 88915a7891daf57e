#include "ir/type.hpp"

#include "base/error.hpp"
#include "format/onnx_proto.hpp"

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

Shape shape_from_proto(const pb::TensorShape& s) {
  Shape r;
  r.rank_known = true;
  r.dims.reserve(s.dim.size());
  for (const auto& d : s.dim) {
    Dim dim;
    dim.value = d.dim_value;
    if (d.dim_param) dim.param = std::string(*d.dim_param);
    if (d.denotation) dim.denotation = std::string(*d.denotation);
    r.dims.push_back(std::move(dim));
  }
  return r;
}

Type Type::tensor(DataType elem, Shape shape) {
  Type t;
  t.kind = Kind::Tensor;
  t.elem = elem;
  t.shape = std::move(shape);
  return t;
}

Type Type::from_proto(const pb::Type& p) {
  Type t;
  if (p.denotation) t.denotation = std::string(*p.denotation);
  auto inner = [](const pb::Box<pb::Type>& b) {
    return std::make_shared<const Type>(b ? from_proto(*b) : Type{});
  };
  if (p.tensor_type || p.sparse_tensor_type) {
    const auto& tt = p.tensor_type ? *p.tensor_type : *p.sparse_tensor_type;
    t.kind = p.tensor_type ? Kind::Tensor : Kind::SparseTensor;
    t.elem = static_cast<DataType>(tt.elem_type.value_or(0));
    if (tt.shape) t.shape = shape_from_proto(*tt.shape);
  } else if (p.sequence_type) {
    t.kind = Kind::Sequence;
    t.inner = inner(p.sequence_type->elem_type);
  } else if (p.optional_type) {
    t.kind = Kind::Optional;
    t.inner = inner(p.optional_type->elem_type);
  } else if (p.map_type) {
    t.kind = Kind::Map;
    t.key = static_cast<DataType>(p.map_type->key_type.value_or(0));
    t.inner = inner(p.map_type->value_type);
  } else if (p.opaque_type) {
    t.kind = Kind::Opaque;
    t.opaque_domain = std::string(p.opaque_type->domain.value_or(""));
    t.opaque_name = std::string(p.opaque_type->name.value_or(""));
  }
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
