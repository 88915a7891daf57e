// ai.onnx Resize — versions 10, 11, 13, 18, 19 — and Upsample — versions 1, 7, 9, 10.
// Resize-10: inputs X, scales; mode nearest|linear; output = floor(in * scale); coordinates are "asymmetric"
//            (x / scale) and nearest picks floor when upsampling, ceil when downsampling (the rule Upsample used).
// Resize-11: inputs X, roi, scales, sizes (one of scales/sizes non-empty); mode nearest|linear|cubic;
//            coordinate_transformation_mode (half_pixel default, pytorch_half_pixel, align_corners, asymmetric,
//            tf_half_pixel_for_nn, tf_crop_and_resize with roi), nearest_mode, cubic_coeff_a, exclude_outside,
//            extrapolation_value.  Resize-13: roi and scales optional, bfloat16.
// Resize-18: antialias (linear/cubic filters widened by 1/scale when downsampling), axes (scales/sizes/roi name a
//            subset of axes), keep_aspect_ratio_policy (stretch|not_larger|not_smaller, with sizes).
// Resize-19: coordinate_transformation_mode half_pixel_symmetric.
// Upsample-1: attributes height_scale/width_scale on a 4-D input, mode nearest|bilinear. Upsample-7: attribute
//            scales, mode nearest|linear. Upsample-9: scales as input. Upsample-10: deprecated (an error).
// Interpolation is separable: each axis maps every output index to a few input taps with weights (the reference's
// neighbour rule: the n nearest input indexes, ties to the lower one, edges clamped); the N-D value is the sum over
// the tensor product of the taps, computed in double. Nearest mode copies elements, so it serves every type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

enum class ResizeMode { Nearest, Linear, Cubic };
enum class Ctm { HalfPixel, HalfPixelSymmetric, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN, TfCropAndResize };
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };
enum class Policy { Stretch, NotLarger, NotSmaller };
enum class Kind { Resize, Upsample };

struct ResizeParams {
  Kind kind = Kind::Resize;
  int version = 0;
  ResizeMode mode = ResizeMode::Nearest;
  Ctm ctm = Ctm::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
  std::vector<int64_t> axes;  // raw (not normalized) axes attribute; empty = all
  Policy policy = Policy::Stretch;
  std::vector<double> attr_scales;  // Upsample-1/7
};

ResizeMode parse_resize_mode(const std::string& s, Kind kind, int version) {
  if (s == "nearest") return ResizeMode::Nearest;
  if (s == "linear" && !(kind == Kind::Upsample && version == 1)) return ResizeMode::Linear;
  if (s == "bilinear" && kind == Kind::Upsample && version == 1) return ResizeMode::Linear;
  if (s == "cubic" && kind == Kind::Resize && version >= 11) return ResizeMode::Cubic;
  fail("mode '", s, "' is not supported");
}

Ctm parse_ctm(const std::string& s, int version) {
  if (s == "half_pixel") return Ctm::HalfPixel;
  if (s == "half_pixel_symmetric" && version >= 19) return Ctm::HalfPixelSymmetric;
  if (s == "pytorch_half_pixel") return Ctm::PytorchHalfPixel;
  if (s == "align_corners") return Ctm::AlignCorners;
  if (s == "asymmetric") return Ctm::Asymmetric;
  if (s == "tf_half_pixel_for_nn") return Ctm::TfHalfPixelForNN;
  if (s == "tf_crop_and_resize") return Ctm::TfCropAndResize;
  fail("coordinate_transformation_mode '", s, "' is not supported in Resize-", version);
}

NearestMode parse_nearest(const std::string& s) {
  if (s == "round_prefer_floor") return NearestMode::RoundPreferFloor;
  if (s == "round_prefer_ceil") return NearestMode::RoundPreferCeil;
  if (s == "floor") return NearestMode::Floor;
  if (s == "ceil") return NearestMode::Ceil;
  fail("nearest_mode '", s, "' is not supported");
}

