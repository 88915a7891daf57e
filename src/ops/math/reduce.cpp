// ai.onnx ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
// ReduceLogSumExp, ReduceSumSquare.
// Versions: ReduceSum 1, 11, 13; ReduceMax/ReduceMin 1, 11, 12, 13, 18, 20; the others 1, 11, 13, 18.
//  v1:  `axes` attribute (absent: reduce over all axes), `keepdims` (default 1).
//  v11: negative axes allowed ([-r, r-1]); onyx accepts them in v1 too (it never changes a valid v1 model).
//  v12: ReduceMax/ReduceMin add int8 and uint8.
//  v13: bfloat16; ReduceSum-13 takes `axes` as an optional int64 input and adds `noop_with_empty_axes`.
//  v18: the other ops take `axes` as an input too, with `noop_with_empty_axes`.
//  v20: ReduceMax/ReduceMin accept bool (false < true).
// With `axes` an input that is absent or empty: reduce over all axes, or with noop_with_empty_axes=1 reduce over
// no axis, i.e. every output element is the op applied to one input element (ReduceSumSquare gives x*x,
// ReduceL1 |x|, ReduceLogSum log x, the others x).
// Empty reduction sets give the identity of the reduction: Sum/SumSquare/L1/L2 0, Prod 1, Max -inf (lowest
// integer, false), Min +inf (highest integer, true), LogSum and LogSumExp -inf; Mean is 0/0 (NaN, 0 for integers).
// Arithmetic: float types (float16, bfloat16, float, double) accumulate in double. Integers accumulate exactly in
// their own type with wrap-around (Sum, Mean, Prod, L1, SumSquare, Max, Min; Mean divides the wrapped sum,
// truncating); L2, LogSum and LogSumExp of integers are computed in double and converted back with saturation
// (NaN gives 0). Max/Min propagate NaN.
// float32 inputs of every op but ReduceProd run through the vectorized kernels (kernels/reduce.hpp): float partial
// sums added up in double, within the error bound stated there.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernels/reduce.hpp"
#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

enum class RK { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// Which axes to reduce, resolved against the input's rank.
struct AxesSpec {
  bool all = false;              // reduce over every axis
  std::vector<bool> reduced;     // per input axis (when !all)
};

// Turns an axes list into per-axis flags; duplicates and out-of-range axes are errors.
std::vector<bool> axis_flags(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> flags(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, "axes value");
    if (flags[n]) fail("axes contains axis ", a, " more than once");
    flags[n] = true;
  }
  return flags;
}

AxesSpec resolve_reduce_axes(const std::optional<std::vector<int64_t>>& axes, bool noop_with_empty, int64_t rank) {
  AxesSpec s;
  if (!axes || axes->empty()) {
    if (noop_with_empty) {
      s.reduced.assign(static_cast<size_t>(rank), false);
    } else {
      s.all = true;
      s.reduced.assign(static_cast<size_t>(rank), true);
    }
    return s;
  }
  s.reduced = axis_flags(*axes, rank);
  return s;
}

// How an op's node reads its axes: attribute (old versions) or input 1 (ReduceSum-13, the others from 18).
struct ReduceConfig {
  RK kind;
  bool axes_input = false;
  bool keepdims = true;
  bool noop_with_empty = false;
  bool fast = true;  // float32 through kernels::reduce (false: the reference kernel only)
  std::optional<std::vector<int64_t>> attr_axes;  // attribute versions
};

ReduceConfig read_config(RK kind, bool axes_input, const AttributeView& attrs) {
  ReduceConfig c;
  c.kind = kind;
  c.axes_input = axes_input;
  c.keepdims = attrs.get_int("keepdims", 1) != 0;
  if (axes_input) {
    c.noop_with_empty = attrs.get_int("noop_with_empty_axes", 0) != 0;
  } else if (attrs.has("axes")) {
    c.attr_axes = attrs.get_ints("axes");
  }
  return c;
}

// ---- element conversions ----

