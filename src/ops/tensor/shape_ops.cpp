// ai.onnx Identity, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze: ops that change how a tensor's elements are
// viewed, never the elements themselves (outputs share the input's buffer).
//   Identity  1, 13 (bfloat16), 14 (sequences), 16 (optionals), 19 (float8), 21 (int4), 23 (float4e2m1),
//             24 (float8e8m0), 25 (int2).
//   Shape     1, 13 (bfloat16), 15 (start/end attributes: a slice of the shape, clamped), 19, 21, 23, 24, 25.
//   Size      1, 13, 19, 21, 23, 24, 25.
//   Reshape   1 (shape as an attribute; float types only), 5 (shape as an int64 input), 13, 14 (allowzero: a 0 in
//             the shape is a real 0 rather than "copy the input dim"), 19, 21, 23, 24, 25.
//   Flatten   1 (axis in [0, rank]; float types), 9 (all types), 11 (negative axis), 13, 21, 23, 24, 25.
//   Squeeze   1, 11 (negative axes), 13 (axes as an optional int64 input), 21, 23, 24, 25.
//   Unsqueeze 1, 11 (negative axes), 13 (axes as an int64 input), 21, 23, 24, 25.
// Inference keeps symbolic dims where the op keeps them; Shape and Size give their value when it is known from the
// input's shape (only the sliced dims of Shape need to be static), so Shape -> Gather -> Concat -> Reshape chains
// fold at session creation. Shape also gives its symbolic contents (InferContext dim values, e.g. {N, 3}), which
// Identity, Reshape, Flatten, Squeeze and Unsqueeze pass on unchanged (they keep the elements in order), and Reshape
// reads its target shape from them: Reshape(x, Concat(Shape(x)[0], [-1])) of x [N,3,4,4] is [N,48].
#include <algorithm>

#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

