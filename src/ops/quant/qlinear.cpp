// ai.onnx quantized matrix products and convolutions:
//   MatMulInteger-10   Y(int32) = (A - a_zero_point) x (B - b_zero_point), numpy matmul (batch broadcasting, 1-D
//                      operands promoted and their dim dropped). a_zero_point: scalar, per row ([M] or [...,M,1]);
//                      b_zero_point: scalar, per column ([N] or [...,1,N]).
//   ConvInteger-10     Y(int32) = conv(X - x_zero_point, W - w_zero_point); x_zero_point scalar, w_zero_point scalar
//                      or per output channel [M]. Padding reads the zero point (0 after the shift).
//   QLinearMatMul-10   int8/uint8 operands; scales float; Y = saturate(round(acc * a_scale * b_scale / y_scale) +
//                      y_zero_point), acc the int32 product of the shifted operands. Scales/zero points per tensor,
//                      per row of A, per column of B (shapes as for MatMulInteger), y's per tensor or broadcast to Y.
//   QLinearMatMul-21   adds float8 operands/outputs (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) and float16/bfloat16 scales.
//                      With a float8 operand the product accumulates in double; a float8 output is converted with
//                      saturation instead of rounded to an integer.
//   QLinearConv-10     conv of the shifted int8/uint8 operands plus optional int32 bias B [M], requantized like
//                      QLinearMatMul with w_scale/w_zero_point scalar or per output channel.
// Accumulation is int32 and wraps on overflow (the spec allows overflow only in 32 bits). The requantization
// multiplier a_scale * b_scale / y_scale is computed in the scales' type, then applied in double; rounding is half
// to even. The reference convolutions are direct (no im2col), N-D, with auto_pad, pads, strides, dilations and group.
// MatMulInteger's kernels, their product scaled into float32, also run ai.onyx MatMulIntegerToFloat
// (ops/fused/matmul_integer_to_float.cpp, through matmul_integer.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/tensor_alloc.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/int8_gemm.hpp"
#include "kernels/quantize.hpp"
#include "ops/op_kit.hpp"
#include "ops/quant/matmul_integer.hpp"
#include "ops/quant/qlinear_conv.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

const std::vector<D> kEightBit = {D::Int8, D::UInt8};
const std::vector<D> k8f = {D::Int8, D::UInt8, D::Float8E4M3FN, D::Float8E4M3FNUZ, D::Float8E5M2, D::Float8E5M2FNUZ};

bool is_float8_type(D t) { return t == D::Float8E4M3FN || t == D::Float8E4M3FNUZ || t == D::Float8E5M2 || t == D::Float8E5M2FNUZ; }

// a * b / c in precision p (each operation rounded to p).
double multiplier(D p, double a, double b, double c) { return round_to(p, round_to(p, a * b) / c); }

// A scale or zero point, either one value or one per element of an expanded shape.
struct Param {
  std::vector<double> v;
  double at(int64_t i) const { return v.size() == 1 ? v[0] : v[static_cast<size_t>(i)]; }
};

// Expands `t` (numpy-broadcastable to `target`) into one value per element of `target`; a single value stays single.
Param expand(const Tensor* t, const Dims& target, const char* what, double dflt = 0.0) {
  Param p;
  if (!t) {
    p.v = {dflt};
    return p;
  }
  std::vector<double> src = read_doubles(*t);
  if (src.size() == 1) {
    p.v = src;
    return p;
  }
  const Dims& td = t->dims();
  bool ok = td.size() <= target.size();
  for (size_t i = 0; ok && i < td.size(); ++i) {
    int64_t want = target[target.size() - td.size() + i];
    ok = td[i] == want || td[i] == 1;
  }
  if (!ok) fail(what, " has shape ", shape_of(td).to_string(), ", which does not fit ", shape_of(target).to_string());
  p.v.resize(static_cast<size_t>(product(target)));
  for_each_broadcast(target, {td}, [&](int64_t i, const std::vector<int64_t>& o) { p.v[static_cast<size_t>(i)] = src[static_cast<size_t>(o[0])]; });
  return p;
}

// Writes requantized values: integers round half to even and saturate; float8 converts with saturation.
void store_quantized(Tensor& y, const std::vector<double>& r) {
  const size_t n = r.size();
  auto sat = [&](double lo, double hi) {
    return [lo, hi](double v) {
      v = std::nearbyint(v);
      if (std::isnan(v)) v = 0;
      return std::clamp(v, lo, hi);
    };
  };
  switch (y.dtype()) {
    case D::Int8: {
      auto f = sat(-128, 127);
      auto* p = y.mutable_data<int8_t>();
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<int8_t>(f(r[i]));
      return;
    }
    case D::UInt8: {
      auto f = sat(0, 255);
      auto* p = y.mutable_data<uint8_t>();
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(f(r[i]));
      return;
    }
    default: break;
  }
  auto* p = y.mutable_data<uint8_t>();
  for (size_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(r[i]);
    switch (y.dtype()) {
      case D::Float8E4M3FN: p[i] = float_to_f8e4m3fn(f, true); break;
      case D::Float8E4M3FNUZ: p[i] = float_to_f8e4m3fnuz(f, true); break;
      case D::Float8E5M2: p[i] = float_to_f8e5m2(f, true); break;
      case D::Float8E5M2FNUZ: p[i] = float_to_f8e5m2fnuz(f, true); break;
      default: fail("cannot write quantized values as ", y.dtype());
    }
  }
}

void check_same_qtype(KernelContext& ctx, size_t a, size_t b, const char* an, const char* bn) {
  if (ctx.has_input(a) && ctx.has_input(b) && ctx.input(a).dtype() != ctx.input(b).dtype())
    ctx.error(cat(an, " (", ctx.input(a).dtype(), ") and ", bn, " (", ctx.input(b).dtype(), ") must have the same type"));
}

// ---- matmul ----

struct MatMulShape {
  Dims a, b;           // operands as at least 2-D
  Dims batch_a, batch_b, batch;
  int64_t M = 0, K = 0, N = 0;
  Dims out;            // with 1-D operands' dims dropped
  Dims full;           // batch + [M, N]
};

MatMulShape qmatmul_shape(const Dims& a0, const Dims& b0) {
  if (a0.empty() || b0.empty()) fail("matmul operands must have rank >= 1");
  MatMulShape s;
  s.a = a0.size() == 1 ? Dims{1, a0[0]} : a0;
  s.b = b0.size() == 1 ? Dims{b0[0], 1} : b0;
  s.M = s.a[s.a.size() - 2];
  s.K = s.a.back();
  s.N = s.b.back();
  if (s.b[s.b.size() - 2] != s.K)
    fail("matmul inner dimensions differ: ", shape_of(a0).to_string(), " x ", shape_of(b0).to_string());
  s.batch_a.assign(s.a.begin(), s.a.end() - 2);
  s.batch_b.assign(s.b.begin(), s.b.end() - 2);
  s.batch = broadcast_dims(s.batch_a, s.batch_b);
  s.full = s.batch;
  s.full.push_back(s.M);
  s.full.push_back(s.N);
  s.out = s.batch;
  if (a0.size() > 1) s.out.push_back(s.M);
  if (b0.size() > 1) s.out.push_back(s.N);
  return s;
}

