// ai.onnx Conv (1, 11, 22) and ConvTranspose (1, 11, 22), 1-D/2-D/3-D (any spatial rank).
// Conv: X (N, C, D1..Dn), W (M, C/group, k1..kn), optional B (M). Attributes auto_pad (NOTSET, SAME_UPPER,
//   SAME_LOWER, VALID), dilations, group, kernel_shape (default: W's spatial dims), pads, strides.
// ConvTranspose: W is (C, M/group, k...); extra attributes output_padding and output_shape. With output_shape (or
//   SAME_* auto_pad, which asks for output = input * stride) the pads come from
//   total = stride*(in-1) + output_padding + (k-1)*dilation + 1 - out: SAME_UPPER puts floor(total/2) first,
//   otherwise total - floor(total/2) goes first.
// v1 and v11 take float16/float/double (v11 only refined the text on pads and kernel_shape); v22 adds bfloat16.
// Reference: plain loops over the kernel taps, summed in double and rounded once.
// Fast kernels: float32 1-D and 2-D Conv with constant W (and B) runs on oneDNN (kernels/conv.hpp), weights packed
// at session creation; float32 ConvTranspose (1-D to 3-D) on oneDNN's deconvolution (kernels/conv_transpose.hpp).
// Other element types and what those paths do not take run im2col + the blocked GEMM (Conv) and the blocked GEMM
// + col2im (ConvTranspose) of kernels/blocked_gemm.hpp, in float (double for double).
#include <mutex>

#include "kernels/blocked_gemm.hpp"
#include "kernels/conv.hpp"
#include "kernels/conv_transpose.hpp"
#include "kernels/gemm.hpp"
#include "ir/tensor_alloc.hpp"
#include "ops/nn/compute_type.hpp"
#include "ops/nn/conv_epilogue.hpp"
#include "ops/nn/plain_product.hpp"
#include "ops/nn/window.hpp"

