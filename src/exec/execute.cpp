// Session runs: feeds checked against the inputs, then each graph's steps in topological order, each value
// released after its last reader; subgraphs run in child frames that see their outer scope, and model-local
// functions run their body as a graph.
#include <algorithm>
#include <chrono>
#include <optional>

#include "exec/session_impl.hpp"
#include "exec/threads.hpp"
#include "ir/tensor_alloc.hpp"
#include "kernels/library_errors.hpp"

namespace onyx {

namespace exec {

// Ends a run that its limits stop (its deadline passed, or its caller terminated it), saying where.
[[noreturn]] void stop(const std::string& model, const RunLimits& limits, const std::string& at) {
  const std::string before = "before " + at;
  try {
    limits.check(before.c_str());
  } catch (const Error& e) {
    throw Error(cat(model, ": ", e.what()), e.kind());
  }
  fail(model, ": run stopped ", before);  // the caller cleared its terminate flag meanwhile
}

const Datum& lookup(const Frame& f, const Ref& r) {
  const Frame* fr = &f;
  for (int i = 0; i < r.depth; ++i) fr = fr->parent;
  const Datum& d = fr->values[r.id];
  if (d.kind == Datum::Kind::Empty && r.id < fr->plan->constant_at.size() && fr->plan->constant_at[r.id])
    return *fr->plan->constant_at[r.id];  // an initializer (a feed of the same name, if any, is in values)
  return d;
}

void rethrow_at(const std::string& label, const Node& n) {
  try {
    throw;
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind(label + ": ", 0) == 0) throw;  // already located (a node of a nested graph)
    throw Error(cat(label, ": ", where(n), ": ", msg), e.kind());
  } catch (const std::exception&) {
    kernels::rethrow_library_error(cat(label, ": ", where(n), ": "));
  }
}

}  // namespace exec

namespace {

class FrameRunner : public ops::SubgraphRunner {
 public:
  FrameRunner(const Session::Impl& s, const exec::Frame& f) : s_(s), f_(f) {}
  std::vector<Datum> run(const Graph& g, std::vector<Datum> inputs) override;

 private:
  const Session::Impl& s_;
  const exec::Frame& f_;
};

}  // namespace

std::vector<Datum> Session::Impl::execute(const exec::GraphPlan& plan, std::vector<Datum> inputs, const exec::Frame* parent,
                                          const exec::RunState& run) const {
  using namespace exec;
  Frame frame{&plan, std::vector<Datum>(plan.graph->values().size()), parent, &run};
  const RunOptions& options = *run.options;
  // Each subgraph run (a Loop or Scan iteration, even of an empty body) checks the limits as each node does.
  if (run.limits.due()) stop(label, run.limits, plan.graph->label());
  if (inputs.size() > plan.input_ids.size())
    fail(plan.graph->label(), ": ", inputs.size(), " inputs given, the graph takes ", plan.input_ids.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].kind != Datum::Kind::Empty) frame.values[plan.input_ids[i]] = std::move(inputs[i]);
  FrameRunner runner(*this, frame);
  exec::RunMemory* memory = &plan == main.get() ? run.memory : nullptr;
  // Per-step lists, kept across the steps: small models run a few microseconds per node, and heap traffic for
  // these vectors was a noticeable part of that.
  std::vector<const Datum*> in;
  std::vector<Datum> dying;
  std::vector<DataType> dtypes;
  for (size_t step_index = 0; step_index < plan.steps.size(); ++step_index) {
    const Step& step = plan.steps[step_index];
    const Node& n = *step.node;
    if (run.limits.due()) stop(label, run.limits, where(n));
    auto started = std::chrono::steady_clock::now();
    in.clear();
    for (const auto& r : step.inputs) {
      const Datum* d = r ? &lookup(frame, *r) : nullptr;
      in.push_back(d && d->kind != Datum::Kind::Empty ? d : nullptr);
    }
    // Values that die with this step leave the frame, so that the kernel may take their buffers for outputs.
    dying.resize(step.dying_inputs.size());
    for (size_t j = 0; j < dying.size(); ++j) {
      const size_t i = step.dying_inputs[j];
      if (!in[i]) continue;
      dying[j] = std::move(frame.values[step.inputs[i]->id]);
      in[i] = &dying[j];
    }
    if (memory) memory->begin_step(step_index, !step.nested);
    std::vector<Datum> outs;
    try {
      if (step.function_body) {
        std::vector<Datum> args;
        for (const Datum* d : in) args.push_back(d ? *d : Datum{});
        outs = execute(*step.function_body, std::move(args), nullptr, run);
      } else {
        if (step.def && !step.def->types.empty()) {
          dtypes.clear();
          for (const Datum* d : in) dtypes.push_back(d && d->is_tensor() ? d->tensor.dtype() : DataType::Undefined);
          ops::check_input_types(*step.def, n, dtypes);
        }
        ops::KernelContext ctx(n, step.opset, in, n.outputs.size(), &runner);
        for (size_t j = 0; j < dying.size(); ++j)
          if (in[step.dying_inputs[j]]) ctx.allow_reuse(step.dying_inputs[j], &dying[j]);
        step.kernel->run(ctx);
        outs = std::move(ctx.outputs());
      }
    } catch (const std::exception&) {
      rethrow_at(label, n);
    }
    if (options.profile) {
      auto ended = std::chrono::steady_clock::now();
      using std::chrono::nanoseconds;
      NodeTiming& t = options.profile->emplace_back();
      t.graph = plan.graph->label();
      t.node = n.label();
      t.op_type = n.op_type;
      t.start_ns = std::chrono::duration_cast<nanoseconds>(started - run.began).count();
      t.duration_ns = std::chrono::duration_cast<nanoseconds>(ended - started).count();
      for (const Datum* d : in) t.input_dims.push_back(d && d->is_tensor() ? d->tensor.dims() : std::vector<int64_t>{});
      for (const Datum& d : outs) t.output_dims.push_back(d.is_tensor() ? d.tensor.dims() : std::vector<int64_t>{});
    }
    for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i)
      if (n.outputs[i]) frame.values[n.outputs[i]->id] = std::move(outs[i]);
    for (size_t id : step.release) frame.values[id] = Datum{};
    dying.clear();  // the step's dying inputs go now, as their values would have at its end
  }
  std::vector<Datum> result;
  result.reserve(plan.outputs.size());
  for (const Ref& r : plan.outputs) result.push_back(lookup(frame, r));
  return result;
}

