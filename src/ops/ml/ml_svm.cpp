// ai.onnx.ml SVMClassifier-1 and SVMRegressor-1 (the only versions).
// Kernels (kernel_params = [gamma, coef0, degree]): LINEAR <a,b>, POLY (gamma <a,b> + coef0)^degree,
// RBF exp(-gamma |a-b|^2), SIGMOID tanh(gamma <a,b> + coef0).
// SVMRegressor: with n_supports > 0, y = sum_j coefficients[j] K(x, sv_j) + rho[0]; otherwise (linear mode)
// y = <x, coefficients> + rho[0]. one_class=1 outputs +1 / -1 by the sign. post_transform applies to the score.
// SVMClassifier: with support vectors (vectors_per_class), one-vs-one: for each class pair (i<j) a decision value
// s = rho[k] + sum over class-i vectors of coef[j-1] K + sum over class-j vectors of coef[i] K, voting i when s > 0;
// with prob_a/prob_b, pairwise Platt probabilities are coupled into class probabilities (libsvm's method).
// Without support vectors (linear mode) each class scores rho[0] + <x, coefficients row>. The label is the class
// with most votes (or the top score); with a single decision value (one rho) and two labels, the scores are
// [-s, s] and, without probabilities and with non-negative coefficients, a vote weight >= 0.5 picks the second
// label; with one rho and not two labels the label is 1 when the top vote/score is positive, else 0 (the
// conventions of the ONNX reference implementation).
// X is [N,C] or [C] of float/double/int32/int64; scores are float.
#include "ops/ml/post_transform.hpp"
#include "ops/ml/rows_and_labels.hpp"

namespace onyx::ops {
namespace {

using ml::PostTransform;
const std::vector<DataType> kInputTypes = {DataType::Float, DataType::Double, DataType::Int64, DataType::Int32};

enum class KernelType { Linear, Poly, Rbf, Sigmoid };

struct SvmKernel {
  KernelType type = KernelType::Linear;
  double gamma = 0, coef0 = 0;
  int64_t degree = 0;

  double operator()(const double* a, const double* b, int64_t n) const {
    if (type == KernelType::Rbf) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
      return std::exp(-gamma * s);
    }
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) dot += a[i] * b[i];
    switch (type) {
      case KernelType::Linear: return dot;
      case KernelType::Poly: return std::pow(gamma * dot + coef0, static_cast<double>(degree));
      case KernelType::Sigmoid: return std::tanh(gamma * dot + coef0);
      case KernelType::Rbf: break;
    }
    return dot;
  }
};

SvmKernel parse_kernel(const AttributeView& a) {
  SvmKernel k;
  std::string t = a.get_string("kernel_type", "LINEAR");
  if (t == "LINEAR") k.type = KernelType::Linear;
  else if (t == "POLY") k.type = KernelType::Poly;
  else if (t == "RBF") k.type = KernelType::Rbf;
  else if (t == "SIGMOID") k.type = KernelType::Sigmoid;
  else fail("kernel_type '", t, "' is not one of LINEAR, POLY, RBF, SIGMOID");
  std::vector<float> p = a.get_floats("kernel_params", std::vector<float>{});
  if (!p.empty()) {
    if (p.size() != 3) fail("kernel_params must hold 3 values (gamma, coef0, degree), got ", p.size());
    k.gamma = p[0];
    k.coef0 = p[1];
    k.degree = static_cast<int64_t>(p[2]);
  }
  return k;
}

std::vector<double> svm_floats(const AttributeView& a, const char* name) { return ml::floats_or_tensor(a, name, false); }

// ---- SVMRegressor ----

