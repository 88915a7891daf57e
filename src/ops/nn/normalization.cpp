// ai.onnx normalizations (statistics accumulate in double):
//   BatchNormalization 1, 6, 7, 9, 14, 15 — Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel (dim 1).
//     v1: consumed_inputs, is_test, spatial; v6: no consumed_inputs; v7: no is_test (spatial stays: spatial=0 takes
//     per-activation parameters of shape X.dims[1:]); v9: no spatial. Up to v9 the optional outputs are mean, var,
//     saved_mean, saved_var; asking for them (and is_test=0 for v1/v6) means training statistics. v14: attribute
//     training_mode, outputs running_mean and running_var; mean/var may have their own float type (U). v15: scale
//     and B may differ from X too (T1), mean/var T2. Training: batch statistics (population variance) normalize Y;
//     running = input * momentum + current * (1 - momentum).
//   InstanceNormalization 1, 6, 22 — per (n, c) statistics over the spatial dims; v22 adds bfloat16.
//   LayerNormalization 17 — statistics over dims [axis, rank); Scale and B broadcast to them; optional Mean and
//     InvStdDev outputs (shape X.dims[:axis] + 1s) in the stash_type element type.
//   GroupNormalization 18, 21 — num_groups groups of channels; v18 scale/bias have one value per group (onyx
//     also accepts one per channel), v21 one per channel and adds stash_type.
//   RMSNormalization 23 — Y = X / sqrt(mean(X^2 over [axis, rank)) + epsilon) * scale; Y takes scale's type.
//   LpNormalization 1, 22 — X / ||X||_p along axis (p 1 or 2); a zero norm gives 0.
//   MeanVarianceNormalization 9, 13 — (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over axes (default 0, 2, 3).
//   LRN 1, 13 — X / (bias + alpha / size * sum of squares over the channel window) ^ beta.
// float32 BatchNormalization in inference and LayerNormalization with Scale/B laid out like the normalized dims run
// through the vectorized kernels (kernels/elementwise.hpp), which accumulate the statistics in float; so do float32
// GroupNormalization and InstanceNormalization (kernels/reduce.hpp: float partial sums added up in double).
#include <cmath>
#include <set>

#include "kernels/elementwise.hpp"
#include "kernels/reduce.hpp"
#include "ops/nn/compute_type.hpp"
#include "ir/tensor_alloc.hpp"

