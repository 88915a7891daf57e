// ai.onnx Max, Min (1, 6, 8, 12, 13); Mean, Sum (1, 6, 8, 13): elementwise over one or more inputs.
// v1: float16/float/double, attribute consumed_inputs (legacy, ignored); v1 and v6 require all inputs to have the
//     same shape. v8: multidirectional (numpy) broadcasting. Max/Min v12: all integer types too. v13: +bfloat16.
// Max/Min propagate NaN. Sum and Mean accumulate in double and round once, except float32 Sum of same-shape inputs,
// which adds in float through the vectorized kernel (kernels/elementwise.hpp). Float32 Max/Min of two inputs (each
// full-shaped or one value) take one vectorized pass.
#include <cstring>

#include "kernels/elementwise.hpp"
#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"
#include "ir/tensor_alloc.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

enum class Var { Max, Min, Sum, Mean };

template <class A>
bool is_nan(A x) {
  if constexpr (std::is_floating_point_v<A>)
    return std::isnan(x);
  else
    return false;
}

template <class A>
void combine(Var op, A& r, A x) {
  switch (op) {
    case Var::Max:
      if (is_nan(x) || x > r) r = x;  // a NaN already in r stays (x > NaN is false)
      break;
    case Var::Min:
      if (is_nan(x) || x < r) r = x;
      break;
    case Var::Sum:
    case Var::Mean: r += x; break;
  }
}

// Combines the inputs (of C++ type T) elementwise in type A over the output dims and writes y; no buffer beyond y.
template <class T, class A>
void reduce_inputs(Var op, const std::vector<const Tensor*>& ins, Tensor& y) {
  auto load = [](const T& v) -> A {
    if constexpr (is_small_float_v<T>)
      return static_cast<A>(static_cast<float>(v));
    else
      return static_cast<A>(v);
  };
  std::vector<const T*> ps;
  std::vector<Dims> dims;
  for (const Tensor* t : ins) {
    ps.push_back(t->data<T>());
    dims.push_back(t->dims());
  }
  T* py = y.mutable_data<T>();
  const A count = static_cast<A>(ins.size());
  auto finish = [&](int64_t i, A v) {
    if (op == Var::Mean) v = v / count;
    if constexpr (is_small_float_v<T>)
      py[i] = from_double<T>(v);
    else
      py[i] = static_cast<T>(v);
  };
  const Dims& out = y.dims();
  bool same = true;
  for (const Dims& d : dims) same = same && d == out;
  if (same) {
    for (int64_t i = 0, n = product(out); i < n; ++i) {
      A v = load(ps[0][i]);
      for (size_t k = 1; k < ps.size(); ++k) combine(op, v, load(ps[k][i]));
      finish(i, v);
    }
  } else {
    for_each_broadcast(out, dims, [&](int64_t i, const std::vector<int64_t>& o) {
      A v = load(ps[0][o[0]]);
      for (size_t k = 1; k < ps.size(); ++k) combine(op, v, load(ps[k][o[k]]));
      finish(i, v);
    });
  }
}

void run_variadic(KernelContext& ctx, Var op, bool same_shapes) {
  if (ctx.num_inputs() == 0) ctx.error("needs at least one input");
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) ctx.error(cat("input ", i, " is missing"));
    ins.push_back(&ctx.input(i));
  }
  const DataType dt = ins[0]->dtype();
  Dims out = ins[0]->dims();
  for (size_t i = 1; i < ins.size(); ++i) {
    if (ins[i]->dtype() != dt)
      ctx.error(cat("input ", i, " has element type ", ins[i]->dtype(), " but input 0 has ", dt));
    if (same_shapes && ins[i]->dims() != ins[0]->dims())
      ctx.error(cat("input ", i, " has shape ", shape_of(ins[i]->dims()).to_string(), " but input 0 has ",
                    shape_of(ins[0]->dims()).to_string(), "; inputs must have the same shape before opset 8"));
    out = broadcast_dims(out, ins[i]->dims());
  }
  Tensor& y = ctx.allocate_output(0, dt, out);
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const bool sum = op == Var::Sum || op == Var::Mean;
    if constexpr (is_float_like_v<T>) {
      if (sum)
        reduce_inputs<T, double>(op, ins, y);
      else if constexpr (is_small_float_v<T>)
        reduce_inputs<T, float>(op, ins, y);
      else
        reduce_inputs<T, T>(op, ins, y);
    } else if constexpr (is_int_v<T>) {
      if (sum) ctx.error(cat("element type ", dt, " is not supported"));
      reduce_inputs<T, T>(op, ins, y);
    } else {
      ctx.error(cat("element type ", dt, " is not supported"));
    }
  });
}

// float32 Sum of inputs that all have the same shape; false (nothing done) otherwise.
bool sum_fast(KernelContext& ctx) {
  const size_t k = ctx.num_inputs();
  if (k == 0) return false;
  for (size_t i = 0; i < k; ++i)
    if (!ctx.has_input(i) || ctx.input(i).dtype() != D::Float || ctx.input(i).dims() != ctx.input(0).dims()) return false;
  const Tensor& x0 = ctx.input(0);
  ctx.set_output(0, allocate_for_overwrite(D::Float, x0.dims()));
  Tensor& y = ctx.outputs()[0].tensor;
  const int64_t n = static_cast<int64_t>(x0.element_count());
  if (n == 0) return true;
  float* py = y.mutable_data<float>();
  if (k == 1) {
    std::memcpy(py, x0.data<float>(), static_cast<size_t>(n) * sizeof(float));
    return true;
  }
  kernels::binary_same(kernels::BinaryOp::Add, x0.data<float>(), ctx.input(1).data<float>(), py, n);
  for (size_t i = 2; i < k; ++i) kernels::binary_same(kernels::BinaryOp::Add, py, ctx.input(i).data<float>(), py, n);
  return true;
}

