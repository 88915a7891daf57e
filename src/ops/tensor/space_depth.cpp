// ai.onnx DepthToSpace (1, 11, 13) and SpaceToDepth (1, 13), on 4-D [N, C, H, W] tensors of any element type.
// DepthToSpace-11 adds `mode`: "DCR" (default; depth is read as [blocksize, blocksize, C']) or "CRD" (depth read as
// [C', blocksize, blocksize]); version 1 is DCR. 13 adds bfloat16.
// SpaceToDepth moves each blocksize x blocksize spatial block into depth as [blocksize, blocksize, C].
#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {


int64_t read_blocksize(const AttributeView& attrs) {
  int64_t b = attrs.get_int("blocksize");
  if (b <= 0 || b > (int64_t{1} << 31)) fail("blocksize ", b, " is out of range");
  return b;
}

bool read_crd(const AttributeView& attrs, int since) {
  if (since < 11) return false;
  std::string m = attrs.get_string("mode", "DCR");
  if (m != "DCR" && m != "CRD") fail("mode '", m, "' is not 'DCR' or 'CRD'");
  return m == "CRD";
}

// Output shape for inference; dims that are not divisible are an error.
void infer_space_depth(InferContext& ctx, bool to_space, int64_t b) {
  const Type& x = ctx.input_type(0);
  auto r = rank_of(x);
  if (!r) {
    ctx.set_output(0, Type::tensor(x.elem));
    return;
  }
  if (*r != 4) ctx.error(cat("input must have rank 4, got ", *r));
  Shape s = x.shape;
  const Dim &c = x.shape.dims[1], &h = x.shape.dims[2], &w = x.shape.dims[3];
  s.dims[1] = s.dims[2] = s.dims[3] = Dim{};
  if (to_space) {
    if (c.value) {
      if (*c.value % (b * b)) ctx.error(cat("channels ", *c.value, " are not divisible by blocksize^2 = ", b * b));
      s.dims[1] = known_dim(*c.value / (b * b));
    }
    if (h.value) s.dims[2] = known_dim(*h.value * b);
    if (w.value) s.dims[3] = known_dim(*w.value * b);
  } else {
    if (c.value) s.dims[1] = known_dim(*c.value * b * b);
    if (h.value) {
      if (*h.value % b) ctx.error(cat("height ", *h.value, " is not divisible by blocksize ", b));
      s.dims[2] = known_dim(*h.value / b);
    }
    if (w.value) {
      if (*w.value % b) ctx.error(cat("width ", *w.value, " is not divisible by blocksize ", b));
      s.dims[3] = known_dim(*w.value / b);
    }
  }
  ctx.set_output(0, Type::tensor(x.elem, s));
}

void run_depth_to_space(KernelContext& ctx, int64_t b, bool crd) {
  const Tensor& x = ctx.input(0);
  const Dims& d = x.dims();
  if (d.size() != 4) ctx.error(cat("input must have rank 4, got ", d.size()));
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  if (c % (b * b)) ctx.error(cat("channels ", c, " are not divisible by blocksize^2 = ", b * b));
  const int64_t oc = c / (b * b);
  Tensor& y = ctx.allocate_output(0, x.dtype(), {n, oc, h * b, w * b});
  ElementCopier cp(x, y);
  uint64_t o = 0;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < oc; ++ic)
      for (int64_t oh = 0; oh < h * b; ++oh)
        for (int64_t ow = 0; ow < w * b; ++ow, ++o) {
          const int64_t bh = oh % b, bw = ow % b;
          const int64_t src_c = crd ? (ic * b + bh) * b + bw : (bh * b + bw) * oc + ic;
          cp.copy(static_cast<uint64_t>(((in * c + src_c) * h + oh / b) * w + ow / b), o);
        }
}

void run_space_to_depth(KernelContext& ctx, int64_t b) {
  const Tensor& x = ctx.input(0);
  const Dims& d = x.dims();
  if (d.size() != 4) ctx.error(cat("input must have rank 4, got ", d.size()));
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  if (h % b || w % b) ctx.error(cat("height ", h, " and width ", w, " must be divisible by blocksize ", b));
  const int64_t oh = h / b, ow = w / b;
  Tensor& y = ctx.allocate_output(0, x.dtype(), {n, c * b * b, oh, ow});
  ElementCopier cp(x, y);
  uint64_t o = 0;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t oc = 0; oc < c * b * b; ++oc) {
      const int64_t bh = oc / (b * c), bw = (oc / c) % b, ic = oc % c;
      for (int64_t y0 = 0; y0 < oh; ++y0)
        for (int64_t x0 = 0; x0 < ow; ++x0, ++o)
          cp.copy(static_cast<uint64_t>(((in * c + ic) * h + y0 * b + bh) * w + x0 * b + bw), o);
    }
}

}  // namespace

void register_space_depth(Registry& r) {
  for (int v : {1, 11, 13}) {
    r.add(OpDef{"", "DepthToSpace", v, {{{0}, all_tensor_types(v)}},
                [v](InferContext& ctx) {
                  read_crd(ctx.attrs, v);
                  infer_space_depth(ctx, true, read_blocksize(ctx.attrs));
                },
                [v](const KernelInit& init) {
                  int64_t b = read_blocksize(init.attrs);
                  bool crd = read_crd(init.attrs, v);
                  return make_kernel([b, crd](KernelContext& ctx) { run_depth_to_space(ctx, b, crd); });
                }});
  }
  for (int v : {1, 13}) {
    r.add(OpDef{"", "SpaceToDepth", v, {{{0}, all_tensor_types(v)}},
                [](InferContext& ctx) { infer_space_depth(ctx, false, read_blocksize(ctx.attrs)); },
                [](const KernelInit& init) {
                  int64_t b = read_blocksize(init.attrs);
                  return make_kernel([b](KernelContext& ctx) { run_space_to_depth(ctx, b); });
                }});
  }
  r.set_gradient("", "DepthToSpace", grad::element_moves);
  r.set_gradient("", "SpaceToDepth", grad::element_moves);
}

}  // namespace onyx::ops
