// Gradient rules for ai.onnx.preview.training's Gradient (ops/training/gradient.cpp): each op family writes the
// rule of its ops beside their kernels and sets it on their OpDefs (Registry::set_gradient). A rule sees one
// forward node's inputs and outputs and the gradients reaching its outputs, and gives its inputs' gradients, in
// double. The helpers here are what several families' rules share.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "ops/op_kit.hpp"

namespace onyx::ops::grad {

// A gradient: dense doubles with the dims of the value it belongs to.
struct Grad {
  Dims dims;
  std::vector<double> v;
};

Grad zeros(const Dims& d);
// Sums g (whose dims are a broadcast of `target`) down to `target`.
Grad sum_to(const Grad& g, const Dims& target);
// g (dims broadcastable to `target`) repeated over `target`.
Grad broadcast_to(const Grad& g, const Dims& target);
// v (row-major, dims `dims`) with its axes permuted: result axis k is input axis perm[k].
Grad transposed(const std::vector<double>& v, const Dims& dims, const std::vector<int64_t>& perm);

// What a rule sees of one forward node: its inputs and outputs (as doubles, with dims), the gradients reaching its
// outputs, and which inputs want a gradient. The rule fills `din` for the wanted inputs.
struct Args {
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

// ---- element-wise ops of one input: dx = dy * f'(x, y) ----

template <class F>
void unary(Args& a, F deriv) {
  Grad g = a.dy();
  const std::vector<double> x = a.x(0), y = a.y();
  for (size_t i = 0; i < g.v.size(); ++i) g.v[i] *= deriv(x[i], y[i]);
  a.set(0, std::move(g));
}

// Walks the output with offsets into both inputs; f(i, ia, ib) adds to the two input gradients.
template <class F>
void binary(Args& a, F f) {
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

// Ops that keep the elements and change only the dims (or the element type): dx is dy with x's dims.
void same_elements(Args& a);

// Ops that only move elements (Slice, Gather, Tile, Pad...): the node's own kernel, run with x replaced by its
// element numbers (1-based, as doubles: every such op takes double data, and they are exact up to 2^53), tells
// where each output element came from (0: from no element of x, such as padding); dy flows back along that map.
// The other inputs keep their values.
void element_moves(Args& a);

}  // namespace onyx::ops::grad
