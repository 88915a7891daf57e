// ai.onnx QuantizeLinear and DequantizeLinear — versions 10, 13, 19, 21, 23, 24, 25; DynamicQuantizeLinear — 11.
//
// QuantizeLinear:   y = saturate(round(x / y_scale) + y_zero_point), rounding half to even; float targets skip the
//                   rounding: y = convert(x / y_scale + y_zero_point).
// DequantizeLinear: y = (x - x_zero_point) * x_scale.
// Versions:
//   10: per-tensor only (scalar scale); x float/int32 (Q) or int8/uint8/int32 (DQ); scale float; output uint8/int8
//       (Q, uint8 when no zero point) or float (DQ).
//   13: per-axis: a 1-D scale (and zero point) of length x.shape[axis]; attribute `axis` (default 1).
//   19: float8 targets (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) with attribute `saturate` (Q; default 1: out of range
//       values clamp to the largest finite value, 0: NaN, or inf for e5m2); x and scale float/float16/bfloat16 (and
//       int32 x); DQ's output type is the scale's type.
//   21: blocked quantization (attribute `block_size`: the scale has x's shape except ceil(D/B) along `axis`);
//       int16/uint16/int4/uint4 targets (4-bit outputs are packed two per byte); Q's `output_dtype` attribute.
//   23: float4e2m1; Q's scale has its own type constraint (float, float16, bfloat16, int32) and attribute
//       `precision` (the type the division is done in; default: the scale's type); DQ's `output_dtype` (default:
//       the scale's type), which also sets the precision of the multiplication.
//   24: float8e8m0 scales.
//   25: int2/uint2 (packed four per byte).
// The scale and zero point always have the same shape. Per-tensor means a scale with one element.
// The division runs in the precision type (float16/bfloat16: operands and quotient rounded to it; float: float
// arithmetic; otherwise double; int32 x without `precision` divides in double). A NaN quotient quantizes to the
// zero point (then saturates) for integer targets.
//
// DynamicQuantizeLinear-11 (uint8): the range [min(x, 0), max(x, 0)] (NaN ignored) maps onto [0, 255]:
// y_scale = (max - min) / 255, y_zero_point = round(clip(-min / y_scale, 0, 255)), y = QuantizeLinear(x, ...).
// All computed in float, as the spec's function body does. An all-zero (or empty) x gives scale 0, zero point 0
// and y = 0.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/tensor_alloc.hpp"
#include "kernels/quantize.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

// ---- element access, packed types included ----

std::vector<double> values_of(const Tensor& t) {
  const uint64_t n = t.element_count();
  const auto* b = reinterpret_cast<const uint8_t*>(t.bytes().data());
  std::vector<double> v;
  switch (t.dtype()) {
    case D::Int4:
      v.resize(n);
      for (uint64_t i = 0; i < n; ++i) v[i] = unpack_int4(b[i / 2], i);
      return v;
    case D::UInt4:
      v.resize(n);
      for (uint64_t i = 0; i < n; ++i) v[i] = unpack_uint4(b[i / 2], i);
      return v;
    case D::Int2:
      v.resize(n);
      for (uint64_t i = 0; i < n; ++i) v[i] = unpack_int2(b[i / 4], i);
      return v;
    case D::UInt2:
      v.resize(n);
      for (uint64_t i = 0; i < n; ++i) v[i] = unpack_uint2(b[i / 4], i);
      return v;
    case D::Float4E2M1:
      v.resize(n);
      for (uint64_t i = 0; i < n; ++i) v[i] = f4e2m1_to_float(static_cast<uint8_t>(b[i / 2] >> (4 * (i % 2))));
      return v;
    default:
      return read_doubles(t);
  }
}

bool is_float8(D t) { return t == D::Float8E4M3FN || t == D::Float8E4M3FNUZ || t == D::Float8E5M2 || t == D::Float8E5M2FNUZ; }

