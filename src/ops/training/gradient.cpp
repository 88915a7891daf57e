// ai.onnx.preview.training Gradient-1 (the only version in the spec table): reverse-mode differentiation of a part
// of the node's own graph.
// Attributes: xs (differentiated variables), zs (other independent variables, optional), y (the differentiated
// tensor). Inputs: the values of xs then zs, at which the gradient is evaluated. Outputs: dy/dx for each x of xs,
// shaped and typed like that x (float16, float, double).
// At session creation the kernel walks back from y through the producers of each value, stopping at the names in
// xs and zs; constant initializers may be read, any other graph input (or a value produced by a node with a
// subgraph, or by a model-local function) is an error since xs and zs must determine y. The nodes found are bound
// to their own kernels. Each run evaluates that forward part again with the Gradient node's inputs substituted for
// xs and zs (the spec lets the values differ from those of the main graph), then propagates gradients backwards in
// double with each op's rule (OpDef::gradient, written beside the op's kernels; ops/gradient_rule.hpp). y may be
// any shape: its gradient seed is all ones (the gradient of the sum of y's elements), which is dy/dx for a
// scalar y. Gradients reach only float tensors; integer values (Shape outputs,
// indices) carry none. Broadcasting ops sum the gradient over the broadcast axes.
// Ops with a rule (ai.onnx): Add Sub Mul Div Pow Neg Abs Reciprocal Exp Log Sqrt Sin Cos Tanh Sigmoid Relu
// LeakyRelu Elu Softplus Erf Clip Identity Cast Reshape Flatten Squeeze Unsqueeze Expand Transpose Concat Split
// Where Sum Mean MatMul Gemm ReduceSum ReduceMean ReduceSumSquare Softmax LogSoftmax, and the ops that move
// elements (Slice Gather GatherElements GatherND Tile Pad Compress ReverseSequence DepthToSpace SpaceToDepth),
// whose own kernel, run on element numbers, gives the map dy flows back along. A node on the path from xs to y
// without a rule is an error naming it.
#include <cmath>
#include <functional>
#include <numbers>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "ops/gradient_rule.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
const char* kTraining = "ai.onnx.preview.training";

bool is_float(DataType t) { return t == D::Float || t == D::Double || t == D::Float16 || t == D::BFloat16; }

// One node of the differentiated part, bound to its own kernel.
struct Forward {
  const Node* node = nullptr;
  int64_t opset = 0;
  const OpDef* def = nullptr;
  std::unique_ptr<Kernel> kernel;
  AttributeView attrs;
  GradientRule rule = nullptr;
  std::vector<int> in, out;  // value slots, -1 where omitted
};

class GradientKernel : public Kernel {
 public:
  explicit GradientKernel(const KernelInit& init) : node_(init.node) {
    const AttributeView& at = init.attrs;
    const std::vector<std::string> xs = at.get_strings("xs"), zs = at.get_strings("zs", std::vector<std::string>{});
    const std::string y = at.get_string("y");
    num_xs_ = xs.size();
    if (xs.empty()) fail("attribute 'xs' is empty: there is nothing to differentiate against");
    if (node_.inputs.size() != xs.size() + zs.size())
      fail("takes one input per name of xs and zs (", xs.size(), " + ", zs.size(), "), the node has ",
           node_.inputs.size());
    if (node_.outputs.size() > xs.size())
      fail("has ", node_.outputs.size(), " outputs; at most one per name of xs (", xs.size(), ")");
    const Graph* g = node_.graph;
    if (!g) fail("the node is not in a graph");
    auto find = [&](const std::string& name, const char* attr) {
      const Value* v = g->find(name);
      if (!v) fail("attribute '", attr, "' names '", name, "', which is not a value of the graph");
      return v;
    };
    // Slots: xs, then zs, then values found walking back from y.
    for (size_t i = 0; i < xs.size() + zs.size(); ++i) {
      const bool is_x = i < xs.size();
      const Value* v = find(is_x ? xs[i] : zs[i - xs.size()], is_x ? "xs" : "zs");
      if (slots_.count(v)) fail("'", v->name, "' appears more than once in xs and zs");
      slot(v);
    }
    const Value* yv = find(y, "y");
    collect(yv, init);
    y_slot_ = slots_.at(yv);
    // Which values depend on xs: only those carry gradients, and only nodes reading them need a rule.
    depends_.assign(slot_count_, false);
    for (size_t i = 0; i < xs.size(); ++i) depends_[i] = true;
    for (const Forward& f : forward_) {
      bool any = false;
      for (int s : f.in) any = any || (s >= 0 && depends_[static_cast<size_t>(s)]);
      for (int s : f.out)
        if (s >= 0) depends_[static_cast<size_t>(s)] = any;
      if (any && !f.rule) {
        // An op whose outputs are known not to be float (Shape, comparisons) passes no gradient and needs no rule.
        bool float_out = false;
        for (const Value* o : f.node->outputs)
          float_out = float_out || (o && o->type.kind == Type::Kind::Tensor && is_float(o->type.elem));
        if (float_out) no_rule_error(*f.node);
      }
    }
  }

