// ai.onnx Softmax, LogSoftmax, Hardmax — versions 1, 11, 13.
// v1/v11: the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] (axis default 1; v11 allows negative
//   axes) and the op runs over each row. v13: the op runs along the single dimension `axis` (default -1) and
//   bfloat16 is added. Hardmax gives 1 at the first maximum of each slice and 0 elsewhere.
// Softmax/LogSoftmax subtract the slice maximum and sum in double; float32 rows (v13 over the last axis, v1/v11 in
// their coerced 2-D form) run through the vectorized kernel (kernels/elementwise.hpp), which sums in float.
#include <cmath>

#include "kernels/elementwise.hpp"
#include "ops/nn/compute_type.hpp"
#include "ops/gradient_rule.hpp"
#include "ir/tensor_alloc.hpp"

namespace onyx::ops {
namespace {

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

template <class T>
void softmax_typed(KernelContext& ctx, SoftKind kind, int64_t axis_attr, bool coerce_2d) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  if (rank == 0) ctx.error("input must have rank at least 1");
  const int64_t axis = normalize_axis(axis_attr, rank);
  const int64_t outer = product(x.dims(), 0, axis);
  const int64_t len = coerce_2d ? product(x.dims(), axis) : x.dims()[axis];
  const int64_t inner = coerce_2d ? 1 : product(x.dims(), axis + 1);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
  if (len == 0) return;
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  std::vector<double> buf(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      double mx = -INFINITY;
      int64_t arg = 0;
      for (int64_t k = 0; k < len; ++k) {
        buf[k] = nn::to_acc<double>(px[base + k * inner]);
        if (k == 0 || buf[k] > mx) {
          mx = buf[k];
          arg = k;
        }
      }
      if (kind == SoftKind::Hardmax) {
        for (int64_t k = 0; k < len; ++k) py[base + k * inner] = nn::from_acc<T>(k == arg ? 1.0 : 0.0);
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(buf[k] - mx);
      const double lsum = std::log(sum);
      for (int64_t k = 0; k < len; ++k) {
        const double v = kind == SoftKind::Softmax ? std::exp(buf[k] - mx) / sum : buf[k] - mx - lsum;
        py[base + k * inner] = nn::from_acc<T>(v);
      }
    }
}

// float32 Softmax/LogSoftmax whose slices are contiguous rows; false (nothing done) otherwise.
bool softmax_fast(KernelContext& ctx, SoftKind kind, int64_t axis_attr, bool coerce_2d) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims().size());
  if (kind == SoftKind::Hardmax || x.dtype() != DataType::Float || rank == 0) return false;
  const int64_t axis = normalize_axis(axis_attr, rank);
  if (!coerce_2d && axis != rank - 1) return false;
  const int64_t rows = product(x.dims(), 0, axis), len = product(x.dims(), axis);
  ctx.set_output(0, allocate_for_overwrite(DataType::Float, x.dims()));
  Tensor& y = ctx.outputs()[0].tensor;
  if (rows * len == 0) return true;
  kernels::softmax(x.data<float>(), y.mutable_data<float>(), rows, len, kind == SoftKind::LogSoftmax);
  return true;
}

void add_softmax_op(Registry& r, const char* name, SoftKind kind) {
  using D = DataType;
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> fb = {D::Float16, D::Float, D::Double, D::BFloat16};
  auto infer = [](InferContext& ctx) {
    const Type& t = ctx.input_type(0);
    if (t.shape.rank_known) {
      const int64_t rank = static_cast<int64_t>(t.shape.dims.size());
      if (rank == 0) ctx.error("input must have rank at least 1");
      normalize_axis(ctx.attrs.get_int("axis", ctx.opset >= 13 ? -1 : 1), rank);
    }
    infer_same_as_input(ctx);
  };
  auto kernel = [kind](const KernelInit& init) {
    const bool coerce = init.opset < 13;
    const int64_t axis = init.attrs.get_int("axis", coerce ? 1 : -1);
    const bool fast = !init.reference_only;
    return make_kernel([=](KernelContext& ctx) {
      if (fast && softmax_fast(ctx, kind, axis, coerce)) return;
      nn::visit_float(ctx.input(0).dtype(), [&](auto tag) { softmax_typed<decltype(tag)>(ctx, kind, axis, coerce); });
    });
  };
  add_versions(r, "", name, {1, 11}, {{{0}, f}}, infer, kernel);
  add_versions(r, "", name, {13}, {{{0}, fb}}, infer, kernel);
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

// The groups softmax normalizes over: before opset 13 the input is seen as 2-D [prod(dims[:axis]),
// prod(dims[axis:])]; from 13 on, only `axis` is normalized.
struct Groups {
  int64_t outer, n, inner;
};

Groups softmax_groups(const grad::Args& a) {
  const Dims& d = a.in_dims(0);
  const int64_t rank = static_cast<int64_t>(d.size());
  const bool old = a.opset < 13;
  const int64_t axis = normalize_axis(a.attrs.get_int("axis", old ? 1 : -1), std::max<int64_t>(rank, 1));
  const size_t ax = static_cast<size_t>(axis);
  if (old) return {product(d, 0, ax), product(d, ax), 1};
  return {product(d, 0, ax), rank ? d[ax] : 1, product(d, ax + 1)};
}

template <class F>
void softmax_like(grad::Args& a, F f) {
  const Groups gr = softmax_groups(a);
  grad::Grad g = a.dy();
  const std::vector<double> y = a.y();
  for (int64_t o = 0; o < gr.outer; ++o)
    for (int64_t i = 0; i < gr.inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * gr.n + j) * gr.inner + i); };
      f(g.v, y, gr.n, at);
    }
  a.set(0, std::move(g));
}

void rule_softmax(grad::Args& a) {
  softmax_like(a, [](std::vector<double>& g, const std::vector<double>& y, int64_t n, auto at) {
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += g[at(j)] * y[at(j)];
    for (int64_t j = 0; j < n; ++j) g[at(j)] = y[at(j)] * (g[at(j)] - dot);
  });
}

void rule_log_softmax(grad::Args& a) {
  softmax_like(a, [](std::vector<double>& g, const std::vector<double>& y, int64_t n, auto at) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += g[at(j)];
    for (int64_t j = 0; j < n; ++j) g[at(j)] -= std::exp(y[at(j)]) * sum;
  });
}

}  // namespace

void register_softmax(Registry& r) {
  add_softmax_op(r, "Softmax", SoftKind::Softmax);
  add_softmax_op(r, "LogSoftmax", SoftKind::LogSoftmax);
  add_softmax_op(r, "Hardmax", SoftKind::Hardmax);
  r.set_gradient("", "Softmax", rule_softmax);
  r.set_gradient("", "LogSoftmax", rule_log_softmax);
  r.set_fast_kernels("", "Softmax", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
  r.set_fast_kernels("", "LogSoftmax", {"float32: vectorized float32 loop (AVX-512, AVX2 or scalar build, chosen at run time)"});
}

}  // namespace onyx::ops
