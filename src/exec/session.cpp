// Session creation (check, build the IR, bind each node to its op, infer types and shapes, create kernels) and
// execution (topological order; each value is released after its last reader; subgraphs run in child frames that
// see their outer scope; model-local functions run their body as a graph).
#include "onyx/session.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/error.hpp"
#include "base/pages.hpp"
#include "base/run_limits.hpp"
#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "check/versions.hpp"
#include "exec/memory_plan.hpp"
#include "exec/threads.hpp"
#include "infer/inference.hpp"
#include "format/mapped_file.hpp"
#include "format/onnx_proto.hpp"
#include "ir/tensor_alloc.hpp"
#include "kernels/library_errors.hpp"
#include "ir/spec_table.hpp"
#include "ops/registry.hpp"
#include "opt/optimizer.hpp"

namespace onyx {

namespace {

struct Ref {
  int depth = 0;  // frames to walk up (0: this graph)
  size_t id = 0;
};

struct GraphPlan;

struct Step {
  const Node* node = nullptr;
  int64_t opset = 0;
  const ops::OpDef* def = nullptr;
  std::unique_ptr<ops::Kernel> kernel;
  std::shared_ptr<GraphPlan> function_body;  // for calls of model-local functions
  std::vector<std::optional<Ref>> inputs;
  std::vector<size_t> release;  // local values whose last reader is this step
  // Inputs the kernel may take over (reuse their buffers): local values read once by this node and released by it.
  std::vector<size_t> dying_inputs;
  bool nested = false;  // runs subgraphs or a function body: its allocations are not planned
};

struct GraphPlan {
  const Graph* graph = nullptr;
  std::vector<Step> steps;
  std::vector<std::pair<size_t, const Tensor*>> constants;  // initializers
  // The initializers as the values a run reads, made once: by local value id, null for other values. A frame
  // holds no copies of them (an If branch or loop body entered per run would copy every one, dims and names
  // included, each time).
  std::vector<Datum> constant_datums;
  std::vector<const Datum*> constant_at;
  std::vector<size_t> input_ids, output_ids_local;
  std::vector<Ref> outputs;
};

// What one run carries through every frame: the caller's options and the clock the profile counts from.
struct RunState {
  const RunOptions* options = nullptr;
  RunLimits limits;  // the deadline and terminate flag of RunOptions
  exec::RunMemory* memory = nullptr;  // the main graph's memory plan for this run, if any
  std::chrono::steady_clock::time_point began = std::chrono::steady_clock::now();
};

struct Frame {
  const GraphPlan* plan;
  std::vector<Datum> values;
  const Frame* parent;
  const RunState* run;
};

std::string where(const Node& n) { return cat(n.graph ? n.graph->label() + ": " : "", "node ", n.label()); }

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

Ref ref_for(const Value* v, const Graph* from) {
  Ref r;
  r.id = v->id;
  for (const Graph* g = from; g != v->graph; g = g->parent) {
    if (!g) fail("value '", v->name, "' is not in scope");
    ++r.depth;
  }
  return r;
}

const Datum& lookup(const Frame& f, const Ref& r) {
  const Frame* fr = &f;
  for (int i = 0; i < r.depth; ++i) fr = fr->parent;
  const Datum& d = fr->values[r.id];
  if (d.kind == Datum::Kind::Empty && r.id < fr->plan->constant_at.size() && fr->plan->constant_at[r.id])
    return *fr->plan->constant_at[r.id];  // an initializer (a feed of the same name, if any, is in values)
  return d;
}

bool is_constant_node(const Node& n) {
  return n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx");
}

}  // namespace

struct Session::Impl {
  SessionOptions options;
  Model model;
  std::vector<IoInfo> inputs, outputs;
  std::shared_ptr<GraphPlan> main;
  std::unordered_map<const Graph*, std::shared_ptr<GraphPlan>> plans;  // every graph, subgraphs included
  // Types (into the model's values), values and shape contents known at creation, of every graph.
  infer::Inference inference{infer::Inference::Types::IntoIr};
  std::string label;
  // IR 3 models list every initializer as a graph input. ONNX calls it the input's default; a model is only fast
  // when its weights are constants (folded, packed), so the session optimizes them as constants and, for a run
  // that feeds one of them, builds on first need a second session that keeps them as inputs.
  std::set<std::string> constant_inputs;       // initializers optimized as constants
  std::optional<pb::ModelDocument> source;     // kept to build that second session
  mutable std::mutex with_feeds_mutex;
  mutable std::unique_ptr<Impl> with_feeds;
  mutable exec::MemoryPlanner memory_planner;
  std::shared_ptr<MemoryBudget> budget;  // options.memory_limit_mb, when set

