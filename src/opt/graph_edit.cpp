#include "opt/graph_edit.hpp"

#include <algorithm>
#include <cmath>

#include "base/error.hpp"
#include "ir/scalar.hpp"
#include "ir/spec_table.hpp"
#include "ir/tensor_alloc.hpp"
#include "ops/fused/fused.hpp"
#include "ops/op_kit.hpp"
#include "ops/registry.hpp"

namespace onyx::opt {

namespace {

// Calls f(node) for each node of `g` and of the graphs nested in it.
template <class F>
void for_each_nested_node(const Graph& g, F&& f) {
  for (const auto& n : g.nodes) {
    f(*n);
    for (const Attribute& a : n->attributes) {
      if (a.g) for_each_nested_node(*a.g, f);
      for (const auto& sg : a.graphs) for_each_nested_node(*sg, f);
    }
  }
}

void erase_one(std::vector<Node*>& list, const Node* n) {
  auto it = std::find(list.begin(), list.end(), n);
  if (it != list.end()) list.erase(it);
}

}  // namespace

// ---- Analysis ----

Analysis::Analysis(const Model& model, const Graph& graph, const OuterTypes* outer)
    : model_(model), inference_(infer::Inference::Types::Beside, outer) {
  for (const auto& n : graph.nodes)
    if (n->graph) infer(*n);  // removed nodes wait in the list until the pass finishes
}

const Type& Analysis::type(const Value* v) const { return inference_.type(v); }

std::optional<std::vector<int64_t>> Analysis::static_dims(const Value* v) const {
  const Type& t = type(v);
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) return std::nullopt;
  std::vector<int64_t> d;
  for (const Dim& x : t.shape.dims) {
    if (!x.value) return std::nullopt;
    d.push_back(*x.value);
  }
  return d;
}

DataType Analysis::dtype(const Value* v) const {
  const Type& t = type(v);
  return t.kind == Type::Kind::Tensor ? t.elem : DataType::Undefined;
}

int64_t Analysis::rank(const Value* v) const {
  const Type& t = type(v);
  if (t.kind != Type::Kind::Tensor || !t.shape.rank_known) return -1;
  return static_cast<int64_t>(t.shape.dims.size());
}

const Tensor* Analysis::constant(const Value* v) const { return inference_.constant(v); }

const std::vector<Dim>* Analysis::dim_values(const Value* v) const { return inference_.dim_values(v); }

const ops::OpDef* Analysis::def(const Node* n) const {
  auto it = defs_.find(n);
  return it == defs_.end() ? nullptr : it->second.first;
}

int64_t Analysis::opset(const Node* n) const {
  auto it = defs_.find(n);
  return it == defs_.end() ? 0 : it->second.second;
}

void Analysis::infer(const Node& n) {
  auto imported = model_.opset(n.domain);
  if (!imported) return;
  const Function* fn = model_.function(n.domain, n.op_type, n.overload);
  if (fn && (!spec::is_known_domain(n.domain) || ops::builtin_registry().versions(n.domain, n.op_type).empty()))
    return;  // a call of a model-local function: its outputs stay as declared
  const ops::OpDef* def = nullptr;
  try {
    def = &ops::builtin_registry().resolve(n, *imported);
  } catch (const Error&) {
    return;
  }
  try {
    inference_.infer(n, *def, *imported, nullptr);
  } catch (const std::exception&) {
    defs_[&n] = {nullptr, *imported};  // invalid here: passes leave the node alone
    return;
  }
  defs_[&n] = {def, *imported};
  inference_.fold_small(n, *def, *imported, nullptr);
}

// ---- PassContext ----

PassContext::PassContext(Model& m, Graph& g, const OptimizeOptions& o, const Analysis::OuterTypes* outer)
    : model(m), graph(g), options(o), outer_(outer) {
  collect_names(*m.graph);
  for (const Function& f : m.functions)
    if (f.body) collect_names(*f.body);
}

