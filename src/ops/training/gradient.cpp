// ai.onnx.preview.training Gradient-1 (the only version in the spec table): reverse-mode differentiation of a part
// of the node's own graph.
// Attributes: xs (differentiated variables), zs (other independent variables, optional), y (the differentiated
// tensor). Inputs: the values of xs then zs, at which the gradient is evaluated. Outputs: dy/dx for each x of xs,
// shaped and typed like that x (float16, float, double).
// At session creation the kernel walks back from y through the producers of each value, stopping at the names in
// xs and zs; constant initializers may be read, any other graph input (or a value produced by a node with a
// subgraph, or by a model-local function) is an error since xs and zs must determine y. The nodes found are bound
// to their own kernels. Each run evaluates that forward part again with the Gradient node's inputs substituted for
// xs and zs (the spec lets the values differ from those of the main graph), then propagates gradients backwards in
// double with a rule per op. y may be any shape: its gradient seed is all ones (the gradient of the sum of y's
// elements), which is dy/dx for a scalar y. Gradients reach only float tensors; integer values (Shape outputs,
// indices) carry none. Broadcasting ops sum the gradient over the broadcast axes.
// Ops with a rule (ai.onnx): Add Sub Mul Div Pow Neg Abs Reciprocal Exp Log Sqrt Sin Cos Tanh Sigmoid Relu
// LeakyRelu Elu Softplus Erf Clip Identity Cast Reshape Flatten Squeeze Unsqueeze Expand Transpose Concat Split
// Where Sum Mean MatMul Gemm ReduceSum ReduceMean ReduceSumSquare Softmax LogSoftmax, and the ops that move
// elements (Slice Gather GatherElements GatherND Tile Pad Compress ReverseSequence DepthToSpace SpaceToDepth),
// whose own kernel, run on element numbers, gives the map dy flows back along. A node on the path from xs to y
// without a rule is an error naming it.
#include <cmath>
#include <functional>
#include <numbers>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
const char* kTraining = "ai.onnx.preview.training";

bool is_float(DataType t) { return t == D::Float || t == D::Double || t == D::Float16 || t == D::BFloat16; }

// A gradient: dense doubles with the dims of the value it belongs to.
struct Grad {
  Dims dims;
  std::vector<double> v;
};

Grad zeros(const Dims& d) { return Grad{d, std::vector<double>(static_cast<size_t>(product(d)), 0.0)}; }

// Sums g (whose dims are a broadcast of `target`) down to `target`.
Grad sum_to(const Grad& g, const Dims& target) {
  Grad r = zeros(target);
  if (g.dims == target) {
    r.v = g.v;
    return r;
  }
  for_each_broadcast(g.dims, {target}, [&](int64_t i, const Dims& off) { r.v[off[0]] += g.v[i]; });
  return r;
}

// g (dims broadcastable to `target`) repeated over `target`.
Grad broadcast_to(const Grad& g, const Dims& target) {
  Grad r = zeros(target);
  for_each_broadcast(target, {g.dims}, [&](int64_t i, const Dims& off) { r.v[i] = g.v[off[0]]; });
  return r;
}

// v (row-major, dims `dims`) with its axes permuted: result axis k is input axis perm[k].
Grad transposed(const std::vector<double>& v, const Dims& dims, const std::vector<int64_t>& perm) {
  Dims out(dims.size());
  for (size_t k = 0; k < perm.size(); ++k) out[k] = dims[perm[k]];
  Dims in_strides = strides_of(dims), strides(dims.size());
  for (size_t k = 0; k < perm.size(); ++k) strides[k] = in_strides[perm[k]];
  Grad r = zeros(out);
  // Walk the output in order, moving through the input with the permuted strides.
  const size_t rank = out.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (size_t i = 0; i < r.v.size(); ++i) {
    r.v[i] = v[off];
    for (size_t k = rank; k-- > 0;) {
      ++idx[k];
      off += strides[k];
      if (idx[k] < out[k]) break;
      off -= strides[k] * out[k];
      idx[k] = 0;
    }
  }
  return r;
}

// What a rule sees of one forward node: its inputs and outputs (as doubles, with dims), the gradients reaching its
// outputs, and which inputs want a gradient. The rule fills `din` for the wanted inputs.
struct RuleArgs {
  const Node& node;
  const AttributeView& attrs;
  int64_t opset;
  std::vector<const Tensor*> in, out;  // null where omitted
  std::vector<const Grad*> dout;       // null where no gradient reached the output
  std::vector<bool> want;
  std::vector<std::optional<Grad>> din;
  // Runs the node's own kernel on other input values (for the element-moving ops).
  std::function<std::vector<Datum>(std::vector<const Datum*>)> rerun;

