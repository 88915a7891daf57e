// Inputs and outputs of the ai.onnx.ml families: a [N,C] / [C] numeric input as rows of doubles (and its dims at
// inference), score attributes given as floats or as a tensor, and a classifier's class labels.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ops/op_kit.hpp"

namespace onyx::ops::ml {

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
  if (t.shape.dims.size() == 1) return known_dim(1);
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
