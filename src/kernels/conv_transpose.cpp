#include "kernels/conv_transpose.hpp"

#include <unordered_map>

#include "base/error.hpp"

namespace onyx::kernels {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

namespace {

// Plain (row-major) layout of a rank-`rank` activation tensor: ncw, nchw, ncdhw.
tag plain_deconv_tag(size_t rank) { return rank == 3 ? tag::abc : rank == 4 ? tag::abcd : tag::abcde; }

// ONNX's W as oneDNN's deconvolution weights: logical (M, C, k...) stored C-major, or (group, M/g, C/g, k...)
// stored group, C/g, M/g, k....
memory::desc weight_desc(const ConvTransposeShape& s, tag layout_any = tag::undef) {
  const size_t r = s.kernel.size();
  memory::dims d;
  if (s.group > 1) d = {s.group, s.M / s.group, s.C / s.group};
  else d = {s.M, s.C};
  d.insert(d.end(), s.kernel.begin(), s.kernel.end());
  if (layout_any == tag::any) return memory::desc(d, kF32, tag::any);
  static const tag plain[2][3] = {{tag::bac, tag::bacd, tag::bacde}, {tag::acbd, tag::acbde, tag::acbdef}};
  return memory::desc(d, kF32, plain[s.group > 1 ? 1 : 0][r - 1]);
}

}  // namespace

PackedConvTranspose::PackedConvTranspose(const ConvTransposeShape& shape, const float* w)
    : shape_(shape), plain_weights_(weight_desc(shape)) {
  const size_t r = shape.kernel.size();
  if (r < 1 || r > 3 || shape.strides.size() != r || shape.dilations.size() != r || shape.group < 1 ||
      shape.C % shape.group != 0 || shape.M % shape.group != 0)
    fail("PackedConvTranspose: unsupported shape");
  if (w) packs_.emplace(w, plain_weights_);
}

const PackedConvTranspose::Plan* PackedConvTranspose::plan(const ConvTransposeSizes& sz) const {
  const std::optional<Plan>& entry = plans_.get(sz, [&]() -> std::optional<Plan> {
    const ConvTransposeShape& s = shape_;
    const size_t r = s.kernel.size();
    if (sz.in.size() != r || sz.out.size() != r || sz.pads_begin.size() != r || sz.N < 1) return std::nullopt;
    memory::dims src_dims{sz.N, s.C}, dst_dims{sz.N, s.M}, strides, dil, pad_l, pad_r;
    for (size_t i = 0; i < r; ++i) {
      if (sz.in[i] < 1 || sz.out[i] < 1) return std::nullopt;
      src_dims.push_back(sz.in[i]);
      dst_dims.push_back(sz.out[i]);
      strides.push_back(s.strides[i]);
      dil.push_back(s.dilations[i] - 1);
      pad_l.push_back(sz.pads_begin[i]);
      // oneDNN's output size is (in - 1) * stride + span - pad_l - pad_r: the trailing pad that lands on ours
      // (negative by output_padding, or where output_shape asks for more than the pads give).
      const int64_t span = (s.kernel[i] - 1) * s.dilations[i] + 1;
      pad_r.push_back((sz.in[i] - 1) * s.strides[i] + span - sz.out[i] - sz.pads_begin[i]);
    }
    auto& eng = cpu_engine();
    Plan p;
    p.src_plain = memory::desc(src_dims, kF32, plain_deconv_tag(r + 2));
    p.dst_plain = memory::desc(dst_dims, kF32, plain_deconv_tag(r + 2));
    const memory::desc src_any(src_dims, kF32, tag::any), dst_any(dst_dims, kF32, tag::any);
    const memory::desc w_any = weight_desc(s, tag::any), b_md({s.M}, kF32, tag::a);
    dnnl::deconvolution_forward::primitive_desc pd;
    try {
      using fwd = dnnl::deconvolution_forward;
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::deconvolution_direct;
      auto d = sz.bias ? fwd::desc(prop, alg, src_any, w_any, b_md, dst_any, strides, dil, pad_l, pad_r)
                       : fwd::desc(prop, alg, src_any, w_any, dst_any, strides, dil, pad_l, pad_r);
      pd = fwd::primitive_desc(d, own_scratchpad(), eng);
    } catch (const dnnl::error&) {
      return std::nullopt;  // a geometry oneDNN does not take (it checks pads and sizes)
    }
    p.primitive = dnnl::deconvolution_forward(pd);
    p.scratchpad = pd.scratchpad_desc();
    p.src = pd.src_desc();
    p.dst = pd.dst_desc();
    p.weights = pd.weights_desc();
    if (p.src != p.src_plain) p.to_src = Reorder(p.src_plain, p.src);
    if (p.dst != p.dst_plain) p.from_dst = Reorder(p.dst, p.dst_plain);
    if (packs_) p.packed = packs_->get(p.weights);
    else if (p.weights != plain_weights_)
      p.pack_weights = Reorder(plain_weights_, p.weights);
    return p;
  });
  return entry ? &*entry : nullptr;
}

void PackedConvTranspose::run_nchw(const ConvTransposeSizes& sz, const float* x, const float* w, const float* bias,
                                   float* y) const {
  const Plan* p = plan(sz);
  if (!p) fail("PackedConvTranspose: sizes oneDNN does not take");
  auto& eng = cpu_engine();
  auto& st = thread_stream();
  memory xs(p->src_plain, eng, const_cast<float*>(x)), yd(p->dst_plain, eng, y);
  memory src = xs, dst = yd, weights = p->packed;
  MemoryCharge scratch;
  if (p->to_src) {
    src = thread_memory(0, p->src, scratch);
    p->to_src(xs, src);
  }
  if (p->from_dst) dst = thread_memory(1, p->dst, scratch);
  if (!packs_) {
    memory wp(plain_weights_, eng, const_cast<float*>(w));
    weights = wp;
    if (p->pack_weights) {
      weights = thread_memory(2, p->weights, scratch);
      p->pack_weights(wp, weights);
    }
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
  if (sz.bias) args.emplace(DNNL_ARG_BIAS, memory({{shape_.M}, kF32, tag::a}, eng, const_cast<float*>(bias)));
  run_primitive(p->primitive, p->scratchpad, std::move(args));
  if (p->from_dst) p->from_dst(dst, yd);
  st.wait();
}

}  // namespace onyx::kernels
