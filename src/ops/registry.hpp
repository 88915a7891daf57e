// The operator registry: every op family registers, for each (domain, op_type, since_version) it implements, the
// element types it accepts, a type/shape inference function and a kernel factory. A node binds to the entry whose
// since_version is the one the spec table gives for the model's opset — exactly, never a silent downgrade.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/datum.hpp"
#include "ir/model.hpp"

namespace onyx::ops {

// Attributes of a node as seen by its op: inside a function body, attributes given by reference (ref_attr_name)
// resolve to the caller's attributes or the function's defaults.
class AttributeView {
 public:
  AttributeView(const Node& node, const std::vector<const Attribute*>* caller_scope = nullptr);
  const Attribute* find(std::string_view name) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }
  int64_t get_int(std::string_view name, std::optional<int64_t> dflt = std::nullopt) const;
  float get_float(std::string_view name, std::optional<float> dflt = std::nullopt) const;
  std::string get_string(std::string_view name, std::optional<std::string> dflt = std::nullopt) const;
  std::vector<int64_t> get_ints(std::string_view name, std::optional<std::vector<int64_t>> dflt = std::nullopt) const;
  std::vector<float> get_floats(std::string_view name, std::optional<std::vector<float>> dflt = std::nullopt) const;
  std::vector<std::string> get_strings(std::string_view name, std::optional<std::vector<std::string>> dflt = std::nullopt) const;
  const Tensor* get_tensor(std::string_view name) const;  // null if absent
  const Graph* get_graph(std::string_view name) const;    // null if absent
  const Node& node() const { return node_; }
  const std::vector<const Attribute*>* scope() const { return scope_; }

 private:
  const Attribute& require(std::string_view name, AttributeType type) const;
  const Node& node_;
  const std::vector<const Attribute*>* scope_;
};

// What inference knows about a node's inputs, and where it writes the output types.
struct InferContext {
  const Node& node;
  int64_t opset;
  AttributeView attrs;
  std::vector<const Type*> input_types;     // null for an omitted optional input
  std::vector<const Tensor*> input_values;  // the value when it is a constant (initializer, Constant, folded)
  std::vector<Type> output_types;           // one per node output, filled by the op (Unknown if it can't tell)
  std::vector<std::optional<Tensor>> output_values;  // set by ops that know an output's value (Shape of a static shape)
  // Symbolic contents of small integer tensors that hold dims, element by element in row-major order: known sizes
  // or named dims. Shape makes them from its input's shape; the ops that move or combine elements (Gather, Slice,
  // Concat, Unsqueeze, Squeeze, Reshape, Identity, Flatten, integer Cast, Add/Sub/Mul/Div) carry them forward, so
  // Reshape/Expand/ConstantOfShape/Tile see "[N, -1]" built from Shape(x). Null / nullopt where not known.
  std::vector<const std::vector<Dim>*> input_dim_values;
  std::vector<std::optional<std::vector<Dim>>> output_dim_values;
  // Longest list kept as dim values (shape tensors are short; longer lists are dropped).
  static constexpr size_t kMaxDimValues = 64;

  size_t num_inputs() const { return input_types.size(); }
  bool has_input(size_t i) const { return i < input_types.size() && input_types[i]; }
  const Type& input_type(size_t i) const;
  // Element type of input i (Undefined when unknown).
  DataType input_dtype(size_t i) const;
  const Tensor* input_value(size_t i) const { return i < input_values.size() ? input_values[i] : nullptr; }
  void set_output(size_t i, Type t);
  // Input i (a 1-D or scalar integer tensor) as dims: from its constant value, or its symbolic contents.
  std::optional<std::vector<Dim>> input_as_dims(size_t i) const;
  // Whether input i has symbolic contents (dim values set by its producer, beyond any constant value).
  bool has_input_dim_values(size_t i) const { return i < input_dim_values.size() && input_dim_values[i]; }
  // Sets output i's symbolic contents; denotations are dropped, lists longer than kMaxDimValues are not kept.
  void set_output_dim_values(size_t i, std::vector<Dim> dims);
  // Output `out` holds the elements of input `in` in the same order (Identity, Reshape, Unsqueeze...): passes the
  // input's symbolic contents on, if it has any.
  void forward_dim_values(size_t in = 0, size_t out = 0);
  [[noreturn]] void error(const std::string& what) const;
};

class KernelContext;

// A kernel instance bound to one node; created once per session (attributes are parsed in the factory).
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelContext& ctx) = 0;
  // True when the kernel copied input i's constant value at creation (packed weights, for the shapes the session
  // will run) and runs never read that value's data again, only compare its address: when every reader says so,
  // the session releases the value's memory.
  virtual bool keeps_copy_of_input(size_t) const { return false; }
};

