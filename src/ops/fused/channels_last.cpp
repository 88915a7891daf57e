// ai.onyx (version 1) channels-last ops, made by the optimizer's layout pass (src/opt/channels_last.cpp) so that
// chains of convolutions and pools keep their activations in NHWC, the layout oneDNN's fastest kernels read, and
// convert only at the chain's edges:
//   NhwcConv(X, W, B?, Z?) — X [N, H, W, C], W and B as Conv's (W in its ONNX layout [M, C/group, kh, kw]), Z
//     [N, OH, OW, M] optional; attributes: Conv's (2-D), and optionally FusedConv's `activation` and
//     `activation_params`. Y [N, OH, OW, M] = activation(Conv(X, W, B) + Z), in NHWC.
//   NhwcMaxPool(X) / NhwcAveragePool(X) — MaxPool-22 (one output) / AveragePool-22 on X [N, H, W, C], in NHWC.
//   NhwcQLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?) — QLinearConv-10
//     (2-D) on x [N, H, W, C] (8-bit), y [N, OH, OW, M] in NHWC; the other inputs and the attributes as QLinearConv's.
// The reference kernels transpose to NCHW, run the standard ops' reference kernels and transpose back; the fast
// ones run oneDNN on the NHWC tensors in place, and the NhwcConv runs oneDNN does not take go the reference's way
// with Conv's blocked GEMM.
#include <cstring>
#include <limits>
#include <mutex>

#include "kernels/conv.hpp"
#include "kernels/pool.hpp"
#include "ops/fused/as_standard.hpp"
#include "ops/fused/fused.hpp"
#include "ops/nn/conv_epilogue.hpp"
#include "ops/nn/pool_fast.hpp"
#include "ops/nn/window.hpp"
#include "ops/quant/qlinear_conv.hpp"
#include "ir/tensor_alloc.hpp"

namespace onyx::ops {

// out[i] = in[perm[i]] for dims; a rank-4 tensor's elements moved to that order (any element type of whole bytes).
Tensor permute4(const Tensor& t, const std::array<int64_t, 4>& perm) {
  const Dims& d = t.dims();
  if (d.size() != 4) fail("expected a rank-4 tensor, got shape ", shape_of(d).to_string());
  Dims od(4);
  for (int i = 0; i < 4; ++i) od[i] = d[perm[i]];
  Tensor out = Tensor::allocate(t.dtype(), od);
  if (out.element_count() == 0) return out;  // an empty tensor has no buffer to offset
  const size_t es = static_cast<size_t>(dtype_bits(t.dtype()) / 8);
  std::array<int64_t, 4> in_stride{d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}, st{};
  for (int i = 0; i < 4; ++i) st[i] = in_stride[perm[i]];
  const char* src = t.bytes().data();
  char* dst = out.mutable_data<char>();
  for (int64_t a = 0; a < od[0]; ++a)
    for (int64_t b = 0; b < od[1]; ++b)
      for (int64_t c = 0; c < od[2]; ++c) {
        const char* s = src + (a * st[0] + b * st[1] + c * st[2]) * es;
        for (int64_t e = 0; e < od[3]; ++e, dst += es) std::memcpy(dst, s + e * st[3] * es, es);
      }
  return out;
}

namespace {

constexpr int kConvVersion = 22, kPoolVersion = 22;
constexpr std::array<int64_t, 4> kToNchw{0, 3, 1, 2}, kToNhwc{0, 2, 3, 1};

// A type with its rank-4 dims permuted (unchanged when the rank is not known to be 4).
Type permuted(const Type& t, const std::array<int64_t, 4>& perm) {
  Type out = t;
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known || t.shape.dims.size() != 4) return out;
  for (int i = 0; i < 4; ++i) out.shape.dims[i] = t.shape.dims[perm[i]];
  return out;
}

// Inference: the standard op's, on the NCHW view of input 0 and the first `standard_inputs` inputs.
void infer_channels_last(InferContext& ctx, const OpDef& def, size_t standard_inputs) {
  if (ctx.has_input(0) && ctx.input_type(0).shape.rank_known && ctx.input_type(0).shape.dims.size() != 4)
    ctx.error(cat("X must have rank 4 [N, H, W, C], got ", ctx.input_type(0).shape.to_string()));
  InferContext inner = ctx;
  inner.opset = def.since_version;
  Type x;
  if (ctx.has_input(0)) {
    x = permuted(ctx.input_type(0), kToNchw);
    inner.input_types[0] = &x;
  }
  if (inner.input_types.size() > standard_inputs) {
    inner.input_types.resize(standard_inputs);
    inner.input_values.resize(standard_inputs);
    inner.input_dim_values.resize(standard_inputs);
  }
  def.infer(inner);
  ctx.output_types = std::move(inner.output_types);
  for (Type& t : ctx.output_types) t = permuted(t, kToNhwc);
}

class NhwcConvKernel : public Kernel {
 public:
  explicit NhwcConvKernel(const KernelInit& init) : node_(init.node), add_(init.node) {
    conv_ = make_unpacked_conv(init);
    if (init.attrs.has("activation")) act_ = std::make_unique<ActivationStep>(init);
    prepare_fast(init);
  }

