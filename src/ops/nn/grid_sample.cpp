// ai.onnx GridSample — versions 16, 20, 22 — and AffineGrid — version 20.
// GridSample-16: 4-D input [N,C,H,W], grid [N,Ho,Wo,2] of normalized (x, y) in [-1, 1]; mode bilinear|nearest|
//   bicubic; padding_mode zeros|border|reflection; align_corners (extrema are pixel centers vs. pixel edges).
// GridSample-20: any spatial rank (grid [N, D1..Dk, k], coordinates in reverse dim order); modes renamed
//   linear|nearest|cubic. GridSample-22: bfloat16 for the input and the grid.
// Semantics follow the ONNX reference (PyTorch's grid_sampler): a coordinate outside the border range is clamped
// (border) or reflected (reflection) first; then each tap outside the input reads 0 (zeros), the clamped pixel
// (border) or the reflected pixel (reflection). Nearest rounds half to even in every rank (the conformance data
// for 3-D expects it too).
// Cubic uses Keys' kernel with A = -0.75 on a 4-tap neighbourhood per axis. Computation is in double.
// AffineGrid-20: theta [N,2,3] (2-D) or [N,3,4] (3-D) applied to the normalized base grid of `size`
//   ([N,C,H,W] or [N,C,D,H,W]); output [N,H,W,2] or [N,D,H,W,3] with (x, y[, z]) order.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

enum class SampleMode { Linear, Nearest, Cubic };
enum class Padding { Zeros, Border, Reflection };

struct GsParams {
  SampleMode mode = SampleMode::Linear;
  Padding padding = Padding::Zeros;
  bool align_corners = false;
  int version = 16;
};

GsParams parse_gs(const AttributeView& a, int version) {
  GsParams p;
  p.version = version;
  std::string m = a.get_string("mode", version >= 20 ? "linear" : "bilinear");
  if (m == "nearest") p.mode = SampleMode::Nearest;
  else if (m == (version >= 20 ? "linear" : "bilinear")) p.mode = SampleMode::Linear;
  else if (m == (version >= 20 ? "cubic" : "bicubic")) p.mode = SampleMode::Cubic;
  else fail("mode '", m, "' is not supported in GridSample-", version);
  std::string pad = a.get_string("padding_mode", "zeros");
  if (pad == "zeros") p.padding = Padding::Zeros;
  else if (pad == "border") p.padding = Padding::Border;
  else if (pad == "reflection") p.padding = Padding::Reflection;
  else fail("padding_mode '", pad, "' is not supported");
  p.align_corners = a.get_int("align_corners", 0) != 0;
  return p;
}

// Reflects x by the nearer border until it lies in [lo, hi].
double reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (!(rng > 0)) return lo;
  if (x < lo) {
    double dx = lo - x, n = std::floor(dx / rng), r = dx - n * rng;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi, n = std::floor(dx / rng), r = dx - n * rng;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

double cubic_coeff(double x) {  // Keys kernel, A = -0.75
  const double a = -0.75;
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

struct Tap1 {
  int64_t index;  // -1: reads zero
  double w;
};

// Taps of one spatial axis of length L for the (normalized) grid coordinate g.
void grid_axis_taps(const GsParams& p, double g, int64_t L, std::vector<Tap1>& taps) {
  taps.clear();
  const double Lf = static_cast<double>(L);
  double x = p.align_corners ? (g + 1) / 2 * (Lf - 1) : ((g + 1) * Lf - 1) / 2;
  const double lo = p.align_corners ? 0.0 : -0.5;
  const double hi = p.align_corners ? Lf - 1 : Lf - 0.5;
  if (p.mode == SampleMode::Nearest) x = std::nearbyint(x);  // half to even (what the conformance data expects)
  if (x < lo || x > hi) {
    if (p.padding == Padding::Border) x = std::clamp(x, 0.0, Lf - 1);
    else if (p.padding == Padding::Reflection) x = reflect(x, lo, hi);
  }
  if (!std::isfinite(x) || std::abs(x) > 1e15) {  // NaN or far outside: nothing to read
    taps.push_back({-1, 1.0});
    return;
  }
  auto map = [&](int64_t i) -> int64_t {
    switch (p.padding) {
      case Padding::Zeros: return (i >= 0 && i < L) ? i : -1;
      case Padding::Border: return std::clamp<int64_t>(i, 0, L - 1);
      case Padding::Reflection: return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi)), 0, L - 1);
    }
    return -1;
  };
  if (p.mode == SampleMode::Nearest) {
    taps.push_back({map(static_cast<int64_t>(x)), 1.0});
    return;
  }
  const double fl = std::floor(x);
  const int64_t x0 = static_cast<int64_t>(fl);
  const double t = x - fl;
  if (p.mode == SampleMode::Linear) {
    taps.push_back({map(x0), 1 - t});
    taps.push_back({map(x0 + 1), t});
    return;
  }
  for (int k = -1; k <= 2; ++k) taps.push_back({map(x0 + k), cubic_coeff(t - k)});
}