  std::vector<double> x(size_t i) const { return read_doubles(*in.at(i)); }
  std::vector<double> y(size_t i = 0) const { return read_doubles(*out.at(i)); }
  const Dims& in_dims(size_t i) const { return in.at(i)->dims(); }
  const Dims& out_dims(size_t i = 0) const { return out.at(i)->dims(); }
  bool wants(size_t i) const { return i < want.size() && want[i]; }
  // Gradient of output i; zeros when none reached it.
  Grad dy(size_t i = 0) const { return dout.at(i) ? *dout[i] : zeros(out_dims(i)); }
  void set(size_t i, Grad g) {
    if (wants(i)) din[i] = std::move(g);
  }
};

using Rule = void (*)(RuleArgs&);

// ---- element-wise ops of one input: dx = dy * f'(x, y) ----

template <class F>
void unary(RuleArgs& a, F deriv) {
  Grad g = a.dy();
  const std::vector<double> x = a.x(0), y = a.y();
  for (size_t i = 0; i < g.v.size(); ++i) g.v[i] *= deriv(x[i], y[i]);
  a.set(0, std::move(g));
}

void rule_neg(RuleArgs& a) { unary(a, [](double, double) { return -1.0; }); }
void rule_abs(RuleArgs& a) { unary(a, [](double x, double) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }); }
void rule_reciprocal(RuleArgs& a) { unary(a, [](double, double y) { return -y * y; }); }
void rule_exp(RuleArgs& a) { unary(a, [](double, double y) { return y; }); }
void rule_log(RuleArgs& a) { unary(a, [](double x, double) { return 1.0 / x; }); }
void rule_sqrt(RuleArgs& a) { unary(a, [](double, double y) { return 0.5 / y; }); }
void rule_sin(RuleArgs& a) { unary(a, [](double x, double) { return std::cos(x); }); }
void rule_cos(RuleArgs& a) { unary(a, [](double x, double) { return -std::sin(x); }); }
void rule_tanh(RuleArgs& a) { unary(a, [](double, double y) { return 1.0 - y * y; }); }
void rule_sigmoid(RuleArgs& a) { unary(a, [](double, double y) { return y * (1.0 - y); }); }
void rule_relu(RuleArgs& a) { unary(a, [](double x, double) { return x > 0 ? 1.0 : 0.0; }); }
void rule_softplus(RuleArgs& a) { unary(a, [](double x, double) { return 1.0 / (1.0 + std::exp(-x)); }); }
void rule_erf(RuleArgs& a) {
  unary(a, [](double x, double) { return 2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x); });
}
void rule_leaky_relu(RuleArgs& a) {
  const double alpha = a.attrs.get_float("alpha", 0.01f);
  unary(a, [alpha](double x, double) { return x > 0 ? 1.0 : alpha; });
}
void rule_elu(RuleArgs& a) {
  const double alpha = a.attrs.get_float("alpha", 1.0f);
  unary(a, [alpha](double x, double y) { return x > 0 ? 1.0 : y + alpha; });
}
// Clip passes the gradient where it kept x (the bounds' own gradients are not computed).
void rule_clip(RuleArgs& a) { unary(a, [](double x, double y) { return x == y ? 1.0 : 0.0; }); }

// Ops that keep the elements and change only the dims (or the element type): dx is dy with x's dims.
void rule_same_elements(RuleArgs& a) {
  Grad g = a.dy();
  g.dims = a.in_dims(0);
  a.set(0, std::move(g));
}

void rule_expand(RuleArgs& a) { a.set(0, sum_to(a.dy(), a.in_dims(0))); }

// Ops that only move elements (Slice, Gather, Tile, Pad...): the node's own kernel, run with x replaced by its
// element numbers (1-based, as doubles: every such op takes double data, and they are exact up to 2^53), tells
// where each output element came from (0: from no element of x, such as padding); dy flows back along that map.
// The other inputs keep their values.
void rule_moves(RuleArgs& a) {
  std::vector<Datum> holders(a.in.size());
  for (size_t k = 0; k < a.in.size(); ++k)
    if (a.in[k]) holders[k] = Datum::of(*a.in[k]);
  const bool pad = a.node.op_type == "Pad";
  if (pad && a.opset < 11 && a.attrs.get_float("value", 0.0f) != 0)
    fail("Pad before opset 11 with a non-zero 'value' is not supported by the gradient rule");
  if (pad && a.opset >= 11 && a.in.size() > 2 && a.in[2]) {
    Tensor zero = Tensor::allocate(D::Double, a.in_dims(2));
    holders[2] = Datum::of(std::move(zero));
  }
  Tensor numbers = Tensor::allocate(D::Double, a.in_dims(0));
  double* p = numbers.mutable_data<double>();
  for (uint64_t k = 0; k < numbers.element_count(); ++k) p[k] = static_cast<double>(k + 1);
  holders[0] = Datum::of(std::move(numbers));
  std::vector<const Datum*> ptrs;
  for (const Datum& d : holders) ptrs.push_back(d.kind == Datum::Kind::Empty ? nullptr : &d);
  const std::vector<Datum> maps = a.rerun(std::move(ptrs));
  Grad gx = zeros(a.in_dims(0));
  double padded = 0;  // dy summed over the elements that came from no element of x (Pad's constant)
  for (size_t j = 0; j < a.out.size() && j < maps.size(); ++j) {
    if (!a.dout[j]) continue;
    const Tensor& m = maps[j].tensor;
    if (!maps[j].is_tensor() || m.dtype() != D::Double || m.element_count() != a.dout[j]->v.size())
      fail("internal: the element map of output ", j, " does not match the output");
    const double* src = m.data<double>();
    for (size_t k = 0; k < a.dout[j]->v.size(); ++k) {
      if (src[k] > 0) gx.v[static_cast<size_t>(src[k]) - 1] += a.dout[j]->v[k];
      else padded += a.dout[j]->v[k];
    }
  }
  a.set(0, std::move(gx));
  if (pad && a.wants(2)) {
    Grad gc = zeros(a.in_dims(2));
    for (double& v : gc.v) v = padded;
    a.set(2, std::move(gc));
  }
}

