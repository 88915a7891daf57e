// ai.onnx DeformConv — versions 19, 22.
// Deformable convolution (Dai et al.; with mask, v2): X [N,C,d1..dk], W [oC, C/group, k1..kk], offset
// [N, offset_group * K * k, o1..ok] (K = prod(kernel); for each offset group and kernel point, one offset per
// spatial axis in axis order), optional B [oC] and mask [N, offset_group * K, o1..ok]. Each kernel point samples X
// at (output position * stride - pad_begin + kernel index * dilation + offset) by multilinear interpolation, points
// outside the input reading 0, scales by the mask, and the samples are convolved with W (grouped). The reference
// handles 2-D; this implementation is N-D. Computation is in double. DeformConv-22 adds bfloat16.
#include <cmath>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

struct Attrs {
  Dims dilations, kernel, pads, strides;
  int64_t group = 1, offset_group = 1;
};

Attrs parse_deform(const AttributeView& a) {
  Attrs p;
  p.dilations = a.get_ints("dilations", Dims{});
  p.kernel = a.get_ints("kernel_shape", Dims{});
  p.pads = a.get_ints("pads", Dims{});
  p.strides = a.get_ints("strides", Dims{});
  p.group = a.get_int("group", 1);
  p.offset_group = a.get_int("offset_group", 1);
  if (p.group <= 0) fail("group must be positive");
  if (p.offset_group <= 0) fail("offset_group must be positive");
  return p;
}

// Fills defaults for `nd` spatial axes and validates.
Attrs resolved(Attrs p, size_t nd, const Dims* wdims) {
  if (p.kernel.empty() && wdims) p.kernel.assign(wdims->begin() + 2, wdims->end());
  if (p.dilations.empty()) p.dilations.assign(nd, 1);
  if (p.strides.empty()) p.strides.assign(nd, 1);
  if (p.pads.empty()) p.pads.assign(2 * nd, 0);
  if (p.kernel.size() != nd) fail("kernel_shape must have ", nd, " values");
  if (p.dilations.size() != nd || p.strides.size() != nd) fail("dilations and strides must have ", nd, " values");
  if (p.pads.size() != 2 * nd) fail("pads must have ", 2 * nd, " values");
  for (size_t i = 0; i < nd; ++i) {
    if (p.kernel[i] <= 0 || p.dilations[i] <= 0 || p.strides[i] <= 0) fail("kernel_shape, dilations and strides must be positive");
    if (p.pads[i] < 0 || p.pads[nd + i] < 0) fail("pads must not be negative");
  }
  return p;
}

int64_t out_dim(const Attrs& p, size_t i, int64_t in) {
  const size_t nd = p.kernel.size();
  int64_t span = (p.kernel[i] - 1) * p.dilations[i] + 1;
  int64_t v = in + p.pads[i] + p.pads[nd + i] - span;
  if (v < 0) fail("the kernel (extent ", span, ") does not fit the padded input (", in + p.pads[i] + p.pads[nd + i], ") on spatial axis ", i);
  return v / p.strides[i] + 1;
}

