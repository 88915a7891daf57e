// ai.onnx Slice — versions 1, 10, 11, 13.
//   1:  starts, ends and optional axes are attributes; steps are 1.
//   10: starts, ends, axes (optional), steps (optional) are int32/int64 inputs; steps may be negative.
//   11: negative axes documented (accepted in every version here); 13: bfloat16.
// Per sliced axis of size d: negative starts/ends count from the end (+d); with a positive step start and end are
// clamped to [0, d], with a negative step start to [0, d-1] and end to [-1, d-1]; the length is
// max(0, ceil((end - start) / step)). A step of 0 and repeated axes are errors.
// Slicing a 1-D shape tensor (symbolic dim values, see InferContext) with known arguments slices its dim values:
// Shape(x)[1:] of x [N,3,8] holds {3, 8}, Shape(x)[:1] holds {N}.
#include <algorithm>

#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;  // axes/steps empty: defaults
};

struct AxisSlice {
  int64_t start = 0, step = 1, len = 0;
};

// Start and length of one axis of size d.
AxisSlice axis_slice_of(int64_t d, int64_t s, int64_t e, int64_t step) {
  AxisSlice a;
  a.step = step;
  if (s < 0) s += d;
  if (e < 0) e += d;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, d);
    e = std::clamp<int64_t>(e, 0, d);
    a.start = s;
    a.len = e > s ? static_cast<int64_t>((static_cast<__int128>(e) - s + step - 1) / step) : 0;
  } else {
    if (d == 0) return a;
    s = std::clamp<int64_t>(s, 0, d - 1);
    e = std::clamp<int64_t>(e, -1, d - 1);
    a.start = s;
    const __int128 neg = -static_cast<__int128>(step);
    a.len = s > e ? static_cast<int64_t>((static_cast<__int128>(s) - e + neg - 1) / neg) : 0;
  }
  return a;
}

// Checks the argument lists and gives, per listed entry, the normalized axis.
std::vector<int64_t> slice_axes(const SliceArgs& a, int64_t rank) {
  if (a.starts.size() != a.ends.size())
    fail("starts has ", a.starts.size(), " values but ends has ", a.ends.size());
  std::vector<int64_t> axes = a.axes;
  if (axes.empty() && !a.starts.empty()) {
    for (size_t i = 0; i < a.starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  } else if (axes.size() != a.starts.size()) {
    fail("axes has ", axes.size(), " values but starts has ", a.starts.size());
  }
  if (!a.steps.empty() && a.steps.size() != a.starts.size())
    fail("steps has ", a.steps.size(), " values but starts has ", a.starts.size());
  for (int64_t s : a.steps)
    if (s == 0) fail("slice step cannot be 0");
  return normalize_axes(axes, rank);
}

std::vector<AxisSlice> plan_slice(const Dims& dims, const SliceArgs& a) {
  std::vector<AxisSlice> plan(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) plan[i].len = dims[i];
  std::vector<int64_t> axes = slice_axes(a, static_cast<int64_t>(dims.size()));
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t ax = static_cast<size_t>(axes[k]);
    plan[ax] = axis_slice_of(dims[ax], a.starts[k], a.ends[k], a.steps.empty() ? 1 : a.steps[k]);
  }
  return plan;
}

void run_slice(KernelContext& ctx, const SliceArgs& a) {
  const Tensor& x = ctx.input(0);
  const Dims& dims = x.dims();
  std::vector<AxisSlice> plan = plan_slice(dims, a);
  const Dims in_strides = strides_of(dims);
  Dims out(dims.size()), strides(dims.size());
  int64_t base = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    out[i] = plan[i].len;
    strides[i] = plan[i].len > 1 ? in_strides[i] * plan[i].step : 0;  // |step| < d here: no overflow
    if (plan[i].len > 0) base += plan[i].start * in_strides[i];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  gather_strided(x, y, out, strides, base);
}

std::vector<int64_t> read_index_input(const Tensor& t, const char* what) { return read_int_list(t, what); }

// The output shape with symbolic dims: a sliced symbolic dim stays when the slice takes it whole.
Shape infer_slice_shape(const Shape& in, const SliceArgs& a) {
  Shape out = in;
  std::vector<int64_t> axes = slice_axes(a, static_cast<int64_t>(in.dims.size()));
  for (size_t k = 0; k < axes.size(); ++k) {
    Dim& d = out.dims[static_cast<size_t>(axes[k])];
    const int64_t step = a.steps.empty() ? 1 : a.steps[k];
    if (d.value) {
      d = known_dim(axis_slice_of(*d.value, a.starts[k], a.ends[k], step).len);
    } else if (!(step == 1 && a.starts[k] == 0 && a.ends[k] >= (int64_t{1} << 31) - 1)) {
      d = Dim{};
    }
  }
  return out;
}

// Dim values of the output when input 0 is a 1-D list of dims (from Shape...) and the arguments are known.
void slice_dim_values(InferContext& ctx, const SliceArgs& a) {
  if (!ctx.has_input_dim_values(0)) return;
  auto data = ctx.input_as_dims(0);
  if (!data) return;
  std::vector<AxisSlice> plan;
  try {
    plan = plan_slice({static_cast<int64_t>(data->size())}, a);
  } catch (const Error&) {
    return;  // the run reports it
  }
  std::vector<Dim> out;
  for (int64_t k = 0, i = plan[0].start; k < plan[0].len; ++k, i += plan[0].step) out.push_back((*data)[static_cast<size_t>(i)]);
  ctx.set_output_dim_values(0, std::move(out));
}

