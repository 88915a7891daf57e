// ai.onnx activation functions, PRelu and Clip.
//   Relu 1, 6, 13, 14: float types; v1 has `consumed_inputs` (ignored); 13 adds bfloat16; 14 adds int8..int64.
//   LeakyRelu 1, 6, 16 (alpha=0.01); Elu 1, 6, 22 (alpha=1); Selu 1, 6, 22 (alpha=1.67326..., gamma=1.0507...);
//   HardSigmoid 1, 6, 22 (alpha=0.2, beta=0.5); Sigmoid, Tanh 1, 6, 13: float16/float/double, bfloat16 from the last
//     version. v1 also carries `consumed_inputs` (ignored).
//   Celu 12 (float only; alpha=1), 28 (all float types).
//   HardSwish 14, 22; Softplus 1, 22; Softsign 1, 22; ThresholdedRelu 10, 22 (alpha=1); Mish 18, 22: float types,
//     the later version adds bfloat16.
//   Gelu 20: approximate = "none" (erf form) or "tanh". Swish 24: x * sigmoid(alpha * x), alpha=1.
//   Shrink 9: every numeric type but bfloat16; lambd=0.5, bias=0.
//   PRelu 1, 6 (a 1-D slope of X's channel count applies per channel (dim 1); otherwise it broadcasts
//     unidirectionally to X), 7 (slope broadcasts unidirectionally to X),
//     9 (adds int32/int64/uint32/uint64), 16 (adds bfloat16).
//   Clip 1 (min/max attributes, absent = unbounded), 6 (min/max attributes defaulting to -/+FLT_MAX),
//     11 (min/max become optional scalar inputs), 12 (every numeric type), 13 (adds bfloat16).
//     When min > max every element becomes max (y = min(max(x, min), max)); NaN stays NaN.
// Float types compute in double (float16/bfloat16 through float) and round once to the element type; float32 Relu,
// LeakyRelu, Sigmoid, Tanh, Gelu and Clip run through the vectorized kernels (kernels/elementwise.hpp) instead.
#include <cmath>
#include <limits>
#include <numbers>

#include "kernels/elementwise.hpp"
#include "ops/op_kit.hpp"
#include "ir/tensor_alloc.hpp"
#include "ops/math/elementwise_unary.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
using Types = std::vector<DataType>;

