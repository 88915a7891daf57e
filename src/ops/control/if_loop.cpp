// ai.onnx If and Loop — versions 1, 11, 13, 16, 19, 21, 23, 24, 25 (semantics are the same in all; what changes
// is the set of values the subgraphs may pass): v1/v11 tensors of the IR-3 element types; v13 adds sequences;
// v16 adds optionals and bfloat16; v19 the float8 types; v21 int4/uint4; v23 float4e2m1; v24 float8e8m0;
// v25 int2/uint2. Loop-1 requires at least one loop-carried value in the schema, Loop-11+ allows none; onyx accepts
// both forms for every version.
//
// If: 'cond' is a bool tensor with one element; the chosen branch (a graph without inputs that sees the outer
// scope) runs and its outputs become the node's. Inference: each output is the union of the two branches'
// output types (element types must agree; dims that differ become unknown).
//
// Loop: inputs M (int64 trip count, optional), cond (bool, optional), then N loop-carried initial values. The body
// takes (iteration number, condition, N carried values) and returns (condition, N carried values, K scan outputs).
// It runs while i < M (when given) and the condition holds (the input cond, then the body's returned condition).
// Outputs: the N final carried values, then the K scan outputs, each the per-iteration tensors stacked along a new
// axis 0 (all iterations must give the same shape and element type). With zero iterations a scan output has
// dims [0, body output dims] when the body declares them, else [0].
// Without M, a body that returns its condition input unchanged (while cond is true) would loop forever: refused.
// A carried value the body declares as optional is passed wrapped in an optional (and an optional passed where the
// body declares a tensor or sequence is unwrapped), so optional-typed loop state works like other runtimes.
#include <limits>

#include "ir/tensor_alloc.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {


// Checks a value a subgraph passes in or out against what the op version allows.
void check_value_kind(const Datum& d, int since, const std::string& what) {
  switch (d.kind) {
    case Datum::Kind::Tensor:
      if (!contains(control_flow_types(since), d.tensor.dtype()))
        fail(what, " has element type ", d.tensor.dtype(), ", which this version (", since, ") does not allow");
      return;
    case Datum::Kind::Sequence:
      if (since < 13) fail(what, " is a sequence; sequences need opset 13");
      return;
    case Datum::Kind::Optional:
      if (since < 16) fail(what, " is an optional; optionals need opset 16");
      return;
    case Datum::Kind::Empty: return;
    case Datum::Kind::Map: fail(what, " is a map, which control flow cannot pass");
  }
}

void check_type_kind(const Type& t, int since, const std::string& what) {
  if (t.kind == Type::Kind::Sequence && since < 13) fail(what, " is ", t.to_string(), "; sequences need opset 13");
  if (t.kind == Type::Kind::Optional && since < 16) fail(what, " is ", t.to_string(), "; optionals need opset 16");
  if (t.kind == Type::Kind::Tensor && t.elem != DataType::Undefined && !contains(control_flow_types(since), t.elem))
    fail(what, " has element type ", t.elem, ", which this version (", since, ") does not allow");
  if (t.kind == Type::Kind::Map || t.kind == Type::Kind::SparseTensor || t.kind == Type::Kind::Opaque)
    fail(what, " is ", t.to_string(), ", which control flow cannot pass");
}

// ---- If ----

const Graph& branch(const AttributeView& attrs, const char* name, size_t num_outputs) {
  const Graph* g = attrs.get_graph(name);
  if (!g) fail("required attribute '", name, "' is missing");
  if (!g->inputs.empty()) fail(name, " takes ", g->inputs.size(), " inputs; If branches take none");
  if (g->outputs.size() != num_outputs)
    fail(name, " has ", g->outputs.size(), " outputs, the If node has ", num_outputs);
  return *g;
}

void add_if(Registry& r, int since) {
  auto infer = [since](InferContext& ctx) {
    const size_t n = ctx.output_types.size();
    const Graph& then_g = branch(ctx.attrs, "then_branch", n);
    const Graph& else_g = branch(ctx.attrs, "else_branch", n);
    for (size_t i = 0; i < n; ++i) {
      const Type& a = then_g.outputs[i]->type;
      const Type& b = else_g.outputs[i]->type;
      check_type_kind(a, since, cat("then_branch output ", i));
      check_type_kind(b, since, cat("else_branch output ", i));
      ctx.set_output(i, merge_types(a, b, cat("output ", i, " of the two branches")));
    }
  };
  auto kernel = [since](const KernelInit& init) {
    const size_t n = init.node.outputs.size();
    const Graph* then_g = &branch(init.attrs, "then_branch", n);
    const Graph* else_g = &branch(init.attrs, "else_branch", n);
    return make_kernel([since, then_g, else_g](KernelContext& ctx) {
      bool c = read_scalar_bool(ctx.input(0), "cond");
      std::vector<Datum> outs = ctx.subgraphs().run(c ? *then_g : *else_g, {});
      if (outs.size() != ctx.num_outputs())
        ctx.error(cat(c ? "then_branch" : "else_branch", " returned ", outs.size(), " values, expected ", ctx.num_outputs()));
      for (size_t i = 0; i < outs.size(); ++i) {
        check_value_kind(outs[i], since, cat(c ? "then_branch" : "else_branch", " output ", i));
        ctx.set_output(i, std::move(outs[i]));
      }
    });
  };
  add_versions(r, "", "If", {since}, {{{0}, {DataType::Bool}}}, infer, kernel);
}

