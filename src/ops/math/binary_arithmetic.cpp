// ai.onnx Add, Sub, Mul, Div — versions 1, 6, 7, 13, 14.
// v1/v6: no implicit broadcasting; with broadcast=1, B is aligned to A starting at `axis` (default: B's dims are
//        A's trailing dims). v7+: numpy broadcasting. v13 adds bfloat16, v14 adds 8/16-bit integers.
// Integer Div truncates toward zero; division by zero is an error; INT_MIN / -1 wraps to INT_MIN.
// float32 runs through the vectorized kernels (kernels/elementwise.hpp); other types use the reference loops.
// Inference: on int32/int64 shape tensors (0-D or 1-D, symbolic dim values, see InferContext) the output's dim
// values are computed element by element: exactly where both are static (Shape(x)[1] * 2 of x [N,3] holds 6),
// the symbol where the other side is an identity (N + 0, N * 1, N / 1), 0 for N * 0 and N - N, else unknown.
#include <algorithm>
#include <limits>
#include <optional>

#include "kernels/elementwise.hpp"
#include "ops/math/legacy_broadcast.hpp"
#include "ops/gradient_rule.hpp"
#include "ir/tensor_alloc.hpp"

namespace onyx::ops {
namespace {

enum class Arith { Add, Sub, Mul, Div };

template <class T>
T apply(Arith op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = wide_unsigned_t<T>;
    switch (op) {  // wrap-around like the hardware, without signed-overflow UB
      case Arith::Add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case Arith::Sub: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
      case Arith::Mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case Arith::Div:
        if (b == 0) fail("integer division by zero");
        if constexpr (std::is_signed_v<T>)
          if (a == std::numeric_limits<T>::min() && b == -1) return a;
        return static_cast<T>(a / b);
    }
  } else {
    switch (op) {
      case Arith::Add: return a + b;
      case Arith::Sub: return a - b;
      case Arith::Mul: return a * b;
      case Arith::Div: return a / b;
    }
  }
  return T{};
}

// One element of an integer shape computation.
Dim combine_dims(Arith op, const Dim& a, const Dim& b, DataType dt) {
  const Dim zero{0, {}, {}};
  if (a.value && b.value) {
    const int64_t x = *a.value, y = *b.value;
    int64_t r = 0;
    switch (op) {
      case Arith::Add:
        if (__builtin_add_overflow(x, y, &r)) return {};
        break;
      case Arith::Sub:
        if (__builtin_sub_overflow(x, y, &r)) return {};
        break;
      case Arith::Mul:
        if (__builtin_mul_overflow(x, y, &r)) return {};
        break;
      case Arith::Div:
        if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1)) return {};
        r = x / y;
        break;
    }
    if (dt == DataType::Int32 && (r < std::numeric_limits<int32_t>::min() || r > std::numeric_limits<int32_t>::max())) return {};
    return known_dim(r);
  }
  if (b.value) {
    const int64_t y = *b.value;
    if ((op == Arith::Add || op == Arith::Sub) && y == 0) return a;
    if ((op == Arith::Mul || op == Arith::Div) && y == 1) return a;
    if (op == Arith::Mul && y == 0) return zero;
    return {};
  }
  if (a.value) {
    const int64_t x = *a.value;
    if (op == Arith::Add && x == 0) return b;
    if (op == Arith::Mul && x == 1) return b;
    if (op == Arith::Mul && x == 0) return zero;
    return {};
  }
  if (op == Arith::Sub && !a.param.empty() && a.param == b.param) return zero;
  return {};
}

// Dim values of the output when the inputs are integer lists of dims (at least one symbolic, e.g. from Shape).
void arith_dim_values(InferContext& ctx, Arith op) {
  if (!ctx.has_input_dim_values(0) && !ctx.has_input_dim_values(1)) return;
  const DataType dt = ctx.input_dtype(0);
  if ((dt != DataType::Int64 && dt != DataType::Int32) || ctx.input_dtype(1) != dt) return;
  auto a = ctx.input_as_dims(0), b = ctx.input_as_dims(1);
  if (!a || !b || a->empty() || b->empty()) return;
  const size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1)) return;
  std::vector<Dim> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(combine_dims(op, (*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i], dt));
  ctx.set_output_dim_values(0, std::move(out));
}

void run_arith(Arith op, KernelContext& ctx, bool legacy, std::optional<int64_t> axis) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  Dims bd = legacy ? legacy_broadcast(a.dims(), b.dims(), axis) : b.dims();
  Dims out = broadcast_dims(a.dims(), bd);
  Tensor& y = ctx.allocate_output(0, a.dtype(), out);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* py = y.mutable_data<T>();
      if (a.dims() == out && bd == out) {
        for (int64_t i = 0, n = product(out); i < n; ++i) py[i] = apply(op, pa[i], pb[i]);
      } else {
        for_each_broadcast(out, {a.dims(), bd}, [&](int64_t i, const std::vector<int64_t>& o) { py[i] = apply(op, pa[o[0]], pb[o[1]]); });
      }
    } else if constexpr (is_small_float_v<T>) {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* py = y.mutable_data<T>();
      for_each_broadcast(out, {a.dims(), bd}, [&](int64_t i, const std::vector<int64_t>& o) {
        py[i] = T(apply(op, static_cast<float>(pa[o[0]]), static_cast<float>(pb[o[1]])));
      });
    } else {
      ctx.error(cat("element type ", a.dtype(), " is not supported"));
    }
  });
}