  const Impl& for_feeds() const;
  std::vector<std::pair<std::string, Datum>> run(const std::map<std::string, Datum>& feeds,
                                                 const std::vector<std::string>& output_names,
                                                 const RunOptions& options) const;
  std::optional<std::vector<int64_t>> shape_signature(const std::map<std::string, Datum>& feeds) const;

  int64_t opset_for(const Node& n, const std::map<std::string, int64_t>& imports) const {
    auto it = imports.find(n.domain == "ai.onnx" ? "" : n.domain);
    if (it == imports.end()) fail(where(n), ": domain '", n.domain, "' is not imported");
    return it->second;
  }

  // The value a fast kernel may prepack for `v`: its initializer, or a Constant node's output. An initializer that
  // is also a graph input (every initializer, in IR 3 models) may still be replaced by a feed: kernels compare
  // the tensor they get with the one they packed (same bytes) and compute from what they get when it differs.
  // (Folded values are not offered: one may derive from an input whose initializer a feed replaces.)
  const Tensor* constant_value(const Value* v) const {
    if (!v) return nullptr;
    if (v->initializer) return v->initializer;
    if (!v->producer || !is_constant_node(*v->producer)) return nullptr;
    return inference.constant(v);
  }

  std::shared_ptr<GraphPlan> compile(const Graph& g, const std::map<std::string, int64_t>& imports,
                                     const std::vector<const Attribute*>* scope) {
    auto plan = std::make_shared<GraphPlan>();
    plan->graph = &g;
    for (const auto& [name, t] : g.initializers)
      if (Value* v = g.find_local(name)) plan->constants.emplace_back(v->id, &t);
    plan->constant_at.assign(g.values().size(), nullptr);
    for (const Value* v : g.inputs) plan->input_ids.push_back(v->id);
    std::unordered_map<size_t, size_t> last_use;  // local value id -> step index
    // Initializers of the main graph that every reader copies into its own layout (packed weights) hold memory
    // no run reads: each goes back to the system once its last reader's kernel exists, which keeps the peak of
    // creation near one copy of the weights. Values read by subgraphs, function bodies or the caller stay.
    std::unordered_map<const Value*, std::pair<size_t, bool>> packing;  // readers left, all packed so far
    std::unordered_set<const Value*> no_release;
    if (&g == model.graph.get()) {
      for (const auto& up : g.nodes) {
        for (const Value* v : up->inputs)
          if (v && v->initializer) ++packing.try_emplace(v, 0, true).first->second.first;
        for (const Attribute& a : up->attributes) {
          auto unpacked = [&](const Value* v) { no_release.insert(v); };
          if (a.g) for_each_outer_read(*a.g, g, unpacked);
          for (const auto& sg : a.graphs) for_each_outer_read(*sg, g, unpacked);
        }
      }
      for (const Value* v : g.outputs) no_release.insert(v);
      for (const Value* v : g.inputs) no_release.insert(v);
      for (const Value* v : no_release) packing.erase(v);
    }
    for (const auto& up : g.nodes) {
      const Node& n = *up;
      Step step;
      step.node = &n;
      try {
        step.opset = opset_for(n, imports);
        // A model-local function runs as a function unless it names an ONNX op onyx implements.
        const Function* fn = model.function(n.domain, n.op_type, n.overload);
        bool call = fn && (!spec::is_known_domain(n.domain) || ops::builtin_registry().versions(n.domain, n.op_type).empty());
        if (call) {
          compile_function_call(step, n, *fn);
        } else {
          const ops::OpDef* def = &ops::builtin_registry().resolve(n, step.opset);
          if (!def->kernel)  // expanded at load everywhere but in model-local function bodies
            fail(n.domain, ".", n.op_type, " runs only as the nodes it expands to, which a model-local function body does not get");
          step.def = def;
          // Subgraphs first: control-flow inference reads the bodies' inferred output types.
          for (const Attribute& a : n.attributes) {
            if (a.g) plans[a.g.get()] = compile(*a.g, imports, scope);
            for (const auto& sg : a.graphs) plans[sg.get()] = compile(*sg, imports, scope);
          }
          inference.infer(n, *def, step.opset, scope);
          ops::KernelInit init{n, step.opset, ops::AttributeView(n, scope), {}, {}, &imports};
          init.reference_only = options.reference_kernels;
          for (const Value* v : n.inputs) {
            init.input_types.push_back(v ? &v->type : nullptr);
            init.input_values.push_back(constant_value(v));
          }
          for (const Value* v : n.outputs) init.output_types.push_back(v ? &v->type : nullptr);
          step.kernel = def->kernel(init);
          inference.fold_small(n, *def, step.opset, scope, step.kernel.get());
        }
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          auto it = n.inputs[i] ? packing.find(n.inputs[i]) : packing.end();
          if (it == packing.end()) continue;
          auto& [left, packed] = it->second;
          packed = packed && step.kernel && step.kernel->keeps_copy_of_input(i);
          if (--left == 0) {
            if (packed) release_pages(*n.inputs[i]->initializer);
            packing.erase(it);
          }
        }
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.rfind(label + ": ", 0) == 0) throw;  // already located (a node of a nested graph)
        throw Error(cat(label, ": ", where(n), ": ", msg), e.kind());
      } catch (const std::exception&) {
        kernels::rethrow_library_error(cat(label, ": ", where(n), ": "));
      }
      step.nested = step.function_body != nullptr;
      for (const Attribute& a : n.attributes) step.nested = step.nested || a.g || !a.graphs.empty();
      for (const Value* v : n.inputs) {
        step.inputs.push_back(v ? std::optional<Ref>(ref_for(v, &g)) : std::nullopt);
        if (v && v->graph == &g) last_use[v->id] = plan->steps.size();
      }
      // Values read by nested graphs count as read by this node.
      for (const Attribute& a : n.attributes) {
        auto mark = [&](const Graph& sub) {
          for_each_outer_read(sub, g, [&](const Value* v) { last_use[v->id] = plan->steps.size(); });
        };
        if (a.g) mark(*a.g);
        for (const auto& sg : a.graphs) mark(*sg);
      }
      plan->steps.push_back(std::move(step));
    }
    std::unordered_set<size_t> keep;
    for (const Value* v : g.outputs) {
      plan->outputs.push_back(ref_for(v, &g));
      if (v->graph == &g) keep.insert(v->id);
    }
    // The initializers' Datums, made after the kernels: a Datum shares its tensor's buffer, and memory released
    // above must be the initializer's alone.
    plan->constant_datums.reserve(plan->constants.size());
    for (const auto& [id, t] : plan->constants) plan->constant_datums.push_back(Datum::of(*t));
    for (size_t i = 0; i < plan->constants.size(); ++i)
      plan->constant_at[plan->constants[i].first] = &plan->constant_datums[i];
    for (const auto& [id, step_index] : last_use)
      if (!keep.count(id) && !plan->constant_at[id]) plan->steps[step_index].release.push_back(id);
    for (Step& step : plan->steps) {
      if (step.nested) continue;
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        const auto& r = step.inputs[i];
        if (!r || r->depth != 0) continue;
        if (std::find(step.release.begin(), step.release.end(), r->id) == step.release.end()) continue;
        size_t reads = 0;
        for (const auto& o : step.inputs) reads += o && o->depth == 0 && o->id == r->id;
        if (reads == 1) step.dying_inputs.push_back(i);
      }
    }
    return plan;
  }

  // Calls f for each value of `outer` (or its ancestors) read by `sub` or graphs nested in it.
  template <class F>
  void for_each_outer_read(const Graph& sub, const Graph& outer, F&& f) {
    for (const auto& n : sub.nodes) {
      for (const Value* v : n->inputs)
        if (v && v->graph == &outer) f(v);
      for (const Attribute& a : n->attributes) {
        if (a.g) for_each_outer_read(*a.g, outer, f);
        for (const auto& sg : a.graphs) for_each_outer_read(*sg, outer, f);
      }
    }
    for (const Value* v : sub.outputs)
      if (v->graph == &outer) f(v);
  }

  void compile_function_call(Step& step, const Node& n, const Function& fn) {
    // The caller's attributes, then the function's defaults for those it does not set.
    auto scope = std::make_shared<std::vector<const Attribute*>>();
    for (const Attribute& a : n.attributes) scope->push_back(&a);
    for (const Attribute& d : fn.attribute_defaults) {
      bool set = false;
      for (const Attribute& a : n.attributes) set = set || a.name == d.name;
      if (!set) scope->push_back(&d);
    }
    if (n.inputs.size() > fn.inputs.size()) fail("function ", fn.name, " takes ", fn.inputs.size(), " inputs, got ", n.inputs.size());
    // Bind the caller's input types to the body's inputs (the body is specialized per call site).
    for (size_t i = 0; i < fn.body->inputs.size(); ++i) {
      const Value* arg = i < n.inputs.size() ? n.inputs[i] : nullptr;
      if (arg) fn.body->inputs[i]->type = arg->type;
      const std::vector<Dim>* passed = arg ? inference.dim_values(arg) : nullptr;  // shape values the caller passes in
      inference.set_dim_values(fn.body->inputs[i], passed ? std::optional<std::vector<Dim>>(*passed) : std::nullopt);
    }
    step.function_body = compile(*fn.body, fn.opset_imports, scope.get());
    function_scopes.push_back(scope);
    for (size_t i = 0; i < n.outputs.size() && i < fn.body->outputs.size(); ++i)
      if (n.outputs[i] && n.outputs[i]->type.kind == Type::Kind::Unknown) n.outputs[i]->type = fn.body->outputs[i]->type;
  }
  std::vector<std::shared_ptr<std::vector<const Attribute*>>> function_scopes;

  std::vector<Datum> execute(const GraphPlan& plan, std::vector<Datum> inputs, const Frame* parent,
                             const RunState& run) const;
};