// ---- Loop ----

struct LoopShape {
  size_t n = 0;  // loop-carried values
  size_t k = 0;  // scan outputs
};

LoopShape loop_shape(const Graph& body, size_t node_inputs, size_t node_outputs) {
  LoopShape s;
  s.n = node_inputs > 2 ? node_inputs - 2 : 0;
  if (body.inputs.size() != 2 + s.n)
    fail("body takes ", body.inputs.size(), " inputs; with ", s.n, " loop-carried values it must take ", 2 + s.n,
         " (iteration number, condition, the carried values)");
  if (body.outputs.size() < 1 + s.n)
    fail("body returns ", body.outputs.size(), " values; it must return at least ", 1 + s.n,
         " (condition, the carried values)");
  s.k = body.outputs.size() - 1 - s.n;
  if (node_outputs > s.n + s.k)
    fail("the node has ", node_outputs, " outputs, the body yields ", s.n, " carried values and ", s.k, " scan outputs");
  return s;
}

// Fits a carried value to what the body input declares: wraps into / unwraps from an optional.
Datum adapt_to(const Type& want, Datum d) {
  if (want.kind == Type::Kind::Optional && (d.kind == Datum::Kind::Tensor || d.kind == Datum::Kind::Sequence)) {
    Type elem = want.inner ? *want.inner : d.type();
    return Datum::optional(std::move(d), std::move(elem));
  }
  if ((want.kind == Type::Kind::Tensor || want.kind == Type::Kind::Sequence) && d.kind == Datum::Kind::Optional &&
      !d.elements.empty())
    return std::move(d.elements[0]);
  return d;
}

// Stacks per-iteration tensors along a new axis 0.
Tensor stack(const std::vector<Tensor>& parts, size_t which) {
  const Tensor& f = parts[0];
  Dims d = f.dims();
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].dtype() != f.dtype())
      fail("scan output ", which, " is ", parts[i].dtype(), " at iteration ", i, " but ", f.dtype(), " at iteration 0");
    if (parts[i].dims() != d)
      fail("scan output ", which, " has shape ", shape_of(parts[i].dims()).to_string(), " at iteration ", i, " but ",
           shape_of(d).to_string(), " at iteration 0");
  }
  Dims out = d;
  out.insert(out.begin(), static_cast<int64_t>(parts.size()));
  Tensor y = Tensor::allocate(f.dtype(), out);
  const int64_t each = product(d);
  for (size_t i = 0; i < parts.size(); ++i) copy_elements(parts[i], 0, y, static_cast<uint64_t>(static_cast<int64_t>(i) * each), static_cast<uint64_t>(each));
  return y;
}

// The tensor a scan output is with zero iterations.
Tensor empty_scan_output(const Type& t) {
  DataType dt = t.kind == Type::Kind::Tensor && t.elem != DataType::Undefined ? t.elem : DataType::Float;
  Dims d = {0};
  if (t.kind == Type::Kind::Tensor && t.shape.rank_known)
    for (const Dim& x : t.shape.dims) d.push_back(x.value ? *x.value : 0);
  return Tensor::allocate(dt, d);
}

