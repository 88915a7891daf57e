// int8 quantization rewrites (see quantize.hpp): ORT's dynamic form and its static QDQ form.
#include "opt/quantize.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "base/error.hpp"
#include "ops/op_kit.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace quantize_impl {

// A float32 tensor's values (initializers may be unaligned views of the file: copied, not cast).
std::vector<float> float_values(const Tensor& t) {
  std::vector<float> v(t.element_count());
  if (!v.empty()) std::memcpy(v.data(), t.bytes().data(), v.size() * sizeof(float));
  return v;
}

template <class T>
Tensor tensor_of(DataType dt, std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t = Tensor::allocate(dt, std::move(dims));
  if (!values.empty()) std::memcpy(t.mutable_data<T>(), values.data(), values.size() * sizeof(T));
  return t;
}

struct SymmetricWeight {
  Tensor q;                   // int8, the weight's dims
  std::vector<float> scales;  // one, or one per slice along the axis
};

// Symmetric int8 over [-127, 127] (ORT's QInt8 weights with WeightSymmetric): scale = max|w| / 127 per tensor
// (axis < 0) or per slice along `axis`, zero point 0; values rounded half to even as numpy does.
SymmetricWeight quantize_symmetric(const std::vector<float>& w, const std::vector<int64_t>& dims, int axis) {
  const size_t channels = axis < 0 ? 1 : static_cast<size_t>(dims[static_cast<size_t>(axis)]);
  size_t inner = 1;
  if (axis >= 0)
    for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= static_cast<size_t>(dims[d]);
  auto channel = [&](size_t k) { return axis < 0 ? 0 : (k / inner) % channels; };
  std::vector<float> absmax(channels, 0.f);
  for (size_t k = 0; k < w.size(); ++k) absmax[channel(k)] = std::max(absmax[channel(k)], std::fabs(w[k]));
  SymmetricWeight r{Tensor::allocate(DataType::Int8, dims), std::vector<float>(channels)};
  for (size_t c = 0; c < channels; ++c)
    r.scales[c] = absmax[c] > 0 && std::isfinite(absmax[c]) ? absmax[c] / 127.f : 1.f;
  int8_t* q = r.q.mutable_data<int8_t>();
  for (size_t k = 0; k < w.size(); ++k) {
    const float v = std::nearbyint(w[k] / r.scales[channel(k)]);
    q[k] = static_cast<int8_t>(std::isnan(v) ? 0.f : std::clamp(v, -127.f, 127.f));
  }
  return r;
}

Tensor float_scales(const std::vector<float>& s, bool per_channel) {
  return per_channel ? tensor_of(DataType::Float, {static_cast<int64_t>(s.size())}, s) : tensor_of(DataType::Float, {}, s);
}

// The [K, N] weight of a MatMul or Gemm (transB undone, alpha applied), or why there is none.
struct MatrixWeight {
  std::vector<float> w;
  int64_t K = 0, N = 0;
};

std::string matrix_weight(const Analysis& a, const Node& n, MatrixWeight& out) {
  Value* B = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  const Tensor* bt = B ? a.constant(B) : nullptr;
  if (!bt) return "its weight (input B) is not a constant";
  if (bt->dtype() != DataType::Float || bt->dims().size() != 2) return "its weight is not a 2-D float32 constant";
  out.w = float_values(*bt);
  out.K = bt->dims()[0];
  out.N = bt->dims()[1];
  if (is_op(&n, "Gemm")) {
    if (attr_int(n, "transB").value_or(0) != 0) {
      std::vector<float> t(out.w.size());
      for (int64_t i = 0; i < out.K; ++i)
        for (int64_t j = 0; j < out.N; ++j) t[static_cast<size_t>(j * out.K + i)] = out.w[static_cast<size_t>(i * out.N + j)];
      out.w = std::move(t);
      std::swap(out.K, out.N);
    }
    const float alpha = attr_float(n, "alpha").value_or(1.f);
    if (alpha != 1.f)
      for (float& v : out.w) v *= alpha;
  }
  return "";
}

