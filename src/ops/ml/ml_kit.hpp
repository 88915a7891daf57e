// Helpers shared by the ai.onnx.ml families (ml_linear, ml_svm, ml_tree_ensemble, ml_preprocess, ml_maps): the
// score post-transforms (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT), reading a [N,C] / [C] numeric input as
// rows of doubles, attribute helpers and the usual output types. Not core: used by these families only.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/op_kit.hpp"

namespace onyx::ops::ml {

enum class PostTransform { None = 0, Softmax = 1, Logistic = 2, SoftmaxZero = 3, Probit = 4 };

inline PostTransform parse_post_transform(const std::string& s) {
  if (s == "NONE") return PostTransform::None;
  if (s == "SOFTMAX") return PostTransform::Softmax;
  if (s == "LOGISTIC") return PostTransform::Logistic;
  if (s == "SOFTMAX_ZERO") return PostTransform::SoftmaxZero;
  if (s == "PROBIT") return PostTransform::Probit;
  fail("post_transform '", s, "' is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT");
}

// The integer encoding of TreeEnsemble-5.
inline PostTransform post_transform_from_int(int64_t v) {
  if (v < 0 || v > 4) fail("post_transform ", v, " is not one of 0 (NONE) .. 4 (PROBIT)");
  return static_cast<PostTransform>(v);
}

inline double logistic(double x) {
  // Evaluated on -|x| so that exp never overflows.
  double e = std::exp(-std::abs(x));
  double v = 1.0 / (1.0 + e);
  return x < 0 ? 1.0 - v : v;
}

// Inverse error function by Winitzki's closed-form approximation (a = 0.147), the one ML runtimes use for PROBIT so
// that scores agree with theirs.
inline double erf_inv_approx(double x) {
  double sgn = x < 0 ? -1.0 : 1.0;
  double w = (1.0 - x) * (1.0 + x);
  if (w <= 0) return sgn * INFINITY;
  double ln = std::log(w);
  constexpr double a = 0.147;
  constexpr double pi = 3.14159265358979323846;
  double t = 2.0 / (pi * a) + 0.5 * ln;
  double inner = t * t - ln / a;
  return sgn * std::sqrt(std::sqrt(inner) - t);
}

inline double probit(double p) { return 1.41421356 * erf_inv_approx(2.0 * p - 1.0); }

inline void softmax(double* v, size_t n) {
  if (n == 0) return;
  double mx = *std::max_element(v, v + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += (v[i] = std::exp(v[i] - mx));
  for (size_t i = 0; i < n; ++i) v[i] /= sum;
}

// Softmax where exact zeros stay (near) zero: values within 1e-7 of 0 are scaled by exp(-max) instead of being
// exponentiated; all zeros give 0.5 each.
inline void softmax_zero(double* v, size_t n) {
  if (n == 0) return;
  double mx = *std::max_element(v, v + n);
  double exp_neg_max = std::exp(-mx);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if (v[i] > 1e-7 || v[i] < -1e-7)
      v[i] = std::exp(v[i] - mx);
    else
      v[i] *= exp_neg_max;
    sum += v[i];
  }
  for (size_t i = 0; i < n; ++i) v[i] = sum == 0 ? 0.5 : v[i] / sum;
}

inline void apply_post_transform(PostTransform pt, double* v, size_t n) {
  switch (pt) {
    case PostTransform::None: return;
    case PostTransform::Softmax: softmax(v, n); return;
    case PostTransform::SoftmaxZero: softmax_zero(v, n); return;
    case PostTransform::Logistic:
      for (size_t i = 0; i < n; ++i) v[i] = logistic(v[i]);
      return;
    case PostTransform::Probit:
      for (size_t i = 0; i < n; ++i) v[i] = probit(v[i]);
      return;
  }
}

// A [N,C] input (a [C] input is one row) as doubles.
struct Rows {
  int64_t n = 0, c = 0;
  std::vector<double> v;
  const double* row(int64_t i) const { return v.data() + i * c; }
};

inline Rows read_rows(const Tensor& x, const char* what = "X") {
  Rows r;
  const auto& d = x.dims();
  if (d.size() == 1) {
    r.n = 1;
    r.c = d[0];
  } else if (d.size() == 2) {
    r.n = d[0];
    r.c = d[1];
  } else {
    fail("input ", what, " must be [N,C] or [C], got rank ", d.size(), " ", shape_of(d).to_string());
  }
  r.v = read_doubles(x);
  return r;
}

// Batch dim of a [N,C] / [C] input type for inference: N, 1, or unknown.
inline Dim batch_dim(const InferContext& ctx, size_t i = 0) {
  if (!ctx.has_input(i)) return Dim{};
  const Type& t = ctx.input_type(i);
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) return Dim{};
  if (t.shape.dims.size() == 1) return Dim{1, {}, {}};
  if (t.shape.dims.size() == 2) return t.shape.dims[0];
  ctx.error(cat("input ", i, " must be [N,C] or [C], got ", t.shape.to_string()));
}

