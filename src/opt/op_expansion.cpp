// Replaces the nodes of ops defined by other ops (OpDef::expand: ONNX Runtime's contrib ops) by the nodes they
// expand to, in the main graph and every subgraph. Not an optimization: such ops have no kernel of their own, so a
// session does this at every optimization level, before inference and the passes (which then fuse the result).
#include <optional>
#include <unordered_map>

#include "base/error.hpp"
#include "ir/spec_table.hpp"
#include "ops/registry.hpp"
#include "opt/optimizer.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// Types the analysis gave the outputs of nodes expanded earlier in the same round, for the values that now stand
// for those outputs (the analysis predates them).
using KnownTypes = std::unordered_map<const Value*, Type>;

class Expansion final : public ops::ExpandContext {
 public:
  Expansion(PassContext& ctx, Node& n, int64_t node_opset, KnownTypes& known)
      : ExpandContext(n, node_opset), ctx_(ctx), node_(n), known_(known) {
    const Analysis& a = ctx.analysis();
    auto type_of = [&](const Value* v) -> const Type& {
      auto it = known.find(v);
      return it != known.end() ? it->second : a.type(v);
    };
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* v = n.inputs[i];
      const Type& t = v ? type_of(v) : Type{};
      const bool tensor = t.kind == Type::Kind::Tensor;
      dtypes_.push_back(tensor ? t.elem : DataType::Undefined);
      ranks_.push_back(tensor && t.shape.rank_known ? static_cast<int64_t>(t.shape.dims.size()) : -1);
      values_.push_back(v ? a.constant(v) : nullptr);
    }
    for (const Value* v : n.outputs) out_types_.push_back(v ? type_of(v) : Type{});
    replaced_.assign(n.outputs.size(), nullptr);
  }

  int64_t onnx_opset() const override { return ctx_.opset(""); }
  DataType input_dtype(size_t i) const override { return i < dtypes_.size() ? dtypes_[i] : DataType::Undefined; }
  int64_t input_rank(size_t i) const override { return i < ranks_.size() ? ranks_[i] : -1; }
  const Tensor* input_value(size_t i) const override { return i < values_.size() ? values_[i] : nullptr; }

  std::vector<Value*> emit(const std::string& op_type, const std::string& domain, std::vector<Value*> inputs,
                           std::vector<Value*> outputs, std::vector<Attribute> attributes) override {
    while (!inputs.empty() && !inputs.back()) inputs.pop_back();  // a node lists only the inputs it has
    const std::string base = node_.name.empty() ? node_.op_type : node_.name;
    for (Value*& v : outputs) {
      // One of the node's own outputs: a new value stands for it until the node is gone (see finish).
      size_t k = 0;
      while (v && k < node_.outputs.size() && node_.outputs[k] != v) ++k;
      Value* fresh = &ctx_.graph.add_value(ctx_.fresh_name(v && k < node_.outputs.size() ? v->name : base));
      if (v) {
        if (k == node_.outputs.size()) fail("expansion of ", node_.label(), " writes '", v->name, "', not one of its outputs");
        if (replaced_[k]) fail("expansion of ", node_.label(), " writes output ", k, " twice");
        replaced_[k] = fresh;
        known_[fresh] = out_types_[k];
      }
      v = fresh;
    }
    Node& n = ctx_.insert_node(node_, op_type, domain, inputs, outputs, ctx_.fresh_name(base + "/" + op_type));
    n.attributes = std::move(attributes);
    return outputs;
  }

  Value* constant(Tensor t) override {
    return &ctx_.add_initializer((node_.name.empty() ? node_.op_type : node_.name) + "/const", std::move(t));
  }

  // Removes the node; the values that stood for its outputs take their place.
  void finish() {
    for (size_t i = 0; i < node_.outputs.size(); ++i)
      if (!replaced_[i] && output_wanted(i))
        fail("output ", i, " ('", node_.outputs[i]->name, "') of ", node_.op_type, " is not supported");
    std::vector<Value*> outs = node_.outputs;
    ctx_.remove_node(node_);
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i] && replaced_[i]) ctx_.substitute(outs[i], replaced_[i]);
  }

 private:
  PassContext& ctx_;
  Node& node_;
  KnownTypes& known_;
  std::vector<DataType> dtypes_;
  std::vector<int64_t> ranks_;
  std::vector<const Tensor*> values_;
  std::vector<Type> out_types_;
  std::vector<Value*> replaced_;
};