ResizeParams parse_params(const AttributeView& a, Kind kind, int version) {
  ResizeParams p;
  p.kind = kind;
  p.version = version;
  p.mode = parse_resize_mode(a.get_string("mode", "nearest"), kind, version);
  if (kind == Kind::Upsample || version < 11) {
    p.ctm = Ctm::Asymmetric;
    p.nearest = NearestMode::Simple;
    if (kind == Kind::Upsample && version == 1) {
      p.attr_scales = {1.0, 1.0, a.get_float("height_scale"), a.get_float("width_scale")};
    } else if (kind == Kind::Upsample && version == 7) {
      for (float f : a.get_floats("scales")) p.attr_scales.push_back(f);
    }
    return p;
  }
  p.ctm = parse_ctm(a.get_string("coordinate_transformation_mode", "half_pixel"), version);
  p.nearest = parse_nearest(a.get_string("nearest_mode", "round_prefer_floor"));
  p.cubic_a = a.get_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = a.get_int("exclude_outside", 0) != 0;
  p.extrapolation = a.get_float("extrapolation_value", 0.0f);
  if (version >= 18) {
    p.antialias = a.get_int("antialias", 0) != 0;
    if (a.has("axes")) {
      p.axes = a.get_ints("axes");
      if (p.axes.empty()) fail("axes must not be empty");
    }
    std::string pol = a.get_string("keep_aspect_ratio_policy", "stretch");
    if (pol == "stretch") p.policy = Policy::Stretch;
    else if (pol == "not_larger") p.policy = Policy::NotLarger;
    else if (pol == "not_smaller") p.policy = Policy::NotSmaller;
    else fail("keep_aspect_ratio_policy '", pol, "' is not supported");
  }
  return p;
}

// Normalized axes the scales/sizes/roi values apply to.
std::vector<int64_t> resolve_resize_axes(const ResizeParams& p, int64_t rank) {
  std::vector<int64_t> axes;
  if (p.axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : p.axes) {
    int64_t n = normalize_axis(a, rank, "axes value");
    if (seen[n]) fail("axes has ", a, " more than once");
    seen[n] = true;
    axes.push_back(n);
  }
  return axes;
}

// The per-axis plan: output size, scale, roi.
struct ResizePlan {
  Dims out;
  std::vector<double> scale, roi_start, roi_end;
};

// Which inputs hold scales / sizes / roi for this op version (-1: none).
struct InputSlots {
  int roi = -1, scales = -1, sizes = -1;
};
InputSlots slots(const ResizeParams& p) {
  if (p.kind == Kind::Upsample) return p.version >= 9 ? InputSlots{-1, 1, -1} : InputSlots{};
  if (p.version < 11) return InputSlots{-1, 1, -1};
  return InputSlots{1, 2, 3};
}