Tensor int64_tensor(const Dims& dims, const std::vector<int64_t>& values) {
  Tensor t = Tensor::allocate(D::Int64, dims);
  if (!values.empty()) std::memcpy(t.mutable_data<char>(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

// ---- Identity ----

void add_identity(Registry& r) {
  for (int v : {1, 13, 14, 16, 19, 21, 23, 24, 25}) {
    auto infer = [](InferContext& ctx) {
      infer_same_as_input(ctx);
      if (const Tensor* c = ctx.input_value(0)) ctx.output_values[0] = *c;
      ctx.forward_dim_values();
    };
    auto kernel = [v](const KernelInit&) {
      return make_kernel([v](KernelContext& ctx) {
        const Datum& d = ctx.input_datum(0);
        if (d.kind == Datum::Kind::Sequence && v < 14) ctx.error("sequences need Identity-14 or later");
        if (d.kind == Datum::Kind::Optional && v < 16) ctx.error("optionals need Identity-16 or later");
        if (d.kind == Datum::Kind::Map) ctx.error("Identity does not take maps");
        ctx.set_output(0, d);
      });
    };
    add_versions(r, "", "Identity", {v}, {{{0}, all_tensor_types(v)}}, infer, kernel);
  }
}

// ---- Shape, Size ----

// The [start, end) range of dims Shape-15 returns, clamped to [0, rank].
std::pair<int64_t, int64_t> shape_range(int64_t rank, int64_t start, int64_t end) {
  auto clamp = [rank](int64_t x) {
    if (x < 0) x += rank;
    return x < 0 ? 0 : (x > rank ? rank : x);
  };
  int64_t s = clamp(start), e = clamp(end);
  return {s, e < s ? s : e};
}

void add_shape(Registry& r) {
  for (int v : {1, 13, 15, 19, 21, 23, 24, 25}) {
    auto bounds = [v](const AttributeView& a) {
      int64_t start = v >= 15 ? a.get_int("start", 0) : 0;
      int64_t end = v >= 15 ? a.get_int("end", INT64_MAX) : INT64_MAX;
      return std::make_pair(start, end);
    };
    auto infer = [bounds](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        ctx.set_output(0, Type::tensor(D::Int64, unknown_dims(1)));
        return;
      }
      auto [start, end] = bounds(ctx.attrs);
      auto [s, e] = shape_range(static_cast<int64_t>(t.shape.dims.size()), start, end);
      ctx.set_output(0, tensor_type(D::Int64, {e - s}));
      ctx.set_output_dim_values(0, std::vector<Dim>(t.shape.dims.begin() + s, t.shape.dims.begin() + e));
      std::vector<int64_t> vals;
      for (int64_t i = s; i < e; ++i) {
        const Dim& d = t.shape.dims[static_cast<size_t>(i)];
        if (!d.value) return;
        vals.push_back(*d.value);
      }
      ctx.output_values[0] = int64_tensor({e - s}, vals);
    };
    auto kernel = [bounds](const KernelInit& init) {
      const auto range = bounds(init.attrs);  // a pair, not a structured binding: clang 14 cannot capture those
      const int64_t start = range.first, end = range.second;
      return make_kernel([start, end](KernelContext& ctx) {
        const Dims& dims = ctx.input(0).dims();
        auto [s, e] = shape_range(static_cast<int64_t>(dims.size()), start, end);
        ctx.set_output(0, int64_tensor({e - s}, std::vector<int64_t>(dims.begin() + s, dims.begin() + e)));
      });
    };
    add_versions(r, "", "Shape", {v}, {{{0}, all_tensor_types(v)}}, infer, kernel);
  }
  for (int v : {1, 13, 19, 21, 23, 24, 25}) {
    auto infer = [](InferContext& ctx) {
      ctx.set_output(0, tensor_type(D::Int64, {}));
      const Type& t = ctx.input_type(0);
      if (t.kind != Type::Kind::Tensor) return;
      if (auto d = static_dims(t)) ctx.output_values[0] = int64_tensor({}, {product(*d)});
    };
    auto kernel = [](const KernelInit&) {
      return make_kernel([](KernelContext& ctx) {
        ctx.set_output(0, int64_tensor({}, {static_cast<int64_t>(ctx.input(0).element_count())}));
      });
    };
    add_versions(r, "", "Size", {v}, {{{0}, all_tensor_types(v)}}, infer, kernel);
  }
}

// ---- Reshape ----

void check_shape_spec(const std::vector<int64_t>& shape, bool allowzero) {
  int minus = 0;
  bool zero = false;
  for (int64_t s : shape) {
    if (s < -1) fail("shape value ", s, " is invalid (only -1 may be negative)");
    if (s == -1) ++minus;
    if (s == 0) zero = true;
  }
  if (minus > 1) fail("shape has more than one -1");
  if (allowzero && zero && minus) fail("shape has both 0 and -1, which allowzero=1 does not allow");
}

// Static output dims of Reshape.
Dims reshape_dims(const Dims& in, const std::vector<int64_t>& shape, bool allowzero) {
  check_shape_spec(shape, allowzero);
  Dims out(shape.size());
  int64_t infer_at = -1;
  uint64_t known = 1;
  bool known_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    if (s == 0 && !allowzero) {
      if (i >= in.size())
        fail("shape value 0 at index ", i, " copies an input dim, but the input ", shape_of(in).to_string(), " has rank ", in.size());
      s = in[i];
    }
    if (s == -1) {
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    out[i] = s;
    if (s == 0) {
      known_zero = true;
    } else {
      known = known > (uint64_t{1} << 62) / static_cast<uint64_t>(s) ? (uint64_t{1} << 62) : known * static_cast<uint64_t>(s);
    }
  }
  const uint64_t total = static_cast<uint64_t>(product(in));
  if (infer_at >= 0) {
    if (known_zero) fail("cannot infer the -1 dim of shape ", shape_of(shape).to_string(), ": the other dims have 0 elements");
    if (total % known) fail("cannot reshape ", shape_of(in).to_string(), " to ", shape_of(shape).to_string());
    out[static_cast<size_t>(infer_at)] = static_cast<int64_t>(total / known);
  } else if ((known_zero ? 0 : known) != total) {
    fail("cannot reshape ", shape_of(in).to_string(), " (", total, " elements) to ", shape_of(out).to_string());
  }
  return out;
}

// Reshape inference with symbolic dims: 0 copies the input Dim, -1 is computed when the element counts cancel.
// `shape` entries are static values, symbols (a dim of another tensor, from Shape), or unknown.
Shape reshape_shape(const Shape& in, const std::vector<Dim>& shape, bool allowzero) {
  std::vector<int64_t> statics;
  for (const Dim& d : shape)
    if (d.value) statics.push_back(*d.value);
  check_shape_spec(statics, allowzero);
  Shape out = unknown_dims(shape.size());
  int64_t infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].value) {
      out.dims[i] = shape[i];  // a symbol (assumed neither 0 nor -1) or unknown
      continue;
    }
    const int64_t s = *shape[i].value;
    if (s == 0 && !allowzero) {
      if (in.rank_known && i >= in.dims.size())
        fail("shape value 0 at index ", i, " copies an input dim, but the input ", in.to_string(), " has rank ", in.dims.size());
      if (in.rank_known) out.dims[i] = in.dims[i];
    } else if (s == -1) {
      infer_at = static_cast<int64_t>(i);
    } else {
      out.dims[i] = known_dim(s);
    }
  }
  if (infer_at < 0 || !in.rank_known) return out;
  // numerator: input dims; denominator: the other output dims. Cancel equal symbols, then divide the statics.
  std::vector<std::string> num_syms, den_syms;
  int64_t num = 1, den = 1;
  for (const Dim& d : in.dims) {
    if (d.value) {
      if (__builtin_mul_overflow(num, *d.value, &num)) return out;
    } else if (d.param.empty()) {
      return out;
    } else {
      num_syms.push_back(d.param);
    }
  }
  for (size_t i = 0; i < out.dims.size(); ++i) {
    if (static_cast<int64_t>(i) == infer_at) continue;
    const Dim& d = out.dims[i];
    if (d.value) {
      if (__builtin_mul_overflow(den, *d.value, &den)) return out;
    } else if (d.param.empty()) {
      return out;
    } else {
      den_syms.push_back(d.param);
    }
  }
  for (auto it = den_syms.begin(); it != den_syms.end();) {
    auto f = std::find(num_syms.begin(), num_syms.end(), *it);
    if (f == num_syms.end()) return out;  // a symbol of the output not in the input: unknown
    num_syms.erase(f);
    it = den_syms.erase(it);
  }
  if (den == 0 || num % den) return out;
  Dim& target = out.dims[static_cast<size_t>(infer_at)];
  if (num_syms.empty()) target = known_dim(num / den);
  else if (num_syms.size() == 1 && num == den) target = Dim{std::nullopt, num_syms[0], {}};
  return out;
}

