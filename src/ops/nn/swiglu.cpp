// ai.onnx SwiGLU (28) and CausalConvWithState (27).
// SwiGLU-28: Y = A * sigmoid(alpha * A) * B (numpy broadcasting of A and B), alpha defaults to 1.
// CausalConvWithState-27: stateful causal depthwise 1-D convolution. input [B, C, L], weight [C, 1, K], optional
//   bias [C], optional past_state [B, C, K-1] (zeros when absent). The input is left-padded with the state, convolved
//   per channel (valid padding, stride 1): out[b,c,t] = bias[c] + sum_k w[c,0,k] * padded[b,c,t+k]; activation
//   "silu"/"swish" applies x*sigmoid(x) to the result (rounded to the element type first), "none" nothing.
//   present_state = the last K-1 positions of the padded input. Computation in double.
#include <cmath>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

double swiglu_sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }

void run_swiglu(double alpha, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype()) ctx.error(cat("inputs have different element types ", a.dtype(), " and ", b.dtype()));
  const Dims out = broadcast_dims(a.dims(), b.dims());
  const std::vector<double> av = read_doubles(a), bv = read_doubles(b);
  std::vector<double> y(static_cast<size_t>(product(out)));
  for_each_broadcast(out, {a.dims(), b.dims()}, [&](int64_t i, const std::vector<int64_t>& o) {
    const double x = av[static_cast<size_t>(o[0])];
    y[static_cast<size_t>(i)] = x * swiglu_sigmoid(alpha * x) * bv[static_cast<size_t>(o[1])];
  });
  store_doubles(ctx.allocate_output(0, a.dtype(), out), y);
}

enum class ConvAct { None, Silu };

void run_causal_conv(ConvAct act, KernelContext& ctx) {
  const Tensor& x_t = ctx.input(0);
  const Tensor& w_t = ctx.input(1);
  const DataType dt = x_t.dtype();
  if (w_t.dtype() != dt) ctx.error("weight must have the input's element type");
  if (x_t.dims().size() != 3) ctx.error(cat("input must be 3-D [batch, channels, length], got ", shape_of(x_t.dims()).to_string()));
  const int64_t B = x_t.dims()[0], C = x_t.dims()[1], L = x_t.dims()[2];
  if (w_t.dims().size() != 3 || w_t.dims()[0] != C || w_t.dims()[1] != 1 || w_t.dims()[2] < 1)
    ctx.error(cat("weight must have shape [", C, ", 1, k] with k >= 1, got ", shape_of(w_t.dims()).to_string()));
  const int64_t K = w_t.dims()[2];
  const int64_t P = K - 1;
  std::vector<double> bias(static_cast<size_t>(C), 0.0);
  if (ctx.has_input(2)) {
    const Tensor& b_t = ctx.input(2);
    if (b_t.dtype() != dt) ctx.error("bias must have the input's element type");
    if (b_t.dims() != Dims{C}) ctx.error(cat("bias must have shape [", C, "], got ", shape_of(b_t.dims()).to_string()));
    bias = read_doubles(b_t);
  }
  std::vector<double> past(static_cast<size_t>(B * C * P), 0.0);
  if (ctx.has_input(3)) {
    const Tensor& p_t = ctx.input(3);
    if (p_t.dtype() != dt) ctx.error("past_state must have the input's element type");
    if (p_t.dims() != Dims{B, C, P})
      ctx.error(cat("past_state must have shape [", B, ",", C, ",", P, "], got ", shape_of(p_t.dims()).to_string()));
    past = read_doubles(p_t);
  }
  const std::vector<double> x = read_doubles(x_t), w = read_doubles(w_t);
  std::vector<double> y(static_cast<size_t>(B * C * L)), present(static_cast<size_t>(B * C * P));
  std::vector<double> padded(static_cast<size_t>(P + L));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t bc = b * C + c;
      for (int64_t i = 0; i < P; ++i) padded[i] = past[bc * P + i];
      for (int64_t i = 0; i < L; ++i) padded[P + i] = x[bc * L + i];
      for (int64_t t = 0; t < L; ++t) {
        double s = bias[c];
        for (int64_t k = 0; k < K; ++k) s += w[c * K + k] * padded[t + k];
        if (act == ConvAct::Silu) {
          s = round_to(dt, s);
          s = s * swiglu_sigmoid(s);
        }
        y[bc * L + t] = s;
      }
      for (int64_t i = 0; i < P; ++i) present[bc * P + i] = padded[L + i];
    }
  if (ctx.output_wanted(0)) store_doubles(ctx.allocate_output(0, dt, {B, C, L}), y);
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) store_doubles(ctx.allocate_output(1, dt, {B, C, P}), present);
}

void infer_causal_conv(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const int64_t xr = input_rank(ctx, 0), wr = input_rank(ctx, 1);
  if (xr >= 0 && xr != 3) ctx.error(cat("input must be 3-D [batch, channels, length], got rank ", xr));
  if (wr >= 0 && wr != 3) ctx.error(cat("weight must be 3-D [channels, 1, k], got rank ", wr));
  auto k = dim_of(ctx, 1, 2).value;
  if (k && *k < 1) ctx.error(cat("kernel size ", *k, " must be at least 1"));
  if (xr != 3) {
    ctx.set_output(0, Type::tensor(dt));
    ctx.set_output(1, Type::tensor(dt));
    return;
  }
  ctx.set_output(0, ctx.input_type(0));
  ctx.set_output(1, Type::tensor(dt, shape_from({dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), k ? known_dim(*k - 1) : Dim{}})));
}

}  // namespace

void register_swiglu(Registry& r) {
  const std::vector<DataType> floats = {D::BFloat16, D::Float16, D::Float, D::Double};
  add_versions(
      r, "", "SwiGLU", {28}, {{{0, 1}, floats}}, [](InferContext& ctx) { infer_broadcast(ctx); },
      [](const KernelInit& init) {
        const double alpha = init.attrs.get_float("alpha", 1.0f);
        return make_kernel([alpha](KernelContext& ctx) { run_swiglu(alpha, ctx); });
      });
  add_versions(r, "", "CausalConvWithState", {27}, {{{0, 1, 2, 3}, floats}}, infer_causal_conv, [](const KernelInit& init) {
    const std::string a = init.attrs.get_string("activation", "none");
    ConvAct act;
    if (a == "none") act = ConvAct::None;
    else if (a == "silu" || a == "swish") act = ConvAct::Silu;
    else fail("activation '", a, "' is not one of silu, swish, none");
    return make_kernel([act](KernelContext& ctx) { run_causal_conv(act, ctx); });
  });
}

}  // namespace onyx::ops