// ---- broadcasting binary ops ----

// Walks the output with offsets into both inputs; f(i, ia, ib) adds to the two input gradients.
template <class F>
void binary(RuleArgs& a, F f) {
  // Before opset 7 a "broadcast" attribute aligned B to A at `axis`, which numpy-style walking would misread.
  if (a.opset < 7 && a.attrs.get_int("broadcast", 0) != 0 && a.in_dims(0) != a.in_dims(1))
    fail("legacy broadcasting (attribute 'broadcast' before opset 7) is not supported by the gradient rule");
  Grad ga = zeros(a.in_dims(0)), gb = zeros(a.in_dims(1));
  const Grad g = a.dy();
  for_each_broadcast(a.out_dims(), {a.in_dims(0), a.in_dims(1)}, [&](int64_t i, const Dims& off) {
    f(g.v[i], i, off[0], off[1], ga.v[off[0]], gb.v[off[1]]);
  });
  a.set(0, std::move(ga));
  a.set(1, std::move(gb));
}

void rule_add(RuleArgs& a) {
  binary(a, [](double g, int64_t, int64_t, int64_t, double& da, double& db) { da += g, db += g; });
}
void rule_sub(RuleArgs& a) {
  binary(a, [](double g, int64_t, int64_t, int64_t, double& da, double& db) { da += g, db -= g; });
}
void rule_mul(RuleArgs& a) {
  const std::vector<double> x = a.x(0), w = a.x(1);
  binary(a, [&](double g, int64_t, int64_t i, int64_t j, double& da, double& db) { da += g * w[j], db += g * x[i]; });
}
void rule_div(RuleArgs& a) {
  const std::vector<double> x = a.x(0), w = a.x(1);
  binary(a, [&](double g, int64_t, int64_t i, int64_t j, double& da, double& db) {
    da += g / w[j];
    db -= g * x[i] / (w[j] * w[j]);
  });
}
void rule_pow(RuleArgs& a) {
  const std::vector<double> x = a.x(0), e = a.x(1), y = a.y();
  binary(a, [&](double g, int64_t k, int64_t i, int64_t j, double& da, double& db) {
    da += g * e[j] * std::pow(x[i], e[j] - 1);
    // d(x^e)/de = x^e ln x; where x^e is 0 the product's limit is 0 (avoids 0 * -inf).
    if (y[k] != 0) db += g * y[k] * std::log(x[i]);
  });
}

// Where(cond, X, Y): the gradient goes to the side cond selected.
void rule_where(RuleArgs& a) {
  const Tensor& c = *a.in.at(0);
  if (c.dtype() != D::Bool) fail("Where condition is ", c.dtype(), ", expected bool");
  const bool* cond = c.data<bool>();
  Grad gx = zeros(a.in_dims(1)), gy = zeros(a.in_dims(2));
  const Grad g = a.dy();
  for_each_broadcast(a.out_dims(), {a.in_dims(0), a.in_dims(1), a.in_dims(2)}, [&](int64_t i, const Dims& off) {
    (cond[off[0]] ? gx.v[off[1]] : gy.v[off[2]]) += g.v[i];
  });
  a.set(1, std::move(gx));
  a.set(2, std::move(gy));
}

// Sum / Mean of any number of inputs, broadcasting.
void variadic(RuleArgs& a, double scale) {
  Grad g = a.dy();
  for (double& v : g.v) v *= scale;
  for (size_t i = 0; i < a.in.size(); ++i)
    if (a.wants(i)) a.set(i, sum_to(g, a.in_dims(i)));
}
void rule_sum(RuleArgs& a) { variadic(a, 1.0); }
void rule_mean(RuleArgs& a) { variadic(a, 1.0 / static_cast<double>(a.in.size())); }

// ---- layout ----

