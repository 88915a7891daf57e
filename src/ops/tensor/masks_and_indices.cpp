// ai.onnx OneHot (9, 11), NonZero (9, 13), Compress (9, 11), Trilu (14), ReverseSequence (10).
// OneHot: output = indices' shape with a `depth` dimension inserted at `axis` (default -1), filled with
// values[0] (off) and values[1] (on). Float indices and depth are truncated to integers. OneHot-9 turns indices
// outside [0, depth) into all-off rows; OneHot-11 also accepts [-depth, -1] (counted from the end).
// NonZero: int64 [rank, count] coordinates of the non-zero elements in row-major order (a scalar counts as 1-D);
// 13 adds bfloat16. Strings are non-zero when not empty.
// Compress: selects slices along `axis` (or elements of the flattened input without axis) where the boolean
// condition is true; a shorter condition leaves the rest unselected. 11 allows a negative axis.
// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims, zero elsewhere.
// ReverseSequence: reverses the first sequence_lens[b] elements along time_axis of each batch entry.
#include <algorithm>
#include <cmath>
#include <complex>

#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {


// Numeric tensor values as int64, floats truncated toward zero (NaN and out of range saturate).
std::vector<int64_t> read_as_ints(const Tensor& t) {
  bool integral = false;
  visit_dtype(t.dtype(), [&](auto tag) { integral = std::is_integral_v<decltype(tag)>; });
  if (integral) return read_ints(t);
  std::vector<double> d = read_doubles(t);
  std::vector<int64_t> v(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    if (std::isnan(d[i])) v[i] = INT64_MIN;
    else if (d[i] >= 9.2e18) v[i] = INT64_MAX;
    else if (d[i] <= -9.2e18) v[i] = INT64_MIN;
    else v[i] = static_cast<int64_t>(d[i]);
  }
  return v;
}

// ---- OneHot ----

int64_t read_depth(const Tensor& t) {
  if (t.element_count() != 1) fail("depth must have exactly one element, got ", t.element_count());
  int64_t d = read_as_ints(t)[0];
  if (d < 0) fail("depth must not be negative, got ", d);
  return d;
}

void infer_one_hot(InferContext& ctx) {
  DataType out = ctx.input_dtype(2);
  const Type& ind = ctx.input_type(0);
  auto r = rank_of(ind);
  if (!r) {
    ctx.set_output(0, Type::tensor(out));
    return;
  }
  const int64_t rank = static_cast<int64_t>(*r);
  const int64_t axis = normalize_axis(ctx.attrs.get_int("axis", -1), rank + 1);
  Shape s = ind.shape;
  Dim depth;
  if (const Tensor* d = ctx.input_value(1)) depth = known_dim(read_depth(*d));
  s.dims.insert(s.dims.begin() + axis, depth);
  ctx.set_output(0, Type::tensor(out, s));
}

void run_one_hot(KernelContext& ctx, int64_t axis_attr, bool negative) {
  const Tensor& ind = ctx.input(0);
  const Tensor& vals = ctx.input(2);
  const int64_t depth = read_depth(ctx.input(1));
  if (vals.element_count() != 2) ctx.error(cat("values must have two elements [off, on], got ", vals.element_count()));
  const Dims& id = ind.dims();
  const int64_t axis = normalize_axis(axis_attr, static_cast<int64_t>(id.size()) + 1);
  Dims od = id;
  od.insert(od.begin() + axis, depth);
  check_data_sized(od, vals.dtype(), "OneHot");
  std::vector<int64_t> k = read_as_ints(ind);
  Tensor& y = ctx.allocate_output(0, vals.dtype(), od);
  const int64_t post = product(id, static_cast<size_t>(axis));
  const int64_t total = product(od);
  ElementCopier cp(vals, y);
  for (int64_t i = 0; i < total; ++i) cp.copy(0, static_cast<uint64_t>(i));
  for (size_t i = 0; i < k.size(); ++i) {
    int64_t v = k[i];
    if (negative && v < 0 && v >= -depth) v += depth;
    if (v < 0 || v >= depth) continue;
    const int64_t outer = static_cast<int64_t>(i) / post, inner = static_cast<int64_t>(i) % post;
    cp.copy(1, static_cast<uint64_t>((outer * depth + v) * post + inner));
  }
}

// ---- NonZero ----

template <class T>
bool is_nonzero(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return !v.empty();
  else if constexpr (is_small_float_v<T>) return static_cast<float>(v) != 0.0f;
  else return v != T{};
}

