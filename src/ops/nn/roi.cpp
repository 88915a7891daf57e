// ai.onnx RoiAlign — versions 10, 16, 22 —, MaxRoiPool — versions 1, 22 — and NonMaxSuppression — versions 10, 11.
// RoiAlign-10: X [N,C,H,W], rois [R,4] (x1,y1,x2,y2), batch_indices [R]; mode avg|max over a grid of bilinear
//   samples per output bin (sampling_ratio, or ceil(roi size / output size) when 0); ROIs smaller than 1 pixel are
//   stretched to 1. RoiAlign-16: coordinate_transformation_mode half_pixel (default: coordinates shifted by -0.5,
//   no stretching) or output_half_pixel (the RoiAlign-10 behaviour). RoiAlign-22: bfloat16.
//   Max mode follows the reference: per sample, the largest of the four weighted corner values.
// MaxRoiPool-1: rois [R,5] (batch, x1, y1, x2, y2) scaled by spatial_scale and rounded; the max over each of the
//   pooled_shape bins (empty bins give 0). MaxRoiPool-22: bfloat16.
// NonMaxSuppression-10/11: boxes [B,N,4], scores [B,C,N]; per batch and class, greedy selection by descending score
//   (ties: lower box index first) of boxes whose score exceeds score_threshold (when given) and whose IoU with every
//   already selected box is at most iou_threshold, up to max_output_boxes_per_class (default 0: none). Output
//   [num_selected, 3] int64 rows (batch, class, box) in that order. center_point_box 1: boxes are (xc, yc, w, h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/run_limits.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

// ---- RoiAlign

struct RoiAlignParams {
  bool max_mode = false;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  double spatial_scale = 1.0;
  bool half_pixel = false;
};

RoiAlignParams parse_roi_align(const AttributeView& a, int version) {
  RoiAlignParams p;
  std::string mode = a.get_string("mode", "avg");
  if (mode == "max") p.max_mode = true;
  else if (mode != "avg") fail("mode '", mode, "' is not supported (avg or max)");
  p.out_h = a.get_int("output_height", 1);
  p.out_w = a.get_int("output_width", 1);
  if (p.out_h <= 0 || p.out_w <= 0) fail("output_height and output_width must be positive");
  p.sampling_ratio = a.get_int("sampling_ratio", 0);
  if (p.sampling_ratio < 0) fail("sampling_ratio must not be negative");
  p.spatial_scale = a.get_float("spatial_scale", 1.0f);
  if (version >= 16) {
    std::string ctm = a.get_string("coordinate_transformation_mode", "half_pixel");
    if (ctm == "half_pixel") p.half_pixel = true;
    else if (ctm != "output_half_pixel") fail("coordinate_transformation_mode '", ctm, "' is not supported");
  }
  return p;
}

struct Sample {
  int64_t pos[4];
  double w[4];
};

