// ai.onnx DFT (17, 20) and STFT (17).
// DFT: the input is [..., 1] (real) or [..., 2] (complex, real and imaginary parts); the transform runs along
//   `axis` over dft_length points (input 1, optional: zero-padded or truncated; default the axis dim).
//   17: `axis` is an attribute (default 1). 20: `axis` is the optional input 2 (scalar int64, default -2).
//   Valid axes are [-r, -2] and [0, r-2] (r counts the trailing complex dim).
//   onesided=1 forward: only bins 0..n/2 (real input only). inverse=1: 1/n * sum(X[k] e^{+2 pi i k t / n}).
//   inverse=1 with onesided=1: the input is a one-sided (Hermitian) spectrum and the output is the real signal
//   ([..., 1]) of length dft_length, default 2*(m-1) for m input bins (numpy's irfft).
// STFT: signal [batch, length, 1|2] (or [batch, length], real), frame_step (scalar), window ([frame_length],
//   optional) and frame_length (scalar, optional; default the window's length, else the signal length).
//   Output [batch, frames, bins, 2] with frames = (length - frame_length) / frame_step + 1 and
//   bins = frame_length/2+1 when onesided (default 1, real input only) else frame_length.
// Transforms run in double precision (ops/signal/fft.hpp) and are rounded once to the output type.
#include "ops/op_kit.hpp"
#include "ops/signal/fft.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
using signal::cd;

constexpr int64_t kMaxLength = int64_t{1} << 24;  // transform points (the FFT keeps a few tables of this size)

const std::vector<DataType> kT1 = {D::Float16, D::BFloat16, D::Float, D::Double};
const std::vector<DataType> kT2 = {D::Int32, D::Int64};

int64_t dft_axis(int64_t axis, int64_t rank) {
  if (rank < 2) fail("input must have rank >= 2 (signal dims and the trailing complex dim), got rank ", rank);
  if (axis < -rank || axis > rank - 2 || axis == -1)
    fail("axis ", axis, " is out of range [", -rank, ", -2] U [0, ", rank - 2, "] for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

struct DftOptions {
  bool inverse = false, onesided = false;
};

// Output length along the axis and the transform length.
void dft_lengths(int64_t m, std::optional<int64_t> dft_length, const DftOptions& o, int64_t& n, int64_t& out_len) {
  if (o.inverse && o.onesided) {
    n = dft_length ? *dft_length : 2 * (m - 1);
    out_len = n;
  } else {
    n = dft_length ? *dft_length : m;
    out_len = o.onesided ? n / 2 + 1 : n;
  }
  if (n < 1) fail("the DFT length must be positive, got ", n);
}

void run_dft(KernelContext& ctx, const DftOptions& o, int64_t axis_raw) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  const int64_t axis = dft_axis(axis_raw, rank);
  const int64_t comps = xd.back();
  if (comps != 1 && comps != 2) ctx.error(cat("the last dim must be 1 (real) or 2 (complex), got ", comps));
  if (o.onesided && !o.inverse && comps == 2) ctx.error("onesided output needs a real input (last dim 1)");
  std::optional<int64_t> len;
  if (ctx.has_input(1)) len = read_scalar_int(ctx.input(1), "dft_length");
  const int64_t m = xd[axis];
  int64_t n, out_len;
  dft_lengths(m, len, o, n, out_len);
  const bool real_out = o.inverse && o.onesided;
  Dims yd = xd;
  yd[axis] = out_len;
  yd.back() = real_out ? 1 : 2;
  int64_t outer = product(xd, 0, axis), inner = product(xd, axis + 1, rank - 1);
  check_data_sized(yd);
  if (n > kMaxLength) ctx.error(cat("DFT length ", n, " is too large (at most ", kMaxLength, ")"));

  const std::vector<double> in = read_doubles(x);
  std::vector<double> out(static_cast<size_t>(product(yd)), 0.0);
  signal::Fft fft(static_cast<size_t>(n));
  std::vector<cd> line(static_cast<size_t>(n));
  const int64_t half = n / 2 + 1;  // bins a one-sided spectrum holds
  const int64_t oc = yd.back();
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t b = 0; b < inner; ++b) {
      auto at = [&](int64_t k) -> cd {
        size_t base = static_cast<size_t>(((a * m + k) * inner + b) * comps);
        return {in[base], comps == 2 ? in[base + 1] : 0.0};
      };
      std::fill(line.begin(), line.end(), cd{});
      if (real_out) {
        // Rebuild the full Hermitian spectrum from bins 0..n/2.
        for (int64_t k = 0; k < std::min(m, half); ++k) line[k] = at(k);
        for (int64_t k = 1; k < half; ++k)
          if (n - k >= half) line[n - k] = std::conj(line[k]);
      } else {
        for (int64_t k = 0; k < std::min(m, n); ++k) line[k] = at(k);
      }
      fft.run(line, o.inverse);
      const double scale = o.inverse ? 1.0 / static_cast<double>(n) : 1.0;
      for (int64_t k = 0; k < out_len; ++k) {
        size_t base = static_cast<size_t>(((a * out_len + k) * inner + b) * oc);
        out[base] = line[k].real() * scale;
        if (oc == 2) out[base + 1] = line[k].imag() * scale;
      }
    }
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), yd);
  store_doubles(y, out);
}

