// ai.onnx tensor sequences: SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert, SequenceErase,
// SequenceLength, ConcatFromSequence (all version 11), SplitToSequence (11, 24) and SequenceMap (17).
// Element types: the IR-3 tensor types (no bfloat16) for the version-11 ops and SequenceMap-17 (as the spec
// lists them); SplitToSequence-24 accepts every tensor type up to float8e8m0.
// Positions (SequenceAt/Insert/Erase) are int32/int64 scalars; negative ones count from the back; out of range
// is an error. SplitToSequence: no 'split' means chunks of 1 (keepdims decides whether the axis stays); a scalar
// split gives equal chunks with a smaller last one; a 1-D split gives those lengths (summing to the axis size).
// ConcatFromSequence concatenates along 'axis', or stacks along a new axis when new_axis=1.
// SequenceMap runs 'body' once per element of the input sequence; each additional input is either a sequence
// (its i-th element is passed; same length required) or a tensor (passed as is to every iteration).
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {


// ---- helpers ----

const Datum& input_sequence(KernelContext& ctx, size_t i) {
  const Datum& d = ctx.input_datum(i);
  if (d.kind != Datum::Kind::Sequence) ctx.error(cat("input ", i, " is ", d.describe(), ", expected a sequence"));
  return d;
}

// The element type of a sequence input at inference (Unknown when not known); error when it is not a sequence.
Type seq_elem_of(const InferContext& ctx, size_t i) {
  const Type& t = ctx.input_type(i);
  if (t.kind == Type::Kind::Unknown) return {};
  if (t.kind != Type::Kind::Sequence) ctx.error(cat("input ", i, " is ", t.to_string(), ", expected a sequence"));
  return t.inner ? *t.inner : Type{};
}

void check_elem_dtype(const std::vector<DataType>& list, DataType dt, const std::string& what) {
  if (dt == DataType::Undefined || contains(list, dt)) return;
  std::string names;
  for (DataType t : list) names += (names.empty() ? "" : ", ") + std::string(dtype_name(t));
  fail(what, " has element type ", dt, "; allowed: ", names);
}

// Element dtype of a sequence datum: from its recorded element type, else from its first element.
DataType seq_dtype(const Datum& s) {
  if (s.elem_type.kind == Type::Kind::Tensor && s.elem_type.elem != DataType::Undefined) return s.elem_type.elem;
  if (!s.elements.empty() && s.elements[0].is_tensor()) return s.elements[0].tensor.dtype();
  return DataType::Undefined;
}

Type elem_type_for(DataType dt) { return dt == DataType::Undefined ? Type{} : Type::tensor(dt); }

// A position in [-n, n-1] (or [-n, n] when `inclusive_end`), normalized. A scalar; a one-element tensor is
// accepted too (the ONNX backend tests pass one).
int64_t position(KernelContext& ctx, size_t input, int64_t n, bool inclusive_end) {
  int64_t p = read_scalar_int(ctx.input(input), "position");
  int64_t hi = inclusive_end ? n : n - 1;
  if (p < -n || p > hi)
    ctx.error(cat("position ", p, " is out of range [", -n, ", ", hi, "] for a sequence of ", n, " tensors"));
  return p < 0 ? p + n : p;
}

// ---- SequenceEmpty ----

void add_sequence_empty(Registry& r) {
  auto dtype_of = [](const AttributeView& attrs) {
    int64_t v = attrs.get_int("dtype", static_cast<int64_t>(DataType::Float));
    if (v < 0 || v > INT32_MAX || !is_known_dtype(static_cast<int32_t>(v)) || v == 0)
      fail("dtype ", v, " is not a tensor element type");
    DataType dt = static_cast<DataType>(v);
    check_elem_dtype(all_tensor_types(11), dt, "the sequence");
    return dt;
  };
  add_versions(
      r, "", "SequenceEmpty", {11}, {},
      [dtype_of](InferContext& ctx) { ctx.set_output(0, seq_type(Type::tensor(dtype_of(ctx.attrs)))); },
      [dtype_of](const KernelInit& init) {
        DataType dt = dtype_of(init.attrs);
        return make_kernel([dt](KernelContext& ctx) { ctx.set_output(0, Datum::sequence({}, Type::tensor(dt))); });
      });
}

// ---- SequenceConstruct ----

void add_sequence_construct(Registry& r) {
  auto infer = [](InferContext& ctx) {
    if (ctx.num_inputs() == 0) ctx.error("SequenceConstruct needs at least one input");
    Type elem;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) ctx.error(cat("input ", i, " is missing"));
      const Type& t = ctx.input_type(i);
      if (t.kind != Type::Kind::Tensor && t.kind != Type::Kind::Unknown)
        ctx.error(cat("input ", i, " is ", t.to_string(), ", expected a tensor"));
      elem = i == 0 ? t : merge_types(elem, t, "inputs of SequenceConstruct");
    }
    if (elem.kind == Type::Kind::Unknown) elem = Type::tensor(DataType::Undefined);
    ctx.set_output(0, seq_type(elem));
  };
  auto kernel = [](const KernelInit&) {
    return make_kernel([](KernelContext& ctx) {
      std::vector<Datum> items;
      DataType dt = DataType::Undefined;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor& t = ctx.input(i);
        if (i == 0) dt = t.dtype();
        else if (t.dtype() != dt) ctx.error(cat("input ", i, " is ", t.dtype(), ", input 0 is ", dt, "; all must have the same element type"));
        items.push_back(Datum::of(t));
      }
      ctx.set_output(0, Datum::sequence(std::move(items), elem_type_for(dt)));
    });
  };
  add_versions(r, "", "SequenceConstruct", {11}, {{{-1}, all_tensor_types(11)}}, infer, kernel);
}

