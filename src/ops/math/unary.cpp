// ai.onnx element-wise math functions of one input.
//   Abs, Neg, Reciprocal, Sqrt, Exp, Log, Ceil, Floor — versions 1, 6, 13. v1 has the legacy `consumed_inputs`
//     attribute (ignored). Abs-6 takes every numeric type, Neg-6 the signed ones, the others float types;
//     v13 adds bfloat16.
//   Round 11, 22 (22 adds bfloat16): round half to even.
//   Sign 9, 13 and Erf 9, 13: every numeric type (13 adds bfloat16).
//   Sin, Cos, Tan, Asin, Acos, Atan 7, 22; Sinh, Cosh, Asinh, Acosh, Atanh 9, 22: float types (22 adds bfloat16).
//   IsInf 10, 20: float/double, 20 adds float16, bfloat16 and the four float8 types; attributes detect_negative,
//     detect_positive. IsNaN 9, 13, 20: float16/float/double, 13 adds bfloat16, 20 the float8 types.
//   Not 1: bool.
// Float types compute in double (float16/bfloat16 through float) and round once to the element type. Integer
// Abs/Neg wrap at the minimum value (two's complement, no UB); integer Erf rounds erf(x) to the nearest integer.
// float32 Exp and Erf run through the vectorized kernels (kernels/elementwise.hpp).
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "kernels/elementwise.hpp"
#include "ops/op_kit.hpp"
#include "ir/tensor_alloc.hpp"
#include "ops/math/elementwise_unary.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
using TypeList = std::vector<DataType>;

template <class T>
T wrap_neg(T v) {
  if constexpr (std::is_signed_v<T>) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(v));
  else return static_cast<T>(0u - v);  // unsigned negation wraps (Neg admits no unsigned type)
}

template <class T>
T int_abs(T v) {
  if constexpr (std::is_signed_v<T>) return v < 0 ? wrap_neg(v) : v;
  else return v;
}

// Rounds a double into integer T (nearest, saturating; NaN gives 0) — for integer Erf.
template <class T>
T round_to_int(double d) {
  if (std::isnan(d)) return 0;
  d = std::nearbyint(d);
  if (d <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (d >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(d);
}

// Output bool with the input's shape.
void infer_bool_like_input(InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  ctx.set_output(0, Type::tensor(D::Bool, ctx.input_type(0).shape));
}

template <class Pred>
void apply_predicate(KernelContext& ctx, const Pred& pred) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, D::Bool, x.dims());
  const int64_t n = static_cast<int64_t>(x.element_count());
  bool* py = y.mutable_data<bool>();
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_like_v<T>) {
      const T* px = x.data<T>();
      for (int64_t i = 0; i < n; ++i) py[i] = pred(to_double(px[i]));
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

void rule_neg(grad::Args& a) { grad::unary(a, [](double, double) { return -1.0; }); }

void rule_abs(grad::Args& a) { grad::unary(a, [](double x, double) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }); }

void rule_reciprocal(grad::Args& a) { grad::unary(a, [](double, double y) { return -y * y; }); }

void rule_exp(grad::Args& a) { grad::unary(a, [](double, double y) { return y; }); }

void rule_log(grad::Args& a) { grad::unary(a, [](double x, double) { return 1.0 / x; }); }

void rule_sqrt(grad::Args& a) { grad::unary(a, [](double, double y) { return 0.5 / y; }); }

void rule_sin(grad::Args& a) { grad::unary(a, [](double x, double) { return std::cos(x); }); }

void rule_cos(grad::Args& a) { grad::unary(a, [](double x, double) { return -std::sin(x); }); }

void rule_erf(grad::Args& a) {
  grad::unary(a, [](double x, double) { return 2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x); });
}

}  // namespace

