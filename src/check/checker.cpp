#include "check/checker.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/element_count.hpp"
#include "base/error.hpp"
#include "check/function_calls.hpp"
#include "format/external_data.hpp"
#include "base/dtype.hpp"
#include "ir/spec_table.hpp"

namespace onyx::check {
namespace {

using pb::Str;

// ---- text helpers -----------------------------------------------------------------------------

// Names come from an untrusted file: control bytes are shown as \xNN and very long names are cut,
// so that a hostile name can neither garble a message nor make it huge.
std::string escape(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  static constexpr size_t kMax = 200;
  std::string out;
  const size_t n = std::min(text.size(), kMax);
  out.reserve(n + 8);
  for (size_t k = 0; k < n; ++k) {
    const auto u = static_cast<unsigned char>(text[k]);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += text[k];
    }
  }
  if (text.size() > kMax) out += cat("...(", text.size(), " bytes)");
  return out;
}

std::string quote(std::string_view text) { return cat('\'', escape(text), '\''); }

// A place in the model (graph path, node, attribute, tensor), put into words only when a problem
// is reported there: building these texts for every node would dominate the checking time.
// Holds a reference to a callable returning std::string, so pass it down, never store it.
class Where {
 public:
  template <class F>
    requires(!std::is_same_v<F, Where> && std::is_invocable_r_v<std::string, const F&>)
  Where(const F& f)  // NOLINT(google-explicit-constructor): built from lambdas at call sites
      : obj_(&f), fn_([](const void* o) { return std::string((*static_cast<const F*>(o))()); }) {}
  std::string operator()() const { return fn_(obj_); }

 private:
  const void* obj_;
  std::string (*fn_)(const void*);
};

std::ostream& operator<<(std::ostream& os, const Where& w) { return os << w(); }

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t k = 0; k < dims.size(); ++k) out += cat(k ? ", " : "", dims[k]);
  return out + "]";
}

// "node 'conv1' (Conv)", "node #3 (com.microsoft.FusedConv)".
std::string node_label(const pb::Node& node, size_t index) {
  std::string who = node.name && !node.name->empty() ? cat("node ", quote(*node.name))
                                                     : cat("node #", index);
  const Str op = node.op_type.value_or("");
  const Str domain = node.domain.value_or("");
  std::string what = op.empty() ? std::string("no op_type") : escape(op);
  if (!domain.empty() && domain != "ai.onnx") what = cat(escape(domain), '.', what);
  return cat(who, " (", what, ')');
}

constexpr std::array<std::string_view, 15> kAttrTypeNames = {
    "UNDEFINED", "FLOAT",   "INT",    "STRING",        "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
    "STRINGS",   "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
};
// The AttributeProto field that holds a value of each type (indexed like kAttrTypeNames).
constexpr std::array<std::string_view, 15> kAttrFieldNames = {
    "",      "f",      "i",             "s",              "t",  "g",           "floats", "ints",
    "strings", "tensors", "graphs", "sparse_tensor", "sparse_tensors", "tp", "type_protos",
};

// Which value fields of an attribute are set, indexed by the attribute type they belong to.
std::array<bool, 15> attr_fields_set(const pb::Attribute& a) {
  std::array<bool, 15> set{};
  set[1] = a.f.has_value();
  set[2] = a.i.has_value();
  set[3] = a.s.has_value();
  set[4] = a.t.has_value();
  set[5] = static_cast<bool>(a.g);
  set[6] = !a.floats.empty();
  set[7] = !a.ints.empty();
  set[8] = !a.strings.empty();
  set[9] = !a.tensors.empty();
  set[10] = !a.graphs.empty();
  set[11] = a.sparse_tensor.has_value();
  set[12] = !a.sparse_tensors.empty();
  set[13] = a.tp.has_value();
  set[14] = !a.type_protos.empty();
  return set;
}

std::string_view storage_field_name(StorageField f) {
  switch (f) {
    case StorageField::FloatData: return "float_data";
    case StorageField::Int32Data: return "int32_data";
    case StorageField::StringData: return "string_data";
    case StorageField::Int64Data: return "int64_data";
    case StorageField::DoubleData: return "double_data";
    case StorageField::Uint64Data: return "uint64_data";
    case StorageField::None: break;
  }
  return "none";
}

