// ai.onnx Constant, ConstantOfShape, EyeLike, Range: ops that make tensors from attributes and scalars.
//   Constant        1 (value; the spec lists float types, all IR-3 types are accepted), 9 (all types), 11 (value
//                   or sparse_value, densified), 12 (also value_float(s), value_int(s), value_string(s); exactly one
//                   is set), 13 (bfloat16), 19 (float8), 21 (int4), 23 (float4e2m1), 24 (float8e8m0), 25 (int2).
//   ConstantOfShape 9 (numeric and bool; value defaults to float 0), 20 (bfloat16, float8), 21, 23, 24, 25.
//   EyeLike         9 (ones on diagonal k of a 2-D tensor, dtype from the attribute or the input), 22 (bfloat16).
//   Range           11 (float, double, int16/32/64), 27 (float16, bfloat16). Count = max(ceil((limit-start)/delta),
//                   0); element i = start + i*delta (computed exactly for integers, in double for floats).
// Inference gives Constant's value and the output shapes whenever the shape inputs are constant.
#include <cmath>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

// ---- Constant ----

Tensor constant_value(const AttributeView& a, int v) {
  static const char* const kNames[] = {"value", "sparse_value", "value_float", "value_floats", "value_int",
                                       "value_ints", "value_string", "value_strings"};
  const char* which = nullptr;
  int count = 0;
  for (const char* n : kNames)
    if (a.has(n)) {
      which = n;
      ++count;
    }
  if (count != 1)
    fail("Constant needs exactly one of value, sparse_value, value_float(s), value_int(s), value_string(s); ", count,
         " are set");
  const std::string name = which;
  if (v < 11 && name != "value") fail("Constant-", v, " takes only the 'value' attribute, not '", name, "'");
  if (v < 12 && name != "value" && name != "sparse_value") fail("attribute '", name, "' needs Constant-12 or later");
  Tensor t;
  if (name == "value") {
    t = *a.get_tensor("value");
  } else if (name == "sparse_value") {
    const Attribute* at = a.find("sparse_value");
    if (at->type != AttributeType::SparseTensor || !at->sparse_tensor) fail("attribute 'sparse_value' is not a sparse tensor");
    t = densify(*at->sparse_tensor, "sparse_value");
  } else if (name == "value_float" || name == "value_floats") {
    std::vector<float> f = name == "value_float" ? std::vector<float>{a.get_float(name)} : a.get_floats(name);
    t = Tensor::allocate(D::Float, name == "value_float" ? Dims{} : Dims{static_cast<int64_t>(f.size())});
    if (!f.empty()) std::memcpy(t.mutable_data<char>(), f.data(), f.size() * sizeof(float));
  } else if (name == "value_int" || name == "value_ints") {
    std::vector<int64_t> i = name == "value_int" ? std::vector<int64_t>{a.get_int(name)} : a.get_ints(name);
    t = Tensor::allocate(D::Int64, name == "value_int" ? Dims{} : Dims{static_cast<int64_t>(i.size())});
    if (!i.empty()) std::memcpy(t.mutable_data<char>(), i.data(), i.size() * sizeof(int64_t));
  } else {
    std::vector<std::string> s = name == "value_string" ? std::vector<std::string>{a.get_string(name)} : a.get_strings(name);
    Dims dims = name == "value_string" ? Dims{} : Dims{static_cast<int64_t>(s.size())};
    t = Tensor::strings({}, dims, std::move(s));
  }
  // Constant-1 lists only float types, but exporters of that era wrote int64 constants (shapes) with it, and the
  // type cannot change what the op does: version 1 accepts the types of version 9.
  const auto allowed = all_tensor_types(v < 9 ? 9 : v);
  if (!contains(allowed, t.dtype())) fail("Constant-", v, " does not allow element type ", t.dtype());
  return t;
}

void add_constant(Registry& r) {
  for (int v : {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}) {
    auto infer = [v](InferContext& ctx) {
      Tensor t = constant_value(ctx.attrs, v);
      ctx.set_output(0, tensor_type(t.dtype(), t.dims()));
      ctx.output_values[0] = std::move(t);
    };
    auto kernel = [v](const KernelInit& init) {
      Tensor t = constant_value(init.attrs, v);
      return make_kernel([t](KernelContext& ctx) { ctx.set_output(0, t); });
    };
    add_versions(r, "", "Constant", {v}, {}, infer, kernel);
  }
}

// ---- ConstantOfShape ----

