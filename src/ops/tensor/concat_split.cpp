// ai.onnx Concat and Split.
//   Concat 1 (axis optional, default 1; float types), 4 (axis required; all types), 11 (negative axis), 13 (bfloat16).
//   Split  1 (split from the attribute or an optional second input; float types), 2 (all types, split attribute),
//          11 (negative axis), 13 (split as an optional int64 input; bfloat16), 18 (num_outputs attribute: chunks of
//          ceil(dim / num_outputs), the last one smaller). Without split sizes the dim is split equally among the
//          outputs and must divide evenly.
// Inputs of Concat must agree on every dim except the axis; inference keeps symbolic dims of the other axes.
// Concat of 1-D shape tensors (symbolic dim values, see InferContext) with constants concatenates their dim values:
// Concat(Shape(x)[:1], [-1]) of x [N,3] holds {N, -1}.
#include <cstring>

#include "ir/tensor_alloc.hpp"
#include "ops/op_kit.hpp"
#include "ops/gradient_rule.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

// ---- Concat ----

// Dim values of a Concat of 1-D lists of dims (at least one symbolic, the others constant).
void concat_dim_values(InferContext& ctx) {
  std::vector<Dim> out;
  bool symbolic = false;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Type& t = ctx.input_type(i);
    if (t.kind != Type::Kind::Tensor || !t.shape.rank_known || t.shape.dims.size() != 1) return;
    auto d = ctx.input_as_dims(i);
    if (!d) return;
    symbolic = symbolic || ctx.has_input_dim_values(i);
    out.insert(out.end(), d->begin(), d->end());
    if (out.size() > InferContext::kMaxDimValues) return;
  }
  if (symbolic) ctx.set_output_dim_values(0, std::move(out));
}

void infer_concat(InferContext& ctx, int64_t axis_attr) {
  DataType dt = DataType::Undefined;
  const Shape* first = nullptr;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Type& t = ctx.input_type(i);
    if (dt == DataType::Undefined) dt = t.elem;
    if (t.kind == Type::Kind::Tensor && t.shape.rank_known && !first) first = &t.shape;
  }
  if (!first) {
    ctx.set_output(0, Type::tensor(dt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(first->dims.size());
  const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, rank));
  Shape out = unknown_dims(static_cast<size_t>(rank));
  int64_t sum = 0;
  bool sum_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Type& t = ctx.input_type(i);
    if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
      sum_known = false;
      continue;
    }
    if (t.shape.dims.size() != static_cast<size_t>(rank))
      ctx.error(cat("input ", i, " has rank ", t.shape.dims.size(), " ", t.shape.to_string(), ", input 0 has rank ", rank));
    for (size_t k = 0; k < t.shape.dims.size(); ++k) {
      const Dim& d = t.shape.dims[k];
      if (k == axis) {
        if (d.value) sum += *d.value;
        else sum_known = false;
        continue;
      }
      Dim& o = out.dims[k];
      if (d.value && o.value && *d.value != *o.value)
        ctx.error(cat("input ", i, " ", t.shape.to_string(), " differs from the others in dim ", k));
      if (d.value || (!o.value && o.param.empty())) o = d;
    }
  }
  if (sum_known) out.dims[axis] = known_dim(sum);
  ctx.set_output(0, Type::tensor(dt, out));
  if (rank == 1) concat_dim_values(ctx);
}