// Builds the plan from the input dims and the (possibly absent) scales/sizes/roi values.
ResizePlan make_resize_plan(const ResizeParams& p, const Dims& in, const std::vector<double>* scales_in, const std::vector<int64_t>* sizes_in,
               const std::vector<double>* roi_in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  ResizePlan plan;
  plan.out = in;
  plan.scale.assign(in.size(), 1.0);
  plan.roi_start.assign(in.size(), 0.0);
  plan.roi_end.assign(in.size(), 1.0);
  std::vector<int64_t> axes = resolve_resize_axes(p, rank);
  const size_t na = axes.size();
  if (p.kind == Kind::Upsample && p.version == 1 && rank != 4) fail("Upsample-1 needs a 4-D input, got rank ", rank);
  std::vector<double> scales;
  if (!p.attr_scales.empty()) scales = p.attr_scales;
  else if (scales_in) scales = *scales_in;
  bool has_scales = !scales.empty();
  bool has_sizes = sizes_in && !sizes_in->empty();
  if (has_scales && has_sizes) fail("only one of 'scales' and 'sizes' may be given");
  if (!has_scales && !has_sizes) fail("one of 'scales' and 'sizes' must be given");
  if (roi_in && !roi_in->empty()) {
    if (roi_in->size() != 2 * na) fail("roi has ", roi_in->size(), " values, expected ", 2 * na);
    for (size_t i = 0; i < na; ++i) {
      plan.roi_start[axes[i]] = (*roi_in)[i];
      plan.roi_end[axes[i]] = (*roi_in)[na + i];
    }
  } else if (p.ctm == Ctm::TfCropAndResize) {
    fail("coordinate_transformation_mode tf_crop_and_resize needs the 'roi' input");
  }
  if (has_scales) {
    if (scales.size() != na) fail("scales has ", scales.size(), " values, expected ", na);
    for (size_t i = 0; i < na; ++i) {
      double s = scales[i];
      if (!(s > 0) || !std::isfinite(s)) fail("scales must be positive and finite, got ", s);
      double o = std::floor(static_cast<double>(in[axes[i]]) * s);
      if (o > static_cast<double>(std::numeric_limits<int32_t>::max()) * 64) fail("scale ", s, " gives an output dim that is too large");
      plan.scale[axes[i]] = s;
      plan.out[axes[i]] = static_cast<int64_t>(o);
    }
    return plan;
  }
  const std::vector<int64_t>& sizes = *sizes_in;
  if (sizes.size() != na) fail("sizes has ", sizes.size(), " values, expected ", na);
  for (int64_t s : sizes)
    if (s < 0) fail("sizes must not be negative, got ", s);
  if (p.policy == Policy::Stretch) {
    for (size_t i = 0; i < na; ++i) {
      int64_t a = axes[i];
      plan.out[a] = sizes[i];
      plan.scale[a] = in[a] > 0 ? static_cast<double>(sizes[i]) / static_cast<double>(in[a]) : 1.0;
    }
    return plan;
  }
  double scale = p.policy == Policy::NotLarger ? std::numeric_limits<double>::infinity() : 0.0;
  for (size_t i = 0; i < na; ++i) {
    int64_t a = axes[i];
    double s = in[a] > 0 ? static_cast<double>(sizes[i]) / static_cast<double>(in[a]) : 1.0;
    scale = p.policy == Policy::NotLarger ? std::min(scale, s) : std::max(scale, s);
  }
  for (size_t i = 0; i < na; ++i) {
    int64_t a = axes[i];
    plan.scale[a] = scale;
    plan.out[a] = static_cast<int64_t>(scale * static_cast<double>(in[a]) + 0.5);
  }
  return plan;
}

// One input tap of an output index along an axis.
struct Tap {
  int64_t index;
  double w;
};