namespace onyx::ops {
namespace {

using nn::acc_t;
using nn::AccIn;
using nn::AccOut;
using nn::AutoPad;
using nn::WindowAttrs;

struct ConvAttrs {
  WindowAttrs w;
  int64_t group = 1;
  Dims output_padding, output_shape;  // ConvTranspose
};

ConvAttrs read_conv_attrs(const AttributeView& a, bool transpose) {
  ConvAttrs c;
  c.w = nn::read_window_attrs(a, true, false);
  c.group = a.get_int("group", 1);
  if (c.group < 1) fail("attribute 'group' is ", c.group, ", expected at least 1");
  if (transpose) {
    c.output_padding = a.get_ints("output_padding", Dims{});
    c.output_shape = a.get_ints("output_shape", Dims{});
  }
  return c;
}

// Row r of the im2col matrix (channel c, kernel position kc) over output positions [p0, p1).
template <class A>
void im2col_rows(const A* x, const nn::Window& g, int64_t channels, int64_t p0, int64_t p1, A* col) {
  const size_t r = g.rank();
  const int64_t kprod = product(g.kernel), in_size = product(g.in);
  const int64_t n = p1 - p0;
  Dims start(r), kc(r), koff(r), idx(r);
  {
    int64_t p = p0;
    for (size_t d = r; d-- > 0;) {
      start[d] = p % g.out[d];
      p /= g.out[d];
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    const A* base = x + c * in_size;
    for (int64_t k = 0; k < kprod; ++k) {
      int64_t t = k;
      for (size_t d = r; d-- > 0;) {
        kc[d] = t % g.kernel[d];
        t /= g.kernel[d];
        koff[d] = kc[d] * g.dilations[d] - g.pads[d];
      }
      A* dst = col + (c * kprod + k) * n;
      idx = start;
      const size_t last = r - 1;
      int64_t p = 0;
      while (p < n) {
        // Offset of the row start for the leading dims; then a run along the last dim.
        int64_t off = 0;
        bool valid = true;
        for (size_t d = 0; d < last; ++d) {
          int64_t i = idx[d] * g.strides[d] + koff[d];
          if (i < 0 || i >= g.in[d]) valid = false;
          off = off * g.in[d] + i;
        }
        const int64_t run = std::min(n - p, g.out[last] - idx[last]);
        if (!valid) {
          std::fill(dst + p, dst + p + run, A(0));
        } else {
          const A* row = base + off * g.in[last];
          const int64_t s = g.strides[last], ko = koff[last], lim = g.in[last];
          for (int64_t q = 0; q < run; ++q) {
            int64_t i = (idx[last] + q) * s + ko;
            dst[p + q] = (i >= 0 && i < lim) ? row[i] : A(0);
          }
        }
        p += run;
        idx[last] += run;
        for (size_t d = last; d > 0 && idx[d] >= g.out[d]; --d) {
          idx[d] = 0;
          ++idx[d - 1];
        }
      }
    }
  }
}

bool is_pointwise(const nn::Window& g) {
  for (size_t i = 0; i < g.rank(); ++i)
    if (g.kernel[i] != 1 || g.strides[i] != 1 || g.pads[i] != 0 || g.pads[g.rank() + i] != 0) return false;
  return true;
}

Dims kernel_from(const ConvAttrs& a, const Dims& w, size_t rank) {
  Dims k(w.begin() + 2, w.end());
  if (!a.w.kernel.empty() && a.w.kernel != k)
    fail("kernel_shape ", shape_of(a.w.kernel).to_string(), " does not match the weight's spatial dims ",
         shape_of(k).to_string());
  if (k.size() != rank) fail("W has ", k.size(), " spatial dims, X has ", rank);
  return k;
}

// ---- Conv ----

void infer_conv(InferContext& ctx) {
  const Type& tx = ctx.input_type(0);
  const Type& tw = ctx.input_type(1);
  ConvAttrs a = read_conv_attrs(ctx.attrs, false);
  Shape s;
  if (tx.shape.rank_known) {
    if (tx.shape.dims.size() < 3) ctx.error(cat("X has rank ", tx.shape.dims.size(), ", expected at least 3"));
    const size_t r = tx.shape.dims.size() - 2;
    Dim m;
    if (tw.shape.rank_known) {
      if (tw.shape.dims.size() != r + 2) ctx.error(cat("W has rank ", tw.shape.dims.size(), ", expected ", r + 2));
      m = tw.shape.dims[0];
      if (a.w.kernel.empty()) {
        for (size_t i = 0; i < r; ++i) {
          if (!tw.shape.dims[2 + i].value) break;
          a.w.kernel.push_back(*tw.shape.dims[2 + i].value);
        }
      }
      const Dim& cw = tw.shape.dims[1];
      const Dim& cx = tx.shape.dims[1];
      int64_t channels = 0;  // a declared dim times group may overflow: then it cannot match either
      if (cw.value && cx.value && (__builtin_mul_overflow(*cw.value, a.group, &channels) || channels != *cx.value))
        ctx.error(cat("X has ", *cx.value, " channels; W expects ", *cw.value, " x group ", a.group));
    }
    if (a.w.kernel.size() == r) {
      s = nn::window_out_shape(a.w, tx.shape, m);
    } else {
      s.rank_known = true;
      s.dims.assign(r + 2, Dim{});
      s.dims[0] = tx.shape.dims[0];
      s.dims[1] = m;
    }
  }
  ctx.set_output(0, Type::tensor(tx.elem, s));
}

// A run of a convolution (Geom: its window) or of a transposed one (TransposeGeom): the inputs checked against
// each other and the attributes, Y allocated.
template <class Geom>
struct ConvRun {
  const Tensor& x;
  const Tensor& w;
  const Tensor* b;
  Tensor& y;
  Geom g;
  int64_t N, C, M, G;  // images, input and output channels, groups
};

ConvRun<nn::Window> conv_run(KernelContext& ctx, const ConvAttrs& a) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (x.dims().size() < 3) ctx.error(cat("X has rank ", x.dims().size(), ", expected at least 3"));
  if (w.dims().size() != x.dims().size()) ctx.error(cat("W has rank ", w.dims().size(), ", X has ", x.dims().size()));
  if (w.dtype() != x.dtype()) ctx.error(cat("W has element type ", w.dtype(), ", X has ", x.dtype()));
  const size_t r = x.dims().size() - 2;
  const int64_t N = x.dims()[0], C = x.dims()[1], M = w.dims()[0], G = a.group;
  if (C % G != 0 || M % G != 0) ctx.error(cat("channels (", C, " in, ", M, " out) are not divisible by group ", G));
  if (w.dims()[1] != C / G) ctx.error(cat("W has ", w.dims()[1], " input channels per group, expected ", C / G));
  if (b) {
    if (b->dtype() != x.dtype()) ctx.error(cat("B has element type ", b->dtype(), ", X has ", x.dtype()));
    if (b->dims() != Dims{M}) ctx.error(cat("B has shape ", shape_of(b->dims()).to_string(), ", expected [", M, "]"));
  }
  WindowAttrs wa = a.w;
  wa.kernel = kernel_from(a, w.dims(), r);
  nn::Window g = nn::make_window(wa, Dims(x.dims().begin() + 2, x.dims().end()));
  Dims ydims{N, M};
  ydims.insert(ydims.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.allocate_output(0, x.dtype(), ydims);
  return {x, w, b, y, std::move(g), N, C, M, G};
}

// Adds B (when given) to every output position of each output channel of a run's result `y` (N, M, positions).
template <class A, class T, class Geom>
void add_bias(const ConvRun<Geom>& c, int64_t positions, A* y) {
  if (!c.b) return;
  AccIn<A, T> ib(*c.b);
  for (int64_t nm = 0; nm < c.N * c.M; ++nm) {
    A* row = y + nm * positions;
    const A bv = ib.data()[nm % c.M];
    for (int64_t p = 0; p < positions; ++p) row[p] += bv;
  }
}

// im2col and the blocked GEMM, in float (double for double).
template <class T>
void conv_blocked(const ConvRun<nn::Window>& c) {
  using A = acc_t<T>;
  const nn::Window& g = c.g;
  const int64_t in_size = product(g.in), out_size = product(g.out), kprod = product(g.kernel);
  const int64_t C = c.C, M = c.M, G = c.G, Cg = C / G, Mg = M / G, Kdim = Cg * kprod;
  AccIn<A, T> ix(c.x), iw(c.w);
  AccOut<A, T> oy(c.y);
  const bool pointwise = is_pointwise(g);
  // Output positions per im2col chunk: keeps the column buffer near 8 MiB.
  const int64_t chunk = std::max<int64_t>(64, (int64_t{1} << 21) / std::max<int64_t>(1, Kdim));
  std::vector<A> col;
  for (int64_t n = 0; n < c.N; ++n) {
    for (int64_t gi = 0; gi < G; ++gi) {
      const A* xg = ix.data() + (n * C + gi * Cg) * in_size;
      const A* wg = iw.data() + gi * Mg * Kdim;
      A* yg = oy.data() + (n * M + gi * Mg) * out_size;
      if (pointwise) {
        kernels::blocked_gemm(Mg, out_size, Kdim, wg, Kdim, xg, in_size, yg, out_size);
        continue;
      }
      for (int64_t p0 = 0; p0 < out_size; p0 += chunk) {
        const int64_t p1 = std::min(out_size, p0 + chunk);
        col.resize(static_cast<size_t>(Kdim * (p1 - p0)));
        im2col_rows(xg, g, Cg, p0, p1, col.data());
        kernels::blocked_gemm(Mg, p1 - p0, Kdim, wg, Kdim, col.data(), p1 - p0, yg + p0, out_size);
      }
    }
  }
  add_bias<A, T>(c, out_size, oy.data());
  oy.commit();
}

// Kernel tap `k` (row-major over `kernel`) as one index per spatial dim.
Dims tap_of(int64_t k, const Dims& kernel) {
  Dims tap(kernel.size());
  for (size_t d = kernel.size(); d-- > 0;) {
    tap[d] = k % kernel[d];
    k /= kernel[d];
  }
  return tap;
}

// For each position p of the spatial dims `from` (row-major), the row-major offset in the spatial dims `to` of
// p * strides + tap * dilations - pads (the leading pads), or -1 where that falls outside `to`. A convolution's
// tap reads its input there (from: output, to: input); a transposed convolution's writes its output there (from:
// input, to: output).
std::vector<int64_t> tap_offsets(const Dims& from, const Dims& to, const Dims& tap, const Dims& strides,
                                 const Dims& dilations, const Dims& pads) {
  const size_t r = from.size();
  std::vector<int64_t> offsets(static_cast<size_t>(product(from)));
  Dims p(r, 0);
  for (int64_t& off : offsets) {
    off = 0;
    for (size_t d = 0; d < r && off >= 0; ++d) {
      const int64_t i = p[d] * strides[d] + tap[d] * dilations[d] - pads[d];
      off = i < 0 || i >= to[d] ? -1 : off * to[d] + i;
    }
    for (size_t d = r; d-- > 0;) {
      if (++p[d] < from[d]) break;
      p[d] = 0;
    }
  }
  return offsets;
}

// Y = the sums (N, M, positions) plus B, each rounded once to T.
template <class T, class Geom>
void store_with_bias(const ConvRun<Geom>& c, int64_t positions, const std::vector<double>& sums) {
  std::optional<nn::SumIn<T>> b;
  if (c.b) b.emplace(*c.b);
  T* y = c.y.template mutable_data<T>();
  for (int64_t nm = 0; nm < c.N * c.M; ++nm) {
    const double bv = b ? b->data()[nm % c.M] : 0.0;
    for (int64_t p = nm * positions; p < (nm + 1) * positions; ++p) y[p] = nn::store_sum<T>(sums[p] + bv);
  }
}

// The reference, for both: for each kernel tap, each output channel and each input channel of its group, the
// weight times the input positions, summed in double into the output positions that the tap pairs them with. A
// convolution's output position reads the input where the tap lands; a transposed convolution's input position
// writes the output there.
template <class T, bool kTranspose, class Geom>
void conv_plain(const ConvRun<Geom>& c) {
  const Geom& g = c.g;
  const int64_t in_size = product(g.in), out_size = product(g.out), kprod = product(g.kernel);
  const int64_t C = c.C, M = c.M, Cg = C / c.G, Mg = M / c.G;
  nn::SumIn<T> x(c.x), w(c.w);
  std::vector<double> sums(static_cast<size_t>(c.N * M * out_size), 0.0);
  nn::LimitsCheck limits("in a convolution");
  for (int64_t k = 0; k < kprod; ++k) {
    const Dims tap = tap_of(k, g.kernel);
    const std::vector<int64_t> at = kTranspose ? tap_offsets(g.in, g.out, tap, g.strides, g.dilations, g.pads)
                                               : tap_offsets(g.out, g.in, tap, g.strides, g.dilations, g.pads);
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        double* acc = sums.data() + (n * M + m) * out_size;
        const int64_t gi = m / Mg;
        for (int64_t ci = 0; ci < Cg; ++ci) {
          // W is (M, C / group, kernel...), or (C, M / group, kernel...) when transposed.
          const double wv = w.data()[(kTranspose ? (gi * Cg + ci) * Mg + m % Mg : m * Cg + ci) * kprod + k];
          const double* xc = x.data() + (n * C + gi * Cg + ci) * in_size;
          if constexpr (kTranspose) {
            for (int64_t q = 0; q < in_size; ++q)
              if (at[q] >= 0) acc[at[q]] += wv * xc[q];
          } else {
            for (int64_t p = 0; p < out_size; ++p)
              if (at[p] >= 0) acc[p] += wv * xc[at[p]];
          }
          limits.add(kTranspose ? in_size : out_size);
        }
      }
  }
  store_with_bias<T>(c, out_size, sums);
}

void run_conv(KernelContext& ctx, const ConvAttrs& a, nn::Loops loops) {
  nn::visit_float(ctx.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    const ConvRun<nn::Window> c = conv_run(ctx, a);
    if (c.y.element_count() == 0) return;
    if (loops == nn::Loops::Blocked) conv_blocked<T>(c);
    else conv_plain<T, false>(c);
  });
}

// ---- ConvTranspose ----

struct TransposeGeom {
  Dims in, kernel, strides, dilations, pads, out;
};

TransposeGeom transpose_geom(const ConvAttrs& a, const Dims& in, const Dims& kernel) {
  const size_t r = in.size();
  WindowAttrs w = a.w;
  w.kernel = kernel;
  nn::complete_window_attrs(w, r);
  TransposeGeom g{in, kernel, w.strides, w.dilations, w.pads, {}};
  Dims op = a.output_padding;
  if (op.empty()) op.assign(r, 0);
  if (op.size() != r) fail("attribute 'output_padding' has ", op.size(), " values, expected ", r);
  for (int64_t v : op)
    if (v < 0 || v > (int64_t{1} << 31)) fail("attribute 'output_padding' has value ", v, ", expected 0..2^31");
  Dims target;
  if (!a.output_shape.empty()) {
    target = a.output_shape;
    if (target.size() == r + 2) target.erase(target.begin(), target.begin() + 2);
    if (target.size() != r) fail("attribute 'output_shape' has ", a.output_shape.size(), " values, expected ", r);
    for (int64_t v : target)
      if (v < 0 || v > (int64_t{1} << 40)) fail("attribute 'output_shape' has value ", v);
  } else if (w.auto_pad == AutoPad::SameUpper || w.auto_pad == AutoPad::SameLower) {
    for (size_t i = 0; i < r; ++i) target.push_back(in[i] * g.strides[i]);
  }
  for (size_t i = 0; i < r; ++i) {
    const int64_t full = g.strides[i] * (in[i] - 1) + op[i] + (kernel[i] - 1) * g.dilations[i] + 1;
    if (!target.empty()) {
      const int64_t total = full - target[i];
      const int64_t half = nn::floor_div(total, 2);
      if (w.auto_pad == AutoPad::SameUpper) {
        g.pads[i] = half;
        g.pads[r + i] = total - half;
      } else {
        g.pads[i] = total - half;
        g.pads[r + i] = half;
      }
      g.out.push_back(target[i]);
    } else {
      if (w.auto_pad == AutoPad::Valid) g.pads[i] = g.pads[r + i] = 0;
      g.out.push_back(full - g.pads[i] - g.pads[r + i]);
    }
    if (g.out[i] < 0 || in[i] < 0) fail("ConvTranspose output dim ", i, " would be ", g.out[i]);
  }
  return g;
}

void infer_conv_transpose(InferContext& ctx) {
  const Type& tx = ctx.input_type(0);
  const Type& tw = ctx.input_type(1);
  ConvAttrs a = read_conv_attrs(ctx.attrs, true);
  Shape s;
  if (tx.shape.rank_known) {
    if (tx.shape.dims.size() < 3) ctx.error(cat("X has rank ", tx.shape.dims.size(), ", expected at least 3"));
    const size_t r = tx.shape.dims.size() - 2;
    s.rank_known = true;
    s.dims.assign(r + 2, Dim{});
    s.dims[0] = tx.shape.dims[0];
    std::optional<Dims> wd = static_dims(tw);
    if (tw.shape.rank_known && tw.shape.dims.size() != r + 2)
      ctx.error(cat("W has rank ", tw.shape.dims.size(), ", expected ", r + 2));
    int64_t channels = 0;
    if (tw.shape.rank_known && tw.shape.dims[1].value) {
      if (__builtin_mul_overflow(*tw.shape.dims[1].value, a.group, &channels))
        ctx.error(cat("W's ", *tw.shape.dims[1].value, " output channels per group x group ", a.group, " overflow int64"));
      s.dims[1] = known_dim(channels);
    }
    Dims kernel = a.w.kernel;
    if (kernel.empty() && wd) kernel.assign(wd->begin() + 2, wd->end());
    Dims in;
    for (size_t i = 0; i < r; ++i)
      if (tx.shape.dims[2 + i].value) in.push_back(*tx.shape.dims[2 + i].value);
    if (kernel.size() == r && in.size() == r) {
      TransposeGeom g = transpose_geom(a, in, kernel);
      for (size_t i = 0; i < r; ++i) s.dims[2 + i] = known_dim(g.out[i]);
    } else if (!a.output_shape.empty()) {
      Dims t = a.output_shape;
      if (t.size() == r + 2) t.erase(t.begin(), t.begin() + 2);
      if (t.size() == r)
        for (size_t i = 0; i < r; ++i) s.dims[2 + i] = known_dim(t[i]);
    }
  }
  ctx.set_output(0, Type::tensor(tx.elem, s));
}

ConvRun<TransposeGeom> conv_transpose_run(KernelContext& ctx, const ConvAttrs& a) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (x.dims().size() < 3) ctx.error(cat("X has rank ", x.dims().size(), ", expected at least 3"));
  if (w.dims().size() != x.dims().size()) ctx.error(cat("W has rank ", w.dims().size(), ", X has ", x.dims().size()));
  if (w.dtype() != x.dtype()) ctx.error(cat("W has element type ", w.dtype(), ", X has ", x.dtype()));
  const size_t r = x.dims().size() - 2;
  const int64_t N = x.dims()[0], C = x.dims()[1], G = a.group;
  if (w.dims()[0] != C) ctx.error(cat("W has ", w.dims()[0], " input channels, X has ", C));
  if (C % G != 0) ctx.error(cat("input channels ", C, " are not divisible by group ", G));
  const int64_t M = w.dims()[1] * G;
  if (b) {
    if (b->dtype() != x.dtype()) ctx.error(cat("B has element type ", b->dtype(), ", X has ", x.dtype()));
    if (b->dims() != Dims{M}) ctx.error(cat("B has shape ", shape_of(b->dims()).to_string(), ", expected [", M, "]"));
  }
  TransposeGeom g = transpose_geom(a, Dims(x.dims().begin() + 2, x.dims().end()), kernel_from(a, w.dims(), r));
  Dims ydims{N, M};
  ydims.insert(ydims.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.allocate_output(0, x.dtype(), ydims);
  return {x, w, b, y, std::move(g), N, C, M, G};
}

// The blocked GEMM (W^T times a chunk of input positions) and col2im, in float (double for double).
template <class T>
void conv_transpose_blocked(const ConvRun<TransposeGeom>& c) {
  using A = acc_t<T>;
  const TransposeGeom& g = c.g;
  const size_t r = g.in.size();
  const int64_t C = c.C, M = c.M, G = c.G, Cg = C / G, Mg = M / G;
  const int64_t in_size = product(g.in), out_size = product(g.out), kprod = product(g.kernel);
  const int64_t rows = Mg * kprod;
  AccIn<A, T> ix(c.x), iw(c.w);
  AccOut<A, T> oy(c.y);
  // W_g^T: (Mg*kprod) x Cg for each group.
  std::vector<A> wt(static_cast<size_t>(G * rows * Cg));
  for (int64_t gi = 0; gi < G; ++gi)
    for (int64_t ci = 0; ci < Cg; ++ci)
      for (int64_t q = 0; q < rows; ++q) wt[(gi * rows + q) * Cg + ci] = iw.data()[((gi * Cg + ci) * rows) + q];
  std::vector<Dims> taps;
  for (int64_t k = 0; k < kprod; ++k) taps.push_back(tap_of(k, g.kernel));
  // Input positions per GEMM + col2im chunk: keeps the column buffer near 8 MiB.
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 21) / std::max<int64_t>(1, rows));
  std::vector<A> col;
  Dims idx(r), start(r);
  for (int64_t n = 0; n < c.N; ++n) {
    for (int64_t gi = 0; gi < G; ++gi) {
      for (int64_t q0 = 0; q0 < in_size; q0 += chunk) {
        const int64_t q1 = std::min(in_size, q0 + chunk), cn = q1 - q0;
        col.assign(static_cast<size_t>(rows * cn), A(0));
        kernels::blocked_gemm(rows, cn, Cg, wt.data() + gi * rows * Cg, Cg,
                              ix.data() + (n * C + gi * Cg) * in_size + q0, in_size, col.data(), cn);
        for (int64_t q = q0, d = static_cast<int64_t>(r); d-- > 0;) {
          start[d] = q % g.in[d];
          q /= g.in[d];
        }
        // col2im: scatter-add each (m, kernel position, input position) into the output.
        for (int64_t m = 0; m < Mg; ++m) {
          A* ym = oy.data() + (n * M + gi * Mg + m) * out_size;
          for (int64_t k = 0; k < kprod; ++k) {
            const Dims& kc = taps[k];
            const A* src = col.data() + (m * kprod + k) * cn;
            idx = start;
            for (int64_t q = 0; q < cn; ++q) {
              int64_t off = 0;
              bool valid = true;
              for (size_t d = 0; d < r; ++d) {
                int64_t o = idx[d] * g.strides[d] + kc[d] * g.dilations[d] - g.pads[d];
                if (o < 0 || o >= g.out[d]) {
                  valid = false;
                  break;
                }
                off = off * g.out[d] + o;
              }
              if (valid) ym[off] += src[q];
              for (size_t d = r; d-- > 0;) {
                if (++idx[d] < g.in[d]) break;
                idx[d] = 0;
              }
            }
          }
        }
      }
    }
  }
  add_bias<A, T>(c, out_size, oy.data());
  oy.commit();
}