void rule_transpose(RuleArgs& a) {
  const int64_t rank = static_cast<int64_t>(a.in_dims(0).size());
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = a.attrs.get_ints("perm", perm);
  if (static_cast<int64_t>(perm.size()) != rank) fail("Transpose perm has ", perm.size(), " entries for rank ", rank);
  std::vector<int64_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[static_cast<size_t>(normalize_axis(perm[k], rank, "perm"))] = static_cast<int64_t>(k);
  const Grad g = a.dy();
  a.set(0, transposed(g.v, g.dims, inverse));
}

// Concat: each input gets its slab of dy along the axis.
void rule_concat(RuleArgs& a) {
  const Dims& od = a.out_dims();
  const int64_t axis = normalize_axis(a.attrs.get_int("axis"), static_cast<int64_t>(od.size()));
  const int64_t outer = product(od, 0, static_cast<size_t>(axis)), inner = product(od, static_cast<size_t>(axis) + 1);
  const Grad g = a.dy();
  int64_t start = 0;
  for (size_t i = 0; i < a.in.size(); ++i) {
    if (!a.in[i]) continue;
    const int64_t len = a.in_dims(i)[static_cast<size_t>(axis)];
    if (a.wants(i)) {
      Grad gi = zeros(a.in_dims(i));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < len * inner; ++k)
          gi.v[static_cast<size_t>(o * len * inner + k)] = g.v[static_cast<size_t>((o * od[axis] + start) * inner + k)];
      a.set(i, std::move(gi));
    }
    start += len;
  }
}

// Split: x's gradient is the outputs' gradients put back side by side (zeros for outputs none reached).
void rule_split(RuleArgs& a) {
  const Dims& xd = a.in_dims(0);
  const int64_t axis = normalize_axis(a.attrs.get_int("axis", 0), static_cast<int64_t>(xd.size()));
  const int64_t outer = product(xd, 0, static_cast<size_t>(axis)), inner = product(xd, static_cast<size_t>(axis) + 1);
  Grad gx = zeros(xd);
  int64_t start = 0;
  for (size_t j = 0; j < a.out.size(); ++j) {
    if (!a.out[j]) continue;
    const int64_t len = a.out_dims(j)[static_cast<size_t>(axis)];
    if (a.dout[j])
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < len * inner; ++k)
          gx.v[static_cast<size_t>((o * xd[axis] + start) * inner + k)] = a.dout[j]->v[static_cast<size_t>(o * len * inner + k)];
    start += len;
  }
  a.set(0, std::move(gx));
}

// ---- reductions ----

// The reduced axes of a Reduce* node (attribute or, from the version that moved it, input 1); empty: all axes,
// unless noop_with_empty_axes (then nothing is reduced).
std::optional<std::vector<int64_t>> reduced_axes(const RuleArgs& a, int axes_input_since) {
  const int64_t rank = static_cast<int64_t>(a.in_dims(0).size());
  std::vector<int64_t> axes;
  if (a.opset >= axes_input_since) {
    if (a.in.size() > 1 && a.in[1]) axes = read_ints(*a.in[1]);
  } else {
    axes = a.attrs.get_ints("axes", std::vector<int64_t>{});
  }
  if (axes.empty()) {
    if (a.opset >= axes_input_since && a.attrs.get_int("noop_with_empty_axes", 0)) return std::nullopt;
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& ax : axes) ax = normalize_axis(ax, rank, "axes");
  return axes;
}

// dy spread back over x's dims (dy itself for a no-op reduce); *count_out: elements reduced into each output.
Grad spread(const RuleArgs& a, int axes_input_since, double* count_out) {
  const Dims& xd = a.in_dims(0);
  Grad g = a.dy();
  auto axes = reduced_axes(a, axes_input_since);
  if (!axes) {
    *count_out = 1;
    g.dims = xd;
    return g;
  }
  Dims kept = xd;
  for (int64_t ax : *axes) kept[static_cast<size_t>(ax)] = 1;
  *count_out = static_cast<double>(product(xd)) / static_cast<double>(std::max<int64_t>(product(kept), 1));
  g.dims = kept;  // keepdims=0 dropped the reduced axes; the elements are the same
  return broadcast_to(g, xd);
}

void rule_reduce_sum(RuleArgs& a) {
  double count = 0;
  a.set(0, spread(a, 13, &count));
}
void rule_reduce_mean(RuleArgs& a) {
  double count = 0;
  Grad g = spread(a, 18, &count);
  for (double& v : g.v) v /= count;
  a.set(0, std::move(g));
}
void rule_reduce_sum_square(RuleArgs& a) {
  double count = 0;
  Grad g = spread(a, 18, &count);
  const std::vector<double> x = a.x(0);
  for (size_t i = 0; i < g.v.size(); ++i) g.v[i] *= 2 * x[i];
  a.set(0, std::move(g));
}

// ---- softmax ----