namespace {

class FrameRunner : public ops::SubgraphRunner {
 public:
  FrameRunner(const Session::Impl& s, const Frame& f) : s_(s), f_(f) {}
  std::vector<Datum> run(const Graph& g, std::vector<Datum> inputs) override;

 private:
  const Session::Impl& s_;
  const Frame& f_;
};

}  // namespace

std::vector<Datum> Session::Impl::execute(const GraphPlan& plan, std::vector<Datum> inputs, const Frame* parent,
                                          const RunState& run) const {
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
    } catch (const Error& e) {
      std::string msg = e.what();
      if (msg.rfind(label + ": ", 0) == 0) throw;  // already located (a node of a nested graph)
      throw Error(cat(label, ": ", where(n), ": ", msg), e.kind());
    } catch (const std::exception&) {
      kernels::rethrow_library_error(cat(label, ": ", where(n), ": "));
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

// raw_data inside a protobuf file sits at any byte offset. Kernels read elements through typed pointers, so each
// tensor the session uses is copied to an aligned buffer when (and only when) its view is misaligned for its type.
void align_tensor(Tensor& t) {
  int bits = dtype_bits(t.dtype());
  size_t align = bits >= 16 ? std::min<size_t>(static_cast<size_t>(bits) / 8, 8) : 1;
  if (align > 1 && reinterpret_cast<uintptr_t>(t.bytes().data()) % align != 0) {
    const std::string_view was = t.bytes();
    t = t.clone();
    release_mapped_pages(was.data(), was.size());  // the aligned copy is the one in use
  }
}

// Sparse initializers become the dense initializers they stand for (validated: indices in range and distinct), as
// every kernel reads dense tensors; a graph's and its subgraphs'.
void densify_sparse_initializers(Graph& g, const std::string& model) {
  for (auto& [name, s] : g.sparse_initializers) {
    Tensor t = densify(s, cat(model, ": ", g.label(), ": sparse initializer '", name, "'"));
    t.set_name(name);
    const auto [it, inserted] = g.initializers.emplace(name, std::move(t));
    if (!inserted) fail(model, ": ", g.label(), ": '", name, "' is both an initializer and a sparse initializer");
    Value* v = g.find_local(name);
    if (!v) v = &g.add_value(name);
    v->type = Type::tensor(it->second.dtype());
    v->type.shape.rank_known = true;
    for (int64_t d : it->second.dims()) v->type.shape.dims.push_back(Dim{d, {}, {}});
    v->initializer = &it->second;
  }
  g.sparse_initializers.clear();
  for (auto& n : g.nodes)
    for (Attribute& a : n->attributes) {
      if (a.g) densify_sparse_initializers(*a.g, model);
      for (auto& sg : a.graphs) densify_sparse_initializers(*sg, model);
    }
}

void align_graph(Graph& g) {
  for (auto& [name, t] : g.initializers) align_tensor(t);
  for (auto& [name, s] : g.sparse_initializers) {
    align_tensor(s.values);
    align_tensor(s.indices);
  }
  for (auto& n : g.nodes)
    for (Attribute& a : n->attributes) {
      if (a.t) align_tensor(*a.t);
      for (Tensor& t : a.tensors) align_tensor(t);
      if (a.g) align_graph(*a.g);
      for (auto& sg : a.graphs) align_graph(*sg);
    }
}

// `initializers_may_be_fed`: keep an IR 3 model's initializers as inputs a run may replace, rather than constants.
Session::Impl* make_impl(pb::ModelDocument doc, const SessionOptions& options, bool initializers_may_be_fed = false) {
  auto impl = std::make_unique<Session::Impl>();
  impl->options = options;
  if (options.memory_limit_mb) {
    if (options.memory_limit_mb > (uint64_t{1} << 40)) fail(doc.label, ": memory_limit_mb ", options.memory_limit_mb, " is past 2^40");
    impl->budget = std::make_shared<MemoryBudget>(options.memory_limit_mb << 20);
  }
  MemoryBudgetScope budget_scope(impl->budget.get());  // what folding allocates stays with the session
  check::accept_with_warnings(doc, options.log_level);
  if (!options.accept_newer_versions) check::refuse_newer_versions(doc);
  check::check_model_or_throw(doc);
  impl->model = build_model(doc);
  densify_sparse_initializers(*impl->model.graph, doc.label);
  opt::OptimizeOptions optimize_options{options.optimization_level};
  // A session computes a folded value once instead of on every run, so it folds far bigger values than a file
  // should hold (weights made by ConstantOfShape, say); the bound still caps what one fold may allocate.
  optimize_options.fold_limit_bytes = uint64_t{1} << 30;
  if (options.optimization_level > 0 && !initializers_may_be_fed && impl->model.ir_version < 4) {
    for (const Value* v : impl->model.graph->inputs)
      if (v->initializer) impl->constant_inputs.insert(v->name);
    if (!impl->constant_inputs.empty()) {
      optimize_options.constant_initializer_inputs = true;
      impl->source = doc;
    }
  }
  align_graph(*impl->model.graph);
  for (Function& f : impl->model.functions) {
    align_graph(*f.body);
    for (Attribute& a : f.attribute_defaults)
      if (a.t) align_tensor(*a.t);
  }
  // Ops that other ops define have no kernels of their own: expanded at every level.
  opt::expand_ops(impl->model);
  if (options.optimization_level > 0) opt::optimize(impl->model, optimize_options);
  impl->label = doc.label;
  const Graph& g = *impl->model.graph;
  for (const Value* v : g.inputs)
    if (!v->initializer) impl->inputs.push_back({v->name, v->type});
  // Kernels made here (oneDNN primitives for static shapes) split their work for the team size they see now:
  // the session's, as its runs will use.
  // Outputs are described as the model declares them where it gives a rank (inference may refine the dims the
  // kernels see, not the interface), else as inferred.
  std::vector<std::optional<Type>> declared_outputs;
  for (const Value* v : g.outputs)
    declared_outputs.push_back(v->type.kind != Type::Kind::Unknown &&
                                       (v->type.kind != Type::Kind::Tensor || v->type.shape.rank_known)
                                   ? std::optional<Type>(v->type)
                                   : std::nullopt);
  const int caller_threads = omp_get_max_threads();
  threads::use_for_this_thread(options.threads > 0 ? options.threads : threads::physical_cores());
  try {
    impl->main = impl->compile(g, impl->model.opset_imports, nullptr);
  } catch (...) {
    threads::use_for_this_thread(caller_threads);
    throw;
  }
  threads::use_for_this_thread(caller_threads);
  impl->plans[&g] = impl->main;
  for (size_t i = 0; i < g.outputs.size(); ++i)
    impl->outputs.push_back({g.outputs[i]->name, declared_outputs[i] ? *declared_outputs[i] : g.outputs[i]->type});
  return impl.release();
}

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

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Session Session::from_file(const std::filesystem::path& path, const SessionOptions& options) {
  return Session(std::unique_ptr<Impl>(make_impl(pb::load_model_file(path), options)));
}

Session Session::from_bytes(std::string bytes, const SessionOptions& options) {
  return Session(std::unique_ptr<Impl>(make_impl(pb::load_model_bytes(std::move(bytes)), options)));
}

const SessionOptions& Session::options() const { return impl_->options; }

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }
const Model& Session::model() const { return impl_->model; }
uint64_t Session::memory_in_use() const { return impl_->budget ? impl_->budget->in_use() : 0; }