// Symbolic matmul shape for inference.
Shape infer_qlinear_matmul(const Shape& a, const Shape& b, InferContext& ctx) {
  if (!a.rank_known || !b.rank_known) return {};
  if (a.dims.empty() || b.dims.empty()) ctx.error("matmul operands must have rank >= 1");
  Shape sa = a, sb = b;
  Dim one{1, {}, {}};
  if (sa.dims.size() == 1) sa.dims.insert(sa.dims.begin(), one);
  if (sb.dims.size() == 1) sb.dims.push_back(one);
  const Dim& ka = sa.dims.back();
  const Dim& kb = sb.dims[sb.dims.size() - 2];
  if (ka.value && kb.value && *ka.value != *kb.value)
    ctx.error(cat("matmul inner dimensions differ: ", a.to_string(), " x ", b.to_string()));
  Shape ba, bb;
  ba.rank_known = bb.rank_known = true;
  ba.dims.assign(sa.dims.begin(), sa.dims.end() - 2);
  bb.dims.assign(sb.dims.begin(), sb.dims.end() - 2);
  Shape out = broadcast_shape(ba, bb);
  if (a.dims.size() > 1) out.dims.push_back(sa.dims[sa.dims.size() - 2]);
  if (b.dims.size() > 1) out.dims.push_back(sb.dims.back());
  return out;
}

// Per-row parameter of A: a 1-D [M] vector means one value per row.
Dims row_param_dims(const Tensor* t, const MatMulShape& s) {
  if (t && t->dims().size() == 1 && t->dims()[0] == s.M && s.M != 1) return {s.M, 1};
  return t ? t->dims() : Dims{};
}

struct MatMulInputs {
  const Tensor *a, *b;
  const Tensor *a_zp = nullptr, *b_zp = nullptr;
  const Tensor *a_scale = nullptr, *b_scale = nullptr, *y_scale = nullptr, *y_zp = nullptr;
};

// acc[batch, m, n] for the shifted operands: int32 wrap-around when both are integers, double otherwise.
std::vector<double> matmul_acc(const MatMulInputs& in, const MatMulShape& s) {
  Dims a_rows = s.a;
  a_rows.back() = 1;
  Dims b_cols = s.b;
  b_cols[b_cols.size() - 2] = 1;
  Tensor a_zp_view, b_zp_view;
  const Tensor* azp = in.a_zp;
  if (azp) {
    a_zp_view = azp->reshaped(row_param_dims(azp, s));
    azp = &a_zp_view;
  }
  Param za = expand(azp, a_rows, "a_zero_point");
  Param zb = expand(in.b_zp, b_cols, "b_zero_point");
  const std::vector<double> av = read_doubles(*in.a), bv = read_doubles(*in.b);
  const bool integer = !is_float8_type(in.a->dtype()) && !is_float8_type(in.b->dtype());
  const int64_t M = s.M, K = s.K, N = s.N;
  std::vector<double> acc(static_cast<size_t>(product(s.full)));
  std::vector<double> ash(static_cast<size_t>(M * K)), bsh(static_cast<size_t>(K * N));
  for_each_broadcast(s.batch, {s.batch_a, s.batch_b}, [&](int64_t bi, const std::vector<int64_t>& o) {
    const int64_t ia = o[0], ib = o[1];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) ash[m * K + k] = av[(ia * M + m) * K + k] - za.at(ia * M + m);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) bsh[k * N + n] = bv[(ib * K + k) * N + n] - zb.at(ib * N + n);
    double* dst = &acc[static_cast<size_t>(bi * M * N)];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        if (integer) {
          uint32_t sum = 0;  // the shifted 8-bit values are exact integers; products fit in int32
          for (int64_t k = 0; k < K; ++k)
            sum += static_cast<uint32_t>(static_cast<int32_t>(ash[m * K + k]) * static_cast<int32_t>(bsh[k * N + n]));
          dst[m * N + n] = static_cast<double>(static_cast<int32_t>(sum));
        } else {
          double sum = 0;
          for (int64_t k = 0; k < K; ++k) sum += ash[m * K + k] * bsh[k * N + n];
          dst[m * N + n] = sum;
        }
      }
  });
  return acc;
}

// MatMulInteger's (and MatMulIntegerToFloat's) A, B and zero points, their types checked.
MatMulInputs integer_matmul_inputs(KernelContext& ctx) {
  MatMulInputs in{&ctx.input(0), &ctx.input(1)};
  in.a_zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  in.b_zp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  check_same_qtype(ctx, 0, 2, "A", "a_zero_point");
  check_same_qtype(ctx, 1, 3, "B", "b_zero_point");
  return in;
}

void run_matmul_integer(KernelContext& ctx) {
  const MatMulInputs in = integer_matmul_inputs(ctx);
  MatMulShape s = qmatmul_shape(in.a->dims(), in.b->dims());
  std::vector<double> acc = matmul_acc(in, s);
  Tensor& y = ctx.allocate_output(0, D::Int32, s.out);
  int32_t* py = y.mutable_data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) py[i] = static_cast<int32_t>(acc[i]);
}

// ---- MatMulInteger, fast path ----
// A of rank >= 2 against a 2-D B with a per-tensor a_zero_point: one [rows, K] x [K, N] integer GEMM
// (kernels::int8_gemm_packed) with B as int8: a uint8 B is shifted by -128, its zero point with it, which leaves
// every difference B - b_zero_point as it was. B is converted and packed once when it is a constant.

struct Int8B {
  kernels::PackedInt8 packed;
  std::vector<int32_t> zero;  // one per tensor, or one per column
};

// B (2-D, uint8 or int8) and its zero point, packed; false where the fast path does not apply.
bool pack_int8_b(const Tensor& b, const Tensor* zp, Int8B& out) {
  const int64_t K = b.dims()[0], N = b.dims()[1];
  if (zp && (zp->dtype() != b.dtype() || !(zp->element_count() == 1 || zp->dims() == Dims{N} || zp->dims() == Dims{1, N})))
    return false;
  const bool u8 = b.dtype() == D::UInt8;
  std::vector<int8_t> shifted;
  const int8_t* src = b.data<int8_t>();
  if (u8) {
    shifted.resize(static_cast<size_t>(K * N));
    const uint8_t* raw = b.data<uint8_t>();
    for (size_t i = 0; i < shifted.size(); ++i) shifted[i] = static_cast<int8_t>(static_cast<int32_t>(raw[i]) - 128);
    src = shifted.data();
  }
  kernels::pack_int8(src, K, N, out.packed);
  out.zero.clear();
  for (int64_t z : zp ? read_ints(*zp) : std::vector<int64_t>{0}) out.zero.push_back(static_cast<int32_t>(z) - (u8 ? 128 : 0));
  return true;
}

// The packed constant B of a MatMulInteger-like kernel: packed at creation when input `b_index` (and its zero point
// `zp_index`) are constants, else per run.
class PackedWeight {
 public:
  PackedWeight(const KernelInit& init, size_t b_index, size_t zp_index) {
    const Tensor* b = init.input_value(b_index);
    const bool zp_fed = init.node.inputs.size() > zp_index && init.node.inputs[zp_index];
    const Tensor* zp = zp_fed ? init.input_value(zp_index) : nullptr;
    if (b && b->dims().size() == 2 && (!zp_fed || zp) && pack_int8_b(*b, zp, b_)) {
      b_source_ = b->bytes().data();
      zp_source_ = zp ? zp->bytes().data() : nullptr;
    }
  }
  bool holds_constant() const { return b_source_ != nullptr; }

  // B packed for this run's b and zero point, or null where the fast path does not apply.
  const Int8B* get(const Tensor& b, const Tensor* bzp, Int8B& scratch) const {
    if (b_source_ && b.bytes().data() == b_source_ && (bzp ? bzp->bytes().data() == zp_source_ : zp_source_ == nullptr))
      return &b_;
    return pack_int8_b(b, bzp, scratch) ? &scratch : nullptr;
  }

 private:
  Int8B b_;
  const void* b_source_ = nullptr;   // the constant B that b_ holds, when it holds one
  const void* zp_source_ = nullptr;  // and its constant zero point
};