double cubic_kernel(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// The input coordinate of output index `o` along one axis; nullopt when tf_crop_and_resize falls outside.
std::optional<double> source_coord(const ResizeParams& p, int64_t o, int64_t in, int64_t out, double scale, double rs, double re) {
  const double x = static_cast<double>(o);
  const double in_f = static_cast<double>(in);
  const double out_f = scale * in_f;  // the reference's (possibly fractional) output length
  switch (p.ctm) {
    case Ctm::HalfPixel: return (x + 0.5) / scale - 0.5;
    case Ctm::HalfPixelSymmetric: {
      double adjustment = static_cast<double>(out) / out_f;
      double offset = in_f / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case Ctm::PytorchHalfPixel: return out_f == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case Ctm::AlignCorners: return out_f == 1 ? 0.0 : x * (in_f - 1) / (out_f - 1);
    case Ctm::Asymmetric: return x / scale;
    case Ctm::TfHalfPixelForNN: return (x + 0.5) / scale;
    case Ctm::TfCropAndResize: {
      double c = out_f == 1 ? (re - rs) * (in_f - 1) / 2 : x * (re - rs) * (in_f - 1) / (out_f - 1);
      c += rs * (in_f - 1);
      if (c < 0 || c > in_f - 1) return std::nullopt;
      return c;
    }
  }
  return x;
}

// Taps (input index clamped into range, weight) of output index o along an axis; empty = extrapolation value.
std::vector<Tap> resize_axis_taps(const ResizeParams& p, int64_t o, int64_t in, int64_t out, double scale, double rs, double re) {
  std::vector<Tap> taps;
  std::optional<double> xo = source_coord(p, o, in, out, scale, rs, re);
  if (!xo) return taps;
  double x = *xo;
  if (!std::isfinite(x)) fail("Resize: non-finite source coordinate (check scales and roi)");
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  if (p.mode == ResizeMode::Nearest) {
    int64_t idx;
    if (p.nearest == NearestMode::Simple) {
      idx = scale < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(std::floor(x));
    } else if (x == std::floor(x)) {
      idx = static_cast<int64_t>(x);
    } else {
      double fl = std::floor(x), r = x - fl;
      bool up = false;
      switch (p.nearest) {
        case NearestMode::RoundPreferFloor: up = r > 0.5; break;
        case NearestMode::RoundPreferCeil: up = r >= 0.5; break;
        case NearestMode::Floor: up = false; break;
        case NearestMode::Ceil: up = true; break;
        case NearestMode::Simple: break;
      }
      idx = static_cast<int64_t>(fl) + (up ? 1 : 0);
    }
    taps.push_back({clamp(idx), 1.0});
    return taps;
  }
  // The reference prefers the left pixel: ratio in (0, 1].
  int64_t base;
  double ratio;
  if (x == std::floor(x)) {
    base = static_cast<int64_t>(x) - 1;
    ratio = 1;
  } else {
    base = static_cast<int64_t>(std::floor(x));
    ratio = x - std::floor(x);
  }
  std::vector<std::pair<int64_t, double>> raw;  // (unclamped index, weight)
  if (p.antialias && (p.mode == ResizeMode::Linear || p.mode == ResizeMode::Cubic)) {
    double s = std::min(scale, 1.0);
    int64_t start = p.mode == ResizeMode::Linear ? static_cast<int64_t>(std::floor(-1 / s) + 1) : static_cast<int64_t>(std::floor(-2 / s) + 1);
    int64_t n = 2 - 2 * start;
    if (n > (int64_t{1} << 20)) fail("Resize: antialias filter is too wide for scale ", scale);
    double sum = 0;
    for (int64_t k = start; k < start + n; ++k) {
      double arg = s * (static_cast<double>(k) - ratio);
      double w = p.mode == ResizeMode::Linear ? std::clamp(1 - std::abs(arg), 0.0, 1.0) : cubic_kernel(arg, p.cubic_a);
      raw.push_back({base + k, w});
      sum += w;
    }
    for (auto& r : raw) r.second /= sum;
  } else if (p.mode == ResizeMode::Linear) {
    raw = {{base, 1 - ratio}, {base + 1, ratio}};
  } else {
    const double a = p.cubic_a;
    raw = {{base - 1, ((a * (ratio + 1) - 5 * a) * (ratio + 1) + 8 * a) * (ratio + 1) - 4 * a},
           {base, ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1},
           {base + 1, ((a + 2) * (1 - ratio) - (a + 3)) * (1 - ratio) * (1 - ratio) + 1},
           {base + 2, ((a * (2 - ratio) - 5 * a) * (2 - ratio) + 8 * a) * (2 - ratio) - 4 * a}};
  }
  if (p.exclude_outside) {
    double sum = 0;
    for (auto& r : raw) {
      if (r.first < 0 || r.first >= in) r.second = 0;
      sum += r.second;
    }
    for (auto& r : raw) r.second /= sum;
  }
  for (auto& r : raw)
    if (r.second != 0) taps.push_back({clamp(r.first), r.second});
  if (taps.empty()) taps.push_back({clamp(base), 0.0});
  return taps;
}

// Float32 fast path, for at most two adjacent resized axes (every other axis maps each
// index to itself, as when only H and W change, channels first or last): the tensor is [outer, A, B, inner]. Each
// output row (one index of A) is first the weighted sum of its input rows (contiguous, vectorized), then each output
// element of it the weighted sum of that row's elements at its B taps. Float sums with weights rounded once from
// double: the reference sums the tensor product of the taps in double, so results differ in the last bits. Nearest
// mode copies the element of its single tap per axis, exactly. Rows in parallel. False when the axes do not fit.
bool resize_float_fast(const Tensor& x, Tensor& y, const Dims& in, const Dims& out, const Dims& in_strides,
                       const std::vector<std::vector<std::vector<Tap>>>& taps, float extrap, bool nearest) {
  const size_t rank = in.size();
  if (rank < 2) return false;
  std::vector<size_t> moved;
  for (size_t d = 0; d < rank; ++d) {
    bool identity = out[d] == in[d];
    for (int64_t o = 0; identity && o < out[d]; ++o) {
      const std::vector<Tap>& t = taps[d][static_cast<size_t>(o)];
      identity = t.size() == 1 && t[0].index == o * in_strides[d] && t[0].w == 1.0;
    }
    if (!identity) moved.push_back(d);
  }
  if (moved.size() > 2 || (moved.size() == 2 && moved[1] != moved[0] + 1)) return false;
  const size_t a = moved.empty() ? rank - 2 : std::min(moved[0], rank - 2);
  const int64_t outer = product(Dims(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(a)));
  const int64_t inner = product(Dims(in.begin() + static_cast<std::ptrdiff_t>(a) + 2, in.end()));
  const int64_t OA = out[a], OB = out[a + 1], in_row = in[a + 1] * inner, in_block = in[a] * in_row;
  // The taps of each axis flattened: those of output index o are [start[o], start[o + 1]).
  struct Flat {
    std::vector<size_t> start;
    std::vector<int64_t> index;
    std::vector<float> w;
    bool two_each = true;  // every output index has exactly two taps
  };
  auto flatten = [](const std::vector<std::vector<Tap>>& t) {
    Flat f;
    for (const std::vector<Tap>& taps_o : t) {
      f.start.push_back(f.index.size());
      for (const Tap& tap : taps_o) {
        f.index.push_back(tap.index);
        f.w.push_back(static_cast<float>(tap.w));
      }
    }
    f.start.push_back(f.index.size());
    for (size_t o = 0; o + 1 < f.start.size(); ++o) f.two_each = f.two_each && f.start[o + 1] - f.start[o] == 2;
    return f;
  };
  const Flat ta = flatten(taps[a]), tb = flatten(taps[a + 1]);
  const float* src = x.data<float>();
  float* dst = y.mutable_data<float>();
  const int64_t rows = outer * OA;
#pragma omp parallel if (rows > 1 && rows * OB * inner > (int64_t{1} << 15))
  {
    std::vector<float> row(static_cast<size_t>(in_row));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* block = src + (r / OA) * in_block;
      const size_t oa = static_cast<size_t>(r % OA);
      float* out_row = dst + r * OB * inner;
      if (ta.start[oa] == ta.start[oa + 1]) {
        std::fill(out_row, out_row + OB * inner, extrap);
        continue;
      }
      if (nearest) {  // one tap per axis: copies of input elements
        const float* in_row_p = block + ta.index[ta.start[oa]];
        for (int64_t ob = 0; ob < OB; ++ob) {
          const size_t k0 = tb.start[static_cast<size_t>(ob)];
          float* o = out_row + ob * inner;
          if (k0 == tb.start[static_cast<size_t>(ob) + 1]) std::fill(o, o + inner, extrap);
          else if (inner == 1) *o = in_row_p[tb.index[k0]];
          else std::memcpy(o, in_row_p + tb.index[k0], static_cast<size_t>(inner) * sizeof(float));
        }
        continue;
      }
      float* rp = row.data();
      std::fill(rp, rp + in_row, 0.0f);
      for (size_t k = ta.start[oa]; k < ta.start[oa + 1]; ++k) {
        const float w = ta.w[k];
        const float* in_p = block + ta.index[k];
#pragma omp simd
        for (int64_t i = 0; i < in_row; ++i) rp[i] += w * in_p[i];
      }
      if (inner == 1 && tb.two_each) {  // linear's usual case: two taps for every output
        const int64_t* idx = tb.index.data();
        const float* w = tb.w.data();
        for (int64_t ob = 0; ob < OB; ++ob) out_row[ob] = w[2 * ob] * rp[idx[2 * ob]] + w[2 * ob + 1] * rp[idx[2 * ob + 1]];
        continue;
      }
      for (int64_t ob = 0; ob < OB; ++ob) {
        const size_t k0 = tb.start[static_cast<size_t>(ob)], k1 = tb.start[static_cast<size_t>(ob) + 1];
        float* o = out_row + ob * inner;
        if (k0 == k1) {
          std::fill(o, o + inner, extrap);
        } else if (inner == 1) {
          float s = 0;
          for (size_t k = k0; k < k1; ++k) s += tb.w[k] * rp[tb.index[k]];
          *o = s;
        } else {
          std::fill(o, o + inner, 0.0f);
          for (size_t k = k0; k < k1; ++k) {
            const float w = tb.w[k];
            const float* in_p = rp + tb.index[k];
#pragma omp simd
            for (int64_t c = 0; c < inner; ++c) o[c] += w * in_p[c];
          }
        }
      }
    }
  }
  return true;
}

void run_resize(const ResizeParams& p, KernelContext& ctx, bool fast) {
  const Tensor& x = ctx.input(0);
  const Dims& in = x.dims();
  InputSlots sl = slots(p);
  std::optional<std::vector<double>> scales, roi;
  std::optional<std::vector<int64_t>> sizes;
  if (sl.scales >= 0 && ctx.has_input(sl.scales)) scales = read_doubles(ctx.input(sl.scales));
  if (sl.sizes >= 0 && ctx.has_input(sl.sizes)) sizes = read_ints(ctx.input(sl.sizes));
  if (sl.roi >= 0 && ctx.has_input(sl.roi)) roi = read_doubles(ctx.input(sl.roi));
  if (p.kind == Kind::Upsample && p.version >= 9 && !scales) ctx.error("the 'scales' input is required");
  ResizePlan plan = make_resize_plan(p, in, scales ? &*scales : nullptr, sizes ? &*sizes : nullptr, roi ? &*roi : nullptr);
  const size_t rank = in.size();
  Tensor& y = ctx.allocate_output(0, x.dtype(), plan.out);
  const int64_t total = product(plan.out);
  if (total == 0) return;
  if (product(in) == 0) ctx.error("cannot resize an empty input to a non-empty output");
  Dims in_strides = strides_of(in);
  std::vector<std::vector<std::vector<Tap>>> taps(rank);
  for (size_t d = 0; d < rank; ++d) {
    taps[d].resize(static_cast<size_t>(plan.out[d]));
    for (int64_t o = 0; o < plan.out[d]; ++o) {
      auto t = resize_axis_taps(p, o, in[d], plan.out[d], plan.scale[d], plan.roi_start[d], plan.roi_end[d]);
      for (Tap& tap : t) tap.index *= in_strides[d];  // store the element offset
      taps[d][o] = std::move(t);
    }
  }
  if (fast && x.dtype() == D::Float &&
      resize_float_fast(x, y, in, plan.out, in_strides, taps, from_double<float>(p.extrapolation),
                        p.mode == ResizeMode::Nearest))
    return;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    constexpr bool numeric = (std::is_arithmetic_v<T> || is_small_float_v<T>);
    if constexpr (std::is_same_v<T, Int4Tag> || std::is_same_v<T, UInt4Tag> || std::is_same_v<T, Int2Tag> ||
                  std::is_same_v<T, UInt2Tag> || std::is_same_v<T, Float4E2M1Tag>) {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    } else {
      const T* src = nullptr;
      const std::vector<std::string>* strs = nullptr;
      T* dst = nullptr;
      std::vector<std::string>* out_strs = nullptr;
      if constexpr (std::is_same_v<T, std::string>) {
        strs = &x.string_values();
        out_strs = &y.mutable_strings();
      } else {
        src = x.data<T>();
        dst = y.mutable_data<T>();
      }
      auto fetch = [&](int64_t off) -> const T& {
        if constexpr (std::is_same_v<T, std::string>) return (*strs)[off];
        else return src[off];
      };
      auto store = [&](int64_t i, T v) {
        if constexpr (std::is_same_v<T, std::string>) (*out_strs)[i] = std::move(v);
        else dst[i] = v;
      };
      T extrap{};
      if constexpr (numeric) extrap = from_double<T>(p.extrapolation);
      else if constexpr (!std::is_same_v<T, std::string>) extrap = T(p.extrapolation);
      std::vector<int64_t> o(rank, 0);
      if (p.mode == ResizeMode::Nearest) {
        for (int64_t i = 0; i < total; ++i) {
          int64_t off = 0;
          bool outside = false;
          for (size_t d = 0; d < rank; ++d) {
            const auto& t = taps[d][o[d]];
            if (t.empty()) outside = true;
            else off += t[0].index;
          }
          store(i, outside ? extrap : fetch(off));
          for (size_t d = rank; d-- > 0;) {
            if (++o[d] < plan.out[d]) break;
            o[d] = 0;
          }
        }
        return;
      }
      if constexpr (!numeric) {
        ctx.error(cat("mode linear/cubic does not support element type ", x.dtype()));
      } else {
        std::vector<double> v = read_doubles(x);
        std::vector<const std::vector<Tap>*> cur(rank);
        // Sum over the tensor product of the taps of every axis.
        auto accumulate = [&](auto& self, size_t d, int64_t off) -> double {
          if (d == rank) return v[static_cast<size_t>(off)];
          double s = 0;
          for (const Tap& t : *cur[d]) s += t.w * self(self, d + 1, off + t.index);
          return s;
        };
        for (int64_t i = 0; i < total; ++i) {
          bool outside = false;
          for (size_t d = 0; d < rank; ++d) {
            cur[d] = &taps[d][o[d]];
            if (cur[d]->empty()) outside = true;
          }
          dst[i] = outside ? extrap : from_double<T>(accumulate(accumulate, 0, 0));
          for (size_t d = rank; d-- > 0;) {
            if (++o[d] < plan.out[d]) break;
            o[d] = 0;
          }
        }
      }
    }
  });
}