void register_unary(Registry& r) {
  const TypeList f3 = {D::Float16, D::Float, D::Double};
  const TypeList f4 = kFloatTypes;
  const TypeList numeric_no_bf16 = {D::Int8, D::Int16, D::Int32, D::Int64, D::UInt8, D::UInt16,
                                 D::UInt32, D::UInt64, D::Float16, D::Float, D::Double};
  const TypeList signed6 = {D::Float, D::Int32, D::Int8, D::Int16, D::Int64, D::Float16, D::Double};
  TypeList signed13 = signed6;
  signed13.push_back(D::BFloat16);
  const TypeList f8 = {D::Float8E4M3FN, D::Float8E4M3FNUZ, D::Float8E5M2, D::Float8E5M2FNUZ};

  add_same_type(r, "Abs", {{1, f3}, {6, numeric_no_bf16}, {13, kNumericTypes}}, [](const KernelInit&) {
    return unary_kernel([](double x) { return std::fabs(x); }, [](auto v) { return int_abs(v); });
  });
  add_same_type(r, "Neg", {{1, f3}, {6, signed6}, {13, signed13}}, [](const KernelInit&) {
    return unary_kernel([](double x) { return -x; }, [](auto v) { return wrap_neg(v); });
  });

  // Float-only functions, by version group.
  struct Fn {
    const char* name;
    double (*f)(double);
  };
  const std::vector<std::pair<int, TypeList>> v1_6_13 = {{1, f3}, {6, f3}, {13, f4}};
  for (Fn fn : {Fn{"Reciprocal", [](double x) { return 1.0 / x; }}, Fn{"Sqrt", [](double x) { return std::sqrt(x); }},
                Fn{"Exp", [](double x) { return std::exp(x); }}, Fn{"Log", [](double x) { return std::log(x); }},
                Fn{"Ceil", [](double x) { return std::ceil(x); }}, Fn{"Floor", [](double x) { return std::floor(x); }}}) {
    auto f = fn.f;
    // Float inputs on the vectorized kernels where they give the reference's results (Exp within its bound).
    const std::string_view name = fn.name;
    const std::optional<kernels::UnaryOp> fast = name == "Exp"          ? std::optional(kernels::UnaryOp::Exp)
                                                 : name == "Log"        ? std::optional(kernels::UnaryOp::Log)
                                                 : name == "Sqrt"       ? std::optional(kernels::UnaryOp::Sqrt)
                                                 : name == "Reciprocal" ? std::optional(kernels::UnaryOp::Reciprocal)
                                                                        : std::nullopt;
    add_same_type(r, fn.name, v1_6_13, [f, fast](const KernelInit& init) {
      return fast ? with_fast_float(init, unary_params(*fast), unary_kernel(f)) : unary_kernel(f);
    });
  }
  // Round half to even: nearbyint under the default rounding mode (to nearest, ties to even).
  add_same_type(r, "Round", {{11, f3}, {22, f4}},
                [](const KernelInit&) { return unary_kernel([](double x) { return std::nearbyint(x); }); });
  for (Fn fn : {Fn{"Sin", [](double x) { return std::sin(x); }}, Fn{"Cos", [](double x) { return std::cos(x); }},
                Fn{"Tan", [](double x) { return std::tan(x); }}, Fn{"Asin", [](double x) { return std::asin(x); }},
                Fn{"Acos", [](double x) { return std::acos(x); }}, Fn{"Atan", [](double x) { return std::atan(x); }}}) {
    auto f = fn.f;
    add_same_type(r, fn.name, {{7, f3}, {22, f4}}, [f](const KernelInit&) { return unary_kernel(f); });
  }
  for (Fn fn : {Fn{"Sinh", [](double x) { return std::sinh(x); }}, Fn{"Cosh", [](double x) { return std::cosh(x); }},
                Fn{"Asinh", [](double x) { return std::asinh(x); }}, Fn{"Acosh", [](double x) { return std::acosh(x); }},
                Fn{"Atanh", [](double x) { return std::atanh(x); }}}) {
    auto f = fn.f;
    add_same_type(r, fn.name, {{9, f3}, {22, f4}}, [f](const KernelInit&) { return unary_kernel(f); });
  }

  add_same_type(r, "Sign", {{9, numeric_no_bf16}, {13, kNumericTypes}}, [](const KernelInit&) {
    return unary_kernel([](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; },  // 0, -0 and NaN stay
                        [](auto v) {
                          using T = decltype(v);
                          if constexpr (std::is_signed_v<T>) return static_cast<T>(v > 0 ? 1 : v < 0 ? -1 : 0);
                          else return static_cast<T>(v > 0 ? 1 : 0);
                        });
  });
  add_same_type(r, "Erf", {{9, numeric_no_bf16}, {13, kNumericTypes}}, [](const KernelInit& init) {
    return with_fast_float(init, unary_params(kernels::UnaryOp::Erf),
                           unary_kernel([](double x) { return std::erf(x); },
                                        [](auto v) { return round_to_int<decltype(v)>(std::erf(static_cast<double>(v))); }));
  });

  // IsInf / IsNaN: bool output.
  TypeList isinf20 = f4;
  isinf20.insert(isinf20.end(), f8.begin(), f8.end());
  for (auto [v, types] : std::vector<std::pair<int, TypeList>>{{10, {D::Float, D::Double}}, {20, isinf20}}) {
    r.add(OpDef{"", "IsInf", v, {{{0}, types}}, infer_bool_like_input, [](const KernelInit& init) {
                  const bool neg = init.attrs.get_int("detect_negative", 1) != 0;
                  const bool pos = init.attrs.get_int("detect_positive", 1) != 0;
                  return make_kernel([neg, pos](KernelContext& ctx) {
                    apply_predicate(ctx, [neg, pos](double x) { return std::isinf(x) && (x > 0 ? pos : neg); });
                  });
                }});
  }
  TypeList isnan20 = f4;
  isnan20.insert(isnan20.end(), f8.begin(), f8.end());
  for (auto [v, types] : std::vector<std::pair<int, TypeList>>{{9, f3}, {13, f4}, {20, isnan20}}) {
    r.add(OpDef{"", "IsNaN", v, {{{0}, types}}, infer_bool_like_input, [](const KernelInit&) {
                  return make_kernel([](KernelContext& ctx) { apply_predicate(ctx, [](double x) { return std::isnan(x); }); });
                }});
  }

  r.add(OpDef{"", "Not", 1, {{{0}, {D::Bool}}}, [](InferContext& ctx) { infer_same_as_input(ctx); },
              [](const KernelInit&) {
                return make_kernel([](KernelContext& ctx) {
                  const Tensor& x = ctx.input(0);
                  if (x.dtype() != D::Bool) ctx.error(cat("element type ", x.dtype(), " is not supported"));
                  Tensor& y = ctx.allocate_output(0, D::Bool, x.dims());
                  const uint8_t* px = x.data<uint8_t>();  // bytes: any nonzero byte is true
                  bool* py = y.mutable_data<bool>();
                  for (uint64_t i = 0, n = x.element_count(); i < n; ++i) py[i] = px[i] == 0;
                });
              }});
  r.set_gradient("", "Neg", rule_neg);
  r.set_gradient("", "Abs", rule_abs);
  r.set_gradient("", "Reciprocal", rule_reciprocal);
  r.set_gradient("", "Exp", rule_exp);
  r.set_gradient("", "Log", rule_log);
  r.set_gradient("", "Sqrt", rule_sqrt);
  r.set_gradient("", "Sin", rule_sin);
  r.set_gradient("", "Cos", rule_cos);
  r.set_gradient("", "Erf", rule_erf);
  r.set_fast_kernels("", "Exp", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Log", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Sqrt", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Reciprocal", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "Erf", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
}

}  // namespace onyx::ops
