// The in-memory model that every layer after loading works on: values connected to the nodes that produce and
// consume them, graphs nested in attributes (If/Loop/Scan bodies) that see their outer scope, model-local
// functions and the opset imports. Built from a checked ModelDocument.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/tensor.hpp"
#include "ir/type.hpp"

namespace onyx {
namespace pb {
struct ModelDocument;
}

class Graph;
class Node;

struct Value {
  std::string name;
  size_t id = 0;                 // index among the values of its graph (dense, for executor frames)
  Type type;                     // from the graph's input/output/value_info, else Unknown (inference fills it)
  Graph* graph = nullptr;        // the graph whose scope defines it
  Node* producer = nullptr;      // null for graph inputs and initializers
  int producer_output = -1;
  std::vector<Node*> consumers;  // nodes of this graph or of nested graphs reading it (a node once per use)
  const Tensor* initializer = nullptr;
  bool is_graph_input = false;
  bool is_graph_output = false;
};

enum class AttributeType : int32_t {
  Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Graph = 5, Floats = 6, Ints = 7, Strings = 8,
  Tensors = 9, Graphs = 10, SparseTensor = 11, SparseTensors = 12, TypeProto = 13, TypeProtos = 14,
};
std::string_view attribute_type_name(AttributeType t);

struct Attribute {
  std::string name;
  AttributeType type = AttributeType::Undefined;
  std::string ref_attr_name;  // inside functions: takes the caller's attribute of that name
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::optional<Tensor> t;
  std::unique_ptr<Graph> g;
  std::optional<SparseTensor> sparse_tensor;
  std::optional<Type> tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<SparseTensor> sparse_tensors;
  std::vector<Type> type_protos;
};

// Attributes built by code (the optimizer's fused nodes, expansions of ops defined by other ops). Attribute is
// move-only (it may own a graph): copy_attribute copies every value but a graph, which such nodes never take.
Attribute copy_attribute(const Attribute& a);
Attribute make_attr_int(const std::string& name, int64_t v);
Attribute make_attr_float(const std::string& name, float v);
Attribute make_attr_ints(const std::string& name, std::vector<int64_t> v);
Attribute make_attr_floats(const std::string& name, std::vector<float> v);
Attribute make_attr_string(const std::string& name, std::string v);

class Node {
 public:
  std::string name, op_type, domain, overload, doc_string;
  std::vector<Value*> inputs;   // null where an optional input is omitted ("")
  std::vector<Value*> outputs;  // null where an optional output is omitted ("")
  std::vector<Attribute> attributes;
  Graph* graph = nullptr;
  size_t index = 0;  // position in the graph's topological order

  const Attribute* attribute(std::string_view name) const;
  // "name (OpType)" or "#index (OpType)" for messages.
  std::string label() const;
};

class Graph {
 public:
  std::string name, doc_string;
  Graph* parent = nullptr;     // enclosing graph for subgraphs
  Node* owner = nullptr;       // node whose attribute holds this subgraph
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<Value*> inputs, outputs;
  std::map<std::string, Tensor> initializers;
  std::map<std::string, SparseTensor> sparse_initializers;

  // A value visible here: defined in this graph or an enclosing one.
  Value* find(std::string_view name) const;
  Value* find_local(std::string_view name) const;
  Value& add_value(const std::string& name);
  const std::deque<Value>& values() const { return values_; }
  // "main graph" or "graph 'body' of node 'loop' (Loop)".
  std::string label() const;

 private:
  std::deque<Value> values_;  // stable addresses
  std::unordered_map<std::string, Value*> by_name_;
};

struct Function {
  std::string domain, name, overload, doc_string;
  std::vector<std::string> inputs, outputs, attribute_names;
  std::vector<Attribute> attribute_defaults;
  std::map<std::string, int64_t> opset_imports;
  std::unique_ptr<Graph> body;  // inputs are the function's inputs; types are unknown until called
};

class Model {
 public:
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  // "" is the default domain (ai.onnx)
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::unique_ptr<Graph> graph;
  std::vector<Function> functions;
  std::string label;  // file name, for messages
  std::vector<std::string> external_files;  // external data files referenced (as written in the model)

  // Opset of a domain ("" and "ai.onnx" are the same); nullopt if not imported.
  std::optional<int64_t> opset(std::string_view domain) const;
  const Function* function(std::string_view domain, std::string_view name, std::string_view overload = {}) const;

  std::shared_ptr<const void> keep;  // the mapped file (and external data mappings) the tensors view
};

}  // namespace onyx
