#include "kernels/conv.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "base/error.hpp"
#include "base/target_clones.hpp"

namespace onyx::kernels {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

namespace {

// Whether oneDNN's Winograd (F(2x2,3x3) or F(4x4,3x3), AVX-512 only, on nChw16c) should replace the direct
// kernel for `pixels` output pixels (N * OH * OW). Measured per layer on ISNet (1024x1024 input), VGG-19 and
// DenseNet-121 against the NHWC direct kernel, layout conversions included (Intel Xeon, AVX-512): F(4x4,3x3),
// which oneDNN takes for the wider layers, runs 2-2.7x faster from 56x56 outputs on; F(2x2,3x3) 1.2-1.4x faster
// with M >= 64, but with M = 16 or 32 no faster at 64x64 outputs and up to 2.5x slower at 256x256 and more. Also
// slower for C < 16, and 2.2-2.4x slower when the output's 16-channel blocks number a prime >= 11 (M = 176, 208:
// its output blocking then degrades to single blocks). Its weights cost more to make: oneDNN transforms them
// single-threaded, 10-40 ns per weight for F(2x2,3x3) and 150-280 ns for F(4x4,3x3) (ISNet's 256x1024x3x3:
// 0.34 s), into 1.8-4x the memory, while a run saves time in proportion to the output's pixels: at 56x56-64x64
// outputs F(4x4,3x3) repays its transform within 3-6 runs (VGG-19: 0.14 s more at creation, 22% less per run),
// at 128x128 within about one; at 28x28 it would take dozens. Results differ from the direct kernel's by about
// 2e-6 of the output's scale (the transforms round differently).
bool winograd_pays(const ConvShape& s, int64_t pixels) {
  using Pair = std::array<int64_t, 2>;
  if (pixels < 56 * 56 || s.group != 1 || s.kernel != Pair{3, 3} || s.strides != Pair{1, 1} ||
      s.dilations != Pair{1, 1} || s.C < 16 || s.M < 64)
    return false;
  const int64_t blocks = (s.M + 15) / 16;
  bool prime = blocks >= 11;
  for (int64_t d = 2; prime && d * d <= blocks; ++d) prime = blocks % d != 0;
  return !prime;
}

// One epilogue step on one value, as oneDNN defines its eltwise algorithms (those Epilogue steps use).
float eltwise(const Eltwise& e, float v) {
  using A = dnnl::algorithm;
  switch (e.alg) {
    case A::eltwise_relu: return v > 0 ? v : e.alpha * v;
    case A::eltwise_logistic: return 1.0f / (1.0f + std::exp(-v));
    case A::eltwise_tanh: return std::tanh(v);
    case A::eltwise_elu: return v > 0 ? v : e.alpha * std::expm1(v);
    case A::eltwise_hardswish: return v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    case A::eltwise_gelu_erf: return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    case A::eltwise_clip: return std::min(std::max(v, e.alpha), e.beta);
    case A::eltwise_linear: return e.alpha * v + e.beta;
    default: fail("convolution epilogue: eltwise algorithm ", static_cast<int>(e.alg), " has no direct form");
  }
}

std::atomic<uint64_t> direct_runs{0};

// The direct loops' blocks: 16 output channels (one AVX-512 register, two AVX2 ones) by 4 output pixels of a row,
// so that each weight vector loaded serves 4 pixels.
constexpr int64_t kDirectM = 16, kDirectPixels = 4;

int64_t padded_group_channels(const ConvShape& s) { return (s.M / s.group + kDirectM - 1) / kDirectM * kDirectM; }

// Vector values never cross a call: load16 is always inlined, since the clones below would otherwise call one copy
// of it with different ABIs for its 64-byte result (AVX-512 registers against memory); hence GCC's ABI note is
// silenced here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// 16 floats as one value: one AVX-512 register, two AVX2 ones, four SSE ones, by the clone's target. The
// accumulators of a block are named values so that they live in registers for the whole sum.
typedef float Floats16 __attribute__((vector_size(64)));

// Through a reference rather than a return value: clang refuses to return a 64-byte vector from a function
// built for a target without AVX-512 (the "default" clone below), as that would change the ABI.
__attribute__((always_inline)) inline void load16(Floats16& v, const float* p) { __builtin_memcpy(&v, p, sizeof v); }

// Direct convolution. wt: (group, C/group, kh, kw, Mp) and bias (group, Mp) with Mp = M/group rounded up to 16
// (zeros past M/group), so that the inner loops have fixed trip counts. x and y are NHWC or NCHW; with `sum`, y
// holds the addend on entry. `offsets` has room for one entry per tap of a group (C/group * kh * kw).
ONYX_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void direct_conv(const ConvShape& s, const float* __restrict wt, const float* __restrict bias, const Epilogue& epilogue,
                 const float* __restrict x, int64_t N, int64_t H, int64_t W, float* __restrict y, bool nhwc,
                 int64_t* __restrict offsets) {
  static_assert(kDirectM == 16 && kDirectPixels == 4, "the block below is written for 16 x 4");
  const auto o = conv_out_hw(s, H, W);
  const int64_t OH = o[0], OW = o[1], G = s.group, Cg = s.C / G, Mg = s.M / G, KH = s.kernel[0], KW = s.kernel[1];
  const int64_t Mp = padded_group_channels(s), taps = Cg * KH * KW;
  // Element strides of channel, row and column in each layout.
  const int64_t xc = nhwc ? 1 : H * W, xh = nhwc ? W * s.C : W, xw = nhwc ? s.C : 1;
  const int64_t yc = nhwc ? 1 : OH * OW, yh = nhwc ? OW * s.M : OW, yw = nhwc ? s.M : 1;
  // Where each tap reads, from the window's first element; and from one pixel to the next.
  for (int64_t c = 0, t = 0; c < Cg; ++c)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) offsets[t++] = c * xc + kh * s.dilations[0] * xh + kw * s.dilations[1] * xw;
  const int64_t step = s.strides[1] * xw;
  for (int64_t n = 0; n < N; ++n) {
    const float* xn = x + n * s.C * H * W;
    float* yn = y + n * s.M * OH * OW;
    for (int64_t g = 0; g < G; ++g)
      for (int64_t mb = 0; mb < Mg; mb += kDirectM)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow0 = 0; ow0 < OW; ow0 += kDirectPixels) {
            const int64_t pixels = std::min(kDirectPixels, OW - ow0);
            const int64_t ih0 = oh * s.strides[0] - s.pads[0], iw0 = ow0 * s.strides[1] - s.pads[1];
            const float* wg = wt + g * taps * Mp + mb;
            Floats16 a0;
            load16(a0, bias + g * Mp + mb);
            Floats16 a1 = a0, a2 = a0, a3 = a0;
            const bool inside = pixels == kDirectPixels && ih0 >= 0 && ih0 + (KH - 1) * s.dilations[0] < H &&
                                iw0 >= 0 && iw0 + (kDirectPixels - 1) * s.strides[1] + (KW - 1) * s.dilations[1] < W;
            if (inside) {
              const float* xb = xn + g * Cg * xc + ih0 * xh + iw0 * xw;
              for (int64_t t = 0; t < taps; ++t) {
                const float* xp = xb + offsets[t];
                Floats16 w;
                load16(w, wg + t * Mp);
                a0 += xp[0] * w;
                a1 += xp[step] * w;
                a2 += xp[2 * step] * w;
                a3 += xp[3 * step] * w;
              }
            } else {
              // A window over the padding (or a row's last, partial block): each tap's pixels checked.
              for (int64_t c = 0; c < Cg; ++c) {
                const float* xg = xn + (g * Cg + c) * xc;
                for (int64_t kh = 0; kh < KH; ++kh) {
                  const int64_t ih = ih0 + kh * s.dilations[0];
                  if (ih < 0 || ih >= H) continue;
                  for (int64_t kw = 0; kw < KW; ++kw) {
                    Floats16 w;
                    load16(w, wg + ((c * KH + kh) * KW + kw) * Mp);
                    float v[kDirectPixels];
                    for (int64_t p = 0; p < kDirectPixels; ++p) {
                      const int64_t iw = iw0 + p * s.strides[1] + kw * s.dilations[1];
                      v[p] = p < pixels && iw >= 0 && iw < W ? xg[ih * xh + iw * xw] : 0.0f;
                    }
                    a0 += v[0] * w;
                    a1 += v[1] * w;
                    a2 += v[2] * w;
                    a3 += v[3] * w;
                  }
                }
              }
            }
            const Floats16 acc[kDirectPixels] = {a0, a1, a2, a3};
            const int64_t ms = std::min(kDirectM, Mg - mb);
            for (int64_t p = 0; p < pixels; ++p) {
              float* yp = yn + (g * Mg + mb) * yc + oh * yh + (ow0 + p) * yw;
              for (int64_t j = 0; j < ms; ++j) {
                float r = acc[p][j] + (epilogue.sum ? yp[j * yc] : 0.0f);
                for (const Eltwise& e : epilogue.eltwise) r = eltwise(e, r);
                yp[j * yc] = r;
              }
            }
          }
  }
}