// Saturation range of an integer quantized type.
bool int_range(D t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case D::Int8: lo = -128, hi = 127; return true;
    case D::UInt8: lo = 0, hi = 255; return true;
    case D::Int16: lo = -32768, hi = 32767; return true;
    case D::UInt16: lo = 0, hi = 65535; return true;
    case D::Int4: lo = -8, hi = 7; return true;
    case D::UInt4: lo = 0, hi = 15; return true;
    case D::Int2: lo = -2, hi = 1; return true;
    case D::UInt2: lo = 0, hi = 3; return true;
    default: return false;
  }
}

// Writes integer values (already in range) into y, packing sub-byte types.
void store_ints(Tensor& y, const std::vector<int64_t>& q) {
  const size_t n = q.size();
  auto at = [&](size_t i) { return i < n ? q[i] : 0; };
  switch (y.dtype()) {
    case D::Int8: {
      auto* p = y.mutable_data<int8_t>();
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<int8_t>(q[i]);
      return;
    }
    case D::UInt8: {
      auto* p = y.mutable_data<uint8_t>();
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(q[i]);
      return;
    }
    case D::Int16: {
      auto* p = y.mutable_data<int16_t>();
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<int16_t>(q[i]);
      return;
    }
    case D::UInt16: {
      auto* p = y.mutable_data<uint16_t>();
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint16_t>(q[i]);
      return;
    }
    case D::Int4: {
      auto* p = y.mutable_data<uint8_t>();
      for (size_t i = 0; i < n; i += 2) p[i / 2] = pack_int4(static_cast<int8_t>(at(i)), static_cast<int8_t>(at(i + 1)));
      return;
    }
    case D::UInt4: {
      auto* p = y.mutable_data<uint8_t>();
      for (size_t i = 0; i < n; i += 2) p[i / 2] = pack_uint4(static_cast<uint8_t>(at(i)), static_cast<uint8_t>(at(i + 1)));
      return;
    }
    case D::Int2: {
      auto* p = y.mutable_data<uint8_t>();
      for (size_t i = 0; i < n; i += 4)
        p[i / 4] = pack_int2(static_cast<int8_t>(at(i)), static_cast<int8_t>(at(i + 1)), static_cast<int8_t>(at(i + 2)),
                             static_cast<int8_t>(at(i + 3)));
      return;
    }
    case D::UInt2: {
      auto* p = y.mutable_data<uint8_t>();
      for (size_t i = 0; i < n; i += 4)
        p[i / 4] = pack_uint2(static_cast<uint8_t>(at(i)), static_cast<uint8_t>(at(i + 1)), static_cast<uint8_t>(at(i + 2)),
                              static_cast<uint8_t>(at(i + 3)));
      return;
    }
    default: fail("cannot store integers as ", y.dtype());
  }
}

// Writes float values into a float8 or float4e2m1 tensor.
void store_small_floats(Tensor& y, const std::vector<float>& v, bool saturate) {
  const size_t n = v.size();
  if (y.dtype() == D::Float4E2M1) {
    auto* p = y.mutable_data<uint8_t>();
    for (size_t i = 0; i < n; i += 2) {
      uint8_t lo = float_to_f4e2m1(v[i]);
      uint8_t hi = i + 1 < n ? float_to_f4e2m1(v[i + 1]) : 0;
      p[i / 2] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
    }
    return;
  }
  auto* p = y.mutable_data<uint8_t>();
  for (size_t i = 0; i < n; ++i) {
    switch (y.dtype()) {
      case D::Float8E4M3FN: p[i] = float_to_f8e4m3fn(v[i], saturate); break;
      case D::Float8E4M3FNUZ: p[i] = float_to_f8e4m3fnuz(v[i], saturate); break;
      case D::Float8E5M2: p[i] = float_to_f8e5m2(v[i], saturate); break;
      case D::Float8E5M2FNUZ: p[i] = float_to_f8e5m2fnuz(v[i], saturate); break;
      default: fail("cannot store floats as ", y.dtype());
    }
  }
}

// ---- granularity: which scale element applies to which x element ----

