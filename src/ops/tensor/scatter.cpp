// ai.onnx Scatter (9, 11; deprecated alias of ScatterElements), ScatterElements (11, 13, 16, 18),
// ScatterND (11, 13, 16, 18), TensorScatter (24).
// Scatter-9 takes indices in [0, s); from 11 on indices may be negative (counted from the end).
// ScatterElements/ScatterND: 13 adds bfloat16; 16 adds the `reduction` attribute (none, add, mul);
// 18 adds max and min. Duplicate indices apply in index order (with reduction "none" the last one wins).
// TensorScatter-24 writes `update` into a copy of `past_cache` along `axis` (default -2) at write_indices[batch]
// (0 when absent); mode "linear" requires the write to fit, "circular" wraps modulo the sequence length.
#include <cmath>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {


enum class Red { None, Add, Mul, Max, Min };

Red parse_reduction(const AttributeView& attrs, int since) {
  if (since < 16) return Red::None;
  std::string r = attrs.get_string("reduction", "none");
  if (r == "none") return Red::None;
  if (r == "add") return Red::Add;
  if (r == "mul") return Red::Mul;
  if (since >= 18 && r == "max") return Red::Max;
  if (since >= 18 && r == "min") return Red::Min;
  fail("reduction '", r, "' is not supported", since < 18 ? " (none, add, mul)" : " (none, add, mul, max, min)");
}

template <class T>
T reduce(Red r, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return (r == Red::Add || r == Red::Max) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<T>) {
    using U = wide_unsigned_t<T>;
    switch (r) {
      case Red::Add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case Red::Mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case Red::Max: return a < b ? b : a;
      case Red::Min: return b < a ? b : a;
      case Red::None: break;
    }
    return b;
  } else {
    switch (r) {
      case Red::Add: return a + b;
      case Red::Mul: return a * b;
      case Red::Max: return (std::isnan(a) || std::isnan(b)) ? a + b : (a < b ? b : a);
      case Red::Min: return (std::isnan(a) || std::isnan(b)) ? a + b : (b < a ? b : a);
      case Red::None: break;
    }
    return b;
  }
}

// Calls body(put) with put(dst_index, src_index) writing or reducing updates[src] into out[dst].
template <class Body>
void with_put(Red red, const Tensor& upd, Tensor& out, Body&& body) {
  if (red == Red::None) {
    ElementCopier c(upd, out);
    body([&](uint64_t d, uint64_t s) { c.copy(s, d); });
    return;
  }
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T>) {
      const T* u = upd.data<T>();
      T* o = out.mutable_data<T>();
      body([&](uint64_t d, uint64_t s) { o[d] = reduce<T>(red, o[d], u[s]); });
    } else if constexpr (is_small_float_v<T>) {
      const T* u = upd.data<T>();
      T* o = out.mutable_data<T>();
      body([&](uint64_t d, uint64_t s) { o[d] = T(reduce<float>(red, static_cast<float>(o[d]), static_cast<float>(u[s]))); });
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      if (red == Red::Max || red == Red::Min) fail("reduction max/min is not defined for ", out.dtype());
      const T* u = upd.data<T>();
      T* o = out.mutable_data<T>();
      body([&](uint64_t d, uint64_t s) { o[d] = red == Red::Add ? o[d] + u[s] : o[d] * u[s]; });
    } else {
      fail("a reduction is not defined for element type ", out.dtype());
    }
  });
}

int64_t fix_scatter_index(int64_t k, int64_t dim, bool allow_negative, const char* what) {
  if (allow_negative && k < 0 && k >= -dim) return k + dim;
  if (k < 0 || k >= dim) fail(what, " index ", k, " is out of range for a dimension of size ", dim);
  return k;
}

void check_scatter_types(KernelContext& ctx, size_t a, size_t b) {
  if (ctx.input(a).dtype() != ctx.input(b).dtype())
    ctx.error(cat("inputs ", a, " and ", b, " have different element types ", ctx.input(a).dtype(), " and ", ctx.input(b).dtype()));
}

// ---- ScatterElements / Scatter ----

void infer_scatter_elements(InferContext& ctx) {
  const Type& data = ctx.input_type(0);
  auto r = rank_of(data);
  if (r) {
    if (*r == 0) ctx.error("data must have rank >= 1");
    normalize_axis(ctx.attrs.get_int("axis", 0), static_cast<int64_t>(*r));
    for (size_t i : {size_t{1}, size_t{2}}) {
      auto ri = ctx.has_input(i) ? rank_of(ctx.input_type(i)) : std::nullopt;
      if (ri && *ri != *r) ctx.error(cat("input ", i, " has rank ", *ri, ", data has rank ", *r));
    }
  }
  infer_same_as_input(ctx);
}