// Wrapping integer arithmetic (no signed-overflow UB; small types multiply in unsigned int).
template <class T>
T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<wide_unsigned_t<T>>(a) + static_cast<wide_unsigned_t<T>>(b));
}
template <class T>
T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<wide_unsigned_t<T>>(a) * static_cast<wide_unsigned_t<T>>(b));
}
template <class T>
T wrap_abs(T a) {
  if constexpr (std::is_signed_v<T>) {
    if (a < 0) return static_cast<T>(wide_unsigned_t<T>{0} - static_cast<wide_unsigned_t<T>>(a));
  }
  return a;
}

// ---- the reduction walk ----

// For every input element (row-major) calls f(input_index, output_index); the output index counts the kept axes.
template <class F>
void walk(const Dims& in, const std::vector<bool>& reduced, F&& f) {
  const size_t rank = in.size();
  // Output stride of each input axis (0 for reduced axes).
  Dims ostride(rank, 0);
  int64_t acc = 1;
  for (size_t k = rank; k-- > 0;) {
    if (reduced[k]) continue;
    ostride[k] = acc;
    acc *= in[k];
  }
  const int64_t total = product(in);
  if (total == 0) return;
  std::vector<int64_t> idx(rank, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(i, o);
    for (size_t k = rank; k-- > 0;) {
      ++idx[k];
      o += ostride[k];
      if (idx[k] < in[k]) break;
      o -= ostride[k] * in[k];
      idx[k] = 0;
    }
  }
}

bool is_nan_d(double d) { return std::isnan(d); }

// Double accumulation (float types; L2/LogSum/LogSumExp of integers).
template <class T>
void reduce_in_double(RK kind, const T* x, const Dims& in, const std::vector<bool>& reduced, int64_t out_count,
                      int64_t group, T* y) {
  const double inf = std::numeric_limits<double>::infinity();
  double init = 0;
  if (kind == RK::Prod) init = 1;
  if (kind == RK::Max) init = -inf;
  if (kind == RK::Min) init = inf;
  std::vector<double> acc(static_cast<size_t>(out_count), init);
  std::vector<double> mx;
  if (kind == RK::LogSumExp) {
    mx.assign(static_cast<size_t>(out_count), -inf);
    walk(in, reduced, [&](int64_t i, int64_t o) {
      double v = to_double(x[i]);
      if (is_nan_d(v) || (!is_nan_d(mx[o]) && v > mx[o])) mx[o] = v;
    });
  }
  walk(in, reduced, [&](int64_t i, int64_t o) {
    double v = to_double(x[i]);
    double& a = acc[o];
    switch (kind) {
      case RK::Sum:
      case RK::Mean:
      case RK::LogSum: a += v; break;
      case RK::L1: a += std::fabs(v); break;
      case RK::L2:
      case RK::SumSquare: a += v * v; break;
      case RK::Prod: a *= v; break;
      case RK::Max:
        if (is_nan_d(v) || (!is_nan_d(a) && v > a)) a = v;
        break;
      case RK::Min:
        if (is_nan_d(v) || (!is_nan_d(a) && v < a)) a = v;
        break;
      case RK::LogSumExp:
        if (std::isfinite(mx[o])) a += std::exp(v - mx[o]);
        break;
    }
  });
  for (int64_t o = 0; o < out_count; ++o) {
    double a = acc[o];
    double r = a;
    switch (kind) {
      case RK::Mean: r = a / static_cast<double>(group); break;
      case RK::L2: r = std::sqrt(a); break;
      case RK::LogSum: r = std::log(a); break;
      case RK::LogSumExp:
        // An infinite or NaN maximum decides the result (empty set: -inf).
        r = std::isfinite(mx[o]) ? mx[o] + std::log(a) : mx[o];
        break;
      default: break;
    }
    y[o] = from_double<T>(r);
  }
}