// The groups softmax normalizes over: before opset 13 the input is seen as 2-D [prod(dims[:axis]),
// prod(dims[axis:])]; from 13 on, only `axis` is normalized.
struct Groups {
  int64_t outer, n, inner;
};
Groups softmax_groups(const RuleArgs& a) {
  const Dims& d = a.in_dims(0);
  const int64_t rank = static_cast<int64_t>(d.size());
  const bool old = a.opset < 13;
  const int64_t axis = normalize_axis(a.attrs.get_int("axis", old ? 1 : -1), std::max<int64_t>(rank, 1));
  const size_t ax = static_cast<size_t>(axis);
  if (old) return {product(d, 0, ax), product(d, ax), 1};
  return {product(d, 0, ax), rank ? d[ax] : 1, product(d, ax + 1)};
}

template <class F>
void softmax_like(RuleArgs& a, F f) {
  const Groups gr = softmax_groups(a);
  Grad g = a.dy();
  const std::vector<double> y = a.y();
  for (int64_t o = 0; o < gr.outer; ++o)
    for (int64_t i = 0; i < gr.inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * gr.n + j) * gr.inner + i); };
      f(g.v, y, gr.n, at);
    }
  a.set(0, std::move(g));
}
void rule_softmax(RuleArgs& a) {
  softmax_like(a, [](std::vector<double>& g, const std::vector<double>& y, int64_t n, auto at) {
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += g[at(j)] * y[at(j)];
    for (int64_t j = 0; j < n; ++j) g[at(j)] = y[at(j)] * (g[at(j)] - dot);
  });
}
void rule_log_softmax(RuleArgs& a) {
  softmax_like(a, [](std::vector<double>& g, const std::vector<double>& y, int64_t n, auto at) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += g[at(j)];
    for (int64_t j = 0; j < n; ++j) g[at(j)] -= std::exp(y[at(j)]) * sum;
  });
}

// ---- matrix products ----

// MatMul with numpy semantics: 1-D operands are promoted to a row (A) / column (B) matrix, batch dims broadcast.
void rule_matmul(RuleArgs& a) {
  const Dims &ad = a.in_dims(0), &bd = a.in_dims(1);
  if (ad.empty() || bd.empty()) fail("MatMul operands must have rank >= 1");
  const int64_t M = ad.size() > 1 ? ad[ad.size() - 2] : 1, K = ad.back();
  const int64_t N = bd.size() > 1 ? bd.back() : 1;
  const Dims ab = ad.size() > 2 ? Dims(ad.begin(), ad.end() - 2) : Dims{};
  const Dims bb = bd.size() > 2 ? Dims(bd.begin(), bd.end() - 2) : Dims{};
  const Dims batch = broadcast_dims(ab, bb);
  const std::vector<double> A = a.x(0), B = a.x(1);
  const Grad g = a.dy();
  Grad ga = zeros(ad), gb = zeros(bd);
  for_each_broadcast(batch, {ab, bb}, [&](int64_t bi, const Dims& off) {
    const size_t ao = static_cast<size_t>(off[0] * M * K), bo = static_cast<size_t>(off[1] * K * N),
                 yo = static_cast<size_t>(bi * M * N);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const double gy = g.v[yo + static_cast<size_t>(m * N + n)];
        if (gy == 0) continue;
        for (int64_t k = 0; k < K; ++k) {
          ga.v[ao + static_cast<size_t>(m * K + k)] += gy * B[bo + static_cast<size_t>(k * N + n)];
          gb.v[bo + static_cast<size_t>(k * N + n)] += gy * A[ao + static_cast<size_t>(m * K + k)];
        }
      }
  });
  a.set(0, std::move(ga));
  a.set(1, std::move(gb));
}

// Gemm: Y = alpha * op(A) op(B) + beta * C, op transposing when transA / transB.
void rule_gemm(RuleArgs& a) {
  const Dims &ad = a.in_dims(0), &bd = a.in_dims(1);
  if (ad.size() != 2 || bd.size() != 2) fail("Gemm operands must be 2-D");
  const bool ta = a.attrs.get_int("transA", 0) != 0, tb = a.attrs.get_int("transB", 0) != 0;
  const double alpha = a.attrs.get_float("alpha", 1.0f), beta = a.attrs.get_float("beta", 1.0f);
  const int64_t M = ta ? ad[1] : ad[0], K = ta ? ad[0] : ad[1], N = tb ? bd[0] : bd[1];
  auto ai = [&](int64_t m, int64_t k) { return static_cast<size_t>(ta ? k * M + m : m * K + k); };
  auto bi = [&](int64_t k, int64_t n) { return static_cast<size_t>(tb ? n * K + k : k * N + n); };
  const std::vector<double> A = a.x(0), B = a.x(1);
  const Grad g = a.dy();
  Grad ga = zeros(ad), gb = zeros(bd);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double gy = alpha * g.v[static_cast<size_t>(m * N + n)];
      if (gy == 0) continue;
      for (int64_t k = 0; k < K; ++k) {
        ga.v[ai(m, k)] += gy * B[bi(k, n)];
        gb.v[bi(k, n)] += gy * A[ai(m, k)];
      }
    }
  a.set(0, std::move(ga));
  a.set(1, std::move(gb));
  if (a.wants(2)) {
    Grad gc = sum_to(g, a.in_dims(2));
    for (double& v : gc.v) v *= beta;
    a.set(2, std::move(gc));
  }
}