void run_grid_sample(const GsParams& p, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  const Dims& xd = x.dims();
  const Dims& gd = grid.dims();
  if (xd.size() < 3) ctx.error(cat("X must have rank >= 3, got ", shape_of(xd).to_string()));
  const size_t nd = xd.size() - 2;
  if (p.version < 20 && nd != 2) ctx.error(cat("GridSample-", p.version, " supports 4-D input only, got rank ", xd.size()));
  if (gd.size() != nd + 2 || gd[0] != xd[0] || gd.back() != static_cast<int64_t>(nd))
    ctx.error(cat("grid shape ", shape_of(gd).to_string(), " does not match X shape ", shape_of(xd).to_string()));
  const int64_t N = xd[0], C = xd[1];
  Dims out = {N, C};
  for (size_t i = 0; i < nd; ++i) out.push_back(gd[1 + i]);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  const int64_t out_sp = product(gd, 1, 1 + nd);
  const int64_t in_sp = product(xd, 2);
  if (product(out) == 0) return;
  if (in_sp == 0) ctx.error("X has an empty spatial extent");
  std::vector<double> gv = read_doubles(grid);
  Dims sp_strides = strides_of(Dims(xd.begin() + 2, xd.end()));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!(std::is_arithmetic_v<T> || is_small_float_v<T>)) {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    } else {
      std::vector<double> xv = read_doubles(x);
      T* py = y.mutable_data<T>();
      std::vector<std::vector<Tap1>> taps(nd);
      std::vector<std::pair<int64_t, double>> flat, next;
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t o = 0; o < out_sp; ++o) {
          const double* g = &gv[static_cast<size_t>((n * out_sp + o) * static_cast<int64_t>(nd))];
          for (size_t i = 0; i < nd; ++i) grid_axis_taps(p, g[nd - 1 - i], xd[2 + i], taps[i]);
          flat.assign(1, {0, 1.0});
          for (size_t i = 0; i < nd; ++i) {
            next.clear();
            for (auto& [off, w] : flat)
              for (const Tap1& t : taps[i]) {
                if (t.index < 0) continue;  // reads zero
                next.push_back({off + t.index * sp_strides[i], w * t.w});
              }
            flat.swap(next);
          }
          for (int64_t c = 0; c < C; ++c) {
            const double* plane = &xv[static_cast<size_t>((n * C + c) * in_sp)];
            double s = 0;
            for (auto& [off, w] : flat) s += w * plane[off];
            py[(n * C + c) * out_sp + o] = from_double<T>(s);
          }
        }
      }
    }
  });
}

void infer_grid_sample(InferContext& ctx, int version) {
  if (!ctx.has_input(0)) return;
  const Type& xt = ctx.input_type(0);
  Type out = Type::tensor(xt.elem);
  if (ctx.has_input(1)) {
    const Type& gt = ctx.input_type(1);
    if (gt.shape.rank_known && xt.shape.rank_known) {
      if (gt.shape.dims.size() != xt.shape.dims.size()) ctx.error("grid and X must have the same rank");
      // N, C and at least one spatial dim (a rank below 3 read past the dims; found by fuzz_run).
      if (xt.shape.dims.size() < 3) ctx.error(cat("X has rank ", xt.shape.dims.size(), ", expected 3 or more"));
      if (version < 20 && xt.shape.dims.size() != 4) ctx.error(cat("GridSample-", version, " supports 4-D input only"));
      out.shape.rank_known = true;
      out.shape.dims.push_back(xt.shape.dims[0].value ? xt.shape.dims[0] : gt.shape.dims[0]);
      out.shape.dims.push_back(xt.shape.dims[1]);
      for (size_t i = 1; i + 1 < gt.shape.dims.size(); ++i) out.shape.dims.push_back(gt.shape.dims[i]);
    }
  }
  ctx.set_output(0, out);
}

// AffineGrid

double base_coord(int64_t i, int64_t L, bool align_corners) {
  if (align_corners) return L == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(L - 1);
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(L);
}