  void run(KernelContext& ctx) override {
    if (fast_ && fast_run(ctx)) return;
    run_in_steps(ctx);
  }

  // W is packed for the static input shape: a run with that W and shape takes the fast path, which reads the pack.
  bool keeps_copy_of_input(size_t i) const override { return i == 1 && prepared_; }

 private:
  void prepare_fast(const KernelInit& init) {
    if (init.reference_only) return;
    const Tensor* w = init.input_value(1);
    if (!w || w->dtype() != DataType::Float || w->dims().size() != 4 || w->element_count() == 0) return;
    const bool has_b = init.node.inputs.size() > 2 && init.node.inputs[2];
    const Tensor* b = has_b ? init.input_value(2) : nullptr;
    if (has_b && (!b || b->dtype() != DataType::Float || b->dims() != Dims{w->dims()[0]})) return;
    kernels::Epilogue epilogue;
    epilogue.sum = init.node.inputs.size() > 3 && init.node.inputs[3];
    if (act_) {
      auto e = eltwise_of(*act_);
      if (!e) return;
      epilogue.eltwise = std::move(*e);
    }
    attrs_ = nn::read_window_attrs(init.attrs, true, false);
    group_ = init.attrs.get_int("group", 1);
    if (group_ < 1 || w->dims()[0] % group_ != 0) return;
    if (attrs_.kernel.empty()) attrs_.kernel = {w->dims()[2], w->dims()[3]};
    if (attrs_.kernel != Dims{w->dims()[2], w->dims()[3]}) return;
    w_ = w;
    b_ = b;
    if (b) bias_.assign(b->data<float>(), b->data<float>() + b->element_count());
    epilogue_ = std::move(epilogue);
    fast_ = true;
    // Static input shapes get their primitive now, not on the first run.
    const Type* x = init.input_types.empty() ? nullptr : init.input_types[0];
    std::optional<Dims> xd = x && x->elem == DataType::Float ? static_dims(*x) : std::nullopt;
    if (!xd || xd->size() != 4 || (*xd)[3] != group_ * w->dims()[1] || (*xd)[0] <= 0) return;
    const Dims& d = *xd;
    try {
      packed({d[1], d[2]}).prepare(d[0], d[1], d[2]);
      prepared_ = epilogue_.sum ? static_z(init, d) : true;
    } catch (const Error&) {
      // An unusable window is reported by the run, with the input it gets.
    }
  }

  // Whether Z's inferred type is the float32 output shape the fast path takes for input dims `d`.
  bool static_z(const KernelInit& init, const Dims& d) const {
    const Type* z = init.input_types.size() > 3 ? init.input_types[3] : nullptr;
    if (!z || z->elem != DataType::Float) return false;
    nn::Window g = nn::make_window(attrs_, {d[1], d[2]});
    return static_dims(*z) == Dims{d[0], g.out[0], g.out[1], w_->dims()[0]};
  }

  const kernels::PackedConv& packed(const Dims& hw) {
    nn::Window g = nn::make_window(attrs_, hw);
    std::array<int64_t, 4> pads{g.pads[0], g.pads[1], g.pads[2], g.pads[3]};
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = convs_.find(pads);
    if (it != convs_.end()) return *it->second;
    kernels::ConvShape s;
    s.C = w_->dims()[1] * group_;
    s.M = w_->dims()[0];
    s.group = group_;
    s.kernel = {g.kernel[0], g.kernel[1]};
    s.strides = {g.strides[0], g.strides[1]};
    s.dilations = {g.dilations[0], g.dilations[1]};
    s.pads = pads;
    auto conv = std::make_unique<kernels::PackedConv>(w_->data<float>(), s, bias_, epilogue_);
    return *convs_.emplace(pads, std::move(conv)).first->second;
  }

