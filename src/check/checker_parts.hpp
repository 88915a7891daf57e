// The checker's parts (check/checker.hpp runs them): what the model-level checks (checker.cpp), the graph, node
// and attribute checks (graph_checks.cpp) and the tensor checks (tensor_checks.cpp) share. Internal to check/.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "check/checker.hpp"
#include "format/external_data.hpp"
#include "format/onnx_proto.hpp"
#include "format/tensor_data.hpp"
#include "ir/spec_table.hpp"

namespace onyx::check::detail {

using pb::Str;

// ---- text helpers -----------------------------------------------------------------------------

// Names come from an untrusted file: control bytes are shown as \xNN and very long names are cut,
// so that a hostile name can neither garble a message nor make it huge.
inline std::string escape(std::string_view text) {
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

inline std::string quote(std::string_view text) { return cat('\'', escape(text), '\''); }

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

inline std::ostream& operator<<(std::ostream& os, const Where& w) { return os << w(); }

inline std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t k = 0; k < dims.size(); ++k) out += cat(k ? ", " : "", dims[k]);
  return out + "]";
}

// "node 'conv1' (Conv)", "node #3 (com.microsoft.FusedConv)".
inline std::string node_label(const pb::Node& node, size_t index) {
  std::string who = node.name && !node.name->empty() ? cat("node ", quote(*node.name))
                                                     : cat("node #", index);
  const Str op = node.op_type.value_or("");
  const Str domain = node.domain.value_or("");
  std::string what = op.empty() ? std::string("no op_type") : escape(op);
  if (!domain.empty() && domain != "ai.onnx") what = cat(escape(domain), '.', what);
  return cat(who, " (", what, ')');
}

inline constexpr std::array<std::string_view, 15> kAttrTypeNames = {
    "UNDEFINED", "FLOAT",   "INT",    "STRING",        "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
    "STRINGS",   "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
};
// The AttributeProto field that holds a value of each type (indexed like kAttrTypeNames).
inline constexpr std::array<std::string_view, 15> kAttrFieldNames = {
    "",      "f",      "i",             "s",              "t",  "g",           "floats", "ints",
    "strings", "tensors", "graphs", "sparse_tensor", "sparse_tensors", "tp", "type_protos",
};

// Which value fields of an attribute are set, indexed by the attribute type they belong to.
inline std::array<bool, 15> attr_fields_set(const pb::Attribute& a) {
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

inline Lookup find_defined(Scope* scope, Str name) {
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

}  // namespace onyx::check::detail