void run_conv_transpose(KernelContext& ctx, const ConvAttrs& a, nn::Loops loops) {
  nn::visit_float(ctx.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    const ConvRun<TransposeGeom> c = conv_transpose_run(ctx, a);
    if (c.y.element_count() == 0) return;
    if (loops == nn::Loops::Blocked) conv_transpose_blocked<T>(c);
    else conv_plain<T, true>(c);
  });
}

// Float32 1-D and 2-D Conv with constant W (and constant or no B) on oneDNN; other runs take the blocked GEMM. A
// 1-D convolution (audio front ends: spectrograms as strided convolutions over a signal) runs as a 2-D one over a
// single row.
class FastConv : public Kernel {
 public:
  // `epilogue`: what follows the bias inside the kernel (FusedConv's activation); none for Conv.
  FastConv(ConvAttrs a, const Tensor& w, const Tensor* b, const KernelInit& init, kernels::Epilogue epilogue = {})
      : a_(std::move(a)), w_(w), b_(b), epilogue_(std::move(epilogue)) {
    if (b_) bias_.assign(b_->data<float>(), b_->data<float>() + b_->element_count());
    prepare(init);
  }

  // W is packed for the static input shape: a run with that W and shape takes the fast path, which reads the pack.
  bool keeps_copy_of_input(size_t i) const override { return i == 1 && prepared_; }

