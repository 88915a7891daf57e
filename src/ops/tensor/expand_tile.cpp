// ai.onnx Expand and Tile.
//   Expand 8, 13 (bfloat16): numpy-style bidirectional broadcast of the input to the int64 `shape` input (a 1 in
//          the shape keeps the input's dim; the output rank is the larger of the two).
//   Tile   1 (inputs: input, tiles (scalar), axis (scalar); float types: repeats one axis), 6 (repeats: a 1-D int64
//          input with one non-negative count per axis; all types), 13 (bfloat16).
// Output sizes are checked before allocating. Inference reads the shape and repeats inputs as constants or as the
// symbolic dim values of shape tensors (InferContext::input_as_dims), e.g. Expand(x, Shape(y)).
#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

// ---- Expand ----

void add_expand(Registry& r) {
  for (int v : {8, 13}) {
    auto infer = [](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      if (const Tensor* s = ctx.input_value(1)) {
        Dims shape = read_int_list(*s, "shape");
        for (int64_t x : shape)
          if (x < 0) ctx.error(cat("shape ", shape_of(shape).to_string(), " has a negative dim"));
        if (t.kind == Type::Kind::Tensor && t.shape.rank_known) {
          ctx.set_output(0, Type::tensor(t.elem, broadcast_shape(t.shape, shape_of(shape))));
          return;
        }
      }
      if (auto sym = shape_input_dims(ctx, 1); sym && t.kind == Type::Kind::Tensor && t.shape.rank_known) {
        Shape target;
        target.rank_known = true;
        target.dims = *sym;
        ctx.set_output(0, Type::tensor(t.elem, broadcast_shape(t.shape, target)));
        return;
      }
      ctx.set_output(0, Type::tensor(t.elem));
    };
    auto kernel = [](const KernelInit&) {
      return make_kernel([](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        Dims shape = read_int_list(ctx.input(1), "shape");
        for (int64_t s : shape)
          if (s < 0) ctx.error(cat("shape ", shape_of(shape).to_string(), " has a negative dim"));
        Dims out = broadcast_dims(x.dims(), shape);
        Tensor& y = new_data_sized_output(ctx, 0, x.dtype(), out);
        gather_strided(x, y, out, broadcast_strides(x.dims(), out));
      });
    };
    add_versions(r, "", "Expand", {v}, {{{0}, all_tensor_types(v)}, {{1}, {D::Int64}}}, infer, kernel);
  }
}

// ---- Tile ----

Dims tiled_dims(const Dims& in, const std::vector<int64_t>& repeats) {
  if (repeats.size() != in.size())
    fail("repeats has ", repeats.size(), " values for an input of rank ", in.size());
  Dims out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (repeats[i] < 0) fail("repeats ", shape_of(repeats).to_string(), " has a negative value");
    if (__builtin_mul_overflow(in[i], repeats[i], &out[i])) fail("tiled dim ", i, " overflows");
  }
  return out;
}

// Repeats of Tile-1: `tiles` copies along `axis`.
std::vector<int64_t> tile1_repeats(const Tensor& tiles, const Tensor& axis, size_t rank) {
  if (tiles.element_count() != 1 || axis.element_count() != 1) fail("Tile-1 tiles and axis must be scalars");
  auto scalar = [](const Tensor& t) {
    if (t.dtype() == D::Int64 || t.dtype() == D::Int32) return read_ints(t)[0];
    return static_cast<int64_t>(read_doubles(t)[0]);
  };
  std::vector<int64_t> rep(rank, 1);
  rep[static_cast<size_t>(normalize_axis(scalar(axis), static_cast<int64_t>(rank)))] = scalar(tiles);
  return rep;
}

// Source offsets of a tiled walk: coordinates wrap at the input dims.
class TileWalk {
 public:
  TileWalk(Dims out, Dims in) : out_(std::move(out)), in_(std::move(in)), strides_(strides_of(in_)), idx_(out_.size(), 0), src_(out_.size(), 0) {}
  int64_t next() {
    const int64_t cur = off_;
    for (size_t k = out_.size(); k-- > 0;) {
      ++idx_[k];
      if (++src_[k] == in_[k]) {
        src_[k] = 0;
        off_ -= strides_[k] * (in_[k] - 1);
      } else {
        off_ += strides_[k];
      }
      if (idx_[k] < out_[k]) break;
      idx_[k] = 0;
      off_ -= strides_[k] * src_[k];
      src_[k] = 0;
    }
    return cur;
  }