void infer_resize(const ResizeParams& p, InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  const Type& xt = ctx.input_type(0);
  Type out = Type::tensor(xt.elem);
  if (!xt.shape.rank_known) {
    ctx.set_output(0, out);
    return;
  }
  const int64_t rank = static_cast<int64_t>(xt.shape.dims.size());
  out.shape.rank_known = true;
  out.shape.dims.assign(xt.shape.dims.size(), Dim{});
  InputSlots sl = slots(p);
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  if (!p.attr_scales.empty()) scales = p.attr_scales;
  if (sl.scales >= 0 && ctx.has_input(sl.scales) && ctx.input_value(sl.scales)) scales = read_doubles(*ctx.input_value(sl.scales));
  if (sl.sizes >= 0 && ctx.has_input(sl.sizes) && ctx.input_value(sl.sizes)) sizes = read_ints(*ctx.input_value(sl.sizes));
  if (scales && scales->empty()) scales.reset();
  if (sizes && sizes->empty()) sizes.reset();
  if (scales && sizes) ctx.error("only one of 'scales' and 'sizes' may be given");
  std::vector<int64_t> axes = resolve_resize_axes(p, rank);
  std::vector<bool> touched(static_cast<size_t>(rank), false);
  for (int64_t a : axes) touched[a] = true;
  for (int64_t d = 0; d < rank; ++d)
    if (!touched[d]) out.shape.dims[d] = xt.shape.dims[d];
  if (p.kind == Kind::Upsample && p.version == 1 && rank != 4) ctx.error(cat("Upsample-1 needs a 4-D input, got rank ", rank));
  auto static_in = static_dims(xt);
  if (scales) {
    if (scales->size() != axes.size()) ctx.error(cat("scales has ", scales->size(), " values, expected ", axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      const Dim& d = xt.shape.dims[axes[i]];
      double s = (*scales)[i];
      if (!(s > 0) || !std::isfinite(s)) ctx.error(cat("scales must be positive and finite, got ", s));
      if (s == 1) out.shape.dims[axes[i]] = d;
      else if (d.value) out.shape.dims[axes[i]] = known_dim(static_cast<int64_t>(std::floor(static_cast<double>(*d.value) * s)));
    }
  } else if (sizes) {
    if (sizes->size() != axes.size()) ctx.error(cat("sizes has ", sizes->size(), " values, expected ", axes.size()));
    if (p.policy == Policy::Stretch) {
      for (size_t i = 0; i < axes.size(); ++i) {
        if ((*sizes)[i] < 0) ctx.error(cat("sizes must not be negative, got ", (*sizes)[i]));
        out.shape.dims[axes[i]] = known_dim((*sizes)[i]);
      }
    } else if (static_in) {
      ResizePlan plan = make_resize_plan(p, *static_in, nullptr, &*sizes, nullptr);
      for (int64_t a : axes) out.shape.dims[a] = known_dim(plan.out[a]);
    }
  }
  ctx.set_output(0, out);
}

void add_resize(Registry& r, const char* op, Kind kind, int version, std::vector<TypeConstraint> types) {
  auto infer = [kind, version](InferContext& ctx) { infer_resize(parse_params(ctx.attrs, kind, version), ctx); };
  auto kernel = [kind, version](const KernelInit& init) {
    ResizeParams p = parse_params(init.attrs, kind, version);
    const bool fast = !init.reference_only;
    return make_kernel([p, fast](KernelContext& ctx) { run_resize(p, ctx, fast); });
  };
  r.add(OpDef{"", op, version, std::move(types), infer, kernel});
}

}  // namespace