  void run(KernelContext& ctx) override {
    // The blocked path validates and reports like the reference, and computes the odd case.
    if (!run_fast(ctx)) run_conv(ctx, a_, nn::Loops::Blocked);
  }

  // False (nothing set) where this run's inputs are not the case the fast path takes.
  bool run_fast(KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const bool same_b = b ? (b_ && b->bytes().data() == b_->bytes().data()) : !b_;
    if (x.dtype() != DataType::Float || x.dims().size() != w_.dims().size() ||
        ctx.input(1).bytes().data() != w_.bytes().data() || !same_b || x.dims()[1] != a_.group * w_.dims()[1] ||
        x.dims()[0] == 0)
      return false;
    const Geometry* g = geometry(x.dims());
    if (!g) return false;
    const kernels::PackedConv& conv = *g->conv;
    Dims ydims = {x.dims()[0], w_.dims()[0], g->out[0], g->out[1]};
    if (one_d()) ydims.erase(ydims.begin() + 2);
    ctx.set_output(0, allocate_for_overwrite(DataType::Float, ydims));
    conv.run_nchw(x.data<float>(), x.dims()[0], g->in[0], g->in[1], ctx.outputs()[0].tensor.mutable_data<float>());
    return true;
  }

 private:
  // A run's window (as 2-D) and the packed convolution for it.
  struct Geometry {
    Dims in, out;
    const kernels::PackedConv* conv;
  };

