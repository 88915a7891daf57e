#include "ops/op_kit.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>

#include "base/element_count.hpp"

namespace onyx::ops {

int64_t product(const Dims& d, size_t from, size_t to) {
  to = std::min(to, d.size());
  from = std::min(from, to);
  const auto n = checked_element_count(std::span<const int64_t>(d).subspan(from, to - from));
  if (!n) fail("the element count of shape ", shape_of(d).to_string(), " overflows int64");
  return static_cast<int64_t>(*n);
}

Dims broadcast_dims(const Dims& a, const Dims& b) {
  size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1) fail("shapes ", shape_of(a).to_string(), " and ", shape_of(b).to_string(), " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  if (!a.rank_known || !b.rank_known) return {};
  size_t r = std::max(a.dims.size(), b.dims.size());
  Shape out;
  out.rank_known = true;
  out.dims.resize(r);
  Dim one{1, {}, {}};
  for (size_t i = 0; i < r; ++i) {
    const Dim& x = i < r - a.dims.size() ? one : a.dims[i - (r - a.dims.size())];
    const Dim& y = i < r - b.dims.size() ? one : b.dims[i - (r - b.dims.size())];
    if (x.value && y.value) {
      if (*x.value != *y.value && *x.value != 1 && *y.value != 1)
        fail("shapes ", a.to_string(), " and ", b.to_string(), " do not broadcast");
      out.dims[i] = *x.value == 1 ? y : x;
    } else if (x.value && *x.value == 1) {
      out.dims[i] = y;
    } else if (y.value && *y.value == 1) {
      out.dims[i] = x;
    } else if (x.value) {
      out.dims[i] = x;
    } else if (y.value) {
      out.dims[i] = y;
    } else if (x.param == y.param) {
      out.dims[i] = x;
    }  // else unknown
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) fail(what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const char* what) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, what);
    if (seen[static_cast<size_t>(n)]) fail(what, " has axis ", a, " more than once");
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

Dims strides_of(const Dims& d) {
  Dims s(d.size());
  int64_t acc = 1;
  for (size_t i = d.size(); i-- > 0;) {
    s[i] = acc;
    acc *= d[i];
  }
  return s;
}

Dims broadcast_strides(const Dims& in, const Dims& out) {
  Dims s(out.size(), 0);
  Dims own = strides_of(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

std::vector<int64_t> read_ints(const Tensor& t) {
  std::vector<int64_t> v(t.element_count());
  visit_dtype(t.dtype(), [&](auto x) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      // Through memcpy: a constant read at inference outside a session (converters, onyx infer) may view the
      // model's bytes at any offset.
      const char* p = t.bytes().data();
      for (size_t i = 0; i < v.size(); ++i) {
        T e;
        std::memcpy(&e, p + i * sizeof(T), sizeof(T));
        v[i] = static_cast<int64_t>(e);
      }
    } else {
      fail("expected an integer tensor, got ", t.dtype());
    }
  });
  return v;
}

std::vector<double> read_doubles(const Tensor& t) {
  std::vector<double> v(t.element_count());
  visit_dtype(t.dtype(), [&](auto x) {
    using T = decltype(x);
    if constexpr (std::is_arithmetic_v<T> || is_small_float_v<T>) {
      const char* p = t.bytes().data();  // through memcpy, as read_ints
      for (size_t i = 0; i < v.size(); ++i) {
        T e;
        std::memcpy(&e, p + i * sizeof(T), sizeof(T));
        v[i] = to_double(e);
      }
    } else {
      fail("expected a numeric tensor, got ", t.dtype());
    }
  });
  return v;
}

std::vector<int64_t> read_int_list(const Tensor& t, const char* what) {
  if (t.dims().size() > 1) fail(what, " must be 1-D, got shape ", shape_of(t.dims()).to_string());
  return read_ints(t);
}

int64_t read_scalar_int(const Tensor& t, const char* what, bool allow_one) {
  if (!t.dims().empty() && !(allow_one && t.element_count() == 1))
    fail(what, " must be a scalar, got shape ", shape_of(t.dims()).to_string());
  if (t.element_count() != 1) fail(what, " must hold one value");
  if (t.dtype() != DataType::Int32 && t.dtype() != DataType::Int64)
    fail(what, " must be int32 or int64, got ", t.dtype());
  return read_ints(t)[0];
}

bool read_scalar_bool(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::Bool) fail(what, " must be a bool tensor, got ", t.dtype());
  if (t.element_count() != 1) fail(what, " must hold one value, got shape ", shape_of(t.dims()).to_string());
  return t.data<bool>()[0];
}

