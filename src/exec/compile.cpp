// Session creation: check the model, build the IR, expand and optimize it, then compile each graph into a plan of
// steps (each node bound to its op or a function body, its types inferred, its kernel made).
#include <algorithm>
#include <unordered_set>

#include "base/pages.hpp"
#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "check/versions.hpp"
#include "exec/session_impl.hpp"
#include "exec/session_overrides.hpp"
#include "exec/threads.hpp"
#include "ir/spec_table.hpp"
#include "ir/tensor_alloc.hpp"
#include "opt/optimizer.hpp"
#include "format/model_read.hpp"

namespace onyx {

std::shared_ptr<exec::GraphPlan> Session::Impl::compile(const Graph& g, const std::map<std::string, int64_t>& imports,
                                                       const std::vector<const Attribute*>* scope) {
  using namespace exec;
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
        // The session's custom ops first; every other node, an unknown op's included, binds as it always has.
        const ops::OpDef* def = custom_ops ? custom_ops->resolve(n, step.opset) : nullptr;
        if (!def) def = &ops::builtin_registry().resolve(n, step.opset);
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
    } catch (const std::exception&) {
      rethrow_at(label, n);
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

void Session::Impl::compile_function_call(exec::Step& step, const Node& n, const Function& fn) {
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

namespace exec {

Ref ref_for(const Value* v, const Graph* from) {
  Ref r;
  r.id = v->id;
  for (const Graph* g = from; g != v->graph; g = g->parent) {
    if (!g) fail("value '", v->name, "' is not in scope");
    ++r.depth;
  }
  return r;
}

namespace {

// Each tensor the session uses is copied to an aligned buffer when (and only when) its view is misaligned for its
// type.
void align_tensor(Tensor& t) {
  if (!is_aligned_for_kernels(t)) {
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

}  // namespace

Session::Impl* make_impl(pb::ModelDocument doc, const SessionOptions& options, bool initializers_may_be_fed) {
  auto impl = std::make_unique<Session::Impl>();
  impl->options = options;
  if (options.memory_limit_mb) {
    if (options.memory_limit_mb > (uint64_t{1} << 40)) fail(doc.label, ": memory_limit_mb ", options.memory_limit_mb, " is past 2^40");
    impl->budget = std::make_shared<MemoryBudget>(options.memory_limit_mb << 20);
  }
  MemoryBudgetScope budget_scope(impl->budget.get());  // what folding allocates stays with the session
  // Custom-op libraries load before the checks: the domains they register count as imported.
  if (!options.custom_op_libraries.empty()) {
    impl->custom_ops = load_custom_ops(options.custom_op_libraries, doc.label);
    import_custom_domains(doc, *impl->custom_ops);
  }
  check::accept_with_warnings(doc, options.log_level);
  // Models ONNX Runtime loads beyond the spec, and the options that change the model (exec/session_overrides.hpp),
  // before the checker: replaced initializers' own data is never read.
  const check::RuntimeLeniency lenient = check::accept_runtime_models(doc, options.log_level);
  apply_document_overrides(doc, impl->options);
  check::CheckOptions check_options;
  check_options.initializers_need_not_be_inputs = lenient.initializers_need_not_be_inputs;
  if (!options.accept_newer_versions) check::refuse_newer_versions(doc);
  check::check_model_or_throw(doc, check_options);
  impl->model = build_model(doc);
  apply_model_overrides(impl->model, impl->options, doc.label);  // before inference, optimization and planning
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
  // Inputs and outputs the model declares sparse run dense; the interface keeps what the model declares.
  restore_sparse_kinds(impl->inputs, lenient.sparse_inputs);
  restore_sparse_kinds(impl->outputs, lenient.sparse_outputs);
  return impl.release();
}

}  // namespace exec
}  // namespace onyx