  // The geometry for input dims `xd` (N, C, spatial...), remembered per spatial size: runs on one shape, the
  // common case, neither rebuild the window nor allocate. Null where the fast path does not take it.
  const Geometry* geometry(const Dims& xd) {
    const std::array<int64_t, 2> key{xd[2], xd.size() > 3 ? xd[3] : -1};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = geometries_.find(key);
      if (it != geometries_.end()) return it->second ? &*it->second : nullptr;
    }
    std::optional<Geometry> made;
    if (auto g = window(Dims(xd.begin() + 2, xd.end()))) made = Geometry{g->in, g->out, &packed(*g)};
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = geometries_.emplace(key, std::move(made)).first;
    return it->second ? &*it->second : nullptr;
  }

  bool one_d() const { return w_.dims().size() == 3; }

  // The 2-D window of input planes (or rows, for 1-D) `spatial`, when the fast path takes it.
  std::optional<nn::Window> window(const Dims& spatial) const {
    WindowAttrs wa = a_.w;
    wa.kernel = kernel_from(a_, w_.dims(), spatial.size());
    nn::Window g = nn::make_window(wa, spatial);
    if (one_d()) {  // the row as a plane of height 1
      g.kernel.insert(g.kernel.begin(), 1);
      g.strides.insert(g.strides.begin(), 1);
      g.dilations.insert(g.dilations.begin(), 1);
      g.pads = {0, g.pads[0], 0, g.pads[1]};
      g.in.insert(g.in.begin(), 1);
      g.out.insert(g.out.begin(), 1);
    }
    if (g.out[0] <= 0 || g.out[1] <= 0 || g.kernel[0] != (one_d() ? 1 : w_.dims()[2]) || g.kernel[1] != w_.dims().back())
      return std::nullopt;
    return g;
  }

  // Static float32 input shapes get their primitive (and packed W) now, not on the first run.
  void prepare(const KernelInit& init) {
    const Type* x = init.input_types.empty() ? nullptr : init.input_types[0];
    std::optional<Dims> xd = x && x->elem == DataType::Float ? static_dims(*x) : std::nullopt;
    if (!xd || xd->size() != w_.dims().size() || (*xd)[0] <= 0 || (*xd)[1] != a_.group * w_.dims()[1]) return;
    const Dims& d = *xd;
    try {
      auto g = window(Dims(d.begin() + 2, d.end()));
      if (!g) return;
      packed(*g).prepare(d[0], g->in[0], g->in[1]);
      prepared_ = true;
    } catch (const Error&) {
      // An unusable window is reported by the run, with the input it gets.
    }
  }

  // One packed convolution per padding (auto_pad SAME pads depend on the input size).
  const kernels::PackedConv& packed(const nn::Window& g) {
    std::array<int64_t, 4> pads{g.pads[0], g.pads[1], g.pads[2], g.pads[3]};
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = convs_.find(pads);
    if (it != convs_.end()) return *it->second;
    kernels::ConvShape s;
    s.C = w_.dims()[1] * a_.group;
    s.M = w_.dims()[0];
    s.group = a_.group;
    s.kernel = {g.kernel[0], g.kernel[1]};
    s.strides = {g.strides[0], g.strides[1]};
    s.dilations = {g.dilations[0], g.dilations[1]};
    s.pads = pads;
    auto conv = std::make_unique<kernels::PackedConv>(w_.data<float>(), s, bias_, epilogue_);
    return *convs_.emplace(pads, std::move(conv)).first->second;
  }

  ConvAttrs a_;
  const Tensor& w_;
  const Tensor* b_;
  kernels::Epilogue epilogue_;
  std::vector<float> bias_;
  bool prepared_ = false;  // packed at creation for a static input shape
  std::mutex mutex_;
  std::map<std::array<int64_t, 4>, std::unique_ptr<kernels::PackedConv>> convs_;
  std::map<std::array<int64_t, 2>, std::optional<Geometry>> geometries_;  // by spatial size (-1: 1-D)
};