// A Gemm's C as a bias of N values (times beta); empty when absent. Sets `why` when C is not usable.
std::vector<float> gemm_bias(const Analysis& a, const Node& n, int64_t N, std::string& why) {
  if (n.inputs.size() < 3 || !n.inputs[2]) return {};
  const Tensor* c = a.constant(n.inputs[2]);
  if (!c || c->dtype() != DataType::Float) {
    why = "its C is not a float32 constant";
    return {};
  }
  const auto& d = c->dims();
  const uint64_t count = c->element_count();
  bool row = count == 1 || (count == static_cast<uint64_t>(N) && !d.empty() && d.back() == N);
  if (!row) {
    why = "its C is not a scalar or a row of N values";
    return {};
  }
  const std::vector<float> cv = float_values(*c);
  const float beta = attr_float(n, "beta").value_or(1.f);
  std::vector<float> bias(static_cast<size_t>(N));
  for (size_t j = 0; j < bias.size(); ++j) bias[j] = beta * cv[count == 1 ? 0 : j];
  return bias;
}

// Names as ORT writes them ("W_quantized", "x_scale", ...) where the model does not use them yet (in any graph,
// node names included), else the optimizer's fresh names.
class Namer {
 public:
  explicit Namer(PassContext& ctx) : ctx_(ctx) { collect(*ctx.model.graph); }
  std::string get(const std::string& base) {
    if (!base.empty() && used_.insert(base).second) return base;
    std::string n = ctx_.fresh_name(base);
    used_.insert(n);
    return n;
  }
  Value& value(const std::string& base) { return ctx_.graph.add_value(get(base)); }
  Value& init(const std::string& base, Tensor t) {
    Value& v = value(base);
    ctx_.make_initializer(v, std::move(t));
    return v;
  }

 private:
  void collect(const Graph& g) {
    for (const Value& v : g.values()) used_.insert(v.name);
    for (const auto& [name, t] : g.initializers) used_.insert(name);
    for (const auto& n : g.nodes) {
      used_.insert(n->name);
      for (const Attribute& a : n->attributes) {
        if (a.g) collect(*a.g);
        for (const auto& sg : a.graphs) collect(*sg);
      }
    }
  }
  PassContext& ctx_;
  std::unordered_set<std::string> used_;
};

std::string base_name(const Node& n) { return n.name.empty() ? (n.outputs[0] ? n.outputs[0]->name : n.op_type) : n.name; }

// ---- dynamic ----

using DqlOutputs = std::array<Value*, 3>;  // quantized, scale, zero point