void register_svm_regressor(Registry& r) {
  auto infer = [](InferContext& ctx) {
    ctx.set_output(0, Type::tensor(DataType::Float, shape_from({ml::batch_dim(ctx), known_dim(1)})));
  };
  auto kernel = [](const KernelInit& init) {
    SvmKernel k = parse_kernel(init.attrs);
    int64_t n_supports = init.attrs.get_int("n_supports", 0);
    bool one_class = init.attrs.get_int("one_class", 0) != 0;
    std::vector<double> coefs = svm_floats(init.attrs, "coefficients");
    std::vector<double> sv = svm_floats(init.attrs, "support_vectors");
    std::vector<double> rho = svm_floats(init.attrs, "rho");
    if (rho.empty()) fail("rho must hold one value");
    if (n_supports < 0) fail("n_supports must be >= 0, got ", n_supports);
    if (n_supports > 0) {
      if (static_cast<int64_t>(coefs.size()) < n_supports)
        fail("coefficients has ", coefs.size(), " values for ", n_supports, " support vectors");
      if (sv.size() % static_cast<size_t>(n_supports) != 0)
        fail("support_vectors has ", sv.size(), " values, not a multiple of n_supports (", n_supports, ")");
    } else {
      k.type = KernelType::Linear;
    }
    PostTransform pt = ml::parse_post_transform(init.attrs.get_string("post_transform", "NONE"));
    return make_kernel([=](KernelContext& ctx) {
      ml::Rows x = ml::read_rows(ctx.input(0));
      if (n_supports > 0 && static_cast<int64_t>(sv.size()) != n_supports * x.c)
        ctx.error(cat("support vectors have ", sv.size() / n_supports, " features, the input has ", x.c));
      if (n_supports == 0 && static_cast<int64_t>(coefs.size()) != x.c)
        ctx.error(cat("coefficients has ", coefs.size(), " values, the input has ", x.c, " features"));
      std::vector<double> y(static_cast<size_t>(x.n));
      for (int64_t n = 0; n < x.n; ++n) {
        double s = 0;
        if (n_supports > 0) {
          for (int64_t j = 0; j < n_supports; ++j) s += coefs[j] * k(x.row(n), sv.data() + j * x.c, x.c);
        } else {
          s = k(x.row(n), coefs.data(), x.c);
        }
        s += rho[0];
        if (one_class) s = s > 0 ? 1.0 : -1.0;
        ml::apply_post_transform(pt, &s, 1);
        y[n] = s;
      }
      store_doubles(ctx.allocate_output(0, DataType::Float, {x.n, 1}), y);
    });
  };
  add_versions(r, "ai.onnx.ml", "SVMRegressor", {1}, {{{0}, kInputTypes}}, infer, kernel);
}

// ---- SVMClassifier ----

// Platt's sigmoid: probability that the pair decision favours the first class.
double sigmoid_probability(double score, double a, double b) { return 1.0 - ml::logistic(score * a + b); }

