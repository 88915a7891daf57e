// ai.onnx Det — versions 11, 22.
// Determinant of each square matrix in the trailing two dims: input [*, M, M] -> output [*]. Computed in double by
// LU decomposition with partial pivoting (an empty 0x0 matrix has determinant 1). Det-11: float16, float, double;
// Det-22 adds bfloat16.
#include <cmath>
#include <utility>

#include "base/run_limits.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

double determinant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t c = 0; c < m; ++c) {
    if (m >= 256) check_run_limits("in Det");  // a column's elimination is (m - c)^2 steps
    int64_t piv = c;
    for (int64_t r = c + 1; r < m; ++r)
      if (std::abs(a[r * m + c]) > std::abs(a[piv * m + c])) piv = r;
    if (a[piv * m + c] == 0) return 0;
    if (piv != c) {
      for (int64_t k = 0; k < m; ++k) std::swap(a[c * m + k], a[piv * m + k]);
      det = -det;
    }
    const double p = a[c * m + c];
    det *= p;
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = a[r * m + c] / p;
      if (f == 0) continue;
      for (int64_t k = c + 1; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
    }
  }
  return det;
}

void run_det(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Dims& d = x.dims();
  if (d.size() < 2 || d[d.size() - 1] != d[d.size() - 2])
    ctx.error(cat("input must have shape [*, M, M], got ", shape_of(d).to_string()));
  const int64_t m = d.back();
  Dims out(d.begin(), d.end() - 2);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  const int64_t batch = product(out);
  if (batch == 0) return;
  std::vector<double> v = read_doubles(x);
  std::vector<double> a(static_cast<size_t>(m * m));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      T* py = y.mutable_data<T>();
      for (int64_t b = 0; b < batch; ++b) {
        std::copy(v.begin() + b * m * m, v.begin() + (b + 1) * m * m, a.begin());
        double det = determinant(a, m);
        if constexpr (std::is_floating_point_v<T>) py[b] = static_cast<T>(det);
        else py[b] = from_double<T>(det);
      }
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

void infer_det(InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  const Type& t = ctx.input_type(0);
  Type out = Type::tensor(t.elem);
  if (t.shape.rank_known) {
    const auto& d = t.shape.dims;
    if (d.size() < 2) ctx.error(cat("input must have rank >= 2, got ", t.shape.to_string()));
    const Dim& a = d[d.size() - 1];
    const Dim& b = d[d.size() - 2];
    if (a.value && b.value && *a.value != *b.value) ctx.error(cat("input matrices must be square, got ", t.shape.to_string()));
    out.shape.rank_known = true;
    out.shape.dims.assign(d.begin(), d.end() - 2);
  }
  ctx.set_output(0, out);
}

}  // namespace

void register_det(Registry& r) {
  auto kernel = [](const KernelInit&) { return make_kernel(run_det); };
  r.add(OpDef{"", "Det", 11, {{{0}, {D::Float16, D::Float, D::Double}}}, infer_det, kernel});
  r.add(OpDef{"", "Det", 22, {{{0}, kFloatTypes}}, infer_det, kernel});
}

}  // namespace onyx::ops