namespace onyx::ops {
namespace {

using nn::AccIn;
using nn::AccOut;

// Runs f(T{}) for X's float type with X read as doubles and Y (dtype y_dtype, dims) written from doubles.
template <class F>
void with_double_io(KernelContext& ctx, const Tensor& x, DataType y_dtype, const Dims& ydims, F&& f) {
  Tensor& y = ctx.allocate_output(0, y_dtype, ydims);
  nn::visit_float(x.dtype(), [&](auto xt) {
    using TX = decltype(xt);
    AccIn<double, TX> ix(x);
    nn::visit_float(y_dtype, [&](auto yt) {
      using TY = decltype(yt);
      AccOut<double, TY> oy(y);
      f(ix.data(), oy.data());
      oy.commit();
    });
  });
}

// Writes doubles into a new output tensor of dtype dt.
void write_doubles(KernelContext& ctx, size_t i, DataType dt, const Dims& dims, const std::vector<double>& v) {
  Tensor& t = ctx.allocate_output(i, dt, dims);
  nn::visit_float(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.mutable_data<T>();
    for (size_t k = 0; k < v.size(); ++k) p[k] = nn::from_acc<T>(v[k]);
  });
}

DataType stash_dtype(int64_t stash) {
  switch (stash) {
    case 1: return DataType::Float;
    case 10: return DataType::Float16;
    case 11: return DataType::Double;
    case 16: return DataType::BFloat16;
    default: fail("attribute 'stash_type' is ", stash, ", expected a float type (1, 10, 11 or 16)");
  }
}

void require_rank(KernelContext& ctx, const Tensor& x, size_t min_rank) {
  if (x.dims().size() < min_rank) ctx.error(cat("X has rank ", x.dims().size(), ", expected at least ", min_rank));
}

std::vector<double> read_param(KernelContext& ctx, size_t i, int64_t expected, const char* name) {
  const Tensor& t = ctx.input(i);
  if (static_cast<int64_t>(t.element_count()) != expected)
    ctx.error(cat(name, " has ", t.element_count(), " elements (shape ", shape_of(t.dims()).to_string(), "), expected ", expected));
  return read_doubles(t);
}

// ---- BatchNormalization ----

struct BatchNormAttrs {
  double epsilon = 1e-5, momentum = 0.9;
  bool spatial = true;
  bool training = false;  // v14+: training_mode; before: is_test == 0 (v1/v6) and the statistics outputs asked for
  bool is_test = false;
};

void run_batch_norm(KernelContext& ctx, const BatchNormAttrs& a, int opset) {
  const Tensor& x = ctx.input(0);
  require_rank(ctx, x, 2);
  const int64_t N = x.dims()[0], C = x.dims()[1], inner = product(x.dims(), 2);
  const int64_t P = a.spatial ? C : C * inner;  // parameter count
  std::vector<double> scale = read_param(ctx, 1, P, "scale"), bias = read_param(ctx, 2, P, "B");
  std::vector<double> mean = read_param(ctx, 3, P, "mean"), var = read_param(ctx, 4, P, "var");
  bool stats_wanted = false;
  for (size_t i = 1; i < ctx.num_outputs(); ++i) stats_wanted = stats_wanted || ctx.output_wanted(i);
  const bool training = opset >= 14 ? a.training : (stats_wanted && !a.is_test);
  auto pidx = [&](int64_t c, int64_t s) { return a.spatial ? c : c * inner + s; };
  std::vector<double> cur_mean(P, 0.0), cur_var(P, 0.0);
  const std::vector<double>* use_mean = &mean;
  const std::vector<double>* use_var = &var;
  with_double_io(ctx, x, x.dtype(), x.dims(), [&](const double* px, double* py) {
    if (training) {
      std::vector<double> cnt(P, 0.0);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t s = 0; s < inner; ++s) {
            cur_mean[pidx(c, s)] += px[(n * C + c) * inner + s];
            cnt[pidx(c, s)] += 1;
          }
      for (int64_t p = 0; p < P; ++p) cur_mean[p] = cnt[p] > 0 ? cur_mean[p] / cnt[p] : 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t s = 0; s < inner; ++s) {
            const double d = px[(n * C + c) * inner + s] - cur_mean[pidx(c, s)];
            cur_var[pidx(c, s)] += d * d;
          }
      for (int64_t p = 0; p < P; ++p) cur_var[p] = cnt[p] > 0 ? cur_var[p] / cnt[p] : 0.0;
      use_mean = &cur_mean;
      use_var = &cur_var;
    }
    std::vector<double> mul(P), add(P);
    for (int64_t p = 0; p < P; ++p) {
      mul[p] = scale[p] / std::sqrt((*use_var)[p] + a.epsilon);
      add[p] = bias[p] - (*use_mean)[p] * mul[p];
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t s = 0; s < inner; ++s) {
          const int64_t i = (n * C + c) * inner + s, p = pidx(c, s);
          py[i] = px[i] * mul[p] + add[p];
        }
  });
  if (!training) {
    // Inference: the statistics outputs (if asked for) are the inputs passed through.
    for (size_t i = 1; i < ctx.num_outputs() && i <= 2; ++i)
      if (ctx.output_wanted(i)) ctx.set_output(i, ctx.input(i + 2));
    return;
  }
  const DataType sdt = ctx.input(3).dtype();
  const Dims& sdims = ctx.input(3).dims();
  std::vector<double> run_mean(P), run_var(P);
  for (int64_t p = 0; p < P; ++p) {
    run_mean[p] = mean[p] * a.momentum + cur_mean[p] * (1 - a.momentum);
    run_var[p] = var[p] * a.momentum + cur_var[p] * (1 - a.momentum);
  }
  if (ctx.output_wanted(1)) write_doubles(ctx, 1, sdt, sdims, run_mean);
  if (ctx.output_wanted(2)) write_doubles(ctx, 2, sdt, sdims, run_var);
  if (ctx.output_wanted(3)) write_doubles(ctx, 3, sdt, sdims, cur_mean);
  if (ctx.output_wanted(4)) write_doubles(ctx, 4, sdt, sdims, cur_var);
}

