// ai.onnx.preview.training optimizers: Adagrad-1, Adam-1, Momentum-1 (the only versions). Gradient-1 is in
// gradient.cpp.
// Inputs: R (learning rate, float/double scalar), T (update count, int64 scalar), then the optimized tensors X_1..X_n,
// their gradients G_1..G_n and the optimizer state (Adagrad: H, accumulated squared gradients; Momentum: V;
// Adam: V then H). Outputs: the new X_i, then the new state tensors, same shapes and types as the inputs.
//   Adagrad:  r = R / (1 + T * decay_factor); g = norm_coefficient * X + G; H' = H + g^2;
//             X' = X - r * g / (sqrt(H') + epsilon)
//   Momentum: g = norm_coefficient * X + G; b = T > 0 ? beta : 1; V' = alpha * V + b * g;
//             X' = X - R * V' (mode "standard") or X - R * (g + alpha * V') (mode "nesterov")
//   Adam:     g = norm_coefficient * X + G; V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g^2;
//             r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R; X' = (1 - norm_coefficient_post) *
//             (X - r * V' / (sqrt(H') + epsilon))
// X, G and the state of one tensor must have the same shape. Arithmetic is done in double.
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
const char* kTrainingDomain = "ai.onnx.preview.training";

enum class Algo { Adagrad, Momentum, Adam };

// Number of input groups after R and T (X, G, then state tensors) and of output groups.
int groups_in(Algo a) { return a == Algo::Adam ? 4 : 3; }
int groups_out(Algo a) { return a == Algo::Adam ? 3 : 2; }

int64_t tensor_count(size_t num_inputs, Algo a, const char* op) {
  if (num_inputs < 2) fail(op, " needs the inputs R and T");
  size_t rest = num_inputs - 2;
  if (rest == 0 || rest % static_cast<size_t>(groups_in(a)) != 0)
    fail(op, " takes R, T and ", groups_in(a), " tensors per optimized tensor; got ", rest, " tensors after R and T");
  return static_cast<int64_t>(rest / static_cast<size_t>(groups_in(a)));
}

double scalar(const Tensor& t, const char* what) {
  if (t.element_count() != 1) fail(what, " must be a scalar, it has ", t.element_count(), " elements");
  return read_doubles(t)[0];
}

struct OptimizerParams {
  Algo algo;
  const char* op;
  float epsilon = 1e-6f, decay_factor = 0, norm = 0, norm_post = 0, alpha = 0, beta = 0;
  bool nesterov = false;
};

void run_optimizer(const OptimizerParams& p, KernelContext& ctx) {
  const int64_t n = tensor_count(ctx.num_inputs(), p.algo, p.op);
  const double R = scalar(ctx.input(0), "R");
  const Tensor& tt = ctx.input(1);
  if (tt.element_count() != 1) ctx.error(cat("T must be a scalar, it has ", tt.element_count(), " elements"));
  const int64_t T = read_ints(tt)[0];
  if (static_cast<int64_t>(ctx.num_outputs()) > n * groups_out(p.algo))
    ctx.error(cat(p.op, " has ", n * groups_out(p.algo), " outputs for ", n, " optimized tensors, the node has ",
                  ctx.num_outputs()));
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(static_cast<size_t>(2 + i));
    if (x.dtype() != D::Float && x.dtype() != D::Double)
      ctx.error(cat("optimized tensor ", i, " has element type ", x.dtype(), "; allowed: float, double"));
    std::vector<const Tensor*> ins;
    for (int g = 0; g < groups_in(p.algo); ++g) ins.push_back(&ctx.input(static_cast<size_t>(2 + g * n + i)));
    for (int g = 1; g < groups_in(p.algo); ++g)
      if (ins[g]->dims() != x.dims() || ins[g]->dtype() != x.dtype())
        ctx.error(cat("input ", 2 + g * n + i, " is ", ins[g]->dtype(), shape_of(ins[g]->dims()).to_string(),
                      ", optimized tensor ", i, " is ", x.dtype(), shape_of(x.dims()).to_string()));
    std::vector<double> X = read_doubles(x), G = read_doubles(*ins[1]), S1 = read_doubles(*ins[2]);
    std::vector<double> S2 = p.algo == Algo::Adam ? read_doubles(*ins[3]) : std::vector<double>{};
    const size_t m = X.size();
    switch (p.algo) {
      case Algo::Adagrad: {
        const double r = R / (1.0 + static_cast<double>(T) * p.decay_factor);
        for (size_t k = 0; k < m; ++k) {
          double g = p.norm * X[k] + G[k];
          S1[k] += g * g;
          X[k] -= r * g / (std::sqrt(S1[k]) + p.epsilon);
        }
        break;
      }
      case Algo::Momentum: {
        const double b = T > 0 ? p.beta : 1.0;
        for (size_t k = 0; k < m; ++k) {
          double g = p.norm * X[k] + G[k];
          S1[k] = p.alpha * S1[k] + b * g;
          X[k] -= R * (p.nesterov ? g + p.alpha * S1[k] : S1[k]);
        }
        break;
      }
      case Algo::Adam: {
        double r = R;
        if (T > 0) {
          const double td = static_cast<double>(T);
          r = R * std::sqrt(1.0 - std::pow(static_cast<double>(p.beta), td)) /
              (1.0 - std::pow(static_cast<double>(p.alpha), td));
        }
        for (size_t k = 0; k < m; ++k) {
          double g = p.norm * X[k] + G[k];
          S1[k] = p.alpha * S1[k] + (1.0 - p.alpha) * g;
          S2[k] = p.beta * S2[k] + (1.0 - p.beta) * g * g;
          X[k] = (1.0 - p.norm_post) * (X[k] - r * S1[k] / (std::sqrt(S2[k]) + p.epsilon));
        }
        break;
      }
    }
    auto write = [&](size_t out, const std::vector<double>& v) {
      if (out >= ctx.num_outputs() || !ctx.output_wanted(out)) return;
      Tensor& y = ctx.allocate_output(out, x.dtype(), x.dims());
      if (x.dtype() == D::Float)
        for (size_t k = 0; k < m; ++k) y.mutable_data<float>()[k] = static_cast<float>(v[k]);
      else
        for (size_t k = 0; k < m; ++k) y.mutable_data<double>()[k] = v[k];
    };
    write(static_cast<size_t>(i), X);
    write(static_cast<size_t>(n + i), S1);
    if (p.algo == Algo::Adam) write(static_cast<size_t>(2 * n + i), S2);
  }
}