void run_deform(const Attrs& attrs, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& offset = ctx.input(2);
  const Dims& xd = x.dims();
  const Dims& wd = w.dims();
  if (xd.size() < 3) ctx.error(cat("X must have rank >= 3, got ", shape_of(xd).to_string()));
  const size_t nd = xd.size() - 2;
  if (wd.size() != xd.size()) ctx.error(cat("W rank ", wd.size(), " differs from X rank ", xd.size()));
  Attrs p = resolved(attrs, nd, &wd);
  for (size_t i = 0; i < nd; ++i)
    if (wd[2 + i] != p.kernel[i]) ctx.error("kernel_shape does not match W");
  const int64_t N = xd[0], C = xd[1], OC = wd[0], G = p.group, OG = p.offset_group;
  if (wd[1] * G != C || OC % G != 0)
    ctx.error(cat("W shape ", shape_of(wd).to_string(), " and group ", G, " do not match ", C, " input channels"));
  if (C % OG != 0) ctx.error(cat("input channels (", C, ") must be divisible by offset_group (", OG, ")"));
  const int64_t K = product(p.kernel);
  Dims outsp;
  for (size_t i = 0; i < nd; ++i) outsp.push_back(out_dim(p, i, xd[2 + i]));
  const int64_t O = product(outsp);
  Dims exp_off = {N, OG * K * static_cast<int64_t>(nd)};
  exp_off.insert(exp_off.end(), outsp.begin(), outsp.end());
  if (offset.dims() != exp_off)
    ctx.error(cat("offset shape ", shape_of(offset.dims()).to_string(), " should be ", shape_of(exp_off).to_string()));
  std::vector<double> bias;
  if (ctx.has_input(3)) {
    const Tensor& b = ctx.input(3);
    if (b.dims() != Dims{OC}) ctx.error(cat("B must have shape [", OC, "]"));
    bias = read_doubles(b);
  }
  std::vector<double> mask;
  if (ctx.has_input(4)) {
    const Tensor& m = ctx.input(4);
    Dims exp_mask = {N, OG * K};
    exp_mask.insert(exp_mask.end(), outsp.begin(), outsp.end());
    if (m.dims() != exp_mask) ctx.error(cat("mask shape ", shape_of(m.dims()).to_string(), " should be ", shape_of(exp_mask).to_string()));
    mask = read_doubles(m);
  }
  Dims ydims = {N, OC};
  ydims.insert(ydims.end(), outsp.begin(), outsp.end());
  Tensor& y = ctx.allocate_output(0, x.dtype(), ydims);
  if (product(ydims) == 0) return;
  const int64_t in_sp = product(xd, 2);
  std::vector<double> xv = read_doubles(x), wv = read_doubles(w), ov = read_doubles(offset);
  std::vector<double> out(static_cast<size_t>(product(ydims)), 0.0);
  const Dims in_strides = strides_of(Dims(xd.begin() + 2, xd.end()));
  const int64_t Cog = C / OG, Cg = C / G, OCg = OC / G;
  std::vector<double> col(static_cast<size_t>(C * K * O), 0.0);
  std::vector<int64_t> kidx(nd), oidx(nd);
  std::vector<std::pair<int64_t, double>> taps;
  const int64_t corners = int64_t{1} << nd;
  for (int64_t n = 0; n < N; ++n) {
    std::fill(col.begin(), col.end(), 0.0);
    for (int64_t g = 0; g < OG; ++g) {
      std::fill(kidx.begin(), kidx.end(), 0);
      for (int64_t kp = 0; kp < K; ++kp) {
        std::fill(oidx.begin(), oidx.end(), 0);
        for (int64_t o = 0; o < O; ++o) {
          // Multilinear taps of the sampling point.
          taps.clear();
          double pos[8];
          int64_t lo[8];
          double fr[8];
          bool valid = nd <= 8;
          if (!valid) ctx.error("DeformConv supports at most 8 spatial axes");
          for (size_t d = 0; d < nd; ++d) {
            double off = ov[static_cast<size_t>(((n * OG + g) * K * static_cast<int64_t>(nd) + kp * static_cast<int64_t>(nd) + static_cast<int64_t>(d)) * O + o)];
            pos[d] = static_cast<double>(oidx[d] * p.strides[d] - p.pads[d] + kidx[d] * p.dilations[d]) + off;
            if (!std::isfinite(pos[d]) || std::abs(pos[d]) > 1e15) valid = false;
            else {
              double f = std::floor(pos[d]);
              lo[d] = static_cast<int64_t>(f);
              fr[d] = pos[d] - f;
            }
          }
          if (valid) {
            for (int64_t cmask = 0; cmask < corners; ++cmask) {
              double wgt = 1;
              int64_t idx = 0;
              bool inside = true;
              for (size_t d = 0; d < nd; ++d) {
                bool up = (cmask >> d) & 1;
                int64_t i = lo[d] + (up ? 1 : 0);
                if (i < 0 || i >= xd[2 + d]) {
                  inside = false;
                  break;
                }
                wgt *= up ? fr[d] : 1 - fr[d];
                idx += i * in_strides[d];
              }
              if (inside && wgt != 0) taps.push_back({idx, wgt});
            }
          }
          double m = mask.empty() ? 1.0 : mask[static_cast<size_t>(((n * OG + g) * K + kp) * O + o)];
          if (!taps.empty()) {
            for (int64_t c = g * Cog; c < (g + 1) * Cog; ++c) {
              const double* plane = &xv[static_cast<size_t>((n * C + c) * in_sp)];
              double s = 0;
              for (auto& [i, wt] : taps) s += wt * plane[i];
              col[static_cast<size_t>((c * K + kp) * O + o)] = m * s;
            }
          }
          for (size_t d = nd; d-- > 0;) {
            if (++oidx[d] < outsp[d]) break;
            oidx[d] = 0;
          }
        }
        for (size_t d = nd; d-- > 0;) {
          if (++kidx[d] < p.kernel[d]) break;
          kidx[d] = 0;
        }
      }
    }
    for (int64_t oc = 0; oc < OC; ++oc) {
      const int64_t gi = oc / OCg;
      double* dst = &out[static_cast<size_t>((n * OC + oc) * O)];
      const double b = bias.empty() ? 0.0 : bias[static_cast<size_t>(oc)];
      for (int64_t o = 0; o < O; ++o) dst[o] = b;
      for (int64_t cl = 0; cl < Cg; ++cl)
        for (int64_t kp = 0; kp < K; ++kp) {
          const double wt = wv[static_cast<size_t>((oc * Cg + cl) * K + kp)];
          const double* src = &col[static_cast<size_t>(((gi * Cg + cl) * K + kp) * O)];
          for (int64_t o = 0; o < O; ++o) dst[o] += wt * src[o];
        }
    }
  }
  store_doubles(y, out);
}

