// ai.onnx pools over the spatial dims of X (N, C, D1..Dn):
//   AveragePool 1, 7, 10, 11, 19, 22 — v7 adds count_include_pad, v10 ceil_mode, v19 dilations, v22 bfloat16.
//   MaxPool 1, 8, 10, 11, 12, 22 — v8 adds the Indices output (int64, flat index into X, row-major or column-major
//     per storage_order), v10 ceil_mode and dilations, v12 int8/uint8, v22 bfloat16.
//   LpPool 1, 2, 11, 18, 22 — v1 p is a float attribute, v2+ an int; v18 adds ceil_mode and dilations.
//   GlobalAveragePool 1, 22; GlobalMaxPool 1, 22; GlobalLpPool 1, 2, 22 (p float in v1, int from v2).
// v11 only refined the auto_pad text; SAME_* outputs are ceil(in / stride). With ceil_mode, a last window that
// would start in the end padding is dropped. Padding never contributes to max/Lp; for AveragePool it counts in the
// divisor only with count_include_pad=1 (positions beyond the end pads, from ceil_mode, never count).
#include <cmath>
#include <limits>

#include "ir/tensor_alloc.hpp"
#include "ops/nn/compute_type.hpp"
#include "ops/nn/window.hpp"
#include "ops/nn/pool_fast.hpp"

