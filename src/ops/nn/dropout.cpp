// ai.onnx Dropout — versions 1, 6, 7, 10, 12, 13, 22.
// v1 (is_test, ratio, consumed_inputs), v6 (is_test, ratio), v7 (ratio): onyx runs these as inference — output is
//   the input and the optional mask is all ones, in the input's type. v10: the mask is bool.
// v12: ratio (T1, default 0.5) and training_mode (bool, default false) are inputs, attribute seed. With
//   training_mode true and ratio > 0, each element is kept with probability 1 - ratio and scaled by 1/(1 - ratio);
//   the mask says which were kept (random; seeded by `seed` when given). ratio must lie in [0, 1).
// v13 adds bfloat16 data; v22 adds the float8 types (data and ratio).
#include <random>

#include "ops/nn/compute_type.hpp"

namespace onyx::ops {
namespace {

// Sets every element of a new bool or float tensor to true / 1.
void fill_ones(Tensor& m) {
  visit_dtype(m.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || std::is_floating_point_v<T> || is_small_float_v<T>) {
      T* p = m.mutable_data<T>();
      for (uint64_t i = 0; i < m.element_count(); ++i) p[i] = nn::from_acc<T>(1.0f);
    }
  });
}

void run_dropout(KernelContext& ctx, int opset, std::optional<int64_t> seed) {
  const Tensor& x = ctx.input(0);
  const bool want_mask = ctx.num_outputs() > 1 && ctx.output_wanted(1);
  const DataType mask_dt = opset >= 10 ? DataType::Bool : x.dtype();
  bool training = false;
  double ratio = 0.5;
  if (opset >= 12) {
    if (ctx.has_input(1)) {
      const Tensor& r = ctx.input(1);
      if (r.element_count() != 1) ctx.error(cat("ratio must be a scalar, got shape ", shape_of(r.dims()).to_string()));
      ratio = read_doubles(r)[0];
    }
    if (ctx.has_input(2)) {
      const Tensor& t = ctx.input(2);
      if (t.dtype() != DataType::Bool || t.element_count() != 1) ctx.error("training_mode must be a bool scalar");
      training = t.data<bool>()[0];
    }
    if (training && !(ratio >= 0 && ratio < 1)) ctx.error(cat("ratio ", ratio, " is outside [0, 1)"));
  }
  if (!training || ratio == 0) {
    ctx.set_output(0, x);
    if (want_mask) {
      Tensor& m = ctx.allocate_output(1, mask_dt, x.dims());
      fill_ones(m);
    }
    return;
  }
  std::mt19937_64 gen(seed ? static_cast<uint64_t>(*seed) : std::random_device{}());
  std::bernoulli_distribution keep(1.0 - ratio);
  const int64_t n = static_cast<int64_t>(x.element_count());
  std::vector<bool> mask(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) mask[i] = keep(gen);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.dims());
  const double scale = 1.0 / (1.0 - ratio);
  nn::visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) py[i] = nn::from_acc<T>(mask[i] ? nn::to_acc<double>(px[i]) * scale : 0.0);
  });
  if (want_mask) {
    bool* pm = ctx.allocate_output(1, DataType::Bool, x.dims()).mutable_data<bool>();
    for (int64_t i = 0; i < n; ++i) pm[i] = mask[i];
  }
}

}  // namespace

void register_dropout(Registry& r) {
  using D = DataType;
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> fb = {D::Float16, D::Float, D::Double, D::BFloat16};
  const std::vector<DataType> f8 = {D::Float16,        D::Float,          D::Double,     D::BFloat16,
                                    D::Float8E4M3FN,   D::Float8E4M3FNUZ, D::Float8E5M2, D::Float8E5M2FNUZ};
  const std::vector<DataType> b = {D::Bool};
  auto infer = [](InferContext& ctx) {
    const Type& t = ctx.input_type(0);
    ctx.set_output(0, t);
    ctx.set_output(1, Type::tensor(ctx.opset >= 10 ? DataType::Bool : t.elem, t.shape));
  };
  auto kernel = [](const KernelInit& init) {
    const int opset = static_cast<int>(init.opset);
    std::optional<int64_t> seed;
    if (opset >= 12 && init.attrs.has("seed")) seed = init.attrs.get_int("seed");
    return make_kernel([opset, seed](KernelContext& ctx) { run_dropout(ctx, opset, seed); });
  };
  add_versions(r, "", "Dropout", {1, 6, 7, 10}, {{{0}, f}}, infer, kernel);
  add_versions(r, "", "Dropout", {12}, {{{0}, f}, {{1}, f}, {{2}, b}}, infer, kernel);
  add_versions(r, "", "Dropout", {13}, {{{0}, fb}, {{1}, f}, {{2}, b}}, infer, kernel);
  add_versions(r, "", "Dropout", {22}, {{{0}, f8}, {{1}, f8}, {{2}, b}}, infer, kernel);
  r.set_nondeterministic("", "Dropout");  // a mask drawn in training mode
}

}  // namespace onyx::ops