// Elements of whole bytes: for each index of the dims before the axis, each input's block is one memcpy into an
// output nothing fills first; large outputs split those indices over the thread team. NHWC channel concats (the
// fire, inception and dense blocks of CNNs) copy short blocks per pixel, where the generic loop's per-block
// dispatch cost more than the copy.
void concat_bytes(KernelContext& ctx, const Dims& out, size_t axis) {
  const size_t n = ctx.num_inputs();
  const size_t es = static_cast<size_t>(dtype_bits(ctx.input(0).dtype()) / 8);
  ctx.set_output(0, allocate_for_overwrite(ctx.input(0).dtype(), out));
  char* dst = ctx.outputs()[0].tensor.mutable_data<char>();
  std::vector<const char*> src(n);
  std::vector<size_t> block(n);
  size_t row = 0;
  for (size_t i = 0; i < n; ++i) {
    src[i] = ctx.input(i).bytes().data();
    block[i] = static_cast<size_t>(product(ctx.input(i).dims(), axis)) * es;
    row += block[i];
  }
  const int64_t outer = product(out, 0, axis);
  // Blocks of one 4- or 8-byte element (interleaving, as rotary embeddings do on a last axis of 1) are copied
  // as values: a memcpy call per element costs more than the copy.
  bool all_4 = true, all_8 = true;
  for (size_t i = 0; i < n; ++i) {
    all_4 = all_4 && block[i] == 4;
    all_8 = all_8 && block[i] == 8;
  }
  const bool parallel = outer > 1 && static_cast<uint64_t>(outer) * row > (uint64_t{1} << 20);
  if (all_4 || all_8) {
    auto interleave = [&](auto tag) {
      using T = decltype(tag);
      constexpr size_t es_v = sizeof(T);
#pragma omp parallel for schedule(static) if (parallel)
      for (int64_t o = 0; o < outer; ++o) {
        char* d = dst + static_cast<size_t>(o) * row;
        for (size_t i = 0; i < n; ++i) {
          T v;
          std::memcpy(&v, src[i] + static_cast<size_t>(o) * es_v, es_v);
          std::memcpy(d + i * es_v, &v, es_v);
        }
      }
    };
    if (all_4) interleave(uint32_t{});
    else interleave(uint64_t{});
    return;
  }
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t o = 0; o < outer; ++o) {
    char* d = dst + static_cast<size_t>(o) * row;
    for (size_t i = 0; i < n; ++i) {
      if (block[i] == 0) continue;  // an empty input has no buffer (memcpy wants pointers even for 0 bytes)
      std::memcpy(d, src[i] + static_cast<size_t>(o) * block[i], block[i]);
      d += block[i];
    }
  }
}

void run_concat(KernelContext& ctx, int64_t axis_attr, bool fast) {
  const size_t n = ctx.num_inputs();
  if (n == 0) ctx.error("Concat needs at least one input");
  const Tensor& x0 = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x0.dims().size());
  const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, rank));
  Dims out = x0.dims();
  out[axis] = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(i);
    if (x.dtype() != x0.dtype()) ctx.error(cat("input ", i, " has element type ", x.dtype(), ", input 0 has ", x0.dtype()));
    if (x.dims().size() != x0.dims().size())
      ctx.error(cat("input ", i, " has shape ", shape_of(x.dims()).to_string(), ", input 0 has ", shape_of(x0.dims()).to_string()));
    for (size_t k = 0; k < x.dims().size(); ++k)
      if (k != axis && x.dims()[k] != x0.dims()[k])
        ctx.error(cat("input ", i, " has shape ", shape_of(x.dims()).to_string(), ", which differs from input 0 ",
                      shape_of(x0.dims()).to_string(), " in dim ", k));
    out[axis] += x.dims()[axis];
  }
  if (fast && x0.dtype() != DataType::String && dtype_bits(x0.dtype()) >= 8) {
    check_data_sized(out, x0.dtype());
    return concat_bytes(ctx, out, axis);
  }
  Tensor& y = new_data_sized_output(ctx, 0, x0.dtype(), out);
  const int64_t outer = product(out, 0, axis);
  uint64_t off = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = ctx.input(i);
      const uint64_t block = static_cast<uint64_t>(product(x.dims(), axis));
      copy_elements(x, static_cast<uint64_t>(o) * block, y, off, block);
      off += block;
    }
  }
}

void add_concat(Registry& r) {
  for (int v : {1, 4, 11, 13}) {
    auto axis_of = [v](const AttributeView& a) {
      if (v == 1) return a.get_int("axis", 1);
      return a.get_int("axis");
    };
    auto infer = [axis_of](InferContext& ctx) { infer_concat(ctx, axis_of(ctx.attrs)); };
    auto kernel = [axis_of](const KernelInit& init) {
      int64_t axis = axis_of(init.attrs);
      const bool fast = !init.reference_only;
      return make_kernel([axis, fast](KernelContext& ctx) { run_concat(ctx, axis, fast); });
    };
    add_versions(r, "", "Concat", {v}, {{{-1}, v == 1 ? float_types(1) : all_tensor_types(v)}}, infer, kernel);
  }
}

// ---- Split ----

struct SplitSpec {
  int64_t axis = 0;
  std::optional<std::vector<int64_t>> sizes;  // explicit sizes (attribute or input)
  std::optional<int64_t> num_outputs;         // Split-18
};

