// ai.onnx Gather, GatherElements, GatherND.
//   Gather         1, 11 (negative indices documented; accepted in every version here), 13 (bfloat16).
//                  out = data[:axis] + indices.shape + data[axis+1:].
//   GatherElements 11, 13 (bfloat16). out has the indices' shape; out[i..] = data[i.. with the axis coordinate
//                  replaced by indices[i..]]. Indices dims may not exceed the data's on the other axes.
//   GatherND       11, 12 (batch_dims), 13 (bfloat16). indices [..., m] address data[b..b+m) within batch;
//                  out = indices.shape[:-1] + data.shape[b+m:].
// Indices are int32/int64 (int64 only for GatherND); negative ones count from the end; out-of-range is an error.
// Gather of a 1-D shape tensor (symbolic dim values, see InferContext) by constant indices picks its dim values:
// Gather(Shape(x), 0) of x [N,3] holds N.
#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

int64_t fix_index(int64_t i, int64_t d) {
  int64_t j = i < 0 ? i + d : i;
  if (j < 0 || j >= d) fail("index ", i, " is out of range for a dim of size ", d);
  return j;
}

// ---- Gather ----

// Dim values of Gather's output when the data is a 1-D list of dims and the indices (0-D or 1-D) are known.
void gather_dim_values(InferContext& ctx) {
  if (!ctx.has_input_dim_values(0)) return;
  const int64_t axis = ctx.attrs.get_int("axis", 0);
  if (axis != 0 && axis != -1) return;
  auto data = ctx.input_as_dims(0);
  auto idx = static_input_ints(ctx, 1);
  if (!data || !idx) return;
  const int64_t n = static_cast<int64_t>(data->size());
  std::vector<Dim> out;
  for (int64_t i : *idx) {
    if (i < 0) i += n;
    if (i < 0 || i >= n) return;  // the run reports it
    out.push_back((*data)[static_cast<size_t>(i)]);
  }
  ctx.set_output_dim_values(0, std::move(out));
}

void add_gather(Registry& r) {
  for (int v : {1, 11, 13}) {
    auto infer = [](InferContext& ctx) {
      const Type& data = ctx.input_type(0);
      const Type& ind = ctx.input_type(1);
      if (data.kind != Type::Kind::Tensor || !data.shape.rank_known || ind.kind != Type::Kind::Tensor ||
          !ind.shape.rank_known) {
        ctx.set_output(0, Type::tensor(data.elem));
        return;
      }
      const auto& dd = data.shape.dims;
      const size_t axis = static_cast<size_t>(normalize_axis(ctx.attrs.get_int("axis", 0), static_cast<int64_t>(dd.size())));
      Shape s;
      s.rank_known = true;
      s.dims.assign(dd.begin(), dd.begin() + static_cast<long>(axis));
      s.dims.insert(s.dims.end(), ind.shape.dims.begin(), ind.shape.dims.end());
      s.dims.insert(s.dims.end(), dd.begin() + static_cast<long>(axis) + 1, dd.end());
      ctx.set_output(0, Type::tensor(data.elem, s));
      if (dd.size() == 1) gather_dim_values(ctx);
    };
    auto kernel = [](const KernelInit& init) {
      const int64_t axis_attr = init.attrs.get_int("axis", 0);
      return make_kernel([axis_attr](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        const Tensor& ind = ctx.input(1);
        const Dims& xd = x.dims();
        const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(xd.size())));
        const int64_t d = xd[axis];
        std::vector<int64_t> idx = read_ints(ind);
        for (int64_t& i : idx) i = fix_index(i, d);
        Dims out(xd.begin(), xd.begin() + static_cast<long>(axis));
        out.insert(out.end(), ind.dims().begin(), ind.dims().end());
        out.insert(out.end(), xd.begin() + static_cast<long>(axis) + 1, xd.end());
        Tensor& y = new_data_sized_output(ctx, 0, x.dtype(), out);
        const int64_t outer = product(xd, 0, axis), inner = product(xd, axis + 1);
        const int64_t n = static_cast<int64_t>(idx.size());
        if (inner >= 16) {
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < n; ++j)
              copy_elements(x, static_cast<uint64_t>((o * d + idx[static_cast<size_t>(j)]) * inner), y,
                         static_cast<uint64_t>((o * n + j) * inner), static_cast<uint64_t>(inner));
          return;
        }
        gather_into(x, y, [&](uint64_t i) {
          const int64_t k = static_cast<int64_t>(i);
          const int64_t in = k % inner, j = (k / inner) % n, o = k / (inner * n);
          return (o * d + idx[static_cast<size_t>(j)]) * inner + in;
        });
      });
    };
    add_versions(r, "", "Gather", {v}, {{{0}, all_tensor_types(v)}, {{1}, {D::Int32, D::Int64}}}, infer, kernel);
  }
}