std::string rewrite_dynamic(PassContext& ctx, Namer& names, Node& n, const DynamicQuantizeOptions& o,
                            std::unordered_map<const Value*, DqlOutputs>& dql, QuantizeReport& r) {
  const Analysis& a = ctx.analysis();
  Value* A = n.inputs.empty() ? nullptr : n.inputs[0];
  if (!A || n.outputs.size() != 1 || !n.outputs[0]) return "unexpected inputs or outputs";
  if (a.dtype(A) != DataType::Float) return "its input A is not float32";
  if (a.constant(A)) return "its input A is a constant (constant folding's work)";
  const bool gemm = is_op(&n, "Gemm");
  if (gemm && attr_int(n, "transA").value_or(0) != 0) return "transA=1";
  MatrixWeight mw;
  if (std::string why = matrix_weight(a, n, mw); !why.empty()) return why;
  std::string why;
  const std::vector<float> bias = gemm ? gemm_bias(a, n, mw.N, why) : std::vector<float>{};
  if (!why.empty()) return why;

  const std::string wname = n.inputs[1]->name;
  const SymmetricWeight qw = quantize_symmetric(mw.w, {mw.K, mw.N}, o.per_channel ? 1 : -1);
  Value& wq = names.init(wname + "_quantized", qw.q);
  Value& ws = names.init(wname + "_scale", float_scales(qw.scales, o.per_channel));
  Value& wz = names.init(wname + "_zero_point",
                                  Tensor::allocate(DataType::Int8, o.per_channel ? std::vector<int64_t>{mw.N} : std::vector<int64_t>{}));
  ++r.weights;
  // One DynamicQuantizeLinear per activation, shared by the products that read it (as ORT writes it).
  auto it = dql.find(A);
  if (it == dql.end()) {
    DqlOutputs outs{&names.value(A->name + "_quantized"), &names.value(A->name + "_scale"),
                    &names.value(A->name + "_zero_point")};
    ctx.insert_node(n, "DynamicQuantizeLinear", "", {A}, {outs[0], outs[1], outs[2]}, names.get(A->name + "_QuantizeLinear"));
    it = dql.emplace(A, outs).first;
    ++r.activations;
  }
  const auto [aq, as, az] = it->second;
  Value* out = n.outputs[0];
  const std::string base = base_name(n);
  Value& mm = names.value(out->name + "_output_quantized");
  ctx.insert_node(n, "MatMulInteger", "", {aq, &wq, az, &wz}, {&mm}, names.get(base + "_quant"));
  Value& scales = names.value(out->name + "_scales_mul");
  ctx.insert_node(n, "Mul", "", {as, &ws}, {&scales}, names.get(base + "_quant_scales_mul"));
  Value& cast = names.value(out->name + "_output_quantized_cast_output");
  ctx.insert_node(n, "Cast", "", {&mm}, {&cast}, names.get(base + "_quant_output_quantized_cast"))
      .attributes.push_back(make_attr_int("to", static_cast<int64_t>(DataType::Float)));
  const std::string name = n.name.empty() ? names.get(base + "_quant_output_scale_mul") : n.name;
  if (bias.empty()) {
    ctx.replace_node(n, "Mul", "", {&cast, &scales}, {out}, name);
  } else {
    Value& scaled = names.value(out->name + "_scaled");
    ctx.insert_node(n, "Mul", "", {&cast, &scales}, {&scaled}, names.get(base + "_quant_output_scale_mul"));
    Value& b = names.init(out->name + "_bias", tensor_of(DataType::Float, {mw.N}, bias));
    ctx.replace_node(n, "Add", "", {&scaled, &b}, {out}, name);
  }
  ++r.nodes[gemm ? "Gemm" : "MatMul"];
  return "";
}

// ---- static ----

// A Relu, or a Clip whose lower bound is the constant 0, that QuantizeLinear's saturation at zero point qmin can
// stand for, and whose output is read by main-graph nodes only (not a graph output).
bool removable_activation(const Analysis& a, const Node* act, const Graph& g) {
  if (!act || act->outputs.size() != 1 || !act->outputs[0] || act->outputs[0]->is_graph_output || act->inputs.empty())
    return false;
  for (const Node* c : act->outputs[0]->consumers)
    if (c->graph != &g) return false;
  if (is_op(act, "Relu")) return true;
  if (!is_op(act, "Clip")) return false;
  if (a.opset(act) < 11) return attr_float(*act, "min").value_or(-1.f) == 0.f;
  const Tensor* lo = act->inputs.size() > 1 && act->inputs[1] ? a.constant(act->inputs[1]) : nullptr;
  const auto v = scalar_value(lo);
  const bool hi_ok = act->inputs.size() < 3 || !act->inputs[2] || a.constant(act->inputs[2]);
  return v && *v == 0.0 && hi_ok;
}

struct PlanEntry {
  Value* tensor;           // gets QuantizeLinear -> DequantizeLinear
  std::string range_name;  // the value whose calibrated range it takes
  Node* folded = nullptr;  // the Relu/Clip folded into it
};

struct StaticPlan {
  std::vector<PlanEntry> entries;
  std::unordered_map<const Value*, size_t> index;   // tensor -> entry
  std::unordered_map<const Value*, Value*> alias;   // folded activation's output -> the tensor it becomes
  std::vector<Node*> nodes;                         // nodes whose weights (and bias) get quantized
  std::map<std::string, size_t> counts;             // op type -> nodes quantized
  std::vector<std::string> skipped;
};

bool is_quantized_type(const StaticQuantizeOptions& o, const Node& n) {
  for (const std::string& t : o.op_types)
    if (is_op(&n, t.c_str())) return true;
  return false;
}