void PassContext::collect_names(const Graph& g) {
  for (const Value& v : g.values()) names_.insert(v.name);
  for (const auto& n : g.nodes)
    for (const Attribute& a : n->attributes) {
      if (a.g) collect_names(*a.g);
      for (const auto& sg : a.graphs) collect_names(*sg);
    }
}

const Analysis& PassContext::analysis() {
  if (!analysis_) analysis_.emplace(model, graph, outer_);
  return *analysis_;
}

int64_t PassContext::opset(const std::string& domain) const { return model.opset(domain).value_or(0); }

std::string PassContext::fresh_name(const std::string& base) {
  std::string stem = base.empty() ? "onyx_opt" : base;
  for (;;) {
    std::string name = cat(stem, "__", name_counter_++);
    if (names_.insert(name).second) return name;
  }
}

Value& PassContext::add_initializer(const std::string& base, Tensor t) {
  ++edits_;
  std::string name = fresh_name(base);
  t.set_name(name);
  auto it = graph.initializers.emplace(name, std::move(t)).first;
  Value& v = graph.add_value(name);
  v.type = ops::tensor_type(it->second.dtype(), it->second.dims());
  v.initializer = &it->second;
  return v;
}

void PassContext::make_initializer(Value& v, Tensor t) {
  ++edits_;
  if (v.producer) {
    Node& p = *v.producer;
    p.outputs[static_cast<size_t>(v.producer_output)] = nullptr;
    v.producer = nullptr;
    v.producer_output = -1;
  }
  t.set_name(v.name);
  auto it = graph.initializers.insert_or_assign(v.name, std::move(t)).first;
  Type type = ops::tensor_type(it->second.dtype(), it->second.dims());
  type.denotation = v.type.denotation;
  v.type = std::move(type);
  v.initializer = &it->second;
}

Node& PassContext::insert_node(const Node& before, const std::string& op_type, const std::string& domain,
                               const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                               const std::string& name) {
  return insert_at(position(before), op_type, domain, inputs, outputs, name);
}

Node& PassContext::replace_node(Node& old, const std::string& op_type, const std::string& domain,
                                const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                                const std::string& name) {
  const size_t at = position(old);
  remove_node(old);
  return insert_at(at, op_type, domain, inputs, outputs, name);
}

size_t PassContext::position(const Node& n) const {
  auto pos = std::find_if(graph.nodes.begin(), graph.nodes.end(), [&](const auto& p) { return p.get() == &n; });
  if (pos == graph.nodes.end()) fail("optimizer: node ", n.label(), " is not in the graph");
  return static_cast<size_t>(pos - graph.nodes.begin());
}

Node& PassContext::insert_at(size_t at, const std::string& op_type, const std::string& domain,
                             const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                             const std::string& name) {
  ++edits_;
  auto node = std::make_unique<Node>();
  Node& n = *node;
  n.graph = &graph;
  n.op_type = op_type;
  n.domain = domain;
  // A node of onyx's own domain needs the domain imported; every pass's new nodes come through here.
  if (domain == ops::kFusedDomain && !model.opset(domain)) model.opset_imports[domain] = 1;
  n.name = name;
  for (Value* v : inputs) {
    n.inputs.push_back(v);
    if (v) v->consumers.push_back(&n);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* v = outputs[i];
    n.outputs.push_back(v);
    if (!v) continue;
    if (v->producer) fail("optimizer: value '", v->name, "' is already produced by ", v->producer->label());
    v->producer = &n;
    v->producer_output = static_cast<int>(i);
  }
  graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(at), std::move(node));
  return n;
}

void PassContext::remove_node(Node& n) {
  if (!alive(&n)) return;
  ++edits_;
  for (Value* v : n.inputs)
    if (v) erase_one(v->consumers, &n);
  // Values of outer graphs read inside the node's subgraphs lose those readers too.
  for (const Attribute& a : n.attributes) {
    auto detach = [&](const Graph& sub) {
      for_each_nested_node(sub, [&](const Node& inner) {
        for (Value* v : inner.inputs)
          if (v) erase_one(v->consumers, &inner);
      });
    };
    if (a.g) detach(*a.g);
    for (const auto& sg : a.graphs) detach(*sg);
  }
  for (Value* v : n.outputs)
    if (v && v->producer == &n) {
      v->producer = nullptr;
      v->producer_output = -1;
    }
  n.graph = nullptr;  // dropped from the order by finish(), so pointers held by the running pass stay valid
}