void run_non_zero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Dims xd = x.dims();
  if (xd.empty()) xd = {1};
  const int64_t n = product(xd);
  std::vector<int64_t> hits;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::string>) {
      for (int64_t i = 0; i < n; ++i)
        if (is_nonzero(x.string_values()[i])) hits.push_back(i);
    } else if constexpr (std::is_arithmetic_v<T> || is_small_float_v<T> || std::is_same_v<T, std::complex<float>> ||
                         std::is_same_v<T, std::complex<double>>) {
      const T* p = x.data<T>();
      for (int64_t i = 0; i < n; ++i)
        if (is_nonzero(p[i])) hits.push_back(i);
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
  const int64_t r = static_cast<int64_t>(xd.size()), cnt = static_cast<int64_t>(hits.size());
  Tensor& y = ctx.allocate_output(0, DataType::Int64, {r, cnt});
  int64_t* py = y.mutable_data<int64_t>();
  const Dims s = strides_of(xd);
  for (int64_t j = 0; j < cnt; ++j)
    for (int64_t a = 0; a < r; ++a) py[a * cnt + j] = (hits[j] / s[a]) % xd[a];
}

void infer_non_zero(InferContext& ctx) {
  auto r = rank_of(ctx.input_type(0));
  Shape s;
  s.rank_known = true;
  s.dims.resize(2);
  if (r) s.dims[0] = known_dim(std::max<int64_t>(static_cast<int64_t>(*r), 1));
  ctx.set_output(0, Type::tensor(DataType::Int64, s));
}

// ---- Compress ----

std::vector<bool> read_condition(const Tensor& c) {
  if (c.dtype() != DataType::Bool) fail("condition must be bool, got ", c.dtype());
  if (c.dims().size() != 1) fail("condition must be 1-D, got rank ", c.dims().size());
  const bool* p = c.data<bool>();
  return std::vector<bool>(p, p + c.element_count());
}

// Selected positions among the first n (error if the condition selects beyond n).
std::vector<int64_t> selected(const std::vector<bool>& cond, int64_t n) {
  std::vector<int64_t> sel;
  for (size_t i = 0; i < cond.size(); ++i) {
    if (!cond[i]) continue;
    if (static_cast<int64_t>(i) >= n) fail("condition selects index ", i, " beyond the ", n, " available");
    sel.push_back(static_cast<int64_t>(i));
  }
  return sel;
}

void infer_compress(InferContext& ctx) {
  const Type& x = ctx.input_type(0);
  std::optional<int64_t> count;
  if (const Tensor* c = ctx.input_value(1)) {
    auto cond = read_condition(*c);
    count = static_cast<int64_t>(std::count(cond.begin(), cond.end(), true));
  }
  Shape s;
  s.rank_known = true;
  if (!ctx.attrs.has("axis")) {
    s.dims.resize(1);
    if (count) s.dims[0] = known_dim(*count);
    ctx.set_output(0, Type::tensor(x.elem, s));
    return;
  }
  auto r = rank_of(x);
  if (!r) {
    ctx.set_output(0, Type::tensor(x.elem));
    return;
  }
  const int64_t axis = normalize_axis(ctx.attrs.get_int("axis"), static_cast<int64_t>(*r));
  s = x.shape;
  s.dims[axis] = count ? known_dim(*count) : Dim{};
  ctx.set_output(0, Type::tensor(x.elem, s));
}

void run_compress(KernelContext& ctx, std::optional<int64_t> axis_attr) {
  const Tensor& x = ctx.input(0);
  auto cond = read_condition(ctx.input(1));
  if (!axis_attr) {
    auto sel = selected(cond, static_cast<int64_t>(x.element_count()));
    Tensor& y = ctx.allocate_output(0, x.dtype(), {static_cast<int64_t>(sel.size())});
    ElementCopier cp(x, y);
    for (size_t i = 0; i < sel.size(); ++i) cp.copy(static_cast<uint64_t>(sel[i]), i);
    return;
  }
  const Dims& xd = x.dims();
  const int64_t axis = normalize_axis(*axis_attr, static_cast<int64_t>(xd.size()));
  auto sel = selected(cond, xd[axis]);
  Dims od = xd;
  od[axis] = static_cast<int64_t>(sel.size());
  Tensor& y = ctx.allocate_output(0, x.dtype(), od);
  const int64_t outer = product(xd, 0, static_cast<size_t>(axis)), inner = product(xd, static_cast<size_t>(axis) + 1);
  ElementCopier cp(x, y);
  uint64_t o = 0;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t s : sel) {
      cp.copy_run(static_cast<uint64_t>((a * xd[axis] + s) * inner), o, static_cast<uint64_t>(inner));
      o += static_cast<uint64_t>(inner);
    }
}

// ---- Trilu ----

void run_trilu(KernelContext& ctx, bool upper) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  if (xd.size() < 2) ctx.error(cat("input must have rank >= 2, got ", xd.size()));
  int64_t k = 0;
  if (ctx.has_input(1)) {
    const Tensor& kt = ctx.input(1);
    if (kt.element_count() != 1) ctx.error(cat("k must be a scalar, got ", kt.element_count(), " elements"));
    k = read_ints(kt)[0];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), xd);
  const int64_t rows = xd[xd.size() - 2], cols = xd.back(), mats = product(xd, 0, xd.size() - 2);
  ElementCopier cp(x, y);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t diff = j - i;
        if (upper ? diff >= k : diff <= k) {
          const uint64_t off = static_cast<uint64_t>((m * rows + i) * cols + j);
          cp.copy(off, off);
        }
      }
}

