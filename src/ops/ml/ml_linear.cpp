// ai.onnx.ml LinearClassifier-1 and LinearRegressor-1 (the only versions).
// LinearRegressor: Y[n, t] = intercepts[t] + sum_c X[n, c] * coefficients[t * C + c], then post_transform on each row.
// LinearClassifier: one score per class row of `coefficients` (E = len(coefficients) / C), plus intercepts; with one
// coefficient row and two class labels the scores become [-s, s] (binary). post_transform is applied to each row and
// the label is the arg-max class (first on ties). `multi_class` does not change the computation.
// X is [N,C] or [C] (one row) of float/double/int32/int64; Z/Y are float.
#include "ops/ml/post_transform.hpp"
#include "ops/ml/rows_and_labels.hpp"

namespace onyx::ops {
namespace {

using ml::PostTransform;
const std::vector<DataType> kLinearInputTypes = {DataType::Float, DataType::Double, DataType::Int64, DataType::Int32};

// Scores [N, E] = X * W^T + b, with W of E rows of C.
std::vector<double> linear_scores(const ml::Rows& x, const std::vector<double>& w, const std::vector<double>& b,
                                  int64_t e) {
  std::vector<double> out(static_cast<size_t>(x.n * e));
  for (int64_t n = 0; n < x.n; ++n) {
    const double* r = x.row(n);
    for (int64_t k = 0; k < e; ++k) {
      double s = b.empty() ? 0.0 : b[k];
      const double* wk = w.data() + k * x.c;
      for (int64_t c = 0; c < x.c; ++c) s += r[c] * wk[c];
      out[n * e + k] = s;
    }
  }
  return out;
}

void register_linear_regressor(Registry& r) {
  auto infer = [](InferContext& ctx) {
    int64_t targets = ctx.attrs.get_int("targets", 1);
    if (targets < 1) ctx.error(cat("targets must be >= 1, got ", targets));
    ctx.set_output(0, Type::tensor(DataType::Float, shape_from({ml::batch_dim(ctx), known_dim(targets)})));
  };
  auto kernel = [](const KernelInit& init) {
    int64_t targets = init.attrs.get_int("targets", 1);
    if (targets < 1) fail("targets must be >= 1, got ", targets);
    std::vector<double> w = ml::floats_or_tensor(init.attrs, "coefficients", false);
    std::vector<double> b = ml::floats_or_tensor(init.attrs, "intercepts", false);
    if (!b.empty() && static_cast<int64_t>(b.size()) != targets)
      fail("intercepts has ", b.size(), " values, expected one per target (", targets, ")");
    if (w.size() % static_cast<size_t>(targets) != 0)
      fail("coefficients has ", w.size(), " values, not a multiple of targets (", targets, ")");
    PostTransform pt = ml::parse_post_transform(init.attrs.get_string("post_transform", "NONE"));
    return make_kernel([w, b, targets, pt](KernelContext& ctx) {
      ml::Rows x = ml::read_rows(ctx.input(0));
      if (static_cast<int64_t>(w.size()) != targets * x.c)
        ctx.error(cat("coefficients has ", w.size(), " values, expected targets * C = ", targets, " * ", x.c));
      std::vector<double> y = linear_scores(x, w, b, targets);
      for (int64_t n = 0; n < x.n; ++n) ml::apply_post_transform(pt, y.data() + n * targets, targets);
      store_doubles(ctx.allocate_output(0, DataType::Float, {x.n, targets}), y);
    });
  };
  add_versions(r, "ai.onnx.ml", "LinearRegressor", {1}, {{{0}, kLinearInputTypes}}, infer, kernel);
}

void register_linear_classifier(Registry& r) {
  auto class_count = [](const AttributeView& a, size_t labels) -> std::optional<int64_t> {
    // E from intercepts when given (the way the spec infers it); binary models have one row and two labels.
    std::vector<float> b = a.get_floats("intercepts", std::vector<float>{});
    if (b.empty()) return std::nullopt;
    if (b.size() == 1 && labels == 2) return 2;
    return static_cast<int64_t>(b.size());
  };
  auto infer = [class_count](InferContext& ctx) {
    ml::ClassLabels l = ml::read_class_labels(ctx.attrs, "classlabels_ints");
    Dim n = ml::batch_dim(ctx);
    ctx.set_output(0, Type::tensor(l.strings ? DataType::String : DataType::Int64, shape_from({n})));
    std::optional<int64_t> e = class_count(ctx.attrs, l.size());
    ctx.set_output(1, Type::tensor(DataType::Float, shape_from({n, e ? known_dim(*e) : Dim{}})));
  };
  auto kernel = [](const KernelInit& init) {
    ml::ClassLabels labels = ml::read_class_labels(init.attrs, "classlabels_ints");
    std::vector<double> w = ml::floats_or_tensor(init.attrs, "coefficients", false);
    if (w.empty()) fail("coefficients must not be empty");
    std::vector<double> b = ml::floats_or_tensor(init.attrs, "intercepts", false);
    PostTransform pt = ml::parse_post_transform(init.attrs.get_string("post_transform", "NONE"));
    return make_kernel([labels, w, b, pt](KernelContext& ctx) {
      ml::Rows x = ml::read_rows(ctx.input(0));
      if (x.c == 0 || w.size() % static_cast<size_t>(x.c) != 0)
        ctx.error(cat("coefficients has ", w.size(), " values, not a multiple of the ", x.c, " input features"));
      const int64_t e = static_cast<int64_t>(w.size()) / x.c;
      if (!b.empty() && static_cast<int64_t>(b.size()) != e)
        ctx.error(cat("intercepts has ", b.size(), " values, expected one per class row (", e, ")"));
      std::vector<double> s = linear_scores(x, w, b, e);
      const size_t num_labels = labels.size();
      const bool binary = e == 1 && num_labels == 2;
      const int64_t cols = binary ? 2 : e;
      if (!binary && num_labels > 0 && static_cast<int64_t>(num_labels) != e && e > 1)
        ctx.error(cat("there are ", num_labels, " class labels for ", e, " classes"));
      std::vector<double> z(static_cast<size_t>(x.n * cols));
      std::vector<int64_t> idx(static_cast<size_t>(x.n));
      for (int64_t n = 0; n < x.n; ++n) {
        double* row = z.data() + n * cols;
        if (binary) {
          row[0] = -s[n];
          row[1] = s[n];
        } else {
          std::copy(s.begin() + n * e, s.begin() + (n + 1) * e, row);
        }
        ml::apply_post_transform(pt, row, static_cast<size_t>(cols));
        if (cols > 1) {
          idx[n] = std::max_element(row, row + cols) - row;
        } else {
          // One score and not two labels: the first label when the score passes the threshold, else 0 / "".
          double threshold = pt == PostTransform::None ? 0.0 : 0.5;
          idx[n] = row[0] >= threshold ? 0 : -1;
        }
      }
      const int64_t n_rows = x.n;
      if (labels.strings) {
        Tensor& y = ctx.allocate_output(0, DataType::String, {n_rows});
        for (int64_t n = 0; n < n_rows; ++n) y.mutable_strings()[n] = idx[n] >= 0 ? labels.s[idx[n]] : std::string();
      } else {
        Tensor& y = ctx.allocate_output(0, DataType::Int64, {n_rows});
        int64_t* p = y.mutable_data<int64_t>();
        for (int64_t n = 0; n < n_rows; ++n) {
          if (labels.i.empty())
            p[n] = cols > 1 ? idx[n] : (idx[n] >= 0 ? 1 : 0);
          else
            p[n] = idx[n] >= 0 ? labels.i[idx[n]] : 0;
        }
      }
      if (ctx.num_outputs() > 1) store_doubles(ctx.allocate_output(1, DataType::Float, {n_rows, cols}), z);
    });
  };
  add_versions(r, "ai.onnx.ml", "LinearClassifier", {1}, {{{0}, kLinearInputTypes}}, infer, kernel);
}

}  // namespace

void register_ml_linear(Registry& r) {
  register_linear_regressor(r);
  register_linear_classifier(r);
}

}  // namespace onyx::ops
