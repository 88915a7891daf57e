// ai.onnx Pow (1, 7, 12, 13, 15), Mod (10, 13), BitShift (11), BitwiseAnd/BitwiseOr/BitwiseXor/BitwiseNot (18).
// Pow  v1: float16/float/double, no implicit broadcasting; with broadcast=1, B aligns to A at `axis` (default: B's
//          dims are A's trailing dims). v7: numpy broadcasting. v12: base T (int32/int64/float types) and exponent
//          T1 (any integer or float type) may differ; the output has the base's type. v13: bfloat16 base.
//          v15: bfloat16 exponent.
//      Integer base: an integer exponent is exact (wrapping multiplication); a negative one gives 0 except for a
//      base of 1 or -1, and 0 to a negative power is an error. A float exponent is computed in double and converted
//      back toward zero, saturating (NaN gives 0).
// Mod  v10: all numeric types but bfloat16 (v13 adds it). fmod=0: integer remainder with the sign of the divisor
//          (Python's %); fmod=1: C fmod, the sign of the dividend. Floating types require fmod=1. Mod by zero is an
//          error for integers; INT_MIN % -1 is 0.
// BitShift v11: unsigned integers, direction "LEFT" or "RIGHT"; a shift by >= the bit width gives 0.
// Bitwise* v18: all integer types, numpy broadcasting (BitwiseNot is unary).
#include <cmath>

#include "kernels/elementwise.hpp"
#include "ops/math/legacy_broadcast.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

// ---- Pow ----

template <class T, class E>
T int_pow(T base, E exp) {
  if constexpr (std::is_signed_v<E>) {
    if (exp < 0) {
      if (base == T{1}) return T{1};
      if constexpr (std::is_signed_v<T>)
        if (base == T{-1}) return (exp % 2 == 0) ? T{1} : T{-1};
      if (base == T{0}) fail("integer 0 raised to the negative power ", static_cast<int64_t>(exp));
      return T{0};  // |1 / base^n| < 1 truncates to 0
    }
  }
  using U = wide_unsigned_t<T>;
  using UE = std::make_unsigned_t<E>;
  U result = 1, b = static_cast<U>(base);
  for (UE e = static_cast<UE>(exp); e != 0; e >>= 1) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<T>(result);
}

template <class T, class E>
T pow_one(T a, E b) {
  if constexpr (is_int_v<T> && is_int_v<E>)
    return int_pow(a, b);
  else
    return from_double<T>(std::pow(to_double(a), to_double(b)));
}

// The float types of Pow's base and exponent (v15), and its base types (float types, int32, int64).
template <class T>
constexpr bool is_pow_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
template <class T>
constexpr bool is_pow_base_v = is_pow_float_v<T> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

void run_pow(KernelContext& ctx, const Legacy& legacy, bool same_types, bool fast) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (same_types) require_same_dtype(ctx, a, b);
  Dims bd = b_dims(legacy, a, b);
  Tensor& y = ctx.allocate_output(0, a.dtype(), broadcast_dims(a.dims(), bd));
  // A float32 square (spectra, variances): x * x in float is pow's double result rounded once, the same value.
  if (fast && a.dtype() == D::Float && b.element_count() == 1 && y.element_count() == a.element_count() &&
      read_doubles(b)[0] == 2.0) {
    const float* x = a.data<float>();
    kernels::binary_same(kernels::BinaryOp::Mul, x, x, y.mutable_data<float>(), static_cast<int64_t>(a.element_count()));
    return;
  }
  // Only the type pairs some version of Pow allows are instantiated: every pair of numeric types made this the
  // slowest file of the build to compile.
  visit_dtype(a.dtype(), [&](auto ta) {
    using T = decltype(ta);
    if constexpr (is_pow_base_v<T>) {
      visit_dtype(b.dtype(), [&](auto tb) {
        using E = decltype(tb);
        if constexpr (is_int_v<E> || is_pow_float_v<E>) {
          binary_loop<T, E, T>(a, a.dims(), b, bd, y, [](T x, E e) { return pow_one(x, e); });
        } else {
          ctx.error(cat("exponent element type ", b.dtype(), " is not supported"));
        }
      });
    } else {
      ctx.error(cat("base element type ", a.dtype(), " is not supported"));
    }
  });
}

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