namespace onyx::ops {
namespace {

using nn::acc_t;
using nn::WindowAttrs;

enum class PoolKind { Average, Max, Lp };

struct PoolAttrs {
  WindowAttrs w;
  bool count_include_pad = false;
  int64_t storage_order = 0;
  double p = 2;
};

double read_p(const AttributeView& a) {
  const Attribute* at = a.find("p");
  if (!at) return 2.0;
  double p = at->type == AttributeType::Float ? at->f : static_cast<double>(at->i);
  if (!(p > 0)) fail("attribute 'p' is ", p, ", expected a positive value");
  return p;
}

PoolAttrs read_pool_attrs(const AttributeView& a, PoolKind kind, int64_t opset) {
  PoolAttrs p;
  bool dil = false, ceil = false;
  if (kind == PoolKind::Average) dil = opset >= 19, ceil = opset >= 10;
  if (kind == PoolKind::Max) dil = ceil = opset >= 10;
  if (kind == PoolKind::Lp) dil = ceil = opset >= 18;
  p.w = nn::read_window_attrs(a, dil, ceil);
  if (!a.has("kernel_shape")) fail("required attribute 'kernel_shape' is missing");
  if (kind == PoolKind::Average && opset >= 7) p.count_include_pad = a.get_int("count_include_pad", 0) != 0;
  if (kind == PoolKind::Max && opset >= 8) {
    p.storage_order = a.get_int("storage_order", 0);
    if (p.storage_order != 0 && p.storage_order != 1)
      fail("attribute 'storage_order' is ", p.storage_order, ", expected 0 or 1");
  }
  if (kind == PoolKind::Lp) p.p = read_p(a);
  return p;
}

// For each spatial axis and output index: the input indices the window reads, and how many window positions lie
// inside the padded extent (for count_include_pad).
struct AxisTaps {
  std::vector<std::vector<int64_t>> idx;
  std::vector<int64_t> padded;
};

std::vector<AxisTaps> make_taps(const nn::Window& g) {
  const size_t r = g.rank();
  std::vector<AxisTaps> taps(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t pb = g.pads[d], pe = g.pads[r + d];
    taps[d].idx.resize(g.out[d]);
    taps[d].padded.resize(g.out[d]);
    for (int64_t o = 0; o < g.out[d]; ++o) {
      for (int64_t k = 0; k < g.kernel[d]; ++k) {
        const int64_t i = o * g.strides[d] - pb + k * g.dilations[d];
        if (i >= 0 && i < g.in[d]) taps[d].idx[o].push_back(i);
        if (i >= -pb && i < g.in[d] + pe) ++taps[d].padded[o];
      }
    }
  }
  return taps;
}

template <class T>
void pool_typed(KernelContext& ctx, PoolKind kind, const PoolAttrs& a) {
  // Integers (MaxPool int8/uint8) compare natively; float types in float (double for double).
  using A = std::conditional_t<std::is_integral_v<T>, T, acc_t<T>>;
  const Tensor& x = ctx.input(0);
  if (x.dims().size() < 3) ctx.error(cat("X has rank ", x.dims().size(), ", expected at least 3 (N, C, spatial...)"));
  const size_t r = x.dims().size() - 2;
  nn::Window g = nn::make_window(a.w, Dims(x.dims().begin() + 2, x.dims().end()));
  const int64_t N = x.dims()[0], C = x.dims()[1];
  Dims ydims{N, C};
  ydims.insert(ydims.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.allocate_output(0, x.dtype(), ydims);
  const bool want_idx = kind == PoolKind::Max && ctx.num_outputs() > 1 && ctx.output_wanted(1);
  int64_t* yi = want_idx ? ctx.allocate_output(1, DataType::Int64, ydims).template mutable_data<int64_t>() : nullptr;
  if (y.element_count() == 0) return;
  const std::vector<AxisTaps> taps = make_taps(g);
  const int64_t in_size = product(g.in), out_size = product(g.out);
  const Dims in_strides = strides_of(g.in);
  Dims col_strides(r);  // column-major strides for storage_order=1
  {
    int64_t s = 1;
    for (size_t d = 0; d < r; ++d) {
      col_strides[d] = s;
      s *= g.in[d];
    }
  }
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  const A p = static_cast<A>(a.p);
  Dims o(r), t(r);
  std::vector<const std::vector<int64_t>*> lists(r);
  for (int64_t plane = 0; plane < N * C; ++plane) {
    const T* xp = px + plane * in_size;
    std::fill(o.begin(), o.end(), 0);
    for (int64_t q = 0; q < out_size; ++q) {
      bool empty = false;
      int64_t padded = 1;
      for (size_t d = 0; d < r; ++d) {
        lists[d] = &taps[d].idx[o[d]];
        padded *= taps[d].padded[o[d]];
        if (lists[d]->empty()) empty = true;
      }
      A acc = kind == PoolKind::Max ? std::numeric_limits<A>::lowest() : A(0);
      int64_t best = -1, count = 0;
      if (!empty) {
        std::fill(t.begin(), t.end(), 0);
        while (true) {
          int64_t off = 0;
          for (size_t d = 0; d < r; ++d) off += (*lists[d])[t[d]] * in_strides[d];
          const A v = nn::to_acc<A>(xp[off]);
          if (kind == PoolKind::Max) {
            if (best < 0 || v > acc) {
              acc = v;
              best = off;
            }
          } else if (kind == PoolKind::Average) {
            acc += v;
          } else {
            if constexpr (std::is_unsigned_v<A>) acc += std::pow(v, p);
            else acc += std::pow(std::abs(v), p);
          }
          ++count;
          size_t d = r;
          while (d-- > 0) {
            if (++t[d] < static_cast<int64_t>(lists[d]->size())) break;
            t[d] = 0;
          }
          if (d == static_cast<size_t>(-1)) break;
        }
      }
      if (kind == PoolKind::Average) {
        const int64_t div = a.count_include_pad ? padded : count;
        acc = div > 0 ? static_cast<A>(acc / static_cast<A>(div)) : A(0);
      } else if (kind == PoolKind::Lp) {
        acc = std::pow(acc, A(1) / p);
      }
      py[plane * out_size + q] = nn::from_acc<T>(acc);
      if (yi) {
        int64_t idx = -1;
        if (best >= 0) {
          idx = best;
          if (a.storage_order == 1) {
            idx = 0;
            int64_t rem = best;
            for (size_t d = 0; d < r; ++d) {
              idx += (rem / in_strides[d]) * col_strides[d];
              rem %= in_strides[d];
            }
          }
          idx += plane * in_size;
        }
        yi[plane * out_size + q] = idx;
      }
      for (size_t d = r; d-- > 0;) {
        if (++o[d] < g.out[d]) break;
        o[d] = 0;
      }
    }
  }
}

// Float32 2-D MaxPool over NCHW planes (one output): the reference's rule (the first tap read in row-major window
// order, then any greater one; an all-padding window gives the lowest float) with the taps' bounds worked out per
// row, planes in parallel. oneDNN's NCHW pooling is a plain per-element loop far slower than this.
void max_pool_nchw(const Tensor& x, const nn::Window& g, Tensor& y) {
  const int64_t planes = x.dims()[0] * x.dims()[1], H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], sh = g.strides[0], sw = g.strides[1];
  const int64_t dh = g.dilations[0], dw = g.dilations[1], ph = g.pads[0], pw = g.pads[1];
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
#pragma omp parallel for schedule(static) if (planes > 1 && planes * OH * OW > (int64_t{1} << 15))
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* xp = px + plane * H * W;
    float* yp = py + plane * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = oh * sh - ph;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * sw - pw;
        float acc = std::numeric_limits<float>::lowest();
        bool first = true;
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t h = h0 + i * dh;
          if (h < 0 || h >= H) continue;
          const float* row = xp + h * W;
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t w = w0 + j * dw;
            if (w < 0 || w >= W) continue;
            const float v = row[w];
            if (first || v > acc) acc = v;
            first = false;
          }
        }
        yp[oh * OW + ow] = acc;
      }
    }
  }
}