StaticPlan plan_static(PassContext& ctx, const StaticQuantizeOptions& o) {
  const Analysis& a = ctx.analysis();
  StaticPlan p;
  auto resolve = [&](Value* v) {
    auto it = p.alias.find(v);
    return it == p.alias.end() ? v : it->second;
  };
  auto add = [&](Value* t, const std::string& range, Node* act) {
    if (!t || p.index.count(t) || a.dtype(t) != DataType::Float || a.constant(t)) return;
    p.index[t] = p.entries.size();
    p.entries.push_back({t, range, act});
  };
  for (Node* n : ctx.node_order()) {
    if (!is_quantized_type(o, *n)) continue;
    if (n->outputs.size() != 1 || !n->outputs[0] || a.dtype(n->outputs[0]) != DataType::Float) {
      p.skipped.push_back(n->label() + ": its output is not float32");
      continue;
    }
    std::vector<Value*> activations;
    bool weights = false;
    if (is_op(n, "Conv")) {
      const Tensor* w = n->inputs.size() > 1 && n->inputs[1] ? a.constant(n->inputs[1]) : nullptr;
      if (!w || w->dtype() != DataType::Float || w->dims().size() < 3) {
        p.skipped.push_back(n->label() + ": its weight is not a float32 constant");
        continue;
      }
      activations.push_back(n->inputs[0]);
      weights = true;
    } else if (is_op(n, "MatMul") || is_op(n, "Gemm")) {
      const bool gemm = is_op(n, "Gemm");
      const Tensor* w = n->inputs.size() > 1 && n->inputs[1] ? a.constant(n->inputs[1]) : nullptr;
      if (w && w->dtype() == DataType::Float && w->dims().size() == 2) {
        weights = true;
        activations.push_back(n->inputs[0]);
      } else if (!gemm && n->inputs.size() == 2 && !w) {
        activations = {n->inputs[0], n->inputs[1]};  // a product of two activations (attention)
      } else {
        p.skipped.push_back(n->label() + ": its weight is not a 2-D float32 constant");
        continue;
      }
    } else if (is_op(n, "Add")) {
      // Residual sums only: an Add of a constant (a bias) stays float between the quantized nodes around it.
      if (n->inputs.size() != 2 || !n->inputs[0] || !n->inputs[1] || a.constant(n->inputs[0]) || a.constant(n->inputs[1]))
        continue;
      activations = {n->inputs[0], n->inputs[1]};
    }
    for (Value* x : activations) {
      if (!x || a.dtype(x) != DataType::Float) continue;
      add(resolve(x), x->name, nullptr);
    }
    Value* y = n->outputs[0];
    Node* act = sole_reader(y);
    if (removable_activation(a, act, ctx.graph) && !p.index.count(y)) {
      add(y, act->outputs[0]->name, act);
      p.alias[act->outputs[0]] = y;
    } else {
      add(y, y->name, nullptr);
    }
    if (weights) p.nodes.push_back(n);
    ++p.counts[n->op_type];
  }
  return p;
}

void check_static_opset(PassContext& ctx, const StaticQuantizeOptions& o) {
  const int64_t opset = ctx.opset("");
  if (opset < 10)
    fail(ctx.model.label, ": static quantization writes QuantizeLinear/DequantizeLinear (opset 10); the model imports "
         "opset ", opset, ": convert it to a later opset first");
  if (o.per_channel && opset < 13)
    fail(ctx.model.label, ": per-channel weights need DequantizeLinear's axis (opset 13); the model imports opset ",
         opset, ": quantize per tensor, or convert it first");
  if (o.activation_type != DataType::UInt8 && o.activation_type != DataType::Int8)
    fail(ctx.model.label, ": activations quantize to uint8 or int8, not ", o.activation_type);
  for (const std::string& t : o.op_types)
    if (t != "Conv" && t != "MatMul" && t != "Gemm" && t != "Add")
      fail(ctx.model.label, ": static quantization knows Conv, MatMul, Gemm and Add, not '", t, "'");
}