#pragma GCC diagnostic pop

}  // namespace

uint64_t direct_conv_runs() { return direct_runs.load(std::memory_order_relaxed); }

bool conv_runs_direct(const ConvShape& s, int64_t N, int64_t H, int64_t W) {
  // Block-taps of the direct loops (16 output channels by 4 pixels, times the window's taps). Measured on single
  // 1-D Conv models (NCHW, one thread, the node's whole time): 258 -> 16 channels over 8 frames (516 block-taps)
  // 2.3-2.8 us direct against 5 us on oneDNN; 64 -> 64 over 32 frames (2,048) even at 6-7 us; 64 -> 64 over 128
  // (8,192) 22 us against 17; depthwise ones (one useful channel in 16) lose from ~1,000 on. silero_vad_legacy (its
  // 1-D layers over 1-8 frames) runs ~20% faster per call with this bound; other corpus models are unchanged.
  const auto o = conv_out_hw(s, H, W);
  const double rows = static_cast<double>(N) * static_cast<double>(o[0]);
  const double pixel_blocks = rows * static_cast<double>((o[1] + kDirectPixels - 1) / kDirectPixels);
  const double taps = static_cast<double>(s.C) * static_cast<double>(s.kernel[0]) * static_cast<double>(s.kernel[1]);
  return pixel_blocks * taps * static_cast<double>(padded_group_channels(s) / kDirectM) <= 1024.0;
}

