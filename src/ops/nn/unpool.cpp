// ai.onnx MaxUnpool — versions 9, 11, 22.
// Inverse of MaxPool: X [N,C,d1..dk] values are scattered to the flat positions given by I (the Indices output of
// MaxPool, same shape as X, flat over the whole default-shaped output); everything else is 0. The default output
// shape is (d - 1) * stride - pad_begin - pad_end + kernel per spatial axis. With the optional output_shape input
// the default-shaped result is placed at the origin of a zero tensor of that (not smaller) shape, as the reference
// does. MaxUnpool-11 only clarified the output_shape doc; MaxUnpool-22 adds bfloat16.
#include <cstring>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

struct UnpoolParams {
  Dims kernel, strides, pads;
};

UnpoolParams parse_unpool(const AttributeView& a) {
  UnpoolParams p;
  p.kernel = a.get_ints("kernel_shape");
  const size_t k = p.kernel.size();
  if (k == 0) fail("kernel_shape must not be empty");
  for (int64_t v : p.kernel)
    if (v <= 0) fail("kernel_shape values must be positive");
  p.strides = a.get_ints("strides", Dims(k, 1));
  p.pads = a.get_ints("pads", Dims(2 * k, 0));
  if (p.strides.size() != k) fail("strides must have ", k, " values");
  if (p.pads.size() != 2 * k) fail("pads must have ", 2 * k, " values");
  for (int64_t v : p.strides)
    if (v <= 0) fail("strides must be positive");
  for (int64_t v : p.pads)
    if (v < 0) fail("pads must not be negative");
  return p;
}

int64_t default_dim(const UnpoolParams& p, size_t i, int64_t in) {
  const size_t k = p.kernel.size();
  return (in - 1) * p.strides[i] - (p.pads[i] + p.pads[k + i]) + p.kernel[i];
}

void run_unpool(const UnpoolParams& p, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Dims& xd = x.dims();
  const size_t k = p.kernel.size();
  if (xd.size() != k + 2) ctx.error(cat("X has rank ", xd.size(), " but kernel_shape has ", k, " values"));
  if (ind.dims() != xd) ctx.error(cat("I shape ", shape_of(ind.dims()).to_string(), " differs from X shape ", shape_of(xd).to_string()));
  Dims def = {xd[0], xd[1]};
  for (size_t i = 0; i < k; ++i) {
    int64_t d = default_dim(p, i, xd[2 + i]);
    if (d < 0) ctx.error(cat("the output dim for spatial axis ", i, " would be negative (", d, ")"));
    def.push_back(d);
  }
  Dims out = def;
  if (ctx.has_input(2)) {
    out = read_ints(ctx.input(2));
    if (out.size() != def.size()) ctx.error(cat("output_shape has ", out.size(), " values, expected ", def.size()));
    for (size_t i = 0; i < out.size(); ++i)
      if (i < 2 ? out[i] != def[i] : out[i] < def[i])
        ctx.error(cat("output_shape ", shape_of(out).to_string(), " is incompatible with the unpooled shape ", shape_of(def).to_string()));
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  const int64_t def_total = product(def);
  std::vector<int64_t> idx = read_ints(ind);
  const Dims def_strides = strides_of(def), out_strides = strides_of(out);
  const size_t esize = x.bytes().size() / std::max<uint64_t>(x.element_count(), 1);
  const char* src = x.data<char>();
  char* dst = y.mutable_data<char>();
  for (size_t e = 0; e < idx.size(); ++e) {
    int64_t f = idx[e];
    if (f < 0 || f >= def_total) ctx.error(cat("index ", f, " is out of range [0, ", def_total, ")"));
    int64_t o = 0;
    for (size_t d = 0; d < def.size(); ++d) {
      o += (f / def_strides[d]) * out_strides[d];
      f %= def_strides[d];
    }
    std::memcpy(dst + o * static_cast<int64_t>(esize), src + e * esize, esize);
  }
}

void infer_unpool(const UnpoolParams& p, InferContext& ctx) {
  if (!ctx.has_input(0)) return;
  const Type& xt = ctx.input_type(0);
  Type out = Type::tensor(xt.elem);
  const size_t k = p.kernel.size();
  if (ctx.has_input(2)) {
    if (const Tensor* os = ctx.input_value(2)) {
      Dims d = read_ints(*os);
      if (d.size() != k + 2) ctx.error(cat("output_shape has ", d.size(), " values, expected ", k + 2));
      for (int64_t v : d)
        if (v < 0) ctx.error("output_shape values must not be negative");
      out = tensor_type(xt.elem, d);
    } else {
      out.shape.rank_known = true;
      out.shape.dims.assign(k + 2, Dim{});
    }
  } else if (xt.shape.rank_known) {
    if (xt.shape.dims.size() != k + 2) ctx.error(cat("X has rank ", xt.shape.dims.size(), " but kernel_shape has ", k, " values"));
    out.shape.rank_known = true;
    out.shape.dims = {xt.shape.dims[0], xt.shape.dims[1]};
    for (size_t i = 0; i < k; ++i) {
      const Dim& d = xt.shape.dims[2 + i];
      out.shape.dims.push_back(d.value ? known_dim(default_dim(p, i, *d.value)) : Dim{});
    }
  }
  ctx.set_output(0, out);
}

}  // namespace

void register_unpool(Registry& r) {
  const std::vector<DataType> f = {D::Float16, D::Float, D::Double};
  for (int v : {9, 11, 22}) {
    auto infer = [](InferContext& ctx) { infer_unpool(parse_unpool(ctx.attrs), ctx); };
    auto kernel = [](const KernelInit& init) {
      UnpoolParams p = parse_unpool(init.attrs);
      return make_kernel([p](KernelContext& ctx) { run_unpool(p, ctx); });
    };
    r.add(OpDef{"", "MaxUnpool", v, {{{0}, v >= 22 ? kFloatTypes : f}, {{1, 2}, {D::Int64}}}, infer, kernel});
  }
}

}  // namespace onyx::ops