// float32 inference with per-channel parameters and no statistics outputs wanted; false (nothing done) otherwise.
bool batch_norm_fast(KernelContext& ctx, const BatchNormAttrs& a, int opset) {
  if (!a.spatial || (opset >= 14 && a.training)) return false;
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.output_wanted(i)) return false;
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float || x.dims().size() < 2) return false;
  for (size_t i = 1; i <= 4; ++i)
    if (ctx.input(i).dtype() != DataType::Float) return false;
  const int64_t N = x.dims()[0], C = x.dims()[1], inner = product(x.dims(), 2);
  const std::vector<double> scale = read_param(ctx, 1, C, "scale"), bias = read_param(ctx, 2, C, "B");
  const std::vector<double> mean = read_param(ctx, 3, C, "mean"), var = read_param(ctx, 4, C, "var");
  std::vector<float> mul(C), add(C);
  for (int64_t c = 0; c < C; ++c) {
    const double m = scale[c] / std::sqrt(var[c] + a.epsilon);
    mul[c] = static_cast<float>(m);
    add[c] = static_cast<float>(bias[c] - mean[c] * m);
  }
  ctx.set_output(0, allocate_for_overwrite(DataType::Float, x.dims()));
  Tensor& y = ctx.outputs()[0].tensor;
  if (N * C * inner > 0) kernels::channel_affine(x.data<float>(), mul.data(), add.data(), y.mutable_data<float>(), N, C, inner);
  return true;
}

void infer_batch_norm(InferContext& ctx) {
  infer_same_as_input(ctx, 0, 0);
  for (size_t i = 1; i < ctx.output_types.size(); ++i) {
    const size_t src = i <= 2 ? i + 2 : 3;
    if (ctx.has_input(src)) ctx.set_output(i, ctx.input_type(src));
  }
}

// ---- InstanceNormalization ----

void run_instance_norm(KernelContext& ctx, double eps) {
  const Tensor& x = ctx.input(0);
  require_rank(ctx, x, 3);
  const int64_t N = x.dims()[0], C = x.dims()[1], inner = product(x.dims(), 2);
  std::vector<double> scale = read_param(ctx, 1, C, "scale"), bias = read_param(ctx, 2, C, "B");
  with_double_io(ctx, x, x.dtype(), x.dims(), [&](const double* px, double* py) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const double* xp = px + (n * C + c) * inner;
        double* yp = py + (n * C + c) * inner;
        double m = 0, v = 0;
        for (int64_t s = 0; s < inner; ++s) m += xp[s];
        m = inner > 0 ? m / inner : 0;
        for (int64_t s = 0; s < inner; ++s) v += (xp[s] - m) * (xp[s] - m);
        v = inner > 0 ? v / inner : 0;
        const double k = scale[c] / std::sqrt(v + eps);
        for (int64_t s = 0; s < inner; ++s) yp[s] = (xp[s] - m) * k + bias[c];
      }
  });
}

