// ai.onnx Pad — versions 1, 2, 11, 13, 18, 19, 21, 23, 24, 25.
// 1: attribute `paddings`; 2: attribute `pads`; both with a float `value` and float types only.
// 11: `pads` (int64) and the optional scalar `constant_value` become inputs; integer types.
// 13: all tensor types with bfloat16 (string, bool, complex). 18: optional `axes` input (pads then has
// 2 * len(axes) entries). 19: mode "wrap". 21: float8 and 4-bit integers; 23: float4e2m1; 24: float8e8m0;
// 25: 2-bit integers.
// pads are [x1_begin, x2_begin, ..., x1_end, x2_end, ...]. Negative pads remove elements first; the other modes
// then read the remaining data. reflect/edge/wrap follow numpy.pad (reflect repeats its reflection when the pad is
// longer than the data); they need at least one remaining element on a padded axis.
#include <algorithm>

#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {


enum class PadMode { Constant, Reflect, Edge, Wrap };

PadMode parse_pad_mode(const AttributeView& attrs, int since) {
  std::string m = attrs.get_string("mode", "constant");
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "edge") return PadMode::Edge;
  if (m == "wrap" && since >= 19) return PadMode::Wrap;
  fail("mode '", m, "' is not supported", since >= 19 ? " (constant, reflect, edge, wrap)" : " (constant, reflect, edge)");
}

// Expands pads given for `axes` to all `rank` axes.
std::vector<int64_t> full_pads(const std::vector<int64_t>& pads, const std::optional<std::vector<int64_t>>& axes, int64_t rank) {
  if (!axes) {
    if (static_cast<int64_t>(pads.size()) != 2 * rank)
      fail("pads has ", pads.size(), " values; expected ", 2 * rank, " (2 * input rank)");
    return pads;
  }
  const int64_t n = static_cast<int64_t>(axes->size());
  if (static_cast<int64_t>(pads.size()) != 2 * n) fail("pads has ", pads.size(), " values; expected ", 2 * n, " (2 * number of axes)");
  std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = normalize_axis((*axes)[i], rank, "axes value");
    if (seen[a]) fail("axis ", a, " appears more than once in axes");
    seen[a] = true;
    full[a] = pads[i];
    full[a + rank] = pads[i + n];
  }
  return full;
}

// Source index along one axis for each output position (-1: the constant).
std::vector<int64_t> axis_map(int64_t n, int64_t begin, int64_t end, PadMode mode, int64_t axis) {
  const int64_t start = std::max<int64_t>(-begin, 0);
  const int64_t m = n - start - std::max<int64_t>(-end, 0);  // elements left after negative pads
  const int64_t pre = std::max<int64_t>(begin, 0);
  const int64_t out = m + pre + std::max<int64_t>(end, 0);
  if (m < 0 || out < 0) fail("pads ", begin, ", ", end, " on axis ", axis, " remove more than its ", n, " elements");
  std::vector<int64_t> map(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    int64_t j = o - pre;
    if (j < 0 || j >= m) {
      if (mode == PadMode::Constant) {
        map[o] = -1;
        continue;
      }
      if (m == 0) fail("cannot pad axis ", axis, " of size 0 in this mode");
      if (mode == PadMode::Edge) {
        j = j < 0 ? 0 : m - 1;
      } else if (mode == PadMode::Wrap) {
        j = ((j % m) + m) % m;
      } else if (m == 1) {
        j = 0;
      } else {  // reflect: period 2(m-1), mirrored at both ends without repeating the edge
        const int64_t p = 2 * (m - 1);
        j = ((j % p) + p) % p;
        if (j >= m) j = p - j;
      }
    }
    map[o] = start + j;
  }
  return map;
}

Tensor pad_tensor(const Tensor& x, const std::vector<int64_t>& pads, PadMode mode, const Tensor& fill) {
  const Dims& xd = x.dims();
  const int64_t r = static_cast<int64_t>(xd.size());
  std::vector<std::vector<int64_t>> maps;
  Dims od;
  for (int64_t a = 0; a < r; ++a) {
    const int64_t b = pads[a], e = pads[a + r];
    // Bound the pads before the per-axis maps are built from them.
    if (b > static_cast<int64_t>(kMaxDataSizedElements) || e > static_cast<int64_t>(kMaxDataSizedElements) ||
        b < -xd[a] - 1 || e < -xd[a] - 1)
      fail("pads ", b, ", ", e, " on axis ", a, " are out of range for a dimension of size ", xd[a]);
    od.push_back(xd[a] + b + e);
    if (od.back() < 0) fail("pads ", b, ", ", e, " on axis ", a, " remove more than its ", xd[a], " elements");
  }
  check_data_sized(od, x.dtype(), "Pad");
  for (int64_t a = 0; a < r; ++a) maps.push_back(axis_map(xd[a], pads[a], pads[a + r], mode, a));
  Tensor y = Tensor::allocate(x.dtype(), od);
  if (product(od) == 0) return y;
  const Dims xs = strides_of(xd);
  ElementCopier from_x(x, y);
  ElementCopier from_fill(fill, y);
  for_each_index(od, [&](int64_t i, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (int64_t a = 0; a < r; ++a) {
      int64_t s = maps[a][idx[a]];
      if (s < 0) {
        from_fill.copy(0, static_cast<uint64_t>(i));
        return;
      }
      off += s * xs[a];
    }
    from_x.copy(static_cast<uint64_t>(off), static_cast<uint64_t>(i));
  });
  return y;
}