const std::unordered_map<std::string, Rule>& rules() {
  static const std::unordered_map<std::string, Rule> k = {
      {"Add", rule_add}, {"Sub", rule_sub}, {"Mul", rule_mul}, {"Div", rule_div}, {"Pow", rule_pow},
      {"Neg", rule_neg}, {"Abs", rule_abs}, {"Reciprocal", rule_reciprocal}, {"Exp", rule_exp}, {"Log", rule_log},
      {"Sqrt", rule_sqrt}, {"Sin", rule_sin}, {"Cos", rule_cos}, {"Tanh", rule_tanh}, {"Sigmoid", rule_sigmoid},
      {"Relu", rule_relu}, {"LeakyRelu", rule_leaky_relu}, {"Elu", rule_elu}, {"Softplus", rule_softplus},
      {"Erf", rule_erf}, {"Clip", rule_clip}, {"Identity", rule_same_elements}, {"Cast", rule_same_elements},
      {"Reshape", rule_same_elements}, {"Flatten", rule_same_elements}, {"Squeeze", rule_same_elements},
      {"Unsqueeze", rule_same_elements}, {"Expand", rule_expand}, {"Transpose", rule_transpose},
      {"Concat", rule_concat}, {"Split", rule_split}, {"Where", rule_where}, {"Sum", rule_sum}, {"Mean", rule_mean},
      {"MatMul", rule_matmul}, {"Gemm", rule_gemm}, {"ReduceSum", rule_reduce_sum},
      {"ReduceMean", rule_reduce_mean}, {"ReduceSumSquare", rule_reduce_sum_square}, {"Softmax", rule_softmax},
      {"LogSoftmax", rule_log_softmax}, {"Slice", rule_moves}, {"Gather", rule_moves},
      {"GatherElements", rule_moves}, {"GatherND", rule_moves}, {"Tile", rule_moves}, {"Pad", rule_moves},
      {"Compress", rule_moves}, {"ReverseSequence", rule_moves}, {"DepthToSpace", rule_moves},
      {"SpaceToDepth", rule_moves},
  };
  return k;
}

Rule rule_for(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return nullptr;
  auto it = rules().find(n.op_type);
  return it == rules().end() ? nullptr : it->second;
}

// One node of the differentiated part, bound to its own kernel.
struct Forward {
  const Node* node = nullptr;
  int64_t opset = 0;
  const OpDef* def = nullptr;
  std::unique_ptr<Kernel> kernel;
  AttributeView attrs;
  Rule rule = nullptr;
  std::vector<int> in, out;  // value slots, -1 where omitted
};

class GradientKernel : public Kernel {
 public:
  explicit GradientKernel(const KernelInit& init) : node_(init.node) {
    const AttributeView& at = init.attrs;
    const std::vector<std::string> xs = at.get_strings("xs"), zs = at.get_strings("zs", std::vector<std::string>{});
    const std::string y = at.get_string("y");
    num_xs_ = xs.size();
    if (xs.empty()) fail("attribute 'xs' is empty: there is nothing to differentiate against");
    if (node_.inputs.size() != xs.size() + zs.size())
      fail("takes one input per name of xs and zs (", xs.size(), " + ", zs.size(), "), the node has ",
           node_.inputs.size());
    if (node_.outputs.size() > xs.size())
      fail("has ", node_.outputs.size(), " outputs; at most one per name of xs (", xs.size(), ")");
    const Graph* g = node_.graph;
    if (!g) fail("the node is not in a graph");
    auto find = [&](const std::string& name, const char* attr) {
      const Value* v = g->find(name);
      if (!v) fail("attribute '", attr, "' names '", name, "', which is not a value of the graph");
      return v;
    };
    // Slots: xs, then zs, then values found walking back from y.
    for (size_t i = 0; i < xs.size() + zs.size(); ++i) {
      const bool is_x = i < xs.size();
      const Value* v = find(is_x ? xs[i] : zs[i - xs.size()], is_x ? "xs" : "zs");
      if (slots_.count(v)) fail("'", v->name, "' appears more than once in xs and zs");
      slot(v);
    }
    const Value* yv = find(y, "y");
    collect(yv, init);
    y_slot_ = slots_.at(yv);
    // Which values depend on xs: only those carry gradients, and only nodes reading them need a rule.
    depends_.assign(slot_count_, false);
    for (size_t i = 0; i < xs.size(); ++i) depends_[i] = true;
    for (const Forward& f : forward_) {
      bool any = false;
      for (int s : f.in) any = any || (s >= 0 && depends_[static_cast<size_t>(s)]);
      for (int s : f.out)
        if (s >= 0) depends_[static_cast<size_t>(s)] = any;
      if (any && !f.rule) {
        // An op whose outputs are known not to be float (Shape, comparisons) passes no gradient and needs no rule.
        bool float_out = false;
        for (const Value* o : f.node->outputs)
          float_out = float_out || (o && o->type.kind == Type::Kind::Tensor && is_float(o->type.elem));
        if (float_out) no_rule_error(*f.node);
      }
    }
  }

