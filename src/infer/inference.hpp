// Type and shape inference at creation, node by node in graph order: the one engine behind the optimizer's
// analysis (opt/graph_edit.hpp) and the session's compilation (exec/session.cpp). Each node's op infers its
// output types from its inputs' types, constant values and symbolic shape contents (ops::InferContext); small
// deterministic nodes whose inputs are all known are run, so that shape computations downstream see values.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/model.hpp"

namespace onyx::ops {
struct OpDef;
class Kernel;
}  // namespace onyx::ops

namespace onyx::infer {

// Largest tensor (elements) inference keeps as a known value: shape computations are small.
constexpr uint64_t kSmallValue = 4096;

// What inference found, completed by what the model declares: where both know a dim, inference wins (a stale
// value_info must not make a pass bake a wrong shape into the model, nor a kernel be made for it).
Type refine_declared(const Type& declared, const Type& inferred);

class Inference {
 public:
  // Where inferred types go: beside the IR (the optimizer's analysis, which must not change the model), or
  // into the IR's values (the session, which owns its model and makes kernels for those types).
  enum class Types { Beside, IntoIr };
  // Types of values of enclosing graphs, for a subgraph inferred beside the IR.
  using OuterTypes = std::unordered_map<const Value*, Type>;
  explicit Inference(Types where, const OuterTypes* outer = nullptr) : where_(where), outer_(outer) {}

  // The type inference gives `v` (merged with what the model declares).
  const Type& type(const Value* v) const;
  // The value of `v` when known at creation: an initializer no feed may replace (one that is also a graph
  // input is a default), or a small value inference or folding gave.
  const Tensor* constant(const Value* v) const;
  // Symbolic contents of a small integer tensor (ops::InferContext::input_dim_values), null when unknown.
  const std::vector<Dim>* dim_values(const Value* v) const;
  // Sets (or, with nullopt, forgets) what `v` holds: for a function body's inputs, bound per call site.
  void set_dim_values(const Value* v, std::optional<std::vector<Dim>> dims);

  // Infers the outputs of `n`, bound to `def` at `opset`; `scope`: the attributes of the call when `n` is in a
  // model-local function body (whose values take each call site's types in turn). Throws, without naming the
  // node, when the inputs do not fit the op or the result contradicts an output type the model declares.
  void infer(const Node& n, const ops::OpDef& def, int64_t opset, const std::vector<const Attribute*>* scope);
  // Runs `n` when it is deterministic, without subgraphs, every input is known and no bigger than kSmallValue,
  // and no output is known to be bigger; keeps the outputs of at most kSmallValue elements as known values.
  // `kernel`: the node's kernel when the caller made one, else one is made here. A failure is left for the
  // run to report, with the inputs it gets.
  void fold_small(const Node& n, const ops::OpDef& def, int64_t opset, const std::vector<const Attribute*>* scope,
                  ops::Kernel* kernel = nullptr);

 private:
  void set_type(Value* v, const Type& inferred, bool in_function_body);
  Types where_;
  const OuterTypes* outer_;
  std::unordered_map<const Value*, Type> types_;  // Types::Beside only
  std::unordered_map<const Value*, Tensor> constants_;
  std::unordered_map<const Value*, std::vector<Dim>> dim_values_;
};

}  // namespace onyx::infer