  // False when this run's inputs are not the case the fast kernel was made for.
  bool fast_run(KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const bool same_b = b ? (b_ && b->bytes().data() == b_->bytes().data()) : !b_;
    if (x.dtype() != DataType::Float || x.dims().size() != 4 || ctx.input(1).bytes().data() != w_->bytes().data() ||
        !same_b || x.dims()[3] != group_ * w_->dims()[1] || x.dims()[0] == 0 || ctx.has_input(3) != epilogue_.sum)
      return false;
    const Dims hw{x.dims()[1], x.dims()[2]};
    nn::Window g;
    try {
      g = nn::make_window(attrs_, hw);
    } catch (const Error&) {
      return false;
    }
    const Dims out{x.dims()[0], g.out[0], g.out[1], w_->dims()[0]};
    if (epilogue_.sum) {
      const Tensor& z = ctx.input(3);
      if (z.dtype() != DataType::Float || z.dims() != out) return false;
    }
    const kernels::PackedConv& conv = packed(hw);
    // The sum post-op adds the convolution to what y holds: Z. A Z that dies here (and shares its buffer with
    // nothing, so not with x) is y itself; otherwise y starts as a copy of Z.
    Tensor* y = epilogue_.sum ? ctx.reuse_input(3, 0, DataType::Float, out) : nullptr;
    if (!y) {
      ctx.set_output(0, allocate_for_overwrite(DataType::Float, out));
      y = &ctx.outputs()[0].tensor;
      if (epilogue_.sum) std::memcpy(y->mutable_data<char>(), ctx.input(3).bytes().data(), y->bytes().size());
    }
    conv.run_nhwc(x.data<float>(), x.dims()[0], x.dims()[1], x.dims()[2], y->mutable_data<float>());
    return true;
  }

  // In NCHW: the convolution, the sum and the activation one kernel after another, as the reference defines them.
  void run_in_steps(KernelContext& ctx) {
    const Datum x = Datum::of(permute4(ctx.input(0), kToNchw));
    std::vector<const Datum*> in{&x};
    for (size_t i = 1; i < 3; ++i) in.push_back(ctx.has_input(i) ? &ctx.input_datum(i) : nullptr);
    std::vector<Datum> y = run_on(*conv_, node_, kConvVersion, std::move(in), 1);
    if (y.empty() || !y[0].is_tensor()) ctx.error("the convolution gave no tensor");
    if (ctx.has_input(3)) {
      const Datum z = Datum::of(permute4(ctx.input(3), kToNchw));
      if (z.tensor.dims() != y[0].tensor.dims())
        ctx.error(cat("Z has shape ", shape_of(ctx.input(3).dims()).to_string(), "; the convolution gives ",
                      permuted(Type::tensor(y[0].tensor.dtype(), shape_of(y[0].tensor.dims())), kToNhwc).shape.to_string()));
      y[0] = add_.run(y[0], z);
    }
    Datum r = act_ ? act_->run(y[0]) : std::move(y[0]);
    ctx.set_output(0, permute4(r.tensor, kToNhwc));
  }

  const Node& node_;
  std::unique_ptr<Kernel> conv_;
  std::unique_ptr<ActivationStep> act_;
  AddStep add_;
  // The fast path: oneDNN on NHWC with W packed once per padding (auto_pad SAME pads depend on the input size).
  bool fast_ = false;
  bool prepared_ = false;  // packed at creation for a static input shape
  nn::WindowAttrs attrs_;
  int64_t group_ = 1;
  const Tensor* w_ = nullptr;
  const Tensor* b_ = nullptr;
  std::vector<float> bias_;
  kernels::Epilogue epilogue_;
  std::mutex mutex_;
  std::map<std::array<int64_t, 4>, std::unique_ptr<kernels::PackedConv>> convs_;
};

class NhwcPoolKernel : public Kernel {
 public:
  NhwcPoolKernel(const KernelInit& init, const char* op_type) : node_(init.node), op_type_(op_type) {
    KernelInit inner = init;
    inner.reference_only = true;
    pool_ = kernel_as(inner, standard(op_type, kPoolVersion));
    if (init.reference_only) return;
    const bool max = std::string_view(op_type) == "MaxPool";
    attrs_ = nn::read_window_attrs(init.attrs, true, true);
    if (attrs_.kernel.size() != 2) return;
    if (max && init.attrs.get_int("storage_order", 0) != 0) return;
    include_pad_ = !max && init.attrs.get_int("count_include_pad", 0) != 0;
    kind_ = max ? kernels::PoolShape::Kind::Max
                : include_pad_ ? kernels::PoolShape::Kind::AverageIncludePad : kernels::PoolShape::Kind::AverageExcludePad;
    fast_ = true;
  }