  void run(KernelContext& ctx) override {
    std::vector<Datum> values(slot_count_);
    for (size_t i = 0; i < node_.inputs.size(); ++i) {
      if (!ctx.has_input(i)) ctx.error(cat("input ", i, " (value of '", slot_names_[i], "') is missing"));
      values[i] = ctx.input_datum(i);
      if (i < num_xs_) {
        const Tensor& x = ctx.input(i);
        if (x.dtype() != D::Float && x.dtype() != D::Double && x.dtype() != D::Float16)
          ctx.error(cat("input ", i, " (value of xs '", slot_names_[i], "') is ", x.dtype(),
                        "; gradients are float16, float or double"));
      }
    }
    for (const auto& [s, t] : constants_) values[static_cast<size_t>(s)] = Datum::of(*t);
    evaluate(values);
    std::vector<std::optional<Grad>> grads(slot_count_);
    {
      const Datum& yd = values[y_slot_];
      if (!yd.is_tensor() || !is_float(yd.tensor.dtype()))
        ctx.error(cat("y '", slot_names_[y_slot_], "' is ", yd.describe(), "; only float tensors have gradients"));
      grads[y_slot_] = Grad{yd.tensor.dims(), std::vector<double>(yd.tensor.element_count(), 1.0)};
    }
    backward(values, grads);
    for (size_t i = 0; i < ctx.num_outputs() && i < num_xs_; ++i) {
      if (!ctx.output_wanted(i)) continue;
      const Tensor& x = ctx.input(i);
      Tensor& out = ctx.allocate_output(i, x.dtype(), x.dims());
      if (grads[i]) {
        if (grads[i]->dims != x.dims())
          fail("internal: gradient of '", slot_names_[i], "' has ", grads[i]->v.size(), " elements for ",
               x.element_count());
        store_doubles(out, grads[i]->v);
      }
    }
  }

 private:
  size_t slot(const Value* v) {
    auto [it, inserted] = slots_.emplace(v, slot_count_);
    if (inserted) {
      ++slot_count_;
      slot_names_.push_back(v->name);
    }
    return it->second;
  }

  [[noreturn]] void no_rule_error(const Node& n) const {
    fail("node ", n.label(), " lies on the path from xs to y, and onyx has no gradient rule for ",
         n.domain.empty() ? "" : n.domain + ".", n.op_type);
  }

  // Finds the nodes that compute y from xs, zs and constant initializers, in an order where producers come first.
  void collect(const Value* y, const KernelInit& init) {
    struct Item {
      const Value* v;
      bool expanded;
    };
    std::vector<Item> stack{{y, false}};
    std::unordered_set<const Node*> pending;  // producers whose inputs are being visited (a cycle check)
    while (!stack.empty()) {
      Item it = stack.back();
      stack.pop_back();
      const Value* v = it.v;
      if (slots_.count(v)) continue;
      const Node* p = v->producer;
      if (!p) {
        if (v->initializer && !v->is_graph_input) {
          constants_.emplace_back(static_cast<int>(slot(v)), v->initializer);
          continue;
        }
        fail("y depends on '", v->name, "', which is neither in xs nor in zs (",
             v->is_graph_input ? "a graph input" : "no node computes it", "); xs and zs must determine y");
      }
      if (p == &node_) fail("y depends on an output of this Gradient node");
      if (!it.expanded) {
        if (!pending.insert(p).second) fail("the graph computing y has a cycle at node ", p->label());
        stack.push_back({v, true});
        for (const Value* in : p->inputs)
          if (in && !slots_.count(in)) stack.push_back({in, false});
        continue;
      }
      add_forward(*p, init);
    }
  }

  void add_forward(const Node& n, const KernelInit& init) {
    for (const Attribute& a : n.attributes)
      if (a.g || !a.graphs.empty())
        fail("node ", n.label(), " lies between xs and y and has a subgraph; Gradient cannot differentiate through it");
    if (!init.opset_imports) fail("internal: the opset imports are not available to Gradient");
    auto imp = init.opset_imports->find(n.domain == "ai.onnx" ? "" : n.domain);
    if (imp == init.opset_imports->end())
      fail("node ", n.label(), " (between xs and y): domain '", n.domain, "' is not imported");
    Forward f{&n, imp->second, nullptr, nullptr, AttributeView(n, init.attrs.scope()), rule_for(n), {}, {}};
    try {
      f.def = &builtin_registry().resolve(n, f.opset);
      KernelInit sub{n, f.opset, f.attrs, {}, {}, init.opset_imports};
      for (const Value* v : n.inputs) sub.input_types.push_back(v ? &v->type : nullptr);
      for (const Value* v : n.outputs) sub.output_types.push_back(v ? &v->type : nullptr);
      f.kernel = f.def->kernel(sub);
    } catch (const Error& e) {
      fail("node ", n.label(), " (between xs and y): ", e.what());
    }
    for (const Value* v : n.inputs) f.in.push_back(v ? static_cast<int>(slots_.at(v)) : -1);
    for (const Value* v : n.outputs) f.out.push_back(v ? static_cast<int>(slot(v)) : -1);
    forward_.push_back(std::move(f));
  }