std::vector<Datum> FrameRunner::run(const Graph& g, std::vector<Datum> inputs) {
  auto it = s_.plans.find(&g);
  if (it == s_.plans.end()) fail(g.label(), ": subgraph was not compiled");
  return s_.execute(*it->second, std::move(inputs), &f_, *f_.run);
}

namespace {

// A bool tensor fed with a byte other than 0 or 1 in it (from raw bytes given to the C API, say) is refused: the
// kernels read bools as C++ bool, for which any other byte has no meaning.
std::optional<std::string> invalid_bool_feed(const Tensor& x) {
  if (auto wrong = invalid_bool(x))
    return cat("bool element ", wrong->index, " is the byte ", wrong->byte, " (a bool must be 0 or 1)");
  return std::nullopt;
}

// What is wrong with `d` as a value of the sequence, map, optional or sparse type `t` (kinds and element types,
// through the nesting; shapes are the kernels' to check, map values the map ops'); nothing when it fits.
std::optional<std::string> mismatch(const Type& t, const Datum& d) {
  const auto expected = [&] { return cat("expected ", t.to_string(), ", got ", d.describe()); };
  switch (t.kind) {
    case Type::Kind::Unknown:
    case Type::Kind::Opaque: return std::nullopt;
    case Type::Kind::Tensor:
    case Type::Kind::SparseTensor:
      if (!d.is_tensor()) return expected();
      if (t.elem != DataType::Undefined && d.tensor.dtype() != t.elem) return expected();
      return invalid_bool_feed(d.tensor);
    case Type::Kind::Sequence:
      if (d.kind != Datum::Kind::Sequence) return expected();
      for (size_t i = 0; i < d.elements.size(); ++i) {
        if (t.inner)
          if (auto wrong = mismatch(*t.inner, d.elements[i])) return cat("element ", i, ": ", *wrong);
        // One element type for the whole sequence (IR.md), declared or not.
        if (i && d.elements[i].is_tensor() && d.elements[0].is_tensor() &&
            d.elements[i].tensor.dtype() != d.elements[0].tensor.dtype())
          return cat("element ", i, " is ", d.elements[i].describe(), " but element 0 is ", d.elements[0].describe(),
                     " (a sequence's elements have one type)");
      }
      return std::nullopt;
    case Type::Kind::Map:
      if (d.kind != Datum::Kind::Map) return expected();
      if (t.key != DataType::Undefined && d.map_keys.dtype() != t.key) return expected();
      return std::nullopt;
    case Type::Kind::Optional:
      if (d.kind == Datum::Kind::Optional) {
        if (d.elements.empty() || !t.inner) return std::nullopt;
        return mismatch(*t.inner, d.elements[0]);
      }
      // A value given for an optional input (none: an absent one).
      return t.inner && d.kind != Datum::Kind::Empty ? mismatch(*t.inner, d) : std::nullopt;
  }
  return std::nullopt;
}

void check_feed(const std::string& model, const IoInfo& info, const Datum& d, std::map<std::string, int64_t>& symbols) {
  const Type& t = info.type;
  auto bad = [&](const std::string& what) { fail(model, ": input '", info.name, "': ", what); };
  if (t.kind == Type::Kind::Unknown) return;
  if (t.kind == Type::Kind::Tensor) {
    if (!d.is_tensor()) bad(cat("expected ", t.to_string(), ", got ", d.describe()));
    const Tensor& x = d.tensor;
    if (t.elem != DataType::Undefined && x.dtype() != t.elem)
      bad(cat("expected element type ", t.elem, ", got ", x.dtype()));
    if (auto wrong = invalid_bool_feed(x)) bad(*wrong);
    if (!t.shape.rank_known) return;
    if (x.dims().size() != t.shape.dims.size())
      bad(cat("expected rank ", t.shape.dims.size(), " ", t.shape.to_string(), ", got rank ", x.dims().size()));
    for (size_t i = 0; i < x.dims().size(); ++i) {
      const Dim& dim = t.shape.dims[i];
      if (dim.value && *dim.value != x.dims()[i])
        bad(cat("dimension ", i, " must be ", *dim.value, ", got ", x.dims()[i], " (model shape ", t.shape.to_string(), ")"));
      if (!dim.value && !dim.param.empty()) {
        auto [it, inserted] = symbols.emplace(dim.param, x.dims()[i]);
        if (!inserted && it->second != x.dims()[i])
          bad(cat("dimension ", i, " ('", dim.param, "') is ", x.dims()[i], ", but another input set '", dim.param,
                  "' to ", it->second));
      }
    }
    return;
  }
  if (auto wrong = mismatch(t, d)) bad(*wrong);
}

}  // namespace