// Float32 ConvTranspose (1-D to 3-D) on oneDNN's deconvolution. A constant W is packed once (with the primitive
// for a static input shape at session creation); a fed W (or a feed replacing the constant one) is reordered at
// each run. Other element types, inputs the checks must report on, and geometries oneDNN does not take (negative
// leading pads from output_shape) run the blocked GEMM.
class FastConvTranspose : public Kernel {
 public:
  FastConvTranspose(ConvAttrs a, const KernelInit& init) : a_(std::move(a)) {
    const Tensor* w = init.input_value(1);
    if (!w || w->dtype() != DataType::Float || w->dims().size() < 3 || w->dims().size() > 5 ||
        w->element_count() == 0)
      return;
    try {
      const Dims& wd = w->dims();
      if (wd[0] % a_.group != 0) return;
      const kernels::ConvTransposeShape shape = shape_for(wd);
      w_ = w;
      packed_ = std::make_unique<kernels::PackedConvTranspose>(shape, w->data<float>());
      if (may_tile(shape)) {
        const int64_t C = wd[0], cols = static_cast<int64_t>(w->element_count()) / C;
        wt_.resize(w->element_count());
        for (int64_t c = 0; c < C; ++c)
          for (int64_t j = 0; j < cols; ++j) wt_[static_cast<size_t>(j * C + c)] = w->data<float>()[c * cols + j];
      }
      // A static input shape gets its primitive (and W its packed copy) now, not on the first run.
      const Type* x = init.input_types.empty() ? nullptr : init.input_types[0];
      std::optional<Dims> xd = x ? static_dims(*x) : std::nullopt;
      const bool has_b = init.node.inputs.size() > 2 && init.node.inputs[2];
      if (xd && xd->size() == wd.size() && (*xd)[1] == wd[0]) {
        const TransposeGeom g = transpose_geom(a_, Dims(xd->begin() + 2, xd->end()), shape.kernel);
        packed_->prepare(sizes((*xd)[0], g, has_b));
      }
    } catch (const Error&) {
      // Attributes the run's checks reject: they report them, with the input they get.
    }
  }

