#include "kernels/conv.hpp"

#include <unordered_map>

namespace onyx::kernels {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

namespace {

// oneDNN's weight dims: (M, C, kh, kw), or (groups, M/g, C/g, kh, kw) for grouped convolutions.
memory::dims weight_dims(const ConvShape& s) {
  if (s.group > 1) return {s.group, s.M / s.group, s.C / s.group, s.kernel[0], s.kernel[1]};
  return {s.M, s.C, s.kernel[0], s.kernel[1]};
}

}  // namespace

PackedConv::PackedConv(const float* w, const ConvShape& shape, std::vector<float> bias, ConvEpilogue epilogue)
    : shape_(shape), bias_(std::move(bias)), epilogue_(std::move(epilogue)),
      packs_(w, memory::desc(weight_dims(shape), f32, shape.group > 1 ? tag::goihw : tag::oihw)) {}

std::array<int64_t, 2> PackedConv::out_hw(int64_t H, int64_t W) const {
  std::array<int64_t, 2> in{H, W}, out{};
  for (int i = 0; i < 2; ++i) {
    const int64_t span = (shape_.kernel[i] - 1) * shape_.dilations[i] + 1;
    out[i] = (in[i] + shape_.pads[i] + shape_.pads[i + 2] - span) / shape_.strides[i] + 1;
  }
  return out;
}

const PackedConv::Plan& PackedConv::plan(int64_t N, int64_t H, int64_t W) const {
  return plans_.get({N, H, W}, [&] {
    auto& eng = cpu_engine();
    const ConvShape& s = shape_;
    const auto o = out_hw(H, W);
    Plan p;
    p.src_nhwc = memory::desc({N, s.C, H, W}, f32, tag::nhwc);
    p.dst_nhwc = memory::desc({N, s.M, o[0], o[1]}, f32, tag::nhwc);
    p.src_nchw = memory::desc({N, s.C, H, W}, f32, tag::nchw);
    p.dst_nchw = memory::desc({N, s.M, o[0], o[1]}, f32, tag::nchw);
    memory::desc w_any(weight_dims(s), f32, tag::any);
    memory::desc b_md({s.M}, f32, tag::a);
    memory::dims strides{s.strides[0], s.strides[1]}, dil{s.dilations[0] - 1, s.dilations[1] - 1};
    memory::dims pad_l{s.pads[0], s.pads[1]}, pad_r{s.pads[2], s.pads[3]};
    // oneDNN wants the right/bottom padding that makes its output size formula land on ours.
    for (int i = 0; i < 2; ++i) {
      const int64_t in = i == 0 ? H : W, span = (s.kernel[i] - 1) * s.dilations[i] + 1;
      pad_r[i] = (o[i] - 1) * s.strides[i] + span - in - pad_l[i];
    }
    auto d = bias_.empty()
                 ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                                   p.src_nhwc, w_any, p.dst_nhwc, strides, dil, pad_l, pad_r)
                 : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                                   p.src_nhwc, w_any, b_md, p.dst_nhwc, strides, dil, pad_l, pad_r);
    dnnl::post_ops ops;
    if (epilogue_.sum) ops.append_sum(1.0f);
    for (const Eltwise& e : epilogue_.eltwise) ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
    p.primitive = dnnl::convolution_forward(pd);
    p.weights = packs_.get(pd.weights_desc());
    p.to_nhwc = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.src_nchw, eng, p.src_nhwc));
    p.to_nchw = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.dst_nhwc, eng, p.dst_nchw));
    if (epilogue_.sum) p.dst_to_nhwc = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.dst_nchw, eng, p.dst_nhwc));
    return p;
  });
}

void PackedConv::execute(const Plan& p, memory& src, memory& dst) const {
  auto& eng = cpu_engine();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dst}};
  if (!bias_.empty()) args.emplace(DNNL_ARG_BIAS, memory({{shape_.M}, f32, tag::a}, eng, const_cast<float*>(bias_.data())));
  p.primitive.execute(thread_stream(), args);
}

void PackedConv::run_nchw(const float* x, int64_t N, int64_t H, int64_t W, float* y) const {
  const Plan& p = plan(N, H, W);
  auto& eng = cpu_engine();
  auto& st = thread_stream();
  memory xn(p.src_nchw, eng, const_cast<float*>(x)), yn(p.dst_nchw, eng, y);
  memory xc(p.src_nhwc, eng), yc(p.dst_nhwc, eng);
  p.to_nhwc.execute(st, xn, xc);
  if (epilogue_.sum) p.dst_to_nhwc.execute(st, yn, yc);
  execute(p, xc, yc);
  p.to_nchw.execute(st, yc, yn);
  st.wait();
}

void PackedConv::run_nhwc(const float* x, int64_t N, int64_t H, int64_t W, float* y) const {
  const Plan& p = plan(N, H, W);
  auto& eng = cpu_engine();
  memory xc(p.src_nhwc, eng, const_cast<float*>(x)), yc(p.dst_nhwc, eng, y);
  execute(p, xc, yc);
  thread_stream().wait();
}

}  // namespace onyx::kernels
