// ai.onnx NegativeLogLikelihoodLoss (versions 12, 13, 22) and SoftmaxCrossEntropyLoss (versions 12, 13).
// NegativeLogLikelihoodLoss(input [N,C,d1..dk], target [N,d1..dk], weight [C]?):
//   loss[n,d] = -input[n,target[n,d],d] * weight[target[n,d]]  (weight 1 when absent), 0 where target equals the
//   `ignore_index` attribute (when given). A target outside [0, C) that is not ignore_index is an error.
//   `reduction`: "none" (output [N,d1..dk]), "sum" (scalar), "mean" (default, scalar: sum(loss) divided by the sum
//   of the weights of the samples not ignored; 0/0 gives NaN).
// SoftmaxCrossEntropyLoss(scores [N,C,d1..dk], labels [N,d1..dk], weights [C]?) -> (output, log_prob?):
//   log_prob = log(softmax(scores, axis 1)) (same shape as scores), then output is NegativeLogLikelihoodLoss of
//   log_prob with the same labels, weights, ignore_index and reduction.
// Versions: NLL-12/13 and SCE-12 take float16, float, double; SCE-13 and NLL-22 add bfloat16. Indices are int32 or
// int64. Arithmetic is in double.
#include <cmath>
#include <limits>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

enum class Reduction { None, Sum, Mean };

struct LossConfig {
  Reduction reduction = Reduction::Mean;
  std::optional<int64_t> ignore_index;
};

LossConfig read_loss_config(const AttributeView& attrs) {
  LossConfig c;
  std::string r = attrs.get_string("reduction", "mean");
  if (r == "none") c.reduction = Reduction::None;
  else if (r == "sum") c.reduction = Reduction::Sum;
  else if (r == "mean") c.reduction = Reduction::Mean;
  else fail("reduction '", r, "' is not one of none, sum, mean");
  if (attrs.has("ignore_index")) c.ignore_index = attrs.get_int("ignore_index");
  return c;
}

// Checks the shapes of (input/scores, target/labels, weight); returns C.
int64_t check_loss_shapes(const Dims& in, const Dims& target, const Dims* weight, const char* in_name,
                          const char* target_name) {
  if (in.size() < 2) fail(in_name, " must have rank 2 or more (N, C, ...), got ", shape_of(in).to_string());
  bool ok = target.size() + 1 == in.size() && target[0] == in[0];
  for (size_t k = 1; ok && k < target.size(); ++k) ok = target[k] == in[k + 1];
  if (!ok)
    fail(target_name, " shape ", shape_of(target).to_string(), " does not match ", in_name, " shape ",
         shape_of(in).to_string(), " (expected the ", in_name, " shape without dimension 1)");
  const int64_t c = in[1];
  if (weight && (weight->size() != 1 || (*weight)[0] != c))
    fail("weight shape ", shape_of(*weight).to_string(), " must be [", c, "]");
  return c;
}

// The NLL of log-probabilities `lp` laid out [N, C, D] (D = product of d1..dk); writes `out` (N*D values for
// reduction none, one otherwise).
std::vector<double> nll(const LossConfig& cfg, const std::vector<double>& lp, const std::vector<int64_t>& target,
                        const std::vector<double>* weight, int64_t n, int64_t c, int64_t d) {
  std::vector<double> loss(static_cast<size_t>(n * d), 0.0);
  double wsum = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t t = target[i * d + j];
      if (cfg.ignore_index && t == *cfg.ignore_index) continue;
      if (t < 0 || t >= c) fail("target value ", t, " is out of range [0, ", c, ")");
      const double w = weight ? (*weight)[t] : 1.0;
      loss[i * d + j] = -lp[(i * c + t) * d + j] * w;
      wsum += w;
    }
  }
  if (cfg.reduction == Reduction::None) return loss;
  double sum = 0;
  for (double l : loss) sum += l;
  return {cfg.reduction == Reduction::Sum ? sum : sum / wsum};
}

Dims loss_output_dims(const LossConfig& cfg, const Dims& target) {
  return cfg.reduction == Reduction::None ? target : Dims{};
}