// ---- SequenceAt / SequenceInsert / SequenceErase / SequenceLength ----

void add_sequence_access(Registry& r) {
  const std::vector<DataType> pos_types = {DataType::Int32, DataType::Int64};

  add_versions(
      r, "", "SequenceAt", {11}, {{{1}, pos_types}},
      [](InferContext& ctx) {
        Type e = seq_elem_of(ctx, 0);
        check_elem_dtype(all_tensor_types(11), e.elem, "the input sequence");
        ctx.set_output(0, e.kind == Type::Kind::Unknown ? Type{} : e);
      },
      [](const KernelInit&) {
        return make_kernel([](KernelContext& ctx) {
          const Datum& s = input_sequence(ctx, 0);
          int64_t n = static_cast<int64_t>(s.elements.size());
          int64_t p = position(ctx, 1, n, false);
          ctx.set_output(0, s.elements[static_cast<size_t>(p)]);
        });
      });

  add_versions(
      r, "", "SequenceInsert", {11}, {{{1}, all_tensor_types(11)}, {{2}, pos_types}},
      [](InferContext& ctx) {
        Type e = seq_elem_of(ctx, 0);
        const Type& t = ctx.input_type(1);
        if (t.kind != Type::Kind::Tensor && t.kind != Type::Kind::Unknown)
          ctx.error(cat("input 1 is ", t.to_string(), ", expected a tensor"));
        // An element type of an empty sequence with no shape stays without shape (the union of "unknown" and a
        // shape is unknown).
        Type m = merge_types(e, t, "the sequence and the inserted tensor");
        ctx.set_output(0, seq_type(m.kind == Type::Kind::Unknown ? Type::tensor(DataType::Undefined) : m));
      },
      [](const KernelInit&) {
        return make_kernel([](KernelContext& ctx) {
          const Datum& s = input_sequence(ctx, 0);
          const Tensor& t = ctx.input(1);
          DataType dt = seq_dtype(s);
          if (dt != DataType::Undefined && t.dtype() != dt)
            ctx.error(cat("the tensor is ", t.dtype(), " but the sequence holds ", dt));
          int64_t n = static_cast<int64_t>(s.elements.size());
          int64_t p = ctx.has_input(2) ? position(ctx, 2, n, true) : n;
          std::vector<Datum> items = s.elements;
          items.insert(items.begin() + p, Datum::of(t));
          ctx.set_output(0, Datum::sequence(std::move(items), elem_type_for(t.dtype())));
        });
      });

  add_versions(
      r, "", "SequenceErase", {11}, {{{1}, pos_types}},
      [](InferContext& ctx) {
        Type e = seq_elem_of(ctx, 0);
        ctx.set_output(0, seq_type(e.kind == Type::Kind::Unknown ? Type::tensor(DataType::Undefined) : e));
      },
      [](const KernelInit&) {
        return make_kernel([](KernelContext& ctx) {
          const Datum& s = input_sequence(ctx, 0);
          int64_t n = static_cast<int64_t>(s.elements.size());
          if (n == 0) ctx.error("cannot erase from an empty sequence");
          int64_t p = ctx.has_input(1) ? position(ctx, 1, n, false) : n - 1;
          std::vector<Datum> items = s.elements;
          items.erase(items.begin() + p);
          ctx.set_output(0, Datum::sequence(std::move(items), s.elem_type));
        });
      });

  add_versions(
      r, "", "SequenceLength", {11}, {},
      [](InferContext& ctx) {
        seq_elem_of(ctx, 0);
        ctx.set_output(0, scalar_type(DataType::Int64));
      },
      [](const KernelInit&) {
        return make_kernel([](KernelContext& ctx) {
          const Datum& s = input_sequence(ctx, 0);
          ctx.set_output(0, make_scalar_int64(static_cast<int64_t>(s.elements.size())));
        });
      });
}