// Width C of a [N,C] / [C] input type, if static.
inline std::optional<int64_t> feature_dim(const InferContext& ctx, size_t i = 0) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Type& t = ctx.input_type(i);
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known || t.shape.dims.empty()) return std::nullopt;
  return t.shape.dims.back().value;
}

inline Shape shape2(Dim a, Dim b) {
  Shape s;
  s.rank_known = true;
  s.dims = {std::move(a), std::move(b)};
  return s;
}
inline Shape shape1(Dim a) {
  Shape s;
  s.rank_known = true;
  s.dims = {std::move(a)};
  return s;
}
inline Dim known(int64_t v) { return Dim{v, {}, {}}; }

// A float attribute list, or the `_as_tensor` variant holding doubles (TreeEnsemble*-3); empty when neither is set.
inline std::vector<double> floats_or_tensor(const AttributeView& a, const std::string& name, bool allow_tensor) {
  const bool has_list = a.has(name);
  const bool has_tensor = allow_tensor && a.has(name + "_as_tensor");
  if (has_list && has_tensor) fail("only one of the attributes '", name, "' and '", name, "_as_tensor' may be set");
  if (has_tensor) return read_doubles(*a.get_tensor(name + "_as_tensor"));
  std::vector<double> out;
  if (has_list)
    for (float f : a.get_floats(name)) out.push_back(f);
  return out;
}

// Writes `v` (doubles) into a new output tensor of `dt` (float, double or float16).
inline void write_floats(Tensor& t, const std::vector<double>& v) {
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      T* p = t.mutable_data<T>();
      for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
    } else if constexpr (is_small_float_v<T>) {
      T* p = t.mutable_data<T>();
      for (size_t i = 0; i < v.size(); ++i) p[i] = from_double<T>(v[i]);
    } else {
      fail("cannot write scores as ", t.dtype());
    }
  });
}

// Class labels of a classifier: strings or int64s (one and only one of the two attributes).
struct ClassLabels {
  bool strings = false;
  std::vector<std::string> s;
  std::vector<int64_t> i;
  size_t size() const { return strings ? s.size() : i.size(); }
};

inline ClassLabels read_class_labels(const AttributeView& a, const char* ints_name) {
  ClassLabels l;
  std::vector<std::string> s = a.get_strings("classlabels_strings", std::vector<std::string>{});
  std::vector<int64_t> i = a.get_ints(ints_name, std::vector<int64_t>{});
  if (!s.empty() && !i.empty()) fail("only one of 'classlabels_strings' and '", ints_name, "' may be set");
  l.strings = !s.empty();
  l.s = std::move(s);
  l.i = std::move(i);
  return l;
}

inline bool labels_are_strings(const AttributeView& a) {
  return !a.get_strings("classlabels_strings", std::vector<std::string>{}).empty();
}

// Writes the labels output ([N] strings or int64) from class indices; without int labels the index is the label.
inline void write_labels(KernelContext& ctx, const ClassLabels& l, const std::vector<int64_t>& idx) {
  const int64_t n = static_cast<int64_t>(idx.size());
  for (int64_t k : idx)
    if (k < 0 || (l.size() > 0 && static_cast<size_t>(k) >= l.size()))
      fail("class index ", k, " has no label (", l.size(), " labels)");
  if (l.strings) {
    Tensor& y = ctx.allocate_output(0, DataType::String, {n});
    for (int64_t k = 0; k < n; ++k) y.mutable_strings()[k] = l.s[idx[k]];
  } else {
    Tensor& y = ctx.allocate_output(0, DataType::Int64, {n});
    int64_t* p = y.mutable_data<int64_t>();
    for (int64_t k = 0; k < n; ++k) p[k] = l.i.empty() ? idx[k] : l.i[idx[k]];
  }
}

}  // namespace onyx::ops::ml