void PassContext::set_input(Node& n, size_t i, Value* v) {
  ++edits_;
  if (n.inputs[i]) erase_one(n.inputs[i]->consumers, &n);
  n.inputs[i] = v;
  if (v) v->consumers.push_back(&n);
}

void PassContext::set_output(Node& n, size_t i, Value* v) {
  ++edits_;
  if (Value* old = n.outputs[i]) {
    old->producer = nullptr;
    old->producer_output = -1;
  }
  n.outputs[i] = v;
  if (v) {
    if (v->producer) fail("optimizer: value '", v->name, "' is already produced by ", v->producer->label());
    v->producer = &n;
    v->producer_output = static_cast<int>(i);
  }
}

bool PassContext::can_substitute(const Value* from, const Value* to) const {
  if (from == to || !from || !to) return false;
  auto visible = [](const Value* v, const Node* reader) { return reader->graph && reader->graph->find(v->name) == v; };
  if (!from->is_graph_output) {
    for (const Node* c : from->consumers)
      if (!visible(to, c)) return false;
    return true;
  }
  // `from` keeps its name: `to` must become it.
  if (from->graph != &graph || std::find(graph.outputs.begin(), graph.outputs.end(), from) == graph.outputs.end())
    return false;  // an output of a subgraph naming an outer value: left alone
  if (!to->producer || to->graph != &graph || to->is_graph_output || to->is_graph_input || to->initializer)
    return false;
  for (const Node* c : to->consumers)
    if (!visible(from, c)) return false;
  for (const Node* c : from->consumers)
    if (!visible(from, c)) return false;
  return true;
}

void PassContext::substitute(Value* from, Value* to) {
  ++edits_;
  auto rewire = [&](Value* a, Value* b) {
    std::vector<Node*> readers = a->consumers;
    std::vector<Node*> seen;
    for (Node* c : readers) {
      if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
      seen.push_back(c);
      for (Value*& in : c->inputs)
        if (in == a) {
          in = b;
          b->consumers.push_back(c);
        }
    }
    a->consumers.clear();
  };
  if (!from->is_graph_output) {
    rewire(from, to);
  } else {
    if (from->producer) {
      Node& old = *from->producer;
      old.outputs[static_cast<size_t>(from->producer_output)] = nullptr;
    }
    Node& p = *to->producer;
    size_t slot = static_cast<size_t>(to->producer_output);
    to->producer = nullptr;
    to->producer_output = -1;
    p.outputs[slot] = from;
    from->producer = &p;
    from->producer_output = static_cast<int>(slot);
    rewire(to, from);
  }
}

std::vector<Node*> PassContext::node_order() const {
  std::vector<Node*> order;
  order.reserve(graph.nodes.size());
  for (const auto& n : graph.nodes) order.push_back(n.get());
  return order;
}