void run_scatter_elements(KernelContext& ctx, int64_t axis_attr, Red red, bool allow_negative) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  check_scatter_types(ctx, 0, 2);
  const Dims& dd = data.dims();
  const Dims& id = ind.dims();
  const int64_t r = static_cast<int64_t>(dd.size());
  if (r == 0) ctx.error("data must have rank >= 1");
  const int64_t axis = normalize_axis(axis_attr, r);
  if (id.size() != dd.size()) ctx.error(cat("indices has rank ", id.size(), ", data has rank ", r));
  if (upd.dims() != id) ctx.error(cat("updates shape ", shape_of(upd.dims()).to_string(), " differs from indices shape ", shape_of(id).to_string()));
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && id[d] > dd[d])
      ctx.error(cat("indices dimension ", d, " (", id[d], ") exceeds the data dimension (", dd[d], ")"));
  std::vector<int64_t> k = read_ints(ind);
  for (int64_t& v : k) v = fix_scatter_index(v, dd[axis], allow_negative, "scatter");
  Tensor out = data.clone();
  const Dims ds = strides_of(dd);
  with_put(red, upd, out, [&](auto&& put) {
    for_each_index(id, [&](int64_t i, const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d) off += (d == axis ? k[i] : idx[d]) * ds[d];
      put(static_cast<uint64_t>(off), static_cast<uint64_t>(i));
    });
  });
  ctx.set_output(0, std::move(out));
}

// ---- ScatterND ----

void infer_scatter_nd(InferContext& ctx) {
  auto r = rank_of(ctx.input_type(0));
  auto q = ctx.has_input(1) ? rank_of(ctx.input_type(1)) : std::nullopt;
  if (r && *r == 0) ctx.error("data must have rank >= 1");
  if (q && *q == 0) ctx.error("indices must have rank >= 1");
  if (r && q) {
    const Dim& k = ctx.input_type(1).shape.dims.back();
    if (k.value && *k.value > static_cast<int64_t>(*r))
      ctx.error(cat("indices' last dimension ", *k.value, " exceeds the data rank ", *r));
  }
  infer_same_as_input(ctx);
}

void run_scatter_nd(KernelContext& ctx, Red red) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  check_scatter_types(ctx, 0, 2);
  const Dims& dd = data.dims();
  const Dims& id = ind.dims();
  if (dd.empty()) ctx.error("data must have rank >= 1");
  if (id.empty()) ctx.error("indices must have rank >= 1");
  const int64_t k = id.back();
  if (k > static_cast<int64_t>(dd.size())) ctx.error(cat("indices' last dimension ", k, " exceeds the data rank ", dd.size()));
  Dims want(id.begin(), id.end() - 1);
  want.insert(want.end(), dd.begin() + k, dd.end());
  if (upd.dims() != want)
    ctx.error(cat("updates shape ", shape_of(upd.dims()).to_string(), " should be ", shape_of(want).to_string(),
                  " (indices.shape[:-1] + data.shape[k:])"));
  const int64_t n = product(id, 0, id.size() - 1);
  const int64_t slice = product(dd, static_cast<size_t>(k));
  const Dims ds = strides_of(dd);
  std::vector<int64_t> kv = read_ints(ind);
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) off += fix_scatter_index(kv[i * k + j], dd[j], true, "scatter") * ds[j];
    offsets[i] = off;
  }
  Tensor out = data.clone();
  with_put(red, upd, out, [&](auto&& put) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t e = 0; e < slice; ++e) put(static_cast<uint64_t>(offsets[i] + e), static_cast<uint64_t>(i * slice + e));
  });
  ctx.set_output(0, std::move(out));
}

// ---- TensorScatter ----