// Sizes of the parts of a dim of size `d` split into `n` outputs.
std::vector<int64_t> split_sizes(const SplitSpec& s, int64_t d, size_t n) {
  if (s.sizes) {
    const auto& v = *s.sizes;
    if (v.size() != n) fail("split has ", v.size(), " sizes for ", n, " outputs");
    int64_t sum = 0;
    for (int64_t x : v) {
      if (x < 0) fail("split size ", x, " is negative");
      if (x > d - sum) fail("split sizes ", shape_of(v).to_string(), " exceed the dim ", d);
      sum += x;
    }
    if (sum != d) fail("split sizes ", shape_of(v).to_string(), " do not add up to the dim ", d);
    return v;
  }
  if (n == 0) fail("Split has no outputs");
  std::vector<int64_t> out;
  if (s.num_outputs) {
    if (*s.num_outputs != static_cast<int64_t>(n)) fail("num_outputs is ", *s.num_outputs, " but the node has ", n, " outputs");
    const int64_t chunk = (d + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
    int64_t left = d;
    for (size_t i = 0; i < n; ++i) {
      out.push_back(std::min(chunk, left));
      left -= out.back();
    }
    return out;
  }
  if (d % static_cast<int64_t>(n)) fail("dim ", d, " does not split evenly into ", n, " outputs");
  return std::vector<int64_t>(n, d / static_cast<int64_t>(n));
}

// The split spec from attributes and (when known) the split input.
SplitSpec split_spec(const AttributeView& a, int v, const Tensor* split_input, bool split_input_given) {
  SplitSpec s;
  s.axis = a.get_int("axis", 0);
  if (v < 13 && a.has("split")) s.sizes = a.get_ints("split");
  if ((v == 1 || v >= 13) && split_input_given) {
    if (s.sizes) fail("split is given both as attribute and input");
    if (split_input) {
      if (split_input->dims().size() > 1) fail("split must be 1-D");
      if (split_input->dtype() == D::Int64 || split_input->dtype() == D::Int32) {
        s.sizes = read_ints(*split_input);
      } else {
        std::vector<int64_t> sizes;
        for (double x : read_doubles(*split_input)) sizes.push_back(static_cast<int64_t>(x));
        s.sizes = sizes;
      }
    }
  }
  if (v >= 18 && a.has("num_outputs")) {
    if (split_input_given) fail("Split-18 takes either the split input or num_outputs, not both");
    s.num_outputs = a.get_int("num_outputs");
    if (*s.num_outputs < 1) fail("num_outputs must be at least 1, got ", *s.num_outputs);
  }
  return s;
}

void add_split(Registry& r) {
  for (int v : {1, 2, 11, 13, 18}) {
    auto infer = [v](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      const bool given = ctx.has_input(1);
      const Tensor* split_value = given ? ctx.input_value(1) : nullptr;
      const size_t n = ctx.output_types.size();
      SplitSpec spec = split_spec(ctx.attrs, v, split_value, given);
      if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) {
        for (size_t i = 0; i < n; ++i) ctx.set_output(i, Type::tensor(t.elem));
        return;
      }
      const size_t axis = static_cast<size_t>(normalize_axis(spec.axis, static_cast<int64_t>(t.shape.dims.size())));
      const Dim& d = t.shape.dims[axis];
      std::optional<std::vector<int64_t>> sizes;
      if ((!given || split_value) && (d.value || spec.sizes)) {
        if (d.value) sizes = split_sizes(spec, *d.value, n);
        else sizes = spec.sizes;
        if (sizes->size() != n) ctx.error(cat("split has ", sizes->size(), " sizes for ", n, " outputs"));
      }
      for (size_t i = 0; i < n; ++i) {
        Shape s = t.shape;
        s.dims[axis] = sizes ? known_dim((*sizes)[i]) : Dim{};
        ctx.set_output(i, Type::tensor(t.elem, s));
      }
    };
    auto kernel = [v](const KernelInit& init) {
      AttributeView attrs = init.attrs;
      // Attributes are parsed once; the split input (if any) is read per run.
      SplitSpec fixed = split_spec(attrs, v, nullptr, false);
      const bool has_num = fixed.num_outputs.has_value();
      const bool fast = !init.reference_only;
      return make_kernel([v, fixed, has_num, fast](KernelContext& ctx) {
        const Tensor& x = ctx.input(0);
        SplitSpec spec = fixed;
        if ((v == 1 || v >= 13) && ctx.has_input(1)) {
          if (spec.sizes) ctx.error("split is given both as attribute and input");
          if (has_num) ctx.error("Split-18 takes either the split input or num_outputs, not both");
          const Tensor& s = ctx.input(1);
          if (s.dims().size() > 1) ctx.error("split must be 1-D");
          if (s.dtype() == D::Int64 || s.dtype() == D::Int32) {
            spec.sizes = read_ints(s);
          } else {
            std::vector<int64_t> sizes;
            for (double d : read_doubles(s)) sizes.push_back(static_cast<int64_t>(d));
            spec.sizes = sizes;
          }
        }
        const size_t axis = static_cast<size_t>(normalize_axis(spec.axis, static_cast<int64_t>(x.dims().size())));
        const int64_t d = x.dims()[axis];
        const std::vector<int64_t> sizes = split_sizes(spec, d, ctx.num_outputs());
        const int64_t outer = product(x.dims(), 0, axis);
        const int64_t inner = product(x.dims(), axis + 1);
        // Whole-byte elements: one memcpy per block into outputs nothing fills first (as Concat's).
        const bool bytes = fast && x.dtype() != D::String && dtype_bits(x.dtype()) >= 8;
        const size_t es = bytes ? static_cast<size_t>(dtype_bits(x.dtype()) / 8) : 0;
        int64_t start = 0;
        for (size_t j = 0; j < sizes.size(); ++j) {
          Dims od = x.dims();
          od[axis] = sizes[j];
          if (ctx.output_wanted(j) && bytes) {
            ctx.set_output(j, allocate_for_overwrite(x.dtype(), od));
            char* dst = ctx.outputs()[j].tensor.mutable_data<char>();
            const size_t block = static_cast<size_t>(sizes[j] * inner) * es, row = static_cast<size_t>(d * inner) * es;
            if (block > 0 && outer > 0) {  // an empty part or input has no buffer to offset
              const char* src = x.bytes().data() + static_cast<size_t>(start * inner) * es;
              for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * block, src + o * row, block);
            }
          } else if (ctx.output_wanted(j)) {
            Tensor& y = ctx.allocate_output(j, x.dtype(), od);
            const uint64_t block = static_cast<uint64_t>(sizes[j] * inner);
            for (int64_t o = 0; o < outer; ++o)
              copy_elements(x, static_cast<uint64_t>((o * d + start) * inner), y, static_cast<uint64_t>(o) * block, block);
          }
          start += sizes[j];
        }
      });
    };
    std::vector<TypeConstraint> types = {{{0}, v == 1 ? float_types(1) : all_tensor_types(v)}};
    if (v >= 13) types.push_back({{1}, {D::Int64}});
    add_versions(r, "", "Split", {v}, types, infer, kernel);
  }
}

}  // namespace