Tensor make_scalar_int64(int64_t v) {
  Tensor t = Tensor::allocate(DataType::Int64, {});
  t.mutable_data<int64_t>()[0] = v;
  return t;
}

Tensor make_scalar_bool(bool v) {
  Tensor t = Tensor::allocate(DataType::Bool, {});
  t.mutable_data<bool>()[0] = v;
  return t;
}

void store_doubles(Tensor& t, const std::vector<double>& v) {
  const uint64_t n = t.element_count();
  if (v.size() < n) fail("internal: ", v.size(), " values for a tensor of ", n, " elements");
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_like_v<T>) {
      T* p = t.mutable_data<T>();
      for (uint64_t i = 0; i < n; ++i) p[i] = from_double<T>(v[i]);
    } else {
      fail("element type ", t.dtype(), " is not a float type");
    }
  });
}

double round_to(DataType p, double v) {
  switch (p) {
    case DataType::Float: return narrow_to_float(v);
    case DataType::Float16: return to_double(from_double<Float16>(v));
    case DataType::BFloat16: return to_double(from_double<BFloat16>(v));
    default: return v;
  }
}

void require_same_dtype(KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) ctx.error(cat("inputs have different element types ", a.dtype(), " and ", b.dtype()));
}

// ---- Type lists ----

namespace {

// Every element type with the operator version from which "all tensor types" holds it, in DataType order.
struct TypeSince {
  DataType type;
  int since;
};
constexpr TypeSince kTensorTypesSince[] = {
    {DataType::Float, 1},           {DataType::UInt8, 1},          {DataType::Int8, 1},
    {DataType::UInt16, 1},          {DataType::Int16, 1},          {DataType::Int32, 1},
    {DataType::Int64, 1},           {DataType::String, 1},         {DataType::Bool, 1},
    {DataType::Float16, 1},         {DataType::Double, 1},         {DataType::UInt32, 1},
    {DataType::UInt64, 1},          {DataType::Complex64, 1},      {DataType::Complex128, 1},
    {DataType::BFloat16, 13},       {DataType::Float8E4M3FN, 19},  {DataType::Float8E4M3FNUZ, 19},
    {DataType::Float8E5M2, 19},     {DataType::Float8E5M2FNUZ, 19}, {DataType::UInt4, 21},
    {DataType::Int4, 21},           {DataType::Float4E2M1, 23},    {DataType::Float8E8M0, 24},
    {DataType::UInt2, 25},          {DataType::Int2, 25}};

}  // namespace

std::vector<DataType> all_tensor_types(int version) {
  std::vector<DataType> v;
  for (const TypeSince& t : kTensorTypesSince)
    if (version >= t.since) v.push_back(t.type);
  return v;
}

std::vector<DataType> control_flow_types(int since) { return all_tensor_types(since < 16 ? 11 : since); }

std::vector<DataType> numeric_bool_types(int version) {
  std::vector<DataType> v;
  for (DataType t : all_tensor_types(version))
    if (t != DataType::String && t != DataType::Complex64 && t != DataType::Complex128) v.push_back(t);
  return v;
}

std::vector<DataType> float_types(int version) {
  if (version >= 13) return {DataType::Float16, DataType::BFloat16, DataType::Float, DataType::Double};
  return {DataType::Float16, DataType::Float, DataType::Double};
}

std::vector<DataType> numeric_types(int version) {
  std::vector<DataType> v = kIntTypes;
  for (DataType t : float_types(version)) v.push_back(t);
  return v;
}

using D = DataType;
const std::vector<DataType> kIntTypes = {D::Int8, D::Int16, D::Int32, D::Int64, D::UInt8, D::UInt16, D::UInt32, D::UInt64};
const std::vector<DataType> kFloatTypes = float_types(13);
const std::vector<DataType> kSignedNumeric = {D::Int8, D::Int16, D::Int32, D::Int64, D::Float16, D::BFloat16, D::Float, D::Double};
const std::vector<DataType> kNumericTypes = numeric_types(13);

bool contains(const std::vector<DataType>& list, DataType t) {
  return std::find(list.begin(), list.end(), t) != list.end();
}

// ---- Outputs sized by data ----