void run_affine_grid(bool align_corners, KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  std::vector<int64_t> size = read_ints(ctx.input(1));
  if (size.size() != 4 && size.size() != 5) ctx.error(cat("size must have 4 or 5 values, got ", size.size()));
  for (int64_t s : size)
    if (s < 0) ctx.error(cat("size values must not be negative, got ", s));
  const bool is3d = size.size() == 5;
  const int64_t nd = is3d ? 3 : 2;
  const Dims& td = theta.dims();
  if (td.size() != 3 || td[0] != size[0] || td[1] != nd || td[2] != nd + 1)
    ctx.error(cat("theta shape ", shape_of(td).to_string(), " does not match size (expected [", size[0], ",", nd, ",", nd + 1, "])"));
  const int64_t N = size[0];
  const int64_t Dd = is3d ? size[2] : 1, H = size[is3d ? 3 : 2], W = size[is3d ? 4 : 3];
  Dims out = is3d ? Dims{N, Dd, H, W, 3} : Dims{N, H, W, 2};
  Tensor& y = ctx.allocate_output(0, theta.dtype(), out);
  if (product(out) == 0) return;
  std::vector<double> th = read_doubles(theta);
  visit_dtype(theta.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!(std::is_floating_point_v<T> || is_small_float_v<T>)) {
      ctx.error(cat("element type ", theta.dtype(), " is not supported"));
    } else {
      T* py = y.mutable_data<T>();
      int64_t k = 0;
      for (int64_t n = 0; n < N; ++n) {
        const double* t = &th[static_cast<size_t>(n * nd * (nd + 1))];
        for (int64_t d = 0; d < Dd; ++d) {
          double z = is3d ? base_coord(d, Dd, align_corners) : 0.0;
          for (int64_t h = 0; h < H; ++h) {
            double yy = base_coord(h, H, align_corners);
            for (int64_t w = 0; w < W; ++w) {
              double xx = base_coord(w, W, align_corners);
              for (int64_t r = 0; r < nd; ++r) {
                const double* row = t + r * (nd + 1);
                double v = is3d ? row[0] * xx + row[1] * yy + row[2] * z + row[3] : row[0] * xx + row[1] * yy + row[2];
                py[k++] = from_double<T>(v);
              }
            }
          }
        }
      }
    }
  });
}

void infer_affine_grid(InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  const Type& tt = ctx.input_type(0);
  Type out = Type::tensor(tt.elem);
  if (const Tensor* sv = ctx.input_value(1)) {
    std::vector<int64_t> size = read_ints(*sv);
    if (size.size() != 4 && size.size() != 5) ctx.error(cat("size must have 4 or 5 values, got ", size.size()));
    for (int64_t s : size)
      if (s < 0) ctx.error(cat("size values must not be negative, got ", s));
    out = size.size() == 4 ? tensor_type(tt.elem, {size[0], size[2], size[3], 2})
                           : tensor_type(tt.elem, {size[0], size[2], size[3], size[4], 3});
  } else if (ctx.has_input(1)) {
    auto sd = static_dims(ctx.input_type(1));
    if (sd && sd->size() == 1 && ((*sd)[0] == 4 || (*sd)[0] == 5)) {
      out.shape.rank_known = true;
      out.shape.dims.assign(static_cast<size_t>((*sd)[0]), Dim{});
      if (tt.shape.rank_known && !tt.shape.dims.empty()) out.shape.dims[0] = tt.shape.dims[0];
      out.shape.dims.back() = known_dim((*sd)[0] - 2);
    }
  }
  ctx.set_output(0, out);
}

}  // namespace

void register_grid_sample(Registry& r) {
  const std::vector<DataType> all = {D::Float, D::UInt8, D::Int8, D::UInt16, D::Int16, D::Int32, D::Int64, D::String,
                                     D::Bool, D::Float16, D::Double, D::UInt32, D::UInt64, D::Complex64, D::Complex128};
  std::vector<DataType> all22 = all;
  all22.push_back(D::BFloat16);
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  for (int v : {16, 20, 22}) {
    auto infer = [v](InferContext& ctx) {
      parse_gs(ctx.attrs, v);
      infer_grid_sample(ctx, v);
    };
    auto kernel = [v](const KernelInit& init) {
      GsParams p = parse_gs(init.attrs, v);
      return make_kernel([p](KernelContext& ctx) { run_grid_sample(p, ctx); });
    };
    r.add(OpDef{"", "GridSample", v, {{{0}, v >= 22 ? all22 : all}, {{1}, v >= 22 ? kFloatTypes : f}}, infer, kernel});
  }
  auto kernel = [](const KernelInit& init) {
    bool ac = init.attrs.get_int("align_corners", 0) != 0;
    return make_kernel([ac](KernelContext& ctx) { run_affine_grid(ac, ctx); });
  };
  r.add(OpDef{"", "AffineGrid", 20, {{{0}, kFloatTypes}, {{1}, {D::Int64}}}, infer_affine_grid, kernel});
}

}  // namespace onyx::ops