// ---- SplitToSequence ----

struct SplitPlan {
  std::vector<int64_t> lengths;
  bool squeeze = false;  // no split input and keepdims=0
};

// Chunk lengths along an axis of size `dim`; `split` null when the input is omitted. Each chunk of a non-empty
// tensor holds at least one element, but an empty one (a zero elsewhere in its dims) could ask for billions of
// chunks: that is refused.
SplitPlan plan_split(int64_t dim, const Tensor* split, bool keepdims, bool empty_input) {
  SplitPlan p;
  auto check_count = [&](int64_t chunks) {
    if (empty_input && chunks > (int64_t{1} << 20))
      fail("splitting an empty tensor into ", chunks, " chunks is refused (too many)");
  };
  if (!split) {
    check_count(dim);
    p.lengths.assign(static_cast<size_t>(dim), 1);
    p.squeeze = !keepdims;
    return p;
  }
  if (split->dtype() != DataType::Int32 && split->dtype() != DataType::Int64)
    fail("split must be int32 or int64, got ", split->dtype());
  std::vector<int64_t> v = read_ints(*split);
  if (split->dims().empty()) {
    int64_t c = v[0];
    if (c <= 0) fail("split must be positive, got ", c);
    check_count(dim / c);
    for (int64_t at = 0; at < dim; at += c) p.lengths.push_back(std::min(c, dim - at));
    return p;
  }
  if (split->dims().size() != 1) fail("split must be a scalar or 1-D, got shape ", shape_of(split->dims()).to_string());
  int64_t sum = 0;
  for (int64_t x : v) {
    if (x < 0) fail("split lengths must not be negative, got ", x);
    if (sum > INT64_MAX - x) fail("split lengths overflow");
    sum += x;
  }
  if (sum != dim) fail("split lengths sum to ", sum, ", the axis has size ", dim);
  p.lengths = v;
  return p;
}

void add_split_to_sequence(Registry& r) {
  auto infer_for = [](int since) {
    return [since](InferContext& ctx) {
      const Type& in = ctx.input_type(0);
      if (in.kind != Type::Kind::Tensor && in.kind != Type::Kind::Unknown)
        ctx.error(cat("input 0 is ", in.to_string(), ", expected a tensor"));
      (void)since;
      Type elem = Type::tensor(in.elem);
      bool keepdims = ctx.attrs.get_int("keepdims", 1) != 0;
      if (in.kind == Type::Kind::Tensor && in.shape.rank_known) {
        int64_t rank = static_cast<int64_t>(in.shape.dims.size());
        if (rank == 0) ctx.error("cannot split a scalar");
        size_t axis = static_cast<size_t>(normalize_axis(ctx.attrs.get_int("axis", 0), rank));
        Shape s = in.shape;
        const Dim& d = in.shape.dims[axis];
        if (!ctx.has_input(1)) {
          if (keepdims) s.dims[axis] = known_dim(1);
          else s.dims.erase(s.dims.begin() + static_cast<std::ptrdiff_t>(axis));
        } else if (const Tensor* sp = ctx.input_value(1)) {
          std::vector<int64_t> v = read_ints(*sp);
          std::optional<int64_t> common;
          if (sp->dims().empty() && !v.empty()) {
            if (v[0] <= 0) ctx.error(cat("split must be positive, got ", v[0]));
            if (d.value && *d.value % v[0] == 0) common = v[0];
          } else if (!v.empty() && std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; })) {
            common = v[0];
          }
          s.dims[axis] = common ? known_dim(*common) : Dim{};
        } else {
          s.dims[axis] = Dim{};
        }
        elem.shape = s;
      }
      ctx.set_output(0, seq_type(elem));
    };
  };
  auto kernel = [](const KernelInit& init) {
    int64_t axis_attr = init.attrs.get_int("axis", 0);
    bool keepdims = init.attrs.get_int("keepdims", 1) != 0;
    return make_kernel([axis_attr, keepdims](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      int64_t rank = static_cast<int64_t>(x.dims().size());
      if (rank == 0) ctx.error("cannot split a scalar");
      size_t axis = static_cast<size_t>(normalize_axis(axis_attr, rank));
      SplitPlan p = plan_split(x.dims()[axis], ctx.has_input(1) ? &ctx.input(1) : nullptr, keepdims,
                               x.element_count() == 0);
      std::vector<Datum> items;
      items.reserve(p.lengths.size());
      int64_t at = 0;
      for (int64_t len : p.lengths) {
        Tensor part = slice_axis(x, axis, at, len);
        if (p.squeeze) {
          Dims d = part.dims();
          d.erase(d.begin() + static_cast<std::ptrdiff_t>(axis));
          part = part.reshaped(d);
        }
        items.push_back(Datum::of(std::move(part)));
        at += len;
      }
      ctx.set_output(0, Datum::sequence(std::move(items), Type::tensor(x.dtype())));
    });
  };
  const std::vector<DataType> split_types = {DataType::Int32, DataType::Int64};
  add_versions(r, "", "SplitToSequence", {11}, {{{0}, all_tensor_types(11)}, {{1}, split_types}}, infer_for(11), kernel);
  add_versions(r, "", "SplitToSequence", {24}, {{{0}, all_tensor_types(24)}, {{1}, split_types}},
               infer_for(24), kernel);
}