// ---- GatherElements ----

void add_gather_elements(Registry& r) {
  for (int v : {11, 13}) {
    auto infer = [](InferContext& ctx) {
      const Type& data = ctx.input_type(0);
      const Type& ind = ctx.input_type(1);
      if (data.kind == Type::Kind::Tensor && data.shape.rank_known && ind.kind == Type::Kind::Tensor && ind.shape.rank_known &&
          data.shape.dims.size() != ind.shape.dims.size())
        ctx.error(cat("indices ", ind.shape.to_string(), " must have the rank of data ", data.shape.to_string()));
      if (data.kind == Type::Kind::Tensor && data.shape.rank_known)
        normalize_axis(ctx.attrs.get_int("axis", 0), static_cast<int64_t>(data.shape.dims.size()));
      ctx.set_output(0, Type::tensor(data.elem, ind.kind == Type::Kind::Tensor ? ind.shape : Shape{}));
    };
    auto kernel = [](const KernelInit& init) {
      const int64_t axis_attr = init.attrs.get_int("axis", 0);
      return make_kernel([axis_attr](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        const Tensor& ind = ctx.input(1);
        const Dims& xd = x.dims();
        const Dims& id = ind.dims();
        if (xd.size() != id.size())
          ctx.error(cat("indices ", shape_of(id).to_string(), " must have the rank of data ", shape_of(xd).to_string()));
        const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(xd.size())));
        for (size_t k = 0; k < xd.size(); ++k)
          if (k != axis && id[k] > xd[k])
            ctx.error(cat("indices ", shape_of(id).to_string(), " exceed data ", shape_of(xd).to_string(), " in dim ", k));
        std::vector<int64_t> idx = read_ints(ind);
        const int64_t d = xd[axis];
        for (int64_t& i : idx) i = fix_index(i, d);
        Tensor& y = ctx.allocate_output(0, x.dtype(), id);
        Dims strides = strides_of(xd);
        const int64_t axis_stride = strides[axis];
        strides[axis] = 0;
        StridedWalk w(id, strides);
        gather_into(x, y, [&](uint64_t i) { return w.next() + idx[i] * axis_stride; });
      });
    };
    add_versions(r, "", "GatherElements", {v}, {{{0}, all_tensor_types(v)}, {{1}, {D::Int32, D::Int64}}}, infer, kernel);
  }
}

// ---- GatherND ----

struct NdPlan {
  Dims out;
  int64_t m = 0, b = 0;
};

