// ai.onnx CenterCropPad (18) and Col2Im (18).
// CenterCropPad: for each of `axes` (default: all), a dimension larger than the requested size is cropped to a
// centered window (start = (dim - size) / 2, rounded down), a smaller one is padded with zeros (empty strings,
// false) around the input (before = (size - dim) / 2, rounded down).
// Col2Im: sums column blocks [N, C * prod(block_shape), L] back into images [N, C, *image_shape], with the
// `dilations`, `pads` ([x1_begin, x2_begin, ..., x1_end, ...]) and `strides` attributes of a convolution; L must be
// the number of block positions. Floating-point sums accumulate in double; integers wrap; bool sums are "or".
#include <algorithm>
#include <complex>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {


// ---- CenterCropPad ----

std::vector<int64_t> crop_axes(const std::optional<std::vector<int64_t>>& attr, int64_t rank) {
  std::vector<int64_t> axes;
  if (!attr) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    return axes;
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : *attr) {
    a = normalize_axis(a, rank, "axes value");
    if (seen[a]) fail("axis ", a, " appears more than once in axes");
    seen[a] = true;
    axes.push_back(a);
  }
  return axes;
}

std::optional<std::vector<int64_t>> axes_attr(const AttributeView& attrs) {
  if (!attrs.has("axes")) return std::nullopt;
  return attrs.get_ints("axes");
}

void infer_center_crop_pad(InferContext& ctx) {
  const Type& x = ctx.input_type(0);
  auto r = rank_of(x);
  if (!r) {
    ctx.set_output(0, Type::tensor(x.elem));
    return;
  }
  const int64_t rank = static_cast<int64_t>(*r);
  auto axes = crop_axes(axes_attr(ctx.attrs), rank);
  Shape s = x.shape;
  const Tensor* shape = ctx.input_value(1);
  std::vector<int64_t> sizes;
  if (shape) {
    sizes = read_ints(*shape);
    if (sizes.size() != axes.size()) ctx.error(cat("shape has ", sizes.size(), " values for ", axes.size(), " axes"));
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!shape) {
      s.dims[axes[i]] = Dim{};
      continue;
    }
    if (sizes[i] < 0) ctx.error(cat("shape value ", sizes[i], " is negative"));
    s.dims[axes[i]] = known_dim(sizes[i]);
  }
  ctx.set_output(0, Type::tensor(x.elem, s));
}

void run_center_crop_pad(KernelContext& ctx, const std::optional<std::vector<int64_t>>& axes_attr_v) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  auto axes = crop_axes(axes_attr_v, rank);
  std::vector<int64_t> sizes = read_ints(ctx.input(1));
  if (sizes.size() != axes.size()) ctx.error(cat("shape has ", sizes.size(), " values for ", axes.size(), " axes"));
  Dims od = xd;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] < 0) ctx.error(cat("shape value ", sizes[i], " is negative"));
    od[axes[i]] = sizes[i];
  }
  check_data_sized(od, x.dtype(), "CenterCropPad");
  // Offset from output to input position along each axis.
  std::vector<int64_t> shift(static_cast<size_t>(rank), 0);
  for (int64_t a = 0; a < rank; ++a) shift[a] = xd[a] >= od[a] ? (xd[a] - od[a]) / 2 : -((od[a] - xd[a]) / 2);
  Tensor& y = ctx.allocate_output(0, x.dtype(), od);
  const Dims xs = strides_of(xd);
  ElementCopier cp(x, y);
  for_each_index(od, [&](int64_t i, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (int64_t a = 0; a < rank; ++a) {
      const int64_t s = idx[a] + shift[a];
      if (s < 0 || s >= xd[a]) return;  // padding stays zero
      off += s * xs[a];
    }
    cp.copy(static_cast<uint64_t>(off), static_cast<uint64_t>(i));
  });
}

// ---- Col2Im ----

struct Col2ImAttrs {
  std::optional<std::vector<int64_t>> dilations, pads, strides;
};

struct Col2ImGeometry {
  Dims image, block, dil, pads, strides, blocks;  // blocks: block positions per spatial dim
};