  void run(KernelContext& ctx) override {
    if (!fast_run(ctx)) run_conv_transpose(ctx, a_, nn::Loops::Blocked);
  }

 private:
  // The oneDNN shape for W's dims (C, M/group, k...); attributes that do not fit them throw.
  kernels::ConvTransposeShape shape_for(const Dims& wd) const {
    WindowAttrs w = a_.w;
    w.kernel = kernel_from(a_, wd, wd.size() - 2);
    nn::complete_window_attrs(w, wd.size() - 2);
    return {wd[0], wd[1] * a_.group, a_.group, w.kernel, w.strides, w.dilations};
  }

  static kernels::ConvTransposeSizes sizes(int64_t N, const TransposeGeom& g, bool bias) {
    return {N, g.in, g.out, Dims(g.pads.begin(), g.pads.begin() + static_cast<int64_t>(g.in.size())), bias};
  }

  // The oneDNN kernel for a fed W of these dims (made on first use).
  const kernels::PackedConvTranspose& unpacked(const Dims& wd) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = unpacked_.find(wd);
    if (it == unpacked_.end())
      it = unpacked_.emplace(wd, std::make_unique<kernels::PackedConvTranspose>(shape_for(wd), nullptr)).first;
    return *it->second;
  }

  // False when the blocked path must compute (or report on) this run's inputs.
  bool fast_run(KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (x.dtype() != DataType::Float || w.dtype() != DataType::Float || (b && b->dtype() != DataType::Float))
      return false;
    const Dims& xd = x.dims();
    const Dims& wd = w.dims();
    if (xd.size() < 3 || xd.size() > 5 || wd.size() != xd.size() || wd[0] != xd[1] || xd[1] % a_.group != 0 ||
        x.element_count() == 0 || w.element_count() == 0)
      return false;
    const int64_t M = wd[1] * a_.group;
    if (b && b->dims() != Dims{M}) return false;
    const size_t r = xd.size() - 2;
    TransposeGeom g;
    try {
      g = transpose_geom(a_, Dims(xd.begin() + 2, xd.end()), kernel_from(a_, wd, r));
    } catch (const Error&) {
      return false;
    }
    const bool packed = w_ && w.bytes().data() == w_->bytes().data() && wd == w_->dims();
    if (packed && !wt_.empty() && non_overlapping(g)) {
      run_as_product(x, b, M, g, ctx);
      return true;
    }
    const kernels::PackedConvTranspose& k = packed ? *packed_ : unpacked(wd);
    const kernels::ConvTransposeSizes sz = sizes(xd[0], g, b != nullptr);
    if (!k.prepare(sz)) return false;
    Dims yd{xd[0], M};
    yd.insert(yd.end(), g.out.begin(), g.out.end());
    ctx.set_output(0, allocate_for_overwrite(DataType::Float, yd));
    k.run_nchw(sz, x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr,
               ctx.outputs()[0].tensor.mutable_data<float>());
    return true;
  }

  // Whether the attributes allow windows that tile the output (checked again per run with the input's geometry):
  // only then is W's transpose for run_as_product worth making at creation.
  bool may_tile(const kernels::ConvTransposeShape& shape) const {
    if (a_.group != 1 || !a_.output_shape.empty() || a_.w.auto_pad == AutoPad::SameUpper ||
        a_.w.auto_pad == AutoPad::SameLower)
      return false;
    for (int64_t p : a_.output_padding)
      if (p != 0) return false;
    for (int64_t p : a_.w.pads)
      if (p != 0) return false;
    for (size_t i = 0; i < shape.kernel.size(); ++i)
      if (shape.kernel[i] != shape.strides[i] || shape.dilations[i] != 1) return false;
    return true;
  }

  // Windows that tile the output without overlap or gaps (kernel = stride, no dilation or padding: a decoder's 2x
  // upsampling), where each input pixel writes its own kernel-sized block.
  static bool non_overlapping(const TransposeGeom& g) {
    for (size_t i = 0; i < g.in.size(); ++i)
      if (g.kernel[i] != g.strides[i] || g.dilations[i] != 1 || g.out[i] != g.in[i] * g.strides[i] ||
          g.pads[i] != 0 || g.pads[g.in.size() + i] != 0)
        return false;
    return true;
  }

  // The same result as one matrix product per image, Z [M * kernel, pixels] = W^T [M * kernel, C] x X [C, pixels],
  // whose rows are then scattered to their kernel offsets (plus the bias). oneDNN's deconvolution is slow here:
  // with few output channels it computes mostly padding of its blocked layout.
  void run_as_product(const Tensor& x, const Tensor* b, int64_t M, const TransposeGeom& g, KernelContext& ctx) {
    const Dims& xd = x.dims();
    const int64_t N = xd[0], C = xd[1], kprod = product(g.kernel), pixels = product(g.in), rows = M * kprod;
    Dims yd{N, M};
    yd.insert(yd.end(), g.out.begin(), g.out.end());
    ctx.set_output(0, allocate_for_overwrite(DataType::Float, yd));
    float* y = ctx.outputs()[0].tensor.mutable_data<float>();
    std::vector<float> z(static_cast<size_t>(rows * pixels));
    const size_t r = g.in.size();
    const int64_t out_pixels = product(g.out);
    for (int64_t n = 0; n < N; ++n) {
      kernels::batched_matmul(wt_.data(), {rows, C}, x.data<float>() + n * C * pixels, {C, pixels}, z.data());
      float* yn = y + n * M * out_pixels;
#pragma omp parallel for schedule(static) if (rows * pixels > (int64_t{1} << 16))
      for (int64_t row = 0; row < rows; ++row) {
        const int64_t m = row / kprod;
        const float bias = b ? b->data<float>()[m] : 0.0f;
        Dims k(r), at(r, 0);
        for (int64_t rest = row % kprod, d = static_cast<int64_t>(r); d-- > 0;) {
          k[static_cast<size_t>(d)] = rest % g.kernel[static_cast<size_t>(d)];
          rest /= g.kernel[static_cast<size_t>(d)];
        }
        const float* src = z.data() + row * pixels;
        float* ym = yn + m * out_pixels;
        const int64_t last = g.in[r - 1], step = g.strides[r - 1];
        for (int64_t p = 0; p < pixels; p += last) {  // one input line at a time
          int64_t off = 0;
          for (size_t d = 0; d < r; ++d) off = off * g.out[d] + at[d] * g.strides[d] + k[d];
          float* dst = ym + off;
          for (int64_t i = 0; i < last; ++i) dst[i * step] = src[p + i] + bias;
          for (size_t d = r - 1; d-- > 0;) {  // the next line's index (the last axis stays 0)
            if (++at[d] < g.in[d]) break;
            at[d] = 0;
          }
        }
      }
    }
  }

  ConvAttrs a_;
  const Tensor* w_ = nullptr;  // the constant W packed_ holds
  std::vector<float> wt_;      // its transpose [M * kernel, C], for non-overlapping windows with group 1
  std::unique_ptr<kernels::PackedConvTranspose> packed_;
  std::mutex mutex_;
  std::map<Dims, std::unique_ptr<kernels::PackedConvTranspose>> unpacked_;
};

