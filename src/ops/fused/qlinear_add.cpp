// ai.onyx QLinearAdd-1 (made by the optimizer's qdq-fusion from what static quantization writes for a residual sum:
// DequantizeLinear(a), DequantizeLinear(b) -> Add -> [Relu] -> QuantizeLinear):
//   QLinearAdd(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point) -> C
//   C = QuantizeLinear(Relu?(DequantizeLinear(A) + DequantizeLinear(B)), C_scale, C_zero_point)
// with per-tensor float32 scales, 8-bit A, B, C (each uint8 or int8: its zero point's type), A and B of the same
// shape (no broadcasting; the fusion takes only those), attribute `relu` (0 or 1). Each step rounds in float32 as
// the nodes it replaces do, so results are theirs bit for bit: the fast kernel is one pass over the bytes instead
// of four passes with float tensors between them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/tensor_alloc.hpp"
#include "kernels/quantize.hpp"
#include "ops/fused/fused.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

struct QParams {
  float a_scale, b_scale, c_scale;
  int32_t a_zero, b_zero, c_zero;
  bool a_signed, b_signed, c_signed;
};

float scalar_scale(KernelContext& ctx, size_t i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != D::Float || t.element_count() != 1)
    ctx.error(cat(name, " must be one float32 value, got ", t.dtype(), " of shape ", shape_of(t.dims()).to_string()));
  const float s = t.data<float>()[0];
  if (!(s > 0) || !std::isfinite(s)) ctx.error(cat(name, " must be positive and finite, got ", s));
  return s;
}

int32_t scalar_zero(KernelContext& ctx, size_t i, size_t of, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.element_count() != 1 || t.dtype() != ctx.input(of).dtype())
    ctx.error(cat(name, " must be one value of its tensor's type (", ctx.input(of).dtype(), "), got ", t.dtype(),
                  " of shape ", shape_of(t.dims()).to_string()));
  return t.dtype() == D::Int8 ? t.data<int8_t>()[0] : t.data<uint8_t>()[0];
}

QParams read_params(KernelContext& ctx) {
  QParams p{};
  p.a_scale = scalar_scale(ctx, 1, "A_scale");
  p.b_scale = scalar_scale(ctx, 4, "B_scale");
  p.c_scale = scalar_scale(ctx, 6, "C_scale");
  p.a_zero = scalar_zero(ctx, 2, 0, "A_zero_point");
  p.b_zero = scalar_zero(ctx, 5, 3, "B_zero_point");
  const Tensor& cz = ctx.input(7);
  if (cz.element_count() != 1) ctx.error("C_zero_point must be one value");
  p.c_zero = cz.dtype() == D::Int8 ? cz.data<int8_t>()[0] : cz.data<uint8_t>()[0];
  p.a_signed = ctx.input(0).dtype() == D::Int8;
  p.b_signed = ctx.input(3).dtype() == D::Int8;
  p.c_signed = cz.dtype() == D::Int8;
  if (ctx.input(0).dims() != ctx.input(3).dims())
    ctx.error(cat("A ", shape_of(ctx.input(0).dims()).to_string(), " and B ", shape_of(ctx.input(3).dims()).to_string(),
                  " must have the same shape"));
  return p;
}

// The reference: element by element, each step as the standard ops' reference kernels round it.
void run_reference(KernelContext& ctx, bool relu) {
  const QParams p = read_params(ctx);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  Tensor& c = ctx.allocate_output(0, p.c_signed ? D::Int8 : D::UInt8, a.dims());
  const float lo = p.c_signed ? -128.f : 0.f, hi = p.c_signed ? 127.f : 255.f;
  for (uint64_t i = 0; i < a.element_count(); ++i) {
    const int32_t av = p.a_signed ? a.data<int8_t>()[i] : a.data<uint8_t>()[i];
    const int32_t bv = p.b_signed ? b.data<int8_t>()[i] : b.data<uint8_t>()[i];
    float s = static_cast<float>(av - p.a_zero) * p.a_scale + static_cast<float>(bv - p.b_zero) * p.b_scale;
    if (relu) s = std::max(s, 0.f);
    const float q = std::nearbyint(std::clamp(s / p.c_scale, -1024.f, 1024.f)) + static_cast<float>(p.c_zero);
    const float v = std::clamp(q, lo, hi);
    if (p.c_signed) c.mutable_data<int8_t>()[i] = static_cast<int8_t>(v);
    else c.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
}

// The fast kernel: one pass (kernels::qlinear_add), split over the threads in chunks of 64 KiB.
void run_fast(KernelContext& ctx, bool relu) {
  const QParams p = read_params(ctx);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  Tensor c = allocate_for_overwrite(p.c_signed ? D::Int8 : D::UInt8, a.dims());
  const int64_t n = static_cast<int64_t>(a.element_count());
  kernels::QLinearAddParams k;
  k.a_signed = p.a_signed;
  k.b_signed = p.b_signed;
  k.relu = relu;
  k.a_scale = p.a_scale;
  k.b_scale = p.b_scale;
  k.c_scale = p.c_scale;
  k.a_zero = p.a_zero;
  k.b_zero = p.b_zero;
  k.c_zero = static_cast<float>(p.c_zero);
  k.lo = p.c_signed ? -128.f : 0.f;
  k.hi = p.c_signed ? 127.f : 255.f;
  constexpr int64_t kChunk = int64_t{1} << 16;
  const uint8_t* pa = a.data<uint8_t>();
  const uint8_t* pb = b.data<uint8_t>();
  uint8_t* pc = c.mutable_data<uint8_t>();
#pragma omp parallel for schedule(static) if (n > 2 * kChunk)
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) kernels::qlinear_add(pa + i0, pb + i0, std::min(kChunk, n - i0), k, pc + i0);
  ctx.set_output(0, std::move(c));
}

}  // namespace

void register_qlinear_add(Registry& r) {
  const std::vector<D> k8 = {D::Int8, D::UInt8};
  r.add(OpDef{kFusedDomain, "QLinearAdd", 1, {{{0, 2}, k8}, {{3, 5}, k8}, {{7}, k8}, {{1, 4, 6}, {D::Float}}},
              [](InferContext& ctx) {
                Shape s = ctx.has_input(0) ? ctx.input_type(0).shape : Shape{};
                ctx.set_output(0, Type::tensor(ctx.has_input(7) ? ctx.input_dtype(7) : D::Undefined, s));
              },
              [](const KernelInit& init) {
                const int64_t relu = init.attrs.get_int("relu", 0);
                if (relu != 0 && relu != 1) fail("relu must be 0 or 1, got ", relu);
                if (init.reference_only) return make_kernel([relu](KernelContext& ctx) { run_reference(ctx, relu); });
                return make_kernel([relu](KernelContext& ctx) { run_fast(ctx, relu); });
              }});
  r.set_fast_kernels("ai.onyx", "QLinearAdd", {"one vectorized pass"});
}

}  // namespace onyx::ops