void infer_dft(InferContext& ctx, const DftOptions& o, std::optional<int64_t> axis_raw) {
  const Type& t = ctx.input_type(0);
  Shape s;
  if (t.shape.rank_known) {
    const int64_t rank = static_cast<int64_t>(t.shape.dims.size());
    s.rank_known = true;
    s.dims.assign(t.shape.dims.size(), Dim{});
    if (axis_raw) {
      const int64_t axis = dft_axis(*axis_raw, rank);
      s.dims = t.shape.dims;
      std::optional<int64_t> len;
      bool len_known = true;
      if (ctx.has_input(1)) {
        if (const Tensor* v = ctx.input_value(1)) len = read_scalar_int(*v, "dft_length");
        else len_known = false;
      }
      const Dim& md = t.shape.dims[axis];
      if (!len_known) {
        s.dims[axis] = Dim{};
      } else if (!len && !o.onesided) {
        // keeps the (possibly symbolic) dim
      } else if (len || md.value) {
        int64_t n, out_len;
        dft_lengths(md.value ? *md.value : 0, len, o, n, out_len);
        s.dims[axis] = known_dim(out_len);
      } else {
        s.dims[axis] = Dim{};
      }
      const Dim& last = t.shape.dims.back();
      if (last.value && *last.value != 1 && *last.value != 2)
        ctx.error(cat("the last dim must be 1 (real) or 2 (complex), got ", *last.value));
    }
    s.dims.back() = known_dim((o.inverse && o.onesided) ? 1 : 2);
  }
  ctx.set_output(0, Type::tensor(t.elem, s));
}

DftOptions dft_options(const AttributeView& attrs) {
  DftOptions o;
  o.inverse = attrs.get_int("inverse", 0) != 0;
  o.onesided = attrs.get_int("onesided", 0) != 0;
  return o;
}

// ---- STFT ----

struct StftSetup {
  int64_t batch, length, comps, frame_length, frame_step, frames, bins;
};

StftSetup stft_setup(const Dims& sd, int64_t step, std::optional<int64_t> window_len, std::optional<int64_t> frame_len,
                     bool onesided) {
  if (sd.size() != 2 && sd.size() != 3)
    fail("signal must have shape [batch, length, 1|2] (or [batch, length]), got ", shape_of(sd).to_string());
  StftSetup s;
  s.batch = sd[0];
  s.length = sd[1];
  s.comps = sd.size() == 3 ? sd[2] : 1;
  if (s.comps != 1 && s.comps != 2) fail("the signal's last dim must be 1 (real) or 2 (complex), got ", s.comps);
  if (onesided && s.comps == 2) fail("onesided output needs a real signal; set onesided=0 for a complex one");
  if (frame_len && window_len && *frame_len != *window_len)
    fail("frame_length ", *frame_len, " differs from the window's length ", *window_len);
  s.frame_length = frame_len ? *frame_len : window_len ? *window_len : s.length;
  if (s.frame_length < 1) fail("frame_length must be positive, got ", s.frame_length);
  if (s.frame_length > s.length) fail("frame_length ", s.frame_length, " is longer than the signal (", s.length, ")");
  if (step < 1) fail("frame_step must be positive, got ", step);
  s.frame_step = step;
  s.frames = (s.length - s.frame_length) / step + 1;
  s.bins = onesided ? s.frame_length / 2 + 1 : s.frame_length;
  if (s.frame_length > kMaxLength) fail("frame_length ", s.frame_length, " is too large (at most ", kMaxLength, ")");
  check_data_sized({s.batch, s.frames, s.bins, 2});
  return s;
}