// ---- scopes -----------------------------------------------------------------------------------

enum class DefKind { GraphInput, Initializer, SparseInitializer, NodeOutput, FunctionInput, Outer };

struct Definition {
  DefKind kind;
  size_t node = 0;  // for NodeOutput: index of the producing node in its graph
};

// The values of one graph (or function body) while it is checked, linked to the scopes of the
// graphs that contain it.
struct Scope {
  Scope* parent = nullptr;
  std::string path;  // "graph 'main' > node 'loop' (Loop) attribute 'body'"
  const std::vector<pb::Node>* nodes = nullptr;
  std::unordered_map<Str, Definition> defined;  // values defined so far
  std::unordered_map<Str, size_t> producer;     // first node of this graph that outputs each name
  size_t current = 0;                           // node being checked
  // Data dependencies between this graph's nodes: (consumer, producer), including the values that
  // subgraphs of a consumer read from this graph.
  std::vector<std::pair<size_t, size_t>> edges;
  bool out_of_order = false;        // some node reads a value produced by a later node
  bool allow_redefinition = false;  // names here may be defined again by inner graphs
};

struct Lookup {
  Scope* scope = nullptr;
  const Definition* def = nullptr;
};

Lookup find_defined(Scope* scope, Str name) {
  for (Scope* s = scope; s; s = s->parent) {
    const auto it = s->defined.find(name);
    if (it != s->defined.end()) return {s, &it->second};
  }
  return {};
}

// ---- operator sets ----------------------------------------------------------------------------

using OpsetMap = std::unordered_map<Str, int64_t>;  // canonical domain -> version

struct FunctionInfo {
  std::string label;                        // "function 'Name' (domain 'd')"
  std::unordered_set<Str> attribute_names;  // attribute + attribute_proto names
};

// What the nodes being checked may use: the operator sets in force and, inside a function body,
// the function (for attribute references).
struct Context {
  const OpsetMap* opsets = nullptr;
  std::string_view opsets_owner;  // "the model" or the function label, for messages
  const FunctionInfo* function = nullptr;
};

// ---- the checker ------------------------------------------------------------------------------

class Checker {
 public:
  Checker(const pb::ModelDocument& doc, const CheckOptions& opts)
      : doc_(doc), opts_(opts), label_(doc.label.empty() ? std::string("<model>") : doc.label) {}

  std::vector<std::string> run();

 private:
  template <class... Args>
  void problem(Args&&... args) {
    problems_.push_back(cat(label_, ": ", std::forward<Args>(args)...));
  }

  void check_header();
  void build_model_opsets();
  OpsetMap build_opsets(const std::vector<pb::OperatorSetId>& imports, std::string_view where);
  void index_functions();
  void check_function(const pb::Function& f);
  void check_training(const pb::TrainingInfo& info, size_t index);

  // Checks a graph whose enclosing scope is `parent` (null for the main graph).
  void check_graph(const pb::Graph& g, Scope* parent, std::string path, const Context& ctx);
  void check_nodes(Scope& scope, const Context& ctx);
  void check_node(Scope& scope, size_t index, const Context& ctx);
  void check_node_op(const pb::Node& node, const Where& where, const Context& ctx);
  void check_signature(const pb::Node& node, const spec::Signature& sig, int since, const Where& where);
  void check_node_input(Scope& scope, Str name, const Where& where);
  // `node_where` names the node in messages, `node_path` starts the path of its subgraphs.
  void check_attribute(Scope& scope, const pb::Attribute& a, size_t index, const Where& node_where,
                       const Where& node_path, const Context& ctx);
  void report_cycles(Scope& scope);

  void check_tensor(const pb::Tensor& t, const Where& where);
  void check_sparse_tensor(const pb::SparseTensor& t, const Where& where);
  std::string describe(const Lookup& found, const Scope& from) const;