std::array<int64_t, 2> conv_out_hw(const ConvShape& s, int64_t H, int64_t W) {
  std::array<int64_t, 2> in{H, W}, out{};
  for (int i = 0; i < 2; ++i) {
    const int64_t span = (s.kernel[i] - 1) * s.dilations[i] + 1;
    out[i] = (in[i] + s.pads[i] + s.pads[i + 2] - span) / s.strides[i] + 1;
  }
  return out;
}

DnnlConvGeometry dnnl_conv_geometry(const ConvShape& s, int64_t H, int64_t W) {
  DnnlConvGeometry g;
  g.weights = s.group > 1 ? memory::dims{s.group, s.M / s.group, s.C / s.group, s.kernel[0], s.kernel[1]}
                          : memory::dims{s.M, s.C, s.kernel[0], s.kernel[1]};
  g.strides = {s.strides[0], s.strides[1]};
  g.dilations = {s.dilations[0] - 1, s.dilations[1] - 1};
  g.pad_l = {s.pads[0], s.pads[1]};
  g.pad_r = {s.pads[2], s.pads[3]};
  const auto o = conv_out_hw(s, H, W);
  for (int i = 0; i < 2; ++i) {
    const int64_t in = i == 0 ? H : W, span = (s.kernel[i] - 1) * s.dilations[i] + 1;
    g.pad_r[static_cast<size_t>(i)] = (o[i] - 1) * s.strides[i] + span - in - s.pads[i];
  }
  return g;
}