// float32 Max/Min of two inputs, each of the output's shape or a single value (a threshold, as TensorFlow exports
// of leaky activations and clamps write): one vectorized pass, combining in the reference's order. False (nothing
// done) otherwise.
template <Var op>
bool min_max_fast(KernelContext& ctx) {
  if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1)) return false;
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != D::Float || b.dtype() != D::Float) return false;
  const Dims out = broadcast_dims(a.dims(), b.dims());
  const bool a_full = a.dims() == out, b_full = b.dims() == out;
  if (!(a_full || a.element_count() == 1) || !(b_full || b.element_count() == 1)) return false;
  ctx.set_output(0, allocate_for_overwrite(D::Float, out));
  float* y = ctx.outputs()[0].tensor.mutable_data<float>();
  const int64_t n = product(out);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const int64_t sa = a_full ? 1 : 0, sb = b_full ? 1 : 0;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float x = pa[i * sa], v = pb[i * sb];
    if constexpr (op == Var::Max) y[i] = (v != v || v > x) ? v : x;  // NaN propagates, as in combine()
    else y[i] = (v != v || v < x) ? v : x;
  }
  return true;
}

void infer_variadic(InferContext& ctx, bool same_shapes) {
  if (ctx.num_inputs() == 0) ctx.error("needs at least one input");
  DataType dt = DataType::Undefined;
  const Shape* first = nullptr;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) ctx.error(cat("input ", i, " is missing"));
    DataType t = ctx.input_dtype(i);
    if (t != DataType::Undefined) {
      if (dt != DataType::Undefined && t != dt) ctx.error(cat("inputs have different element types ", dt, " and ", t));
      dt = t;
    }
    const Shape& s = ctx.input_type(i).shape;
    if (!same_shapes || !s.rank_known) continue;
    if (!first) {
      first = &s;
      continue;
    }
    bool differ = s.dims.size() != first->dims.size();
    for (size_t d = 0; !differ && d < s.dims.size(); ++d)
      differ = s.dims[d].value && first->dims[d].value && *s.dims[d].value != *first->dims[d].value;
    if (differ)
      ctx.error(cat("input ", i, " has shape ", s.to_string(), " but another input has ", first->to_string(),
                    "; inputs must have the same shape before opset 8"));
  }
  infer_broadcast(ctx, dt);
}

void add_variadic_op(Registry& r, const char* name, Var op) {
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  std::vector<DataType> f13 = f;
  f13.push_back(D::BFloat16);
  std::vector<DataType> numeric = kIntTypes;
  numeric.insert(numeric.end(), f.begin(), f.end());
  auto infer = [](bool same) { return [same](InferContext& ctx) { infer_variadic(ctx, same); }; };
  auto kernel = [op](bool same) {
    return [op, same](const KernelInit& init) {
      const bool fast = !init.reference_only;
      return make_kernel([op, same, fast](KernelContext& ctx) {
        bool done = false;
        if (fast && op == Var::Sum) done = sum_fast(ctx);
        if (fast && op == Var::Max && !same) done = min_max_fast<Var::Max>(ctx);
        if (fast && op == Var::Min && !same) done = min_max_fast<Var::Min>(ctx);
        if (!done) run_variadic(ctx, op, same);
      });
    };
  };
  add_versions(r, "", name, {1, 6}, {{{-1}, f}}, infer(true), kernel(true));
  add_versions(r, "", name, {8}, {{{-1}, f}}, infer(false), kernel(false));
  if (op == Var::Max || op == Var::Min) {
    add_versions(r, "", name, {12}, {{{-1}, numeric}}, infer(false), kernel(false));
    add_versions(r, "", name, {13}, {{{-1}, kNumericTypes}}, infer(false), kernel(false));
  } else {
    add_versions(r, "", name, {13}, {{{-1}, f13}}, infer(false), kernel(false));
  }
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

// Sum / Mean of any number of inputs, broadcasting.
void variadic(grad::Args& a, double scale) {
  grad::Grad g = a.dy();
  for (double& v : g.v) v *= scale;
  for (size_t i = 0; i < a.in.size(); ++i)
    if (a.wants(i)) a.set(i, grad::sum_to(g, a.in_dims(i)));
}

void rule_sum(grad::Args& a) { variadic(a, 1.0); }

void rule_mean(grad::Args& a) { variadic(a, 1.0 / static_cast<double>(a.in.size())); }

}  // namespace

void register_variadic(Registry& r) {
  add_variadic_op(r, "Max", Var::Max);
  add_variadic_op(r, "Min", Var::Min);
  add_variadic_op(r, "Mean", Var::Mean);
  add_variadic_op(r, "Sum", Var::Sum);
  r.set_gradient("", "Sum", rule_sum);
  r.set_gradient("", "Mean", rule_mean);
  r.set_fast_kernels("", "Sum", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Max", {"two float32 inputs: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Min", {"two float32 inputs: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
}

}  // namespace onyx::ops