struct QuantLayout {
  bool per_tensor = true;
  int64_t outer = 1, len = 1, inner = 1;  // x viewed as [outer, len, inner] around the axis
  int64_t block = 0;                      // > 0: blocked along the axis
  int64_t blocks = 1;                     // scale's extent along the axis when blocked
};

// Checks the scale/zero-point shapes against x for the op version and returns the layout.
QuantLayout resolve_layout(const Dims& x, const Dims& s, const Dims* zp, int64_t axis, int64_t block_size, int version) {
  if (zp && *zp != s) {
    if (!(product(*zp) == 1 && product(s) == 1))
      fail("zero point shape ", shape_of(*zp).to_string(), " differs from scale shape ", shape_of(s).to_string());
  }
  QuantLayout L;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (block_size != 0) {
    if (block_size < 0) fail("block_size must be positive, got ", block_size);
    if (s.size() != x.size())
      fail("blocked quantization needs a scale of x's rank ", rank, ", got ", shape_of(s).to_string());
    int64_t ax = normalize_axis(axis, rank);
    for (int64_t i = 0; i < rank; ++i) {
      if (i == ax) {
        const int64_t want = x[i] == 0 ? 0 : (x[i] - 1) / block_size + 1;
        if (s[i] != want)
          fail("scale extent ", s[i], " on axis ", ax, " does not match ceil(", x[i], " / block_size ", block_size, ") = ", want);
      } else if (s[i] != x[i]) {
        fail("scale shape ", shape_of(s).to_string(), " must match x shape ", shape_of(x).to_string(), " except on axis ", ax);
      }
    }
    L.per_tensor = false;
    L.outer = product(x, 0, ax);
    L.len = x[ax];
    L.inner = product(x, ax + 1);
    L.block = block_size;
    L.blocks = s[ax];
    return L;
  }
  if (product(s) == 1 && s.size() <= 1) return L;  // per tensor
  if (version < 13) fail("the scale must be a scalar (per-tensor quantization) before opset 13, got shape ", shape_of(s).to_string());
  if (s.size() != 1) {
    fail("the scale must be a scalar or a 1-D tensor", version >= 21 ? " (or use block_size for blocked quantization)" : "",
         ", got shape ", shape_of(s).to_string());
  }
  int64_t ax = normalize_axis(axis, rank);
  if (s[0] != x[ax]) fail("per-axis scale has ", s[0], " elements but x has ", x[ax], " along axis ", ax);
  L.per_tensor = false;
  L.outer = product(x, 0, ax);
  L.len = x[ax];
  L.inner = product(x, ax + 1);
  return L;
}

// Calls f(x_index, scale_index) for every element of x.
template <class F>
void for_each_element(const QuantLayout& L, int64_t n, F&& f) {
  if (L.per_tensor) {
    for (int64_t i = 0; i < n; ++i) f(i, int64_t{0});
    return;
  }
  int64_t i = 0;
  for (int64_t o = 0; o < L.outer; ++o)
    for (int64_t a = 0; a < L.len; ++a) {
      const int64_t base = L.block ? (o * L.blocks + a / L.block) * L.inner : a;
      for (int64_t in = 0; in < L.inner; ++in, ++i) f(i, L.block ? base + in : base);
    }
}

// ---- arithmetic in a given precision ----

double divide_in(D p, double x, double s) {
  if (p == D::Double) return x / s;
  // float/float16/bfloat16: the operands are exact in float, and float's quotient rounded again to the 16-bit
  // type is the correctly rounded 16-bit quotient (float has more than twice their precision).
  const float q = static_cast<float>(round_to(p, x)) / static_cast<float>(round_to(p, s));
  return round_to(p, q);
}

// ---- type lists per version ----

std::vector<D> q_targets(int v) {
  std::vector<D> t = {D::Int8, D::UInt8};
  if (v >= 19) t.insert(t.end(), {D::Float8E4M3FN, D::Float8E4M3FNUZ, D::Float8E5M2, D::Float8E5M2FNUZ});
  if (v >= 21) t.insert(t.end(), {D::Int16, D::UInt16, D::UInt4, D::Int4});
  if (v >= 23) t.push_back(D::Float4E2M1);
  if (v >= 25) t.insert(t.end(), {D::UInt2, D::Int2});
  return t;
}