// Fills `out` with the single element of `scalar` (same dtype).
void fill_with(Tensor& out, const Tensor& scalar) {
  const uint64_t n = out.element_count();
  if (n == 0) return;
  const int bits = dtype_bits(out.dtype());
  if (bits >= 8) {
    const size_t es = static_cast<size_t>(bits / 8);
    bool zero = true;
    for (char c : scalar.bytes().substr(0, es)) zero = zero && c == 0;
    if (zero) return;  // allocate() zero-fills
    char* p = out.mutable_data<char>();
    std::memcpy(p, scalar.data<char>(), es);
    size_t done = es;
    const size_t total = static_cast<size_t>(n) * es;
    while (done < total) {  // doubling copies
      size_t k = std::min(done, total - done);
      std::memcpy(p + done, p, k);
      done += k;
    }
    return;
  }
  if (bits <= 0) fail("cannot fill a tensor of ", out.dtype());
  uint8_t v = read_packed(scalar.data<uint8_t>(), 0, bits), byte = 0;
  for (int s = 0; s < 8; s += bits) byte = static_cast<uint8_t>(byte | (v << s));
  std::memset(out.mutable_data<char>(), byte, out.bytes().size());
}

Tensor constant_of_shape_fill(const AttributeView& a, int v) {
  const Tensor* value = a.get_tensor("value");
  Tensor fill;
  if (value) {
    if (value->element_count() != 1) fail("attribute 'value' must have one element, got ", value->element_count());
    fill = *value;
  } else {
    fill = Tensor::allocate(D::Float, {1});
  }
  if (!contains(numeric_bool_types(v), fill.dtype())) fail("ConstantOfShape-", v, " does not allow element type ", fill.dtype());
  return fill;
}

Dims shape_from_input(const Tensor& t) {
  if (t.dims().size() != 1) fail("the shape input must be 1-D, got shape ", shape_of(t.dims()).to_string());
  Dims d = read_ints(t);
  for (int64_t x : d)
    if (x < 0) fail("shape ", shape_of(d).to_string(), " has a negative dim");
  return d;
}

void add_constant_of_shape(Registry& r) {
  for (int v : {9, 20, 21, 23, 24, 25}) {
    auto infer = [v](InferContext& ctx) {
      DataType dt = constant_of_shape_fill(ctx.attrs, v).dtype();
      if (const Tensor* s = ctx.input_value(0)) {
        Dims d = shape_from_input(*s);
        check_data_sized(d, dt);
        ctx.set_output(0, tensor_type(dt, d));
        return;
      }
      if (auto sym = shape_input_dims(ctx, 0)) {  // e.g. Concat(Shape(x)[:1], [2])
        Shape s;
        s.rank_known = true;
        s.dims = *sym;
        ctx.set_output(0, Type::tensor(dt, s));
        return;
      }
      const Type& st = ctx.input_type(0);
      if (st.kind == Type::Kind::Tensor && st.shape.rank_known && st.shape.dims.size() == 1 && st.shape.dims[0].value)
        ctx.set_output(0, Type::tensor(dt, unknown_dims(static_cast<size_t>(*st.shape.dims[0].value))));
      else
        ctx.set_output(0, Type::tensor(dt));
    };
    auto kernel = [v](const KernelInit& init) {
      Tensor fill = constant_of_shape_fill(init.attrs, v);
      return make_kernel([fill](KernelContext& ctx) {
        Dims d = shape_from_input(ctx.input(0));
        fill_with(new_data_sized_output(ctx, 0, fill.dtype(), d), fill);
      });
    };
    add_versions(r, "", "ConstantOfShape", {v}, {{{0}, {D::Int64}}}, infer, kernel);
  }
}

// ---- EyeLike ----

// A one-element tensor holding 1 in `dt`.
Tensor one_of(DataType dt) {
  Tensor t = Tensor::allocate(dt, {});
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T>) {
      T one = static_cast<T>(1);
      std::memcpy(t.mutable_data<char>(), &one, sizeof(T));
    } else if constexpr (is_small_float_v<T>) {
      T one(1.0f);
      std::memcpy(t.mutable_data<char>(), &one.bits, sizeof(one.bits));
    } else {
      fail("EyeLike cannot make element type ", dt);
    }
  });
  return t;
}

DataType eyelike_dtype(const AttributeView& a, DataType input, int v) {
  DataType dt = input;
  if (a.has("dtype")) {
    int64_t x = a.get_int("dtype");
    if (x <= 0 || x > 26 || !is_known_dtype(static_cast<int32_t>(x))) fail("attribute 'dtype' ", x, " is not an element type");
    dt = static_cast<DataType>(x);
  }
  if (dt != DataType::Undefined && !contains(numeric_bool_types(v >= 22 ? 13 : 9), dt))
    fail("EyeLike-", v, " does not allow output element type ", dt);
  return dt;
}