void infer_pool(InferContext& ctx, PoolKind kind) {
  const Type& tx = ctx.input_type(0);
  PoolAttrs a = read_pool_attrs(ctx.attrs, kind, ctx.opset);
  Shape s;
  if (tx.shape.rank_known) {
    if (tx.shape.dims.size() < 3) ctx.error(cat("X has rank ", tx.shape.dims.size(), ", expected at least 3"));
    s = nn::window_out_shape(a.w, tx.shape, tx.shape.dims[1]);
  }
  ctx.set_output(0, Type::tensor(tx.elem, s));
  if (kind == PoolKind::Max) ctx.set_output(1, Type::tensor(DataType::Int64, s));
}

// ---- Global pools ----

template <class T>
void global_pool_typed(KernelContext& ctx, PoolKind kind, double pv) {
  using A = double;  // reductions accumulate in double
  const Tensor& x = ctx.input(0);
  if (x.dims().size() < 2) ctx.error(cat("X has rank ", x.dims().size(), ", expected at least 2 (N, C, ...)"));
  Dims ydims = x.dims();
  for (size_t i = 2; i < ydims.size(); ++i) ydims[i] = 1;
  Tensor& y = ctx.allocate_output(0, x.dtype(), ydims);
  const int64_t planes = x.dims()[0] * x.dims()[1], size = product(x.dims(), 2);
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = px + pl * size;
    A acc = kind == PoolKind::Max ? -std::numeric_limits<A>::infinity() : A(0);
    for (int64_t i = 0; i < size; ++i) {
      const A v = nn::to_acc<A>(xp[i]);
      if (kind == PoolKind::Max) acc = (i == 0 || v > acc) ? v : acc;
      else if (kind == PoolKind::Average) acc += v;
      else acc += std::pow(std::abs(v), pv);
    }
    if (kind == PoolKind::Average) acc = size > 0 ? acc / static_cast<A>(size) : A(0);
    if (kind == PoolKind::Lp) acc = std::pow(acc, 1.0 / pv);
    py[pl] = nn::from_acc<T>(acc);
  }
}

void infer_global_pool(InferContext& ctx) {
  const Type& tx = ctx.input_type(0);
  Shape s = tx.shape;
  if (s.rank_known) {
    if (s.dims.size() < 2) ctx.error(cat("X has rank ", s.dims.size(), ", expected at least 2"));
    for (size_t i = 2; i < s.dims.size(); ++i) s.dims[i] = known_dim(1);
  }
  ctx.set_output(0, Type::tensor(tx.elem, s));
}

// The reference pools, on every element type they take.
void run_pool(KernelContext& ctx, PoolKind kind, const PoolAttrs& a) {
  visit_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || is_small_float_v<T> || std::is_same_v<T, int8_t> ||
                  std::is_same_v<T, uint8_t>)
      pool_typed<T>(ctx, kind, a);
    else
      ctx.error(cat("element type ", ctx.input(0).dtype(), " is not supported"));
  });
}

}  // namespace