void PassContext::finish() {
  graph.nodes.erase(std::remove_if(graph.nodes.begin(), graph.nodes.end(), [](const auto& n) { return !n->graph; }),
                    graph.nodes.end());
  analysis_.reset();
  edits_ = 0;
  // Edits keep the order, but a wrong order would break the session: verify and repair (stable).
  std::unordered_set<const Value*> ready;
  bool ordered = true;
  auto inputs_ready = [&](const Node& n, const std::unordered_set<const Value*>& have) {
    auto ok = [&](const Value* v) { return !v || v->graph != &graph || !v->producer || have.count(v) > 0; };
    for (const Value* v : n.inputs)
      if (!ok(v)) return false;
    bool all = true;
    for (const Attribute& a : n.attributes) {
      auto check = [&](const Graph& sub) {
        for_each_nested_node(sub, [&](const Node& inner) {
          for (const Value* v : inner.inputs)
            if (!ok(v)) all = false;
        });
      };
      if (a.g) check(*a.g);
      for (const auto& sg : a.graphs) check(*sg);
    }
    return all;
  };
  for (const auto& n : graph.nodes) {
    if (!inputs_ready(*n, ready)) ordered = false;
    for (const Value* v : n->outputs)
      if (v) ready.insert(v);
  }
  if (!ordered) {
    std::vector<std::unique_ptr<Node>> pending = std::move(graph.nodes), placed;
    ready.clear();
    bool progress = true;
    while (!pending.empty() && progress) {
      progress = false;
      for (auto& n : pending) {
        if (!n || !inputs_ready(*n, ready)) continue;
        for (const Value* v : n->outputs)
          if (v) ready.insert(v);
        placed.push_back(std::move(n));
        progress = true;
      }
      pending.erase(std::remove(pending.begin(), pending.end(), nullptr), pending.end());
    }
    if (!pending.empty()) fail("optimizer: the edited graph has a cycle");
    graph.nodes = std::move(placed);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) graph.nodes[i]->index = i;
}

// ---- Helpers ----

Node* sole_reader(const Value* v) {
  if (!v || v->is_graph_output || v->consumers.empty()) return nullptr;
  Node* r = v->consumers.front();
  for (Node* c : v->consumers)
    if (c != r) return nullptr;
  return r->graph == v->graph ? r : nullptr;
}

Node* producer_of(const Node& n, size_t i) {
  if (i >= n.inputs.size() || !n.inputs[i]) return nullptr;
  return n.inputs[i]->producer;
}

bool is_op(const Node* n, const char* op_type) { return n && n->domain.empty() && n->op_type == op_type; }

Value* other_input(const Node& n, const Value* v) {
  if (n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1]) return nullptr;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return nullptr;
}

bool is_const_near(const Analysis& a, const Value* v, double want, double tol) {
  auto x = scalar_value(a.constant(v));
  return x && std::abs(*x - want) <= tol * std::max(1.0, std::abs(want));
}

const ops::OpDef* standard_def(const char* op_type, int64_t opset) {
  auto since = spec::resolve_since_version("", op_type, opset);
  return since ? ops::builtin_registry().find("", op_type, *since) : nullptr;
}

bool allows_type(const ops::OpDef& def, DataType dt) {
  for (const auto& c : def.types)
    if (std::find(c.allowed.begin(), c.allowed.end(), dt) == c.allowed.end()) return false;
  return true;
}

bool gemm_allows(int64_t opset, DataType dt) {
  if (opset < 7) return false;
  const ops::OpDef* def = standard_def("Gemm", opset);
  return def && allows_type(*def, dt);
}

Tensor scaled_along_axis(const Tensor& w, const std::vector<double>& factors, size_t inner) {
  const size_t n = static_cast<size_t>(w.element_count()), f = factors.size();
  if (f == 0 || inner == 0) fail("optimizer: no factors to scale by");
  if (w.dtype() != DataType::Float) {
    std::vector<double> v = ops::read_doubles(w);
    for (size_t k = 0; k < n; ++k) v[k] *= factors[(k / inner) % f];
    return make_float_tensor(w.dtype(), w.dims(), v);
  }
  Tensor t = allocate_for_overwrite(DataType::Float, w.dims());
  const float* src = w.data<float>();
  float* dst = t.mutable_data<float>();
  for (size_t start = 0; start < n; start += inner) {
    const double s = factors[(start / inner) % f];
    const size_t end = std::min(n, start + inner);
    for (size_t k = start; k < end; ++k) dst[k] = static_cast<float>(static_cast<double>(src[k]) * s);
  }
  return t;
}

Tensor make_float_tensor(DataType dt, std::vector<int64_t> dims, const std::vector<double>& values) {
  if (!is_float_type(dt)) fail("optimizer: ", dt, " is not a float type");
  Tensor t = allocate_for_overwrite(dt, std::move(dims));
  if (t.element_count() != values.size()) fail("optimizer: ", values.size(), " values for ", t.element_count(), " elements");
  ops::store_doubles(t, values);
  return t;
}