std::vector<D> dq_inputs(int v) {
  std::vector<D> t = q_targets(v);
  t.push_back(D::Int32);
  return t;
}

std::vector<D> q_x_types(int v) { return v >= 19 ? std::vector<D>{D::Float, D::Float16, D::BFloat16, D::Int32} : std::vector<D>{D::Float, D::Int32}; }

std::vector<D> q_scale_types(int v) {
  if (v < 19) return {D::Float};
  if (v < 23) return {D::Float, D::Float16, D::BFloat16, D::Int32};  // shares T1 with x
  if (v < 24) return {D::Float, D::Float16, D::BFloat16, D::Int32};
  return {D::Float, D::Float16, D::BFloat16, D::Int32, D::Float8E8M0};
}

std::vector<D> dq_scale_types(int v) {
  if (v < 19) return {D::Float};
  if (v < 24) return {D::Float, D::Float16, D::BFloat16};
  return {D::Float, D::Float16, D::BFloat16, D::Float8E8M0};
}


std::string list_of(const std::vector<D>& v) {
  std::string s;
  for (D t : v) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

// ---- QuantizeLinear ----

struct QAttrs {
  int version = 10;
  int64_t axis = 1, block_size = 0;
  bool saturate = true;
  D output_dtype = D::Undefined, precision = D::Undefined;
};

D dtype_attr(const AttributeView& a, const char* name) {
  int64_t v = a.get_int(name, 0);
  if (v < 0 || v > std::numeric_limits<int32_t>::max() || !is_known_dtype(static_cast<int32_t>(v)))
    fail("attribute ", name, " = ", v, " is not a known element type");
  return static_cast<D>(v);
}

QAttrs parse_q(const AttributeView& a, int v) {
  QAttrs q;
  q.version = v;
  if (v >= 13) q.axis = a.get_int("axis", 1);
  if (v >= 19) q.saturate = a.get_int("saturate", 1) != 0;
  if (v >= 21) {
    q.block_size = a.get_int("block_size", 0);
    if (q.block_size < 0) fail("block_size must be positive, got ", q.block_size);
    q.output_dtype = dtype_attr(a, "output_dtype");
    if (q.output_dtype != D::Undefined && !contains(q_targets(v), q.output_dtype))
      fail("output_dtype ", q.output_dtype, " is not allowed; allowed: ", list_of(q_targets(v)));
  }
  if (v >= 23) {
    q.precision = dtype_attr(a, "precision");
    if (q.precision != D::Undefined && !contains({D::Float, D::Float16, D::BFloat16, D::Double, D::Int32}, q.precision))
      fail("precision ", q.precision, " is not supported (float, float16, bfloat16, double or int32)");
  }
  return q;
}

D q_output_type(const QAttrs& q, D zp) {
  if (zp != D::Undefined) {
    if (q.output_dtype != D::Undefined && q.output_dtype != zp)
      fail("output_dtype ", q.output_dtype, " does not match y_zero_point type ", zp);
    return zp;
  }
  return q.output_dtype != D::Undefined ? q.output_dtype : D::UInt8;
}

void infer_q(const QAttrs& q, InferContext& ctx) {
  D zp = ctx.has_input(2) ? ctx.input_dtype(2) : D::Undefined;
  if (ctx.has_input(2) && zp == D::Undefined) {
    ctx.set_output(0, Type::tensor(D::Undefined, ctx.has_input(0) ? ctx.input_type(0).shape : Shape{}));
    return;
  }
  if (q.version >= 19 && q.version < 23 && ctx.has_input(0) && ctx.has_input(1)) {
    D xt = ctx.input_dtype(0), st = ctx.input_dtype(1);
    if (xt != D::Undefined && st != D::Undefined && xt != st) ctx.error(cat("x (", xt, ") and y_scale (", st, ") must have the same type"));
  }
  D out = q_output_type(q, zp);
  ctx.set_output(0, Type::tensor(out, ctx.has_input(0) ? ctx.input_type(0).shape : Shape{}));
}

void run_q(const QAttrs& q, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (q.version >= 19 && q.version < 23 && x.dtype() != s.dtype())
    ctx.error(cat("x (", x.dtype(), ") and y_scale (", s.dtype(), ") must have the same type"));
  const D out = q_output_type(q, zp ? zp->dtype() : D::Undefined);
  const QuantLayout L = resolve_layout(x.dims(), s.dims(), zp ? &zp->dims() : nullptr, q.axis, q.block_size, q.version);
  D prec = q.precision;
  if (prec == D::Undefined) prec = x.dtype() == D::Int32 ? D::Double : s.dtype();
  if (prec != D::Float && prec != D::Float16 && prec != D::BFloat16) prec = D::Double;
  const std::vector<double> xv = values_of(x), sv = values_of(s);
  const std::vector<double> zv = zp ? values_of(*zp) : std::vector<double>(sv.size(), 0.0);
  Tensor& y = ctx.allocate_output(0, out, x.dims());
  const int64_t n = static_cast<int64_t>(xv.size());
  int64_t lo = 0, hi = 0;
  if (int_range(out, lo, hi)) {
    std::vector<int64_t> qv(xv.size());
    for_each_element(L, n, [&](int64_t i, int64_t p) {
      double r = std::nearbyint(divide_in(prec, xv[i], sv[p]));  // the default rounding mode: half to even
      if (std::isnan(r)) r = 0;
      r = std::clamp(r + zv[p], static_cast<double>(lo), static_cast<double>(hi));
      qv[i] = static_cast<int64_t>(r);
    });
    store_ints(y, qv);
  } else if (is_float8(out) || out == D::Float4E2M1) {
    std::vector<float> fv(xv.size());
    for_each_element(L, n, [&](int64_t i, int64_t p) { fv[i] = static_cast<float>(divide_in(prec, xv[i], sv[p]) + zv[p]); });
    store_small_floats(y, fv, q.saturate);
  } else {
    ctx.error(cat("cannot quantize to ", out));
  }
}

// ---- DequantizeLinear ----

struct DQAttrs {
  int version = 10;
  int64_t axis = 1, block_size = 0;
  D output_dtype = D::Undefined;
};

DQAttrs parse_dq(const AttributeView& a, int v) {
  DQAttrs d;
  d.version = v;
  if (v >= 13) d.axis = a.get_int("axis", 1);
  if (v >= 21) {
    d.block_size = a.get_int("block_size", 0);
    if (d.block_size < 0) fail("block_size must be positive, got ", d.block_size);
  }
  if (v >= 23) {
    d.output_dtype = dtype_attr(a, "output_dtype");
    if (d.output_dtype != D::Undefined && !contains({D::Float, D::Float16, D::BFloat16}, d.output_dtype))
      fail("output_dtype ", d.output_dtype, " is not allowed; allowed: float, float16, bfloat16");
  }
  return d;
}

D dq_output_type(const DQAttrs& d, D scale) {
  if (d.version < 19) return D::Float;
  if (d.output_dtype != D::Undefined) return d.output_dtype;
  if (scale == D::Float8E8M0) fail("x_scale of type float8e8m0 needs the output_dtype attribute");
  return scale;
}

void infer_dq(const DQAttrs& d, InferContext& ctx) {
  if (ctx.has_input(0) && ctx.has_input(2)) {
    D xt = ctx.input_dtype(0), zt = ctx.input_dtype(2);
    if (xt != D::Undefined && zt != D::Undefined && xt != zt) ctx.error(cat("x (", xt, ") and x_zero_point (", zt, ") must have the same type"));
  }
  D scale = ctx.has_input(1) ? ctx.input_dtype(1) : D::Undefined;
  D out = (scale == D::Undefined && d.version >= 19 && d.output_dtype == D::Undefined) ? D::Undefined : dq_output_type(d, scale);
  ctx.set_output(0, Type::tensor(out, ctx.has_input(0) ? ctx.input_type(0).shape : Shape{}));
}

void run_dq(const DQAttrs& d, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (zp && zp->dtype() != x.dtype()) ctx.error(cat("x (", x.dtype(), ") and x_zero_point (", zp->dtype(), ") must have the same type"));
  const D out = dq_output_type(d, s.dtype());
  const QuantLayout L = resolve_layout(x.dims(), s.dims(), zp ? &zp->dims() : nullptr, d.axis, d.block_size, d.version);
  const std::vector<double> xv = values_of(x), sv = values_of(s);
  const std::vector<double> zv = zp ? values_of(*zp) : std::vector<double>(sv.size(), 0.0);
  std::vector<float> fv(xv.size());
  // The difference is exact in double; the product is rounded to float, then to the output type.
  for_each_element(L, static_cast<int64_t>(xv.size()), [&](int64_t i, int64_t p) { fv[i] = static_cast<float>((xv[i] - zv[p]) * sv[p]); });
  Tensor& y = ctx.allocate_output(0, out, x.dims());
  switch (out) {
    case D::Float: std::copy(fv.begin(), fv.end(), y.mutable_data<float>()); break;
    case D::Float16: {
      auto* p = y.mutable_data<uint16_t>();
      for (size_t i = 0; i < fv.size(); ++i) p[i] = float_to_half(fv[i]);
      break;
    }
    case D::BFloat16: {
      auto* p = y.mutable_data<uint16_t>();
      for (size_t i = 0; i < fv.size(); ++i) p[i] = float_to_bfloat16(fv[i]);
      break;
    }
    default: ctx.error(cat("cannot dequantize to ", out));
  }
}

// uint8 / int8 to float32 with a float32 scale per tensor or per axis (the weights of dynamically and statically
// quantized models, dequantized at session creation): one pass, the same values as run_dq (the difference is an
// exact small integer, the product rounds once in either precision). False when another case applies.
// The fast (de)quantization passes' layout: a per-tensor scale, or a 1-D one along `axis` (from version 13) whose
// values each serve a run of `inner` elements, `channels` runs cycling; the zero point (if any) shaped as the
// scale. False for anything else (blocks, broadcast shapes): the reference runs.
bool scale_runs(const Dims& xd, const Tensor& s, const Tensor* zp, int64_t axis_attr, int version, int64_t& channels,
                int64_t& inner) {
  const int64_t rank = static_cast<int64_t>(xd.size());
  channels = 1;
  inner = 1;
  if (s.element_count() != 1) {
    const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
    if (version < 13 || axis < 0 || axis >= rank || s.dims() != Dims{xd[static_cast<size_t>(axis)]}) return false;
    channels = xd[static_cast<size_t>(axis)];
    inner = product(Dims(xd.begin() + axis + 1, xd.end()));
  } else if (s.dims().size() > 1) {
    return false;
  }
  return !zp || zp->dims() == s.dims();
}

bool run_dq_fast(const DQAttrs& d, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if ((x.dtype() != D::UInt8 && x.dtype() != D::Int8) || s.dtype() != D::Float || (zp && zp->dtype() != x.dtype()) ||
      dq_output_type(d, s.dtype()) != D::Float || d.block_size != 0)
    return false;
  const Dims& xd = x.dims();
  int64_t channels = 1, inner = 1;
  if (!scale_runs(xd, s, zp, d.axis, d.version, channels, inner)) return false;
  const int64_t n = static_cast<int64_t>(x.element_count());
  ctx.set_output(0, allocate_for_overwrite(D::Float, xd));
  float* y = ctx.outputs()[0].tensor.mutable_data<float>();
  const float* sc = s.data<float>();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pz = zp ? zp->data<T>() : nullptr;
    for (int64_t c0 = 0; c0 < n; c0 += inner) {  // one run of `inner` elements shares its scale
      const int64_t p = (c0 / inner) % channels;
      kernels::dequantize(px + c0, std::is_signed_v<T>, inner, sc[p], pz ? static_cast<int32_t>(pz[p]) : 0, y + c0);
    }
  };
  if (n == 0) return true;
  if (channels == 1) inner = n;
  if (x.dtype() == D::UInt8) run(uint8_t{});
  else run(int8_t{});
  return true;
}