// Whether MatMulInteger's fast path takes A (rank >= 2, K matching a 2-D B, per-tensor zero point of A's type).
bool fast_matmul_integer_applies(const Tensor& a, const Tensor& b, const Tensor* azp) {
  return a.dims().size() >= 2 && b.dims().size() == 2 && a.dims().back() == b.dims()[0] &&
         (!azp || (azp->dtype() == a.dtype() && azp->element_count() == 1));
}

}  // namespace

// ---- MatMulInteger scaled into float32 ----

void run_matmul_integer_to_float(KernelContext& ctx, ReadIntegerToFloat read) {
  const MatMulInputs in = integer_matmul_inputs(ctx);
  MatMulShape s = qmatmul_shape(in.a->dims(), in.b->dims());
  const IntegerToFloat e = read(ctx, s.N, s.out.size());
  std::vector<double> acc = matmul_acc(in, s);
  float* py = ctx.allocate_output(0, D::Float, s.out).mutable_data<float>();
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t n = i % static_cast<size_t>(s.N);
    float y = static_cast<float>(static_cast<int32_t>(acc[i]));
    y = y * e.scale[e.per_column ? n : 0];
    if (e.bias) y = y + e.bias[n];
    py[i] = y;
  }
}

namespace {

// MatMulInteger on the packed kernel: int32 out, or with `to_float` float32 out, scaled and biased.
class FastIntegerMatMul : public Kernel {
 public:
  FastIntegerMatMul(const KernelInit& init, ReadIntegerToFloat to_float) : weight_(init, 1, 3), to_float_(to_float) {}
  bool keeps_copy_of_input(size_t i) const override { return i == 1 && weight_.holds_constant(); }

  void run(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* azp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* bzp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    Int8B converted;
    const Int8B* packed = fast_matmul_integer_applies(a, b, azp) ? weight_.get(b, bzp, converted) : nullptr;
    if (!packed) return to_float_ ? run_matmul_integer_to_float(ctx, to_float_) : run_matmul_integer(ctx);  // and their errors
    const int64_t N = b.dims()[1];
    Dims out(a.dims().begin(), a.dims().end() - 1);
    const int64_t rows = product(out);
    out.push_back(N);
    kernels::Int8Output o;
    o.ldc = N;
    if (to_float_) {
      const IntegerToFloat e = to_float_(ctx, N, out.size());
      ctx.set_output(0, allocate_for_overwrite(D::Float, out));
      o.y = ctx.outputs()[0].tensor.mutable_data<float>();
      o.scale = e.scale;
      o.scale_per_column = e.per_column;
      o.bias = e.bias;
    } else {
      ctx.set_output(0, allocate_for_overwrite(D::Int32, out));
      o.c = ctx.outputs()[0].tensor.mutable_data<int32_t>();
    }
    const int32_t za = azp ? static_cast<int32_t>(read_ints(*azp)[0]) : 0;
    kernels::int8_gemm_packed(a.dtype() == D::Int8, a.bytes().data(), rows, za, packed->packed, packed->zero.data(),
                              static_cast<int64_t>(packed->zero.size()), o);
  }

 private:
  PackedWeight weight_;
  ReadIntegerToFloat to_float_;  // null for int32 out
};

}  // namespace

std::unique_ptr<Kernel> make_fast_matmul_integer_to_float(const KernelInit& init, ReadIntegerToFloat read) {
  return std::make_unique<FastIntegerMatMul>(init, read);
}

namespace {

void requantize(const int32_t* acc, int64_t count, int64_t inner, int64_t channels, const std::vector<double>& mult,
                const int32_t* bias, double y_zero, Tensor& y);

void run_qlinear_matmul(int version, KernelContext& ctx) {
  MatMulInputs in{&ctx.input(0), &ctx.input(3)};
  in.a_scale = &ctx.input(1);
  in.a_zp = &ctx.input(2);
  in.b_scale = &ctx.input(4);
  in.b_zp = &ctx.input(5);
  in.y_scale = &ctx.input(6);
  in.y_zp = &ctx.input(7);
  check_same_qtype(ctx, 0, 2, "a", "a_zero_point");
  check_same_qtype(ctx, 3, 5, "b", "b_zero_point");
  const D sp = in.a_scale->dtype();
  if (version >= 21 && (in.b_scale->dtype() != sp || in.y_scale->dtype() != sp))
    ctx.error(cat("a_scale, b_scale and y_scale must have the same type, got ", sp, ", ", in.b_scale->dtype(), ", ", in.y_scale->dtype()));
  MatMulShape s = qmatmul_shape(in.a->dims(), in.b->dims());
  Dims a_rows = s.a;
  a_rows.back() = 1;
  Dims b_cols = s.b;
  b_cols[b_cols.size() - 2] = 1;
  Tensor as_view = in.a_scale->reshaped(row_param_dims(in.a_scale, s));
  Param sa = expand(&as_view, a_rows, "a_scale");
  Param sb = expand(in.b_scale, b_cols, "b_scale");
  Param sy = expand(in.y_scale, s.full, "y_scale");
  Param zy = expand(in.y_zp, s.full, "y_zero_point");
  std::vector<double> acc = matmul_acc(in, s);
  const int64_t M = s.M, N = s.N;
  for_each_broadcast(s.batch, {s.batch_a, s.batch_b}, [&](int64_t bi, const std::vector<int64_t>& o) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t i = (bi * M + m) * N + n;
        const double mult = multiplier(sp, sa.at(o[0] * M + m), sb.at(o[1] * N + n), sy.at(i));
        acc[static_cast<size_t>(i)] = acc[static_cast<size_t>(i)] * mult + zy.at(i);
      }
  });
  Tensor& y = ctx.allocate_output(0, in.y_zp->dtype(), s.out);
  store_quantized(y, acc);
}

// QLinearMatMul on the packed integer GEMM: float scales; a's and y's scale and zero point per tensor, b 2-D with its
// scale and zero point per tensor or per column; A of rank >= 2. Other cases run the reference.
class FastQLinearMatMul : public Kernel {
 public:
  FastQLinearMatMul(const KernelInit& init, int version) : version_(version), weight_(init, 3, 5) {}
  bool keeps_copy_of_input(size_t i) const override { return i == 3 && weight_.holds_constant(); }

  void run(KernelContext& ctx) override {
    if (!fast_run(ctx)) run_qlinear_matmul(version_, ctx);
  }

 private:
  bool fast_run(KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& as = ctx.input(1);
    const Tensor& azp = ctx.input(2);
    const Tensor& b = ctx.input(3);
    const Tensor& bs = ctx.input(4);
    const Tensor& ys = ctx.input(6);
    const Tensor& yz = ctx.input(7);
    if (as.dtype() != D::Float || bs.dtype() != D::Float || ys.dtype() != D::Float || as.element_count() != 1 ||
        ys.element_count() != 1 || yz.element_count() != 1 || !(yz.dtype() == D::UInt8 || yz.dtype() == D::Int8) ||
        !(a.dtype() == D::UInt8 || a.dtype() == D::Int8) || !(b.dtype() == D::UInt8 || b.dtype() == D::Int8) ||
        !fast_matmul_integer_applies(a, b, &azp))
      return false;
    const int64_t N = b.dims()[1];
    if (!(bs.element_count() == 1 || bs.dims() == Dims{N} || bs.dims() == Dims{1, N})) return false;
    Int8B converted;
    const Int8B* packed = weight_.get(b, &ctx.input(5), converted);
    if (!packed) return false;
    Dims out(a.dims().begin(), a.dims().end() - 1);
    const int64_t rows = product(out);
    out.push_back(N);
    thread_local std::vector<int32_t> acc_buffer;
    if (acc_buffer.size() < static_cast<size_t>(rows * N)) acc_buffer.resize(static_cast<size_t>(rows * N));
    kernels::Int8Output o;
    o.c = acc_buffer.data();
    o.ldc = N;
    kernels::int8_gemm_packed(a.dtype() == D::Int8, a.bytes().data(), rows, static_cast<int32_t>(read_ints(azp)[0]),
                              packed->packed, packed->zero.data(), static_cast<int64_t>(packed->zero.size()), o);
    const double a_scale = as.data<float>()[0], y_scale = ys.data<float>()[0];
    std::vector<double> mult(static_cast<size_t>(bs.element_count()));
    for (size_t i = 0; i < mult.size(); ++i) mult[i] = multiplier(D::Float, a_scale, bs.data<float>()[i], y_scale);
    Tensor y = allocate_for_overwrite(yz.dtype(), out);
    // One multiplier: the whole product as one run; one per column: runs of one element, channel = column.
    const double y_zero = static_cast<double>(read_ints(yz)[0]);
    if (rows * N > 0) {
      if (mult.size() == 1) requantize(o.c, rows * N, rows * N, 1, mult, nullptr, y_zero, y);
      else requantize(o.c, rows * N, 1, N, mult, nullptr, y_zero, y);
    }
    ctx.set_output(0, std::move(y));
    return true;
  }