// Quantizes the weight (input 1) of `n` and its bias when `x_scale` is known, behind DequantizeLinear nodes.
void quantize_node_weights(PassContext& ctx, Namer& names, Node& n, std::optional<float> x_scale, bool per_channel, QuantizeReport& r) {
  const Analysis& a = ctx.analysis();
  const bool conv = is_op(&n, "Conv"), gemm = is_op(&n, "Gemm");
  Value* W = n.inputs[1];
  const Tensor& wt = *a.constant(W);
  // Conv: per output channel (axis 0); MatMul [K, N]: per column (axis 1); Gemm: per row of B when transB.
  const int axis = conv ? 0 : gemm && attr_int(n, "transB").value_or(0) != 0 ? 0 : 1;
  const SymmetricWeight qw = quantize_symmetric(float_values(wt), wt.dims(), per_channel ? axis : -1);
  const int64_t channels = per_channel ? static_cast<int64_t>(qw.scales.size()) : 0;
  Value& wq = names.init(W->name + "_quantized", qw.q);
  Value& ws = names.init(W->name + "_scale", float_scales(qw.scales, per_channel));
  Value& wz = names.init(W->name + "_zero_point",
                                  Tensor::allocate(DataType::Int8, per_channel ? std::vector<int64_t>{channels} : std::vector<int64_t>{}));
  Value& wdq = names.value(W->name + "_DequantizeLinear_Output");
  Node& dqw = ctx.insert_node(n, "DequantizeLinear", "", {&wq, &ws, &wz}, {&wdq}, names.get(W->name + "_DequantizeLinear"));
  if (per_channel) dqw.attributes.push_back(make_attr_int("axis", axis));
  ctx.set_input(n, 1, &wdq);
  ++r.weights;
  // The bias in int32 at x_scale * w_scale (zero point 0), as ORT stores Conv and Gemm biases.
  if (!x_scale || !(conv || gemm) || n.inputs.size() < 3 || !n.inputs[2]) return;
  Value* B = n.inputs[2];
  const Tensor* bt = a.constant(B);
  const int64_t outputs = conv ? wt.dims()[0] : axis == 0 ? wt.dims()[0] : wt.dims()[1];
  if (!bt || bt->dtype() != DataType::Float || bt->dims() != std::vector<int64_t>{outputs}) return;
  if (gemm && attr_float(n, "beta").value_or(1.f) != 1.f) return;
  const std::vector<float> b = float_values(*bt);
  std::vector<float> bscale(per_channel ? b.size() : 1);
  for (size_t c = 0; c < bscale.size(); ++c) bscale[c] = *x_scale * qw.scales[c];
  std::vector<int32_t> bq(b.size());
  for (size_t c = 0; c < b.size(); ++c) {
    const float s = bscale[per_channel ? c : 0];
    const double v = s > 0 ? std::nearbyint(static_cast<double>(b[c]) / s) : 0.0;
    if (!(std::fabs(v) < 2147483647.0)) return;  // out of int32's range: the bias stays float
    bq[c] = static_cast<int32_t>(v);
  }
  Value& bqv = names.init(B->name + "_quantized", tensor_of(DataType::Int32, {outputs}, bq));
  Value& bs = names.init(B->name + "_quantized_scale", float_scales(bscale, per_channel));
  Value& bdq = names.value(B->name + "_DequantizeLinear_Output");
  Node& dqb = ctx.insert_node(n, "DequantizeLinear", "", {&bqv, &bs}, {&bdq}, names.get(B->name + "_DequantizeLinear"));
  if (per_channel) dqb.attributes.push_back(make_attr_int("axis", 0));
  ctx.set_input(n, 2, &bdq);
  ++r.weights;
}

// Aligned copies of misaligned initializers (the kernels constant folding runs read them through typed pointers),
// as the optimizer's driver makes.
void align_initializers(Graph& g) {
  for (auto& [name, t] : g.initializers) {
    const int bits = dtype_bits(t.dtype());
    const size_t need = bits >= 16 ? std::min<size_t>(static_cast<size_t>(bits) / 8, 8) : 1;
    if (need > 1 && reinterpret_cast<uintptr_t>(t.bytes().data()) % need != 0) t = t.clone();
  }
}

}  // namespace quantize_impl

using namespace quantize_impl;