  void evaluate(std::vector<Datum>& values) const {
    for (const Forward& f : forward_) {
      std::vector<const Datum*> ins;
      std::vector<DataType> dtypes;
      for (int s : f.in) {
        const Datum* d = s >= 0 && values[static_cast<size_t>(s)].kind != Datum::Kind::Empty ? &values[static_cast<size_t>(s)] : nullptr;
        ins.push_back(d);
        dtypes.push_back(d && d->is_tensor() ? d->tensor.dtype() : D::Undefined);
      }
      try {
        if (!f.def->types.empty()) check_input_types(*f.def, *f.node, dtypes);
        KernelContext kc(*f.node, f.opset, std::move(ins), f.node->outputs.size(), nullptr);
        f.kernel->run(kc);
        for (size_t i = 0; i < f.out.size(); ++i)
          if (f.out[i] >= 0 && i < kc.outputs().size()) values[static_cast<size_t>(f.out[i])] = std::move(kc.outputs()[i]);
      } catch (const Error& e) {
        fail("evaluating node ", f.node->label(), " (between xs and y): ", e.what());
      }
    }
  }

  void backward(const std::vector<Datum>& values, std::vector<std::optional<Grad>>& grads) const {
    auto tensor_at = [&](int s) -> const Tensor* {
      if (s < 0 || !values[static_cast<size_t>(s)].is_tensor()) return nullptr;
      return &values[static_cast<size_t>(s)].tensor;
    };
    for (auto f = forward_.rbegin(); f != forward_.rend(); ++f) {
      bool reached = false;
      for (int s : f->out) reached = reached || (s >= 0 && grads[static_cast<size_t>(s)]);
      if (!reached) continue;
      RuleArgs a{*f->node, f->attrs, f->opset, {}, {}, {}, {}, {}, {}};
      bool any = false;
      for (int s : f->in) {
        const Tensor* t = tensor_at(s);
        a.in.push_back(t);
        const bool w = t && depends_[static_cast<size_t>(s)] && is_float(t->dtype());
        a.want.push_back(w);
        any = any || w;
      }
      if (!any) continue;
      if (!f->rule) no_rule_error(*f->node);
      for (int s : f->out) {
        a.out.push_back(tensor_at(s));
        a.dout.push_back(s >= 0 && grads[static_cast<size_t>(s)] ? &*grads[static_cast<size_t>(s)] : nullptr);
      }
      a.din.resize(f->in.size());
      a.rerun = [&](std::vector<const Datum*> ins) {
        KernelContext kc(*f->node, f->opset, std::move(ins), f->node->outputs.size(), nullptr);
        f->kernel->run(kc);
        return std::move(kc.outputs());
      };
      try {
        f->rule(a);
      } catch (const Error& e) {
        fail("gradient of node ", f->node->label(), ": ", e.what());
      }
      for (size_t i = 0; i < f->in.size(); ++i) {
        if (!a.din[i]) continue;
        std::optional<Grad>& acc = grads[static_cast<size_t>(f->in[i])];
        if (!acc) {
          acc = std::move(a.din[i]);
        } else {
          for (size_t k = 0; k < acc->v.size(); ++k) acc->v[k] += a.din[i]->v[k];
        }
      }
    }
  }

  const Node& node_;
  size_t num_xs_ = 0;
  std::unordered_map<const Value*, size_t> slots_;
  size_t slot_count_ = 0;
  std::vector<std::string> slot_names_;
  std::vector<std::pair<int, const Tensor*>> constants_;
  std::vector<Forward> forward_;
  std::vector<bool> depends_;
  size_t y_slot_ = 0;
};

void infer_gradient(InferContext& ctx) {
  const size_t nx = ctx.attrs.get_strings("xs").size();
  for (size_t i = 0; i < ctx.output_types.size() && i < nx; ++i) {
    if (!ctx.has_input(i)) continue;
    const Type& t = ctx.input_type(i);
    if (t.kind == Type::Kind::Tensor && t.elem != D::Undefined && t.elem != D::Float && t.elem != D::Double &&
        t.elem != D::Float16)
      ctx.error(cat("input ", i, " (value of xs '", ctx.attrs.get_strings("xs")[i], "') is ", t.elem,
                    "; gradients are float16, float or double"));
    ctx.set_output(i, t);
  }
}

}  // namespace

void register_gradient(Registry& r) {
  r.add(OpDef{kTraining, "Gradient", 1, {}, infer_gradient,
              [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<GradientKernel>(init); }});
}

}  // namespace onyx::ops