  int version_;
  PackedWeight weight_;
};

// ---- convolution ----

struct QLinearConvAttrs {
  std::string auto_pad = "NOTSET";
  Dims dilations, kernel, pads, strides;
  int64_t group = 1;
};

QLinearConvAttrs parse_conv(const AttributeView& a) {
  QLinearConvAttrs p;
  p.auto_pad = a.get_string("auto_pad", "NOTSET");
  if (p.auto_pad != "NOTSET" && p.auto_pad != "SAME_UPPER" && p.auto_pad != "SAME_LOWER" && p.auto_pad != "VALID")
    fail("auto_pad '", p.auto_pad, "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  p.dilations = a.get_ints("dilations", Dims{});
  p.kernel = a.get_ints("kernel_shape", Dims{});
  p.pads = a.get_ints("pads", Dims{});
  p.strides = a.get_ints("strides", Dims{});
  p.group = a.get_int("group", 1);
  if (p.group <= 0) fail("group must be positive, got ", p.group);
  return p;
}

// Fills defaults for `nd` spatial axes, checks, and resolves auto_pad into pads given the input's spatial dims
// (entries may be -1 when unknown; their pads are then left as given).
QLinearConvAttrs resolve_conv(QLinearConvAttrs p, const Dims& in, const Dims* wdims) {
  const size_t nd = in.size();
  if (p.kernel.empty() && wdims) p.kernel.assign(wdims->begin() + 2, wdims->end());
  if (p.dilations.empty()) p.dilations.assign(nd, 1);
  if (p.strides.empty()) p.strides.assign(nd, 1);
  if (p.pads.empty()) p.pads.assign(2 * nd, 0);
  if (p.kernel.size() != nd) fail("kernel_shape must have ", nd, " values, got ", p.kernel.size());
  if (p.dilations.size() != nd || p.strides.size() != nd) fail("dilations and strides must have ", nd, " values");
  if (p.pads.size() != 2 * nd) fail("pads must have ", 2 * nd, " values, got ", p.pads.size());
  for (size_t i = 0; i < nd; ++i) {
    if (p.kernel[i] <= 0 || p.dilations[i] <= 0 || p.strides[i] <= 0) fail("kernel_shape, dilations and strides must be positive");
    if (p.kernel[i] > (int64_t{1} << 31) || p.dilations[i] > (int64_t{1} << 31) || p.strides[i] > (int64_t{1} << 31))
      fail("kernel_shape, dilations and strides must be below 2^31");
    if (p.pads[i] < 0 || p.pads[nd + i] < 0 || p.pads[i] > (int64_t{1} << 31) || p.pads[nd + i] > (int64_t{1} << 31))
      fail("pads must be in [0, 2^31]");
  }
  if (p.auto_pad == "VALID") {
    std::fill(p.pads.begin(), p.pads.end(), 0);
  } else if (p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < nd; ++i) {
      if (in[i] < 0) continue;
      const int64_t out = (in[i] + p.strides[i] - 1) / p.strides[i];
      const int64_t span = (p.kernel[i] - 1) * p.dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * p.strides[i] + span - in[i]);
      const int64_t small = total / 2, big = total - small;
      p.pads[i] = p.auto_pad == "SAME_UPPER" ? small : big;
      p.pads[nd + i] = p.auto_pad == "SAME_UPPER" ? big : small;
    }
  }
  return p;
}

int64_t conv_out_dim(const QLinearConvAttrs& p, size_t i, int64_t in) {
  const size_t nd = p.kernel.size();
  const int64_t span = (p.kernel[i] - 1) * p.dilations[i] + 1;
  const int64_t padded = in + p.pads[i] + p.pads[nd + i];
  if (padded < span) fail("the kernel (extent ", span, ") does not fit the padded input (", padded, ") on spatial axis ", i);
  return (padded - span) / p.strides[i] + 1;
}

// Steps a multi-index through `extent` in row-major order (the last axis fastest), wrapping to zeros at the end.
void next_index(std::vector<int64_t>& idx, const Dims& extent) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < extent[d]) return;
    idx[d] = 0;
  }
}

struct ConvInputs {
  const Tensor *x, *w;
  const Tensor *x_zp = nullptr, *w_zp = nullptr, *bias = nullptr;
};

struct ConvResult {
  Dims ydims;
  std::vector<int32_t> acc;
};

