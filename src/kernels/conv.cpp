#include "kernels/conv.hpp"

#include <optional>
#include <unordered_map>

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

}  // namespace

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
    : shape_(shape), bias_(std::move(bias)), epilogue_(std::move(epilogue)),
      packs_(w, memory::desc(dnnl_conv_geometry(shape, 1, 1).weights, f32, shape.group > 1 ? tag::goihw : tag::oihw)) {}

std::array<int64_t, 2> PackedConv::out_hw(int64_t H, int64_t W) const { return conv_out_hw(shape_, H, W); }

double conv_macs(const ConvShape& s, int64_t N, int64_t H, int64_t W) {
  const auto o = conv_out_hw(s, H, W);
  return static_cast<double>(N) * static_cast<double>(o[0]) * static_cast<double>(o[1]) * static_cast<double>(s.M) *
         static_cast<double>(s.C / s.group) * static_cast<double>(s.kernel[0]) * static_cast<double>(s.kernel[1]);
}

void PackedConv::prepare(int64_t N, int64_t H, int64_t W) const {
  const SerialScope serial(runs_serially(macs(N, H, W)));
  plan(N, H, W);
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
  const SerialScope serial(runs_serially(macs(N, H, W)));
  const Plan& p = plan(N, H, W);
  auto& eng = cpu_engine();
  auto& st = thread_stream();
  memory xe(p.src[layout], eng, const_cast<float*>(x)), ye(p.dst[layout], eng, y);
  const bool convert_src = p.src[layout] != p.src_conv, convert_dst = p.dst[layout] != p.dst_conv;
  memory xc = convert_src ? thread_memory(0, p.src_conv) : xe, yc = convert_dst ? thread_memory(1, p.dst_conv) : ye;
  if (convert_src) p.src_in[layout](xe, xc);
  if (convert_dst && epilogue_.sum) p.dst_in[layout](ye, yc);
  execute(p, xc, yc);
  if (convert_dst) p.dst_out[layout](yc, ye);
  st.wait();
}

void PackedConv::run_nchw(const float* x, int64_t N, int64_t H, int64_t W, float* y) const { run(x, N, H, W, y, 1); }

void PackedConv::run_nhwc(const float* x, int64_t N, int64_t H, int64_t W, float* y) const { run(x, N, H, W, y, 0); }

}  // namespace onyx::kernels