// Gradient rules (Gradient-1 of ai.onnx.preview.training; ops/gradient_rule.hpp): the gradients of the
// inputs from those reaching the outputs, in double.
namespace {

// Concat: each input gets its slab of dy along the axis.
void rule_concat(grad::Args& a) {
  const Dims& od = a.out_dims();
  const int64_t axis = normalize_axis(a.attrs.get_int("axis"), static_cast<int64_t>(od.size()));
  const int64_t outer = product(od, 0, static_cast<size_t>(axis)), inner = product(od, static_cast<size_t>(axis) + 1);
  const grad::Grad g = a.dy();
  int64_t start = 0;
  for (size_t i = 0; i < a.in.size(); ++i) {
    if (!a.in[i]) continue;
    const int64_t len = a.in_dims(i)[static_cast<size_t>(axis)];
    if (a.wants(i)) {
      grad::Grad gi = grad::zeros(a.in_dims(i));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < len * inner; ++k)
          gi.v[static_cast<size_t>(o * len * inner + k)] = g.v[static_cast<size_t>((o * od[axis] + start) * inner + k)];
      a.set(i, std::move(gi));
    }
    start += len;
  }
}

// Split: x's gradient is the outputs' gradients put back side by side (zeros for outputs none reached).
void rule_split(grad::Args& a) {
  const Dims& xd = a.in_dims(0);
  const int64_t axis = normalize_axis(a.attrs.get_int("axis", 0), static_cast<int64_t>(xd.size()));
  const int64_t outer = product(xd, 0, static_cast<size_t>(axis)), inner = product(xd, static_cast<size_t>(axis) + 1);
  grad::Grad gx = grad::zeros(xd);
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

}  // namespace

void register_concat_split(Registry& r) {
  add_concat(r);
  add_split(r);
  r.set_gradient("", "Concat", rule_concat);
  r.set_gradient("", "Split", rule_split);
  r.set_fast_kernels("", "Concat", {"copies of whole blocks"});
  r.set_fast_kernels("", "Split", {"copies of whole blocks"});
}

}  // namespace onyx::ops