void add_slice(Registry& r) {
  // Slice-1: attributes.
  {
    auto args_of = [](const AttributeView& at) {
      SliceArgs a;
      a.starts = at.get_ints("starts");
      a.ends = at.get_ints("ends");
      a.axes = at.get_ints("axes", std::vector<int64_t>{});
      return a;
    };
    auto infer = [args_of](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      SliceArgs a = args_of(ctx.attrs);
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        ctx.set_output(0, Type::tensor(t.elem));
        return;
      }
      ctx.set_output(0, Type::tensor(t.elem, infer_slice_shape(t.shape, a)));
      if (t.shape.dims.size() == 1) slice_dim_values(ctx, a);
    };
    auto kernel = [args_of](const KernelInit& init) {
      SliceArgs a = args_of(init.attrs);
      return make_kernel([a](KernelContext& ctx) { run_slice(ctx, a); });
    };
    add_versions(r, "", "Slice", {1}, {{{0}, all_tensor_types(1)}}, infer, kernel);
  }
  // Slice-10+: inputs.
  for (int v : {10, 11, 13}) {
    auto infer = [](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        ctx.set_output(0, Type::tensor(t.elem));
        return;
      }
      const Tensor *s = ctx.input_value(1), *e = ctx.input_value(2);
      const Tensor* ax = ctx.has_input(3) ? ctx.input_value(3) : nullptr;
      const Tensor* st = ctx.has_input(4) ? ctx.input_value(4) : nullptr;
      const bool axes_known = !ctx.has_input(3) || ax;
      if (s && e && axes_known && (!ctx.has_input(4) || st)) {
        SliceArgs a;
        a.starts = read_index_input(*s, "starts");
        a.ends = read_index_input(*e, "ends");
        if (ax) a.axes = read_index_input(*ax, "axes");
        if (st) a.steps = read_index_input(*st, "steps");
        ctx.set_output(0, Type::tensor(t.elem, infer_slice_shape(t.shape, a)));
        if (t.shape.dims.size() == 1) slice_dim_values(ctx, a);
        return;
      }
      // Arguments computed from shapes (static dim values), e.g. Shape(y)[-1:] as an end.
      auto s_v = static_input_ints(ctx, 1), e_v = static_input_ints(ctx, 2);
      std::optional<std::vector<int64_t>> ax_v, st_v;
      if (ctx.has_input(3)) ax_v = static_input_ints(ctx, 3);
      if (ctx.has_input(4)) st_v = static_input_ints(ctx, 4);
      if (s_v && e_v && (!ctx.has_input(3) || ax_v) && (!ctx.has_input(4) || st_v)) {
        SliceArgs a{*s_v, *e_v, ax_v.value_or(std::vector<int64_t>{}), st_v.value_or(std::vector<int64_t>{})};
        ctx.set_output(0, Type::tensor(t.elem, infer_slice_shape(t.shape, a)));
        if (t.shape.dims.size() == 1) slice_dim_values(ctx, a);
        return;
      }
      // Values unknown: the dims of the sliced axes are unknown, the others stay when the axes are known.
      Shape out = t.shape;
      const int64_t rank = static_cast<int64_t>(out.dims.size());
      if (ax) {
        for (int64_t a : normalize_axes(read_index_input(*ax, "axes"), rank)) out.dims[static_cast<size_t>(a)] = Dim{};
      } else {
        const Type& stt = ctx.input_type(1);
        std::optional<int64_t> n;
        if (!ctx.has_input(3) && stt.kind == Type::Kind::Tensor && stt.shape.rank_known && stt.shape.dims.size() == 1)
          n = stt.shape.dims[0].value;
        for (int64_t i = 0; i < rank; ++i)
          if (!n || i < *n) out.dims[static_cast<size_t>(i)] = Dim{};
      }
      ctx.set_output(0, Type::tensor(t.elem, out));
    };
    auto kernel = [](const KernelInit&) {
      return make_kernel([](KernelContext& ctx) {
        SliceArgs a;
        a.starts = read_index_input(ctx.input(1), "starts");
        a.ends = read_index_input(ctx.input(2), "ends");
        if (ctx.has_input(3)) a.axes = read_index_input(ctx.input(3), "axes");
        if (ctx.has_input(4)) a.steps = read_index_input(ctx.input(4), "steps");
        for (size_t i = 1; i < 5 && i < ctx.num_inputs(); ++i)
          if (ctx.has_input(i) && ctx.input(i).dtype() != ctx.input(1).dtype())
            ctx.error(cat("input ", i, " has element type ", ctx.input(i).dtype(), ", starts has ", ctx.input(1).dtype()));
        run_slice(ctx, a);
      });
    };
    add_versions(r, "", "Slice", {v}, {{{0}, all_tensor_types(v)}, {{1, 2, 3, 4}, {D::Int32, D::Int64}}}, infer, kernel);
  }
}

}  // namespace

void register_slice(Registry& r) {
  add_slice(r);
  r.set_gradient("", "Slice", grad::element_moves);
}

}  // namespace onyx::ops