double sigmoid_of(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
// log(1 + exp(x)) without overflow.
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// ---- PRelu ----

void infer_prelu(InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  if (ctx.has_input(1)) {
    const Shape& xs = ctx.input_type(0).shape;
    const Shape& ss = ctx.input_type(1).shape;
    const bool legacy = ctx.opset < 7 && ss.rank_known && ss.dims.size() == 1;  // may be per channel
    if (xs.rank_known && ss.rank_known && !legacy) {
      if (ss.dims.size() > xs.dims.size())
        ctx.error(cat("slope of shape ", ss.to_string(), " does not broadcast to X of shape ", xs.to_string()));
      broadcast_shape(xs, ss);  // errors on incompatible static dims
    }
  }
  infer_same_as_input(ctx);
}

template <class T>
T prelu_int(T x, T s) {
  if constexpr (std::is_signed_v<T>) {
    // Wrap-around product through uint64 (no signed overflow, no promotion to int).
    return x < 0 ? static_cast<T>(static_cast<uint64_t>(x) * static_cast<uint64_t>(s)) : x;
  } else {
    (void)s;
    return x;  // never negative
  }
}

// Before v7 a 1-D slope with one value per channel (X's dim 1) applies channel-wise (Caffe2 semantics); the
// slope's dims as seen from X then are [C, 1, ..., 1].
bool legacy_channelwise(int64_t opset, const Dims& x, const Dims& s) {
  return opset < 7 && x.size() >= 2 && s.size() == 1 && s[0] == x[1] && s[0] != 1;
}

void run_prelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  if (x.dtype() != slope.dtype())
    ctx.error(cat("X and slope have different element types ", x.dtype(), " and ", slope.dtype()));
  Dims sd = slope.dims();
  if (legacy_channelwise(ctx.opset(), x.dims(), sd)) {
    sd.assign(x.dims().size() - 1, 1);
    sd[0] = slope.dims()[0];
  }
  // Unidirectional broadcast: slope must broadcast to X's shape.
  if (sd.size() > x.dims().size() || broadcast_dims(x.dims(), sd) != x.dims())
    ctx.error(cat("slope of shape ", shape_of(slope.dims()).to_string(), " does not broadcast to X of shape ",
                  shape_of(x.dims()).to_string()));
  const Tensor& s = slope;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_plain_float_v<T> || is_int_v<T>) {
      const T* px = x.data<T>();
      const T* ps = s.data<T>();
      T* py = y.mutable_data<T>();
      for_each_broadcast(x.dims(), {x.dims(), sd}, [&](int64_t i, const std::vector<int64_t>& o) {
        if constexpr (is_plain_float_v<T>) {
          double v = to_double(px[o[0]]);
          py[i] = v < 0 ? from_double<T>(v * to_double(ps[o[1]])) : px[o[0]];
        } else {
          py[i] = prelu_int(px[o[0]], ps[o[1]]);
        }
      });
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

// ---- Clip ----

// Clip with bounds given as doubles (v1/v6 attributes; float types only).
void clip_with_attrs(KernelContext& ctx, double lo, double hi) {
  apply_unary(
      ctx,
      [lo, hi](double x) {
        double v = x < lo ? lo : x;  // NaN compares false both times and stays NaN
        return v > hi ? hi : v;      // min > max: every element becomes max
      },
      NoInt{});
}

const Tensor* scalar_bound(KernelContext& ctx, size_t i, const char* what, DataType dt) {
  if (!ctx.has_input(i)) return nullptr;
  const Tensor& b = ctx.input(i);
  if (b.element_count() != 1)
    ctx.error(cat(what, " must be a scalar, got shape ", shape_of(b.dims()).to_string()));
  if (b.dtype() != dt) ctx.error(cat(what, " has element type ", b.dtype(), " but input has ", dt));
  return &b;
}

// Bounds given as doubles (attributes, or float inputs) for the vectorized kernel.
kernels::UnaryParams clip_params(double lo, double hi) {
  kernels::UnaryParams p = unary_params(kernels::UnaryOp::Clip);
  p.lo = static_cast<float>(lo);
  p.hi = static_cast<float>(hi);
  return p;
}

void run_clip_inputs(KernelContext& ctx, bool fast) {
  const Tensor& x = ctx.input(0);
  const Tensor* tmin = scalar_bound(ctx, 1, "min", x.dtype());
  const Tensor* tmax = scalar_bound(ctx, 2, "max", x.dtype());
  if (fast && x.dtype() == D::Float) {
    const float inf = std::numeric_limits<float>::infinity();
    kernels::UnaryParams p = clip_params(tmin ? tmin->data<float>()[0] : -inf, tmax ? tmax->data<float>()[0] : inf);
    Tensor* y = ctx.reuse_input(0, 0, D::Float, x.dims());  // elementwise: in place is safe
    if (!y) {
      ctx.set_output(0, allocate_for_overwrite(D::Float, x.dims()));
      y = &ctx.outputs()[0].tensor;
    }
    kernels::unary(p, x.data<float>(), y->mutable_data<float>(), static_cast<int64_t>(x.element_count()));
    return;
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
  const int64_t n = static_cast<int64_t>(x.element_count());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_plain_float_v<T>) {
      const double lo = tmin ? to_double(tmin->data<T>()[0]) : -std::numeric_limits<double>::infinity();
      const double hi = tmax ? to_double(tmax->data<T>()[0]) : std::numeric_limits<double>::infinity();
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) {
        double v = to_double(px[i]);
        T out = px[i];
        if (v < lo) {  // only when min is given (lo is -inf otherwise)
          out = tmin->data<T>()[0];
          v = lo;
        }
        if (v > hi) out = tmax->data<T>()[0];  // min > max: every element becomes max
        py[i] = out;
      }
    } else if constexpr (is_int_v<T>) {
      const T lo = tmin ? tmin->data<T>()[0] : std::numeric_limits<T>::lowest();
      const T hi = tmax ? tmax->data<T>()[0] : std::numeric_limits<T>::max();
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) {
        T v = px[i] < lo ? lo : px[i];
        py[i] = v > hi ? hi : v;
      }
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

void rule_tanh(grad::Args& a) { grad::unary(a, [](double, double y) { return 1.0 - y * y; }); }

void rule_sigmoid(grad::Args& a) { grad::unary(a, [](double, double y) { return y * (1.0 - y); }); }

void rule_relu(grad::Args& a) { grad::unary(a, [](double x, double) { return x > 0 ? 1.0 : 0.0; }); }

void rule_softplus(grad::Args& a) { grad::unary(a, [](double x, double) { return 1.0 / (1.0 + std::exp(-x)); }); }

void rule_leaky_relu(grad::Args& a) {
  const double alpha = a.attrs.get_float("alpha", 0.01f);
  grad::unary(a, [alpha](double x, double) { return x > 0 ? 1.0 : alpha; });
}

void rule_elu(grad::Args& a) {
  const double alpha = a.attrs.get_float("alpha", 1.0f);
  grad::unary(a, [alpha](double x, double y) { return x > 0 ? 1.0 : y + alpha; });
}

// Clip passes the gradient where it kept x (the bounds' own gradients are not computed).
void rule_clip(grad::Args& a) { grad::unary(a, [](double x, double y) { return x == y ? 1.0 : 0.0; }); }

}  // namespace

