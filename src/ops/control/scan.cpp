// ai.onnx Scan — versions 8, 9, 11, 16, 19, 21, 23, 24, 25.
// The body takes N state values and M scan slices and returns N new states and K scan-output slices.
// v8: input 0 is the optional 'sequence_lens' (int64 [batch]); every other input has a leading batch axis and
//     scan inputs are [batch, sequence, ...]; the body runs per batch entry over its first sequence_lens[b] slices
//     ('directions' per scan input: 0 forward, 1 reverse); scan outputs are [batch, max sequence, ...] with the
//     positions past a batch entry's length left zero.
// v9: no batch axis and no sequence_lens; 'scan_input_axes' / 'scan_input_directions' choose the axis and order
//     of each scan input, 'scan_output_axes' / 'scan_output_directions' where each output's slices are stacked
//     and in which order (1: the last iteration first). All scan inputs must have the same length on their axis.
//     Axes must be non-negative in v9; v11+ accepts negative axes ([-r, r-1] of the input, [-(r+1), r] of the
//     output).
// v16 adds bfloat16, v19 the float8 types, v21 int4/uint4, v23 float4e2m1, v24 float8e8m0, v25 int2/uint2.
// With zero iterations a scan output takes its slice dims from the body's declared output shape (unknown dims 0).
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {


struct ScanConfig {
  int since = 9;
  size_t n = 0, m = 0, k = 0;  // states, scan inputs, scan outputs
  size_t first = 0;            // index of the first state input (1 in v8: after sequence_lens)
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

std::vector<int64_t> ints_or(const AttributeView& a, const char* name, size_t count, int64_t dflt) {
  std::vector<int64_t> v = a.get_ints(name, std::vector<int64_t>(count, dflt));
  if (v.size() != count) fail("attribute '", name, "' has ", v.size(), " values, expected ", count);
  return v;
}

ScanConfig configure(const AttributeView& attrs, int since, size_t node_inputs, size_t node_outputs) {
  ScanConfig c;
  c.since = since;
  const Graph* body = attrs.get_graph("body");
  if (!body) fail("required attribute 'body' is missing");
  int64_t m = attrs.get_int("num_scan_inputs");
  c.first = since == 8 ? 1 : 0;
  if (node_inputs < c.first) fail("Scan-8 needs the sequence_lens input slot (it may be empty)");
  size_t values = node_inputs - c.first;
  if (m < 1 || static_cast<size_t>(m) > values)
    fail("num_scan_inputs is ", m, "; it must be in [1, ", values, "] (the number of state and scan inputs)");
  c.m = static_cast<size_t>(m);
  c.n = values - c.m;
  if (body->inputs.size() != c.n + c.m)
    fail("body takes ", body->inputs.size(), " inputs, expected ", c.n + c.m, " (", c.n, " states and ", c.m, " scan inputs)");
  if (body->outputs.size() < c.n) fail("body returns ", body->outputs.size(), " values, fewer than the ", c.n, " states");
  c.k = body->outputs.size() - c.n;
  if (node_outputs > c.n + c.k)
    fail("the node has ", node_outputs, " outputs, the body yields ", c.n, " states and ", c.k, " scan outputs");
  if (since == 8) {
    c.in_dirs = ints_or(attrs, "directions", c.m, 0);
    c.in_axes.assign(c.m, 0);
    c.out_axes.assign(c.k, 0);
    c.out_dirs.assign(c.k, 0);
  } else {
    c.in_axes = ints_or(attrs, "scan_input_axes", c.m, 0);
    c.in_dirs = ints_or(attrs, "scan_input_directions", c.m, 0);
    c.out_axes = ints_or(attrs, "scan_output_axes", c.k, 0);
    c.out_dirs = ints_or(attrs, "scan_output_directions", c.k, 0);
    for (int64_t a : c.in_axes)
      if (since < 11 && a < 0) fail("scan_input_axes value ", a, " is negative; negative axes need opset 11");
    for (int64_t a : c.out_axes)
      if (since < 11 && a < 0) fail("scan_output_axes value ", a, " is negative; negative axes need opset 11");
  }
  for (int64_t d : c.in_dirs)
    if (d != 0 && d != 1) fail("scan input direction ", d, " must be 0 (forward) or 1 (reverse)");
  for (int64_t d : c.out_dirs)
    if (d != 0 && d != 1) fail("scan output direction ", d, " must be 0 (forward) or 1 (reverse)");
  return c;
}

Shape insert_dim(Shape s, size_t at, Dim d) {
  s.dims.insert(s.dims.begin() + static_cast<std::ptrdiff_t>(at), std::move(d));
  return s;
}

void infer_scan(InferContext& ctx, int since) {
  const Graph* body = ctx.attrs.get_graph("body");
  ScanConfig c = configure(ctx.attrs, since, ctx.num_inputs(), ctx.output_types.size());
  // Sequence length (and v8 batch size) from the first scan input.
  Dim seq_len, batch;
  const size_t first_scan = c.first + c.n;
  if (ctx.has_input(first_scan)) {
    const Type& t = ctx.input_type(first_scan);
    if (t.kind == Type::Kind::Tensor && t.shape.rank_known) {
      int64_t r = static_cast<int64_t>(t.shape.dims.size());
      if (since == 8) {
        if (r < 2) ctx.error(cat("scan input 0 has rank ", r, "; Scan-8 scan inputs are [batch, sequence, ...]"));
        batch = t.shape.dims[0];
        seq_len = t.shape.dims[1];
      } else {
        seq_len = t.shape.dims[static_cast<size_t>(normalize_axis(c.in_axes[0], r, "scan_input_axes value"))];
      }
    }
  }
  for (size_t i = 0; i < c.n; ++i) {
    const Type& in = ctx.has_input(c.first + i) ? ctx.input_type(c.first + i) : Type{};
    Type out = body->outputs[i]->type;
    if (since == 8 && out.kind == Type::Kind::Tensor && out.shape.rank_known) out.shape = insert_dim(out.shape, 0, batch);
    ctx.set_output(i, merge_types(in, out, cat("state ", i, " (initial and body output)")));
  }
  for (size_t k = 0; k < c.k; ++k) {
    const Type& t = body->outputs[c.n + k]->type;
    if (t.kind != Type::Kind::Tensor && t.kind != Type::Kind::Unknown)
      ctx.error(cat("scan output ", k, " of the body is ", t.to_string(), ", expected a tensor"));
    Type o = Type::tensor(t.elem);
    if (t.kind == Type::Kind::Tensor && t.shape.rank_known) {
      if (since == 8) {
        o.shape = insert_dim(insert_dim(t.shape, 0, seq_len), 0, batch);
      } else {
        int64_t r = static_cast<int64_t>(t.shape.dims.size()) + 1;
        o.shape = insert_dim(t.shape, static_cast<size_t>(normalize_axis(c.out_axes[k], r, "scan_output_axes value")), seq_len);
      }
    }
    ctx.set_output(c.n + k, o);
  }
}

// Slice dims of scan output k when no iteration produced one: the body's declared shape, unknown dims as 0.
Dims declared_slice_dims(const Type& t) {
  Dims d;
  if (t.kind == Type::Kind::Tensor && t.shape.rank_known)
    for (const Dim& x : t.shape.dims) d.push_back(x.value ? *x.value : 0);
  return d;
}
DataType declared_dtype(const Type& t) {
  return t.kind == Type::Kind::Tensor && t.elem != DataType::Undefined ? t.elem : DataType::Float;
}

void check_slice(const Tensor& t, const Tensor& first, size_t k) {
  if (t.dtype() != first.dtype() || t.dims() != first.dims())
    fail("scan output ", k, " is ", t.dtype(), shape_of(t.dims()).to_string(), " in one iteration and ", first.dtype(),
         shape_of(first.dims()).to_string(), " in another; all iterations must agree");
}

// One run of the body over `len` steps; `slice_in(j, pos)` gives scan input j at position pos.
// Returns the final states; `emit(k, t, tensor)` receives scan output k of step t.
template <class SliceIn, class Emit>
std::vector<Datum> run_steps(KernelContext& ctx, const Graph& body, const ScanConfig& c, std::vector<Datum> states,
                             int64_t len, SliceIn&& slice_in, Emit&& emit) {
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Datum> args = states;
    for (size_t j = 0; j < c.m; ++j) {
      int64_t pos = c.in_dirs[j] ? len - 1 - t : t;
      args.push_back(Datum::of(slice_in(j, pos)));
    }
    std::vector<Datum> outs = ctx.subgraphs().run(body, std::move(args));
    if (outs.size() != c.n + c.k) ctx.error(cat("body returned ", outs.size(), " values, expected ", c.n + c.k));
    for (size_t i = 0; i < c.n; ++i) {
      if (!outs[i].is_tensor()) ctx.error(cat("state output ", i, " is ", outs[i].describe(), ", expected a tensor"));
      states[i] = std::move(outs[i]);
    }
    for (size_t k = 0; k < c.k; ++k) {
      if (!outs[c.n + k].is_tensor())
        ctx.error(cat("scan output ", k, " is ", outs[c.n + k].describe(), ", expected a tensor"));
      emit(k, t, std::move(outs[c.n + k].tensor));
    }
  }
  return states;
}

void run_scan9(KernelContext& ctx, const Graph& body, const ScanConfig& c, const std::vector<Type>& scan_types) {
  std::vector<Datum> states;
  for (size_t i = 0; i < c.n; ++i) states.push_back(Datum::of(ctx.input(i)));
  std::vector<const Tensor*> xs;
  std::vector<size_t> axes;
  int64_t len = -1;
  for (size_t j = 0; j < c.m; ++j) {
    const Tensor& x = ctx.input(c.n + j);
    int64_t r = static_cast<int64_t>(x.dims().size());
    if (r == 0) ctx.error(cat("scan input ", j, " is a scalar; scan inputs need an axis to iterate over"));
    size_t a = static_cast<size_t>(normalize_axis(c.in_axes[j], r, "scan_input_axes value"));
    if (len < 0) len = x.dims()[a];
    else if (x.dims()[a] != len)
      ctx.error(cat("scan input ", j, " has length ", x.dims()[a], " on axis ", a, ", scan input 0 has ", len));
    xs.push_back(&x);
    axes.push_back(a);
  }
  // An empty scan input can claim a huge length; each step allocates, so refuse absurd step counts there.
  if (len > (int64_t{1} << 24) && xs[0]->element_count() == 0)
    ctx.error(cat("scan inputs are empty but claim ", len, " steps"));
  std::vector<std::vector<Tensor>> slices(c.k);
  states = run_steps(
      ctx, body, c, std::move(states), len, [&](size_t j, int64_t pos) { return take_axis(*xs[j], axes[j], pos); },
      [&](size_t k, int64_t, Tensor t) {
        if (!slices[k].empty()) check_slice(t, slices[k][0], k);
        slices[k].push_back(std::move(t));
      });
  for (size_t i = 0; i < c.n && i < ctx.num_outputs(); ++i) ctx.set_output(i, std::move(states[i]));
  for (size_t k = 0; k < c.k && c.n + k < ctx.num_outputs(); ++k) {
    if (!ctx.output_wanted(c.n + k)) continue;
    Dims sd = slices[k].empty() ? declared_slice_dims(scan_types[k]) : slices[k][0].dims();
    DataType dt = slices[k].empty() ? declared_dtype(scan_types[k]) : slices[k][0].dtype();
    int64_t r = static_cast<int64_t>(sd.size()) + 1;
    size_t a = static_cast<size_t>(normalize_axis(c.out_axes[k], r, "scan_output_axes value"));
    Dims od = sd;
    od.insert(od.begin() + static_cast<std::ptrdiff_t>(a), len);
    Tensor& y = ctx.allocate_output(c.n + k, dt, od);
    for (int64_t t = 0; t < static_cast<int64_t>(slices[k].size()); ++t)
      put_axis(y, a, c.out_dirs[k] ? len - 1 - t : t, slices[k][static_cast<size_t>(t)]);
  }
}

void run_scan8(KernelContext& ctx, const Graph& body, const ScanConfig& c, const std::vector<Type>& scan_types) {
  // Batch size and maximum sequence length.
  int64_t batch = -1, max_len = -1;
  auto set_batch = [&](int64_t b, const std::string& what) {
    if (batch < 0) batch = b;
    else if (b != batch) ctx.error(cat(what, " has batch size ", b, ", expected ", batch));
  };
  for (size_t i = 0; i < c.n; ++i) {
    const Tensor& s = ctx.input(1 + i);
    if (s.dims().empty()) ctx.error(cat("state ", i, " is a scalar; Scan-8 states have a leading batch axis"));
    set_batch(s.dims()[0], cat("state ", i));
  }
  for (size_t j = 0; j < c.m; ++j) {
    const Tensor& x = ctx.input(1 + c.n + j);
    if (x.dims().size() < 2) ctx.error(cat("scan input ", j, " has rank ", x.dims().size(), "; Scan-8 scan inputs are [batch, sequence, ...]"));
    set_batch(x.dims()[0], cat("scan input ", j));
    if (max_len < 0) max_len = x.dims()[1];
    else if (x.dims()[1] != max_len) ctx.error(cat("scan input ", j, " has sequence length ", x.dims()[1], ", expected ", max_len));
  }
  if ((batch > (int64_t{1} << 24) || max_len > (int64_t{1} << 24)) && ctx.input(1 + c.n).element_count() == 0)
    ctx.error(cat("scan inputs are empty but claim ", batch, " batch entries of ", max_len, " steps"));
  std::vector<int64_t> lens(static_cast<size_t>(batch), max_len);
  if (ctx.has_input(0)) {
    const Tensor& sl = ctx.input(0);
    if (sl.dtype() != DataType::Int64) ctx.error(cat("sequence_lens must be int64, got ", sl.dtype()));
    if (sl.dims().size() != 1 || sl.dims()[0] != batch)
      ctx.error(cat("sequence_lens has shape ", shape_of(sl.dims()).to_string(), ", expected [", batch, "]"));
    lens = read_ints(sl);
    for (int64_t l : lens)
      if (l < 0 || l > max_len) ctx.error(cat("sequence_lens value ", l, " is outside [0, ", max_len, "]"));
  }
  // Per batch entry: final states and scan output slices.
  std::vector<std::vector<Datum>> finals;
  std::vector<std::vector<std::vector<Tensor>>> slices(static_cast<size_t>(batch), std::vector<std::vector<Tensor>>(c.k));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Datum> states;
    for (size_t i = 0; i < c.n; ++i) states.push_back(Datum::of(take_axis(ctx.input(1 + i), 0, b)));
    std::vector<Tensor> rows;
    for (size_t j = 0; j < c.m; ++j) rows.push_back(take_axis(ctx.input(1 + c.n + j), 0, b));
    auto& mine = slices[static_cast<size_t>(b)];
    states = run_steps(
        ctx, body, c, std::move(states), lens[static_cast<size_t>(b)],
        [&](size_t j, int64_t pos) { return take_axis(rows[j], 0, pos); },
        [&](size_t k, int64_t, Tensor t) { mine[k].push_back(std::move(t)); });
    finals.push_back(std::move(states));
  }
  // States: stack the per-batch finals along axis 0.
  for (size_t i = 0; i < c.n && i < ctx.num_outputs(); ++i) {
    if (!ctx.output_wanted(i)) continue;
    if (batch == 0) {
      ctx.set_output(i, ctx.input(1 + i));
      continue;
    }
    const Tensor& f0 = finals[0][i].tensor;
    Dims od = f0.dims();
    od.insert(od.begin(), batch);
    Tensor& y = ctx.allocate_output(i, f0.dtype(), od);
    for (int64_t b = 0; b < batch; ++b) {
      const Tensor& f = finals[static_cast<size_t>(b)][i].tensor;
      if (f.dtype() != f0.dtype() || f.dims() != f0.dims())
        ctx.error(cat("state ", i, " ends as ", f.dtype(), shape_of(f.dims()).to_string(), " for batch entry ", b, " and ",
                      f0.dtype(), shape_of(f0.dims()).to_string(), " for entry 0"));
      put_axis(y, 0, b, f);
    }
  }
  // Scan outputs: [batch, max_len, slice...], zero past each entry's length.
  for (size_t k = 0; k < c.k && c.n + k < ctx.num_outputs(); ++k) {
    if (!ctx.output_wanted(c.n + k)) continue;
    const Tensor* proto = nullptr;
    for (auto& per : slices)
      for (const Tensor& t : per[k]) {
        if (!proto) proto = &t;
        else check_slice(t, *proto, k);
      }
    Dims sd = proto ? proto->dims() : declared_slice_dims(scan_types[k]);
    DataType dt = proto ? proto->dtype() : declared_dtype(scan_types[k]);
    Dims od = sd;
    od.insert(od.begin(), {batch, max_len});
    Tensor& y = ctx.allocate_output(c.n + k, dt, od);
    const int64_t each = product(sd);
    for (int64_t b = 0; b < batch; ++b) {
      const auto& per = slices[static_cast<size_t>(b)][k];
      for (size_t t = 0; t < per.size(); ++t)
        copy_elements(per[t], 0, y, static_cast<uint64_t>((b * max_len + static_cast<int64_t>(t)) * each), static_cast<uint64_t>(each));
    }
  }
}

void add_scan(Registry& r, int since) {
  auto infer = [since](InferContext& ctx) { infer_scan(ctx, since); };
  auto kernel = [since](const KernelInit& init) {
    ScanConfig c = configure(init.attrs, since, init.node.inputs.size(), init.node.outputs.size());
    const Graph* body = init.attrs.get_graph("body");
    std::vector<Type> scan_types;
    for (size_t k = 0; k < c.k; ++k) scan_types.push_back(body->outputs[c.n + k]->type);
    return make_kernel([c, body, scan_types](KernelContext& ctx) {
      if (c.since == 8) run_scan8(ctx, *body, c, scan_types);
      else run_scan9(ctx, *body, c, scan_types);
    });
  };
  std::vector<TypeConstraint> types;
  if (since == 8) types.push_back({{0}, {DataType::Int64}});
  // Every input (v8: after sequence_lens) takes V; sequence_lens is int64, which V includes.
  types.push_back({{-1}, control_flow_types(since)});
  add_versions(r, "", "Scan", {since}, types, infer, kernel);
}

}  // namespace

void register_scan(Registry& r) {
  for (int v : {8, 9, 11, 16, 19, 21, 23, 24, 25}) add_scan(r, v);
}

}  // namespace onyx::ops