void infer_deform(const Attrs& attrs, InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  const Type& xt = ctx.input_type(0);
  Type out = Type::tensor(xt.elem);
  if (xt.shape.rank_known && xt.shape.dims.size() >= 3) {
    const size_t nd = xt.shape.dims.size() - 2;
    out.shape.rank_known = true;
    out.shape.dims.assign(nd + 2, Dim{});
    out.shape.dims[0] = xt.shape.dims[0];
    std::optional<Dims> wd;
    if (ctx.has_input(1)) {
      wd = static_dims(ctx.input_type(1));
      if (ctx.input_type(1).shape.rank_known && !ctx.input_type(1).shape.dims.empty()) out.shape.dims[1] = ctx.input_type(1).shape.dims[0];
    }
    if (wd && wd->size() != nd + 2) ctx.error(cat("W rank ", wd->size(), " differs from X rank ", nd + 2));
    if (!attrs.kernel.empty() || wd) {
      Attrs p = resolved(attrs, nd, wd ? &*wd : nullptr);
      for (size_t i = 0; i < nd; ++i)
        if (const Dim& d = xt.shape.dims[2 + i]; d.value) out.shape.dims[2 + i] = known_dim(out_dim(p, i, *d.value));
    }
  } else if (xt.shape.rank_known) {
    ctx.error(cat("X must have rank >= 3, got ", xt.shape.to_string()));
  }
  ctx.set_output(0, out);
}

}  // namespace

void register_deform_conv(Registry& r) {
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  for (int v : {19, 22}) {
    auto infer = [](InferContext& ctx) { infer_deform(parse_deform(ctx.attrs), ctx); };
    auto kernel = [](const KernelInit& init) {
      Attrs p = parse_deform(init.attrs);
      return make_kernel([p](KernelContext& ctx) { run_deform(p, ctx); });
    };
    r.add(OpDef{"", "DeformConv", v, {{{0, 1, 2, 3, 4}, v >= 22 ? kFloatTypes : f}}, infer, kernel});
  }
}

}  // namespace onyx::ops