void run_loss(const LossConfig& cfg, bool softmax, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& target = ctx.input(1);
  const Tensor* weight = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const char* in_name = softmax ? "scores" : "input";
  const char* target_name = softmax ? "labels" : "target";
  const int64_t c = check_loss_shapes(x.dims(), target.dims(), weight ? &weight->dims() : nullptr, in_name, target_name);
  if (weight && weight->dtype() != x.dtype())
    ctx.error(cat("weight element type ", weight->dtype(), " differs from ", in_name, " element type ", x.dtype()));
  const int64_t n = x.dims()[0];
  const int64_t d = product(x.dims(), 2);
  std::vector<double> lp = read_doubles(x);
  if (softmax) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < d; ++j) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < c; ++k) m = std::max(m, lp[(i * c + k) * d + j]);
        double s = 0;
        for (int64_t k = 0; k < c; ++k) s += std::exp(lp[(i * c + k) * d + j] - m);
        const double lse = m + std::log(s);
        for (int64_t k = 0; k < c; ++k) lp[(i * c + k) * d + j] -= lse;
      }
    }
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) store_doubles(ctx.allocate_output(1, x.dtype(), x.dims()), lp);
  }
  std::vector<double> w;
  if (weight) w = read_doubles(*weight);
  std::vector<double> loss = nll(cfg, lp, read_ints(target), weight ? &w : nullptr, n, c, d);
  store_doubles(ctx.allocate_output(0, x.dtype(), loss_output_dims(cfg, target.dims())), loss);
}

void infer_loss(const LossConfig& cfg, bool softmax, InferContext& ctx) {
  const Type& in = ctx.input_type(0);
  const DataType dt = in.elem;
  const char* in_name = softmax ? "scores" : "input";
  if (in.shape.rank_known && in.shape.dims.size() < 2)
    ctx.error(cat(in_name, " must have rank 2 or more (N, C, ...), got ", in.shape.to_string()));
  // Static shapes are checked now rather than at the first run.
  auto xd = static_dims(in);
  auto td = static_dims(ctx.input_type(1));
  if (xd && td) {
    Dims wd;
    bool has_w = ctx.has_input(2) && static_dims(ctx.input_type(2));
    if (has_w) wd = *static_dims(ctx.input_type(2));
    check_loss_shapes(*xd, *td, has_w ? &wd : nullptr, in_name, softmax ? "labels" : "target");
  }
  if (softmax) ctx.set_output(1, Type::tensor(dt, in.shape));
  if (cfg.reduction != Reduction::None) {
    ctx.set_output(0, Type::tensor(dt, shape_of({})));
    return;
  }
  // Output [N, d1..dk]: the target's shape, or the input's without dimension 1.
  const Type& t = ctx.input_type(1);
  if (t.shape.rank_known) {
    ctx.set_output(0, Type::tensor(dt, t.shape));
  } else if (in.shape.rank_known && in.shape.dims.size() >= 2) {
    Shape s = in.shape;
    s.dims.erase(s.dims.begin() + 1);
    ctx.set_output(0, Type::tensor(dt, s));
  } else {
    ctx.set_output(0, Type::tensor(dt));
  }
}

void add_loss(Registry& r, const char* name, bool softmax, int version, const std::vector<DataType>& types) {
  std::vector<TypeConstraint> tc = {{{0, 2}, types}, {{1}, {DataType::Int32, DataType::Int64}}};
  auto infer = [softmax](InferContext& ctx) { infer_loss(read_loss_config(ctx.attrs), softmax, ctx); };
  auto kernel = [softmax](const KernelInit& init) {
    LossConfig cfg = read_loss_config(init.attrs);
    return make_kernel([cfg, softmax](KernelContext& ctx) { run_loss(cfg, softmax, ctx); });
  };
  r.add(OpDef{"", name, version, tc, infer, kernel});
}

}  // namespace

void register_loss(Registry& r) {
  using D = DataType;
  const std::vector<DataType> v12 = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> with_bf16 = {D::Float16, D::BFloat16, D::Float, D::Double};
  add_loss(r, "NegativeLogLikelihoodLoss", false, 12, v12);
  add_loss(r, "NegativeLogLikelihoodLoss", false, 13, v12);
  add_loss(r, "NegativeLogLikelihoodLoss", false, 22, with_bf16);
  add_loss(r, "SoftmaxCrossEntropyLoss", true, 12, v12);
  add_loss(r, "SoftmaxCrossEntropyLoss", true, 13, with_bf16);
}

}  // namespace onyx::ops
