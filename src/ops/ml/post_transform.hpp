// The score post-transforms of the ai.onnx.ml classifiers and regressors (ml_linear, ml_svm, ml_tree_ensemble):
// NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "base/error.hpp"

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

}  // namespace onyx::ops::ml