  void run(KernelContext& ctx) override {
    std::vector<Datum> values(slot_count_);
    for (size_t i = 0; i < node_.inputs.size(); ++i) {
      if (!ctx.has_input(i)) ctx.error(cat("input ", i, " (value of '", slot_names_[i], "') is missing"));
      values[i] = ctx.input_datum(i);
      if (i < num_xs_) {
        const Tensor& x = ctx.input(i);
        if (x.dtype() != D::Float && x.dtype() != D::Double && x.dtype() != D::Float16)
          ctx.error(cat("input ", i, " (value of xs '", slot_names_[i], "') is ", x.dtype(),
                        "; gradients are float16, float or double"));
      }
    }
    for (const auto& [s, t] : constants_) values[static_cast<size_t>(s)] = Datum::of(*t);
    evaluate(values);
    std::vector<std::optional<grad::Grad>> grads(slot_count_);
    {
      const Datum& yd = values[y_slot_];
      if (!yd.is_tensor() || !is_float(yd.tensor.dtype()))
        ctx.error(cat("y '", slot_names_[y_slot_], "' is ", yd.describe(), "; only float tensors have gradients"));
      grads[y_slot_] = grad::Grad{yd.tensor.dims(), std::vector<double>(yd.tensor.element_count(), 1.0)};
    }
    backward(values, grads);
    for (size_t i = 0; i < ctx.num_outputs() && i < num_xs_; ++i) {
      if (!ctx.output_wanted(i)) continue;
      const Tensor& x = ctx.input(i);
      Tensor& out = ctx.allocate_output(i, x.dtype(), x.dims());
      if (grads[i]) {
        if (grads[i]->dims != x.dims())
          fail("internal: gradient of '", slot_names_[i], "' has ", grads[i]->v.size(), " elements for ",
               x.element_count());
        store_doubles(out, grads[i]->v);
      }
    }
  }

 private:
  size_t slot(const Value* v) {
    auto [it, inserted] = slots_.emplace(v, slot_count_);
    if (inserted) {
      ++slot_count_;
      slot_names_.push_back(v->name);
    }
    return it->second;
  }

  [[noreturn]] void no_rule_error(const Node& n) const {
    fail("node ", n.label(), " lies on the path from xs to y, and onyx has no gradient rule for ",
         n.domain.empty() ? "" : n.domain + ".", n.op_type);
  }

  // Finds the nodes that compute y from xs, zs and constant initializers, in an order where producers come first.
  void collect(const Value* y, const KernelInit& init) {
    struct Item {
      const Value* v;
      bool expanded;
    };
    std::vector<Item> stack{{y, false}};
    std::unordered_set<const Node*> pending;  // producers whose inputs are being visited (a cycle check)
    while (!stack.empty()) {
      Item it = stack.back();
      stack.pop_back();
      const Value* v = it.v;
      if (slots_.count(v)) continue;
      const Node* p = v->producer;
      if (!p) {
        if (v->initializer && !v->is_graph_input) {
          constants_.emplace_back(static_cast<int>(slot(v)), v->initializer);
          continue;
        }
        fail("y depends on '", v->name, "', which is neither in xs nor in zs (",
             v->is_graph_input ? "a graph input" : "no node computes it", "); xs and zs must determine y");
      }
      if (p == &node_) fail("y depends on an output of this Gradient node");
      if (!it.expanded) {
        if (!pending.insert(p).second) fail("the graph computing y has a cycle at node ", p->label());
        stack.push_back({v, true});
        for (const Value* in : p->inputs)
          if (in && !slots_.count(in)) stack.push_back({in, false});
        continue;
      }
      add_forward(*p, init);
    }
  }

  void add_forward(const Node& n, const KernelInit& init) {
    for (const Attribute& a : n.attributes)
      if (a.g || !a.graphs.empty())
        fail("node ", n.label(), " lies between xs and y and has a subgraph; Gradient cannot differentiate through it");
    if (!init.opset_imports) fail("internal: the opset imports are not available to Gradient");
    auto imp = init.opset_imports->find(n.domain == "ai.onnx" ? "" : n.domain);
    if (imp == init.opset_imports->end())
      fail("node ", n.label(), " (between xs and y): domain '", n.domain, "' is not imported");
    Forward f{&n, imp->second, nullptr, nullptr, AttributeView(n, init.attrs.scope()), nullptr, {}, {}};
    try {
      f.def = &builtin_registry().resolve(n, f.opset);
      f.rule = f.def->gradient;
      KernelInit sub{n, f.opset, f.attrs, {}, {}, init.opset_imports};
      for (const Value* v : n.inputs) sub.input_types.push_back(v ? &v->type : nullptr);
      for (const Value* v : n.outputs) sub.output_types.push_back(v ? &v->type : nullptr);
      f.kernel = f.def->kernel(sub);
    } catch (const Error& e) {
      fail("node ", n.label(), " (between xs and y): ", e.what());
    }
    for (const Value* v : n.inputs) f.in.push_back(v ? static_cast<int>(slots_.at(v)) : -1);
    for (const Value* v : n.outputs) f.out.push_back(v ? static_cast<int>(slot(v)) : -1);
    forward_.push_back(std::move(f));
  }

