// The inside of a session, shared by its parts: planning (compile.cpp: check, build the IR, bind each node to its
// op, infer types and shapes, create kernels), execution (execute.cpp: topological order; each value is released
// after its last reader; subgraphs run in child frames that see their outer scope; model-local functions run
// their body as a graph) and the public face (session.cpp). Internal to exec/.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.hpp"
#include "base/memory_budget.hpp"
#include "base/run_limits.hpp"
#include "exec/custom_ops.hpp"
#include "exec/memory_plan.hpp"
#include "format/onnx_proto.hpp"
#include "infer/inference.hpp"
#include "ir/tensor_alloc.hpp"
#include "onyx/session.hpp"
#include "ops/registry.hpp"

namespace onyx {
namespace exec {

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

inline std::string where(const Node& n) { return cat(n.graph ? n.graph->label() + ": " : "", "node ", n.label()); }

// Ends a run that its limits stop (its deadline passed, or its caller terminated it), saying where.
[[noreturn]] void stop(const std::string& model, const RunLimits& limits, const std::string& at);
// Rethrows the exception being handled with the model's label and the node's place in front of its message (as
// an onyx Error; oneDNN's and the standard library's as their onyx kinds), unless it already names the model (a
// node of a nested graph). Call only from a catch block.
[[noreturn]] void rethrow_at(const std::string& label, const Node& n);
// How a node of graph `from` reaches value `v` (of `from` or an enclosing graph).
Ref ref_for(const Value* v, const Graph* from);
// The value `r` names, seen from frame `f`.
const Datum& lookup(const Frame& f, const Ref& r);
inline bool is_constant_node(const Node& n) {
  return n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx");
}

}  // namespace exec

struct Session::Impl {
  BufferPoolUse buffer_pool;  // first: what creation and runs release is kept for reuse while the session lives
  SessionOptions options;
  // Ops of options.custom_op_libraries (exec/custom_ops.hpp), bound ahead of the built-in registry; null when none.
  // Before the plans: their steps point at its defs.
  std::shared_ptr<const exec::CustomOps> custom_ops;
  Model model;
  std::vector<IoInfo> inputs, outputs;
  std::shared_ptr<exec::GraphPlan> main;
  std::unordered_map<const Graph*, std::shared_ptr<exec::GraphPlan>> plans;  // every graph, subgraphs included
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
    if (it == imports.end()) fail(exec::where(n), ": domain '", n.domain, "' is not imported");
    return it->second;
  }

  // The value a fast kernel may prepack for `v`: its initializer, or a Constant node's output. An initializer that
  // is also a graph input (every initializer, in IR 3 models) may still be replaced by a feed: kernels compare
  // the tensor they get with the one they packed (same bytes) and compute from what they get when it differs.
  // (Folded values are not offered: one may derive from an input whose initializer a feed replaces.)
  const Tensor* constant_value(const Value* v) const {
    if (!v) return nullptr;
    if (v->initializer) return v->initializer;
    if (!v->producer || !exec::is_constant_node(*v->producer)) return nullptr;
    return inference.constant(v);
  }


  // Planning (exec/compile.cpp): binds each node of `g` to its op or function body, infers, makes kernels.
  std::shared_ptr<exec::GraphPlan> compile(const Graph& g, const std::map<std::string, int64_t>& imports,
                                           const std::vector<const Attribute*>* scope);
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
  void compile_function_call(exec::Step& step, const Node& n, const Function& fn);
  std::vector<std::shared_ptr<std::vector<const Attribute*>>> function_scopes;

  // Execution (exec/execute.cpp).
  std::vector<Datum> execute(const exec::GraphPlan& plan, std::vector<Datum> inputs, const exec::Frame* parent,
                             const exec::RunState& run) const;
};

namespace exec {
// A session's inside from a loaded model. `initializers_may_be_fed`: keep an IR 3 model's initializers as inputs
// a run may replace, rather than constants.
Session::Impl* make_impl(pb::ModelDocument doc, const SessionOptions& options, bool initializers_may_be_fed = false);
}  // namespace exec

}  // namespace onyx