void rule_pow(grad::Args& a) {
  const std::vector<double> x = a.x(0), e = a.x(1), y = a.y();
  grad::binary(a, [&](double g, int64_t k, int64_t i, int64_t j, double& da, double& db) {
    da += g * e[j] * std::pow(x[i], e[j] - 1);
    // d(x^e)/de = x^e ln x; where x^e is 0 the product's limit is 0 (avoids 0 * -inf).
    if (y[k] != 0) db += g * y[k] * std::log(x[i]);
  });
}

}  // namespace

void register_pow(Registry& r) {
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> t12 = {D::Int32, D::Int64, D::Float16, D::Float, D::Double};
  std::vector<DataType> t13 = t12;
  t13.push_back(D::BFloat16);
  std::vector<DataType> t1_12 = kIntTypes;
  t1_12.insert(t1_12.end(), {D::Float16, D::Float, D::Double});
  std::vector<DataType> t1_15 = t1_12;
  t1_15.push_back(D::BFloat16);
  auto infer_same = [](InferContext& ctx) { infer_binary(ctx, true, ctx.opset < 7); };
  auto infer_mixed = [](InferContext& ctx) { infer_binary(ctx, false, false); };
  auto kernel = [](bool legacy, bool same_types) {
    return [legacy, same_types](const KernelInit& init) {
      Legacy l = parse_legacy(init, legacy);
      const bool fast = !init.reference_only;
      return make_kernel([l, same_types, fast](KernelContext& ctx) { run_pow(ctx, l, same_types, fast); });
    };
  };
  add_versions(r, "", "Pow", {1}, {{{0, 1}, f}}, infer_same, kernel(true, true));
  add_versions(r, "", "Pow", {7}, {{{0, 1}, f}}, infer_same, kernel(false, true));
  add_versions(r, "", "Pow", {12}, {{{0}, t12}, {{1}, t1_12}}, infer_mixed, kernel(false, false));
  add_versions(r, "", "Pow", {13}, {{{0}, t13}, {{1}, t1_12}}, infer_mixed, kernel(false, false));
  add_versions(r, "", "Pow", {15}, {{{0}, t13}, {{1}, t1_15}}, infer_mixed, kernel(false, false));
  r.set_gradient("", "Pow", rule_pow);
  r.set_fast_kernels("", "Pow", {"float32 squares (exponent 2): vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
}

// ---- Mod ----

template <class T>
T int_mod(T a, T b, bool fmod) {
  if (b == T{0}) fail("integer modulo by zero");
  if constexpr (std::is_signed_v<T>) {
    if (b == T{-1}) return T{0};  // also INT_MIN % -1, which would overflow
    T r = static_cast<T>(a % b);
    if (!fmod && r != T{0} && ((r < T{0}) != (b < T{0}))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

bool is_float_dtype(DataType t) {
  return t == D::Float16 || t == D::BFloat16 || t == D::Float || t == D::Double;
}

void register_mod(Registry& r) {
  std::vector<DataType> t10 = kIntTypes;
  t10.insert(t10.end(), {D::Float16, D::Float, D::Double});
  auto infer = [](InferContext& ctx) {
    if (ctx.attrs.get_int("fmod", 0) == 0 && is_float_dtype(ctx.input_dtype(0)))
      ctx.error(cat("fmod must be 1 for floating point inputs (got ", ctx.input_dtype(0), ")"));
    infer_binary(ctx, true, false);
  };
  auto kernel = [](const KernelInit& init) {
    int64_t f = init.attrs.get_int("fmod", 0);
    if (f != 0 && f != 1) fail("fmod must be 0 or 1, got ", f);
    const bool fmod = f == 1;
    return make_kernel([fmod](KernelContext& ctx) {
      const Tensor& a = ctx.input(0);
      const Tensor& b = ctx.input(1);
      require_same_dtype(ctx, a, b);
      Tensor& y = ctx.allocate_output(0, a.dtype(), broadcast_dims(a.dims(), b.dims()));
      visit_dtype(a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (is_int_v<T>) {
          binary_loop<T, T, T>(a, a.dims(), b, b.dims(), y, [fmod](T x, T z) { return int_mod(x, z, fmod); });
        } else if constexpr (is_float_like_v<T>) {
          if (!fmod) ctx.error(cat("fmod must be 1 for floating point inputs (got ", a.dtype(), ")"));
          binary_loop<T, T, T>(a, a.dims(), b, b.dims(), y,
                               [](T x, T z) { return from_double<T>(std::fmod(to_double(x), to_double(z))); });
        } else {
          ctx.error(cat("element type ", a.dtype(), " is not supported"));
        }
      });
    });
  };
  add_versions(r, "", "Mod", {10}, {{{0, 1}, t10}}, infer, kernel);
  add_versions(r, "", "Mod", {13}, {{{0, 1}, kNumericTypes}}, infer, kernel);
}

// ---- BitShift, Bitwise* ----

enum class Bits { ShiftLeft, ShiftRight, And, Or, Xor };

template <class T>
T bit_op(Bits op, T a, T b) {
  using U = wide_unsigned_t<T>;
  const U x = static_cast<U>(a), y = static_cast<U>(b);
  switch (op) {
    case Bits::ShiftLeft: return y >= sizeof(T) * 8 ? T{0} : static_cast<T>(x << y);
    case Bits::ShiftRight: return y >= sizeof(T) * 8 ? T{0} : static_cast<T>(x >> y);
    case Bits::And: return static_cast<T>(x & y);
    case Bits::Or: return static_cast<T>(x | y);
    case Bits::Xor: return static_cast<T>(x ^ y);
  }
  return T{};
}

void run_bits(KernelContext& ctx, Bits op) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  Tensor& y = ctx.allocate_output(0, a.dtype(), broadcast_dims(a.dims(), b.dims()));
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_int_v<T>)
      binary_loop<T, T, T>(a, a.dims(), b, b.dims(), y, [op](T x, T z) { return bit_op(op, x, z); });
    else
      ctx.error(cat("element type ", a.dtype(), " is not supported"));
  });
}