std::vector<std::pair<std::string, Datum>> Session::Impl::run(const std::map<std::string, Datum>& feeds,
                                                              const std::vector<std::string>& output_names,
                                                              const RunOptions& options) const {
  using namespace exec;
  const Graph& g = *model.graph;
  std::map<std::string, int64_t> symbols;
  for (const auto& [name, d] : feeds) {
    const Value* v = g.find_local(name);
    if (!v || !v->is_graph_input) fail(label, ": '", name, "' is not an input of the model");
  }
  std::vector<Datum> inputs(g.inputs.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value* v = g.inputs[i];
    auto it = feeds.find(v->name);
    if (it == feeds.end()) {
      if (!v->initializer) fail(label, ": input '", v->name, "' is missing (", v->type.to_string_with_shape(), ")");
      continue;  // the initializer is the default
    }
    check_feed(label, IoInfo{v->name, v->type}, it->second, symbols);
    inputs[i] = it->second;
  }
  std::vector<size_t> wanted;
  if (output_names.empty()) {
    for (size_t i = 0; i < g.outputs.size(); ++i) wanted.push_back(i);
  } else {
    for (const auto& n : output_names) {
      size_t i = 0;
      while (i < g.outputs.size() && g.outputs[i]->name != n) ++i;
      if (i == g.outputs.size()) fail(label, ": '", n, "' is not an output of the model");
      wanted.push_back(i);
    }
  }
  RunState run;
  run.options = &options;
  run.limits.terminate = options.terminate;
  if (options.timeout_ms > 0) {
    run.limits.timeout_ms = options.timeout_ms;
    run.limits.deadline = run.began + std::chrono::milliseconds(options.timeout_ms);
  }
  std::optional<threads::CoreLease> cores;
  try {
    cores.emplace(this->options.threads > 0 ? this->options.threads : threads::physical_cores(), &run.limits);
  } catch (const Error& e) {
    throw Error(cat(label, ": ", e.what()), e.kind());
  }
  threads::use_for_this_thread(cores->team());
  RunLimitsScope limits_scope(&run.limits);  // for kernels' own checks
  MemoryBudgetScope budget_scope(budget.get());
  std::unique_ptr<exec::RunMemory> memory;
  if (this->options.memory_plan)
    if (auto signature = shape_signature(feeds)) memory = memory_planner.begin_run(*signature);
  run.memory = memory.get();
  std::vector<Datum> all;
  {
    exec::AllocationHookScope hook_scope;  // the steps set the hook; none once the run is over
    all = execute(*main, std::move(inputs), nullptr, run);
  }
  if (memory) memory->finish();  // the frame is gone: what is still allocated is what the caller gets
  std::vector<std::pair<std::string, Datum>> result;
  for (size_t i : wanted) result.emplace_back(g.outputs[i]->name, all[i]);
  return result;
}

// Dims (and element type) of every main-graph input, in graph order; an input left to its initializer counts as
// such. No signature when a feed is not a tensor.
std::optional<std::vector<int64_t>> Session::Impl::shape_signature(const std::map<std::string, Datum>& feeds) const {
  std::vector<int64_t> sig;
  for (const Value* v : model.graph->inputs) {
    auto it = feeds.find(v->name);
    if (it == feeds.end()) {
      sig.push_back(-1);
      continue;
    }
    if (!it->second.is_tensor()) return std::nullopt;
    const Tensor& t = it->second.tensor;
    sig.push_back(static_cast<int64_t>(t.dtype()));
    sig.push_back(static_cast<int64_t>(t.dims().size()));
    sig.insert(sig.end(), t.dims().begin(), t.dims().end());
  }
  return sig;
}

}  // namespace onyx