PackedConv::PackedConv(const float* w, const ConvShape& shape, std::vector<float> bias, Epilogue epilogue)
    : w_(w), shape_(shape), bias_(std::move(bias)), epilogue_(std::move(epilogue)),
      packs_(w, memory::desc(dnnl_conv_geometry(shape, 1, 1).weights, f32, shape.group > 1 ? tag::goihw : tag::oihw)) {}

std::array<int64_t, 2> PackedConv::out_hw(int64_t H, int64_t W) const { return conv_out_hw(shape_, H, W); }

double conv_macs(const ConvShape& s, int64_t N, int64_t H, int64_t W) {
  const auto o = conv_out_hw(s, H, W);
  return static_cast<double>(N) * static_cast<double>(o[0]) * static_cast<double>(o[1]) * static_cast<double>(s.M) *
         static_cast<double>(s.C / s.group) * static_cast<double>(s.kernel[0]) * static_cast<double>(s.kernel[1]);
}

void PackedConv::prepare(int64_t N, int64_t H, int64_t W) const {
  if (conv_runs_direct(shape_, N, H, W)) {
    direct_weights();
    return;
  }
  const SerialScope serial(runs_serially(macs(N, H, W)));
  plan(N, H, W);
}

const std::vector<float>& PackedConv::direct_weights() const {
  std::call_once(direct_once_, [&] {
    const ConvShape& s = shape_;
    const int64_t G = s.group, Mg = s.M / G, Cg = s.C / G, K = s.kernel[0] * s.kernel[1], Mp = padded_group_channels(s);
    const int64_t weights = G * Cg * K * Mp;
    direct_w_.assign(static_cast<size_t>(weights + G * Mp), 0.0f);
    // From (M, C/group, kh, kw): output channel g * Mg + m, input channel c of the group, tap k.
    for (int64_t g = 0; g < G; ++g)
      for (int64_t m = 0; m < Mg; ++m) {
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t k = 0; k < K; ++k)
            direct_w_[static_cast<size_t>(((g * Cg + c) * K + k) * Mp + m)] = w_[((g * Mg + m) * Cg + c) * K + k];
        if (!bias_.empty()) direct_w_[static_cast<size_t>(weights + g * Mp + m)] = bias_[static_cast<size_t>(g * Mg + m)];
      }
  });
  return direct_w_;
}