// The fast Conv for this node (with `epilogue` inside), or null where it does not apply.
std::unique_ptr<FastConv> fast_conv(const KernelInit& init, kernels::Epilogue epilogue) {
  ConvAttrs a = read_conv_attrs(init.attrs, false);
  const Tensor* w = init.input_value(1);
  const bool has_b = init.node.inputs.size() > 2 && init.node.inputs[2];
  const Tensor* b = has_b ? init.input_value(2) : nullptr;
  const bool b_ok = !has_b || (b && b->dtype() == DataType::Float && w && b->dims() == Dims{w->dims()[0]});
  if (!init.reference_only && w && w->dtype() == DataType::Float && (w->dims().size() == 4 || w->dims().size() == 3) && b_ok &&
      w->element_count() > 0 && a.group > 0 && w->dims()[0] % a.group == 0)
    return std::make_unique<FastConv>(a, *w, b, init, std::move(epilogue));
  return nullptr;
}

// onyx's own loops for a Conv (or ConvTranspose) node: the reference's with reference_only, else the blocked GEMM.
template <bool kTranspose>
std::unique_ptr<Kernel> own_conv_kernel(const KernelInit& init) {
  const ConvAttrs a = read_conv_attrs(init.attrs, kTranspose);
  const nn::Loops loops = init.reference_only ? nn::Loops::Plain : nn::Loops::Blocked;
  return make_kernel([a, loops](KernelContext& ctx) {
    if constexpr (kTranspose) run_conv_transpose(ctx, a, loops);
    else run_conv(ctx, a, loops);
  });
}

template <bool kTranspose>
std::unique_ptr<Kernel> conv_kernel(const KernelInit& init) {
  if constexpr (!kTranspose) {
    if (auto k = fast_conv(init, {})) return k;
  } else {
    if (!init.reference_only) return std::make_unique<FastConvTranspose>(read_conv_attrs(init.attrs, true), init);
  }
  return own_conv_kernel<kTranspose>(init);
}

class FastConvWithEpilogue : public ConvWithEpilogue {
 public:
  explicit FastConvWithEpilogue(std::unique_ptr<FastConv> conv) : conv_(std::move(conv)) {}
  bool run(KernelContext& ctx) override { return conv_->run_fast(ctx); }
  bool keeps_copy_of_input(size_t i) const override { return conv_->keeps_copy_of_input(i); }

 private:
  std::unique_ptr<FastConv> conv_;
};

}  // namespace

std::unique_ptr<ConvWithEpilogue> make_conv_with_epilogue(const KernelInit& init, kernels::Epilogue epilogue) {
  auto conv = fast_conv(init, std::move(epilogue));
  return conv ? std::make_unique<FastConvWithEpilogue>(std::move(conv)) : nullptr;
}

std::unique_ptr<Kernel> make_unpacked_conv(const KernelInit& init) { return own_conv_kernel<false>(init); }

void register_conv(Registry& r) {
  using D = DataType;
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> fb = {D::Float16, D::Float, D::Double, D::BFloat16};
  add_versions(r, "", "Conv", {1, 11}, {{{0, 1, 2}, f}}, infer_conv, conv_kernel<false>);
  add_versions(r, "", "Conv", {22}, {{{0, 1, 2}, fb}}, infer_conv, conv_kernel<false>);
  add_versions(r, "", "ConvTranspose", {1, 11}, {{{0, 1, 2}, f}}, infer_conv_transpose, conv_kernel<true>);
  add_versions(r, "", "ConvTranspose", {22}, {{{0, 1, 2}, fb}}, infer_conv_transpose, conv_kernel<true>);
  const char* blocked = "im2col and onyx's blocked GEMM for the rest (double, float16 and bfloat16 not promoted to float32)";
  r.set_fast_kernels("", "Conv",
                     {"oneDNN convolution for float32 with constant 1-D or 2-D weights (NHWC brgemm; Winograd for large "
                      "3x3 layers on AVX-512)",
                      "onyx's direct loops for float32 convolutions of at most ~1,000 blocks of 16 channels x 4 pixels x taps",
                      blocked});
  r.set_fast_kernels("", "ConvTranspose",
                     {"oneDNN deconvolution for float32",
                      "one matrix product and a scatter for float32 when the kernel equals the stride", blocked});
}

}  // namespace onyx::ops