// Direct convolution of (X - x_zp) and (W - w_zp) with int32 (wrapping) accumulation, plus bias.
ConvResult conv_integer(const QLinearConvAttrs& attrs, const ConvInputs& in) {
  const Dims& xd = in.x->dims();
  const Dims& wd = in.w->dims();
  if (xd.size() < 3) fail("X must have rank >= 3 ([N, C, spatial...]), got ", shape_of(xd).to_string());
  if (wd.size() != xd.size()) fail("W rank ", wd.size(), " differs from X rank ", xd.size());
  const size_t nd = xd.size() - 2;
  const QLinearConvAttrs p = resolve_conv(attrs, Dims(xd.begin() + 2, xd.end()), &wd);
  for (size_t i = 0; i < nd; ++i)
    if (wd[2 + i] != p.kernel[i]) fail("kernel_shape ", shape_of(p.kernel).to_string(), " does not match W ", shape_of(wd).to_string());
  const int64_t N = xd[0], C = xd[1], OC = wd[0], G = p.group;
  if (wd[1] * G != C || OC % G != 0)
    fail("W shape ", shape_of(wd).to_string(), " and group ", G, " do not match ", C, " input channels");
  Dims outsp;
  for (size_t i = 0; i < nd; ++i) outsp.push_back(conv_out_dim(p, i, xd[2 + i]));
  ConvResult r;
  r.ydims = {N, OC};
  r.ydims.insert(r.ydims.end(), outsp.begin(), outsp.end());
  // Padding can make the output far larger than the input: bound it before allocating.
  check_data_sized(r.ydims);
  // Zero points: x per tensor; w per tensor or per output channel.
  int32_t xz = 0;
  if (in.x_zp) {
    if (in.x_zp->element_count() != 1) fail("x_zero_point must be a scalar (per-tensor), got shape ", shape_of(in.x_zp->dims()).to_string());
    xz = static_cast<int32_t>(read_ints(*in.x_zp)[0]);
  }
  std::vector<int64_t> wz(static_cast<size_t>(OC), 0);
  if (in.w_zp) {
    std::vector<int64_t> v = read_ints(*in.w_zp);
    if (v.size() == 1) std::fill(wz.begin(), wz.end(), v[0]);
    else if (in.w_zp->dims() == Dims{OC}) wz = v;
    else fail("w_zero_point must be a scalar or have shape [", OC, "], got ", shape_of(in.w_zp->dims()).to_string());
  }
  std::vector<int64_t> bias;
  if (in.bias) {
    if (in.bias->dims() != Dims{OC}) fail("B must have shape [", OC, "], got ", shape_of(in.bias->dims()).to_string());
    bias = read_ints(*in.bias);
  }
  r.acc.assign(static_cast<size_t>(product(r.ydims)), 0);
  if (r.acc.empty()) return r;
  const std::vector<int64_t> xr = read_ints(*in.x), wr = read_ints(*in.w);
  const int64_t K = product(p.kernel), O = product(outsp), in_sp = product(xd, 2), Cg = C / G, OCg = OC / G;
  std::vector<int32_t> xs(xr.size()), ws(wr.size());
  for (size_t i = 0; i < xr.size(); ++i) xs[i] = static_cast<int32_t>(xr[i]) - xz;
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t j = 0; j < Cg * K; ++j) {
      const size_t i = static_cast<size_t>(oc * Cg * K + j);
      ws[i] = static_cast<int32_t>(wr[i] - wz[static_cast<size_t>(oc)]);
    }
  const Dims in_strides = strides_of(Dims(xd.begin() + 2, xd.end()));
  std::vector<int64_t> oidx(nd, 0), kidx(nd);
  std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel point, input offset) inside the input
  for (int64_t o = 0; o < O; ++o) {
    taps.clear();
    std::fill(kidx.begin(), kidx.end(), 0);
    for (int64_t kp = 0; kp < K; ++kp) {
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < nd && inside; ++d) {
        const int64_t c = oidx[d] * p.strides[d] - p.pads[d] + kidx[d] * p.dilations[d];
        inside = c >= 0 && c < xd[2 + d];
        off += c * in_strides[d];
      }
      if (inside) taps.push_back({kp, off});
      next_index(kidx, p.kernel);
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oc = 0; oc < OC; ++oc) {
        const int64_t g = oc / OCg;
        uint32_t sum = bias.empty() ? 0u : static_cast<uint32_t>(bias[static_cast<size_t>(oc)]);
        for (int64_t cl = 0; cl < Cg; ++cl) {
          const int32_t* plane = &xs[static_cast<size_t>((n * C + g * Cg + cl) * in_sp)];
          const int32_t* wk = &ws[static_cast<size_t>((oc * Cg + cl) * K)];
          for (auto [kp, off] : taps) sum += static_cast<uint32_t>(plane[off] * wk[kp]);
        }
        r.acc[static_cast<size_t>((n * OC + oc) * O + o)] = static_cast<int32_t>(sum);
      }
    next_index(oidx, outsp);
  }
  return r;
}

// ---- ConvInteger, fast path ----
// Per group, W [OC/G, C/G * kernel] times the columns of X [C/G * kernel, positions] (im2col) as an integer GEMM,
// the columns made for a block of output positions at a time so that they stay small. The columns are int8: a
// uint8 X is shifted by -128 with its zero point, and padding holds the (shifted) zero point, whose difference is 0.
// A per-channel w_zero_point is applied after the product: sum (W - wz[oc]) d = sum W d - wz[oc] * sum d, with d the
// column's differences from the zero point.
// The int32 convolution of ConvInteger (and QLinearConv's accumulators) into `out`; false where the fast path does not
// apply (then the reference runs and names any error).
bool conv_integer_fast(const QLinearConvAttrs& attrs, const Tensor& x, const Tensor& w, const Tensor* xzp, const Tensor* wzp,
                       Tensor& out) {
  const Dims& xd = x.dims();
  const Dims& wd = w.dims();
  if (xd.size() < 3 || wd.size() != xd.size() || (xzp && (xzp->dtype() != x.dtype() || xzp->element_count() != 1)) ||
      (wzp && wzp->dtype() != w.dtype()))
    return false;
  const size_t nd = xd.size() - 2;
  const QLinearConvAttrs p = resolve_conv(attrs, Dims(xd.begin() + 2, xd.end()), &wd);
  const int64_t N = xd[0], C = xd[1], OC = wd[0], G = p.group;
  if (wd[1] * G != C || OC % G != 0) return false;
  for (size_t i = 0; i < nd; ++i)
    if (wd[2 + i] != p.kernel[i]) return false;
  Dims outsp;
  for (size_t i = 0; i < nd; ++i) outsp.push_back(conv_out_dim(p, i, xd[2 + i]));
  std::vector<int32_t> wz(static_cast<size_t>(OC), 0);
  if (wzp) {
    const std::vector<int64_t> v = read_ints(*wzp);
    if (v.size() == 1) std::fill(wz.begin(), wz.end(), static_cast<int32_t>(v[0]));
    else if (wzp->dims() == Dims{OC}) std::transform(v.begin(), v.end(), wz.begin(), [](int64_t z) { return static_cast<int32_t>(z); });
    else return false;
  }
  const bool per_channel = std::any_of(wz.begin(), wz.end(), [&](int32_t z) { return z != wz[0]; });
  const bool x_u8 = x.dtype() == D::UInt8, w_signed = w.dtype() == D::Int8;
  const int8_t col_zero = static_cast<int8_t>((xzp ? static_cast<int32_t>(read_ints(*xzp)[0]) : 0) - (x_u8 ? 128 : 0));
  Dims ydims = {N, OC};
  ydims.insert(ydims.end(), outsp.begin(), outsp.end());
  check_data_sized(ydims);
  out = allocate_for_overwrite(D::Int32, ydims);
  int32_t* y = out.mutable_data<int32_t>();
  const int64_t K = product(p.kernel), O = product(outsp), in_sp = product(xd, 2), Cg = C / G, OCg = OC / G;
  const int64_t rows = Cg * K;  // the GEMM's inner dimension
  if (O == 0 || OC == 0 || N == 0) return true;
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 20) / std::max<int64_t>(rows, 1), 16, O);
  // Buffers the calling thread keeps between calls (allocated per call, megabytes are mapped and faulted anew).
  thread_local std::vector<int8_t> cols_buffer;
  thread_local std::vector<int32_t> acc_buffer;
  thread_local std::vector<uint32_t> colsum_buffer;
  if (cols_buffer.size() < static_cast<size_t>(rows * block)) cols_buffer.resize(static_cast<size_t>(rows * block));
  if (acc_buffer.size() < static_cast<size_t>(OCg * block)) acc_buffer.resize(static_cast<size_t>(OCg * block));
  if (colsum_buffer.size() < static_cast<size_t>(block)) colsum_buffer.resize(static_cast<size_t>(block));
  int8_t* cols = cols_buffer.data();  // pointers: inside parallel regions the names would be other threads' own
  int32_t* acc = acc_buffer.data();
  uint32_t* colsum = colsum_buffer.data();
  const Dims in_strides = strides_of(Dims(xd.begin() + 2, xd.end()));
  const uint8_t* xb = x.data<uint8_t>();
  const uint8_t flip = x_u8 ? 0x80 : 0;  // uint8 - 128 as int8 is the byte with its top bit flipped
  static const bool avx512bw = kernels::best_isa() == kernels::Isa::Avx512;
  // Output positions of the block [o0, o0 + nb) are taken a line at a time (a run along the last axis): the outer
  // axes decide whether the whole line reads padding, and on the last axis the positions that read the input form one
  // range, copied with a stride (a plain copy for stride 1) and with padding on either side.
  const int64_t OW = outsp[nd - 1], IW = xd[nd + 1], sw = p.strides[nd - 1];
  const auto im2col_row = [&](const uint8_t* plane, const std::vector<int64_t>& kidx, int64_t o0, int64_t nb,
                              int8_t* dst) {
    std::vector<int64_t> oidx(nd);
    int64_t rest = o0;
    for (size_t d = nd; d-- > 0;) {
      oidx[d] = rest % outsp[d];
      rest /= outsp[d];
    }
    const int64_t kd = kidx[nd - 1] * p.dilations[nd - 1] - p.pads[nd - 1];  // input column = ow * sw + kd
    const int64_t first = kd >= 0 ? 0 : (-kd + sw - 1) / sw;                  // the line's first and end columns
    const int64_t end = IW - 1 - kd < 0 ? 0 : (IW - 1 - kd) / sw + 1;        // that read the input
    for (int64_t j = 0; j < nb;) {
      const int64_t ow = oidx[nd - 1], len = std::min(OW - ow, nb - j);
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d + 1 < nd; ++d) {
        const int64_t at = oidx[d] * p.strides[d] - p.pads[d] + kidx[d] * p.dilations[d];
        inside = inside && at >= 0 && at < xd[2 + d];
        off += at * in_strides[d];
      }
      int8_t* out = dst + j;
      const int64_t lo = inside ? std::clamp(first, ow, ow + len) : ow + len;
      const int64_t hi = inside ? std::clamp(end, lo, ow + len) : ow + len;
      std::fill(out, out + (lo - ow), col_zero);
      if (hi > lo) {
        const uint8_t* src = plane + off + lo * sw + kd;
        int8_t* o = out + (lo - ow);
        if (sw == 1) {
          // Eight bytes at a time (GCC's -O2 leaves the byte loop scalar): the flip of each byte's top bit.
          const int64_t len8 = (hi - lo) / 8 * 8;
          const uint64_t flip8 = flip ? 0x8080808080808080ull : 0;
          for (int64_t i = 0; i < len8; i += 8) {
            uint64_t w;
            std::memcpy(&w, src + i, 8);
            w ^= flip8;
            std::memcpy(o + i, &w, 8);
          }
          for (int64_t i = len8; i < hi - lo; ++i) o[i] = static_cast<int8_t>(src[i] ^ flip);
        } else if (sw == 2 && avx512bw) {
          kernels::every_other_byte_avx512(src, hi - lo, flip, reinterpret_cast<uint8_t*>(o));
        } else {
          for (int64_t i = 0; i < hi - lo; ++i) o[i] = static_cast<int8_t>(src[i * sw] ^ flip);
        }
      }
      std::fill(out + (hi - ow), out + len, col_zero);
      j += len;
      oidx[nd - 1] = ow + len - 1;
      next_index(oidx, outsp);
    }
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t o0 = 0; o0 < O; o0 += block) {
        const int64_t nb = std::min(block, O - o0);
        // im2col of this block: row (c, kernel point), column output position.
#pragma omp parallel for schedule(static) if (rows * nb > (int64_t{1} << 16))
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t c = r / K;
          std::vector<int64_t> kidx(nd);
          for (int64_t rest = r % K, d = static_cast<int64_t>(nd); d-- > 0;) {
            kidx[static_cast<size_t>(d)] = rest % p.kernel[static_cast<size_t>(d)];
            rest /= p.kernel[static_cast<size_t>(d)];
          }
          im2col_row(xb + (n * C + g * Cg + c) * in_sp, kidx, o0, nb, &cols[static_cast<size_t>(r * nb)]);
        }
        const uint8_t* wg = w.data<uint8_t>() + static_cast<size_t>(g * OCg * rows);
        kernels::int8_gemm(w_signed, wg, per_channel ? 0 : wz[static_cast<size_t>(g * OCg)], cols, col_zero, OCg, nb,
                           rows, acc);
        if (per_channel) {
          std::fill(colsum, colsum + nb, 0u);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < nb; ++j)
              colsum[static_cast<size_t>(j)] += static_cast<uint32_t>(cols[static_cast<size_t>(r * nb + j)] - col_zero);
        }
        for (int64_t oc = 0; oc < OCg; ++oc) {
          int32_t* dst = y + (n * OC + g * OCg + oc) * O + o0;
          const int32_t* src = &acc[static_cast<size_t>(oc * nb)];
          if (!per_channel) {
            std::memcpy(dst, src, static_cast<size_t>(nb) * sizeof(int32_t));
            continue;
          }
          const uint32_t z = static_cast<uint32_t>(wz[static_cast<size_t>(g * OCg + oc)]);
          for (int64_t j = 0; j < nb; ++j)
            dst[j] = static_cast<int32_t>(static_cast<uint32_t>(src[j]) - z * colsum[static_cast<size_t>(j)]);
        }
      }
  return true;
}

