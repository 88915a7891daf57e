#include "kernels/int8_conv.hpp"

#include <string>
#include <unordered_map>

namespace onyx::kernels {

using dnnl::memory;
using tag = memory::format_tag;

namespace {

memory::data_type int8_type(bool is_signed) { return is_signed ? memory::data_type::s8 : memory::data_type::u8; }

}  // namespace

PackedInt8Conv::PackedInt8Conv(const int8_t* w, Int8ConvParams params)
    : params_(std::move(params)),
      packs_(w, memory::desc(dnnl_conv_geometry(params_.shape, 1, 1).weights, memory::data_type::s8,
                             params_.shape.group > 1 ? tag::goihw : tag::oihw)) {}

const PackedInt8Conv::Plan& PackedInt8Conv::plan(int64_t N, int64_t H, int64_t W) const {
  return plans_.get({N, H, W}, [&] {
    Plan p;
    const ConvShape& s = params_.shape;
    const auto o = conv_out_hw(s, H, W);
    const DnnlConvGeometry g = dnnl_conv_geometry(s, H, W);
    const memory::dims src_dims{N, s.C, H, W}, dst_dims{N, s.M, o[0], o[1]};
    const auto xt = int8_type(params_.x_signed), yt = int8_type(params_.y_signed);
    p.src = memory::desc(src_dims, xt, tag::nchw);
    p.dst = memory::desc(dst_dims, yt, tag::nchw);
    p.src_conv = memory::desc(src_dims, xt, tag::nhwc);
    p.dst_conv = memory::desc(dst_dims, yt, tag::nhwc);
    dnnl::primitive_attr attr;
    // Per output channel scales: the mask selects dst's dim 1.
    attr.set_output_scales(params_.scales.size() == 1 ? 0 : 1 << 1, params_.scales);
    if (params_.x_zero) attr.set_zero_points(DNNL_ARG_SRC, 0, {params_.x_zero});
    if (params_.y_zero) attr.set_zero_points(DNNL_ARG_DST, 0, {params_.y_zero});
    attr = own_scratchpad(attr);
    memory::desc w_any(g.weights, memory::data_type::s8, tag::any);
    try {
      auto d = params_.bias.empty()
                   ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                     dnnl::algorithm::convolution_direct, p.src_conv, w_any, p.dst_conv,
                                                     g.strides, g.dilations, g.pad_l, g.pad_r)
                   : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                     dnnl::algorithm::convolution_direct, p.src_conv, w_any,
                                                     memory::desc({s.M}, memory::data_type::s32, tag::a), p.dst_conv,
                                                     g.strides, g.dilations, g.pad_l, g.pad_r);
      dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
      // oneDNN's reference kernels (names starting "ref") are slower than the caller's own path.
      if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return p;
      p.primitive = dnnl::convolution_forward(pd);
      p.scratchpad = pd.scratchpad_desc();
      p.weights = packs_.get(pd.weights_desc());
      p.src_in = Reorder(p.src, p.src_conv);
      p.dst_out = Reorder(p.dst_conv, p.dst);
      p.ok = true;
    } catch (const dnnl::error&) {
      // No kernel for this case (an attribute or shape its int8 kernels lack): the caller's path.
    }
    return p;
  });
}

bool PackedInt8Conv::run(const void* x, int64_t N, int64_t H, int64_t W, void* y, bool nhwc) const {
  const SerialScope serial(runs_serially(conv_macs(params_.shape, N, H, W)));
  const Plan& p = plan(N, H, W);
  if (!p.ok) return false;
  auto& eng = cpu_engine();
  memory xe(nhwc ? p.src_conv : p.src, eng, const_cast<void*>(x)), ye(nhwc ? p.dst_conv : p.dst, eng, y);
  MemoryCharge scratch;
  memory xc = nhwc ? xe : thread_memory(0, p.src_conv, scratch), yc = nhwc ? ye : thread_memory(1, p.dst_conv, scratch);
  if (!nhwc) p.src_in(xe, xc);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xc}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, yc}};
  if (!params_.bias.empty())
    args.emplace(DNNL_ARG_BIAS, memory({{params_.shape.M}, memory::data_type::s32, tag::a}, eng,
                                       const_cast<int32_t*>(params_.bias.data())));
  run_primitive(p.primitive, p.scratchpad, std::move(args));
  if (!nhwc) p.dst_out(yc, ye);
  thread_stream().wait();
  return true;
}

}  // namespace onyx::kernels
