// What the optimization passes share: facts about a graph's values (types and constant values from the registry's
// inference, kept beside the IR so the session's own inference later starts from the declared types), and the few
// edits passes make, each keeping the IR consistent (producers, consumer lists, topological order, unique names).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "infer/inference.hpp"
#include "ir/model.hpp"

namespace onyx::ops {
struct OpDef;
}

namespace onyx::opt {

struct OptimizeOptions {
  int level = 1;  // 0 off, 1 basic, 2 extended, 3 all (layout too)
  // Largest tensor (bytes) constant folding may create; bigger results stay computed at run time.
  uint64_t fold_limit_bytes = uint64_t{16} << 20;
  // Initializers that are also graph inputs are defaults a feed may replace, so passes treat them as variables.
  // With this set, they stop being inputs first and become constants (models of IR version < 4 list every
  // initializer as an input, usually with no intent to feed it). Changes the model's interface: off by default.
  bool constant_initializer_inputs = false;
};

// Types, shapes and small constant values of one graph's values, inferred node by node in order (infer/, beside
// the IR). A node whose inference fails (an invalid model) leaves its outputs as declared: passes then leave it
// alone and the session reports the problem.
class Analysis {
 public:
  // Types of values of enclosing graphs, for a subgraph's analysis (values its nodes read from outer scopes).
  using OuterTypes = infer::Inference::OuterTypes;
  Analysis(const Model& model, const Graph& graph, const OuterTypes* outer = nullptr);
  // The inferred type where the model declares none (or no rank), else the declared one.
  const Type& type(const Value* v) const;
  // The static dims of a tensor value, nullopt when any is unknown.
  std::optional<std::vector<int64_t>> static_dims(const Value* v) const;
  DataType dtype(const Value* v) const;
  // Rank, or -1 when unknown.
  int64_t rank(const Value* v) const;
  // The value when known at creation: an initializer, or a small result inference or folding gives.
  const Tensor* constant(const Value* v) const;
  // Symbolic contents of a small integer tensor (see ops::InferContext::input_dim_values).
  const std::vector<Dim>* dim_values(const Value* v) const;
  // The op a node binds to (null: a model-local function, an unknown op, or a domain not imported).
  const ops::OpDef* def(const Node* n) const;
  int64_t opset(const Node* n) const;

 private:
  void infer(const Node& n);
  const Model& model_;
  infer::Inference inference_;
  std::unordered_map<const Node*, std::pair<const ops::OpDef*, int64_t>> defs_;
};

// The state of one optimization run over a graph: the analysis (recomputed after each pass), names in use, and
// the nodes removed by the pass running now (they stay in the graph's list, detached, until finish() drops them,
// so passes may keep pointers while they walk).
class PassContext {
 public:
  // `outer`: what is known of the enclosing graphs' values when `graph` is a subgraph (kept by the caller).
  PassContext(Model& model, Graph& graph, const OptimizeOptions& options, const Analysis::OuterTypes* outer = nullptr);
  Model& model;
  Graph& graph;
  const OptimizeOptions& options;

  const Analysis& analysis();
  // Drops the analysis: it is recomputed on next use. Edits do not call it (a pass works from the analysis of
  // the graph as it found it: fusions and folding keep every value's type); finish() does.
  void changed() { analysis_.reset(); }
  // The model's opset of a domain, 0 when not imported.
  int64_t opset(const std::string& domain) const;

  // A value name used nowhere in the model, built from `base`.
  std::string fresh_name(const std::string& base);
  // A new initializer value holding `t` (named fresh from `base`).
  Value& add_initializer(const std::string& base, Tensor t);
  // Turns `v` (a node output) into an initializer holding `t`; its producer no longer produces it.
  void make_initializer(Value& v, Tensor t);

  // A new node placed just before `before` in the graph's order; outputs must be values produced by nothing. A node
  // of onyx's domain (ai.onyx) imports it into the model.
  Node& insert_node(const Node& before, const std::string& op_type, const std::string& domain,
                    const std::vector<Value*>& inputs, const std::vector<Value*>& outputs, const std::string& name);
  // Removes `old` and puts a new node in its place in the order (outputs may be those `old` produced).
  Node& replace_node(Node& old, const std::string& op_type, const std::string& domain,
                     const std::vector<Value*>& inputs, const std::vector<Value*>& outputs, const std::string& name);
  // Detaches a node (its inputs lose it as a consumer, its outputs lose their producer) and removes it.
  void remove_node(Node& n);
  // Replaces input `i` of `n`.
  void set_input(Node& n, size_t i, Value* v);
  // Makes `n` produce `v` as output `i` in place of what it produced there (`v` must have no producer).
  void set_output(Node& n, size_t i, Value* v);