// float32 InstanceNormalization / GroupNormalization (groups channels per group, scale and bias with C values or,
// per_group_ok, `groups` values); false (nothing done) for other types and for inputs the reference kernel rejects.
bool group_norm_fast(KernelContext& ctx, int64_t groups, double eps, bool per_group_ok, size_t min_rank) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  if (x.dtype() != DataType::Float || scale.dtype() != DataType::Float || bias.dtype() != DataType::Float) return false;
  if (x.dims().size() < min_rank) return false;
  const int64_t N = x.dims()[0], C = x.dims()[1], inner = product(x.dims(), 2);
  if (groups < 1 || C % groups != 0) return false;
  const int64_t ns = static_cast<int64_t>(scale.element_count());
  const bool per_channel = !(per_group_ok && ns == groups);
  if (ns != (per_channel ? C : groups) || static_cast<int64_t>(bias.element_count()) != ns) return false;
  ctx.set_output(0, allocate_for_overwrite(DataType::Float, x.dims()));
  float* y = ctx.outputs()[0].tensor.mutable_data<float>();
  kernels::group_norm(x.data<float>(), scale.data<float>(), bias.data<float>(), per_channel, y, N, C, groups, inner, eps);
  return true;
}

// ---- LayerNormalization / RMSNormalization ----

// A parameter tensor broadcast (unidirectionally) to `inner_dims`, expanded to doubles.
std::vector<double> expand_param(KernelContext& ctx, size_t i, const Dims& inner_dims, const char* name) {
  const Tensor& t = ctx.input(i);
  Dims bd;
  try {
    bd = broadcast_dims(inner_dims, t.dims());
  } catch (const Error&) {
    bd.clear();
  }
  if (bd != inner_dims)
    ctx.error(cat(name, " of shape ", shape_of(t.dims()).to_string(), " does not broadcast to the normalized dims ",
                  shape_of(inner_dims).to_string()));
  std::vector<double> v = read_doubles(t), out(static_cast<size_t>(product(inner_dims)));
  for_each_broadcast(inner_dims, {t.dims()}, [&](int64_t k, const std::vector<int64_t>& o) { out[k] = v[o[0]]; });
  return out;
}

void run_layer_norm(KernelContext& ctx, int64_t axis_attr, double eps, DataType stash, bool rms) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  const int64_t axis = normalize_axis(axis_attr, rank);
  const int64_t outer = product(x.dims(), 0, axis), inner = product(x.dims(), axis);
  const Dims inner_dims(x.dims().begin() + axis, x.dims().end());
  std::vector<double> scale = expand_param(ctx, 1, inner_dims, "Scale");
  std::vector<double> bias;
  if (!rms && ctx.has_input(2)) bias = expand_param(ctx, 2, inner_dims, "B");
  const DataType ydt = rms ? ctx.input(1).dtype() : x.dtype();
  std::vector<double> means(outer), inv_std(outer);
  with_double_io(ctx, x, ydt, x.dims(), [&](const double* px, double* py) {
    for (int64_t o = 0; o < outer; ++o) {
      const double* xp = px + o * inner;
      double* yp = py + o * inner;
      double m = 0, v = 0;
      if (rms) {
        for (int64_t s = 0; s < inner; ++s) v += xp[s] * xp[s];
        v = inner > 0 ? v / inner : 0;
      } else {
        for (int64_t s = 0; s < inner; ++s) m += xp[s];
        m = inner > 0 ? m / inner : 0;
        for (int64_t s = 0; s < inner; ++s) v += (xp[s] - m) * (xp[s] - m);
        v = inner > 0 ? v / inner : 0;
      }
      const double is = 1.0 / std::sqrt(v + eps);
      means[o] = m;
      inv_std[o] = is;
      for (int64_t s = 0; s < inner; ++s) yp[s] = (xp[s] - m) * is * scale[s] + (bias.empty() ? 0.0 : bias[s]);
    }
  });
  if (rms) return;
  Dims sdims(x.dims().begin(), x.dims().begin() + axis);
  sdims.resize(rank, 1);
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) write_doubles(ctx, 1, stash, sdims, means);
  if (ctx.num_outputs() > 2 && ctx.output_wanted(2)) write_doubles(ctx, 2, stash, sdims, inv_std);
}