// Exact integer (and bool) accumulation with wrap-around.
template <class T>
void reduce_exact(RK kind, const T* x, const Dims& in, const std::vector<bool>& reduced, int64_t out_count,
                  int64_t group, T* y) {
  T init{0};
  if (kind == RK::Prod) init = T{1};
  if (kind == RK::Max) init = std::numeric_limits<T>::lowest();
  if (kind == RK::Min) init = std::numeric_limits<T>::max();
  std::fill(y, y + out_count, init);
  walk(in, reduced, [&](int64_t i, int64_t o) {
    T v = x[i];
    T& a = y[o];
    if constexpr (std::is_same_v<T, bool>) {
      if (kind == RK::Max) a = a || v;
      else a = a && v;  // Min (the only other op bool reaches)
    } else {
      switch (kind) {
        case RK::Sum:
        case RK::Mean: a = wrap_add(a, v); break;
        case RK::L1: a = wrap_add(a, wrap_abs(v)); break;
        case RK::SumSquare: a = wrap_add(a, wrap_mul(v, v)); break;
        case RK::Prod: a = wrap_mul(a, v); break;
        case RK::Max: a = std::max(a, v); break;
        case RK::Min: a = std::min(a, v); break;
        default: break;
      }
    }
  });
  if constexpr (!std::is_same_v<T, bool>) {
    if (kind == RK::Mean) {
      for (int64_t o = 0; o < out_count; ++o) {
        if (group == 0) {
          y[o] = T{0};
        } else if constexpr (std::is_signed_v<T>) {
          y[o] = static_cast<T>(static_cast<int64_t>(y[o]) / group);
        } else {
          y[o] = static_cast<T>(static_cast<uint64_t>(y[o]) / static_cast<uint64_t>(group));
        }
      }
    }
  }
}

// The vectorized kernel's name for the op; false for ReduceProd (a float product over- and underflows where the
// reference's double does not).
bool fast_reduction(RK kind, kernels::Reduction& r) {
  switch (kind) {
    case RK::Sum: r = kernels::Reduction::Sum; return true;
    case RK::Mean: r = kernels::Reduction::Mean; return true;
    case RK::Max: r = kernels::Reduction::Max; return true;
    case RK::Min: r = kernels::Reduction::Min; return true;
    case RK::L1: r = kernels::Reduction::L1; return true;
    case RK::L2: r = kernels::Reduction::L2; return true;
    case RK::LogSum: r = kernels::Reduction::LogSum; return true;
    case RK::LogSumExp: r = kernels::Reduction::LogSumExp; return true;
    case RK::SumSquare: r = kernels::Reduction::SumSquare; return true;
    case RK::Prod: return false;
  }
  return false;
}

