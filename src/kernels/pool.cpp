#include "kernels/pool.hpp"

namespace onyx::kernels {

using dnnl::memory;
using tag = memory::format_tag;

Pool2d::Pool2d(const PoolShape& s) : shape_(s) {
  const auto f32 = memory::data_type::f32;
  const tag layout = s.channels_last ? tag::nhwc : tag::nchw;
  memory::desc src({s.N, s.C, s.in[0], s.in[1]}, f32, layout), dst({s.N, s.C, s.out[0], s.out[1]}, f32, layout);
  const auto alg = s.kind == PoolShape::Kind::Max               ? dnnl::algorithm::pooling_max
                   : s.kind == PoolShape::Kind::AverageIncludePad ? dnnl::algorithm::pooling_avg_include_padding
                                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, {s.strides[0], s.strides[1]},
                                   {s.kernel[0], s.kernel[1]}, {s.dilations[0] - 1, s.dilations[1] - 1},
                                   {s.pads[0], s.pads[1]}, {s.pads[2], s.pads[3]});
  dnnl::pooling_v2_forward::primitive_desc pd(d, own_scratchpad(), cpu_engine());
  primitive_ = dnnl::pooling_v2_forward(pd);
  scratchpad_ = pd.scratchpad_desc();
}

void Pool2d::run(const float* x, float* y) const {
  const PoolShape& s = shape_;
  const auto f32 = memory::data_type::f32;
  auto& eng = cpu_engine();
  const tag layout = s.channels_last ? tag::nhwc : tag::nchw;
  memory src({{s.N, s.C, s.in[0], s.in[1]}, f32, layout}, eng, const_cast<float*>(x));
  memory dst({{s.N, s.C, s.out[0], s.out[1]}, f32, layout}, eng, y);
  run_primitive(primitive_, scratchpad_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  thread_stream().wait();
}

}  // namespace onyx::kernels