void run_roi_align(const RoiAlignParams& p, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois_t = ctx.input(1);
  const Tensor& bi_t = ctx.input(2);
  const Dims& xd = x.dims();
  if (xd.size() != 4) ctx.error(cat("X must be 4-D, got ", shape_of(xd).to_string()));
  if (rois_t.dims().size() != 2 || rois_t.dims()[1] != 4) ctx.error(cat("rois must be [num_rois, 4], got ", shape_of(rois_t.dims()).to_string()));
  const int64_t R = rois_t.dims()[0];
  if (bi_t.dims().size() != 1 || bi_t.dims()[0] != R) ctx.error("batch_indices must be 1-D with one entry per roi");
  const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3];
  std::vector<double> rois = read_doubles(rois_t);
  std::vector<int64_t> bi = read_ints(bi_t);
  for (int64_t b : bi)
    if (b < 0 || b >= N) ctx.error(cat("batch index ", b, " is out of range [0, ", N, ")"));
  Tensor& y = ctx.allocate_output(0, x.dtype(), {R, C, p.out_h, p.out_w});
  if (product(y.dims()) == 0) return;
  if (H == 0 || W == 0) ctx.error("X has an empty spatial extent");
  std::vector<double> xv = read_doubles(x);
  std::vector<double> out(static_cast<size_t>(product(y.dims())));
  std::vector<Sample> samples;
  const double Hf = static_cast<double>(H), Wf = static_cast<double>(W);
  for (int64_t r = 0; r < R; ++r) {
    const double off = p.half_pixel ? 0.5 : 0.0;
    const double* roi = &rois[static_cast<size_t>(r * 4)];
    for (int k = 0; k < 4; ++k)
      if (!std::isfinite(roi[k])) ctx.error(cat("roi ", r, " has a non-finite coordinate"));
    double sw = roi[0] * p.spatial_scale - off, sh = roi[1] * p.spatial_scale - off;
    double ew = roi[2] * p.spatial_scale - off, eh = roi[3] * p.spatial_scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!p.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bin_h = rh / static_cast<double>(p.out_h), bin_w = rw / static_cast<double>(p.out_w);
    double gh_d = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio) : std::ceil(rh / static_cast<double>(p.out_h));
    double gw_d = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio) : std::ceil(rw / static_cast<double>(p.out_w));
    gh_d = std::max(gh_d, 0.0);
    gw_d = std::max(gw_d, 0.0);
    if (gh_d * gw_d > double(1 << 24)) ctx.error(cat("roi ", r, " needs too many samples per bin (", gh_d * gw_d, ")"));
    const int64_t gh = static_cast<int64_t>(gh_d), gw = static_cast<int64_t>(gw_d);
    const double count = std::max<double>(static_cast<double>(gh * gw), 1.0);
    // Sample positions and weights, shared by all channels.
    samples.clear();
    for (int64_t ph = 0; ph < p.out_h; ++ph)
      for (int64_t pw = 0; pw < p.out_w; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double yy = sh + static_cast<double>(ph) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            double xx = sw + static_cast<double>(pw) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(gw);
            double yv = yy;
            Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
            if (!(yv < -1.0 || yv > Hf || xx < -1.0 || xx > Wf)) {
              yv = std::max(yv, 0.0);
              xx = std::max(xx, 0.0);
              int64_t yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xx), yh, xh;
              if (yl >= H - 1) {
                yh = yl = H - 1;
                yv = static_cast<double>(yl);
              } else {
                yh = yl + 1;
              }
              if (xl >= W - 1) {
                xh = xl = W - 1;
                xx = static_cast<double>(xl);
              } else {
                xh = xl + 1;
              }
              double ly = yv - static_cast<double>(yl), lx = xx - static_cast<double>(xl), hy = 1 - ly, hx = 1 - lx;
              s = Sample{{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh}, {hy * hx, hy * lx, ly * hx, ly * lx}};
            }
            samples.push_back(s);
          }
        }
    const int64_t per_bin = gh * gw;
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = &xv[static_cast<size_t>((bi[r] * C + c) * H * W)];
      double* dst = &out[static_cast<size_t>((r * C + c) * p.out_h * p.out_w)];
      for (int64_t b = 0; b < p.out_h * p.out_w; ++b) {
        const Sample* sp = samples.data() + b * per_bin;
        double v = 0;
        if (!p.max_mode) {
          for (int64_t k = 0; k < per_bin; ++k)
            for (int q = 0; q < 4; ++q) v += sp[k].w[q] * plane[sp[k].pos[q]];
          v /= count;
        } else {
          for (int64_t k = 0; k < per_bin; ++k) {
            double m = sp[k].w[0] * plane[sp[k].pos[0]];
            for (int q = 1; q < 4; ++q) m = std::max(m, sp[k].w[q] * plane[sp[k].pos[q]]);
            v = k == 0 ? m : std::max(v, m);
          }
        }
        dst[b] = v;
      }
    }
  }
  store_doubles(y, out);
}