NdPlan plan_gather_nd(const Dims& xd, const Dims& id, int64_t b) {
  const int64_t r = static_cast<int64_t>(xd.size()), q = static_cast<int64_t>(id.size());
  if (r < 1 || q < 1) fail("data and indices must have rank >= 1, got ", r, " and ", q);
  if (b < 0 || b >= std::min(r, q)) fail("batch_dims ", b, " must be in [0, min(rank(data), rank(indices)) = ", std::min(r, q), ")");
  for (int64_t i = 0; i < b; ++i)
    if (xd[static_cast<size_t>(i)] != id[static_cast<size_t>(i)])
      fail("batch dims of data ", shape_of(xd).to_string(), " and indices ", shape_of(id).to_string(), " differ");
  const int64_t m = id.back();
  if (m < 1 || m > r - b) fail("last dim of indices is ", m, "; it must be in [1, ", r - b, "]");
  NdPlan p;
  p.m = m;
  p.b = b;
  p.out.assign(id.begin(), id.end() - 1);
  p.out.insert(p.out.end(), xd.begin() + b + m, xd.end());
  return p;
}

void add_gather_nd(Registry& r) {
  for (int v : {11, 12, 13}) {
    auto infer = [v](InferContext& ctx) {
      const Type& data = ctx.input_type(0);
      const Type& ind = ctx.input_type(1);
      const int64_t b = v >= 12 ? ctx.attrs.get_int("batch_dims", 0) : 0;
      if (data.kind != Type::Kind::Tensor || !data.shape.rank_known || ind.kind != Type::Kind::Tensor ||
          !ind.shape.rank_known || ind.shape.dims.empty() || !ind.shape.dims.back().value) {
        ctx.set_output(0, Type::tensor(data.elem));
        return;
      }
      const auto& dd = data.shape.dims;
      const auto& id = ind.shape.dims;
      const int64_t m = *id.back().value, r = static_cast<int64_t>(dd.size());
      if (b < 0 || b >= std::min<int64_t>(r, static_cast<int64_t>(id.size())) || m < 1 || m > r - b)
        ctx.error(cat("indices ", ind.shape.to_string(), " with batch_dims ", b, " do not fit data ", data.shape.to_string()));
      Shape s;
      s.rank_known = true;
      s.dims.assign(id.begin(), id.end() - 1);
      s.dims.insert(s.dims.end(), dd.begin() + b + m, dd.end());
      ctx.set_output(0, Type::tensor(data.elem, s));
    };
    auto kernel = [v](const KernelInit& init) {
      const int64_t b = v >= 12 ? init.attrs.get_int("batch_dims", 0) : 0;
      return make_kernel([b](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        const Tensor& ind = ctx.input(1);
        const Dims& xd = x.dims();
        NdPlan p = plan_gather_nd(xd, ind.dims(), b);
        std::vector<int64_t> idx = read_ints(ind);
        Tensor& y = new_data_sized_output(ctx, 0, x.dtype(), p.out);
        const Dims xs = strides_of(xd);
        const int64_t slice = product(xd, static_cast<size_t>(b + p.m));
        const int64_t tuples = product(ind.dims(), 0, ind.dims().size() - 1);
        const int64_t batches = product(xd, 0, static_cast<size_t>(b));
        const int64_t per_batch = batches ? tuples / batches : 0;
        const int64_t batch_size = product(xd, static_cast<size_t>(b));
        for (int64_t t = 0; t < tuples; ++t) {
          int64_t off = (per_batch ? t / per_batch : 0) * batch_size;
          for (int64_t j = 0; j < p.m; ++j) {
            const size_t ax = static_cast<size_t>(b + j);
            off += fix_index(idx[static_cast<size_t>(t * p.m + j)], xd[ax]) * xs[ax];
          }
          copy_elements(x, static_cast<uint64_t>(off), y, static_cast<uint64_t>(t * slice), static_cast<uint64_t>(slice));
        }
      });
    };
    add_versions(r, "", "GatherND", {v}, {{{0}, all_tensor_types(v)}, {{1}, {D::Int64}}}, infer, kernel);
  }
}

}  // namespace

void register_gather(Registry& r) {
  add_gather(r);
  add_gather_elements(r);
  add_gather_nd(r);
  r.set_gradient("", "Gather", grad::element_moves);
  r.set_gradient("", "GatherElements", grad::element_moves);
  r.set_gradient("", "GatherND", grad::element_moves);
}

}  // namespace onyx::ops