// float32 LayerNormalization whose Scale and B (if given) hold one float per normalized element in order (their dims
// are the normalized dims, maybe with leading 1s), with Mean/InvStdDev wanted only in float; false (nothing done)
// otherwise.
bool layer_norm_fast(KernelContext& ctx, int64_t axis_attr, double eps, DataType stash) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float) return false;
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  const int64_t axis = normalize_axis(axis_attr, rank);
  const Dims inner_dims(x.dims().begin() + axis, x.dims().end());
  const int64_t rows = product(x.dims(), 0, axis), len = product(inner_dims);
  auto laid_out = [&](const Tensor& t) {
    if (t.dtype() != DataType::Float || static_cast<int64_t>(t.element_count()) != len) return false;
    try {
      return broadcast_dims(inner_dims, t.dims()) == inner_dims;
    } catch (const Error&) {
      return false;
    }
  };
  const bool has_bias = ctx.has_input(2);
  if (!laid_out(ctx.input(1)) || (has_bias && !laid_out(ctx.input(2)))) return false;
  const bool want_mean = ctx.num_outputs() > 1 && ctx.output_wanted(1);
  const bool want_inv = ctx.num_outputs() > 2 && ctx.output_wanted(2);
  if ((want_mean || want_inv) && stash != DataType::Float) return false;
  ctx.set_output(0, allocate_for_overwrite(DataType::Float, x.dims()));
  Tensor& y = ctx.outputs()[0].tensor;
  Dims sdims(x.dims().begin(), x.dims().begin() + axis);
  sdims.resize(rank, 1);
  float* mean = want_mean ? ctx.allocate_output(1, DataType::Float, sdims).mutable_data<float>() : nullptr;
  float* inv = want_inv ? ctx.allocate_output(2, DataType::Float, sdims).mutable_data<float>() : nullptr;
  if (rows > 0)
    kernels::layer_norm(x.data<float>(), ctx.input(1).data<float>(), has_bias ? ctx.input(2).data<float>() : nullptr,
                        y.mutable_data<float>(), rows, len, static_cast<float>(eps), mean, inv);
  return true;
}

void infer_layer_norm(InferContext& ctx, bool rms) {
  const Type& tx = ctx.input_type(0);
  DataType ydt = rms && ctx.has_input(1) ? ctx.input_dtype(1) : tx.elem;
  ctx.set_output(0, Type::tensor(ydt, tx.shape));
  if (rms) return;
  const DataType sdt = stash_dtype(ctx.attrs.get_int("stash_type", 1));
  Shape s;
  if (tx.shape.rank_known) {
    const int64_t rank = static_cast<int64_t>(tx.shape.dims.size());
    const int64_t axis = normalize_axis(ctx.attrs.get_int("axis", -1), rank);
    s = tx.shape;
    for (int64_t i = axis; i < rank; ++i) s.dims[i] = known_dim(1);
  }
  ctx.set_output(1, Type::tensor(sdt, s));
  ctx.set_output(2, Type::tensor(sdt, s));
}

// ---- GroupNormalization ----

void run_group_norm(KernelContext& ctx, int64_t groups, double eps, int opset) {
  const Tensor& x = ctx.input(0);
  require_rank(ctx, x, 2);
  const int64_t N = x.dims()[0], C = x.dims()[1], inner = product(x.dims(), 2);
  if (groups < 1 || C % groups != 0) ctx.error(cat("num_groups ", groups, " does not divide the ", C, " channels"));
  const int64_t per = C / groups;
  const int64_t ns = static_cast<int64_t>(ctx.input(1).element_count());
  const bool per_group = opset < 21 && ns == groups;
  if (!per_group && ns != C)
    ctx.error(cat("scale has ", ns, " elements, expected ", opset < 21 ? cat(groups, " (num_groups) or ") : std::string(), C));
  std::vector<double> scale = read_param(ctx, 1, ns, "scale"), bias = read_param(ctx, 2, ns, "bias");
  with_double_io(ctx, x, x.dtype(), x.dims(), [&](const double* px, double* py) {
    const int64_t gsize = per * inner;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        const double* xp = px + (n * C + g * per) * inner;
        double* yp = py + (n * C + g * per) * inner;
        double m = 0, v = 0;
        for (int64_t s = 0; s < gsize; ++s) m += xp[s];
        m = gsize > 0 ? m / gsize : 0;
        for (int64_t s = 0; s < gsize; ++s) v += (xp[s] - m) * (xp[s] - m);
        v = gsize > 0 ? v / gsize : 0;
        const double is = 1.0 / std::sqrt(v + eps);
        for (int64_t s = 0; s < gsize; ++s) {
          const int64_t p = per_group ? g : g * per + s / std::max<int64_t>(inner, 1);
          yp[s] = (xp[s] - m) * is * scale[p] + bias[p];
        }
      }
  });
}