std::vector<Dim> as_dims(const std::vector<int64_t>& v) {
  std::vector<Dim> out;
  for (int64_t x : v) out.push_back(known_dim(x));
  return out;
}

void add_reshape(Registry& r) {
  for (int v : {1, 5, 13, 14, 19, 21, 23, 24, 25}) {
    auto infer = [v](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      const bool allowzero = v >= 14 && ctx.attrs.get_int("allowzero", 0) != 0;
      ctx.forward_dim_values();
      const Shape in = t.kind == Type::Kind::Tensor ? t.shape : Shape{};
      if (v == 1) {
        if (!ctx.attrs.has("shape")) ctx.error("Reshape-1 needs the 'shape' attribute");
        ctx.set_output(0, Type::tensor(t.elem, reshape_shape(in, as_dims(ctx.attrs.get_ints("shape")), false)));
        return;
      }
      if (const Tensor* s = ctx.input_value(1)) {
        ctx.set_output(0, Type::tensor(t.elem, reshape_shape(in, as_dims(read_int_list(*s, "shape")), allowzero)));
        return;
      }
      if (auto sym = shape_input_dims(ctx, 1, true)) {  // e.g. Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])
        ctx.set_output(0, Type::tensor(t.elem, reshape_shape(in, *sym, allowzero)));
        return;
      }
      const Type& st = ctx.input_type(1);
      if (st.kind == Type::Kind::Tensor && st.shape.rank_known && st.shape.dims.size() == 1 && st.shape.dims[0].value)
        ctx.set_output(0, Type::tensor(t.elem, unknown_dims(static_cast<size_t>(*st.shape.dims[0].value))));
      else
        ctx.set_output(0, Type::tensor(t.elem));
    };
    auto kernel = [v](const KernelInit& init) {
      const bool allowzero = v >= 14 && init.attrs.get_int("allowzero", 0) != 0;
      std::vector<int64_t> attr_shape;
      if (v == 1) attr_shape = init.attrs.get_ints("shape", std::vector<int64_t>{});
      return make_kernel([v, allowzero, attr_shape](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        std::vector<int64_t> shape = v == 1 ? attr_shape : read_int_list(ctx.input(1), "shape");
        ctx.set_output(0, x.reshaped(reshape_dims(x.dims(), shape, allowzero)));
      });
    };
    std::vector<TypeConstraint> types = {{{0}, v == 1 ? float_types(1) : all_tensor_types(v)}};
    if (v >= 5) types.push_back({{1}, {D::Int64}});
    add_versions(r, "", "Reshape", {v}, types, infer, kernel);
  }
}