  void evaluate(std::vector<Datum>& values) const {
    for (const Forward& f : forward_) {
      std::vector<const Datum*> ins;
      std::vector<DataType> dtypes;
      for (int s : f.in) {
        const Datum* d = s >= 0 && values[static_cast<size_t>(s)].kind != Datum::Kind::Empty ? &values[static_cast<size_t>(s)] : nullptr;
        ins.push_back(d);
        dtypes.push_back(d && d->is_tensor() ? d->tensor.dtype() : D::Undefined);
      }
      try {
        if (!f.def->types.empty()) check_input_types(*f.def, *f.node, dtypes);
        KernelContext kc(*f.node, f.opset, std::move(ins), f.node->outputs.size(), nullptr);
        f.kernel->run(kc);
        for (size_t i = 0; i < f.out.size(); ++i)
          if (f.out[i] >= 0 && i < kc.outputs().size()) values[static_cast<size_t>(f.out[i])] = std::move(kc.outputs()[i]);
      } catch (const Error& e) {
        fail("evaluating node ", f.node->label(), " (between xs and y): ", e.what());
      }
    }
  }

  void backward(const std::vector<Datum>& values, std::vector<std::optional<grad::Grad>>& grads) const {
    auto tensor_at = [&](int s) -> const Tensor* {
      if (s < 0 || !values[static_cast<size_t>(s)].is_tensor()) return nullptr;
      return &values[static_cast<size_t>(s)].tensor;
    };
    for (auto f = forward_.rbegin(); f != forward_.rend(); ++f) {
      bool reached = false;
      for (int s : f->out) reached = reached || (s >= 0 && grads[static_cast<size_t>(s)]);
      if (!reached) continue;
      grad::Args a{*f->node, f->attrs, f->opset, {}, {}, {}, {}, {}, {}};
      bool any = false;
      for (int s : f->in) {
        const Tensor* t = tensor_at(s);
        a.in.push_back(t);
        const bool w = t && depends_[static_cast<size_t>(s)] && is_float(t->dtype());
        a.want.push_back(w);
        any = any || w;
      }
      if (!any) continue;
      if (!f->rule) no_rule_error(*f->node);
      for (int s : f->out) {
        a.out.push_back(tensor_at(s));
        a.dout.push_back(s >= 0 && grads[static_cast<size_t>(s)] ? &*grads[static_cast<size_t>(s)] : nullptr);
      }
      a.din.resize(f->in.size());
      a.rerun = [&](std::vector<const Datum*> ins) {
        KernelContext kc(*f->node, f->opset, std::move(ins), f->node->outputs.size(), nullptr);
        f->kernel->run(kc);
        return std::move(kc.outputs());
      };
      try {
        f->rule(a);
      } catch (const Error& e) {
        fail("gradient of node ", f->node->label(), ": ", e.what());
      }
      for (size_t i = 0; i < f->in.size(); ++i) {
        if (!a.din[i]) continue;
        std::optional<grad::Grad>& acc = grads[static_cast<size_t>(f->in[i])];
        if (!acc) {
          acc = std::move(a.din[i]);
        } else {
          for (size_t k = 0; k < acc->v.size(); ++k) acc->v[k] += a.din[i]->v[k];
        }
      }
    }
  }

  const Node& node_;
  size_t num_xs_ = 0;
  std::unordered_map<const Value*, size_t> slots_;
  size_t slot_count_ = 0;
  std::vector<std::string> slot_names_;
  std::vector<std::pair<int, const Tensor*>> constants_;
  std::vector<Forward> forward_;
  std::vector<bool> depends_;
  size_t y_slot_ = 0;
};

void infer_gradient(InferContext& ctx) {
  const size_t nx = ctx.attrs.get_strings("xs").size();
  for (size_t i = 0; i < ctx.output_types.size() && i < nx; ++i) {
    if (!ctx.has_input(i)) continue;
    const Type& t = ctx.input_type(i);
    if (t.kind == Type::Kind::Tensor && t.elem != D::Undefined && t.elem != D::Float && t.elem != D::Double &&
        t.elem != D::Float16)
      ctx.error(cat("input ", i, " (value of xs '", ctx.attrs.get_strings("xs")[i], "') is ", t.elem,
                    "; gradients are float16, float or double"));
    ctx.set_output(i, t);
  }
}

}  // namespace

void register_gradient(Registry& r) {
  r.add(OpDef{kTraining, "Gradient", 1, {}, infer_gradient,
              [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<GradientKernel>(init); }});
}

}  // namespace onyx::ops