// ---- DynamicQuantizeLinear ----

void run_dynamic(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != D::Float) ctx.error(cat("x must be float, got ", x.dtype()));
  const float* px = x.data<float>();
  const uint64_t n = x.element_count();
  float mn = 0.f, mx = 0.f;  // the range always includes 0
  for (uint64_t i = 0; i < n; ++i) {
    if (std::isnan(px[i])) continue;
    mn = std::min(mn, px[i]);
    mx = std::max(mx, px[i]);
  }
  float scale = (mx - mn) / 255.f;
  if (!std::isfinite(scale)) ctx.error("the range of x overflows float (infinite values)");
  uint8_t zp = 0;
  if (scale > 0) {
    float z = 0.f - mn / scale;
    z = std::clamp(z, 0.f, 255.f);
    zp = static_cast<uint8_t>(std::nearbyint(z));
  }
  Tensor& y = ctx.allocate_output(0, D::UInt8, x.dims());
  uint8_t* py = y.mutable_data<uint8_t>();
  if (scale > 0) {
    for (uint64_t i = 0; i < n; ++i) {
      float r = std::nearbyint(px[i] / scale);
      if (std::isnan(r)) r = 0;
      py[i] = static_cast<uint8_t>(std::clamp(r + static_cast<float>(zp), 0.f, 255.f));
    }
  }
  if (ctx.num_outputs() > 1) ctx.allocate_output(1, D::Float, {}).mutable_data<float>()[0] = scale;
  if (ctx.num_outputs() > 2) ctx.allocate_output(2, D::UInt8, {}).mutable_data<uint8_t>()[0] = zp;
}

