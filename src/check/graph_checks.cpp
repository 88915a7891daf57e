// The checks of graphs (scopes, order, cycles), nodes (ops, signatures, inputs) and attributes.
#include "check/checker_parts.hpp"

namespace onyx::check {
namespace detail {

void Checker::check_graph(const pb::Graph& g, Scope* parent, std::string path, const Context& ctx) {
  Scope scope;
  scope.parent = parent;
  scope.path = std::move(path);
  scope.nodes = &g.node;
  const std::string& where = scope.path;

  for (size_t k = 0; k < g.input.size(); ++k) {
    const Str name = g.input[k].name.value_or("");
    if (name.empty()) {
      problem(where, ": graph input #", k, " has no name");
    } else if (!scope.defined.emplace(name, Definition{DefKind::GraphInput}).second) {
      problem(where, ": graph input ", quote(name), " is listed twice");
    }
  }

  std::unordered_set<Str> initializers;
  initializers.reserve(g.initializer.size());
  scope.defined.reserve(g.input.size() + g.initializer.size());
  for (size_t k = 0; k < g.initializer.size(); ++k) {
    const auto& t = g.initializer[k];
    const Str name = t.name.value_or("");
    if (name.empty()) {
      problem(where, ": initializer #", k, " has no name");
      check_tensor(t, [&] { return cat(where, ": initializer #", k); });
      continue;
    }
    const auto what = [&] { return cat(where, ": initializer ", quote(name)); };
    if (!initializers.insert(name).second) {
      problem(what(), " is defined twice");
    } else {
      const auto [it, inserted] = scope.defined.emplace(name, Definition{DefKind::Initializer});
      if (inserted && ir_version_ <= 3 && !opts_.initializers_need_not_be_inputs) {
        problem(what(), " is not a graph input (IR version ", ir_version_,
                " requires every initializer to be listed as a graph input too)");
      }
    }
    check_tensor(t, what);
  }

  std::unordered_set<Str> sparse_names;
  for (size_t k = 0; k < g.sparse_initializer.size(); ++k) {
    const auto& sp = g.sparse_initializer[k];
    const Str name = sp.values ? sp.values->name.value_or("") : Str();
    if (name.empty()) {
      problem(where, ": sparse initializer #", k, " has no name (the name of its values tensor)");
      check_sparse_tensor(sp, [&] { return cat(where, ": sparse initializer #", k); });
      continue;
    }
    const auto what = [&] { return cat(where, ": sparse initializer ", quote(name)); };
    if (!sparse_names.insert(name).second) {
      problem(what(), " is defined twice");
    } else if (initializers.count(name)) {
      problem(what(), " has the name of a dense initializer too");
    } else {
      scope.defined.emplace(name, Definition{DefKind::SparseInitializer});
    }
    check_sparse_tensor(sp, what);
  }

  size_t outputs = 0;
  for (const auto& n : g.node) outputs += n.output.size();
  scope.producer.reserve(outputs);
  scope.defined.reserve(scope.defined.size() + outputs);
  for (size_t i = 0; i < g.node.size(); ++i) {
    for (const Str out : g.node[i].output) {
      if (!out.empty()) scope.producer.emplace(out, i);
    }
  }
  check_nodes(scope, ctx);

  // The main graph's inputs have types (IR.md: a graph input MUST have a type), and a tensor type names its element
  // type (onnx.proto: elem_type must be present and not UNDEFINED), as ONNX Runtime requires; an input that names
  // an initializer takes its type from it. Outputs, and subgraphs, may leave their types to inference (tools write
  // an output's element type as 0 for that).
  if (!parent) {
    auto check_declared = [&](const pb::ValueInfo& vi, const char* kind, size_t k) {
      const std::string what = vi.name && !vi.name->empty() ? cat(kind, " ", quote(*vi.name)) : cat(kind, " #", k);
      if (!vi.type) {
        if (!initializers.count(vi.name.value_or("")))
          problem(where, ": ", what, " has no type (a graph input must declare its type)");
        return;
      }
      for (const auto* tt : {vi.type->tensor_type ? &*vi.type->tensor_type : nullptr,
                             vi.type->sparse_tensor_type ? &*vi.type->sparse_tensor_type : nullptr})
        if (tt && tt->elem_type.value_or(0) == 0)
          problem(where, ": ", what, " is a tensor of ", tt->elem_type ? "element type UNDEFINED (0)" : "no element type",
                  " (the element type must be given)");
    };
    for (size_t k = 0; k < g.input.size(); ++k) check_declared(g.input[k], "graph input", k);
  }
  for (size_t k = 0; k < g.output.size(); ++k) {
    const Str name = g.output[k].name.value_or("");
    if (name.empty()) {
      problem(where, ": graph output #", k, " has no name");
    } else if (!find_defined(&scope, name).def) {
      problem(where, ": graph output ", quote(name),
              " is not defined: no node output, graph input or initializer has this name",
              parent ? " (nor does any value of the enclosing graphs)" : "");
    }
  }
}

void Checker::check_nodes(Scope& scope, const Context& ctx) {
  for (size_t i = 0; i < scope.nodes->size(); ++i) check_node(scope, i, ctx);
  if (scope.out_of_order) report_cycles(scope);
}

void Checker::check_node(Scope& scope, size_t index, const Context& ctx) {
  const pb::Node& node = (*scope.nodes)[index];
  scope.current = index;
  const auto where_text = [&] { return cat(scope.path, ": ", node_label(node, index)); };
  const Where where(where_text);

  check_node_op(node, where, ctx);
  if (node.output.empty()) problem(where, " has no outputs (a node has one or more)");

  for (const Str input : node.input) {
    if (!input.empty()) check_node_input(scope, input, where);
  }

  const auto& attrs = node.attribute;
  const auto path_text = [&] { return cat(scope.path, " > ", node_label(node, index)); };
  std::unordered_set<Str> attr_names;  // only for nodes with many attributes
  for (size_t k = 0; k < attrs.size(); ++k) {
    const auto& a = attrs[k];
    if (a.name && !a.name->empty()) {
      bool repeated = false;
      if (attrs.size() <= 16) {
        for (size_t j = 0; j < k && !repeated; ++j) repeated = attrs[j].name == a.name;
      } else {
        repeated = !attr_names.insert(*a.name).second;
      }
      if (repeated) problem(where, ": attribute ", quote(*a.name), " is given twice");
    }
    check_attribute(scope, a, k, where, path_text, ctx);
  }

  for (const Str out : node.output) {
    if (out.empty()) continue;  // an omitted optional output
    const Lookup found = find_defined(&scope, out);
    if (found.def && !found.scope->allow_redefinition) {
      problem(where, ": output ", quote(out), " is already defined by ", describe(found, scope),
              " (values must be assigned exactly once)");
      continue;
    }
    scope.defined.emplace(out, Definition{DefKind::NodeOutput, index});
  }
}

// The node's input and output counts and attribute names against its op version's schema (ONNX Runtime refuses
// such nodes too). Trailing empty names (omitted optional values) do not count against a maximum.
void Checker::check_signature(const pb::Node& node, const spec::Signature& sig, int since, const Where& where) {
  const auto count = [](const auto& names, bool trailing) {
    size_t n = names.size();
    while (!trailing && n > 0 && names[n - 1].empty()) --n;
    return static_cast<int64_t>(n);
  };
  const auto range = [](int lo, int hi) { return hi < 0 ? cat("at least ", lo) : lo == hi ? cat(lo) : cat(lo, " to ", hi); };
  const Str op = node.op_type.value_or("");
  const int64_t inputs = count(node.input, true), outputs = count(node.output, true);
  if (inputs < sig.min_inputs || (sig.max_inputs >= 0 && count(node.input, false) > sig.max_inputs))
    problem(where, ": ", inputs, " inputs, but ", op, "-", since, " takes ", range(sig.min_inputs, sig.max_inputs));
  if (outputs < sig.min_outputs || (sig.max_outputs >= 0 && count(node.output, false) > sig.max_outputs))
    problem(where, ": ", outputs, " outputs, but ", op, "-", since, " gives ", range(sig.min_outputs, sig.max_outputs));
  for (const auto& a : node.attribute) {
    const Str name = a.name.value_or("");
    if (name.empty() || std::find(sig.attributes.begin(), sig.attributes.end(), name) != sig.attributes.end()) continue;
    std::string known;
    for (const auto& s : sig.attributes) known += (known.empty() ? "" : ", ") + s;
    problem(where, ": attribute ", quote(name), " is not one of ", op, "-", since, "'s (",
            known.empty() ? std::string("it has none") : known, ")");
  }
}

void Checker::check_node_op(const pb::Node& node, const Where& where, const Context& ctx) {
  const Str op = node.op_type.value_or("");
  if (op.empty()) {
    problem(where, ": the node has no op_type");
    return;
  }
  const Str domain = spec::canonical_domain(node.domain.value_or(""));
  const auto imported = ctx.opsets->find(domain);
  if (imported == ctx.opsets->end()) {
    problem(where, ": domain ", quote(domain), " is not imported (no opset_import entry in ", ctx.opsets_owner, ")");
    return;
  }
  const int64_t version = imported->second;

  // A model-local function of this domain and name.
  const Str overload = node.overload.value_or("");
  bool is_function = false;
  if (const auto d = functions_.find(domain); d != functions_.end()) {
    if (const auto f = d->second.find(op); f != d->second.end()) {
      is_function = f->second.count(overload) > 0;
      if (!is_function && !overload.empty()) {
        problem(where, ": the model has no overload ", quote(overload), " of function ", quote(op),
                " in domain ", quote(domain));
        return;
      }
    }
  }
  if (is_function || !spec::is_known_domain(domain)) return;  // other domains are not known here

  if (const auto since = spec::resolve_since_version(domain, op, version)) {
    if (const spec::Signature* sig = spec::signature(domain, op, *since)) check_signature(node, *sig, *since, where);
    return;
  }
  const auto versions = spec::since_versions(domain, op);
  if (versions.empty()) {
    problem(where, ": operator ", quote(op), " does not exist in domain ", quote(domain),
            " (and the model defines no function of that name)");
    return;
  }
  std::string list;
  for (size_t k = 0; k < versions.size(); ++k) list += cat(k ? ", " : "", versions[k]);
  problem(where, ": operator ", quote(op), " does not exist in opset ", version, " of domain ", quote(domain),
          " (its versions begin at opsets ", list, ")");
}

std::string Checker::describe(const Lookup& found, const Scope& from) const {
  std::string what;
  switch (found.def->kind) {
    case DefKind::GraphInput: what = "a graph input"; break;
    case DefKind::Initializer: what = "an initializer"; break;
    case DefKind::SparseInitializer: what = "a sparse initializer"; break;
    case DefKind::FunctionInput: what = "a function input"; break;
    case DefKind::Outer: what = "a value"; break;
    case DefKind::NodeOutput:
      what = node_label((*found.scope->nodes)[found.def->node], found.def->node);
      if (found.scope == &from && found.def->node == from.current) what = "this node itself";
      break;
  }
  if (found.scope != &from) what += cat(" of the enclosing ", found.scope->path);
  return what;
}

void Checker::check_node_input(Scope& scope, Str name, const Where& where) {
  const Lookup found = find_defined(&scope, name);
  if (found.def) {
    if (found.def->kind == DefKind::NodeOutput) {
      found.scope->edges.emplace_back(found.scope->current, found.def->node);
    }
    return;
  }
  // Not defined yet: produced by a later node of this graph or of an enclosing one?
  for (Scope* s = &scope; s; s = s->parent) {
    const auto it = s->producer.find(name);
    if (it == s->producer.end()) continue;
    const size_t producer = it->second;
    s->edges.emplace_back(s->current, producer);
    s->out_of_order = true;
    std::string by;
    if (s == &scope) {
      by = producer == s->current ? std::string("this node itself")
                                  : cat(node_label((*s->nodes)[producer], producer), ", a later node");
    } else {
      by = cat(node_label((*s->nodes)[producer], producer),
               producer == s->current ? ", the node that holds this subgraph," : ", a later node", " of the enclosing ",
               s->path);
    }
    problem(where, ": input ", quote(name), " is produced by ", by,
            " (nodes must be in topological order: every input defined before its use)");
    return;
  }
  problem(where, ": input ", quote(name),
          " is not defined: no graph input, initializer or node output has this name",
          scope.parent ? " (nor does any value of the enclosing graphs)" : "");
}

void Checker::check_attribute(Scope& scope, const pb::Attribute& a, size_t index, const Where& node_where,
                              const Where& node_path, const Context& ctx) {
  const bool named = a.name && !a.name->empty();
  const auto where_text = [&] {
    return named ? cat(node_where, ": attribute ", quote(*a.name)) : cat(node_where, ": attribute #", index);
  };
  const Where where(where_text);
  if (!named) problem(where, " has no name");

  const auto set = attr_fields_set(a);
  const int n_set = static_cast<int>(std::count(set.begin(), set.end(), true));
  auto set_fields = [&](int except) {
    std::string list;
    for (int k = 1; k < 15; ++k) {
      if (set[static_cast<size_t>(k)] && k != except) {
        list += cat(list.empty() ? "" : ", ", "'", kAttrFieldNames[static_cast<size_t>(k)], "'");
      }
    }
    return list;
  };

  if (a.ref_attr_name) {
    if (!ctx.function) {
      problem(where, " refers to function attribute ", quote(*a.ref_attr_name),
              " (ref_attr_name), which is only allowed inside a function body");
    } else if (a.ref_attr_name->empty()) {
      problem(where, " has an empty ref_attr_name");
    } else if (!ctx.function->attribute_names.count(*a.ref_attr_name)) {
      problem(where, " refers to attribute ", quote(*a.ref_attr_name), ", which ", ctx.function->label,
              " does not declare");
    }
    if (n_set > 0) {
      problem(where, " refers to a function attribute (ref_attr_name) but also holds a value in ", set_fields(0));
    }
  }

  if (a.type) {
    const int32_t type = *a.type;
    if (type <= 0 || type >= 15) {
      problem(where, " has ", type == 0 ? std::string("type UNDEFINED") : cat("unknown type ", type));
    } else {
      const auto t = static_cast<size_t>(type);
      if (n_set - (set[t] ? 1 : 0) > 0) {
        problem(where, " has type ", kAttrTypeNames[t], " but holds a value in ", set_fields(type),
                " (only '", kAttrFieldNames[t], "' may be set)");
      }
      // A repeated field may be legitimately empty; a singular one must be present.
      const bool singular = type <= 5 || type == 11 || type == 13;
      if (singular && !set[t] && !a.ref_attr_name) {
        problem(where, " has type ", kAttrTypeNames[t], " but its field '", kAttrFieldNames[t], "' is not set");
      }
    }
  } else if (ir_version_ >= 2) {
    problem(where, " has no type (required since IR version 2)");
  } else if (n_set != 1 && !a.ref_attr_name) {
    problem(where, " has no type and ", n_set == 0 ? std::string("no value") : cat("values in ", set_fields(0)),
            " (exactly one value field must be set)");
  }

  if (a.t) check_tensor(*a.t, [&] { return cat(where, ": tensor"); });
  if (a.sparse_tensor) check_sparse_tensor(*a.sparse_tensor, [&] { return cat(where, ": sparse tensor"); });
  for (size_t k = 0; k < a.tensors.size(); ++k) {
    check_tensor(a.tensors[k], [&] { return cat(where, ": tensor #", k); });
  }
  for (size_t k = 0; k < a.sparse_tensors.size(); ++k) {
    check_sparse_tensor(a.sparse_tensors[k], [&] { return cat(where, ": sparse tensor #", k); });
  }
  if (a.g || !a.graphs.empty()) {
    const std::string attr_path = named ? cat(node_path, " attribute ", quote(*a.name))
                                        : cat(node_path, " attribute #", index);
    if (a.g) check_graph(*a.g, &scope, attr_path, ctx);
    for (size_t k = 0; k < a.graphs.size(); ++k) {
      check_graph(a.graphs[k], &scope, cat(attr_path, "[", k, "]"), ctx);
    }
  }
}

// Finds the strongly connected components of the dependency graph (Tarjan's algorithm, without
// recursion) and reports one cycle through each component that has one.
void Checker::report_cycles(Scope& scope) {
  const size_t n = scope.nodes->size();
  // Data flows from producer to consumer.
  std::vector<std::vector<size_t>> next(n);
  for (const auto& [consumer, producer] : scope.edges) next[producer].push_back(consumer);

  constexpr size_t kUnvisited = std::numeric_limits<size_t>::max();
  std::vector<size_t> order(n, kUnvisited), low(n, 0), component(n, kUnvisited);
  std::vector<bool> on_stack(n, false);
  std::vector<size_t> stack;
  std::vector<std::pair<size_t, size_t>> work;  // (node, next edge to follow)
  size_t counter = 0, components = 0;
  std::vector<std::vector<size_t>> cyclic;  // members of the components that hold a cycle

  for (size_t root = 0; root < n; ++root) {
    if (order[root] != kUnvisited) continue;
    work.emplace_back(root, 0);
    while (!work.empty()) {
      auto& [v, e] = work.back();
      if (e == 0 && order[v] == kUnvisited) {
        order[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (e < next[v].size()) {
        const size_t w = next[v][e++];
        if (order[w] == kUnvisited) {
          work.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], order[w]);
        }
        continue;
      }
      const size_t done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
      if (low[done] != order[done]) continue;
      std::vector<size_t> members;
      while (true) {
        const size_t m = stack.back();
        stack.pop_back();
        on_stack[m] = false;
        component[m] = components;
        members.push_back(m);
        if (m == done) break;
      }
      const bool self_loop = std::find(next[done].begin(), next[done].end(), done) != next[done].end();
      if (members.size() > 1 || self_loop) cyclic.push_back(std::move(members));
      ++components;
    }
  }

  std::sort(cyclic.begin(), cyclic.end(),
            [](const auto& x, const auto& y) { return *std::min_element(x.begin(), x.end()) <
                                                      *std::min_element(y.begin(), y.end()); });
  for (const auto& members : cyclic) {
    // Shortest way around from the component's first node back to it (breadth-first search).
    const size_t start = *std::min_element(members.begin(), members.end());
    const size_t comp = component[start];
    std::unordered_map<size_t, size_t> came_from;
    std::vector<size_t> frontier{start};
    size_t last = kUnvisited;
    for (size_t head = 0; head < frontier.size() && last == kUnvisited; ++head) {
      const size_t v = frontier[head];
      for (const size_t w : next[v]) {
        if (component[w] != comp) continue;
        if (w == start) {
          last = v;
          break;
        }
        if (came_from.emplace(w, v).second) frontier.push_back(w);
      }
    }
    if (last == kUnvisited) continue;  // cannot happen in a component with a cycle
    std::vector<size_t> cycle;
    for (size_t v = last; v != start; v = came_from.at(v)) cycle.push_back(v);
    cycle.push_back(start);
    std::reverse(cycle.begin(), cycle.end());
    constexpr size_t kShown = 20;
    std::string text;
    for (size_t k = 0; k < cycle.size() && k < kShown; ++k) {
      text += cat(node_label((*scope.nodes)[cycle[k]], cycle[k]), " -> ");
    }
    if (cycle.size() > kShown) text += cat("... (", cycle.size() - kShown, " more) -> ");
    text += node_label((*scope.nodes)[start], start);
    problem(scope.path, ": the nodes form a cycle: ", text);
  }
}

}  // namespace detail

}  // namespace onyx::check