void add_loop(Registry& r, int since) {
  auto infer = [since](InferContext& ctx) {
    const Graph* body = ctx.attrs.get_graph("body");
    if (!body) ctx.error("required attribute 'body' is missing");
    LoopShape s = loop_shape(*body, ctx.num_inputs(), ctx.output_types.size());
    for (size_t i = 0; i < s.n; ++i) {
      Type in = ctx.has_input(2 + i) ? ctx.input_type(2 + i) : Type{};
      const Type& out = body->outputs[1 + i]->type;
      check_type_kind(in, since, cat("loop-carried input ", i));
      check_type_kind(out, since, cat("body output ", 1 + i));
      // The final value is the initial one (no iteration) or the body's: their union. When one is an optional of
      // the other (optional loop state), the body's type is what iterations produce.
      Type t = (in.kind != out.kind && in.kind != Type::Kind::Unknown && out.kind != Type::Kind::Unknown)
                   ? out
                   : merge_types(in, out, cat("loop-carried value ", i, " (initial and body output)"));
      ctx.set_output(i, t);
    }
    for (size_t k = 0; k < s.k; ++k) {
      const Type& t = body->outputs[1 + s.n + k]->type;
      if (t.kind != Type::Kind::Tensor && t.kind != Type::Kind::Unknown)
        ctx.error(cat("scan output ", k, " of the body is ", t.to_string(), ", expected a tensor"));
      Type o = Type::tensor(t.elem);
      if (t.kind == Type::Kind::Tensor && t.shape.rank_known) {
        o.shape = t.shape;
        o.shape.dims.insert(o.shape.dims.begin(), Dim{});
      }
      ctx.set_output(s.n + k, o);
    }
  };
  auto kernel = [since](const KernelInit& init) {
    const Graph* body = init.attrs.get_graph("body");
    if (!body) fail("required attribute 'body' is missing");
    LoopShape s = loop_shape(*body, init.node.inputs.size(), init.node.outputs.size());
    std::vector<Type> body_in, scan_types;
    for (const Value* v : body->inputs) body_in.push_back(v->type);
    for (size_t k = 0; k < s.k; ++k) scan_types.push_back(body->outputs[1 + s.n + k]->type);
    // A body returning its condition input unchanged never stops the loop by itself.
    const bool cond_passthrough = body->outputs[0] == body->inputs[1];
    return make_kernel([since, body, s, body_in, scan_types, cond_passthrough](KernelContext& ctx) {
      int64_t max_trip = std::numeric_limits<int64_t>::max();
      if (ctx.has_input(0)) {
        const Tensor& m = ctx.input(0);
        if (m.dtype() != DataType::Int64) ctx.error(cat("M must be int64, got ", m.dtype()));
        max_trip = read_scalar_int(m, "M");
      }
      bool cond = ctx.has_input(1) ? read_scalar_bool(ctx.input(1), "cond") : true;
      if (!ctx.has_input(0) && cond && cond_passthrough)
        ctx.error("the loop would never end: there is no trip count M and the body returns its condition unchanged");
      std::vector<Datum> carried(s.n);
      for (size_t i = 0; i < s.n; ++i) {
        if (ctx.has_input(2 + i)) carried[i] = ctx.input_datum(2 + i);
        check_value_kind(carried[i], since, cat("loop-carried input ", i));
      }
      std::vector<std::vector<Tensor>> scans(s.k);
      MemoryCharge scan_memory;  // the stacked outputs will take what the iterations gather
      for (int64_t it = 0; it < max_trip && cond; ++it) {
        std::vector<Datum> args;
        args.reserve(2 + s.n);
        args.push_back(Datum::of(make_scalar_int64(it)));
        args.push_back(Datum::of(make_scalar_bool(cond)));
        for (size_t i = 0; i < s.n; ++i) args.push_back(adapt_to(body_in[2 + i], std::move(carried[i])));
        std::vector<Datum> outs = ctx.subgraphs().run(*body, std::move(args));
        if (outs.size() != 1 + s.n + s.k)
          ctx.error(cat("body returned ", outs.size(), " values, expected ", 1 + s.n + s.k));
        if (!outs[0].is_tensor()) ctx.error(cat("body condition output is ", outs[0].describe(), ", expected a bool tensor"));
        cond = read_scalar_bool(outs[0].tensor, "the body's condition output");
        for (size_t i = 0; i < s.n; ++i) {
          check_value_kind(outs[1 + i], since, cat("body output ", 1 + i));
          carried[i] = std::move(outs[1 + i]);
        }
        for (size_t k = 0; k < s.k; ++k) {
          Datum& d = outs[1 + s.n + k];
          if (!d.is_tensor()) ctx.error(cat("scan output ", k, " is ", d.describe(), " at iteration ", it, ", expected a tensor"));
          check_value_kind(d, since, cat("scan output ", k));
          if (!scan_memory.try_add(d.tensor.bytes().size() + sizeof(Tensor)))
            throw Error(cat("memory limit of ", scan_memory.limit_bytes() >> 20, " MiB exceeded by the scan outputs at iteration ", it),
                        ErrorKind::MemoryLimit);
          scans[k].push_back(std::move(d.tensor));
        }
      }
      for (size_t i = 0; i < s.n && i < ctx.num_outputs(); ++i) ctx.set_output(i, std::move(carried[i]));
      for (size_t k = 0; k < s.k && s.n + k < ctx.num_outputs(); ++k) {
        if (!ctx.output_wanted(s.n + k)) continue;
        ctx.set_output(s.n + k, scans[k].empty() ? empty_scan_output(scan_types[k]) : stack(scans[k], k));
      }
    });
  };
  const std::vector<DataType> v = control_flow_types(since);
  add_versions(r, "", "Loop", {since}, {{{0}, {DataType::Int64}}, {{1}, {DataType::Bool}}, {{-1}, v}}, infer, kernel);
}

}  // namespace

void register_if_loop(Registry& r) {
  for (int v : {1, 11, 13, 16, 19, 21, 23, 24, 25}) {
    add_if(r, v);
    add_loop(r, v);
  }
}

}  // namespace onyx::ops