void add_eyelike(Registry& r) {
  for (int v : {9, 22}) {
    const auto types = numeric_bool_types(v >= 22 ? 13 : 9);
    auto infer = [v](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      DataType dt = eyelike_dtype(ctx.attrs, t.elem, v);
      if (t.kind == Type::Kind::Tensor && t.shape.rank_known && t.shape.dims.size() != 2)
        ctx.error(cat("input must be 2-D, got ", t.shape.to_string()));
      ctx.set_output(0, Type::tensor(dt, t.kind == Type::Kind::Tensor ? t.shape : unknown_dims(2)));
    };
    auto kernel = [v](const KernelInit& init) {
      int64_t k = init.attrs.get_int("k", 0);
      bool has_dtype = init.attrs.has("dtype");
      DataType fixed = has_dtype ? eyelike_dtype(init.attrs, DataType::Undefined, v) : DataType::Undefined;
      return make_kernel([k, fixed, v](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        if (x.dims().size() != 2) ctx.error(cat("input must be 2-D, got ", shape_of(x.dims()).to_string()));
        DataType dt = fixed != DataType::Undefined ? fixed : x.dtype();
        if (!contains(numeric_bool_types(v >= 22 ? 13 : 9), dt)) ctx.error(cat("output element type ", dt, " is not allowed"));
        Tensor one = one_of(dt);
        Tensor& y = ctx.allocate_output(0, dt, x.dims());
        const int64_t rows = x.dims()[0], cols = x.dims()[1];
        for (int64_t i = 0; i < rows; ++i) {
          // j = i + k, skipping the rows whose diagonal element is outside [0, cols)
          if (k < -i || k >= cols - i) continue;
          copy_elements(one, 0, y, static_cast<uint64_t>(i * cols + i + k), 1);
        }
      });
    };
    add_versions(r, "", "EyeLike", {v}, {{{0}, types}}, infer, kernel);
  }
}

// ---- Range ----

int64_t range_count(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  for (const Tensor* t : {&start, &limit, &delta})
    if (t->element_count() != 1 || t->dims().size() > 1)
      fail("Range inputs must be scalars, got shape ", shape_of(t->dims()).to_string());
  if (start.dtype() != limit.dtype() || start.dtype() != delta.dtype())
    fail("Range inputs have different element types ", start.dtype(), ", ", limit.dtype(), ", ", delta.dtype());
  int64_t n = 0;
  if (start.dtype() == D::Int16 || start.dtype() == D::Int32 || start.dtype() == D::Int64) {
    __int128 s = read_ints(start)[0], l = read_ints(limit)[0], d = read_ints(delta)[0];
    if (d == 0) fail("Range delta is 0");
    __int128 diff = l - s;
    if ((diff > 0) != (d > 0) || diff == 0) return 0;
    if (d < 0) {
      diff = -diff;
      d = -d;
    }
    __int128 c = (diff + d - 1) / d;
    if (c > static_cast<__int128>(kMaxDataSizedElements)) fail("Range would have more than ", kMaxDataSizedElements, " elements");
    n = static_cast<int64_t>(c);
  } else {
    double s = read_doubles(start)[0], l = read_doubles(limit)[0], d = read_doubles(delta)[0];
    if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) fail("Range inputs must be finite");
    if (d == 0) fail("Range delta is 0");
    double c = std::ceil((l - s) / d);
    if (c > static_cast<double>(kMaxDataSizedElements)) fail("Range would have more than ", kMaxDataSizedElements, " elements");
    n = c > 0 ? static_cast<int64_t>(c) : 0;
  }
  return n;
}

void add_range(Registry& r) {
  for (int v : {11, 27}) {
    std::vector<DataType> types = {D::Float, D::Double, D::Int16, D::Int32, D::Int64};
    if (v >= 27) types.insert(types.end(), {D::Float16, D::BFloat16});
    auto infer = [](InferContext& ctx) {
      const DataType dt = ctx.input_dtype(0);
      const Tensor *s = ctx.input_value(0), *l = ctx.input_value(1), *d = ctx.input_value(2);
      if (s && l && d) {
        ctx.set_output(0, tensor_type(dt, {range_count(*s, *l, *d)}));
        return;
      }
      ctx.set_output(0, Type::tensor(dt, unknown_dims(1)));
    };
    auto kernel = [](const KernelInit&) {
      return make_kernel([](KernelContext& ctx) {
        const Tensor &s = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);
        const int64_t n = range_count(s, l, d);
        Tensor& y = ctx.allocate_output(0, s.dtype(), {n});
        visit_dtype(s.dtype(), [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            const int64_t s0 = read_ints(s)[0], d0 = read_ints(d)[0];
            T* p = y.mutable_data<T>();
            // Every value lies between start and limit, so it fits T; the wide product avoids overflow.
            for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<__int128>(s0) + static_cast<__int128>(i) * d0);
          } else if constexpr (std::is_floating_point_v<T> || is_small_float_v<T>) {
            const double s0 = read_doubles(s)[0], d0 = read_doubles(d)[0];
            T* p = y.mutable_data<T>();
            for (int64_t i = 0; i < n; ++i) {
              const double x = s0 + static_cast<double>(i) * d0;
              if constexpr (std::is_floating_point_v<T>) p[i] = static_cast<T>(x);
              else p[i] = from_double<T>(x);
            }
          } else {
            ctx.error(cat("element type ", s.dtype(), " is not supported"));
          }
        });
      });
    };
    add_versions(r, "", "Range", {v}, {{{0, 1, 2}, types}}, infer, kernel);
  }
}

}  // namespace

void register_constant(Registry& r) {
  add_constant(r);
  add_constant_of_shape(r);
  add_eyelike(r);
  add_range(r);
}

}  // namespace onyx::ops