std::pair<float, int32_t> activation_quant_params(TensorRange r, DataType type) {
  const double qmin = type == DataType::Int8 ? -128 : 0, qmax = type == DataType::Int8 ? 127 : 255;
  const double lo = std::min(r.min, 0.0), hi = std::max(r.max, 0.0);
  float scale = static_cast<float>((hi - lo) / (qmax - qmin));
  if (!(scale > 0) || !std::isfinite(scale)) scale = 1.f;
  const double zp = std::clamp(std::nearbyint(qmin - lo / static_cast<double>(scale)), qmin, qmax);
  return {scale, static_cast<int32_t>(zp)};
}

void prepare_for_quantization(Model& model) {
  if (!model.graph) return;
  align_initializers(*model.graph);
  // IR 3 lists every initializer as a graph input, with no intent to feed it: weights are constants here (as in
  // ONNX Runtime's quantizer), so they stop being inputs (the quantized model is written as IR 4 or later).
  if (model.ir_version < 4) {
    Graph& g = *model.graph;
    std::vector<Value*> kept;
    for (Value* v : g.inputs) {
      if (v->initializer) v->is_graph_input = false;
      else kept.push_back(v);
    }
    g.inputs = std::move(kept);
    model.ir_version = 4;
  }
  OptimizeOptions options;
  options.level = 2;
  options.fold_limit_bytes = uint64_t{1} << 30;  // weights written as nodes are folded whatever their size
  PassContext ctx(model, *model.graph, options);
  bool (*const steps[])(PassContext&) = {fold_constants, eliminate_identities, fold_batch_norm, fold_conv_mul_add,
                                         eliminate_dead_code};
  for (int round = 0; round < 8; ++round) {
    bool any = false;
    for (auto step : steps) {
      const bool changed = step(ctx);
      if (changed || ctx.edited()) ctx.finish();
      any |= changed;
    }
    if (!any) break;
  }
}

QuantizeReport quantize_dynamic_graph(Model& model, const DynamicQuantizeOptions& o) {
  QuantizeReport r;
  if (!model.graph) return r;
  for (const std::string& t : o.op_types)
    if (t != "MatMul" && t != "Gemm") fail(model.label, ": dynamic quantization knows MatMul and Gemm, not '", t, "'");
  OptimizeOptions options;
  PassContext ctx(model, *model.graph, options);
  if (const int64_t opset = ctx.opset(""); opset < 11)
    fail(model.label, ": dynamic quantization writes DynamicQuantizeLinear (opset 11); the model imports opset ", opset,
         ": convert it to a later opset first");
  std::unordered_map<const Value*, DqlOutputs> dql;
  Namer names(ctx);
  for (Node* n : ctx.node_order()) {
    if (!ctx.alive(n)) continue;
    bool wanted = false;
    for (const std::string& t : o.op_types) wanted |= is_op(n, t.c_str());
    if (!wanted) continue;
    const std::string label = n->label();
    if (std::string why = rewrite_dynamic(ctx, names, *n, o, dql, r); !why.empty()) r.skipped.push_back(label + ": " + why);
  }
  ctx.finish();
  if (eliminate_dead_code(ctx)) ctx.finish();
  return r;
}

std::vector<std::string> calibration_tensors(Model& model, const StaticQuantizeOptions& o) {
  if (!model.graph) return {};
  OptimizeOptions options;
  PassContext ctx(model, *model.graph, options);
  check_static_opset(ctx, o);
  const StaticPlan p = plan_static(ctx, o);
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (const PlanEntry& e : p.entries)
    if (seen.insert(e.range_name).second) names.push_back(e.range_name);
  return names;
}