void register_bits(Registry& r) {
  const std::vector<DataType> u = {D::UInt8, D::UInt16, D::UInt32, D::UInt64};
  auto infer = [](InferContext& ctx) { infer_binary(ctx, true, false); };
  auto shift_kernel = [](const KernelInit& init) {
    std::string dir = init.attrs.get_string("direction");
    Bits op;
    if (dir == "LEFT")
      op = Bits::ShiftLeft;
    else if (dir == "RIGHT")
      op = Bits::ShiftRight;
    else
      fail("direction must be \"LEFT\" or \"RIGHT\", got \"", dir, "\"");
    return make_kernel([op](KernelContext& ctx) { run_bits(ctx, op); });
  };
  add_versions(r, "", "BitShift", {11}, {{{0, 1}, u}}, infer, shift_kernel);
  auto bitwise = [&](const char* name, Bits op) {
    add_versions(r, "", name, {18}, {{{0, 1}, kIntTypes}}, infer, [op](const KernelInit&) {
      return make_kernel([op](KernelContext& ctx) { run_bits(ctx, op); });
    });
  };
  bitwise("BitwiseAnd", Bits::And);
  bitwise("BitwiseOr", Bits::Or);
  bitwise("BitwiseXor", Bits::Xor);
  add_versions(r, "", "BitwiseNot", {18}, {{{0}, kIntTypes}}, [](InferContext& ctx) { infer_same_as_input(ctx); },
               [](const KernelInit&) {
                 return make_kernel([](KernelContext& ctx) {
                   const Tensor& x = ctx.input(0);
                   Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
                   visit_dtype(x.dtype(), [&](auto tag) {
                     using T = decltype(tag);
                     if constexpr (is_int_v<T>) {
                       const T* px = x.data<T>();
                       T* py = y.mutable_data<T>();
                       for (int64_t i = 0, n = product(x.dims()); i < n; ++i)
                         py[i] = static_cast<T>(~static_cast<wide_unsigned_t<T>>(px[i]));
                     } else {
                       ctx.error(cat("element type ", x.dtype(), " is not supported"));
                     }
                   });
                 });
               });
}

}  // namespace

void register_binary_misc(Registry& r) {
  register_pow(r);
  register_mod(r);
  register_bits(r);
}

}  // namespace onyx::ops