const PackedConv::Plan& PackedConv::plan(int64_t N, int64_t H, int64_t W) const {
  return plans_.get({N, H, W}, [&] {
    auto& eng = cpu_engine();
    const ConvShape& s = shape_;
    const auto o = out_hw(H, W);
    Plan p;
    const memory::dims src_dims{N, s.C, H, W}, dst_dims{N, s.M, o[0], o[1]};
    p.src[0] = memory::desc(src_dims, f32, tag::nhwc);
    p.dst[0] = memory::desc(dst_dims, f32, tag::nhwc);
    p.src[1] = memory::desc(src_dims, f32, tag::nchw);
    p.dst[1] = memory::desc(dst_dims, f32, tag::nchw);
    const DnnlConvGeometry g = dnnl_conv_geometry(s, H, W);
    memory::desc w_any(g.weights, f32, tag::any);
    memory::desc b_md({s.M}, f32, tag::a);
    dnnl::primitive_attr attr = own_scratchpad(epilogue_.attr());
    auto make = [&](dnnl::algorithm alg, const memory::desc& src, const memory::desc& dst) {
      auto d = bias_.empty()
                   ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src, w_any, dst, g.strides,
                                                     g.dilations, g.pad_l, g.pad_r)
                   : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src, w_any, b_md, dst,
                                                     g.strides, g.dilations, g.pad_l, g.pad_r);
      return dnnl::convolution_forward::primitive_desc(d, attr, eng);
    };
    std::optional<dnnl::convolution_forward::primitive_desc> pd;
    if (winograd_pays(s, N * o[0] * o[1])) {
      try {
        p.src_conv = memory::desc(src_dims, f32, tag::nChw16c);
        p.dst_conv = memory::desc(dst_dims, f32, tag::nChw16c);
        pd = make(dnnl::algorithm::convolution_winograd, p.src_conv, p.dst_conv);
      } catch (const dnnl::error&) {
        // Not offered here (no AVX-512, or padding or an epilogue it lacks): the direct kernel.
      }
    }
    if (!pd) {
      p.src_conv = p.src[0];
      p.dst_conv = p.dst[0];
      pd = make(dnnl::algorithm::convolution_direct, p.src_conv, p.dst_conv);
    }
    p.primitive = dnnl::convolution_forward(*pd);
    p.scratchpad = pd->scratchpad_desc();
    p.weights = packs_.get(pd->weights_desc());
    for (int l = 0; l < 2; ++l) {
      if (p.src[l] != p.src_conv) p.src_in[l] = Reorder(p.src[l], p.src_conv);
      if (p.dst[l] != p.dst_conv) {
        p.dst_out[l] = Reorder(p.dst_conv, p.dst[l]);
        if (epilogue_.sum) p.dst_in[l] = Reorder(p.dst[l], p.dst_conv);
      }
    }
    return p;
  });
}

void PackedConv::execute(const Plan& p, memory& src, memory& dst) const {
  auto& eng = cpu_engine();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dst}};
  if (!bias_.empty()) args.emplace(DNNL_ARG_BIAS, memory({{shape_.M}, f32, tag::a}, eng, const_cast<float*>(bias_.data())));
  run_primitive(p.primitive, p.scratchpad, std::move(args));
}

// layout: 0 NHWC, 1 NCHW (the Plan's index).
void PackedConv::run(const float* x, int64_t N, int64_t H, int64_t W, float* y, int layout) const {
  if (conv_runs_direct(shape_, N, H, W)) {
    const std::vector<float>& wb = direct_weights();
    const int64_t group_weights = shape_.C * shape_.kernel[0] * shape_.kernel[1] * padded_group_channels(shape_);
    thread_local std::vector<int64_t> offsets;
    offsets.resize(static_cast<size_t>(shape_.C / shape_.group * shape_.kernel[0] * shape_.kernel[1]));
    direct_conv(shape_, wb.data(), wb.data() + group_weights, epilogue_, x, N, H, W, y, layout == 0, offsets.data());
    direct_runs.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const SerialScope serial(runs_serially(macs(N, H, W)));
  const Plan& p = plan(N, H, W);
  auto& eng = cpu_engine();
  auto& st = thread_stream();
  memory xe(p.src[layout], eng, const_cast<float*>(x)), ye(p.dst[layout], eng, y);
  const bool convert_src = p.src[layout] != p.src_conv, convert_dst = p.dst[layout] != p.dst_conv;
  MemoryCharge scratch;
  memory xc = convert_src ? thread_memory(0, p.src_conv, scratch) : xe;
  memory yc = convert_dst ? thread_memory(1, p.dst_conv, scratch) : ye;
  if (convert_src) p.src_in[layout](xe, xc);
  if (convert_dst && epilogue_.sum) p.dst_in[layout](ye, yc);
  execute(p, xc, yc);
  if (convert_dst) p.dst_out[layout](yc, ye);
  st.wait();
}

void PackedConv::run_nchw(const float* x, int64_t N, int64_t H, int64_t W, float* y) const { run(x, N, H, W, y, 1); }

void PackedConv::run_nhwc(const float* x, int64_t N, int64_t H, int64_t W, float* y) const { run(x, N, H, W, y, 0); }

}  // namespace onyx::kernels
