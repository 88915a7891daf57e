// ai.onnx And, Or, Xor (1, 7); Equal (1, 7, 11, 13, 19); Greater, Less (1, 7, 9, 13); GreaterOrEqual,
// LessOrEqual (12, 16); Where (9, 16). Every output but Where's is bool.
// v1 (And/Or/Xor/Equal/Greater/Less): no implicit broadcasting; with broadcast=1, B aligns to A at `axis` (default:
//     B's dims are A's trailing dims). v7+: numpy broadcasting.
// And/Or/Xor: bool only. Equal v1/v7: bool, int32, int64; v11: bool, all integers, float16/float/double; v13: +bfloat16;
// v19: +string. Greater/Less v1/v7: float16/float/double; v9: all integers too; v13: +bfloat16.
// GreaterOrEqual/LessOrEqual v12: integers, float16/float/double; v16: +bfloat16. Comparisons with NaN are false
// (Equal too).
// Where v9: bool condition, X and Y of any tensor type but bfloat16 (v16 adds it); the output broadcasts all three.
#include "ops/math/legacy_broadcast.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

enum class Cmp { Equal, Greater, Less, GreaterOrEqual, LessOrEqual, And, Or, Xor };

template <class T>
bool compare(Cmp op, const T& a, const T& b) {
  switch (op) {
    case Cmp::Equal: return a == b;
    case Cmp::Greater: return a > b;
    case Cmp::Less: return a < b;
    case Cmp::GreaterOrEqual: return a >= b;
    case Cmp::LessOrEqual: return a <= b;
    case Cmp::And: return a && b;
    case Cmp::Or: return a || b;
    case Cmp::Xor: return a != b;
  }
  return false;
}

void run_compare(KernelContext& ctx, Cmp op, const Legacy& legacy) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  Dims bd = b_dims(legacy, a, b);
  Tensor& y = ctx.allocate_output(0, D::Bool, broadcast_dims(a.dims(), bd));
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      // Read as bytes: any nonzero byte is true.
      binary_loop<uint8_t, uint8_t, bool>(a, a.dims(), b, bd, y,
                                          [op](uint8_t x, uint8_t z) { return compare(op, x != 0, z != 0); });
    } else if constexpr (std::is_arithmetic_v<T>) {
      binary_loop<T, T, bool>(a, a.dims(), b, bd, y, [op](T x, T z) { return compare(op, x, z); });
    } else if constexpr (is_small_float_v<T>) {
      binary_loop<T, T, bool>(a, a.dims(), b, bd, y, [op](T x, T z) {
        return compare(op, static_cast<float>(x), static_cast<float>(z));
      });
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (op != Cmp::Equal) ctx.error("string inputs are only supported by Equal");
      const auto& sa = a.string_values();
      const auto& sb = b.string_values();
      bool* py = y.mutable_data<bool>();
      for_each_broadcast(y.dims(), {a.dims(), bd},
                         [&](int64_t i, const std::vector<int64_t>& o) { py[i] = sa[o[0]] == sb[o[1]]; });
    } else {
      ctx.error(cat("element type ", a.dtype(), " is not supported"));
    }
  });
}

void add_compare(Registry& r, const char* name, Cmp op, std::initializer_list<int> versions,
                 const std::vector<DataType>& types, bool legacy) {
  auto infer = [legacy](InferContext& ctx) { infer_binary(ctx, true, legacy, D::Bool); };
  auto kernel = [op, legacy](const KernelInit& init) {
    Legacy l = parse_legacy(init, legacy);
    return make_kernel([op, l](KernelContext& ctx) { run_compare(ctx, op, l); });
  };
  add_versions(r, "", name, versions, {{{0, 1}, types}}, infer, kernel);
}

// ---- Where ----