uint64_t check_data_sized(const Dims& dims, DataType dt, const char* what) {
  for (int64_t d : dims)
    if (d < 0) fail(what, ": shape ", shape_of(dims).to_string(), " has a negative dim ", d);
  for (int64_t d : dims)
    if (d == 0) return 0;
  const uint64_t limit = dt == DataType::String ? kMaxDataSizedStrings : kMaxDataSizedElements;
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (static_cast<uint64_t>(d) > limit / n)
      fail(what, ": shape ", shape_of(dims).to_string(), " is too large (more than ", limit, " elements)");
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

Tensor& new_data_sized_output(KernelContext& ctx, size_t i, DataType dt, const Dims& dims) {
  check_data_sized(dims, dt);
  return ctx.allocate_output(i, dt, dims);
}

// ---- Element copies ----

ElementCopier::ElementCopier(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype()) fail("element types differ: ", src.dtype(), " and ", dst.dtype());
  const DataType t = dst.dtype();
  if (t == DataType::String) {
    kind_ = Kind::String;
    ss_ = &src.string_values();
    ds_ = &dst.mutable_strings();
    return;
  }
  bits_ = dtype_bits(t);
  if (bits_ <= 0) fail("element type ", t, " cannot be copied");
  s_ = reinterpret_cast<const uint8_t*>(src.bytes().data());
  d_ = dst.bytes().empty() ? nullptr : dst.mutable_data<uint8_t>();
  if (bits_ < 8) kind_ = Kind::Packed;
  else esize_ = static_cast<size_t>(bits_ / 8);
}

void copy_elements(const Tensor& src, uint64_t s, Tensor& dst, uint64_t d, uint64_t n) {
  if (n > 0) ElementCopier(src, dst).copy_run(s, d, n);
}

void gather_strided(const Tensor& src, Tensor& dst, const Dims& out, const Dims& strides, int64_t base) {
  const ElementCopier copier(src, dst);
  const size_t es = copier.element_bytes();
  if (!out.empty() && strides.back() == 1 && out.back() > 1 && es > 0 && dst.element_count() > 0) {
    const size_t run = static_cast<size_t>(out.back()) * es;
    const Dims outer(out.begin(), out.end() - 1), outer_strides(strides.begin(), strides.end() - 1);
    const int64_t rows = static_cast<int64_t>(dst.element_count()) / out.back();
    StridedWalk w(outer, outer_strides, base);
    const char* in = src.data<char>();
    char* o = dst.mutable_data<char>();
    for (int64_t r = 0; r < rows; ++r) std::memcpy(o + static_cast<size_t>(r) * run, in + static_cast<size_t>(w.next()) * es, run);
    return;
  }
  StridedWalk w(out, strides, base);
  gather_into(src, dst, [&](uint64_t) { return w.next(); });
}

void copy_along_axis(Tensor& dst, int64_t dst_start, const Tensor& src, int64_t src_start, int64_t n, size_t axis) {
  const Dims& sd = src.dims();
  const Dims& dd = dst.dims();
  const int64_t outer = product(sd, 0, axis);
  const int64_t inner = product(sd, axis + 1);
  const int64_t slen = sd[axis], dlen = dd[axis];
  if (n <= 0 || inner == 0 || outer == 0) return;
  const ElementCopier copier(src, dst);
  for (int64_t o = 0; o < outer; ++o)
    copier.copy_run(static_cast<uint64_t>((o * slen + src_start) * inner), static_cast<uint64_t>((o * dlen + dst_start) * inner),
                    static_cast<uint64_t>(n * inner));
}

Tensor slice_axis(const Tensor& t, size_t axis, int64_t start, int64_t n) {
  Dims d = t.dims();
  if (start == 0 && n == d[axis]) return t;
  d[axis] = n;
  Tensor out = Tensor::allocate(t.dtype(), d);
  copy_along_axis(out, 0, t, start, n, axis);
  return out;
}

Tensor take_axis(const Tensor& t, size_t axis, int64_t i) {
  Dims d = t.dims();
  d.erase(d.begin() + static_cast<std::ptrdiff_t>(axis));
  if (axis == 0) {
    // Contiguous: a copy of one block (views would need offsets the tensor type does not have).
    Tensor out = Tensor::allocate(t.dtype(), d);
    const int64_t inner = product(d);
    copy_elements(t, static_cast<uint64_t>(i * inner), out, 0, static_cast<uint64_t>(inner));
    return out;
  }
  return slice_axis(t, axis, i, 1).reshaped(d);
}

void put_axis(Tensor& dst, size_t axis, int64_t i, const Tensor& part) {
  Dims d = dst.dims();
  d[axis] = 1;
  copy_along_axis(dst, i, part.reshaped(d), 0, 1, axis);
}

std::optional<Dims> static_dims(const Type& t) {
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) return std::nullopt;
  Dims d;
  for (const Dim& x : t.shape.dims) {
    if (!x.value) return std::nullopt;
    d.push_back(*x.value);
  }
  return d;
}

Shape shape_of(const Dims& d) {
  Shape s;
  s.rank_known = true;
  for (int64_t x : d) s.dims.push_back(known_dim(x));
  return s;
}

Type tensor_type(DataType dt, const Dims& d) { return Type::tensor(dt, shape_of(d)); }

