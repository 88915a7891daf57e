// ai.onnx Unique (11) and TopK (1, 10, 11, 24).
// Unique: the distinct elements of the flattened input (or distinct slices along `axis`), sorted ascending
// (sorted=1, default; slices compare lexicographically) or in order of first occurrence (sorted=0), with the
// optional outputs indices (first occurrence), inverse_indices and counts. NaNs compare equal to each other and
// greater than every number.
// TopK: the k largest (or, from 11, smallest with largest=0) elements along `axis` (default -1) with their int64
// indices. 1: k is an attribute; 10: k is the input K; 11: `largest`, `sorted` and integer types; 24: bfloat16.
// Equal values keep the lower index first; the result is always sorted (which sorted=0 permits).
#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {


// A totally ordered key for an element: NaN is greater than everything and equal to NaN.
template <class T>
auto key_of(const T& v) {
  if constexpr (is_small_float_v<T>) return static_cast<float>(v);
  else return v;
}
template <class K>
bool key_less(const K& a, const K& b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return a < b;
  } else if constexpr (std::is_same_v<K, std::complex<float>> || std::is_same_v<K, std::complex<double>>) {
    if (key_less(a.real(), b.real())) return true;
    if (key_less(b.real(), a.real())) return false;
    return key_less(a.imag(), b.imag());
  } else {
    return a < b;
  }
}
template <class K>
bool key_equal(const K& a, const K& b) {
  return !key_less(a, b) && !key_less(b, a);
}

// ---- Unique ----

void infer_unique(InferContext& ctx) {
  const Type& x = ctx.input_type(0);
  Shape one;
  one.rank_known = true;
  one.dims.resize(1);
  Shape y = one, inverse = one;
  if (ctx.attrs.has("axis")) {
    auto r = rank_of(x);
    if (r) {
      const int64_t axis = normalize_axis(ctx.attrs.get_int("axis"), static_cast<int64_t>(*r));
      y = x.shape;
      y.dims[axis] = Dim{};
      inverse.dims[0] = x.shape.dims[axis];
    } else {
      y = Shape{};
    }
  } else if (auto d = static_dims(x)) {
    inverse.dims[0] = known_dim(product(*d));
  }
  ctx.set_output(0, Type::tensor(x.elem, y));
  ctx.set_output(1, Type::tensor(DataType::Int64, one));
  ctx.set_output(2, Type::tensor(DataType::Int64, inverse));
  ctx.set_output(3, Type::tensor(DataType::Int64, one));
}

void run_unique(KernelContext& ctx, bool sorted, std::optional<int64_t> axis_attr) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  int64_t n, outer = 1, inner = 1, axis = 0;
  if (axis_attr) {
    if (xd.empty()) ctx.error("axis is given but the input is a scalar");
    axis = normalize_axis(*axis_attr, static_cast<int64_t>(xd.size()));
    n = xd[axis];
    outer = product(xd, 0, static_cast<size_t>(axis));
    inner = product(xd, static_cast<size_t>(axis) + 1);
  } else {
    n = static_cast<int64_t>(x.element_count());
  }
  const int64_t slice = outer * inner;  // elements per item
  // Flat index of element e (in row-major order of the remaining dims) of item i.
  auto at = [&](int64_t i, int64_t e) { return ((e / inner) * n + i) * inner + e % inner; };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> group_start;  // positions in `order` where a new value begins
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::string> || std::is_arithmetic_v<T> || is_small_float_v<T> ||
                  std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      auto get = [&](int64_t f) {
        if constexpr (std::is_same_v<T, std::string>) return std::string_view(x.string_values()[f]);
        else return key_of(x.data<T>()[f]);
      };
      auto less = [&](int64_t a, int64_t b) {
        for (int64_t e = 0; e < slice; ++e) {
          auto va = get(at(a, e)), vb = get(at(b, e));
          if (key_less(va, vb)) return true;
          if (key_less(vb, va)) return false;
        }
        return false;
      };
      auto equal = [&](int64_t a, int64_t b) {
        for (int64_t e = 0; e < slice; ++e)
          if (!key_equal(get(at(a, e)), get(at(b, e)))) return false;
        return true;
      };
      std::stable_sort(order.begin(), order.end(), less);
      for (int64_t p = 0; p < n; ++p)
        if (p == 0 || !equal(order[p - 1], order[p])) group_start.push_back(p);
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
  const int64_t g = static_cast<int64_t>(group_start.size());
  // Groups in output order: sorted order, or by first occurrence.
  std::vector<int64_t> groups(static_cast<size_t>(g));
  std::iota(groups.begin(), groups.end(), 0);
  if (!sorted) std::sort(groups.begin(), groups.end(), [&](int64_t a, int64_t b) { return order[group_start[a]] < order[group_start[b]]; });
  std::vector<int64_t> first(static_cast<size_t>(g)), counts(static_cast<size_t>(g)), inverse(static_cast<size_t>(n));
  for (int64_t o = 0; o < g; ++o) {
    const int64_t gi = groups[o];
    const int64_t begin = group_start[gi], end = gi + 1 < g ? group_start[gi + 1] : n;
    first[o] = order[begin];
    counts[o] = end - begin;
    for (int64_t p = begin; p < end; ++p) inverse[order[p]] = o;
  }
  Dims yd = {g};
  if (axis_attr) {
    yd = xd;
    yd[axis] = g;
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), yd);
  ElementCopier cp(x, y);
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t o = 0; o < g; ++o)
      cp.copy_run(static_cast<uint64_t>((a * n + first[o]) * inner), static_cast<uint64_t>((a * g + o) * inner), static_cast<uint64_t>(inner));
  auto put = [&](size_t i, const std::vector<int64_t>& v) {
    if (i >= ctx.num_outputs() || !ctx.output_wanted(i)) return;
    Tensor& t = ctx.allocate_output(i, DataType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
  };
  put(1, first);
  put(2, inverse);
  put(3, counts);
}