 private:
  Dims out_, in_, strides_, idx_, src_;
  int64_t off_ = 0;
};

void run_tile(KernelContext& ctx, const std::vector<int64_t>& repeats) {
  const Tensor& x = ctx.input(0);
  Dims out = tiled_dims(x.dims(), repeats);
  Tensor& y = new_data_sized_output(ctx, 0, x.dtype(), out);
  TileWalk w(out, x.dims());
  gather_into(x, y, [&](uint64_t) { return w.next(); });
}

Shape tiled_shape(const Shape& in, const std::vector<int64_t>& repeats) {
  if (repeats.size() != in.dims.size())
    fail("repeats has ", repeats.size(), " values for an input of rank ", in.dims.size());
  Shape s = in;
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] < 0) fail("repeats ", shape_of(repeats).to_string(), " has a negative value");
    Dim& d = s.dims[i];
    int64_t p = 0;
    if (d.value) d = __builtin_mul_overflow(*d.value, repeats[i], &p) ? Dim{} : known_dim(p);
    else if (repeats[i] == 0) d = known_dim(0);
    else if (repeats[i] != 1) d = Dim{};
  }
  return s;
}

// With symbolic repeats (dim values, e.g. Shape(y)): a dim of 1 repeated N times is N, of 0 stays 0.
Shape tiled_shape(const Shape& in, const std::vector<Dim>& repeats) {
  if (repeats.size() != in.dims.size())
    fail("repeats has ", repeats.size(), " values for an input of rank ", in.dims.size());
  Shape s = in;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const Dim& r = repeats[i];
    Dim& d = s.dims[i];
    int64_t p = 0;
    if (r.value && d.value) d = __builtin_mul_overflow(*d.value, *r.value, &p) ? Dim{} : known_dim(p);
    else if (r.value) d = *r.value == 0 ? known_dim(0) : (*r.value == 1 ? d : Dim{});
    else if (d.value && *d.value == 0) d = known_dim(0);
    else if (d.value && *d.value == 1) d = Dim{r.value, r.param, {}};
    else d = Dim{};
  }
  return s;
}

void add_tile(Registry& r) {
  {
    auto infer = [](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      const Tensor *tiles = ctx.input_value(1), *axis = ctx.input_value(2);
      if (t.kind == Type::Kind::Tensor && t.shape.rank_known && tiles && axis) {
        ctx.set_output(0, Type::tensor(t.elem, tiled_shape(t.shape, tile1_repeats(*tiles, *axis, t.shape.dims.size()))));
        return;
      }
      ctx.set_output(0, Type::tensor(t.elem, t.kind == Type::Kind::Tensor && t.shape.rank_known ? unknown_dims(t.shape.dims.size()) : Shape{}));
    };
    auto kernel = [](const KernelInit&) {
      return make_kernel([](KernelContext& ctx) {
        run_tile(ctx, tile1_repeats(ctx.input(1), ctx.input(2), ctx.input(0).dims().size()));
      });
    };
    add_versions(r, "", "Tile", {1}, {{{0}, float_types(1)}}, infer, kernel);
  }
  for (int v : {6, 13}) {
    auto infer = [](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      const bool ranked = t.kind == Type::Kind::Tensor && t.shape.rank_known;
      if (const Tensor* rep = ctx.input_value(1); rep && ranked) {
        ctx.set_output(0, Type::tensor(t.elem, tiled_shape(t.shape, read_int_list(*rep, "repeats"))));
        return;
      }
      if (auto rep = shape_input_dims(ctx, 1); rep && ranked && rep->size() == t.shape.dims.size()) {
        ctx.set_output(0, Type::tensor(t.elem, tiled_shape(t.shape, *rep)));
        return;
      }
      ctx.set_output(0, Type::tensor(t.elem, ranked ? unknown_dims(t.shape.dims.size()) : Shape{}));
    };
    auto kernel = [](const KernelInit&) {
      return make_kernel([](KernelContext& ctx) { run_tile(ctx, read_int_list(ctx.input(1), "repeats")); });
    };
    add_versions(r, "", "Tile", {v}, {{{0}, all_tensor_types(v)}, {{1}, {D::Int64}}}, infer, kernel);
  }
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

void rule_expand(grad::Args& a) { a.set(0, grad::sum_to(a.dy(), a.in_dims(0))); }

}  // namespace

void register_expand_tile(Registry& r) {
  add_expand(r);
  add_tile(r);
  r.set_gradient("", "Expand", rule_expand);
  r.set_gradient("", "Tile", grad::element_moves);
}

}  // namespace onyx::ops