void register_resize(Registry& r) {
  const std::vector<DataType> all = all_tensor_types(10), all13 = all_tensor_types(13);
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> fl = {D::Float};
  const std::vector<DataType> i64 = {D::Int64};
  add_resize(r, "Resize", Kind::Resize, 10, {{{0}, all}, {{1}, fl}});
  add_resize(r, "Resize", Kind::Resize, 11, {{{0}, all}, {{1}, f}, {{2}, fl}, {{3}, i64}});
  for (int v : {13, 18, 19}) add_resize(r, "Resize", Kind::Resize, v, {{{0}, all13}, {{1}, f}, {{2}, fl}, {{3}, i64}});
  add_resize(r, "Upsample", Kind::Upsample, 1, {{{0}, f}});
  add_resize(r, "Upsample", Kind::Upsample, 7, {{{0}, all}});
  add_resize(r, "Upsample", Kind::Upsample, 9, {{{0}, all}, {{1}, fl}});
  // Upsample-10 exists only as a deprecation marker: models must use Resize.
  auto deprecated = [](InferContext& ctx) { ctx.error("Upsample is deprecated since opset 10; use Resize"); };
  auto no_kernel = [](const KernelInit&) -> std::unique_ptr<Kernel> { fail("Upsample is deprecated since opset 10; use Resize"); };
  r.add(OpDef{"", "Upsample", 10, {{{0}, all}, {{1}, fl}}, deprecated, no_kernel});
  r.set_fast_kernels("", "Resize", {"float32 linear, cubic or nearest over two adjacent axes: whole input rows weighted, then the taps of a row"});
  r.set_fast_kernels("", "Upsample", {"float32 linear or nearest over two adjacent axes: whole input rows weighted, then the taps of a row"});
}

}  // namespace onyx::ops