  const pb::ModelDocument& doc_;
  const CheckOptions& opts_;
  std::string label_;
  std::vector<std::string> problems_;
  int64_t ir_version_ = std::numeric_limits<int64_t>::max();  // unknown: apply the newest rules
  OpsetMap model_opsets_;
  // Model-local functions: canonical domain -> name -> overloads.
  std::unordered_map<Str, std::unordered_map<Str, std::unordered_set<Str>>> functions_;
  std::optional<ExternalDataResolver> resolver_;
};

std::vector<std::string> Checker::run() {
  check_header();
  build_model_opsets();
  index_functions();
  for (std::string& cycle : function_call_cycles(doc_.model)) problem(cycle);
  const auto& model = doc_.model;
  if (!model.graph) {
    problem("the model has no graph");
  } else {
    const pb::Graph& g = *model.graph;
    std::string path = g.name && !g.name->empty() ? cat("graph ", quote(*g.name)) : "main graph";
    check_graph(g, nullptr, std::move(path), Context{&model_opsets_, "the model", nullptr});
  }
  for (const auto& f : model.functions) check_function(f);
  for (size_t k = 0; k < model.training_info.size(); ++k) check_training(model.training_info[k], k);
  return std::move(problems_);
}

void Checker::check_header() {
  const auto& ir = doc_.model.ir_version;
  if (!ir) {
    problem("the model has no ir_version");
  } else if (*ir < 1) {
    problem("ir_version ", *ir, " is invalid (IR versions start at 1)");
  } else {
    ir_version_ = *ir;
  }
}

OpsetMap Checker::build_opsets(const std::vector<pb::OperatorSetId>& imports, std::string_view where) {
  OpsetMap map;
  for (size_t k = 0; k < imports.size(); ++k) {
    const auto& imp = imports[k];
    const Str domain = spec::canonical_domain(imp.domain.value_or(""));
    if (!imp.version) {
      problem(where, ": opset_import #", k, " (domain ", quote(domain), ") has no version");
      continue;
    }
    const auto [it, inserted] = map.emplace(domain, *imp.version);
    if (!inserted) {
      problem(where, ": domain ", quote(domain), " is imported twice (versions ", it->second, " and ",
              *imp.version, ")");
    } else if (*imp.version < 1 && spec::is_known_domain(domain)) {
      problem(where, ": opset_import of domain ", quote(domain), " has version ", *imp.version,
              " (versions start at 1)");
    }
  }
  return map;
}

void Checker::build_model_opsets() {
  const auto& imports = doc_.model.opset_import;
  if (imports.empty()) {
    if (ir_version_ >= 3) {
      problem("the model has no opset_import (required since IR version 3)");
    } else {
      model_opsets_.emplace("ai.onnx", 1);  // models before IR version 3 used operator set 1
    }
    return;
  }
  model_opsets_ = build_opsets(imports, "the model");
}

std::string function_label(const pb::Function& f) {
  std::string out = cat("function ", quote(f.name.value_or("")), " (domain ", quote(f.domain.value_or("")));
  if (f.overload && !f.overload->empty()) out += cat(", overload ", quote(*f.overload));
  return out + ")";
}

void Checker::index_functions() {
  const auto& functions = doc_.model.functions;
  for (size_t k = 0; k < functions.size(); ++k) {
    const auto& f = functions[k];
    if (!f.name || f.name->empty()) continue;  // reported by check_function
    auto& overloads = functions_[spec::canonical_domain(f.domain.value_or(""))][*f.name];
    if (!overloads.insert(f.overload.value_or("")).second) {
      problem(function_label(f), " is defined more than once");
    }
  }
}