  // Whether every reader of `from` can read `to` instead (a graph output must keep its name: then `to` must be
  // a node output of this graph that is not itself an input, initializer or output).
  bool can_substitute(const Value* from, const Value* to) const;
  // Every reader of `from` reads `to` instead. When `from` is a graph output, `to`'s producer produces `from`
  // instead and the readers of `to` read `from`. Check can_substitute first (before removing nodes).
  void substitute(Value* from, Value* to);

  // The graph's nodes in their current order. Passes walk this snapshot, so that nodes they insert or remove
  // meanwhile do not disturb the walk (removed ones stay allocated until finish(): check alive()).
  std::vector<Node*> node_order() const;

  // Puts the graph's nodes back in order, drops removed nodes and renumbers them; drops the analysis.
  void finish();
  // Whether an edit (the methods above) happened since the last finish().
  bool edited() const { return edits_ != 0; }
  bool alive(const Node* n) const { return n->graph != nullptr; }

 private:
  void collect_names(const Graph& g);
  size_t position(const Node& n) const;
  Node& insert_at(size_t at, const std::string& op_type, const std::string& domain, const std::vector<Value*>& inputs,
                  const std::vector<Value*>& outputs, const std::string& name);
  const Analysis::OuterTypes* outer_;
  std::optional<Analysis> analysis_;
  uint64_t edits_ = 0;
  std::unordered_set<std::string> names_;
  size_t name_counter_ = 0;
};

// The loop of most passes: `rewrite(node)` for each node of node_order() still alive when reached for which
// `wanted(node)` holds; true when some call changed the graph.
template <class Wanted, class Rewrite>
bool for_each_op(PassContext& ctx, Wanted&& wanted, Rewrite&& rewrite) {
  bool changed = false;
  for (Node* n : ctx.node_order())
    if (ctx.alive(n) && wanted(static_cast<const Node&>(*n))) changed |= rewrite(*n);
  return changed;
}

// ---- Small helpers for matching ----

// The one node reading `v` (once or more) when `v` is no graph output and only that node of v's graph reads it.
Node* sole_reader(const Value* v);
// The node producing input `i` of `n`, null when absent or not a node output.
Node* producer_of(const Node& n, size_t i);
// Whether `n` is the ai.onnx op `op_type`.
bool is_op(const Node* n, const char* op_type);

// for_each_op over the nodes of one ONNX-domain op type.
template <class Rewrite>
bool for_each_op(PassContext& ctx, const char* op_type, Rewrite&& rewrite) {
  return for_each_op(ctx, [op_type](const Node& n) { return is_op(&n, op_type); }, rewrite);
}
// For a two-input node reading `v`: the other input (null when `n` does not read `v` as one of exactly two).
Value* other_input(const Node& n, const Value* v);
// Whether `v` is a constant with one element within `tol` (relative) of `want`.
bool is_const_near(const Analysis& a, const Value* v, double want, double tol = 1e-6);
// A scalar (one element) constant as double.
std::optional<double> scalar_value(const Tensor* t);
bool is_float_type(DataType t);
// The axes of `n` (attribute `axes` before opset `input_since`, constant input 1 from it), normalized for `rank`,
// sorted; nullopt when unknown, empty, out of range or repeated.
std::optional<std::vector<int64_t>> node_axes(const Analysis& a, const Node& n, int64_t input_since, int64_t rank);
// Attribute `name` of `n` as int / ints / float when present and of that type.
std::optional<int64_t> attr_int(const Node& n, const char* name);
std::optional<std::vector<int64_t>> attr_ints(const Node& n, const char* name);
std::optional<float> attr_float(const Node& n, const char* name);
// The ai.onnx op `op_type` as the model's `opset` binds it (null: none at that opset, or not implemented).
const ops::OpDef* standard_def(const char* op_type, int64_t opset);
// Whether every type constraint of `def` allows element type `dt`.
bool allows_type(const ops::OpDef& def, DataType dt);
// Whether a Gemm the optimizer creates at `opset` takes element type `dt` (and broadcasts C without the
// broadcast attribute: opset 7 on).
bool gemm_allows(int64_t opset, DataType dt);
// A new tensor of float type `dt` (float, double, float16, bfloat16) holding `values`.
Tensor make_float_tensor(DataType dt, std::vector<int64_t> dims, const std::vector<double>& values);
// A copy of float-type `w` whose element k is multiplied by factors[(k / inner) % factors.size()] (products in
// double, rounded once): `factors` run along one axis of w, `inner` is the product of the dims after it. Float32
// weights (millions of values, when a normalization folds into them) take one pass with no double copy.
Tensor scaled_along_axis(const Tensor& w, const std::vector<double>& factors, size_t inner);

// Consistency of a graph after edits: each input defined before its reader, producer/consumer links agree.
// Returns a description of the first problem, or "" when consistent. For tests and assertions.
std::string verify_graph(const Graph& g);

}  // namespace onyx::opt