void register_activation(Registry& r) {
  const Types f3 = {D::Float16, D::Float, D::Double};
  const Types f4 = kFloatTypes;

  // Relu: integer form from v14.
  Types relu14 = kSignedNumeric;
  add_same_type(r, "Relu", {{1, f3}, {6, f3}, {13, f4}, {14, relu14}}, [](const KernelInit& init) {
    return with_fast_float(init, unary_params(kernels::UnaryOp::Relu),
                           unary_kernel([](double x) { return x < 0 ? 0.0 : x; },
                                        [](auto v) {
                                          if constexpr (std::is_signed_v<decltype(v)>) return v < 0 ? static_cast<decltype(v)>(0) : v;
                                          else return v;
                                        }));
  });
  add_same_type(r, "LeakyRelu", {{1, f3}, {6, f3}, {16, f4}}, [](const KernelInit& init) {
    const float alpha = init.attrs.get_float("alpha", 0.01f);
    kernels::UnaryParams p = unary_params(kernels::UnaryOp::LeakyRelu);
    p.alpha = alpha;
    return with_fast_float(init, p, unary_kernel([alpha](double x) { return x < 0 ? alpha * x : x; }));
  });
  add_same_type(r, "Elu", {{1, f3}, {6, f3}, {22, f4}}, [](const KernelInit& init) {
    const double alpha = init.attrs.get_float("alpha", 1.0f);
    return unary_kernel([alpha](double x) { return x < 0 ? alpha * std::expm1(x) : x; });
  });
  add_same_type(r, "Selu", {{1, f3}, {6, f3}, {22, f4}}, [](const KernelInit& init) {
    const double alpha = init.attrs.get_float("alpha", 1.67326319217681884765625f);
    const double gamma = init.attrs.get_float("gamma", 1.05070102214813232421875f);
    return unary_kernel([alpha, gamma](double x) { return x > 0 ? gamma * x : gamma * alpha * std::expm1(x); });
  });
  add_same_type(r, "Celu", {{12, {D::Float}}, {28, f4}}, [](const KernelInit& init) {
    const double alpha = init.attrs.get_float("alpha", 1.0f);
    if (alpha == 0) fail("Celu alpha must not be 0");
    return unary_kernel([alpha](double x) { return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha)); });
  });
  add_same_type(r, "Sigmoid", {{1, f3}, {6, f3}, {13, f4}}, [](const KernelInit& init) {
    return with_fast_float(init, unary_params(kernels::UnaryOp::Sigmoid), unary_kernel([](double x) { return sigmoid_of(x); }));
  });
  add_same_type(r, "Tanh", {{1, f3}, {6, f3}, {13, f4}}, [](const KernelInit& init) {
    return with_fast_float(init, unary_params(kernels::UnaryOp::Tanh), unary_kernel([](double x) { return std::tanh(x); }));
  });
  add_same_type(r, "HardSigmoid", {{1, f3}, {6, f3}, {22, f4}}, [](const KernelInit& init) {
    const double alpha = init.attrs.get_float("alpha", 0.2f);
    const double beta = init.attrs.get_float("beta", 0.5f);
    return unary_kernel([alpha, beta](double x) { return std::max(0.0, std::min(1.0, alpha * x + beta)); });
  });
  add_same_type(r, "HardSwish", {{14, f3}, {22, f4}}, [](const KernelInit&) {
    return unary_kernel([](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); });
  });
  add_same_type(r, "Softplus", {{1, f3}, {22, f4}},
                [](const KernelInit&) { return unary_kernel([](double x) { return softplus(x); }); });
  add_same_type(r, "Softsign", {{1, f3}, {22, f4}},
                [](const KernelInit&) { return unary_kernel([](double x) { return x / (1.0 + std::fabs(x)); }); });
  add_same_type(r, "ThresholdedRelu", {{10, f3}, {22, f4}}, [](const KernelInit& init) {
    const double alpha = init.attrs.get_float("alpha", 1.0f);
    return unary_kernel([alpha](double x) { return x > alpha ? x : 0.0; });
  });
  add_same_type(r, "Mish", {{18, f3}, {22, f4}},
                [](const KernelInit&) { return unary_kernel([](double x) { return x * std::tanh(softplus(x)); }); });
  add_same_type(r, "Gelu", {{20, f4}}, [](const KernelInit& init) -> std::unique_ptr<Kernel> {
    const std::string mode = init.attrs.get_string("approximate", "none");
    if (mode == "none")
      return with_fast_float(init, unary_params(kernels::UnaryOp::GeluErf),
                             unary_kernel([](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }));
    if (mode == "tanh") {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return with_fast_float(
          init, unary_params(kernels::UnaryOp::GeluTanh),
          unary_kernel([k](double x) { return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x))); }));
    }
    fail("Gelu approximate must be \"none\" or \"tanh\", got \"", mode, "\"");
  });
  add_same_type(r, "Swish", {{24, f4}}, [](const KernelInit& init) {
    const double alpha = init.attrs.get_float("alpha", 1.0f);
    return unary_kernel([alpha](double x) { return x * sigmoid_of(alpha * x); });
  });
  const Types numeric_no_bf16 = {D::Int8, D::Int16, D::Int32, D::Int64, D::UInt8, D::UInt16,
                                 D::UInt32, D::UInt64, D::Float16, D::Float, D::Double};
  add_same_type(r, "Shrink", {{9, numeric_no_bf16}}, [](const KernelInit& init) {
    const double lambd = init.attrs.get_float("lambd", 0.5f);
    const double bias = init.attrs.get_float("bias", 0.0f);
    auto f = [lambd, bias](double x) { return x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0); };
    return unary_kernel(f, [f](auto v) { return from_double<decltype(v)>(f(static_cast<double>(v))); });
  });

  // PRelu.
  Types prelu9 = {D::Float16, D::Float, D::Double, D::UInt32, D::UInt64, D::Int32, D::Int64};
  Types prelu16 = prelu9;
  prelu16.push_back(D::BFloat16);
  for (auto [v, types] : std::vector<std::pair<int, Types>>{{1, f3}, {6, f3}, {7, f3}, {9, prelu9}, {16, prelu16}})
    r.add(OpDef{"", "PRelu", v, {{{0, 1}, types}}, infer_prelu, [](const KernelInit&) { return make_kernel(run_prelu); }});

  // Clip.
  auto clip_infer = [](InferContext& ctx) {
    if (ctx.opset >= 11) {
      for (size_t i = 1; i < 3 && i < ctx.num_inputs(); ++i) {
        if (!ctx.has_input(i)) continue;
        const Shape& s = ctx.input_type(i).shape;
        if (s.rank_known) {
          int64_t count = 1;
          bool known = true;
          for (const Dim& d : s.dims) {
            if (d.value) count *= *d.value;
            else known = false;
          }
          if (known && count != 1) ctx.error(cat(i == 1 ? "min" : "max", " must be a scalar, got shape ", s.to_string()));
        }
      }
    }
    infer_same_as_input(ctx);
  };
  r.add(OpDef{"", "Clip", 1, {{{0}, f3}}, clip_infer, [](const KernelInit& init) {
                const double lo = init.attrs.has("min") ? init.attrs.get_float("min") : -std::numeric_limits<double>::infinity();
                const double hi = init.attrs.has("max") ? init.attrs.get_float("max") : std::numeric_limits<double>::infinity();
                return with_fast_float(init, clip_params(lo, hi), make_kernel([lo, hi](KernelContext& ctx) { clip_with_attrs(ctx, lo, hi); }));
              }});
  r.add(OpDef{"", "Clip", 6, {{{0}, f3}}, clip_infer, [](const KernelInit& init) {
                const double lo = init.attrs.get_float("min", std::numeric_limits<float>::lowest());
                const double hi = init.attrs.get_float("max", std::numeric_limits<float>::max());
                return with_fast_float(init, clip_params(lo, hi), make_kernel([lo, hi](KernelContext& ctx) { clip_with_attrs(ctx, lo, hi); }));
              }});
  const Types clip12 = numeric_no_bf16;
  for (auto [v, types] : std::vector<std::pair<int, Types>>{{11, f3}, {12, clip12}, {13, kNumericTypes}})
    r.add(OpDef{"", "Clip", v, {{{0, 1, 2}, types}}, clip_infer, [](const KernelInit& init) {
                  const bool fast = !init.reference_only;
                  return make_kernel([fast](KernelContext& ctx) { run_clip_inputs(ctx, fast); });
                }});
  r.set_gradient("", "Tanh", rule_tanh);
  r.set_gradient("", "Sigmoid", rule_sigmoid);
  r.set_gradient("", "Relu", rule_relu);
  r.set_gradient("", "Softplus", rule_softplus);
  r.set_gradient("", "LeakyRelu", rule_leaky_relu);
  r.set_gradient("", "Elu", rule_elu);
  r.set_gradient("", "Clip", rule_clip);
  r.set_fast_kernels("", "Relu", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "LeakyRelu", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Sigmoid", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Tanh", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Gelu", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Clip", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
}

}  // namespace onyx::ops