void Checker::check_function(const pb::Function& f) {
  FunctionInfo info{function_label(f), {}};
  const std::string& where = info.label;
  if (!f.name || f.name->empty()) problem("model function #", &f - doc_.model.functions.data(), " has no name");
  if (!f.domain) problem(where, ": the function has no domain");

  for (size_t k = 0; k < f.attribute.size(); ++k) {
    if (f.attribute[k].empty()) {
      problem(where, ": attribute #", k, " has an empty name");
    } else if (!info.attribute_names.insert(f.attribute[k]).second) {
      problem(where, ": attribute ", quote(f.attribute[k]), " is declared twice");
    }
  }
  const OpsetMap opsets = build_opsets(f.opset_import, where);
  Scope scope;
  scope.path = where;
  scope.nodes = &f.node;
  for (size_t k = 0; k < f.attribute_proto.size(); ++k) {
    const auto& a = f.attribute_proto[k];
    if (!a.name || a.name->empty()) {
      problem(where, ": attribute_proto #", k, " has no name");
      continue;
    }
    if (!info.attribute_names.insert(*a.name).second) {
      problem(where, ": attribute ", quote(*a.name), " is declared twice");
    }
    // A default value: checked like a node attribute outside any function.
    check_attribute(scope, a, k, [&] { return cat(where, ": default of attribute ", quote(*a.name)); },
                    [&] { return where; }, Context{&opsets, where, nullptr});
  }

  for (size_t k = 0; k < f.input.size(); ++k) {
    const Str name = f.input[k];
    if (name.empty()) {
      problem(where, ": input #", k, " has an empty name");
    } else if (!scope.defined.emplace(name, Definition{DefKind::FunctionInput}).second) {
      problem(where, ": input ", quote(name), " is listed twice");
    }
  }
  for (size_t i = 0; i < f.node.size(); ++i) {
    for (const Str out : f.node[i].output) {
      if (!out.empty()) scope.producer.emplace(out, i);
    }
  }
  const Context ctx{&opsets, where, &info};
  check_nodes(scope, ctx);

  std::unordered_set<Str> outputs;
  for (size_t k = 0; k < f.output.size(); ++k) {
    const Str name = f.output[k];
    if (name.empty()) {
      problem(where, ": output #", k, " has an empty name");
    } else if (!outputs.insert(name).second) {
      problem(where, ": output ", quote(name), " is listed twice");
    } else if (!scope.defined.count(name)) {
      problem(where, ": output ", quote(name), " is not computed by any node of the function nor is it an input");
    }
  }
}