// ---- ConcatFromSequence ----

void add_concat_from_sequence(Registry& r) {
  auto infer = [](InferContext& ctx) {
    Type e = seq_elem_of(ctx, 0);
    check_elem_dtype(all_tensor_types(11), e.elem, "the input sequence");
    int64_t axis = ctx.attrs.get_int("axis");
    bool new_axis = ctx.attrs.get_int("new_axis", 0) != 0;
    Type out = Type::tensor(e.elem);
    if (e.kind == Type::Kind::Tensor && e.shape.rank_known) {
      int64_t rank = static_cast<int64_t>(e.shape.dims.size());
      Shape s = e.shape;
      if (new_axis) {
        size_t a = static_cast<size_t>(normalize_axis(axis, rank + 1));
        s.dims.insert(s.dims.begin() + static_cast<std::ptrdiff_t>(a), Dim{});
      } else {
        if (rank == 0) ctx.error("cannot concatenate scalars without new_axis=1");
        size_t a = static_cast<size_t>(normalize_axis(axis, rank));
        s.dims[a] = Dim{};
      }
      out.shape = s;
    }
    ctx.set_output(0, out);
  };
  auto kernel = [](const KernelInit& init) {
    int64_t axis_attr = init.attrs.get_int("axis");
    bool new_axis = init.attrs.get_int("new_axis", 0) != 0;
    return make_kernel([axis_attr, new_axis](KernelContext& ctx) {
      const Datum& s = input_sequence(ctx, 0);
      if (s.elements.empty()) ctx.error("cannot concatenate an empty sequence");
      std::vector<const Tensor*> parts;
      for (const Datum& d : s.elements) {
        if (!d.is_tensor()) ctx.error(cat("sequence element is ", d.describe(), ", expected a tensor"));
        parts.push_back(&d.tensor);
      }
      const Tensor& first = *parts[0];
      int64_t rank = static_cast<int64_t>(first.dims().size());
      size_t axis;
      if (new_axis) {
        axis = static_cast<size_t>(normalize_axis(axis_attr, rank + 1));
      } else {
        if (rank == 0) ctx.error("cannot concatenate scalars without new_axis=1");
        axis = static_cast<size_t>(normalize_axis(axis_attr, rank));
      }
      Dims out = first.dims();
      if (new_axis) out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), 0);
      else out[axis] = 0;
      for (size_t k = 0; k < parts.size(); ++k) {
        const Tensor& t = *parts[k];
        if (t.dtype() != first.dtype()) ctx.error(cat("element ", k, " is ", t.dtype(), ", element 0 is ", first.dtype()));
        bool ok = t.dims().size() == first.dims().size();
        for (size_t i = 0; ok && i < t.dims().size(); ++i)
          ok = new_axis ? t.dims()[i] == first.dims()[i] : (i == axis || t.dims()[i] == first.dims()[i]);
        if (!ok)
          ctx.error(cat("element ", k, " has shape ", shape_of(t.dims()).to_string(), ", incompatible with element 0's ",
                        shape_of(first.dims()).to_string(), new_axis ? " (stacking needs equal shapes)" : ""));
        const int64_t add = new_axis ? 1 : t.dims()[axis];
        if (out[axis] > INT64_MAX - add) ctx.error("the concatenated axis is too long");
        out[axis] += add;
      }
      Tensor& y = ctx.allocate_output(0, first.dtype(), out);
      int64_t at = 0;
      for (const Tensor* t : parts) {
        Dims d = out;
        d[axis] = new_axis ? 1 : t->dims()[axis];
        Tensor src = t->reshaped(d);
        copy_along_axis(y, at, src, 0, d[axis], axis);
        at += d[axis];
      }
    });
  };
  add_versions(r, "", "ConcatFromSequence", {11}, {}, infer, kernel);
}