// float32 A and B through the vectorized kernel; false (nothing done) for other element types.
bool run_fast_arith(Arith op, KernelContext& ctx, bool legacy, std::optional<int64_t> axis) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != DataType::Float || b.dtype() != DataType::Float) return false;
  const Dims bd = legacy ? legacy_broadcast(a.dims(), b.dims(), axis) : b.dims();
  const Dims out = broadcast_dims(a.dims(), bd);
  // In place into an input that dies here and has the output's shape: the kernel reads y[i]'s operands at the
  // same offset i of that input before writing y[i] (the other side is a different buffer).
  Tensor* y = a.dims() == out ? ctx.reuse_input(0, 0, DataType::Float, out) : nullptr;
  if (!y && bd == out) y = ctx.reuse_input(1, 0, DataType::Float, out);
  if (!y) {
    ctx.set_output(0, allocate_for_overwrite(DataType::Float, out));
    y = &ctx.outputs()[0].tensor;
  }
  constexpr kernels::BinaryOp kops[] = {kernels::BinaryOp::Add, kernels::BinaryOp::Sub, kernels::BinaryOp::Mul,
                                        kernels::BinaryOp::Div};
  kernels::binary(kops[static_cast<int>(op)], a.data<float>(), a.dims(), b.data<float>(), bd, y->mutable_data<float>(), out);
  return true;
}

void add_op(Registry& r, const char* name, Arith op) {
  using D = DataType;
  const std::vector<DataType> v1 = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> v7 = {D::Float16, D::Float, D::Double, D::Int32, D::Int64, D::UInt32, D::UInt64};
  std::vector<DataType> v13 = v7;
  v13.push_back(D::BFloat16);
  const std::vector<DataType> v14 = kNumericTypes;
  auto infer = [op](InferContext& ctx) {
    if (ctx.opset < 7 && ctx.attrs.get_int("broadcast", 0)) {
      infer_same_as_input(ctx);
      return;
    }
    infer_broadcast(ctx);
    arith_dim_values(ctx, op);
  };
  auto kernel = [op](const KernelInit& init) {
    const bool fast = !init.reference_only;
    return make_kernel([op, fast](KernelContext& ctx) {
      if (!fast || !run_fast_arith(op, ctx, false, std::nullopt)) run_arith(op, ctx, false, std::nullopt);
    });
  };
  auto legacy_kernel = [op](const KernelInit& init) {
    bool legacy = init.attrs.get_int("broadcast", 0) != 0;
    std::optional<int64_t> axis;
    if (init.attrs.has("axis")) axis = init.attrs.get_int("axis");
    const bool fast = !init.reference_only;
    return make_kernel([op, legacy, axis, fast](KernelContext& ctx) {
      // Without broadcast=1 the shapes must match exactly.
      if (!legacy && ctx.input(0).dims() != ctx.input(1).dims()) ctx.error("shapes differ and broadcast is not set");
      if (!fast || !run_fast_arith(op, ctx, legacy, axis)) run_arith(op, ctx, legacy, axis);
    });
  };
  add_versions(r, "", name, {1}, {{{0, 1}, v1}}, infer, legacy_kernel);
  add_versions(r, "", name, {6}, {{{0, 1}, v7}}, infer, legacy_kernel);
  add_versions(r, "", name, {7}, {{{0, 1}, v7}}, infer, kernel);
  add_versions(r, "", name, {13}, {{{0, 1}, v13}}, infer, kernel);
  add_versions(r, "", name, {14}, {{{0, 1}, v14}}, infer, kernel);
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

void rule_add(grad::Args& a) {
  grad::binary(a, [](double g, int64_t, int64_t, int64_t, double& da, double& db) { da += g, db += g; });
}

void rule_sub(grad::Args& a) {
  grad::binary(a, [](double g, int64_t, int64_t, int64_t, double& da, double& db) { da += g, db -= g; });
}

void rule_mul(grad::Args& a) {
  const std::vector<double> x = a.x(0), w = a.x(1);
  grad::binary(a, [&](double g, int64_t, int64_t i, int64_t j, double& da, double& db) { da += g * w[j], db += g * x[i]; });
}

void rule_div(grad::Args& a) {
  const std::vector<double> x = a.x(0), w = a.x(1);
  grad::binary(a, [&](double g, int64_t, int64_t i, int64_t j, double& da, double& db) {
    da += g / w[j];
    db -= g * x[i] / (w[j] * w[j]);
  });
}

}  // namespace

void register_binary_arithmetic(Registry& r) {
  add_op(r, "Add", Arith::Add);
  add_op(r, "Sub", Arith::Sub);
  add_op(r, "Mul", Arith::Mul);
  add_op(r, "Div", Arith::Div);
  r.set_gradient("", "Add", rule_add);
  r.set_gradient("", "Sub", rule_sub);
  r.set_gradient("", "Mul", rule_mul);
  r.set_gradient("", "Div", rule_div);
  r.set_fast_kernels("", "Add", {"float32 (and int32/int64 elementwise): vectorized loops over the broadcast shape"});
  r.set_fast_kernels("", "Sub", {"float32 (and int32/int64 elementwise): vectorized loops over the broadcast shape"});
  r.set_fast_kernels("", "Mul", {"float32 (and int32/int64 elementwise): vectorized loops over the broadcast shape"});
  r.set_fast_kernels("", "Div", {"float32 (and int32/int64 elementwise): vectorized loops over the broadcast shape"});
}

}  // namespace onyx::ops