void infer_roi_align(const RoiAlignParams& p, InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  const Type& xt = ctx.input_type(0);
  Type out = Type::tensor(xt.elem);
  out.shape.rank_known = true;
  out.shape.dims.assign(4, Dim{});
  if (xt.shape.rank_known) {
    if (xt.shape.dims.size() != 4) ctx.error(cat("X must be 4-D, got ", xt.shape.to_string()));
    out.shape.dims[1] = xt.shape.dims[1];
  }
  if (ctx.has_input(1) && ctx.input_type(1).shape.rank_known && ctx.input_type(1).shape.dims.size() == 2)
    out.shape.dims[0] = ctx.input_type(1).shape.dims[0];
  else if (ctx.has_input(2) && ctx.input_type(2).shape.rank_known && ctx.input_type(2).shape.dims.size() == 1)
    out.shape.dims[0] = ctx.input_type(2).shape.dims[0];
  out.shape.dims[2] = known_dim(p.out_h);
  out.shape.dims[3] = known_dim(p.out_w);
  ctx.set_output(0, out);
}

// ---- MaxRoiPool

struct MaxRoiPoolParams {
  int64_t ph = 0, pw = 0;
  double spatial_scale = 1.0;
};

MaxRoiPoolParams parse_max_roi_pool(const AttributeView& a) {
  MaxRoiPoolParams p;
  std::vector<int64_t> ps = a.get_ints("pooled_shape");
  if (ps.size() != 2 || ps[0] <= 0 || ps[1] <= 0) fail("pooled_shape must be two positive values");
  p.ph = ps[0];
  p.pw = ps[1];
  p.spatial_scale = a.get_float("spatial_scale", 1.0f);
  return p;
}

void run_max_roi_pool(const MaxRoiPoolParams& p, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois_t = ctx.input(1);
  const Dims& xd = x.dims();
  if (xd.size() != 4) ctx.error(cat("X must be 4-D, got ", shape_of(xd).to_string()));
  if (rois_t.dims().size() != 2 || rois_t.dims()[1] != 5) ctx.error(cat("rois must be [num_rois, 5], got ", shape_of(rois_t.dims()).to_string()));
  const int64_t R = rois_t.dims()[0], N = xd[0], C = xd[1], H = xd[2], W = xd[3];
  std::vector<double> rois = read_doubles(rois_t);
  Tensor& y = ctx.allocate_output(0, x.dtype(), {R, C, p.ph, p.pw});
  if (product(y.dims()) == 0) return;
  std::vector<double> xv = read_doubles(x);
  std::vector<double> out(static_cast<size_t>(product(y.dims())));
  auto to_int = [&](double v, int64_t r) {
    if (!std::isfinite(v) || std::abs(v) > 1e15) ctx.error(cat("roi ", r, " has an invalid coordinate"));
    return static_cast<int64_t>(std::round(v));
  };
  for (int64_t r = 0; r < R; ++r) {
    const double* roi = &rois[static_cast<size_t>(r * 5)];
    int64_t b = to_int(roi[0], r);
    if (b < 0 || b >= N) ctx.error(cat("roi ", r, " has batch index ", b, " out of range [0, ", N, ")"));
    int64_t sw = to_int(roi[1] * p.spatial_scale, r), sh = to_int(roi[2] * p.spatial_scale, r);
    int64_t ew = to_int(roi[3] * p.spatial_scale, r), eh = to_int(roi[4] * p.spatial_scale, r);
    const int64_t rh = std::max<int64_t>(eh - sh + 1, 1), rw = std::max<int64_t>(ew - sw + 1, 1);
    const double bh = static_cast<double>(rh) / static_cast<double>(p.ph), bw = static_cast<double>(rw) / static_cast<double>(p.pw);
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = &xv[static_cast<size_t>((b * C + c) * H * W)];
      for (int64_t i = 0; i < p.ph; ++i) {
        int64_t hs = static_cast<int64_t>(std::floor(static_cast<double>(i) * bh)) + sh;
        int64_t he = static_cast<int64_t>(std::ceil(static_cast<double>(i + 1) * bh)) + sh;
        hs = std::clamp<int64_t>(hs, 0, H);
        he = std::clamp<int64_t>(he, 0, H);
        for (int64_t j = 0; j < p.pw; ++j) {
          int64_t ws = static_cast<int64_t>(std::floor(static_cast<double>(j) * bw)) + sw;
          int64_t we = static_cast<int64_t>(std::ceil(static_cast<double>(j + 1) * bw)) + sw;
          ws = std::clamp<int64_t>(ws, 0, W);
          we = std::clamp<int64_t>(we, 0, W);
          double m = 0;
          if (he > hs && we > ws) {
            m = -std::numeric_limits<double>::infinity();
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) m = std::max(m, plane[h * W + w]);
          }
          out[static_cast<size_t>(((r * C + c) * p.ph + i) * p.pw + j)] = m;
        }
      }
    }
  }
  store_doubles(y, out);
}