// Pairwise coupling of probabilities r[i][j] (i beats j) into class probabilities (Wu, Lin and Weng, method 2).
std::vector<double> couple_probabilities(int64_t k, const std::vector<double>& r) {
  auto R = [&](int64_t i, int64_t j) { return r[i * k + j]; };
  std::vector<double> q(static_cast<size_t>(k * k)), qp(static_cast<size_t>(k)), p(static_cast<size_t>(k), 1.0 / k);
  for (int64_t t = 0; t < k; ++t) {
    double diag = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (j == t) continue;
      diag += R(j, t) * R(j, t);
      q[t * k + j] = -R(j, t) * R(t, j);
    }
    q[t * k + t] = diag;
  }
  const int64_t max_iter = std::max<int64_t>(100, k);
  const double eps = 0.005 / k;
  for (int64_t it = 0; it < max_iter; ++it) {
    double pqp = 0;
    for (int64_t t = 0; t < k; ++t) {
      qp[t] = 0;
      for (int64_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
      pqp += p[t] * qp[t];
    }
    double max_err = 0;
    for (int64_t t = 0; t < k; ++t) max_err = std::max(max_err, std::abs(qp[t] - pqp));
    if (max_err < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      double qtt = q[t * k + t];
      if (qtt == 0) continue;
      double diff = (-qp[t] + pqp) / qtt;
      p[t] += diff;
      pqp = (pqp + diff * (diff * qtt + 2 * qp[t])) / ((1 + diff) * (1 + diff));
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
  return p;
}

struct SvmClassifier {
  ml::ClassLabels labels;
  SvmKernel kernel;
  std::vector<double> coefs, sv, rho, prob_a, prob_b;
  std::vector<int64_t> vectors_per_class, starts;
  int64_t classes = 0, vector_count = 0;
  bool weights_all_positive = true;
  PostTransform pt = PostTransform::None;

  void run(KernelContext& ctx) const {
    ml::Rows x = ml::read_rows(ctx.input(0));
    const bool svc = vector_count > 0;
    if (svc && static_cast<int64_t>(sv.size()) != vector_count * x.c)
      ctx.error(cat("support vectors have ", sv.size() / vector_count, " features, the input has ", x.c));
    if (!svc && static_cast<int64_t>(coefs.size()) != classes * x.c)
      ctx.error(cat("coefficients has ", coefs.size(), " values, expected classes * features = ", classes, " * ", x.c));
    const bool has_proba = svc && !prob_a.empty();
    std::vector<std::vector<double>> rows(static_cast<size_t>(x.n));
    std::vector<int64_t> idx(static_cast<size_t>(x.n));
    std::vector<double> kv(static_cast<size_t>(vector_count));
    for (int64_t n = 0; n < x.n; ++n) {
      const double* xr = x.row(n);
      std::vector<double> scores, votes;
      if (svc) {
        for (int64_t j = 0; j < vector_count; ++j) kv[j] = kernel(xr, sv.data() + j * x.c, x.c);
        votes.assign(static_cast<size_t>(classes), 0.0);
        int64_t k = 0;
        for (int64_t i = 0; i < classes; ++i) {
          for (int64_t j = i + 1; j < classes; ++j, ++k) {
            double s = rho[k];
            for (int64_t v = 0; v < vectors_per_class[i]; ++v)
              s += coefs[(j - 1) * vector_count + starts[i] + v] * kv[starts[i] + v];
            for (int64_t v = 0; v < vectors_per_class[j]; ++v)
              s += coefs[i * vector_count + starts[j] + v] * kv[starts[j] + v];
            scores.push_back(s);
            votes[s > 0 ? i : j] += 1;
          }
        }
        if (has_proba) {
          std::vector<double> pr(static_cast<size_t>(classes * classes), 0.0);
          int64_t q = 0;
          for (int64_t i = 0; i < classes; ++i)
            for (int64_t j = i + 1; j < classes; ++j, ++q) {
              double v = std::clamp(sigmoid_probability(scores[q], prob_a[q], prob_b[q]), 1e-7, 1 - 1e-7);
              pr[i * classes + j] = v;
              pr[j * classes + i] = 1 - v;
            }
          scores = couple_probabilities(classes, pr);
        }
      } else {
        for (int64_t c = 0; c < classes; ++c) scores.push_back(rho[0] + kernel(xr, coefs.data() + c * x.c, x.c));
      }
      // The winning class: most votes (first on ties), or the top score.
      const std::vector<double>& decide = (svc && !has_proba) ? votes : scores;
      int64_t best = std::max_element(decide.begin(), decide.end()) - decide.begin();
      double best_w = decide.empty() ? 0.0 : decide[best];
      int64_t label = best;
      int add_second = -1;
      if (rho.size() == 1 && (svc || labels.size() <= 2)) {
        if (labels.size() == 2) {
          add_second = 2;
          if (!has_proba && weights_all_positive && best_w >= 0.5) label = 1;
        } else {
          label = best_w > 0 ? 1 : 0;  // one-class style: positive / negative class index
        }
      }
      idx[n] = label;
      // Scores output (with the second class added for a single binary decision value).
      std::vector<double> z = scores;
      if (z.size() == 1) {
        double s = z[0];
        if (pt == PostTransform::Probit) {
          z = {ml::probit(s)};
        } else if (add_second == 2) {
          z = {-s, s};
          if (pt == PostTransform::Logistic) z = {ml::logistic(-s), ml::logistic(s)};
          else ml::apply_post_transform(pt, z.data(), 2);
        } else {
          ml::apply_post_transform(pt, z.data(), 1);
        }
      } else {
        ml::apply_post_transform(pt, z.data(), z.size());
      }
      rows[n] = std::move(z);
    }
    // Labels: a class index; for int labels with fewer than 2 labels the index itself is the label.
    const int64_t nrows = x.n;
    if (labels.strings) {
      Tensor& y = ctx.allocate_output(0, DataType::String, {nrows});
      for (int64_t n = 0; n < nrows; ++n) {
        if (idx[n] < 0 || static_cast<size_t>(idx[n]) >= labels.s.size()) ctx.error(cat("class ", idx[n], " has no label"));
        y.mutable_strings()[n] = labels.s[idx[n]];
      }
    } else {
      Tensor& y = ctx.allocate_output(0, DataType::Int64, {nrows});
      int64_t* p = y.mutable_data<int64_t>();
      for (int64_t n = 0; n < nrows; ++n)
        p[n] = (labels.i.size() >= 2 && static_cast<size_t>(idx[n]) < labels.i.size()) ? labels.i[idx[n]] : idx[n];
    }
    if (ctx.num_outputs() > 1) {
      const int64_t cols = nrows > 0 ? static_cast<int64_t>(rows[0].size()) : (classes > 2 || has_proba ? classes : 2);
      std::vector<double> flat;
      for (const auto& z : rows) flat.insert(flat.end(), z.begin(), z.end());
      store_doubles(ctx.allocate_output(1, DataType::Float, {nrows, cols}), flat);
    }
  }
};

void register_svm_classifier(Registry& r) {
  auto infer = [](InferContext& ctx) {
    ml::ClassLabels l = ml::read_class_labels(ctx.attrs, "classlabels_ints");
    Dim n = ml::batch_dim(ctx);
    ctx.set_output(0, Type::tensor(l.strings ? DataType::String : DataType::Int64, shape_from({n})));
    ctx.set_output(1, Type::tensor(DataType::Float, shape_from({n, Dim{}})));
  };
  auto kernel = [](const KernelInit& init) {
    auto c = std::make_shared<SvmClassifier>();
    c->labels = ml::read_class_labels(init.attrs, "classlabels_ints");
    c->kernel = parse_kernel(init.attrs);
    c->coefs = svm_floats(init.attrs, "coefficients");
    c->sv = svm_floats(init.attrs, "support_vectors");
    c->rho = svm_floats(init.attrs, "rho");
    c->prob_a = svm_floats(init.attrs, "prob_a");
    c->prob_b = svm_floats(init.attrs, "prob_b");
    c->vectors_per_class = init.attrs.get_ints("vectors_per_class", std::vector<int64_t>{});
    c->pt = ml::parse_post_transform(init.attrs.get_string("post_transform", "NONE"));
    c->classes = std::max<int64_t>(static_cast<int64_t>(c->labels.size()), 1);
    for (int64_t v : c->vectors_per_class) {
      if (v < 0) fail("vectors_per_class holds a negative count ", v);
      c->starts.push_back(c->vector_count);
      c->vector_count += v;
    }
    if (c->rho.empty()) fail("rho must not be empty");
    if (c->vector_count > 0) {
      if (static_cast<int64_t>(c->vectors_per_class.size()) != c->classes)
        fail("vectors_per_class has ", c->vectors_per_class.size(), " entries for ", c->classes, " classes");
      if (c->sv.size() % static_cast<size_t>(c->vector_count) != 0)
        fail("support_vectors has ", c->sv.size(), " values, not a multiple of the ", c->vector_count, " vectors");
      if (static_cast<int64_t>(c->coefs.size()) != (c->classes - 1) * c->vector_count)
        fail("coefficients has ", c->coefs.size(), " values, expected (classes - 1) * vectors = ", c->classes - 1, " * ",
             c->vector_count);
      const int64_t pairs = c->classes * (c->classes - 1) / 2;
      if (static_cast<int64_t>(c->rho.size()) < pairs) fail("rho has ", c->rho.size(), " values for ", pairs, " class pairs");
      if (!c->prob_a.empty() &&
          (static_cast<int64_t>(c->prob_a.size()) < pairs || static_cast<int64_t>(c->prob_b.size()) < pairs))
        fail("prob_a and prob_b need one value per class pair (", pairs, ")");
    } else {
      c->kernel.type = KernelType::Linear;
    }
    for (double w : c->coefs) c->weights_all_positive = c->weights_all_positive && w >= 0;
    return make_kernel([c](KernelContext& ctx) { c->run(ctx); });
  };
  add_versions(r, "ai.onnx.ml", "SVMClassifier", {1}, {{{0}, kInputTypes}}, infer, kernel);
}

}  // namespace

void register_ml_svm(Registry& r) {
  register_svm_regressor(r);
  register_svm_classifier(r);
}

}  // namespace onyx::ops
