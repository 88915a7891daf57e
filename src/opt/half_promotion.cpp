// Half-precision promotion: float16 and bfloat16 math runs in float32. Models converted to float16 (weights and
// activations, usually with float32 inputs and outputs and Casts at the edges) would otherwise run every op through
// the generic kernels, and the CPU has no float16 arithmetic to gain from. ONNX Runtime's CPU provider does the same
// (Casts around each op without a float16 kernel, then adjacent Cast pairs removed), so results round as its do.
//
// Every node of an op below (ai.onnx; no type attributes, and its float16 and float32 versions compute the same
// thing) that reads or writes a half tensor reads and writes a float32 twin of each such value instead:
//   - a node output: the node writes the twin; a Cast to the half type recreates the original value only when
//     something else still reads it (another op, a subgraph, a graph output);
//   - a constant: a float32 copy (the model's own stays untouched; dead code drops it when unread);
//   - the output of a Cast from float32 to half: that Cast's input (the rounding to half is skipped);
//   - anything else (a graph input, another op's output): a new Cast to float32.
// A Cast from half to float32 that reads a value with a twin becomes an Identity of the twin.
// Not bit-exact with half arithmetic: results carry float32 rounding, more accurate than half's, as the fusions of
// level 2 differ in their last bits. Ops whose result would jump on a rounding difference (comparisons, ArgMax,
// TopK) are left in half precision.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/tensor_alloc.hpp"
#include "kernels/half.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

bool is_half(DataType t) { return t == DataType::Float16 || t == DataType::BFloat16; }

bool promotable_op(const Node& n) {
  static const std::unordered_set<std::string> ops = {
      // elementwise
      "Abs", "Neg", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Log", "Sqrt",
      "Reciprocal", "Erf", "Softplus", "Softsign", "Elu", "Selu", "Celu", "Gelu", "Mish", "ThresholdedRelu", "Sin",
      "Cos", "Clip", "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Where", "Identity",
      // linear algebra and networks
      "Conv", "ConvTranspose", "MatMul", "Gemm", "BatchNormalization", "InstanceNormalization", "LayerNormalization",
      "GroupNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Softmax", "LogSoftmax",
      "Resize", "Upsample", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceSumSquare",
      "CumSum",
      // data movement
      "Concat", "Split", "Slice", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Gather",
      "GatherElements", "Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth"};
  if (!n.domain.empty() || !ops.count(n.op_type)) return false;
  for (const Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return false;
  return true;
}

Tensor to_float32(const Tensor& t) {
  Tensor out = allocate_for_overwrite(DataType::Float, t.dims());  // every element is written below
  const uint16_t* in = t.data<uint16_t>();
  float* o = out.mutable_data<float>();
  const size_t n = t.element_count();
  if (t.dtype() == DataType::Float16) {
    kernels::half_to_float_array(in, o, n);
  } else {
    for (size_t i = 0; i < n; ++i) o[i] = bfloat16_to_float(in[i]);
  }
  return out;
}

Attribute to_attr(int64_t dtype) { return make_attr_int("to", dtype); }

class Promotion {
 public:
  explicit Promotion(PassContext& ctx) : ctx_(ctx), a_(ctx.analysis()) {}

  bool run() {
    const std::vector<Node*> order = ctx_.node_order();
    for (Node* n : order)
      if (ctx_.alive(n) && wanted(*n)) promote(*n);
    if (promoted_outputs_.empty() && twins_.empty()) return false;
    for (Value* v : promoted_outputs_) restore(v);
    return true;
  }

 private:
  bool wanted(const Node& n) const {
    if (!promotable_op(n) || !a_.def(&n)) return false;
    // A value of unknown element type (an If output whose branches declare none) may be half at run time: the
    // node would then read a float32 twin beside it, so it stays as it is.
    for (const Value* v : n.inputs)
      if (v && a_.dtype(v) == DataType::Undefined) return false;
    bool any = false;
    for (const Value* v : n.inputs) any |= v && is_half(a_.dtype(v));
    for (const Value* v : n.outputs) any |= v && is_half(a_.dtype(v));
    return any;
  }

  void promote(Node& n) {
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (Value* v = n.inputs[i]; v && is_half(a_.dtype(v))) ctx_.set_input(n, i, &twin(v, n));
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      Value* v = n.outputs[i];
      if (!v || !is_half(a_.dtype(v))) continue;
      Value& t = ctx_.graph.add_value(ctx_.fresh_name(v->name + "_fp32"));
      half_type_[v] = a_.dtype(v);
      ctx_.set_output(n, i, &t);
      twins_[v] = &t;
      promoted_outputs_.push_back(v);
    }
  }

  // The float32 twin of half value `v`, read by `reader`.
  Value& twin(Value* v, const Node& reader) {
    if (auto it = twins_.find(v); it != twins_.end()) return *it->second;
    Value* t = nullptr;
    Node* p = v->producer;
    if (const Tensor* c = a_.constant(v); c && is_half(c->dtype())) {
      t = &ctx_.add_initializer(v->name + "_fp32", to_float32(*c));
    } else if (p && is_op(p, "Cast") && p->inputs.size() == 1 && p->inputs[0] &&
               a_.dtype(p->inputs[0]) == DataType::Float) {
      t = p->inputs[0];
    } else {
      t = &ctx_.graph.add_value(ctx_.fresh_name(v->name + "_fp32"));
      Node& cast = ctx_.insert_node(reader, "Cast", "", {v}, {t}, ctx_.fresh_name(v->name + "_to_fp32"));
      cast.attributes.push_back(to_attr(static_cast<int64_t>(DataType::Float)));
    }
    twins_[v] = t;
    return *t;
  }

  // `v` lost its producer to its twin: Casts of it to float32 read the twin; whatever else reads it (or a graph
  // output) gets it back through a Cast to half.
  void restore(Value* v) {
    Value* t = twins_.at(v);
    std::vector<Node*> readers = v->consumers;
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    for (Node* r : readers) {
      if (r->graph != &ctx_.graph || !is_op(r, "Cast") || r->inputs.size() != 1 || r->outputs.size() != 1 ||
          attr_int(*r, "to").value_or(0) != static_cast<int64_t>(DataType::Float))
        continue;
      Value* out = r->outputs[0];
      const std::string name = r->name;
      ctx_.replace_node(*r, "Identity", "", {t}, {out}, name);
    }
    if (v->consumers.empty() && !v->is_graph_output) return;
    // Placed just after the twin's producer (before it when that is the last node: finish() repairs the order).
    const auto& nodes = ctx_.graph.nodes;
    auto at = std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.get() == t->producer; });
    const Node& before = at + 1 < nodes.end() ? **(at + 1) : *t->producer;
    Node& cast = ctx_.insert_node(before, "Cast", "", {t}, {v}, ctx_.fresh_name(v->name + "_to_half"));
    cast.attributes.push_back(to_attr(static_cast<int64_t>(half_type_.at(v))));
  }

  PassContext& ctx_;
  const Analysis& a_;
  std::unordered_map<Value*, Value*> twins_;
  std::unordered_map<Value*, DataType> half_type_;
  std::vector<Value*> promoted_outputs_;
};

}  // namespace

bool promote_half_precision(PassContext& ctx) { return Promotion(ctx).run(); }

}  // namespace onyx::opt