void run_reduce(const ReduceConfig& cfg, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  std::optional<std::vector<int64_t>> axes = cfg.attr_axes;
  if (cfg.axes_input && ctx.has_input(1)) {
    const Tensor& a = ctx.input(1);
    if (a.dims().size() > 1) ctx.error(cat("axes must be a 1-D tensor, got rank ", a.dims().size()));
    axes = read_ints(a);
  }
  AxesSpec spec = resolve_reduce_axes(axes, cfg.axes_input && cfg.noop_with_empty, rank);
  Dims out_dims;
  int64_t group = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (spec.reduced[k]) {
      group *= x.dims()[k];
      if (cfg.keepdims) out_dims.push_back(1);
    } else {
      out_dims.push_back(x.dims()[k]);
    }
  }
  const int64_t out_count = product(out_dims);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_dims);
  kernels::Reduction fast_kind;
  if (cfg.fast && x.dtype() == DataType::Float && fast_reduction(cfg.kind, fast_kind)) {
    kernels::reduce(fast_kind, x.data<float>(), x.dims(), spec.reduced, y.mutable_data<float>());
    return;
  }
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_like_v<T>) {
      reduce_in_double<T>(cfg.kind, x.data<T>(), x.dims(), spec.reduced, out_count, group, y.mutable_data<T>());
    } else if constexpr (std::is_same_v<T, bool>) {
      if (cfg.kind != RK::Max && cfg.kind != RK::Min) ctx.error("bool input is only supported by ReduceMax and ReduceMin");
      reduce_exact<T>(cfg.kind, x.data<T>(), x.dims(), spec.reduced, out_count, group, y.mutable_data<T>());
    } else if constexpr (std::is_integral_v<T>) {
      if (cfg.kind == RK::L2 || cfg.kind == RK::LogSum || cfg.kind == RK::LogSumExp)
        reduce_in_double<T>(cfg.kind, x.data<T>(), x.dims(), spec.reduced, out_count, group, y.mutable_data<T>());
      else
        reduce_exact<T>(cfg.kind, x.data<T>(), x.dims(), spec.reduced, out_count, group, y.mutable_data<T>());
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

void infer_reduce(const ReduceConfig& cfg, InferContext& ctx) {
  const Type& in = ctx.input_type(0);
  DataType dt = in.elem;
  std::optional<std::vector<int64_t>> axes = cfg.attr_axes;
  bool axes_known = true;
  if (cfg.axes_input && ctx.has_input(1)) {
    if (const Tensor* a = ctx.input_value(1)) {
      if (a->dims().size() > 1) ctx.error(cat("axes must be a 1-D tensor, got rank ", a->dims().size()));
      axes = read_ints(*a);
    } else {
      axes_known = false;
    }
  }
  if (!in.shape.rank_known) {
    // Reducing everything without keepdims gives a scalar whatever the rank.
    bool all = axes_known && (!axes || axes->empty()) && !(cfg.axes_input && cfg.noop_with_empty);
    ctx.set_output(0, Type::tensor(dt, all && !cfg.keepdims ? shape_of({}) : Shape{}));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in.shape.dims.size());
  Shape out;
  out.rank_known = true;
  if (!axes_known) {
    // Which axes are reduced is data; with keepdims the rank stays and dims of 1 stay 1.
    if (!cfg.keepdims) {
      // The rank is known when the axes' length is (and non-zero: an empty list could mean "all" or "none").
      const Type& at = ctx.input_type(1);
      auto ad = static_dims(at);
      if (ad && ad->size() == 1 && (*ad)[0] > 0 && (*ad)[0] <= rank) {
        out.dims.resize(static_cast<size_t>(rank - (*ad)[0]));
        ctx.set_output(0, Type::tensor(dt, out));
      } else {
        ctx.set_output(0, Type::tensor(dt, Shape{}));
      }
      return;
    }
    for (const Dim& d : in.shape.dims) out.dims.push_back(d.value && *d.value == 1 ? d : Dim{});
    ctx.set_output(0, Type::tensor(dt, out));
    return;
  }
  AxesSpec spec = resolve_reduce_axes(axes, cfg.axes_input && cfg.noop_with_empty, rank);
  for (int64_t k = 0; k < rank; ++k) {
    if (!spec.reduced[k]) out.dims.push_back(in.shape.dims[k]);
    else if (cfg.keepdims) out.dims.push_back(known_dim(1));
  }
  ctx.set_output(0, Type::tensor(dt, out));
}

void add_reduce(Registry& r, const char* name, RK kind, int version, const std::vector<DataType>& types, bool axes_input) {
  std::vector<TypeConstraint> tc = {{{0}, types}};
  if (axes_input) tc.push_back({{1}, {DataType::Int64}});
  auto infer = [kind, axes_input](InferContext& ctx) { infer_reduce(read_config(kind, axes_input, ctx.attrs), ctx); };
  auto kernel = [kind, axes_input](const KernelInit& init) {
    ReduceConfig cfg = read_config(kind, axes_input, init.attrs);
    cfg.fast = !init.reference_only;
    return make_kernel([cfg](KernelContext& ctx) { run_reduce(cfg, ctx); });
  };
  r.add(OpDef{"", name, version, tc, infer, kernel});
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

// The reduced axes of a Reduce* node (attribute or, from the version that moved it, input 1); empty: all axes,
// unless noop_with_empty_axes (then nothing is reduced).
std::optional<std::vector<int64_t>> reduced_axes(const grad::Args& a, int axes_input_since) {
  const int64_t rank = static_cast<int64_t>(a.in_dims(0).size());
  std::vector<int64_t> axes;
  if (a.opset >= axes_input_since) {
    if (a.in.size() > 1 && a.in[1]) axes = read_ints(*a.in[1]);
  } else {
    axes = a.attrs.get_ints("axes", std::vector<int64_t>{});
  }
  if (axes.empty()) {
    if (a.opset >= axes_input_since && a.attrs.get_int("noop_with_empty_axes", 0)) return std::nullopt;
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& ax : axes) ax = normalize_axis(ax, rank, "axes");
  return axes;
}

// dy spread back over x's dims (dy itself for a no-op reduce); *count_out: elements reduced into each output.
grad::Grad spread(const grad::Args& a, int axes_input_since, double* count_out) {
  const Dims& xd = a.in_dims(0);
  grad::Grad g = a.dy();
  auto axes = reduced_axes(a, axes_input_since);
  if (!axes) {
    *count_out = 1;
    g.dims = xd;
    return g;
  }
  Dims kept = xd;
  for (int64_t ax : *axes) kept[static_cast<size_t>(ax)] = 1;
  *count_out = static_cast<double>(product(xd)) / static_cast<double>(std::max<int64_t>(product(kept), 1));
  g.dims = kept;  // keepdims=0 dropped the reduced axes; the elements are the same
  return grad::broadcast_to(g, xd);
}

void rule_reduce_sum(grad::Args& a) {
  double count = 0;
  a.set(0, spread(a, 13, &count));
}

void rule_reduce_mean(grad::Args& a) {
  double count = 0;
  grad::Grad g = spread(a, 18, &count);
  for (double& v : g.v) v /= count;
  a.set(0, std::move(g));
}

void rule_reduce_sum_square(grad::Args& a) {
  double count = 0;
  grad::Grad g = spread(a, 18, &count);
  const std::vector<double> x = a.x(0);
  for (size_t i = 0; i < g.v.size(); ++i) g.v[i] *= 2 * x[i];
  a.set(0, std::move(g));
}

}  // namespace

void register_reduce(Registry& r) {
  using D = DataType;
  const std::vector<DataType> base = {D::Float16, D::Float, D::Double, D::Int32, D::Int64, D::UInt32, D::UInt64};
  std::vector<DataType> base13 = base;
  base13.push_back(D::BFloat16);
  std::vector<DataType> mm12 = base;
  mm12.push_back(D::Int8);
  mm12.push_back(D::UInt8);
  std::vector<DataType> mm13 = mm12;
  mm13.push_back(D::BFloat16);
  std::vector<DataType> mm20 = mm13;
  mm20.push_back(D::Bool);

  add_reduce(r, "ReduceSum", RK::Sum, 1, base, false);
  add_reduce(r, "ReduceSum", RK::Sum, 11, base, false);
  add_reduce(r, "ReduceSum", RK::Sum, 13, base13, true);

  const std::pair<const char*, RK> others[] = {
      {"ReduceMean", RK::Mean}, {"ReduceProd", RK::Prod},     {"ReduceL1", RK::L1},
      {"ReduceL2", RK::L2},     {"ReduceLogSum", RK::LogSum}, {"ReduceLogSumExp", RK::LogSumExp},
      {"ReduceSumSquare", RK::SumSquare}};
  for (const auto& [name, kind] : others) {
    add_reduce(r, name, kind, 1, base, false);
    add_reduce(r, name, kind, 11, base, false);
    add_reduce(r, name, kind, 13, base13, false);
    add_reduce(r, name, kind, 18, base13, true);
  }

  for (const auto& [name, kind] : {std::pair<const char*, RK>{"ReduceMax", RK::Max}, {"ReduceMin", RK::Min}}) {
    add_reduce(r, name, kind, 1, base, false);
    add_reduce(r, name, kind, 11, base, false);
    add_reduce(r, name, kind, 12, mm12, false);
    add_reduce(r, name, kind, 13, mm13, false);
    add_reduce(r, name, kind, 18, mm13, true);
    add_reduce(r, name, kind, 20, mm20, true);
  }
  r.set_gradient("", "ReduceSum", rule_reduce_sum);
  r.set_gradient("", "ReduceMean", rule_reduce_mean);
  r.set_gradient("", "ReduceSumSquare", rule_reduce_sum_square);
  r.set_fast_kernels("", "ReduceSum", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "ReduceMean", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "ReduceMax", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "ReduceMin", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "ReduceL1", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "ReduceL2", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "ReduceLogSum", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "ReduceLogSumExp", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "ReduceSumSquare", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
}

}  // namespace onyx::ops