bool run_conv_integer_fast(const QLinearConvAttrs& attrs, KernelContext& ctx) {
  Tensor y;
  if (!conv_integer_fast(attrs, ctx.input(0), ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr,
                         ctx.has_input(3) ? &ctx.input(3) : nullptr, y))
    return false;
  ctx.set_output(0, std::move(y));
  return true;
}

// Requantizes int32 accumulators as QLinearConv and QLinearMatMul do: y = saturate(round_half_even(acc * mult + y_zero)),
// acc wrapping with `bias` added first (QLinearConv's B). mult and bias are indexed by channel: element i's is
// (i / inner) % channels. With one multiplier (mult.size() == 1) it applies to all.
void requantize(const int32_t* acc, int64_t count, int64_t inner, int64_t channels, const std::vector<double>& mult,
                const int32_t* bias, double y_zero, Tensor& y) {
  const bool u8 = y.dtype() == D::UInt8;
  const double lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
  uint8_t* out = y.mutable_data<uint8_t>();
  const int64_t blocks = count / inner;
  // Runs of one element with a multiplier each (per-column scales of a product): whole rows of `channels`.
  if (inner == 1 && !bias && mult.size() == static_cast<size_t>(channels) && count % channels == 0) {
#pragma omp parallel for schedule(static) if (count > (int64_t{1} << 16))
    for (int64_t r = 0; r < count / channels; ++r)
      kernels::requantize_columns(acc + r * channels, channels, mult.data(), y_zero, lo, hi, out + r * channels);
    return;
  }
#pragma omp parallel for schedule(static) if (count > (int64_t{1} << 16))
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t ch = b % channels;
    kernels::requantize(acc + b * inner, inner, bias ? bias[ch] : 0, mult[mult.size() == 1 ? 0 : static_cast<size_t>(ch)],
                        y_zero, lo, hi, out + b * inner);
  }
}

// QLinearConv on the ConvInteger fast path: float scales, x/y scale and zero point per tensor, w's per tensor or
// per output channel, int32 bias [OC]. False where it does not apply.
bool run_qlinear_conv_fast(const QLinearConvAttrs& attrs, KernelContext& ctx) {
  const Tensor& xs = ctx.input(1);
  const Tensor& wsc = ctx.input(4);
  const Tensor& ys = ctx.input(6);
  const Tensor& yz = ctx.input(7);
  const Tensor& w = ctx.input(3);
  const Tensor* bias = ctx.has_input(8) ? &ctx.input(8) : nullptr;
  if (xs.dtype() != D::Float || wsc.dtype() != D::Float || ys.dtype() != D::Float || xs.element_count() != 1 ||
      ys.element_count() != 1 || yz.element_count() != 1 || !(yz.dtype() == D::UInt8 || yz.dtype() == D::Int8) ||
      w.dims().empty())
    return false;
  const int64_t OC = w.dims()[0];
  if ((wsc.element_count() != 1 && wsc.dims() != Dims{OC}) || (bias && (bias->dtype() != D::Int32 || bias->dims() != Dims{OC})))
    return false;
  Tensor acc;
  if (!conv_integer_fast(attrs, ctx.input(0), w, &ctx.input(2), &ctx.input(5), acc)) return false;
  const double x_scale = xs.data<float>()[0], y_scale = ys.data<float>()[0];
  std::vector<double> mult(static_cast<size_t>(wsc.element_count()));
  for (size_t i = 0; i < mult.size(); ++i) mult[i] = multiplier(D::Float, x_scale, wsc.data<float>()[i], y_scale);
  Tensor y = allocate_for_overwrite(yz.dtype(), acc.dims());
  const int64_t count = static_cast<int64_t>(acc.element_count());
  if (count > 0)
    requantize(acc.data<int32_t>(), count, product(acc.dims(), 2), OC, mult, bias ? bias->data<int32_t>() : nullptr,
               static_cast<double>(read_ints(yz)[0]), y);
  ctx.set_output(0, std::move(y));
  return true;
}