// Runs subgraphs (If/Loop/Scan bodies) on behalf of a kernel, with the kernel's frame as outer scope.
class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  virtual std::vector<Datum> run(const Graph& g, std::vector<Datum> inputs) = 0;
};

class KernelContext {
 public:
  KernelContext(const Node& node, int64_t opset, std::vector<const Datum*> inputs, size_t num_outputs,
                SubgraphRunner* subgraphs);
  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] && inputs_[i]->kind != Datum::Kind::Empty; }
  const Datum& input_datum(size_t i) const;
  // Input i as a tensor; an error naming the node if it is missing or not a tensor.
  const Tensor& input(size_t i) const;
  size_t num_outputs() const { return outputs_.size(); }
  bool output_wanted(size_t i) const;
  // Allocates output i as a new zeroed tensor and returns it for writing.
  Tensor& allocate_output(size_t i, DataType dtype, std::vector<int64_t> dims);
  void set_output(size_t i, Datum d);
  void set_output(size_t i, Tensor t) { set_output(i, Datum::of(std::move(t))); }
  std::vector<Datum>& outputs() { return outputs_; }
  // In-place execution: when input `in` dies with this node (handed over by the executor), is a writable tensor
  // of `dtype` with as many elements as `dims` and nothing else shares its buffer, makes output `out` that buffer
  // (under `dims`) and returns it; else null. The input still reads the same memory: only for kernels that read
  // each element before writing it.
  Tensor* reuse_input(size_t in, size_t out, DataType dtype, const std::vector<int64_t>& dims);
  // For the executor: input i is `d` (a value whose last reader is this node), which reuse_input may take.
  void allow_reuse(size_t i, Datum* d);
  // How many times reuse_input handed out an input's buffer (all threads, since start): for tests.
  static uint64_t reuse_count();
  SubgraphRunner& subgraphs() const;
  [[noreturn]] void error(const std::string& what) const;

 private:
  const Node& node_;
  int64_t opset_;
  std::vector<const Datum*> inputs_;
  std::vector<Datum> outputs_;
  SubgraphRunner* subgraphs_;
  std::vector<Datum*> reusable_;
};

// What a kernel factory gets at session creation.
struct KernelInit {
  const Node& node;
  int64_t opset;
  AttributeView attrs;
  std::vector<const Type*> input_types;  // inferred (may be Unknown)
  std::vector<const Type*> output_types;
  // Opset imports in effect for the node's graph (the model's, or a function's): for ops that bind other nodes
  // of the graph to kernels themselves (Gradient).
  const std::map<std::string, int64_t>* opset_imports = nullptr;
  // The value of each input known at creation (initializer or Constant), else null; it outlives the kernel. A
  // fast kernel may prepack it, but must check at run time that the input is still that tensor (a feed may
  // replace an initializer that is also a graph input) and otherwise compute from the input it gets.
  std::vector<const Tensor*> input_values = {};
  // Set by tests that compare fast kernels with their reference: factories then return the reference kernel.
  bool reference_only = false;
  const Tensor* input_value(size_t i) const { return i < input_values.size() ? input_values[i] : nullptr; }
};

// Ops defined by other ops: ONNX Runtime's contrib ops (domain com.microsoft), which real models carry, are
// written here as the standard and ai.onyx nodes that compute them (as ONNX defines some ops by a function body
// built from the node). Before inference and optimization a session replaces each such node by what its `expand`
// emits, so the op runs on those nodes' kernels and gets their fusions. src/opt/op_expansion.cpp implements this
// interface over the graph being edited.
class ExpandContext {
 public:
  ExpandContext(const Node& n, int64_t node_opset) : node(n), opset(node_opset), attrs(n) {}
  virtual ~ExpandContext() = default;
  const Node& node;
  int64_t opset;  // the model's opset of the node's domain
  AttributeView attrs;

  // The model's opset of ai.onnx: emitted standard ops bind at it, so an expansion picks forms valid there.
  virtual int64_t onnx_opset() const = 0;
  size_t num_inputs() const { return node.inputs.size(); }
  bool has_input(size_t i) const { return i < node.inputs.size() && node.inputs[i]; }
  Value* input(size_t i) const { return has_input(i) ? node.inputs[i] : nullptr; }
  // What is known of input i before inference: element type (Undefined when unknown), rank (-1), constant value.
  virtual DataType input_dtype(size_t i) const = 0;
  virtual int64_t input_rank(size_t i) const = 0;
  virtual const Tensor* input_value(size_t i) const = 0;
  size_t num_outputs() const { return node.outputs.size(); }
  // Whether output i exists and something reads it (a node, or the graph's outputs).
  bool output_wanted(size_t i) const;
  // Output i of the node, to pass as an output of an emitted node (null when omitted).
  Value* output(size_t i) const { return i < node.outputs.size() ? node.outputs[i] : nullptr; }