// The def of `n` when it is an op that expands, else null (unknown ops are left for the session to report).
const ops::OpDef* expanding_def(const Model& model, const Node& n) {
  if (spec::is_known_domain(n.domain)) return nullptr;
  auto opset = model.opset(n.domain);
  if (!opset) return nullptr;
  if (model.function(n.domain, n.op_type, n.overload)) return nullptr;  // a model-local function runs as such
  try {
    const ops::OpDef& def = ops::builtin_registry().resolve(n, *opset);
    return def.expand ? &def : nullptr;
  } catch (const Error&) {
    return nullptr;
  }
}

// Whether `g` or a graph nested in it holds a node that expands.
bool has_expanding_node(const Model& model, const Graph& g) {
  for (const auto& n : g.nodes) {
    if (expanding_def(model, *n)) return true;
    for (const Attribute& a : n->attributes) {
      if (a.g && has_expanding_node(model, *a.g)) return true;
      for (const auto& sg : a.graphs)
        if (has_expanding_node(model, *sg)) return true;
    }
  }
  return false;
}

// `outer`: the types of the enclosing graphs' values (a subgraph's expansions read outer values, whose types only
// the enclosing graph's analysis knows).
bool expand_graph(Model& model, Graph& g, const OptimizeOptions& options, const Analysis::OuterTypes& outer) {
  bool any = false;
  // An expansion may emit ops that expand in turn; each round replaces what the previous one emitted.
  for (int round = 0; round < 8; ++round) {
    PassContext ctx(model, g, options, &outer);
    KnownTypes known;
    std::vector<std::pair<Node*, const ops::OpDef*>> todo;
    for (auto& n : g.nodes)
      if (const ops::OpDef* def = expanding_def(model, *n)) todo.emplace_back(n.get(), def);
    if (todo.empty()) break;
    for (auto [n, def_ptr] : todo) {
      const ops::OpDef& def = *def_ptr;
      const std::string label = n->label();
      try {
        Expansion e(ctx, *n, *model.opset(n->domain), known);
        std::vector<DataType> dtypes;
        for (size_t i = 0; i < n->inputs.size(); ++i) dtypes.push_back(e.input_dtype(i));
        ops::check_input_types(def, *n, dtypes);
        def.expand(e);
        e.finish();
      } catch (const Error& err) {
        fail(model.label, ": ", g.label(), ": node ", label, ": ", err.what());
      }
    }
    ctx.finish();
    any = true;
  }
  std::optional<Analysis::OuterTypes> inner;  // this graph's types and the outer ones, for its subgraphs
  for (auto& n : g.nodes)
    for (Attribute& a : n->attributes) {
      std::vector<Graph*> subgraphs;
      if (a.g) subgraphs.push_back(a.g.get());
      for (auto& sg : a.graphs) subgraphs.push_back(sg.get());
      for (Graph* sg : subgraphs) {
        if (!has_expanding_node(model, *sg)) continue;
        if (!inner) {
          inner = outer;
          PassContext ctx(model, g, options, &outer);
          const Analysis& analysis = ctx.analysis();
          for (const Value& v : g.values()) (*inner)[&v] = analysis.type(&v);
        }
        any = expand_graph(model, *sg, options, *inner) || any;
      }
    }
  return any;
}

}  // namespace

bool expand_ops(Model& model) {
  if (!model.graph || !has_expanding_node(model, *model.graph)) return false;
  // A model importing only contrib domains (com.microsoft) has no ai.onnx opset for the standard nodes its ops
  // expand to (onnx_opset() would read 0 and nothing binds): they bind at the newest one onyx implements.
  if (!model.opset("")) model.opset_imports[""] = spec::newest_opset("").value_or(1);
  OptimizeOptions options;
  options.level = 0;
  return expand_graph(model, *model.graph, options, {});
}

}  // namespace onyx::opt