void run_stft(KernelContext& ctx, bool onesided) {
  const Tensor& x = ctx.input(0);
  int64_t step = read_scalar_int(ctx.input(1), "frame_step");
  std::optional<int64_t> window_len, frame_len;
  std::vector<double> window;
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.dims().size() != 1) ctx.error(cat("window must be 1-D, got shape ", shape_of(w.dims()).to_string()));
    window_len = w.dims()[0];
    window = read_doubles(w);
  }
  if (ctx.has_input(3)) frame_len = read_scalar_int(ctx.input(3), "frame_length");
  StftSetup s = stft_setup(x.dims(), step, window_len, frame_len, onesided);
  if (window.empty()) window.assign(static_cast<size_t>(s.frame_length), 1.0);
  Dims yd = {s.batch, s.frames, s.bins, 2};
  const std::vector<double> in = read_doubles(x);
  std::vector<double> out(static_cast<size_t>(product(yd)), 0.0);
  signal::Fft fft(static_cast<size_t>(s.frame_length));
  std::vector<cd> line(static_cast<size_t>(s.frame_length));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t f = 0; f < s.frames; ++f) {
      for (int64_t t = 0; t < s.frame_length; ++t) {
        size_t base = static_cast<size_t>((b * s.length + f * s.frame_step + t) * s.comps);
        cd v{in[base], s.comps == 2 ? in[base + 1] : 0.0};
        line[t] = v * window[t];
      }
      fft.run(line, false);
      for (int64_t k = 0; k < s.bins; ++k) {
        size_t base = static_cast<size_t>(((b * s.frames + f) * s.bins + k) * 2);
        out[base] = line[k].real();
        out[base + 1] = line[k].imag();
      }
    }
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), yd);
  store_doubles(y, out);
}

void infer_stft(InferContext& ctx, bool onesided) {
  const Type& t = ctx.input_type(0);
  Shape s;
  s.rank_known = true;
  s.dims.assign(4, Dim{});
  s.dims[3] = known_dim(2);
  if (t.shape.rank_known && !t.shape.dims.empty()) s.dims[0] = t.shape.dims[0];
  auto sd = static_dims(t);
  const Tensor* step = ctx.input_value(1);
  std::optional<int64_t> window_len, frame_len;
  bool known = sd && step;
  if (ctx.has_input(2)) {
    auto wd = static_dims(ctx.input_type(2));
    if (wd && wd->size() == 1) window_len = (*wd)[0];
    else known = false;
  }
  if (ctx.has_input(3)) {
    if (const Tensor* v = ctx.input_value(3)) frame_len = read_scalar_int(*v, "frame_length");
    else known = false;
  }
  if (known) {
    StftSetup st = stft_setup(*sd, read_scalar_int(*step, "frame_step"), window_len, frame_len, onesided);
    s = shape_of({st.batch, st.frames, st.bins, 2});
  } else if (frame_len || window_len) {
    int64_t fl = frame_len ? *frame_len : *window_len;
    if (fl >= 1) s.dims[2] = known_dim(onesided ? fl / 2 + 1 : fl);
  }
  ctx.set_output(0, Type::tensor(t.elem, s));
}

}  // namespace

void register_dft(Registry& r) {
  add_versions(
      r, "", "DFT", {17}, {{{0}, kT1}, {{1}, kT2}},
      [](InferContext& ctx) { infer_dft(ctx, dft_options(ctx.attrs), ctx.attrs.get_int("axis", 1)); },
      [](const KernelInit& init) {
        DftOptions o = dft_options(init.attrs);
        int64_t axis = init.attrs.get_int("axis", 1);
        return make_kernel([o, axis](KernelContext& ctx) { run_dft(ctx, o, axis); });
      });
  add_versions(
      r, "", "DFT", {20}, {{{0}, kT1}, {{1}, kT2}, {{2}, {D::Int64}}},
      [](InferContext& ctx) {
        std::optional<int64_t> axis = -2;
        if (ctx.has_input(2)) {
          const Tensor* v = ctx.input_value(2);
          axis = v ? std::optional<int64_t>(read_scalar_int(*v, "axis")) : std::nullopt;
        }
        infer_dft(ctx, dft_options(ctx.attrs), axis);
      },
      [](const KernelInit& init) {
        DftOptions o = dft_options(init.attrs);
        return make_kernel([o](KernelContext& ctx) {
          int64_t axis = ctx.has_input(2) ? read_scalar_int(ctx.input(2), "axis") : -2;
          run_dft(ctx, o, axis);
        });
      });
  add_versions(
      r, "", "STFT", {17}, {{{0, 2}, kT1}, {{1, 3}, kT2}},
      [](InferContext& ctx) { infer_stft(ctx, ctx.attrs.get_int("onesided", 1) != 0); },
      [](const KernelInit& init) {
        bool onesided = init.attrs.get_int("onesided", 1) != 0;
        return make_kernel([onesided](KernelContext& ctx) { run_stft(ctx, onesided); });
      });
}

}  // namespace onyx::ops