void register_pool(Registry& r) {
  using D = DataType;
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> fb = {D::Float16, D::Float, D::Double, D::BFloat16};
  const std::vector<DataType> f8 = {D::Float16, D::Float, D::Double, D::Int8, D::UInt8};
  const std::vector<DataType> fb8 = {D::Float16, D::Float, D::Double, D::Int8, D::UInt8, D::BFloat16};

  auto pool_def = [&](const char* name, PoolKind kind, std::initializer_list<int> versions,
                      const std::vector<DataType>& types) {
    auto infer = [kind](InferContext& ctx) { infer_pool(ctx, kind); };
    auto kernel = [kind](const KernelInit& init) {
      PoolAttrs a = read_pool_attrs(init.attrs, kind, init.opset);
      // Float 2-D max pools with one output run max_pool_nchw; average pools run on oneDNN (NCHW) when the window
      // has its exact form.
      const bool one_output = init.node.outputs.size() < 2 || !init.node.outputs[1];
      if (!init.reference_only && kind != PoolKind::Lp && one_output && a.w.kernel.size() == 2) {
        const auto fast_kind = kind == PoolKind::Max   ? kernels::PoolShape::Kind::Max
                               : a.count_include_pad ? kernels::PoolShape::Kind::AverageIncludePad
                                                     : kernels::PoolShape::Kind::AverageExcludePad;
        auto cache = std::make_shared<nn::PoolCache>();
        return make_kernel([kind, a, fast_kind, cache](KernelContext& ctx) {
          const Tensor& x = ctx.input(0);
          if (x.dtype() == DataType::Float && x.dims().size() == 4 && kind == PoolKind::Max) {
            const nn::Window g = nn::make_window(a.w, Dims(x.dims().begin() + 2, x.dims().end()));
            ctx.set_output(0, allocate_for_overwrite(DataType::Float, {x.dims()[0], x.dims()[1], g.out[0], g.out[1]}));
            max_pool_nchw(x, g, ctx.outputs()[0].tensor);
            return;
          }
          if (x.dtype() == DataType::Float && x.dims().size() == 4) {
            const Dims& d = x.dims();
            if (auto s = nn::onednn_pool_shape(a.w, fast_kind, false, d[0], d[1], d[2], d[3])) {
              ctx.set_output(0, allocate_for_overwrite(DataType::Float, {s->N, s->C, s->out[0], s->out[1]}));
              cache->get(*s).run(x.data<float>(), ctx.outputs()[0].tensor.mutable_data<float>());
              return;
            }
          }
          run_pool(ctx, kind, a);
        });
      }
      return make_kernel([kind, a](KernelContext& ctx) { run_pool(ctx, kind, a); });
    };
    add_versions(r, "", name, versions, {{{0}, types}}, infer, kernel);
  };
  pool_def("AveragePool", PoolKind::Average, {1, 7, 10, 11, 19}, f);
  pool_def("AveragePool", PoolKind::Average, {22}, fb);
  pool_def("MaxPool", PoolKind::Max, {1, 8, 10, 11}, f);
  pool_def("MaxPool", PoolKind::Max, {12}, f8);
  pool_def("MaxPool", PoolKind::Max, {22}, fb8);
  pool_def("LpPool", PoolKind::Lp, {1, 2, 11, 18}, f);
  pool_def("LpPool", PoolKind::Lp, {22}, fb);

  auto global_def = [&](const char* name, PoolKind kind, std::initializer_list<int> versions,
                        const std::vector<DataType>& types) {
    auto kernel = [kind](const KernelInit& init) {
      const double p = kind == PoolKind::Lp ? read_p(init.attrs) : 2.0;
      return make_kernel([kind, p](KernelContext& ctx) {
        nn::visit_float(ctx.input(0).dtype(), [&](auto tag) { global_pool_typed<decltype(tag)>(ctx, kind, p); });
      });
    };
    add_versions(r, "", name, versions, {{{0}, types}}, infer_global_pool, kernel);
  };
  global_def("GlobalAveragePool", PoolKind::Average, {1}, f);
  global_def("GlobalAveragePool", PoolKind::Average, {22}, fb);
  global_def("GlobalMaxPool", PoolKind::Max, {1}, f);
  global_def("GlobalMaxPool", PoolKind::Max, {22}, fb);
  global_def("GlobalLpPool", PoolKind::Lp, {1, 2}, f);
  global_def("GlobalLpPool", PoolKind::Lp, {22}, fb);
  r.set_fast_kernels("", "MaxPool", {"onyx's NCHW loops for float32 2-D pools with one output"});
  r.set_fast_kernels("", "AveragePool", {"oneDNN pooling for float32 2-D windows of its exact form"});
}

}  // namespace onyx::ops