Shape shape_from(std::vector<Dim> dims) {
  Shape s;
  s.rank_known = true;
  s.dims = std::move(dims);
  return s;
}

Shape unknown_dims(size_t rank) {
  Shape s;
  if (rank > kMaxInferredRank) return s;
  s.rank_known = true;
  s.dims.resize(rank);
  return s;
}

Dim dim_of(const InferContext& ctx, size_t input, size_t axis) {
  if (!ctx.has_input(input)) return {};
  const Type& t = ctx.input_type(input);
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known || axis >= t.shape.dims.size()) return {};
  return t.shape.dims[axis];
}

std::optional<size_t> rank_of(const Type& t) {
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) return std::nullopt;
  return t.shape.dims.size();
}

int64_t input_rank(const InferContext& ctx, size_t input) {
  const auto r = ctx.has_input(input) ? rank_of(ctx.input_type(input)) : std::nullopt;
  return r ? static_cast<int64_t>(*r) : -1;
}

std::optional<std::vector<Dim>> shape_input_dims(const InferContext& ctx, size_t i, bool allow_minus_one) {
  if (!ctx.has_input(i)) return std::nullopt;
  auto d = ctx.input_as_dims(i);
  if (!d) return std::nullopt;
  for (const Dim& x : *d)
    if (x.value && *x.value < (allow_minus_one ? -1 : 0)) return std::nullopt;
  return d;
}

std::optional<std::vector<int64_t>> static_input_ints(const InferContext& ctx, size_t i) {
  auto d = ctx.input_as_dims(i);
  if (!d) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& x : *d) {
    if (!x.value) return std::nullopt;
    out.push_back(*x.value);
  }
  return out;
}

Type seq_type(Type elem) {
  Type t;
  t.kind = Type::Kind::Sequence;
  t.inner = std::make_shared<const Type>(std::move(elem));
  return t;
}

Type optional_type(Type elem) {
  Type t;
  t.kind = Type::Kind::Optional;
  t.inner = std::make_shared<const Type>(std::move(elem));
  return t;
}

Type scalar_type(DataType dt) { return Type::tensor(dt, shape_from({})); }

Shape merge_shapes(const Shape& a, const Shape& b) {
  if (!a.rank_known || !b.rank_known || a.dims.size() != b.dims.size()) return {};
  Shape s;
  s.rank_known = true;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    const Dim& x = a.dims[i];
    const Dim& y = b.dims[i];
    bool same = x.value ? (y.value && *x.value == *y.value) : (!x.param.empty() && x.param == y.param);
    s.dims.push_back(same ? x : Dim{});
  }
  return s;
}

Type merge_types(const Type& a, const Type& b, const std::string& what) {
  if (a.kind == Type::Kind::Unknown) return b;
  if (b.kind == Type::Kind::Unknown) return a;
  if (a.kind != b.kind) fail(what, ": ", a.to_string(), " and ", b.to_string(), " differ");
  switch (a.kind) {
    case Type::Kind::Tensor:
    case Type::Kind::SparseTensor: {
      if (a.elem != DataType::Undefined && b.elem != DataType::Undefined && a.elem != b.elem)
        fail(what, ": element types ", a.elem, " and ", b.elem, " differ");
      Type t = a;
      if (t.elem == DataType::Undefined) t.elem = b.elem;
      t.shape = merge_shapes(a.shape, b.shape);
      return t;
    }
    case Type::Kind::Sequence:
    case Type::Kind::Optional: {
      Type t = a;
      if (a.inner && b.inner) t.inner = std::make_shared<const Type>(merge_types(*a.inner, *b.inner, what));
      else if (!a.inner) t.inner = b.inner;
      return t;
    }
    default: return a;
  }
}

void infer_same_as_input(InferContext& ctx, size_t input, size_t output) {
  if (ctx.has_input(input)) ctx.set_output(output, ctx.input_type(input));
}

void infer_broadcast(InferContext& ctx, DataType out_dtype) {
  Shape s;
  bool first = true;
  DataType dt = DataType::Undefined;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Type& t = ctx.input_type(i);
    if (dt == DataType::Undefined) dt = t.elem;
    s = first ? t.shape : broadcast_shape(s, t.shape);
    first = false;
  }
  ctx.set_output(0, Type::tensor(out_dtype == DataType::Undefined ? dt : out_dtype, s));
}

void add_versions(Registry& r, const std::string& domain, const std::string& op_type, std::initializer_list<int> versions,
                  const std::vector<TypeConstraint>& types, InferFn infer, KernelFactory kernel) {
  for (int v : versions) r.add(OpDef{domain, op_type, v, types, infer, kernel});
}

}  // namespace onyx::ops