// The same results in one pass each (kernels/quantize.hpp): the range, then the quantization of the quotient.
void run_dynamic_fast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != D::Float) return run_dynamic(ctx);
  const float* px = x.data<float>();
  const int64_t n = static_cast<int64_t>(x.element_count());
  float mn = 0.f, mx = 0.f;
  kernels::dynamic_range(px, n, mn, mx);
  const float scale = (mx - mn) / 255.f;
  if (!std::isfinite(scale)) ctx.error("the range of x overflows float (infinite values)");
  uint8_t zp = 0;
  if (scale > 0) zp = static_cast<uint8_t>(std::nearbyint(std::clamp(0.f - mn / scale, 0.f, 255.f)));
  Tensor& y = ctx.allocate_output(0, D::UInt8, x.dims());
  uint8_t* py = y.mutable_data<uint8_t>();
  if (scale > 0) kernels::quantize(px, n, scale, static_cast<float>(zp), 0.f, 255.f, py);
  if (ctx.num_outputs() > 1) ctx.allocate_output(1, D::Float, {}).mutable_data<float>()[0] = scale;
  if (ctx.num_outputs() > 2) ctx.allocate_output(2, D::UInt8, {}).mutable_data<uint8_t>()[0] = zp;
}

// QuantizeLinear of float32 to uint8 / int8 with a float32 scale per tensor or per axis (no blocks): the quotient
// rounded in float as the reference's, in one pass (false: the reference runs).
bool run_q_fast(const QAttrs& q, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (x.dtype() != D::Float || s.dtype() != D::Float || q.block_size != 0 ||
      !(q.precision == D::Undefined || q.precision == D::Float))
    return false;
  const D out = q_output_type(q, zp ? zp->dtype() : D::Undefined);
  if (out != D::UInt8 && out != D::Int8) return false;
  const Dims& xd = x.dims();
  int64_t channels = 1, inner = 1;
  if (!scale_runs(xd, s, zp, q.axis, q.version, channels, inner)) return false;
  const int64_t n = static_cast<int64_t>(x.element_count());
  ctx.set_output(0, allocate_for_overwrite(out, xd));
  if (n == 0) return true;
  uint8_t* y = ctx.outputs()[0].tensor.mutable_data<uint8_t>();
  if (channels == 1) inner = n;
  const float lo = out == D::UInt8 ? 0.f : -128.f, hi = out == D::UInt8 ? 255.f : 127.f;
  const float* px = x.data<float>();
  for (int64_t c0 = 0; c0 < n; c0 += inner) {  // one run of `inner` elements shares its scale
    const int64_t p = (c0 / inner) % channels;
    const float z = zp ? static_cast<float>(out == D::UInt8 ? static_cast<int32_t>(zp->data<uint8_t>()[p])
                                                              : static_cast<int32_t>(zp->data<int8_t>()[p]))
                       : 0.f;
    kernels::quantize(px + c0, inner, s.data<float>()[p], z, lo, hi, y + c0);
  }
  return true;
}