// A one-element tensor holding `v` (the float attribute of Pad 1/2) in element type dt.
Tensor float_fill(DataType dt, float v) {
  Tensor t = Tensor::allocate(dt, {1});
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || is_small_float_v<T>) t.mutable_data<T>()[0] = T(v);
    else fail("Pad with a value attribute needs a float type, got ", dt);
  });
  return t;
}

void infer_pad(InferContext& ctx, int since) {
  parse_pad_mode(ctx.attrs, since);
  const Type& x = ctx.input_type(0);
  auto r = rank_of(x);
  if (!r) {
    ctx.set_output(0, Type::tensor(x.elem));
    return;
  }
  const int64_t rank = static_cast<int64_t>(*r);
  std::optional<std::vector<int64_t>> pads, axes;
  if (since < 11) {
    pads = ctx.attrs.get_ints(since == 1 ? "paddings" : "pads");
  } else {
    if (const Tensor* p = ctx.input_value(1)) pads = read_ints(*p);
    if (ctx.has_input(3)) {
      if (const Tensor* a = ctx.input_value(3)) axes = read_ints(*a);
      else pads.reset();  // unknown axes: the padded dims are unknown
    }
  }
  Shape s;
  s.rank_known = true;
  s.dims.resize(*r);
  if (pads) {
    std::vector<int64_t> full = full_pads(*pads, axes, rank);
    for (int64_t a = 0; a < rank; ++a) {
      const Dim& d = x.shape.dims[a];
      const int64_t add = full[a] + full[a + rank];
      if (d.value) {
        if (*d.value + add < 0) ctx.error(cat("pads on axis ", a, " remove more than its ", *d.value, " elements"));
        s.dims[a] = known_dim(*d.value + add);
      } else if (add == 0 && full[a] == 0) {
        s.dims[a] = d;
      }
    }
  }
  ctx.set_output(0, Type::tensor(x.elem, s));
}

void run_pad(KernelContext& ctx, int since, PadMode mode, const std::vector<int64_t>& attr_pads, float value) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> pads;
  Tensor fill;
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  if (since < 11) {
    pads = full_pads(attr_pads, std::nullopt, rank);
    fill = float_fill(x.dtype(), value);
  } else {
    const Tensor& p = ctx.input(1);
    if (p.dims().size() > 1 && !(p.dims().size() == 2 && p.dims()[0] == 1)) ctx.error("pads must be a 1-D tensor");
    std::optional<std::vector<int64_t>> axes;
    if (since >= 18 && ctx.has_input(3)) {
      axes = read_ints(ctx.input(3));
    }
    pads = full_pads(read_ints(p), axes, rank);
    fill = Tensor::allocate(x.dtype(), {1});
    if (ctx.has_input(2)) {
      const Tensor& c = ctx.input(2);
      if (c.dtype() != x.dtype()) ctx.error(cat("constant_value has element type ", c.dtype(), ", data has ", x.dtype()));
      if (c.element_count() > 1) ctx.error(cat("constant_value must be a scalar, got ", c.element_count(), " elements"));
      if (c.element_count() == 1) ElementCopier(c, fill).copy(0, 0);
    }
  }
  ctx.set_output(0, pad_tensor(x, pads, mode, fill));
}

}  // namespace

void register_pad(Registry& r) {
  using D = DataType;
  for (const int since : {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}) {
    // Pad-19 kept the list of 13 (no float8); the float8 types came with 21.
    const std::vector<DataType> t = since < 11 ? float_types(1) : since < 13 ? numeric_types(11) : all_tensor_types(since == 19 ? 18 : since);
    std::vector<TypeConstraint> types = {{{0}, t}};
    if (since >= 11) {
      types.push_back({{2}, t});
      types.push_back({{1}, {D::Int64}});
    }
    if (since >= 18) types.push_back({{3}, {D::Int32, D::Int64}});
    r.add(OpDef{"", "Pad", since, types, [since](InferContext& ctx) { infer_pad(ctx, since); }, [since](const KernelInit& init) {
                  PadMode mode = parse_pad_mode(init.attrs, since);
                  std::vector<int64_t> pads;
                  float value = 0;
                  if (since < 11) {
                    pads = init.attrs.get_ints(since == 1 ? "paddings" : "pads");
                    value = init.attrs.get_float("value", 0.0f);
                  }
                  return make_kernel([since, mode, pads, value](KernelContext& ctx) { run_pad(ctx, since, mode, pads, value); });
                }});
  }
  r.set_gradient("", "Pad", grad::element_moves);
}

}  // namespace onyx::ops
