// ai.onnx Transpose — versions 1, 13 (bfloat16), 21 (float8, int4/uint4), 23 (float4e2m1), 24 (float8e8m0),
// 25 (int2/uint2). perm defaults to the reversed axes; it must be a permutation of [0, rank).
// Output dim i is input dim perm[i]; inference permutes symbolic dims too.
#include "ops/tensor/layout_kit.hpp"

namespace onyx::ops {
namespace {

using namespace layout_kit;

std::vector<int64_t> transpose_perm(const std::optional<std::vector<int64_t>>& perm, size_t rank) {
  std::vector<int64_t> p;
  if (!perm) {
    for (size_t i = rank; i-- > 0;) p.push_back(static_cast<int64_t>(i));
    return p;
  }
  p = *perm;
  if (p.size() != rank) fail("perm ", shape_of(p).to_string(), " has ", p.size(), " entries for an input of rank ", rank);
  std::vector<bool> seen(rank, false);
  for (int64_t x : p) {
    if (x < 0 || x >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(x)])
      fail("perm ", shape_of(p).to_string(), " is not a permutation of [0, ", rank, ")");
    seen[static_cast<size_t>(x)] = true;
  }
  return p;
}

std::optional<std::vector<int64_t>> perm_attr(const AttributeView& a) {
  if (!a.has("perm")) return std::nullopt;
  return a.get_ints("perm");
}

void add_transpose(Registry& r) {
  for (int v : {1, 13, 21, 23, 24, 25}) {
    auto infer = [](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      auto perm = perm_attr(ctx.attrs);
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        ctx.set_output(0, Type::tensor(t.elem, perm ? unknown_dims(perm->size()) : Shape{}));
        return;
      }
      auto p = transpose_perm(perm, t.shape.dims.size());
      Shape s = unknown_dims(p.size());
      for (size_t i = 0; i < p.size(); ++i) s.dims[i] = t.shape.dims[static_cast<size_t>(p[i])];
      ctx.set_output(0, Type::tensor(t.elem, s));
    };
    auto kernel = [](const KernelInit& init) {
      auto perm = perm_attr(init.attrs);
      return make_kernel([perm](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        const Dims& xd = x.dims();
        auto p = transpose_perm(perm, xd.size());
        const Dims xs = strides_of(xd);
        Dims out(p.size()), strides(p.size());
        for (size_t i = 0; i < p.size(); ++i) {
          out[i] = xd[static_cast<size_t>(p[i])];
          strides[i] = xs[static_cast<size_t>(p[i])];
        }
        Tensor& y = ctx.allocate_output(0, x.dtype(), out);
        gather_strided(x, y, out, strides);
      });
    };
    add_versions(r, "", "Transpose", {v}, {{{0}, all_types(v)}}, infer, kernel);
  }
}

}  // namespace

void register_transpose(Registry& r) { add_transpose(r); }

}  // namespace onyx::ops
