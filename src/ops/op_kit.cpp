#include "ops/op_kit.hpp"

#include <algorithm>
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
      const T* p = t.data<T>();
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(p[i]);
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
    if constexpr (std::is_arithmetic_v<T>) {
      const T* p = t.data<T>();
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
    } else if constexpr (is_small_float_v<T>) {
      const T* p = t.data<T>();
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(p[i]);
    } else {
      fail("expected a numeric tensor, got ", t.dtype());
    }
  });
  return v;
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
  for (int64_t x : d) s.dims.push_back(Dim{x, {}, {}});
  return s;
}

Type tensor_type(DataType dt, const Dims& d) { return Type::tensor(dt, shape_of(d)); }

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

double round_to(DataType p, double v) {
  switch (p) {
    case DataType::Float16: return half_to_float(float_to_half(static_cast<float>(v)));
    case DataType::BFloat16: return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v)));
    case DataType::Float: return static_cast<float>(v);
    default: return v;
  }
}

}  // namespace onyx::ops