void infer_qlinear_conv(const QLinearConvAttrs& attrs, InferContext& ctx, size_t x_in, size_t w_in, D out_type) {
  Type out = Type::tensor(out_type);
  if (!ctx.has_input(x_in)) {
    ctx.set_output(0, out);
    return;
  }
  const Type& xt = ctx.input_type(x_in);
  if (xt.shape.rank_known && xt.shape.dims.size() < 3) ctx.error(cat("X must have rank >= 3, got ", xt.shape.to_string()));
  if (xt.shape.rank_known) {
    const size_t nd = xt.shape.dims.size() - 2;
    out.shape.rank_known = true;
    out.shape.dims.assign(nd + 2, Dim{});
    out.shape.dims[0] = xt.shape.dims[0];
    std::optional<Dims> wd;
    if (ctx.has_input(w_in)) {
      const Type& wt = ctx.input_type(w_in);
      if (wt.shape.rank_known && wt.shape.dims.size() != nd + 2)
        ctx.error(cat("W rank ", wt.shape.dims.size(), " differs from X rank ", nd + 2));
      if (wt.shape.rank_known) out.shape.dims[1] = wt.shape.dims[0];
      wd = static_dims(wt);
    }
    if (!attrs.kernel.empty() || wd) {
      Dims in(nd, -1);
      for (size_t i = 0; i < nd; ++i)
        if (xt.shape.dims[2 + i].value) in[i] = *xt.shape.dims[2 + i].value;
      QLinearConvAttrs p = resolve_conv(attrs, in, wd ? &*wd : nullptr);
      for (size_t i = 0; i < nd; ++i)
        if (in[i] >= 0) out.shape.dims[2 + i] = known_dim(conv_out_dim(p, i, in[i]));
    }
  }
  ctx.set_output(0, out);
}

void run_conv_integer(const QLinearConvAttrs& attrs, KernelContext& ctx) {
  ConvInputs in{&ctx.input(0), &ctx.input(1)};
  in.x_zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  in.w_zp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  check_same_qtype(ctx, 0, 2, "x", "x_zero_point");
  check_same_qtype(ctx, 1, 3, "w", "w_zero_point");
  ConvResult r = conv_integer(attrs, in);
  Tensor& y = ctx.allocate_output(0, D::Int32, r.ydims);
  std::copy(r.acc.begin(), r.acc.end(), y.mutable_data<int32_t>());
}

void run_qlinear_conv(const QLinearConvAttrs& attrs, KernelContext& ctx) {
  ConvInputs in{&ctx.input(0), &ctx.input(3)};
  in.x_zp = &ctx.input(2);
  in.w_zp = &ctx.input(5);
  in.bias = ctx.has_input(8) ? &ctx.input(8) : nullptr;
  check_same_qtype(ctx, 0, 2, "x", "x_zero_point");
  check_same_qtype(ctx, 3, 5, "w", "w_zero_point");
  const Tensor& xs = ctx.input(1);
  const Tensor& wsc = ctx.input(4);
  const Tensor& ys = ctx.input(6);
  const Tensor& yz = ctx.input(7);
  if (xs.element_count() != 1) ctx.error(cat("x_scale must be a scalar, got shape ", shape_of(xs.dims()).to_string()));
  if (ys.element_count() != 1) ctx.error(cat("y_scale must be a scalar, got shape ", shape_of(ys.dims()).to_string()));
  if (yz.element_count() != 1) ctx.error(cat("y_zero_point must be a scalar, got shape ", shape_of(yz.dims()).to_string()));
  ConvResult r = conv_integer(attrs, in);
  const int64_t OC = r.ydims[1];
  const std::vector<double> wv = read_doubles(wsc);
  if (wv.size() != 1 && wsc.dims() != Dims{OC})
    ctx.error(cat("w_scale must be a scalar or have shape [", OC, "], got ", shape_of(wsc.dims()).to_string()));
  const double x_scale = read_doubles(xs)[0], y_scale = read_doubles(ys)[0], y_zp = read_doubles(yz)[0];
  std::vector<double> mult(static_cast<size_t>(OC));
  for (int64_t oc = 0; oc < OC; ++oc) mult[static_cast<size_t>(oc)] = multiplier(D::Float, x_scale, wv[wv.size() == 1 ? 0 : static_cast<size_t>(oc)], y_scale);
  const int64_t O = product(r.ydims, 2);  // output positions per channel
  std::vector<double> out(r.acc.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t oc = (static_cast<int64_t>(i) / O) % OC;  // out is non-empty only when O and OC are positive
    out[i] = r.acc[i] * mult[static_cast<size_t>(oc)] + y_zp;
  }
  Tensor& y = ctx.allocate_output(0, yz.dtype(), r.ydims);
  store_quantized(y, out);
}

// QLinearConv on oneDNN's int8 convolution where QLinearConvPack applies; anything else takes the ConvInteger path
// above, then the reference.
class FastQLinearConv : public Kernel {
 public:
  FastQLinearConv(const KernelInit& init, QLinearConvAttrs attrs) : attrs_(std::move(attrs)), pack_(init) {}

  void run(KernelContext& ctx) override {
    if (!pack_.run(ctx, false) && !run_qlinear_conv_fast(attrs_, ctx)) run_qlinear_conv(attrs_, ctx);
  }

 private:
  QLinearConvAttrs attrs_;
  QLinearConvPack pack_;
};

}  // namespace

QLinearConvPack::QLinearConvPack(const KernelInit& init) {
  for (size_t i = 1; i < 9; ++i) sources_[i] = init.input_value(i) ? init.input_value(i)->bytes().data() : nullptr;
  const std::optional<kernels::Int8ConvParams> p = params(init);
  if (p) conv_ = std::make_unique<kernels::PackedInt8Conv>(init.input_value(3)->data<int8_t>(), std::move(*p));
}