void run_where(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != D::Bool) ctx.error(cat("condition must be bool, got ", c.dtype()));
  require_same_dtype(ctx, x, y);
  Dims out = broadcast_dims(broadcast_dims(c.dims(), x.dims()), y.dims());
  Tensor& z = ctx.allocate_output(0, x.dtype(), out);
  const uint8_t* pc = c.data<uint8_t>();  // any nonzero byte is true
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::string>) {
      const auto& sx = x.string_values();
      const auto& sy = y.string_values();
      auto& sz = z.mutable_strings();
      for_each_broadcast(out, {c.dims(), x.dims(), y.dims()},
                         [&](int64_t i, const std::vector<int64_t>& o) { sz[i] = pc[o[0]] ? sx[o[1]] : sy[o[2]]; });
    } else if constexpr (std::is_trivially_copyable_v<T> && !std::is_empty_v<T>) {
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      T* pz = z.mutable_data<T>();
      if (c.dims() == out && x.dims() == out && y.dims() == out) {
        for (int64_t i = 0, n = product(out); i < n; ++i) pz[i] = pc[i] ? px[i] : py[i];
      } else if (!out.empty() && product(out) > 0) {
        // Rows of the last dim, each input either walking it or repeating one element; the rest as an odometer.
        const size_t r = out.size();
        auto strides = [&](const Dims& d) {
          std::vector<int64_t> st(r, 0);
          int64_t step = 1;
          for (size_t i = 0; i < d.size(); ++i) {
            const size_t k = d.size() - 1 - i;
            if (d[k] != 1) st[r - 1 - i] = step;
            step *= d[k];
          }
          return st;
        };
        const std::vector<int64_t> sc = strides(c.dims()), sx = strides(x.dims()), sy = strides(y.dims());
        const int64_t inner = out[r - 1], outer = product(out) / inner;
        std::vector<int64_t> idx(r, 0);
        int64_t oc = 0, ox = 0, oy = 0;
        for (int64_t o = 0; o < outer; ++o) {
          T* dst = pz + o * inner;
          for (int64_t j = 0; j < inner; ++j)
            dst[j] = pc[oc + j * sc[r - 1]] ? px[ox + j * sx[r - 1]] : py[oy + j * sy[r - 1]];
          for (size_t d = r - 1; d-- > 0;) {
            oc += sc[d], ox += sx[d], oy += sy[d];
            if (++idx[d] < out[d]) break;
            oc -= sc[d] * out[d], ox -= sx[d] * out[d], oy -= sy[d] * out[d];
            idx[d] = 0;
          }
        }
      } else {
        for_each_broadcast(out, {c.dims(), x.dims(), y.dims()},
                           [&](int64_t i, const std::vector<int64_t>& o) { pz[i] = pc[o[0]] ? px[o[1]] : py[o[2]]; });
      }
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

void infer_where(InferContext& ctx) {
  if (ctx.num_inputs() != 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
    ctx.error("Where takes 3 inputs: condition, X, Y");
  DataType x = ctx.input_dtype(1), y = ctx.input_dtype(2);
  if (x != D::Undefined && y != D::Undefined && x != y)
    ctx.error(cat("X and Y have different element types ", x, " and ", y));
  Shape s = broadcast_shape(broadcast_shape(ctx.input_type(0).shape, ctx.input_type(1).shape), ctx.input_type(2).shape);
  ctx.set_output(0, Type::tensor(x != D::Undefined ? x : y, s));
}

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

// Where(cond, X, Y): the gradient goes to the side cond selected.
void rule_where(grad::Args& a) {
  const Tensor& c = *a.in.at(0);
  if (c.dtype() != D::Bool) fail("Where condition is ", c.dtype(), ", expected bool");
  const bool* cond = c.data<bool>();
  grad::Grad gx = grad::zeros(a.in_dims(1)), gy = grad::zeros(a.in_dims(2));
  const grad::Grad g = a.dy();
  for_each_broadcast(a.out_dims(), {a.in_dims(0), a.in_dims(1), a.in_dims(2)}, [&](int64_t i, const Dims& off) {
    (cond[off[0]] ? gx.v[off[1]] : gy.v[off[2]]) += g.v[i];
  });
  a.set(1, std::move(gx));
  a.set(2, std::move(gy));
}

}  // namespace

void register_where(Registry& r) {
  const std::vector<DataType> t9 = {D::UInt8,   D::UInt16, D::UInt32, D::UInt64, D::Int8,   D::Int16,     D::Int32,
                                    D::Int64,   D::Float16, D::Float, D::Double, D::String, D::Bool, D::Complex64,
                                    D::Complex128};
  std::vector<DataType> t16 = t9;
  t16.push_back(D::BFloat16);
  auto kernel = [](const KernelInit&) { return make_kernel([](KernelContext& ctx) { run_where(ctx); }); };
  add_versions(r, "", "Where", {9}, {{{0}, {D::Bool}}, {{1, 2}, t9}}, infer_where, kernel);
  add_versions(r, "", "Where", {16}, {{{0}, {D::Bool}}, {{1, 2}, t16}}, infer_where, kernel);
  r.set_gradient("", "Where", rule_where);
}

}  // namespace

void register_logical(Registry& r) {
  const std::vector<DataType> b = {D::Bool};
  for (auto [name, op] : {std::pair{"And", Cmp::And}, std::pair{"Or", Cmp::Or}, std::pair{"Xor", Cmp::Xor}}) {
    add_compare(r, name, op, {1}, b, true);
    add_compare(r, name, op, {7}, b, false);
  }

  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  std::vector<DataType> numeric = kIntTypes;  // all_numeric_types: integers, float16, float, double
  numeric.insert(numeric.end(), f.begin(), f.end());
  std::vector<DataType> numeric_bf = numeric;
  numeric_bf.push_back(D::BFloat16);

  const std::vector<DataType> eq1 = {D::Bool, D::Int32, D::Int64};
  std::vector<DataType> eq11 = numeric;
  eq11.push_back(D::Bool);
  std::vector<DataType> eq13 = numeric_bf;
  eq13.push_back(D::Bool);
  std::vector<DataType> eq19 = eq13;
  eq19.push_back(D::String);
  add_compare(r, "Equal", Cmp::Equal, {1}, eq1, true);
  add_compare(r, "Equal", Cmp::Equal, {7}, eq1, false);
  add_compare(r, "Equal", Cmp::Equal, {11}, eq11, false);
  add_compare(r, "Equal", Cmp::Equal, {13}, eq13, false);
  add_compare(r, "Equal", Cmp::Equal, {19}, eq19, false);

  for (auto [name, op] : {std::pair{"Greater", Cmp::Greater}, std::pair{"Less", Cmp::Less}}) {
    add_compare(r, name, op, {1}, f, true);
    add_compare(r, name, op, {7}, f, false);
    add_compare(r, name, op, {9}, numeric, false);
    add_compare(r, name, op, {13}, numeric_bf, false);
  }
  for (auto [name, op] :
       {std::pair{"GreaterOrEqual", Cmp::GreaterOrEqual}, std::pair{"LessOrEqual", Cmp::LessOrEqual}}) {
    add_compare(r, name, op, {12}, numeric, false);
    add_compare(r, name, op, {16}, numeric_bf, false);
  }
  register_where(r);
}

}  // namespace onyx::ops