void Checker::check_training(const pb::TrainingInfo& info, size_t index) {
  // The training graphs may read the main graph's inputs and initializers (onnx.proto,
  // TrainingInfoProto): they form the outer scope, and (leniently) may be redefined.
  Scope outer;
  outer.path = "main graph";
  outer.allow_redefinition = true;
  if (doc_.model.graph) {
    const auto& g = *doc_.model.graph;
    for (const auto& vi : g.input) {
      if (vi.name) outer.defined.emplace(*vi.name, Definition{DefKind::Outer});
    }
    for (const auto& t : g.initializer) {
      if (t.name) outer.defined.emplace(*t.name, Definition{DefKind::Outer});
    }
    for (const auto& sp : g.sparse_initializer) {
      if (sp.values && sp.values->name) outer.defined.emplace(*sp.values->name, Definition{DefKind::Outer});
    }
  }
  const Context ctx{&model_opsets_, "the model", nullptr};
  const std::string base = cat("training_info[", index, "]");
  if (info.initialization) check_graph(*info.initialization, &outer, base + " initialization graph", ctx);
  if (info.algorithm) check_graph(*info.algorithm, &outer, base + " algorithm graph", ctx);

  auto check_bindings = [&](const pb::Metadata& bindings, const std::optional<pb::Graph>& g,
                            std::string_view field, std::string_view graph_name) {
    std::unordered_set<Str> outputs, keys;
    if (g) {
      for (const auto& vi : g->output) {
        if (vi.name) outputs.insert(*vi.name);
      }
    }
    for (size_t k = 0; k < bindings.size(); ++k) {
      const Str key = bindings[k].key.value_or("");
      const Str value = bindings[k].value.value_or("");
      const std::string where = cat(base, " ", field, " #", k);
      if (key.empty() || value.empty()) {
        problem(where, ": the binding needs both a key (an initializer) and a value (a graph output)");
        continue;
      }
      if (!keys.insert(key).second) problem(where, ": initializer ", quote(key), " is bound twice");
      if (!outputs.count(value)) {
        problem(where, ": ", quote(value), " is not an output of the ", graph_name, " graph");
      }
    }
  };
  check_bindings(info.initialization_binding, info.initialization, "initialization_binding", "initialization");
  check_bindings(info.update_binding, info.algorithm, "update_binding", "algorithm");
}

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
      if (inserted && ir_version_ <= 3) {
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

// ---- tensors ----------------------------------------------------------------------------------

void Checker::check_tensor(const pb::Tensor& t, const Where& where) {
  if (!t.data_type) {
    problem(where, " has no data_type");
    return;
  }
  const int32_t type_value = *t.data_type;
  if (type_value == 0) {
    problem(where, " has data_type UNDEFINED");
    return;
  }
  if (!is_known_dtype(type_value)) {
    problem(where, " has unknown data_type ", type_value);
    return;
  }
  const auto dtype = static_cast<DataType>(type_value);

  bool dims_ok = true;
  for (size_t k = 0; k < t.dims.size(); ++k) {
    if (t.dims[k] < 0) {
      problem(where, " has negative dimension ", t.dims[k], " at axis ", k, " (dims ", dims_text(t.dims), ")");
      dims_ok = false;
    }
  }
  if (!dims_ok) return;
  const auto count = checked_element_count(t.dims);
  if (!count) {
    problem(where, " has dims ", dims_text(t.dims), " whose element count overflows 64 bits");
    return;
  }
  const uint64_t n = *count;
  const auto shape = [&] {
    return cat(n, " element", n == 1 ? "" : "s", " of ", dtype, " (dims ", dims_text(t.dims), ")");
  };

  // The inline data fields that hold something.
  struct Field {
    std::string_view name;
    size_t size;
    StorageField kind;
  };
  std::vector<Field> typed;
  if (!t.float_data.empty()) typed.push_back({"float_data", t.float_data.size(), StorageField::FloatData});
  if (!t.int32_data.empty()) typed.push_back({"int32_data", t.int32_data.size(), StorageField::Int32Data});
  if (!t.string_data.empty()) typed.push_back({"string_data", t.string_data.size(), StorageField::StringData});
  if (!t.int64_data.empty()) typed.push_back({"int64_data", t.int64_data.size(), StorageField::Int64Data});
  if (!t.double_data.empty()) typed.push_back({"double_data", t.double_data.size(), StorageField::DoubleData});
  if (!t.uint64_data.empty()) typed.push_back({"uint64_data", t.uint64_data.size(), StorageField::Uint64Data});
  const bool has_raw = t.raw_data && !t.raw_data->empty();

  if (t.data_location && *t.data_location != 0 && *t.data_location != 1) {
    problem(where, " has unknown data_location ", *t.data_location, " (0 DEFAULT or 1 EXTERNAL)");
    return;
  }
  if (t.data_location && *t.data_location == 1) {
    if (has_raw || !typed.empty()) {
      problem(where, " is stored externally but also holds data in '", has_raw ? "raw_data" : typed[0].name, "'");
    }
    std::vector<std::pair<std::string_view, std::string_view>> entries;
    entries.reserve(t.external_data.size());
    for (const auto& e : t.external_data) entries.emplace_back(e.key.value_or(""), e.value.value_or(""));
    const Str name = t.name.value_or("");
    try {
      const ExternalDataRef ref = parse_external_data(entries, name);
      if (opts_.check_external_data) {
        const auto bytes = raw_byte_size(dtype, n);
        if (!bytes) {
          problem(where, ": ", dtype, " tensors cannot be stored externally (they have no raw byte form)");
          return;
        }
        if (!resolver_) resolver_.emplace(doc_.dir);
        resolver_->resolve(ref, *bytes, name);
      }
    } catch (const Error& e) {
      problem(where, ": ", e.what());
    }
    return;
  }

  if (typed.size() + (has_raw ? 1 : 0) > 1) {
    std::string list = has_raw ? "'raw_data'" : "";
    for (const auto& f : typed) list += cat(list.empty() ? "" : " and ", "'", f.name, "'");
    problem(where, " holds data in more than one field: ", list);
    return;
  }

  if (typed.empty()) {
    // raw_data (possibly present but empty) or nothing at all.
    if (dtype == DataType::String) {
      if (has_raw) {
        problem(where, ": string tensors keep their values in 'string_data', not 'raw_data'");
      } else if (n != 0) {
        problem(where, " has no data for its ", shape());
      }
      return;
    }
    if (!t.raw_data) {
      if (n != 0) problem(where, " has no data for its ", shape());
      return;
    }
    const auto expected = raw_byte_size(dtype, n);
    if (!expected) {
      problem(where, ": the raw size of its ", shape(), " overflows 64 bits");
    } else if (t.raw_data->size() != *expected) {
      problem(where, " has ", t.raw_data->size(), " bytes of raw_data but its ", shape(), " take ", *expected,
              " bytes");
    }
    return;
  }

  const Field& f = typed[0];
  const StorageField expected_field = storage_field(dtype);
  if (f.kind != expected_field) {
    if (dtype == DataType::String) {
      problem(where, " holds its values in '", f.name, "' but string tensors use 'string_data'");
    } else {
      problem(where, " holds its values in '", f.name, "' but ", dtype, " tensors use '",
              storage_field_name(expected_field), "' (or 'raw_data')");
    }
    return;
  }
  uint64_t expected = n;
  std::string_view why;
  if (dtype == DataType::Complex64 || dtype == DataType::Complex128) {
    expected = 2 * n;  // n <= 2^63 - 1, so this fits
    why = " (two per complex element)";
  } else if (f.kind == StorageField::Int32Data && dtype_bits(dtype) < 8) {
    const auto per_value = static_cast<uint64_t>(8 / dtype_bits(dtype));
    expected = n / per_value + (n % per_value != 0 ? 1 : 0);
    why = per_value == 2 ? " (two packed 4-bit elements per value)" : " (four packed 2-bit elements per value)";
  }
  if (f.size != expected) {
    problem(where, " has ", f.size, " values in '", f.name, "' but its ", shape(), " need ", expected, why);
  }
}

void Checker::check_sparse_tensor(const pb::SparseTensor& t, const Where& where) {
  for (size_t k = 0; k < t.dims.size(); ++k) {
    if (t.dims[k] < 0) {
      problem(where, " has negative dimension ", t.dims[k], " at axis ", k, " (dims ", dims_text(t.dims), ")");
    }
  }
  if (t.dims.empty()) problem(where, " has no dims (the shape of the dense tensor)");
  if (!t.values) {
    problem(where, " has no values tensor");
    return;
  }
  check_tensor(*t.values, [&] { return cat(where, ": values"); });
  if (t.values->dims.size() != 1) {
    problem(where, ": values must have rank 1 ([NNZ]) but has dims ", dims_text(t.values->dims));
    return;
  }
  const int64_t nnz = t.values->dims[0];
  if (!t.indices) {
    if (nnz != 0) problem(where, " has ", nnz, " values but no indices tensor");
    return;
  }
  const auto& idx = *t.indices;
  check_tensor(idx, [&] { return cat(where, ": indices"); });
  if (idx.data_type && *idx.data_type != static_cast<int32_t>(DataType::Int64)) {
    problem(where, ": indices must be int64 but are ", static_cast<DataType>(*idx.data_type));
  }
  const auto rank = static_cast<int64_t>(t.dims.size());
  const bool linear = idx.dims.size() == 1 && idx.dims[0] == nnz;
  const bool tuples = idx.dims.size() == 2 && idx.dims[0] == nnz && idx.dims[1] == rank;
  if (!linear && !tuples) {
    problem(where, ": indices have dims ", dims_text(idx.dims), " but must be [", nnz, "] or [", nnz, ", ", rank,
            "] for ", nnz, " values of a rank-", rank, " tensor");
  }
}

}  // namespace

std::vector<std::string> check_model(const pb::ModelDocument& doc, const CheckOptions& opts) {
  return Checker(doc, opts).run();
}

void check_model_or_throw(const pb::ModelDocument& doc, const CheckOptions& opts) {
  const auto problems = check_model(doc, opts);
  if (problems.empty()) return;
  if (problems.size() == 1) throw Error(problems.front());
  fail(problems.front(), " (and ", problems.size() - 1, " more)");
}

}  // namespace onyx::check