// ---- TopK ----

int64_t check_k(int64_t k, int64_t dim) {
  if (k < 0) fail("k must not be negative, got ", k);
  if (k > dim) fail("k = ", k, " exceeds the axis dimension ", dim);
  return k;
}

int64_t read_k_input(const Tensor& t) {
  if (t.element_count() != 1 || t.dims().size() > 1) fail("K must be a 1-D tensor with one element");
  return read_ints(t)[0];
}

void infer_top_k(InferContext& ctx, int since) {
  const Type& x = ctx.input_type(0);
  auto r = rank_of(x);
  Shape s;
  if (r) {
    if (*r == 0) ctx.error("input must have rank >= 1");
    const int64_t axis = normalize_axis(ctx.attrs.get_int("axis", -1), static_cast<int64_t>(*r));
    s = x.shape;
    std::optional<int64_t> k;
    if (since < 10) k = ctx.attrs.get_int("k");
    else if (const Tensor* kt = ctx.input_value(1)) k = read_k_input(*kt);
    s.dims[axis] = Dim{};
    if (k) {
      if (x.shape.dims[axis].value) check_k(*k, *x.shape.dims[axis].value);
      else if (*k < 0) ctx.error(cat("k must not be negative, got ", *k));
      s.dims[axis] = known_dim(*k);
    }
  }
  ctx.set_output(0, Type::tensor(x.elem, s));
  ctx.set_output(1, Type::tensor(DataType::Int64, s));
}

void run_top_k(KernelContext& ctx, int since, int64_t k_attr, int64_t axis_attr, bool largest) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  if (xd.empty()) ctx.error("input must have rank >= 1");
  const int64_t axis = normalize_axis(axis_attr, static_cast<int64_t>(xd.size()));
  const int64_t n = xd[axis];
  const int64_t k = check_k(since < 10 ? k_attr : read_k_input(ctx.input(1)), n);
  Dims od = xd;
  od[axis] = k;
  Tensor& vals = ctx.allocate_output(0, x.dtype(), od);
  Tensor& idx = ctx.allocate_output(1, DataType::Int64, od);
  int64_t* pi = idx.mutable_data<int64_t>();
  const int64_t outer = product(xd, 0, static_cast<size_t>(axis)), inner = product(xd, static_cast<size_t>(axis) + 1);
  ElementCopier cp(x, vals);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T> || is_small_float_v<T>) {
      using K = decltype(key_of(T{}));
      const T* p = x.data<T>();
      std::vector<K> keys(static_cast<size_t>(n));
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t j = 0; j < inner; ++j) {
          for (int64_t i = 0; i < n; ++i) keys[i] = key_of(p[(a * n + i) * inner + j]);
          std::iota(order.begin(), order.end(), 0);
          auto before = [&](int64_t u, int64_t v) {
            if (largest ? key_less(keys[v], keys[u]) : key_less(keys[u], keys[v])) return true;
            if (largest ? key_less(keys[u], keys[v]) : key_less(keys[v], keys[u])) return false;
            return u < v;
          };
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t i = 0; i < k; ++i) {
            const int64_t o = (a * k + i) * inner + j;
            pi[o] = order[i];
            cp.copy(static_cast<uint64_t>((a * n + order[i]) * inner + j), static_cast<uint64_t>(o));
          }
        }
    } else {
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
    }
  });
}

}  // namespace

void register_unique_topk(Registry& r) {
  r.add(OpDef{"", "Unique", 11, {{{0}, all_tensor_types(11)}}, infer_unique, [](const KernelInit& init) {
                bool sorted = init.attrs.get_int("sorted", 1) != 0;
                std::optional<int64_t> axis;
                if (init.attrs.has("axis")) axis = init.attrs.get_int("axis");
                return make_kernel([sorted, axis](KernelContext& ctx) { run_unique(ctx, sorted, axis); });
              }});
  using D = DataType;
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  for (int v : {1, 10, 11, 24}) {
    std::vector<TypeConstraint> types = {{{0}, v >= 11 ? numeric_types(v) : f}};
    if (v >= 10) types.push_back({{1}, {D::Int64}});
    r.add(OpDef{"", "TopK", v, types, [v](InferContext& ctx) { infer_top_k(ctx, v); }, [v](const KernelInit& init) {
                  int64_t k = v < 10 ? init.attrs.get_int("k") : 0;
                  int64_t axis = init.attrs.get_int("axis", -1);
                  bool largest = v < 11 || init.attrs.get_int("largest", 1) != 0;
                  return make_kernel([v, k, axis, largest](KernelContext& ctx) { run_top_k(ctx, v, k, axis, largest); });
                }});
  }
}

}  // namespace onyx::ops