void infer_max_roi_pool(const MaxRoiPoolParams& p, InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  const Type& xt = ctx.input_type(0);
  Type out = Type::tensor(xt.elem);
  out.shape.rank_known = true;
  out.shape.dims.assign(4, Dim{});
  if (xt.shape.rank_known) {
    if (xt.shape.dims.size() != 4) ctx.error(cat("X must be 4-D, got ", xt.shape.to_string()));
    out.shape.dims[1] = xt.shape.dims[1];
  }
  if (ctx.has_input(1) && ctx.input_type(1).shape.rank_known && ctx.input_type(1).shape.dims.size() == 2)
    out.shape.dims[0] = ctx.input_type(1).shape.dims[0];
  out.shape.dims[2] = known_dim(p.ph);
  out.shape.dims[3] = known_dim(p.pw);
  ctx.set_output(0, out);
}

// ---- NonMaxSuppression

// IoU > threshold, computed in float like the reference (boxes are float tensors).
bool suppress(const float* a, const float* b, bool center, float iou_threshold) {
  float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  if (!center) {
    ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]), ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
    bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]), by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
  } else {
    ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
    bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  }
  float ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1);
  if (!(ix1 > ix0)) return false;
  float iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
  if (!(iy1 > iy0)) return false;
  float inter = (ix1 - ix0) * (iy1 - iy0);
  if (!(inter > 0)) return false;
  float area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);
  float uni = area_a + area_b - inter;
  if (!(area_a > 0) || !(area_b > 0) || !(uni > 0)) return false;
  return inter / uni > iou_threshold;
}