  // Emits a node computing `inputs` (null: an omitted optional input) into `outputs`: the node's own outputs
  // (from output()) or null for new values. Returns the outputs, new ones created.
  virtual std::vector<Value*> emit(const std::string& op_type, const std::string& domain, std::vector<Value*> inputs,
                                   std::vector<Value*> outputs, std::vector<Attribute> attributes = {}) = 0;
  // Emits a one-output node; `out` is one of the node's outputs or null for a new value.
  Value* emit1(const std::string& op_type, std::vector<Value*> inputs, std::vector<Attribute> attributes = {},
               Value* out = nullptr, const std::string& domain = "") {
    return emit(op_type, domain, std::move(inputs), {out}, std::move(attributes))[0];
  }
  // A new constant value (an initializer).
  virtual Value* constant(Tensor t) = 0;
  Value* int64s(const std::vector<int64_t>& values);  // 1-D int64
  Value* scalar(DataType dt, double v);               // rank-0 tensor of a float or integer type
  [[noreturn]] void error(const std::string& what) const;

  // The attributes of an emitted node, made with make_attr_* (ir/model.hpp): Attribute is move-only, so a braced
  // list, which copies, does not compile.
  template <class... A>
  static std::vector<Attribute> attributes(A... a) {
    std::vector<Attribute> v;
    (v.push_back(std::move(a)), ...);
    return v;
  }
};

using InferFn = std::function<void(InferContext&)>;
namespace grad {
struct Args;
}
// The rule of an op for ai.onnx.preview.training's Gradient: its inputs' gradients from its outputs'
// (ops/gradient_rule.hpp).
using GradientRule = void (*)(grad::Args&);
using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelInit&)>;
using ExpandFn = std::function<void(ExpandContext&)>;

// Element types allowed for a group of inputs/outputs (one ONNX type constraint, e.g. "T" for inputs 0 and 1).
struct TypeConstraint {
  std::vector<int> inputs;           // input indices this constraint applies to (-1: all inputs)
  std::vector<DataType> allowed;
};

struct OpDef {
  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int since_version = 1;
  std::vector<TypeConstraint> types;  // checked at session creation when input types are known, and at run time
  InferFn infer;
  KernelFactory kernel;  // null for ops that only expand
  // Set for ops defined by other ops (see ExpandContext): the node is replaced at load, before `infer` would
  // matter to a kernel; `infer` still gives types to the graph analysis that runs before the replacement.
  ExpandFn expand = nullptr;
  // False for ops whose outputs are not a function of their inputs and attributes (random generators and
  // Dropout, which may draw a mask): such nodes are never folded at creation nor run for inference values.
  bool deterministic = true;
  // How Gradient differentiates through the op; null for ops onyx has no rule for.
  GradientRule gradient = nullptr;
  // The fast kernels the op's kernel factory may choose over its reference kernel, each saying what runs and
  // when (`onyx ops` lists them); empty where the reference kernel is all there is.
  std::vector<std::string> fast_kernels = {};
};

class Registry {
 public:
  void add(OpDef def);
  // The implementation for a node at the model's opset; an error that says what exists otherwise.
  const OpDef& resolve(const Node& node, int64_t opset) const;
  const OpDef* find(std::string_view domain, std::string_view op_type, int since_version) const;
  std::vector<int> versions(std::string_view domain, std::string_view op_type) const;
  // Marks every registered version of an op as not deterministic (see OpDef::deterministic).
  void set_nondeterministic(std::string_view domain, std::string_view op_type);
  // Sets the fast kernels of every registered version of an op (see OpDef::fast_kernels).
  void set_fast_kernels(std::string_view domain, std::string_view op_type, std::vector<std::string> kernels);
  // Sets the gradient rule of every registered version of an op (see OpDef::gradient).
  void set_gradient(std::string_view domain, std::string_view op_type, GradientRule rule);
  // False when some version of the op is not deterministic; true for ops not registered.
  bool deterministic(std::string_view domain, std::string_view op_type) const;
  const std::map<std::tuple<std::string, std::string, int>, OpDef>& all() const { return defs_; }

 private:
  // The entries of every registered version of one op (of `defs`, const or not), ascending.
  template <class Map>
  static auto versions_of(Map& defs, std::string_view domain, std::string_view op_type);
  std::map<std::tuple<std::string, std::string, int>, OpDef> defs_;
};

// The registry holding every op family listed in ops/families.def.
const Registry& builtin_registry();

// Checks input element types against the def's constraints; error names the node, input and allowed types.
void check_input_types(const OpDef& def, const Node& node, const std::vector<DataType>& input_dtypes);

}  // namespace onyx::ops