Col2ImGeometry col2im_geometry(const Col2ImAttrs& at, std::vector<int64_t> image, std::vector<int64_t> block) {
  const size_t n = image.size();
  if (n == 0) fail("image_shape must not be empty");
  if (block.size() != n) fail("block_shape has ", block.size(), " values, image_shape has ", n);
  Col2ImGeometry g;
  g.image = std::move(image);
  g.block = std::move(block);
  g.dil = at.dilations.value_or(Dims(n, 1));
  g.pads = at.pads.value_or(Dims(2 * n, 0));
  g.strides = at.strides.value_or(Dims(n, 1));
  if (g.dil.size() != n) fail("dilations has ", g.dil.size(), " values; expected ", n);
  if (g.strides.size() != n) fail("strides has ", g.strides.size(), " values; expected ", n);
  if (g.pads.size() != 2 * n) fail("pads has ", g.pads.size(), " values; expected ", 2 * n);
  const int64_t big = int64_t{1} << 31;  // keeps the products below free of overflow
  for (size_t d = 0; d < n; ++d) {
    if (g.image[d] < 0 || g.image[d] > big) fail("image_shape value ", g.image[d], " is out of range");
    if (g.block[d] <= 0 || g.block[d] > big) fail("block_shape value ", g.block[d], " must be positive");
    if (g.dil[d] <= 0 || g.dil[d] > big) fail("dilations value ", g.dil[d], " must be positive");
    if (g.strides[d] <= 0 || g.strides[d] > big) fail("strides value ", g.strides[d], " must be positive");
    if (g.pads[d] < 0 || g.pads[d + n] < 0 || g.pads[d] > big || g.pads[d + n] > big) fail("pads must be non-negative");
    const int64_t span = g.image[d] + g.pads[d] + g.pads[d + n] - g.dil[d] * (g.block[d] - 1) - 1;
    g.blocks.push_back(span < 0 ? 0 : span / g.strides[d] + 1);
  }
  check_data_sized(g.block, DataType::Undefined, "Col2Im block_shape");
  check_data_sized(g.blocks, DataType::Undefined, "Col2Im block positions");
  return g;
}

template <class T>
void col2im_typed(const Tensor& x, Tensor& y, const Col2ImGeometry& g, int64_t batch, int64_t channels) {
  constexpr bool floating = std::is_floating_point_v<T> || is_small_float_v<T>;
  constexpr bool complex = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
  using Acc = std::conditional_t<floating, double, std::conditional_t<complex, std::complex<double>, T>>;
  const size_t n = g.image.size();
  const int64_t img = product(g.image), kb = product(g.block), l = product(g.blocks);
  std::vector<Acc> acc(static_cast<size_t>(img));
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  const Dims is = strides_of(g.image);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      std::fill(acc.begin(), acc.end(), Acc{});
      for_each_index(g.block, [&](int64_t k, const std::vector<int64_t>& kidx) {
        const T* row = px + ((b * channels + c) * kb + k) * l;
        for_each_index(g.blocks, [&](int64_t p, const std::vector<int64_t>& pidx) {
          int64_t off = 0;
          for (size_t d = 0; d < n; ++d) {
            const int64_t pos = pidx[d] * g.strides[d] - g.pads[d] + kidx[d] * g.dil[d];
            if (pos < 0 || pos >= g.image[d]) return;
            off += pos * is[d];
          }
          if constexpr (std::is_same_v<T, bool>) {
            acc[off] = acc[off] || row[p];
          } else if constexpr (floating) {
            if constexpr (is_small_float_v<T>) acc[off] += static_cast<float>(row[p]);
            else acc[off] += static_cast<double>(row[p]);
          } else if constexpr (complex) {
            acc[off] += Acc(row[p]);
          } else {
            using U = std::make_unsigned_t<T>;
            acc[off] = static_cast<T>(static_cast<U>(acc[off]) + static_cast<U>(row[p]));
          }
        });
      });
      T* out = py + (b * channels + c) * img;
      for (int64_t i = 0; i < img; ++i) {
        if constexpr (is_small_float_v<T>) out[i] = from_double<T>(acc[i]);
        else if constexpr (complex) out[i] = T(acc[i]);
        else out[i] = static_cast<T>(acc[i]);
      }
    }
}