  void run(KernelContext& ctx) override {
    if (fast_ && fast_run(ctx)) return;
    const Datum x = Datum::of(permute4(ctx.input(0), kToNchw));
    std::vector<Datum> y = run_on(*pool_, node_, kPoolVersion, {&x}, 1);
    if (y.empty() || !y[0].is_tensor()) ctx.error(cat(op_type_, " gave no tensor"));
    ctx.set_output(0, permute4(y[0].tensor, kToNhwc));
  }

 private:
  bool fast_run(KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DataType::Float || x.dims().size() != 4 || x.element_count() == 0) return false;
    const Dims& d = x.dims();
    auto s = nn::onednn_pool_shape(attrs_, kind_, true, d[0], d[3], d[1], d[2]);
    if (!s) return false;
    const kernels::Pool2d& pool = pools_.get(*s);
    ctx.set_output(0, allocate_for_overwrite(DataType::Float, {s->N, s->out[0], s->out[1], s->C}));
    pool.run(x.data<float>(), ctx.outputs()[0].tensor.mutable_data<float>());
    return true;
  }

  const Node& node_;
  const char* op_type_;
  std::unique_ptr<Kernel> pool_;
  bool fast_ = false, include_pad_ = false;
  nn::WindowAttrs attrs_;
  kernels::PoolShape::Kind kind_ = kernels::PoolShape::Kind::Max;
  nn::PoolCache pools_;
};

// Quantized convolution channels-last: oneDNN's int8 kernel reads and writes NHWC, so a chain of them (with the
// per-tensor QuantizeLinear / DequantizeLinear and elementwise ops between) converts only at its edges.
class NhwcQLinearConvKernel : public Kernel {
 public:
  explicit NhwcQLinearConvKernel(const KernelInit& init) : node_(init.node) {
    conv_ = reference_kernel_as(init, standard("QLinearConv", kQLinearConvVersion), 9);
    if (!init.reference_only) pack_ = std::make_unique<QLinearConvPack>(init);
  }

  void run(KernelContext& ctx) override {
    if (pack_ && pack_->run(ctx, true)) return;
    const Datum x = Datum::of(permute4(ctx.input(0), kToNchw));
    std::vector<const Datum*> in{&x};
    for (size_t i = 1; i < ctx.num_inputs(); ++i) in.push_back(ctx.has_input(i) ? &ctx.input_datum(i) : nullptr);
    std::vector<Datum> y = run_on(*conv_, node_, kQLinearConvVersion, std::move(in), 1);
    if (y.empty() || !y[0].is_tensor()) ctx.error("the convolution gave no tensor");
    ctx.set_output(0, permute4(y[0].tensor, kToNhwc));
  }

 private:
  static constexpr int kQLinearConvVersion = 10;
  const Node& node_;
  std::unique_ptr<Kernel> conv_;
  std::unique_ptr<QLinearConvPack> pack_;
};

}  // namespace

void register_channels_last(Registry& r) {
  using D = DataType;
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double, D::BFloat16};
  r.add(OpDef{kFusedDomain, "NhwcConv", 1, {{{0, 1, 2, 3}, f}},
              [](InferContext& ctx) { infer_channels_last(ctx, standard("Conv", kConvVersion), 3); },
              [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<NhwcConvKernel>(init); }});
  const std::vector<DataType> k8 = {D::Int8, D::UInt8};
  r.add(OpDef{kFusedDomain, "NhwcQLinearConv", 1, {{{0, 2}, k8}, {{3, 5}, k8}, {{7}, k8}, {{1, 4, 6}, {D::Float}}, {{8}, {D::Int32}}},
              [](InferContext& ctx) { infer_channels_last(ctx, standard("QLinearConv", 10), 9); },
              [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<NhwcQLinearConvKernel>(init); }});
  for (const char* op : {"MaxPool", "AveragePool"}) {
    r.add(OpDef{kFusedDomain, cat("Nhwc", op), 1, {{{0}, f}},
                [op](InferContext& ctx) { infer_channels_last(ctx, standard(op, kPoolVersion), 1); },
                [op](const KernelInit& init) -> std::unique_ptr<Kernel> {
                  return std::make_unique<NhwcPoolKernel>(init, op);
                }});
  }
  r.set_fast_kernels("ai.onyx", "NhwcConv", {"oneDNN NHWC convolution with residual sum and activation as post-ops (float32, constant weights)"});
  r.set_fast_kernels("ai.onyx", "NhwcQLinearConv", {"oneDNN int8 NHWC convolution, weights packed once"});
  r.set_fast_kernels("ai.onyx", "NhwcMaxPool", {"oneDNN NHWC pooling for 2-D windows"});
  r.set_fast_kernels("ai.onyx", "NhwcAveragePool", {"oneDNN NHWC pooling for 2-D windows"});
}

}  // namespace onyx::ops