void infer_dynamic(InferContext& ctx) {
  Shape scalar;
  scalar.rank_known = true;
  ctx.set_output(0, Type::tensor(D::UInt8, ctx.has_input(0) ? ctx.input_type(0).shape : Shape{}));
  if (ctx.output_types.size() > 1) ctx.set_output(1, Type::tensor(D::Float, scalar));
  if (ctx.output_types.size() > 2) ctx.set_output(2, Type::tensor(D::UInt8, scalar));
}

}  // namespace

void register_quantize_linear(Registry& r) {
  for (int v : {10, 13, 19, 21, 23, 24, 25}) {
    // QuantizeLinear: x, y_scale, y_zero_point.
    std::vector<TypeConstraint> qt = {{{0}, q_x_types(v)}, {{1}, q_scale_types(v)}, {{2}, q_targets(v)}};
    auto qinfer = [v](InferContext& ctx) { infer_q(parse_q(ctx.attrs, v), ctx); };
    auto qkernel = [v](const KernelInit& init) {
      QAttrs q = parse_q(init.attrs, v);
      if (init.reference_only) return make_kernel([q](KernelContext& ctx) { run_q(q, ctx); });
      return make_kernel([q](KernelContext& ctx) {
        if (!run_q_fast(q, ctx)) run_q(q, ctx);
      });
    };
    r.add(OpDef{"", "QuantizeLinear", v, qt, qinfer, qkernel});
    // DequantizeLinear: x, x_scale, x_zero_point.
    std::vector<TypeConstraint> dt = {{{0, 2}, dq_inputs(v)}, {{1}, dq_scale_types(v)}};
    auto dinfer = [v](InferContext& ctx) { infer_dq(parse_dq(ctx.attrs, v), ctx); };
    auto dkernel = [v](const KernelInit& init) {
      DQAttrs d = parse_dq(init.attrs, v);
      if (init.reference_only) return make_kernel([d](KernelContext& ctx) { run_dq(d, ctx); });
      return make_kernel([d](KernelContext& ctx) {
        if (!run_dq_fast(d, ctx)) run_dq(d, ctx);
      });
    };
    r.add(OpDef{"", "DequantizeLinear", v, dt, dinfer, dkernel});
  }
  r.add(OpDef{"", "DynamicQuantizeLinear", 11, {{{0}, {D::Float}}}, infer_dynamic,
              [](const KernelInit& init) {
                if (init.reference_only) return make_kernel([](KernelContext& ctx) { run_dynamic(ctx); });
                return make_kernel([](KernelContext& ctx) { run_dynamic_fast(ctx); });
              }});
  r.set_fast_kernels("", "QuantizeLinear", {"per-tensor float32 to 8 bits: one AVX-512 pass"});
  r.set_fast_kernels("", "DequantizeLinear", {"8 bits to float32: one AVX-512 pass"});
  r.set_fast_kernels("", "DynamicQuantizeLinear", {"float32: one AVX-512 pass"});
}

}  // namespace onyx::ops