std::optional<kernels::Int8ConvParams> QLinearConvPack::params(const KernelInit& init) {
  const Tensor* xs = init.input_value(1);
  const Tensor* xz = init.input_value(2);
  const Tensor* w = init.input_value(3);
  const Tensor* ws = init.input_value(4);
  const Tensor* wz = init.input_value(5);
  const Tensor* ys = init.input_value(6);
  const Tensor* yz = init.input_value(7);
  const bool has_bias = init.node.inputs.size() > 8 && init.node.inputs[8];
  const Tensor* bias = has_bias ? init.input_value(8) : nullptr;
  const std::string auto_pad = init.attrs.get_string("auto_pad", "NOTSET");
  if (!xs || !xz || !w || !ws || !wz || !ys || !yz || (has_bias && !bias) || w->dtype() != D::Int8 ||
      w->dims().size() != 4 || xs->dtype() != D::Float || ws->dtype() != D::Float || ys->dtype() != D::Float ||
      xs->element_count() != 1 || xz->element_count() != 1 || ys->element_count() != 1 || yz->element_count() != 1 ||
      !(auto_pad == "NOTSET" || auto_pad == "VALID"))
    return std::nullopt;
  const int64_t M = w->dims()[0];
  if ((ws->element_count() != 1 && ws->dims() != Dims{M}) || (wz->element_count() != 1 && wz->dims() != Dims{M}) ||
      (bias && (bias->dtype() != D::Int32 || bias->dims() != Dims{M})))
    return std::nullopt;
  for (int64_t z : read_ints(*wz))
    if (z != 0) return std::nullopt;
  QLinearConvAttrs p;
  try {
    p = resolve_conv(parse_conv(init.attrs), Dims{-1, -1}, &w->dims());
  } catch (const Error&) {
    return std::nullopt;  // the reference names the problem at run time
  }
  if (M % p.group != 0) return std::nullopt;
  kernels::Int8ConvParams k;
  k.shape.M = M;
  k.shape.group = p.group;
  k.shape.C = w->dims()[1] * p.group;
  for (size_t i = 0; i < 2; ++i) {
    k.shape.kernel[i] = p.kernel[i];
    k.shape.strides[i] = p.strides[i];
    k.shape.dilations[i] = p.dilations[i];
    k.shape.pads[i] = p.pads[i];
    k.shape.pads[i + 2] = p.pads[i + 2];
  }
  k.x_signed = xz->dtype() == D::Int8;
  k.y_signed = yz->dtype() == D::Int8;
  k.x_zero = static_cast<int32_t>(read_ints(*xz)[0]);
  k.y_zero = static_cast<int32_t>(read_ints(*yz)[0]);
  const double x_scale = xs->data<float>()[0], y_scale = ys->data<float>()[0];
  for (size_t i = 0; i < ws->element_count(); ++i)
    k.scales.push_back(static_cast<float>(multiplier(D::Float, x_scale, ws->data<float>()[i], y_scale)));
  if (bias) k.bias.assign(bias->data<int32_t>(), bias->data<int32_t>() + M);
  return k;
}

bool QLinearConvPack::run(KernelContext& ctx, bool nhwc) const {
  if (!conv_) return false;
  for (size_t i = 1; i < 9; ++i)
    if (sources_[i] && (!ctx.has_input(i) || ctx.input(i).bytes().data() != sources_[i])) return false;
  const Tensor& x = ctx.input(0);
  const kernels::Int8ConvParams& k = conv_->params();
  if (x.dims().size() != 4 || x.dtype() != (k.x_signed ? D::Int8 : D::UInt8)) return false;
  const Dims& xd = x.dims();
  const int64_t N = xd[0], C = nhwc ? xd[3] : xd[1], H = nhwc ? xd[1] : xd[2], W = nhwc ? xd[2] : xd[3];
  if (C != k.shape.C) return false;
  const int64_t hw[2] = {H, W};
  for (int i = 0; i < 2; ++i)
    if (hw[i] + k.shape.pads[i] + k.shape.pads[i + 2] < (k.shape.kernel[i] - 1) * k.shape.dilations[i] + 1)
      return false;
  const auto o = kernels::conv_out_hw(k.shape, H, W);
  const Dims yd = nhwc ? Dims{N, o[0], o[1], k.shape.M} : Dims{N, k.shape.M, o[0], o[1]};
  Tensor y = allocate_for_overwrite(k.y_signed ? D::Int8 : D::UInt8, yd);
  if (y.element_count() > 0 && !conv_->run(x.bytes().data(), N, H, W, y.mutable_data<uint8_t>(), nhwc)) return false;
  ctx.set_output(0, std::move(y));
  return true;
}

void register_qlinear(Registry& r) {
  using TC = std::vector<TypeConstraint>;
  // MatMulInteger-10: A, B, a_zero_point, b_zero_point.
  r.add(OpDef{"", "MatMulInteger", 10, TC{{{0, 2}, kEightBit}, {{1, 3}, kEightBit}},
              [](InferContext& ctx) {
                Shape s = ctx.has_input(0) && ctx.has_input(1) ? infer_qlinear_matmul(ctx.input_type(0).shape, ctx.input_type(1).shape, ctx) : Shape{};
                ctx.set_output(0, Type::tensor(D::Int32, s));
              },
              [](const KernelInit& init) -> std::unique_ptr<Kernel> {
                if (init.reference_only) return make_kernel([](KernelContext& ctx) { run_matmul_integer(ctx); });
                return std::make_unique<FastIntegerMatMul>(init, nullptr);
              }});
  // QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
  for (int v : {10, 21}) {
    const std::vector<D>& q = v >= 21 ? k8f : kEightBit;
    const std::vector<D> scales = v >= 21 ? std::vector<D>{D::Float, D::Float16, D::BFloat16} : std::vector<D>{D::Float};
    r.add(OpDef{"", "QLinearMatMul", v, TC{{{0, 2}, q}, {{3, 5}, q}, {{7}, q}, {{1, 4, 6}, scales}},
                [](InferContext& ctx) {
                  Shape s = ctx.has_input(0) && ctx.has_input(3) ? infer_qlinear_matmul(ctx.input_type(0).shape, ctx.input_type(3).shape, ctx) : Shape{};
                  ctx.set_output(0, Type::tensor(ctx.has_input(7) ? ctx.input_dtype(7) : D::Undefined, s));
                },
                [v](const KernelInit& init) -> std::unique_ptr<Kernel> {
                  if (init.reference_only) return make_kernel([v](KernelContext& ctx) { run_qlinear_matmul(v, ctx); });
                  return std::make_unique<FastQLinearMatMul>(init, v);
                }});
  }
  // ConvInteger-10: x, w, x_zero_point, w_zero_point.
  r.add(OpDef{"", "ConvInteger", 10, TC{{{0, 2}, kEightBit}, {{1, 3}, kEightBit}},
              [](InferContext& ctx) { infer_qlinear_conv(parse_conv(ctx.attrs), ctx, 0, 1, D::Int32); },
              [](const KernelInit& init) {
                QLinearConvAttrs p = parse_conv(init.attrs);
                if (init.reference_only) return make_kernel([p](KernelContext& ctx) { run_conv_integer(p, ctx); });
                return make_kernel([p](KernelContext& ctx) {
                  if (!run_conv_integer_fast(p, ctx)) run_conv_integer(p, ctx);
                });
              }});
  // QLinearConv-10: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
  r.add(OpDef{"", "QLinearConv", 10, TC{{{0, 2}, kEightBit}, {{3, 5}, kEightBit}, {{7}, kEightBit}, {{1, 4, 6}, {D::Float}}, {{8}, {D::Int32}}},
              [](InferContext& ctx) {
                infer_qlinear_conv(parse_conv(ctx.attrs), ctx, 0, 3, ctx.has_input(7) ? ctx.input_dtype(7) : D::Undefined);
              },
              [](const KernelInit& init) {
                QLinearConvAttrs p = parse_conv(init.attrs);
                if (init.reference_only) return make_kernel([p](KernelContext& ctx) { run_qlinear_conv(p, ctx); });
                return std::unique_ptr<Kernel>(std::make_unique<FastQLinearConv>(init, p));
              }});
  r.set_fast_kernels("", "MatMulInteger", {"onyx's AVX512-VNNI integer GEMM, constant B packed once (int32 loops elsewhere)"});
  r.set_fast_kernels("", "QLinearMatMul", {"onyx's AVX512-VNNI integer GEMM, constant B packed once"});
  r.set_fast_kernels("", "ConvInteger", {"integer GEMM over blocked im2col"});
  r.set_fast_kernels("", "QLinearConv", {"oneDNN int8 convolution for constant int8 weights of zero point 0 and constant scales", "integer GEMM over blocked im2col with one requantizing pass otherwise"});
}

}  // namespace onyx::ops