// ---- Flatten ----

// Product of dims [from, to) for inference: static, one symbol times 1s, or unknown.
Dim dim_product(const std::vector<Dim>& dims, size_t from, size_t to) {
  int64_t p = 1;
  const Dim* sym = nullptr;
  for (size_t i = from; i < to; ++i) {
    if (dims[i].value) {
      if (__builtin_mul_overflow(p, *dims[i].value, &p)) return {};
    } else if (!sym) {
      sym = &dims[i];
    } else {
      return {};
    }
  }
  if (!sym) return known_dim(p);
  if (p == 1 && !sym->param.empty()) return *sym;
  return {};
}

int64_t flatten_axis(int64_t axis, int64_t rank, int v) {
  if (v < 11 && axis < 0) fail("axis ", axis, " must not be negative before Flatten-11");
  if (axis < -rank || axis > rank) fail("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

void add_flatten(Registry& r) {
  for (int v : {1, 9, 11, 13, 21, 23, 24, 25}) {
    auto infer = [v](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      ctx.forward_dim_values();
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        ctx.set_output(0, Type::tensor(t.elem, unknown_dims(2)));
        return;
      }
      const auto& dims = t.shape.dims;
      size_t axis = static_cast<size_t>(flatten_axis(ctx.attrs.get_int("axis", 1), static_cast<int64_t>(dims.size()), v));
      Shape s = unknown_dims(2);
      s.dims[0] = dim_product(dims, 0, axis);
      s.dims[1] = dim_product(dims, axis, dims.size());
      ctx.set_output(0, Type::tensor(t.elem, s));
    };
    auto kernel = [v](const KernelInit& init) {
      int64_t axis_attr = init.attrs.get_int("axis", 1);
      return make_kernel([v, axis_attr](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        size_t axis = static_cast<size_t>(flatten_axis(axis_attr, static_cast<int64_t>(x.dims().size()), v));
        ctx.set_output(0, x.reshaped({product(x.dims(), 0, axis), product(x.dims(), axis)}));
      });
    };
    add_versions(r, "", "Flatten", {v}, {{{0}, v == 1 ? float_types(1) : all_tensor_types(v)}}, infer, kernel);
  }
}

// ---- Squeeze, Unsqueeze ----

void check_axes_sign(const std::vector<int64_t>& axes, int v, const char* op) {
  for (int64_t a : axes)
    if (a < 0 && v < 11) fail("axis ", a, " must not be negative before ", op, "-11");
}

// Axes of Squeeze/Unsqueeze known at inference: the attribute (before 13) or the constant input.
std::optional<std::vector<int64_t>> infer_axes(const InferContext& ctx, int v, bool* given) {
  if (v < 13) {
    *given = ctx.attrs.has("axes");
    if (*given) return ctx.attrs.get_ints("axes");
    return std::vector<int64_t>{};
  }
  *given = ctx.has_input(1);
  if (!*given) return std::vector<int64_t>{};
  if (const Tensor* a = ctx.input_value(1)) return read_int_list(*a, "axes");
  return std::nullopt;
}

void add_squeeze(Registry& r) {
  for (int v : {1, 11, 13, 21, 23, 24, 25}) {
    auto infer = [v](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      ctx.forward_dim_values();
      bool given = false;
      auto axes = infer_axes(ctx, v, &given);
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        ctx.set_output(0, Type::tensor(t.elem));
        return;
      }
      const auto& dims = t.shape.dims;
      if (!axes) {  // axes not constant: the rank is known when the axes' length is
        const Type* at = ctx.input_types[1];
        if (at && at->kind == Type::Kind::Tensor && at->shape.rank_known && at->shape.dims.size() == 1 &&
            at->shape.dims[0].value && *at->shape.dims[0].value <= static_cast<int64_t>(dims.size()))
          ctx.set_output(0, Type::tensor(t.elem, unknown_dims(dims.size() - static_cast<size_t>(*at->shape.dims[0].value))));
        else
          ctx.set_output(0, Type::tensor(t.elem));
        return;
      }
      check_axes_sign(*axes, v, "Squeeze");
      std::vector<bool> drop(dims.size(), false);
      if (given) {
        for (int64_t a : normalize_axes(*axes, static_cast<int64_t>(dims.size()))) {
          const Dim& d = dims[static_cast<size_t>(a)];
          if (d.value && *d.value != 1) ctx.error(cat("cannot squeeze axis ", a, " of shape ", t.shape.to_string(), ": its size is not 1"));
          drop[static_cast<size_t>(a)] = true;
        }
      } else {
        for (size_t i = 0; i < dims.size(); ++i) {
          if (!dims[i].value) {  // might be 1: the rank is unknown
            ctx.set_output(0, Type::tensor(t.elem));
            return;
          }
          drop[i] = *dims[i].value == 1;
        }
      }
      Shape s;
      s.rank_known = true;
      for (size_t i = 0; i < dims.size(); ++i)
        if (!drop[i]) s.dims.push_back(dims[i]);
      ctx.set_output(0, Type::tensor(t.elem, s));
    };
    auto kernel = [v](const KernelInit& init) {
      bool attr_given = v < 13 && init.attrs.has("axes");
      std::vector<int64_t> attr_axes = attr_given ? init.attrs.get_ints("axes") : std::vector<int64_t>{};
      return make_kernel([v, attr_given, attr_axes](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        const Dims& dims = x.dims();
        bool given = v < 13 ? attr_given : ctx.has_input(1);
        std::vector<int64_t> axes = v < 13 ? attr_axes : (given ? read_int_list(ctx.input(1), "axes") : std::vector<int64_t>{});
        check_axes_sign(axes, v, "Squeeze");
        std::vector<bool> drop(dims.size(), false);
        if (given) {
          for (int64_t a : normalize_axes(axes, static_cast<int64_t>(dims.size()))) {
            if (dims[static_cast<size_t>(a)] != 1)
              ctx.error(cat("cannot squeeze axis ", a, " of shape ", shape_of(dims).to_string(), ": its size is not 1"));
            drop[static_cast<size_t>(a)] = true;
          }
        } else {
          for (size_t i = 0; i < dims.size(); ++i) drop[i] = dims[i] == 1;
        }
        Dims out;
        for (size_t i = 0; i < dims.size(); ++i)
          if (!drop[i]) out.push_back(dims[i]);
        ctx.set_output(0, x.reshaped(out));
      });
    };
    std::vector<TypeConstraint> types = {{{0}, all_tensor_types(v)}};
    if (v >= 13) types.push_back({{1}, {D::Int64}});
    add_versions(r, "", "Squeeze", {v}, types, infer, kernel);
  }
}