void infer_col2im(InferContext& ctx, const Col2ImAttrs& at) {
  const Type& x = ctx.input_type(0);
  auto r = rank_of(x);
  if (r && *r != 3) ctx.error(cat("input must have rank 3, got ", *r));
  const Tensor* image = ctx.input_value(1);
  const Tensor* block = ctx.input_value(2);
  if (!image) {
    ctx.set_output(0, Type::tensor(x.elem));
    return;
  }
  std::vector<int64_t> iv = read_ints(*image);
  Shape s;
  s.rank_known = true;
  s.dims.resize(2);
  if (r) s.dims[0] = x.shape.dims[0];
  if (block) {
    Col2ImGeometry g = col2im_geometry(at, iv, read_ints(*block));
    if (r && x.shape.dims[1].value) {
      const int64_t kb = product(g.block);
      if (*x.shape.dims[1].value % kb) ctx.error(cat("input dimension 1 (", *x.shape.dims[1].value, ") is not a multiple of prod(block_shape) = ", kb));
      s.dims[1] = known_dim(*x.shape.dims[1].value / kb);
    }
  }
  for (int64_t v : iv) s.dims.push_back(known_dim(v));
  ctx.set_output(0, Type::tensor(x.elem, s));
}

void run_col2im(KernelContext& ctx, const Col2ImAttrs& at) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  if (xd.size() != 3) ctx.error(cat("input must have rank 3, got ", xd.size()));
  const Tensor& it = ctx.input(1);
  const Tensor& bt = ctx.input(2);
  if (it.dims().size() != 1 || bt.dims().size() != 1) ctx.error("image_shape and block_shape must be 1-D");
  Col2ImGeometry g = col2im_geometry(at, read_ints(it), read_ints(bt));
  const int64_t kb = product(g.block), l = product(g.blocks);
  if (xd[1] % kb) ctx.error(cat("input dimension 1 (", xd[1], ") is not a multiple of prod(block_shape) = ", kb));
  if (xd[2] != l) ctx.error(cat("input dimension 2 (", xd[2], ") differs from the number of blocks ", l));
  const int64_t channels = xd[1] / kb;
  Dims od = {xd[0], channels};
  od.insert(od.end(), g.image.begin(), g.image.end());
  check_data_sized(od, x.dtype(), "Col2Im");
  Tensor& y = ctx.allocate_output(0, x.dtype(), od);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T> || is_small_float_v<T> || std::is_same_v<T, std::complex<float>> ||
                  std::is_same_v<T, std::complex<double>>)
      col2im_typed<T>(x, y, g, xd[0], channels);
    else
      ctx.error(cat("element type ", x.dtype(), " is not supported"));
  });
}

}  // namespace

void register_center_crop_col2im(Registry& r) {
  r.add(OpDef{"", "CenterCropPad", 18, {{{0}, all_tensor_types(18)}, {{1}, {DataType::Int32, DataType::Int64}}}, infer_center_crop_pad, [](const KernelInit& init) {
                auto axes = axes_attr(init.attrs);
                return make_kernel([axes](KernelContext& ctx) { run_center_crop_pad(ctx, axes); });
              }});
  auto col2im_attrs = [](const AttributeView& attrs) {
    Col2ImAttrs at;
    if (attrs.has("dilations")) at.dilations = attrs.get_ints("dilations");
    if (attrs.has("pads")) at.pads = attrs.get_ints("pads");
    if (attrs.has("strides")) at.strides = attrs.get_ints("strides");
    return at;
  };
  r.add(OpDef{"", "Col2Im", 18, {{{0}, all_tensor_types(18)}, {{1, 2}, {DataType::Int64}}},
              [col2im_attrs](InferContext& ctx) { infer_col2im(ctx, col2im_attrs(ctx.attrs)); },
              [col2im_attrs](const KernelInit& init) {
                Col2ImAttrs at = col2im_attrs(init.attrs);
                return make_kernel([at](KernelContext& ctx) { run_col2im(ctx, at); });
              }});
}

}  // namespace onyx::ops
