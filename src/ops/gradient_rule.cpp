#include "ops/gradient_rule.hpp"

#include "ir/tensor_alloc.hpp"

namespace onyx::ops::grad {

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

// Ops that keep the elements and change only the dims (or the element type): dx is dy with x's dims.
void same_elements(Args& a) {
  Grad g = a.dy();
  g.dims = a.in_dims(0);
  a.set(0, std::move(g));
}

// Ops that only move elements (Slice, Gather, Tile, Pad...): the node's own kernel, run with x replaced by its
// element numbers (1-based, as doubles: every such op takes double data, and they are exact up to 2^53), tells
// where each output element came from (0: from no element of x, such as padding); dy flows back along that map.
// The other inputs keep their values.
void element_moves(Args& a) {
  std::vector<Datum> holders(a.in.size());
  for (size_t k = 0; k < a.in.size(); ++k)
    if (a.in[k]) holders[k] = Datum::of(*a.in[k]);
  const bool pad = a.node.op_type == "Pad";
  if (pad && a.opset < 11 && a.attrs.get_float("value", 0.0f) != 0)
    fail("Pad before opset 11 with a non-zero 'value' is not supported by the gradient rule");
  if (pad && a.opset >= 11 && a.in.size() > 2 && a.in[2]) {
    Tensor zero = Tensor::allocate(DataType::Double, a.in_dims(2));
    holders[2] = Datum::of(std::move(zero));
  }
  Tensor numbers = Tensor::allocate(DataType::Double, a.in_dims(0));
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
    if (!maps[j].is_tensor() || m.dtype() != DataType::Double || m.element_count() != a.dout[j]->v.size())
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

}  // namespace onyx::ops::grad