// Output dims of Unsqueeze: `axes` index the output (rank + axes.size()).
template <class DimT>
std::vector<DimT> unsqueeze(const std::vector<DimT>& dims, const std::vector<int64_t>& axes, DimT one) {
  const int64_t out_rank = static_cast<int64_t>(dims.size() + axes.size());
  std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
  for (int64_t a : normalize_axes(axes, out_rank)) is_new[static_cast<size_t>(a)] = true;
  std::vector<DimT> out;
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(is_new[static_cast<size_t>(i)] ? one : dims[j++]);
  return out;
}

void add_unsqueeze(Registry& r) {
  for (int v : {1, 11, 13, 21, 23, 24, 25}) {
    auto infer = [v](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      if (v < 13 && !ctx.attrs.has("axes")) ctx.error("Unsqueeze needs the 'axes' attribute");
      if (v >= 13 && !ctx.has_input(1)) ctx.error("Unsqueeze-13 needs the 'axes' input");
      ctx.forward_dim_values();
      bool given = false;
      auto axes = infer_axes(ctx, v, &given);
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        ctx.set_output(0, Type::tensor(t.elem));
        return;
      }
      if (!axes) {
        const Type& at = ctx.input_type(1);
        if (at.kind == Type::Kind::Tensor && at.shape.rank_known && at.shape.dims.size() == 1 && at.shape.dims[0].value)
          ctx.set_output(0, Type::tensor(t.elem, unknown_dims(t.shape.dims.size() + static_cast<size_t>(*at.shape.dims[0].value))));
        else
          ctx.set_output(0, Type::tensor(t.elem));
        return;
      }
      check_axes_sign(*axes, v, "Unsqueeze");
      Shape s;
      s.rank_known = true;
      s.dims = unsqueeze(t.shape.dims, *axes, known_dim(1));
      ctx.set_output(0, Type::tensor(t.elem, s));
    };
    auto kernel = [v](const KernelInit& init) {
      std::vector<int64_t> attr_axes = v < 13 ? init.attrs.get_ints("axes") : std::vector<int64_t>{};
      return make_kernel([v, attr_axes](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        std::vector<int64_t> axes = v < 13 ? attr_axes : read_int_list(ctx.input(1), "axes");
        check_axes_sign(axes, v, "Unsqueeze");
        ctx.set_output(0, x.reshaped(unsqueeze<int64_t>(x.dims(), axes, 1)));
      });
    };
    std::vector<TypeConstraint> types = {{{0}, all_tensor_types(v)}};
    if (v >= 13) types.push_back({{1}, {D::Int64}});
    add_versions(r, "", "Unsqueeze", {v}, types, infer, kernel);
  }
}

}  // namespace

void register_shape_ops(Registry& r) {
  add_identity(r);
  add_shape(r);
  add_reshape(r);
  add_flatten(r);
  add_squeeze(r);
  add_unsqueeze(r);
  r.set_gradient("", "Identity", grad::same_elements);
  r.set_gradient("", "Reshape", grad::same_elements);
  r.set_gradient("", "Flatten", grad::same_elements);
  r.set_gradient("", "Squeeze", grad::same_elements);
  r.set_gradient("", "Unsqueeze", grad::same_elements);
}

}  // namespace onyx::ops