// ---- LpNormalization ----

void run_lp_norm(KernelContext& ctx, int64_t axis_attr, int64_t p) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  const int64_t axis = normalize_axis(axis_attr, rank);
  const int64_t outer = product(x.dims(), 0, axis), len = x.dims()[axis], inner = product(x.dims(), axis + 1);
  with_double_io(ctx, x, x.dtype(), x.dims(), [&](const double* px, double* py) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        double norm = 0;
        for (int64_t k = 0; k < len; ++k) {
          const double v = px[base + k * inner];
          norm += p == 1 ? std::abs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        for (int64_t k = 0; k < len; ++k) py[base + k * inner] = norm == 0 ? 0.0 : px[base + k * inner] / norm;
      }
  });
}

// ---- MeanVarianceNormalization ----

void run_mvn(KernelContext& ctx, const Dims& axes_attr) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  Dims red = x.dims();
  std::set<int64_t> seen;
  for (int64_t a : axes_attr) {
    const int64_t ax = normalize_axis(a, rank, "axes value");
    if (!seen.insert(ax).second) ctx.error(cat("axes has duplicate axis ", a));
    red[ax] = 1;
  }
  const int64_t groups = product(red);
  const int64_t total = product(x.dims());
  std::vector<int64_t> gi(static_cast<size_t>(total));
  for_each_broadcast(x.dims(), {red}, [&](int64_t i, const std::vector<int64_t>& o) { gi[i] = o[0]; });
  with_double_io(ctx, x, x.dtype(), x.dims(), [&](const double* px, double* py) {
    std::vector<double> s(groups, 0.0), s2(groups, 0.0), cnt(groups, 0.0);
    for (int64_t i = 0; i < total; ++i) {
      s[gi[i]] += px[i];
      s2[gi[i]] += px[i] * px[i];
      cnt[gi[i]] += 1;
    }
    for (int64_t g = 0; g < groups; ++g) {
      if (cnt[g] == 0) continue;
      s[g] /= cnt[g];
      s2[g] = std::sqrt(std::max(0.0, s2[g] / cnt[g] - s[g] * s[g])) + 1e-9;
    }
    for (int64_t i = 0; i < total; ++i) py[i] = (px[i] - s[gi[i]]) / s2[gi[i]];
  });
}

// ---- LRN ----

void run_lrn(KernelContext& ctx, double alpha, double beta, double bias, int64_t size) {
  const Tensor& x = ctx.input(0);
  require_rank(ctx, x, 2);
  const int64_t N = x.dims()[0], C = x.dims()[1], inner = product(x.dims(), 2);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor and ceil of (size-1)/2
  with_double_io(ctx, x, x.dtype(), x.dims(), [&](const double* px, double* py) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t c0 = std::max<int64_t>(0, c - lo), c1 = std::min<int64_t>(C - 1, c + hi);
        for (int64_t s = 0; s < inner; ++s) {
          double sq = 0;
          for (int64_t k = c0; k <= c1; ++k) {
            const double v = px[(n * C + k) * inner + s];
            sq += v * v;
          }
          const int64_t i = (n * C + c) * inner + s;
          py[i] = px[i] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
        }
      }
  });
}