// ---- SequenceMap ----

void add_sequence_map(Registry& r) {
  auto infer = [](InferContext& ctx) {
    Type e = seq_elem_of(ctx, 0);
    check_elem_dtype(all_tensor_types(11), e.elem, "the input sequence");
    const Graph* body = ctx.attrs.get_graph("body");
    if (!body) ctx.error("required attribute 'body' is missing");
    if (body->inputs.size() != ctx.num_inputs())
      ctx.error(cat("body takes ", body->inputs.size(), " inputs, the node has ", ctx.num_inputs()));
    if (body->outputs.size() != ctx.output_types.size())
      ctx.error(cat("body has ", body->outputs.size(), " outputs, the node has ", ctx.output_types.size()));
    for (size_t k = 0; k < body->outputs.size(); ++k) {
      const Type& t = body->outputs[k]->type;
      if (t.kind != Type::Kind::Tensor && t.kind != Type::Kind::Unknown)
        ctx.error(cat("body output ", k, " is ", t.to_string(), ", expected a tensor"));
      ctx.set_output(k, seq_type(t.kind == Type::Kind::Unknown ? Type::tensor(DataType::Undefined) : t));
    }
  };
  auto kernel = [](const KernelInit& init) {
    const Graph* body = init.attrs.get_graph("body");
    if (!body) fail("required attribute 'body' is missing");
    std::vector<Type> out_elem;
    for (const Value* v : body->outputs) out_elem.push_back(v->type);
    return make_kernel([body, out_elem](KernelContext& ctx) {
      const Datum& s = input_sequence(ctx, 0);
      const size_t n = s.elements.size();
      for (size_t j = 1; j < ctx.num_inputs(); ++j) {
        if (!ctx.has_input(j)) continue;
        const Datum& a = ctx.input_datum(j);
        if (a.kind == Datum::Kind::Sequence && a.elements.size() != n)
          ctx.error(cat("input ", j, " is a sequence of ", a.elements.size(), " tensors, input 0 has ", n));
      }
      std::vector<std::vector<Datum>> outs(out_elem.size());
      for (size_t i = 0; i < n; ++i) {
        std::vector<Datum> args;
        args.push_back(s.elements[i]);
        for (size_t j = 1; j < ctx.num_inputs(); ++j) {
          if (!ctx.has_input(j)) {
            args.emplace_back();
            continue;
          }
          const Datum& a = ctx.input_datum(j);
          args.push_back(a.kind == Datum::Kind::Sequence ? a.elements[i] : a);
        }
        std::vector<Datum> res = ctx.subgraphs().run(*body, std::move(args));
        if (res.size() != out_elem.size()) ctx.error(cat("body returned ", res.size(), " values, expected ", out_elem.size()));
        for (size_t k = 0; k < res.size(); ++k) {
          if (!res[k].is_tensor()) ctx.error(cat("body output ", k, " is ", res[k].describe(), ", expected a tensor"));
          outs[k].push_back(std::move(res[k]));
        }
      }
      for (size_t k = 0; k < outs.size() && k < ctx.num_outputs(); ++k) {
        Type et = out_elem[k].kind == Type::Kind::Tensor ? Type::tensor(out_elem[k].elem) : Type{};
        if (!outs[k].empty()) et = Type::tensor(outs[k][0].tensor.dtype());
        ctx.set_output(k, Datum::sequence(std::move(outs[k]), et));
      }
    });
  };
  add_versions(r, "", "SequenceMap", {17}, {{{-1}, all_tensor_types(11)}}, infer, kernel);
}

}  // namespace

void register_sequence(Registry& r) {
  add_sequence_empty(r);
  add_sequence_construct(r);
  add_sequence_access(r);
  add_split_to_sequence(r);
  add_concat_from_sequence(r);
  add_sequence_map(r);
}

}  // namespace onyx::ops