QuantizeReport quantize_static_graph(Model& model, const std::map<std::string, TensorRange>& ranges,
                                     const StaticQuantizeOptions& o) {
  QuantizeReport r;
  if (!model.graph) return r;
  OptimizeOptions options;
  PassContext ctx(model, *model.graph, options);
  check_static_opset(ctx, o);
  StaticPlan p = plan_static(ctx, o);
  r.skipped = p.skipped;
  Namer names(ctx);
  // Scale and zero point of each entry.
  std::vector<std::pair<float, int32_t>> params(p.entries.size());
  for (size_t k = 0; k < p.entries.size(); ++k) {
    const std::string& name = p.entries[k].range_name;
    auto it = ranges.find(name);
    if (it == ranges.end()) fail(model.label, ": no calibrated range for tensor '", name, "'");
    if (!std::isfinite(it->second.min) || !std::isfinite(it->second.max))
      fail(model.label, ": the calibrated range of tensor '", name, "' is not finite [", it->second.min, ", ",
           it->second.max, "]");
    params[k] = activation_quant_params(it->second, o.activation_type);
  }
  // The input scale of each node with weights (its bias's scale is x_scale * w_scale), before inputs change.
  std::vector<std::optional<float>> x_scales;
  for (Node* n : p.nodes) {
    auto it = p.index.find(n->inputs[0]);
    if (it == p.index.end()) {
      auto al = p.alias.find(n->inputs[0]);
      if (al != p.alias.end()) it = p.index.find(al->second);
    }
    x_scales.push_back(it == p.index.end() ? std::nullopt : std::optional<float>(params[it->second].first));
  }
  // Fold activations: their readers read the tensor they follow, whose quantization saturates as they would.
  for (const PlanEntry& e : p.entries) {
    if (!e.folded) continue;
    Value* out = e.folded->outputs[0];
    const std::vector<Node*> readers = out->consumers;
    for (Node* c : readers)
      for (size_t i = 0; i < c->inputs.size(); ++i)
        if (c->inputs[i] == out) ctx.set_input(*c, i, e.tensor);
    ctx.remove_node(*e.folded);
    ++r.activations_folded;
  }
  // QuantizeLinear -> DequantizeLinear after each tensor; its main-graph readers read the DequantizeLinear.
  std::unordered_map<const Node*, size_t> order;
  for (Node* n : ctx.node_order()) order.emplace(n, order.size());
  const DataType at = o.activation_type;
  for (size_t k = 0; k < p.entries.size(); ++k) {
    Value* t = p.entries[k].tensor;
    std::vector<Node*> readers;
    for (Node* c : t->consumers)
      if (c->graph == &ctx.graph && ctx.alive(c) && std::find(readers.begin(), readers.end(), c) == readers.end())
        readers.push_back(c);
    if (readers.empty()) continue;
    Node* first = *std::min_element(readers.begin(), readers.end(), [&](Node* x, Node* y) {
      auto ox = order.find(x), oy = order.find(y);
      return (ox == order.end() ? SIZE_MAX : ox->second) < (oy == order.end() ? SIZE_MAX : oy->second);
    });
    const auto [scale, zero] = params[k];
    Value& s = names.init(t->name + "_scale", tensor_of(DataType::Float, {}, std::vector<float>{scale}));
    Tensor zt = Tensor::allocate(at, {});
    if (at == DataType::UInt8) zt.mutable_data<uint8_t>()[0] = static_cast<uint8_t>(zero);
    else zt.mutable_data<int8_t>()[0] = static_cast<int8_t>(zero);
    Value& z = names.init(t->name + "_zero_point", std::move(zt));
    Value& q = names.value(t->name + "_QuantizeLinear_Output");
    Value& dq = names.value(t->name + "_DequantizeLinear_Output");
    ctx.insert_node(*first, "QuantizeLinear", "", {t, &s, &z}, {&q}, names.get(t->name + "_QuantizeLinear"));
    ctx.insert_node(*first, "DequantizeLinear", "", {&q, &s, &z}, {&dq}, names.get(t->name + "_DequantizeLinear"));
    for (Node* c : readers)
      for (size_t i = 0; i < c->inputs.size(); ++i)
        if (c->inputs[i] == t) ctx.set_input(*c, i, &dq);
    ++r.activations;
  }
  for (size_t k = 0; k < p.nodes.size(); ++k) quantize_node_weights(ctx, names, *p.nodes[k], x_scales[k], o.per_channel, r);
  r.nodes = p.counts;
  ctx.finish();
  if (eliminate_dead_code(ctx)) ctx.finish();
  return r;
}

}  // namespace onyx::opt