const Session::Impl& Session::Impl::for_feeds() const {
  std::lock_guard lock(with_feeds_mutex);
  if (!with_feeds) {
    with_feeds.reset(make_impl(*source, options, true));
    if (budget) with_feeds->budget = budget;  // its runs share this session's limit
  }
  return *with_feeds;
}

std::vector<std::pair<std::string, Datum>> Session::run(const std::map<std::string, Datum>& feeds,
                                                        const std::vector<std::string>& output_names,
                                                        const RunOptions& options) const {
  for (const auto& [name, d] : feeds)
    if (impl_->constant_inputs.count(name)) return impl_->for_feeds().run(feeds, output_names, options);
  return impl_->run(feeds, output_names, options);
}

std::vector<std::pair<std::string, Datum>> Session::Impl::run(const std::map<std::string, Datum>& feeds,
                                                              const std::vector<std::string>& output_names,
                                                              const RunOptions& options) const {
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

std::optional<MemoryPlanInfo> Session::memory_plan(const std::map<std::string, Datum>& feeds) const {
  const Impl* impl = impl_.get();
  for (const auto& [name, d] : feeds)
    if (impl_->constant_inputs.count(name)) impl = &impl_->for_feeds();
  if (!impl->options.memory_plan) return std::nullopt;
  auto signature = impl->shape_signature(feeds);
  if (!signature) return std::nullopt;
  return impl->memory_planner.info(*signature);
}

}  // namespace onyx