std::optional<double> scalar_value(const Tensor* t) {
  if (!t || t->element_count() != 1 || t->dtype() == DataType::String) return std::nullopt;
  try {
    return double_of(t->dtype(), t->bytes().data(), 0);
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool is_float_type(DataType t) {
  return t == DataType::Float || t == DataType::Double || t == DataType::Float16 || t == DataType::BFloat16;
}

std::optional<int64_t> attr_int(const Node& n, const char* name) {
  const Attribute* a = n.attribute(name);
  if (!a || a->type != AttributeType::Int || !a->ref_attr_name.empty()) return std::nullopt;
  return a->i;
}

std::optional<std::vector<int64_t>> node_axes(const Analysis& a, const Node& n, int64_t input_since, int64_t rank) {
  std::vector<int64_t> axes;
  if (a.opset(&n) >= input_since) {
    if (n.inputs.size() < 2 || !n.inputs[1]) return std::nullopt;
    const Tensor* t = a.constant(n.inputs[1]);
    if (!t || (t->dtype() != DataType::Int64 && t->dtype() != DataType::Int32)) return std::nullopt;
    axes = ops::read_ints(*t);
  } else {
    auto given = attr_ints(n, "axes");
    if (!given) return std::nullopt;
    axes = *given;
  }
  if (axes.empty()) return std::nullopt;
  for (int64_t& x : axes) {
    if (x < -rank || x >= rank) return std::nullopt;
    if (x < 0) x += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

std::optional<std::vector<int64_t>> attr_ints(const Node& n, const char* name) {
  const Attribute* a = n.attribute(name);
  if (!a || a->type != AttributeType::Ints || !a->ref_attr_name.empty()) return std::nullopt;
  return a->ints;
}

std::optional<float> attr_float(const Node& n, const char* name) {
  const Attribute* a = n.attribute(name);
  if (!a || a->type != AttributeType::Float || !a->ref_attr_name.empty()) return std::nullopt;
  return a->f;
}

std::string verify_graph(const Graph& g) {
  std::unordered_set<const Value*> defined;
  for (const Value* v : g.inputs) defined.insert(v);
  for (const Value& v : g.values())
    if (v.initializer) defined.insert(&v);
  std::unordered_set<const Node*> nodes;
  for (const auto& n : g.nodes) nodes.insert(n.get());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = *g.nodes[k];
    if (n.graph != &g) return cat("node ", n.label(), " does not belong to the graph");
    if (n.index != k) return cat("node ", n.label(), " has index ", n.index, " at position ", k);
    for (const Value* v : n.inputs) {
      if (!v) continue;
      if (v->graph == &g && !defined.count(v)) return cat("node ", n.label(), " reads '", v->name, "' before it is defined");
      if (std::count(v->consumers.begin(), v->consumers.end(), &n) != std::count(n.inputs.begin(), n.inputs.end(), v))
        return cat("'", v->name, "' does not list node ", n.label(), " once per use among its consumers");
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value* v = n.outputs[i];
      if (!v) continue;
      if (v->producer != &n || v->producer_output != static_cast<int>(i))
        return cat("'", v->name, "' does not name node ", n.label(), " as its producer");
      if (v->initializer) return cat("'", v->name, "' is both an initializer and a node output");
      defined.insert(v);
    }
  }
  for (const Value& v : g.values()) {
    for (const Node* c : v.consumers)
      if (c->graph == &g && !nodes.count(c)) return cat("'", v.name, "' lists a removed node among its consumers");
    if (v.producer && !nodes.count(v.producer)) return cat("'", v.name, "' names a removed node as its producer");
  }
  for (const Value* v : g.outputs)
    if (v->graph == &g && !defined.count(v)) return cat("output '", v->name, "' is not defined");
  return "";
}

}  // namespace onyx::opt