// Float32 LRN: squares summed over the channel window in float, x * (bias + alpha/size * sum)^-beta, planes
// split over the OpenMP team; beta = 0.75 (AlexNet's and GoogLeNet's) as two square roots instead of pow.
void run_lrn_float(KernelContext& ctx, float alpha, float beta, float bias, int64_t size) {
  const Tensor& x = ctx.input(0);
  const int64_t N = x.dims()[0], C = x.dims()[1], inner = product(x.dims(), 2);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  ctx.set_output(0, allocate_for_overwrite(DataType::Float, x.dims()));
  float* py = ctx.outputs()[0].tensor.mutable_data<float>();
  const float* px = x.data<float>();
  const float scale = alpha / static_cast<float>(size);
  const bool three_quarters = beta == 0.75f;
#pragma omp parallel for schedule(static) if (N * C * inner > (int64_t{1} << 15))
  for (int64_t plane = 0; plane < N * C; ++plane) {
    const int64_t n = plane / C, c = plane % C;
    const int64_t c0 = std::max<int64_t>(0, c - lo), c1 = std::min<int64_t>(C - 1, c + hi);
    const float* xc = px + plane * inner;
    float* yc = py + plane * inner;
    for (int64_t s = 0; s < inner; ++s) yc[s] = 0;
    for (int64_t k = c0; k <= c1; ++k) {
      const float* xk = px + (n * C + k) * inner;
      for (int64_t s = 0; s < inner; ++s) yc[s] += xk[s] * xk[s];
    }
    for (int64_t s = 0; s < inner; ++s) {
      const float d = bias + scale * yc[s];
      yc[s] = three_quarters ? xc[s] / (std::sqrt(d) * std::sqrt(std::sqrt(d))) : xc[s] * std::pow(d, -beta);
    }
  }
}

}  // namespace