void run_nms(int64_t center_point_box, KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  const Dims& bd = boxes.dims();
  const Dims& sd = scores.dims();
  if (bd.size() != 3 || bd[2] != 4) ctx.error(cat("boxes must be [num_batches, num_boxes, 4], got ", shape_of(bd).to_string()));
  if (sd.size() != 3 || sd[0] != bd[0] || sd[2] != bd[1])
    ctx.error(cat("scores shape ", shape_of(sd).to_string(), " does not match boxes shape ", shape_of(bd).to_string()));
  int64_t max_out = 0;
  float iou_threshold = 0, score_threshold = 0;
  bool has_score_threshold = false;
  auto scalar = [&](size_t i, const char* name) -> const Tensor* {
    if (!ctx.has_input(i)) return nullptr;
    const Tensor& t = ctx.input(i);
    if (t.element_count() == 0) return nullptr;
    if (t.element_count() != 1) ctx.error(cat(name, " must hold a single value"));
    return &t;
  };
  if (const Tensor* t = scalar(2, "max_output_boxes_per_class")) max_out = std::max<int64_t>(read_ints(*t)[0], 0);
  if (const Tensor* t = scalar(3, "iou_threshold")) iou_threshold = static_cast<float>(read_doubles(*t)[0]);
  if (const Tensor* t = scalar(4, "score_threshold")) {
    score_threshold = static_cast<float>(read_doubles(*t)[0]);
    has_score_threshold = true;
  }
  const int64_t B = bd[0], NB = bd[1], NC = sd[1];
  const float* pb = boxes.data<float>();
  const float* ps = scores.data<float>();
  std::vector<int64_t> result;
  std::vector<int64_t> cand, selected;
  for (int64_t b = 0; b < B; ++b) {
    const float* bb = pb + b * NB * 4;
    for (int64_t c = 0; c < NC; ++c) {
      const float* sc = ps + (b * NC + c) * NB;
      cand.clear();
      for (int64_t i = 0; i < NB; ++i)
        if (!has_score_threshold || sc[i] > score_threshold) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
      selected.clear();
      for (size_t n = 0; n < cand.size(); ++n) {
        const int64_t i = cand[n];
        if (static_cast<int64_t>(selected.size()) >= max_out) break;
        // The greedy selection is quadratic in the boxes: a class of a million boxes takes minutes.
        if (n % 1024 == 1023) check_run_limits("in NonMaxSuppression");
        bool keep = true;
        for (int64_t s : selected)
          if (suppress(bb + i * 4, bb + s * 4, center_point_box != 0, iou_threshold)) {
            keep = false;
            break;
          }
        if (!keep) continue;
        selected.push_back(i);
        result.insert(result.end(), {b, c, i});
      }
    }
  }
  Tensor& y = ctx.allocate_output(0, D::Int64, {static_cast<int64_t>(result.size() / 3), 3});
  std::copy(result.begin(), result.end(), y.mutable_data<int64_t>());
}

}  // namespace

void register_roi(Registry& r) {
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> i64 = {D::Int64};
  for (int v : {10, 16, 22}) {
    auto infer = [v](InferContext& ctx) { infer_roi_align(parse_roi_align(ctx.attrs, v), ctx); };
    auto kernel = [v](const KernelInit& init) {
      RoiAlignParams p = parse_roi_align(init.attrs, v);
      return make_kernel([p](KernelContext& ctx) { run_roi_align(p, ctx); });
    };
    r.add(OpDef{"", "RoiAlign", v, {{{0, 1}, v >= 22 ? kFloatTypes : f}, {{2}, i64}}, infer, kernel});
  }
  for (int v : {1, 22}) {
    auto infer = [](InferContext& ctx) { infer_max_roi_pool(parse_max_roi_pool(ctx.attrs), ctx); };
    auto kernel = [](const KernelInit& init) {
      MaxRoiPoolParams p = parse_max_roi_pool(init.attrs);
      return make_kernel([p](KernelContext& ctx) { run_max_roi_pool(p, ctx); });
    };
    r.add(OpDef{"", "MaxRoiPool", v, {{{0, 1}, v >= 22 ? kFloatTypes : f}}, infer, kernel});
  }
  for (int v : {10, 11}) {
    auto infer = [](InferContext& ctx) {
      int64_t cpb = ctx.attrs.get_int("center_point_box", 0);
      if (cpb != 0 && cpb != 1) ctx.error(cat("center_point_box must be 0 or 1, got ", cpb));
      Type t = Type::tensor(D::Int64);
      t.shape.rank_known = true;
      t.shape.dims = {Dim{}, known_dim(3)};
      ctx.set_output(0, t);
    };
    auto kernel = [](const KernelInit& init) {
      int64_t cpb = init.attrs.get_int("center_point_box", 0);
      if (cpb != 0 && cpb != 1) fail("center_point_box must be 0 or 1, got ", cpb);
      return make_kernel([cpb](KernelContext& ctx) { run_nms(cpb, ctx); });
    };
    r.add(OpDef{"", "NonMaxSuppression", v, {{{0, 1}, {D::Float}}, {{2}, i64}, {{3, 4}, {D::Float}}}, infer, kernel});
  }
}

}  // namespace onyx::ops