void infer_trilu(InferContext& ctx) {
  auto r = rank_of(ctx.input_type(0));
  if (r && *r < 2) ctx.error(cat("input must have rank >= 2, got ", *r));
  infer_same_as_input(ctx);
}

// ---- ReverseSequence ----

std::pair<int64_t, int64_t> reverse_axes(const AttributeView& attrs) {
  int64_t b = attrs.get_int("batch_axis", 1), t = attrs.get_int("time_axis", 0);
  if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
    fail("batch_axis (", b, ") and time_axis (", t, ") must be 0 and 1 in some order");
  return {b, t};
}

void infer_reverse_sequence(InferContext& ctx) {
  reverse_axes(ctx.attrs);
  auto r = rank_of(ctx.input_type(0));
  if (r && *r < 2) ctx.error(cat("input must have rank >= 2, got ", *r));
  infer_same_as_input(ctx);
}

void run_reverse_sequence(KernelContext& ctx, int64_t batch_axis, int64_t time_axis) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  if (xd.size() < 2) ctx.error(cat("input must have rank >= 2, got ", xd.size()));
  const int64_t batch = xd[batch_axis], time = xd[time_axis];
  const Tensor& lt = ctx.input(1);
  if (lt.dims() != Dims{batch}) ctx.error(cat("sequence_lens must have shape [", batch, "], got ", shape_of(lt.dims()).to_string()));
  std::vector<int64_t> lens = read_ints(lt);
  for (int64_t l : lens)
    if (l < 0 || l > time) ctx.error(cat("sequence length ", l, " is out of range [0, ", time, "]"));
  Tensor& y = ctx.allocate_output(0, x.dtype(), xd);
  const int64_t inner = product(xd, 2);
  ElementCopier cp(x, y);
  for (int64_t i0 = 0; i0 < xd[0]; ++i0)
    for (int64_t i1 = 0; i1 < xd[1]; ++i1) {
      const int64_t b = batch_axis == 0 ? i0 : i1, t = time_axis == 0 ? i0 : i1;
      const int64_t src_t = t < lens[b] ? lens[b] - 1 - t : t;
      const int64_t s0 = time_axis == 0 ? src_t : i0, s1 = time_axis == 1 ? src_t : i1;
      cp.copy_run(static_cast<uint64_t>((s0 * xd[1] + s1) * inner), static_cast<uint64_t>((i0 * xd[1] + i1) * inner),
                  static_cast<uint64_t>(inner));
    }
}

}  // namespace

void register_masks_and_indices(Registry& r) {
  using D = DataType;
  for (int v : {9, 11}) {
    const bool negative = v >= 11;
    r.add(OpDef{"", "OneHot", v, {{{0}, numeric_types(v)}, {{1}, numeric_types(v)}, {{2}, all_tensor_types(v)}}, infer_one_hot,
                [negative](const KernelInit& init) {
                  int64_t axis = init.attrs.get_int("axis", -1);
                  return make_kernel([axis, negative](KernelContext& ctx) { run_one_hot(ctx, axis, negative); });
                }});
  }
  for (int v : {9, 13})
    r.add(OpDef{"", "NonZero", v, {{{0}, all_tensor_types(v)}}, infer_non_zero,
                [](const KernelInit&) { return make_kernel([](KernelContext& ctx) { run_non_zero(ctx); }); }});
  for (int v : {9, 11})
    r.add(OpDef{"", "Compress", v, {{{0}, all_tensor_types(v)}, {{1}, {D::Bool}}},
                [](InferContext& ctx) { infer_compress(ctx); },
                [](const KernelInit& init) {
                  std::optional<int64_t> axis;
                  if (init.attrs.has("axis")) axis = init.attrs.get_int("axis");
                  return make_kernel([axis](KernelContext& ctx) { run_compress(ctx, axis); });
                }});
  r.add(OpDef{"", "Trilu", 14, {{{0}, all_tensor_types(14)}, {{1}, {D::Int64}}}, infer_trilu, [](const KernelInit& init) {
                bool upper = init.attrs.get_int("upper", 1) != 0;
                return make_kernel([upper](KernelContext& ctx) { run_trilu(ctx, upper); });
              }});
  r.add(OpDef{"", "ReverseSequence", 10, {{{0}, all_tensor_types(10)}, {{1}, {D::Int64}}}, infer_reverse_sequence, [](const KernelInit& init) {
                auto [b, t] = reverse_axes(init.attrs);
                return make_kernel([b = b, t = t](KernelContext& ctx) { run_reverse_sequence(ctx, b, t); });
              }});
  r.set_gradient("", "Compress", grad::element_moves);
  r.set_gradient("", "ReverseSequence", grad::element_moves);
}

}  // namespace onyx::ops