void add_optimizer(Registry& r, Algo algo, const char* op) {
  auto infer = [algo, op](InferContext& ctx) {
    const int64_t n = tensor_count(ctx.num_inputs(), algo, op);
    for (int64_t i = 0; i < n; ++i) {
      // X_i -> output i; the state tensors -> outputs n + i (and 2n + i for Adam).
      if (ctx.has_input(static_cast<size_t>(2 + i))) ctx.set_output(static_cast<size_t>(i), ctx.input_type(static_cast<size_t>(2 + i)));
      for (int s = 0; s < groups_out(algo) - 1; ++s) {
        size_t in = static_cast<size_t>(2 + (2 + s) * n + i);
        if (ctx.has_input(in)) ctx.set_output(static_cast<size_t>((1 + s) * n + i), ctx.input_type(in));
      }
    }
  };
  auto kernel = [algo, op](const KernelInit& init) {
    OptimizerParams p;
    p.algo = algo;
    p.op = op;
    const AttributeView& a = init.attrs;
    switch (algo) {
      case Algo::Adagrad:
        p.epsilon = a.get_float("epsilon", 1e-6f);
        p.decay_factor = a.get_float("decay_factor", 0.0f);
        p.norm = a.get_float("norm_coefficient", 0.0f);
        break;
      case Algo::Momentum: {
        p.alpha = a.get_float("alpha");
        p.beta = a.get_float("beta");
        p.norm = a.get_float("norm_coefficient");
        std::string mode = a.get_string("mode");
        if (mode != "standard" && mode != "nesterov") fail("mode '", mode, "' is not one of standard, nesterov");
        p.nesterov = mode == "nesterov";
        break;
      }
      case Algo::Adam:
        p.alpha = a.get_float("alpha", 0.9f);
        p.beta = a.get_float("beta", 0.999f);
        p.norm = a.get_float("norm_coefficient", 0.0f);
        p.norm_post = a.get_float("norm_coefficient_post", 0.0f);
        p.epsilon = a.get_float("epsilon", 1e-6f);
        break;
    }
    return make_kernel([p](KernelContext& ctx) { run_optimizer(p, ctx); });
  };
  // T1 (R): float, double; T2 (T): int64; T3 (the tensors): float, double — every input from index 2.
  std::vector<int> rest;
  for (int i = 2; i < 2 + 4 * 64; ++i) rest.push_back(i);
  add_versions(r, kTrainingDomain, op, {1}, {{{0}, {D::Float, D::Double}}, {{1}, {D::Int64}}, {rest, {D::Float, D::Double}}},
               infer, kernel);
}

}  // namespace

void register_training_optimizers(Registry& r) {
  add_optimizer(r, Algo::Adagrad, "Adagrad");
  add_optimizer(r, Algo::Momentum, "Momentum");
  add_optimizer(r, Algo::Adam, "Adam");
}

}  // namespace onyx::ops