void infer_tensor_scatter(InferContext& ctx) {
  const Type& past = ctx.input_type(0);
  auto r = rank_of(past);
  if (r) {
    if (*r < 2) ctx.error("past_cache must have rank >= 2");
    int64_t axis = normalize_axis(ctx.attrs.get_int("axis", -2), static_cast<int64_t>(*r));
    if (axis == 0) ctx.error("axis must not be the batch axis 0");
  }
  std::string mode = ctx.attrs.get_string("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.error(cat("mode '", mode, "' is not 'linear' or 'circular'"));
  infer_same_as_input(ctx);
}

void run_tensor_scatter(KernelContext& ctx, int64_t axis_attr, bool circular) {
  const Tensor& past = ctx.input(0);
  const Tensor& upd = ctx.input(1);
  check_scatter_types(ctx, 0, 1);
  const Dims& pd = past.dims();
  const Dims& ud = upd.dims();
  const int64_t r = static_cast<int64_t>(pd.size());
  if (r < 2) ctx.error("past_cache must have rank >= 2");
  const int64_t axis = normalize_axis(axis_attr, r);
  if (axis == 0) ctx.error("axis must not be the batch axis 0");
  if (ud.size() != pd.size()) ctx.error(cat("update has rank ", ud.size(), ", past_cache has rank ", r));
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && ud[d] != pd[d])
      ctx.error(cat("update shape ", shape_of(ud).to_string(), " differs from past_cache shape ", shape_of(pd).to_string(), " outside the sequence axis"));
  const int64_t max_len = pd[axis], len = ud[axis], batch = pd[0];
  if (len > max_len) ctx.error(cat("update sequence length ", len, " exceeds the cache length ", max_len));
  std::vector<int64_t> wi(static_cast<size_t>(batch), 0);
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.dims() != Dims{batch}) ctx.error(cat("write_indices must have shape [", batch, "], got ", shape_of(w.dims()).to_string()));
    wi = read_ints(w);
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (wi[b] < 0) ctx.error(cat("write index ", wi[b], " is negative"));
    if (!circular && len > 0 && wi[b] + len > max_len)
      ctx.error(cat("write index ", wi[b], " + sequence length ", len, " exceeds the cache length ", max_len, " (mode linear)"));
  }
  Tensor out = past.clone();
  if (len > 0 && product(pd) > 0) {
    const int64_t inner = product(pd, static_cast<size_t>(axis) + 1);
    const int64_t outer = product(pd, 0, static_cast<size_t>(axis));  // prefix positions (batch first)
    const int64_t per_batch = outer / batch;
    ElementCopier c(upd, out);
    for (int64_t p = 0; p < outer; ++p) {
      const int64_t b = p / per_batch;
      for (int64_t s = 0; s < len; ++s) {
        int64_t pos = wi[b] + s;
        if (circular) pos %= max_len;
        c.copy_run(static_cast<uint64_t>((p * len + s) * inner), static_cast<uint64_t>((p * max_len + pos) * inner), static_cast<uint64_t>(inner));
      }
    }
  }
  ctx.set_output(0, std::move(out));
}

}  // namespace

void register_scatter(Registry& r) {
  const std::vector<DataType> idx = {DataType::Int32, DataType::Int64};
  const std::vector<DataType> i64 = {DataType::Int64};
  // Scatter (deprecated): same semantics as ScatterElements without reduction.
  for (int v : {9, 11}) {
    const bool neg = v >= 11;
    r.add(OpDef{"", "Scatter", v, {{{0, 2}, all_tensor_types(v)}, {{1}, idx}}, infer_scatter_elements, [neg](const KernelInit& init) {
                  int64_t axis = init.attrs.get_int("axis", 0);
                  return make_kernel([axis, neg](KernelContext& ctx) { run_scatter_elements(ctx, axis, Red::None, neg); });
                }});
  }
  for (int v : {11, 13, 16, 18}) {
    const auto types = all_tensor_types(v);
    auto infer_se = [v](InferContext& ctx) {
      parse_reduction(ctx.attrs, v);
      infer_scatter_elements(ctx);
    };
    r.add(OpDef{"", "ScatterElements", v, {{{0, 2}, types}, {{1}, idx}}, infer_se, [v](const KernelInit& init) {
                  int64_t axis = init.attrs.get_int("axis", 0);
                  Red red = parse_reduction(init.attrs, v);
                  return make_kernel([axis, red](KernelContext& ctx) { run_scatter_elements(ctx, axis, red, true); });
                }});
    auto infer_nd = [v](InferContext& ctx) {
      parse_reduction(ctx.attrs, v);
      infer_scatter_nd(ctx);
    };
    r.add(OpDef{"", "ScatterND", v, {{{0, 2}, types}, {{1}, i64}}, infer_nd, [v](const KernelInit& init) {
                  Red red = parse_reduction(init.attrs, v);
                  return make_kernel([red](KernelContext& ctx) { run_scatter_nd(ctx, red); });
                }});
  }
  r.add(OpDef{"", "TensorScatter", 24, {{{0, 1}, all_tensor_types(24)}, {{2}, i64}}, infer_tensor_scatter, [](const KernelInit& init) {
                int64_t axis = init.attrs.get_int("axis", -2);
                std::string mode = init.attrs.get_string("mode", "linear");
                if (mode != "linear" && mode != "circular") fail("mode '", mode, "' is not 'linear' or 'circular'");
                bool circular = mode == "circular";
                return make_kernel([axis, circular](KernelContext& ctx) { run_tensor_scatter(ctx, axis, circular); });
              }});
}

}  // namespace onyx::ops