void register_normalization(Registry& r) {
  using D = DataType;
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> fb = {D::Float16, D::Float, D::Double, D::BFloat16};
  auto same = [](InferContext& ctx) { infer_same_as_input(ctx); };

  // BatchNormalization
  for (int v : {1, 6, 7, 9, 14, 15}) {
    std::vector<TypeConstraint> types;
    if (v < 14) types = {{{0, 1, 2, 3, 4}, f}};
    else if (v == 14) types = {{{0, 1, 2}, fb}, {{3, 4}, fb}};
    else types = {{{0}, fb}, {{1, 2}, fb}, {{3, 4}, fb}};
    auto kernel = [v](const KernelInit& init) {
      BatchNormAttrs a;
      a.epsilon = init.attrs.get_float("epsilon", 1e-5f);
      a.momentum = init.attrs.get_float("momentum", 0.9f);
      if (v < 9) a.spatial = init.attrs.get_int("spatial", 1) != 0;
      if (v < 7) a.is_test = init.attrs.get_int("is_test", 0) != 0;
      if (v >= 14) a.training = init.attrs.get_int("training_mode", 0) != 0;
      const bool fast = !init.reference_only;
      return make_kernel([a, v, fast](KernelContext& ctx) {
        if (!fast || !batch_norm_fast(ctx, a, v)) run_batch_norm(ctx, a, v);
      });
    };
    add_versions(r, "", "BatchNormalization", {v}, types, infer_batch_norm, kernel);
  }

  auto in_kernel = [](const KernelInit& init) {
    const double eps = init.attrs.get_float("epsilon", 1e-5f);
    const bool fast = !init.reference_only;
    return make_kernel([eps, fast](KernelContext& ctx) {
      // One group per channel.
      const Tensor& x = ctx.input(0);
      const int64_t C = x.dims().size() >= 3 ? x.dims()[1] : 0;
      if (!fast || !group_norm_fast(ctx, C, eps, false, 3)) run_instance_norm(ctx, eps);
    });
  };
  add_versions(r, "", "InstanceNormalization", {1, 6}, {{{0, 1, 2}, f}}, same, in_kernel);
  add_versions(r, "", "InstanceNormalization", {22}, {{{0, 1, 2}, fb}}, same, in_kernel);

  auto ln_kernel = [](bool rms) {
    return [rms](const KernelInit& init) {
      const int64_t axis = init.attrs.get_int("axis", -1);
      const double eps = init.attrs.get_float("epsilon", 1e-5f);
      const DataType stash = stash_dtype(init.attrs.get_int("stash_type", 1));
      const bool fast = !init.reference_only && !rms;
      return make_kernel([=](KernelContext& ctx) {
        if (!fast || !layer_norm_fast(ctx, axis, eps, stash)) run_layer_norm(ctx, axis, eps, stash, rms);
      });
    };
  };
  add_versions(r, "", "LayerNormalization", {17}, {{{0, 1, 2}, fb}},
               [](InferContext& ctx) { infer_layer_norm(ctx, false); }, ln_kernel(false));
  add_versions(r, "", "RMSNormalization", {23}, {{{0}, fb}, {{1}, fb}},
               [](InferContext& ctx) { infer_layer_norm(ctx, true); }, ln_kernel(true));

  for (int v : {18, 21}) {
    auto kernel = [v](const KernelInit& init) {
      const double eps = init.attrs.get_float("epsilon", 1e-5f);
      const int64_t groups = init.attrs.get_int("num_groups");
      if (v >= 21) stash_dtype(init.attrs.get_int("stash_type", 1));
      const bool fast = !init.reference_only;
      return make_kernel([=](KernelContext& ctx) {
        if (!fast || !group_norm_fast(ctx, groups, eps, v < 21, 2)) run_group_norm(ctx, groups, eps, v);
      });
    };
    add_versions(r, "", "GroupNormalization", {v}, {{{0, 1, 2}, fb}}, same, kernel);
  }

  auto lp_kernel = [](const KernelInit& init) {
    const int64_t axis = init.attrs.get_int("axis", -1), p = init.attrs.get_int("p", 2);
    if (p != 1 && p != 2) fail("attribute 'p' is ", p, ", expected 1 or 2");
    return make_kernel([=](KernelContext& ctx) { run_lp_norm(ctx, axis, p); });
  };
  add_versions(r, "", "LpNormalization", {1}, {{{0}, f}}, same, lp_kernel);
  add_versions(r, "", "LpNormalization", {22}, {{{0}, fb}}, same, lp_kernel);

  auto mvn_kernel = [](const KernelInit& init) {
    const Dims axes = init.attrs.get_ints("axes", Dims{0, 2, 3});
    return make_kernel([axes](KernelContext& ctx) { run_mvn(ctx, axes); });
  };
  add_versions(r, "", "MeanVarianceNormalization", {9}, {{{0}, f}}, same, mvn_kernel);
  add_versions(r, "", "MeanVarianceNormalization", {13}, {{{0}, fb}}, same, mvn_kernel);

  auto lrn_kernel = [](const KernelInit& init) {
    const double alpha = init.attrs.get_float("alpha", 1e-4f), beta = init.attrs.get_float("beta", 0.75f);
    const double bias = init.attrs.get_float("bias", 1.0f);
    const int64_t size = init.attrs.get_int("size");
    if (size < 1) fail("attribute 'size' is ", size, ", expected at least 1");
    if (init.reference_only) return make_kernel([=](KernelContext& ctx) { run_lrn(ctx, alpha, beta, bias, size); });
    return make_kernel([=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      if (x.dtype() == DataType::Float && x.dims().size() >= 2 && x.element_count() > 0)
        run_lrn_float(ctx, static_cast<float>(alpha), static_cast<float>(beta), static_cast<float>(bias), size);
      else
        run_lrn(ctx, alpha, beta, bias, size);
    });
  };
  add_versions(r, "", "LRN", {1}, {{{0}, f}}, same, lrn_kernel);
  add_versions(r, "", "LRN", {13}, {{{0}, fb}}, same, lrn_kernel);
  r.set_fast_kernels("", "BatchNormalization", {"inference on float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "InstanceNormalization", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "LayerNormalization", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "GroupNormalization", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "LRN", {"float32 of rank 2 or more: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
}

}  // namespace onyx::ops
