// Channels-last layout: float 2-D Conv / FusedConv with constant weights become ai.onyx NhwcConv between two
// Transposes (NCHW -> NHWC before, back after), and QLinearConv that oneDNN's int8 kernel runs (constant int8
// weights of zero point 0, constant scales, zero points and bias) ai.onyx NhwcQLinearConv. The Transposes back to NCHW then move down through MaxPool (one
// output), AveragePool and the global pools, which become NhwcMaxPool / NhwcAveragePool (for dynamic sizes, a mean
// or max over H and W); Resize / Upsample with constant parameters (permuted); ops that do not care about the
// layout (elementwise activations, per-tensor QuantizeLinear/DequantizeLinear, ai.onyx QLinearAdd; Add/Sub/Mul/Div/Max/Min/Sum/Mean whose other inputs are moved the same way or
// are constants, which get permuted copies; Concat, whose axis is renamed and whose constant inputs are permuted);
// inference BatchNormalization, which becomes a depthwise 1x1 NhwcConv; and channel shuffles,
// Reshape-Transpose-Reshape, which shuffle the last axis instead. A Transpose to NHWC reading one back to NCHW reads
// the NHWC tensor instead. What is left are conversions at the edges of each channels-last region.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/op_kit.hpp"
#include "ops/quant/qlinear_conv.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

const std::vector<int64_t> kToNchw{0, 3, 1, 2}, kToNhwc{0, 2, 3, 1};

bool is_onyx(const Node* n, const char* op_type) { return n && n->domain == kOnyxDomain && n->op_type == op_type; }

// The producer of `v` when it is a Transpose with permutation `perm`.
Node* transpose_producer(const Value* v, const std::vector<int64_t>& perm) {
  Node* t = v ? v->producer : nullptr;
  if (!is_op(t, "Transpose") || t->inputs.empty() || !t->inputs[0]) return nullptr;
  auto p = attr_ints(*t, "perm");
  return p && *p == perm ? t : nullptr;
}

Value& new_value(PassContext& ctx, const std::string& base) { return ctx.graph.add_value(ctx.fresh_name(base)); }

Value& add_transpose(PassContext& ctx, const Node& before, Value* x, Value* y, const std::vector<int64_t>& perm,
                     const std::string& name) {
  Node& t = ctx.insert_node(before, "Transpose", "", {x}, {y}, ctx.fresh_name(name + "_layout"));
  t.attributes.push_back(make_attr_ints("perm", perm));
  return *y;
}

bool float_rank4(const Analysis& a, const Value* v) { return v && a.dtype(v) == DataType::Float && a.rank(v) == 4; }

// Whether a Conv / FusedConv node can run channels-last.
bool convertible(const Analysis& a, const Node& n) {
  if (!a.def(&n) || n.outputs.empty() || !n.outputs[0] || n.inputs.empty() || !float_rank4(a, n.inputs[0])) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i]) return false;
  if (is_op(&n, "Conv") || is_onyx(&n, "FusedConv")) {
    if (n.inputs.size() < 2 || n.inputs.size() > 3 || !n.inputs[1] || !n.inputs[1]->initializer) return false;
    const Tensor* w = n.inputs[1]->initializer;
    if (w->dtype() != DataType::Float || w->dims().size() != 4) return false;
    return n.inputs.size() < 3 || !n.inputs[2] || n.inputs[2]->initializer;
  }
  return false;
}

// Whether a QLinearConv node runs channels-last: where its int8 kernel (which reads NHWC) applies.
bool qlinear_convertible(const Analysis& a, const Node& n) {
  if (!is_op(&n, "QLinearConv") || !a.def(&n) || a.opset(&n) < 10 || n.outputs.size() != 1 || !n.outputs[0] ||
      n.inputs.size() < 8 || n.inputs.size() > 9 || !n.inputs[0] || a.rank(n.inputs[0]) != 4)
    return false;
  std::vector<const Tensor*> values(n.inputs.size(), nullptr);
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (!n.inputs[i]) continue;
    if (!n.inputs[i]->initializer) return false;
    values[i] = n.inputs[i]->initializer;
  }
  const ops::KernelInit init{n, a.opset(&n), ops::AttributeView(n), {}, {}, nullptr, std::move(values)};
  return ops::QLinearConvPack::params(init).has_value();
}

// A pool that can run channels-last (one output, 2-D window).
bool pool_convertible(const Analysis& a, const Node& n) {
  if (!is_op(&n, "MaxPool") && !is_op(&n, "AveragePool")) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i]) return false;
  auto k = attr_ints(n, "kernel_shape");
  return k && k->size() == 2 && n.inputs.size() == 1 && float_rank4(a, n.inputs[0]);
}

void convert(PassContext& ctx, Node& n, const std::string& op) {
  Value* x = n.inputs[0];
  Value* y = n.outputs[0];
  Value& xt = new_value(ctx, x->name + "_nhwc");
  Value& yt = new_value(ctx, y->name + "_nhwc");
  std::vector<Value*> inputs = n.inputs;
  inputs[0] = &xt;
  std::vector<Attribute> attrs;
  for (const Attribute& at : n.attributes) attrs.push_back(copy_attribute(at));
  const std::string name = n.name;
  add_transpose(ctx, n, x, &xt, kToNhwc, name.empty() ? x->name : name);
  Node& m = ctx.replace_node(n, op, kOnyxDomain, inputs, {&yt}, name);
  m.attributes = std::move(attrs);
  add_transpose(ctx, m, &yt, y, kToNchw, name.empty() ? y->name : name);
}

// Elementwise ops of one input whose extra inputs (if any) are scalars: they commute with any Transpose. With
// per-tensor scales and zero points that includes QuantizeLinear and DequantizeLinear, which a quantized model has
// between every two layers.
bool layout_free_unary(const Analysis& a, const Node& n) {
  static const std::vector<std::string> ops = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                                               "Elu", "Clip", "Abs", "Neg", "Exp", "Sqrt", "Erf", "Identity",
                                               "QuantizeLinear", "DequantizeLinear"};
  if (!n.domain.empty() || std::find(ops.begin(), ops.end(), n.op_type) == ops.end()) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] && a.rank(n.inputs[i]) != 0) return false;
  return true;
}

bool broadcasting_op(const Analysis& a, const Node& n) {
  static const std::vector<std::string> binary = {"Add", "Sub", "Mul", "Div"}, variadic = {"Max", "Min", "Sum", "Mean"};
  if (!n.domain.empty()) return false;
  if (std::find(binary.begin(), binary.end(), n.op_type) != binary.end()) return a.opset(&n) >= 7;
  if (std::find(variadic.begin(), variadic.end(), n.op_type) != variadic.end()) return a.opset(&n) >= 8;
  return false;
}

// A constant of rank <= 4 as the NHWC operand that broadcasts like it did against NCHW: dims padded to rank 4 with
// leading 1s, then permuted (element order follows). Null when unknown or not a plain numeric tensor.
Value* permuted_constant(PassContext& ctx, const Value* v) {
  const Tensor* t = ctx.analysis().constant(v);
  if (!t || t->dims().size() > 4 || dtype_bits(t->dtype()) % 8 != 0 || t->element_count() > (1u << 20)) return nullptr;
  if (t->element_count() == 1 && t->dims().size() == 0) return const_cast<Value*>(v);
  std::vector<int64_t> d(4 - t->dims().size(), 1);
  d.insert(d.end(), t->dims().begin(), t->dims().end());
  Tensor out = ops::permute4(t->reshaped(d), {kToNhwc[0], kToNhwc[1], kToNhwc[2], kToNhwc[3]});
  return &ctx.add_initializer(v->name + "_nhwc", std::move(out));
}

Value& int64_constant(PassContext& ctx, const std::string& base, const std::vector<int64_t>& v) {
  Tensor t = Tensor::allocate(DataType::Int64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<int64_t>()[i] = v[i];
  return ctx.add_initializer(base, std::move(t));
}

// A Resize / Upsample parameter over the four NCHW axes (scales, sizes: 4 values; roi: 4 starts then 4 ends) in NHWC
// order; nullopt for another length.
std::optional<Tensor> to_nhwc_axes(const Tensor& t) {
  const uint64_t n = t.element_count();
  const size_t bytes = static_cast<size_t>(dtype_bits(t.dtype()) / 8);
  if ((n != 4 && n != 8) || bytes == 0 || t.dims().size() != 1 || dtype_bits(t.dtype()) % 8 != 0) return std::nullopt;
  Tensor out = Tensor::allocate(t.dtype(), t.dims());
  const uint8_t* src = reinterpret_cast<const uint8_t*>(t.bytes().data());
  uint8_t* dst = out.mutable_data<uint8_t>();
  for (uint64_t half = 0; half < n / 4; ++half)
    for (size_t j = 0; j < 4; ++j)
      std::memcpy(dst + (half * 4 + j) * bytes, src + (half * 4 + static_cast<size_t>(kToNhwc[j])) * bytes, bytes);
  return out;
}

// A channel shuffle over NCHW (ShuffleNet): Reshape [N, C, H, W] -> [N, g, C/g, H, W], Transpose [0, 2, 1, 3, 4],
// Reshape back to [N, C, H, W], reading a Transpose to NCHW. On the NHWC tensor the same shuffle is Reshape
// [N, H, W, g, C/g], Transpose [0, 1, 2, 4, 3], Reshape [N, H, W, C]: the conversion moves past it.
bool sink_channel_shuffle(PassContext& ctx, Node& n) {
  const Analysis& a = ctx.analysis();
  if (!is_op(&n, "Reshape") || a.opset(&n) < 5 || n.inputs.size() != 2) return false;
  Node* t = transpose_producer(n.inputs[0], kToNchw);
  auto in = a.static_dims(n.inputs[0]), mid = a.static_dims(n.outputs[0]);
  Node* tr = sole_reader(n.outputs[0]);
  if (!t || !in || !mid || in->size() != 4 || mid->size() != 5 || !is_op(tr, "Transpose")) return false;
  if (attr_ints(*tr, "perm") != std::vector<int64_t>{0, 2, 1, 3, 4} || !tr->outputs[0]) return false;
  Node* back = sole_reader(tr->outputs[0]);
  if (!is_op(back, "Reshape") || a.opset(back) < 5 || back->inputs.size() != 2 || !back->outputs[0]) return false;
  auto out = a.static_dims(back->outputs[0]);
  const auto& d = *in;
  const auto& m = *mid;
  if (!out || *out != d || m[0] != d[0] || m[1] * m[2] != d[1] || m[3] != d[2] || m[4] != d[3]) return false;
  Value* x = t->inputs[0];
  Value* y = back->outputs[0];
  const std::string name = n.name.empty() ? y->name : n.name;
  Value& split = int64_constant(ctx, name + "_nhwc_split", {d[0], d[2], d[3], m[1], m[2]});
  Value& merged = int64_constant(ctx, name + "_nhwc_merge", {d[0], d[2], d[3], d[1]});
  Value& v1 = new_value(ctx, name + "_nhwc_groups");
  Value& v2 = new_value(ctx, name + "_nhwc_shuffled");
  Value& v3 = new_value(ctx, y->name + "_nhwc");
  ctx.remove_node(*tr);
  ctx.remove_node(*back);
  Node& r1 = ctx.replace_node(n, "Reshape", "", {x, &split}, {&v1}, n.name);
  Node& shuffle = ctx.insert_node(r1, "Transpose", "", {&v1}, {&v2}, ctx.fresh_name(name + "_shuffle"));
  shuffle.attributes.push_back(make_attr_ints("perm", {0, 1, 2, 4, 3}));
  Node& r2 = ctx.insert_node(r1, "Reshape", "", {&v2, &merged}, {&v3}, ctx.fresh_name(name + "_merge"));
  add_transpose(ctx, r2, &v3, y, kToNchw, name);
  return true;
}

// Moves a Transpose to NCHW from the inputs of `n` to its output, rewriting `n` to work on NHWC tensors.
bool sink(PassContext& ctx, Node& n) {
  const Analysis& a = ctx.analysis();
  if (n.outputs.size() != 1 || !n.outputs[0] || n.inputs.empty() || !a.def(&n)) return false;
  if (is_op(&n, "Reshape")) return sink_channel_shuffle(ctx, n);
  std::vector<Value*> inputs = n.inputs;
  std::vector<Attribute> attrs;
  for (const Attribute& at : n.attributes) attrs.push_back(copy_attribute(at));
  std::string op = n.op_type, domain = n.domain;
  if (pool_convertible(a, n)) {
    Node* t = transpose_producer(n.inputs[0], kToNchw);
    if (!t) return false;  // pools convert inside channels-last regions only, not on their own
    inputs[0] = t->inputs[0];
    op = "Nhwc" + n.op_type;
    domain = kOnyxDomain;
  } else if ((is_op(&n, "GlobalAveragePool") || is_op(&n, "GlobalMaxPool")) && n.inputs.size() == 1) {
    // The window is the whole plane: the channels-last pool of that kernel when the plane's size is static, else a
    // mean or max over the NHWC tensor's H and W axes.
    Node* t = transpose_producer(n.inputs[0], kToNchw);
    auto d = a.static_dims(n.inputs[0]);
    if (!t || a.rank(n.inputs[0]) != 4 || a.dtype(n.inputs[0]) != DataType::Float) return false;
    inputs[0] = t->inputs[0];
    attrs.clear();
    if (d) {
      op = n.op_type == "GlobalAveragePool" ? "NhwcAveragePool" : "NhwcMaxPool";
      domain = kOnyxDomain;
      attrs.push_back(make_attr_ints("kernel_shape", {(*d)[2], (*d)[3]}));
    } else {
      op = n.op_type == "GlobalAveragePool" ? "ReduceMean" : "ReduceMax";
      domain = "";
      const int64_t opset = ctx.opset("");
      if (!standard_def(op.c_str(), opset)) return false;
      attrs.push_back(make_attr_int("keepdims", 1));
      const std::string name = n.name.empty() ? n.outputs[0]->name : n.name;
      if (opset >= 18) inputs.push_back(&int64_constant(ctx, name + "_nhwc_axes", {1, 2}));
      else attrs.push_back(make_attr_ints("axes", {1, 2}));
    }
  } else if (layout_free_unary(a, n)) {
    Node* t = transpose_producer(n.inputs[0], kToNchw);
    if (!t) return false;
    inputs[0] = t->inputs[0];
  } else if (is_onyx(&n, "QLinearAdd") && n.inputs.size() == 8) {
    // Elementwise on two same-shape tensors (its other inputs are scalars): both must come in NHWC.
    Node* ta = transpose_producer(n.inputs[0], kToNchw);
    Node* tb = transpose_producer(n.inputs[3], kToNchw);
    if (!ta || !tb) return false;
    inputs[0] = ta->inputs[0];
    inputs[3] = tb->inputs[0];
  } else if (broadcasting_op(a, n)) {
    if (a.rank(n.outputs[0]) != 4) return false;
    bool any = false;
    for (Value* v : inputs) any = any || transpose_producer(v, kToNchw);
    if (!any) return false;
    for (Value*& v : inputs) {
      if (!v) return false;
      if (Node* t = transpose_producer(v, kToNchw)) v = t->inputs[0];
      else if (!(v = permuted_constant(ctx, v))) return false;
    }
  } else if ((is_op(&n, "Resize") && a.opset(&n) >= 10) || (is_op(&n, "Upsample") && a.opset(&n) >= 9)) {
    // Each axis is resized on its own: on the NHWC tensor, with its constant roi / scales / sizes permuted alike.
    Node* t = transpose_producer(n.inputs[0], kToNchw);
    if (!t || a.rank(n.inputs[0]) != 4 || n.attribute("axes")) return false;
    inputs[0] = t->inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i) {
      if (!inputs[i]) continue;
      const Tensor* c = a.constant(inputs[i]);
      if (!c) return false;
      if (c->element_count() == 0) continue;
      std::optional<Tensor> permuted = to_nhwc_axes(*c);
      if (!permuted) return false;
      inputs[i] = &ctx.add_initializer(inputs[i]->name + "_nhwc", std::move(*permuted));
    }
  } else if (is_op(&n, "Concat")) {
    if (a.rank(n.outputs[0]) != 4) return false;
    auto axis = attr_int(n, "axis");
    if (!axis || *axis < -4 || *axis > 3) return false;
    // Constants join permuted (TFLite exports pad channels with a Concat of zeros).
    bool any = false;
    for (Value* v : inputs) any = any || transpose_producer(v, kToNchw);
    if (!any) return false;
    for (Value*& v : inputs) {
      if (!v || a.rank(v) != 4) return false;
      if (Node* t = transpose_producer(v, kToNchw)) v = t->inputs[0];
      else if (!(v = permuted_constant(ctx, v))) return false;
    }
    const int64_t k = *axis < 0 ? *axis + 4 : *axis;
    for (Attribute& at : attrs)
      if (at.name == "axis") at.i = kToNchw[k];
  } else if (is_op(&n, "BatchNormalization")) {
    // Inference form only: Y = X * s + t per channel, s = scale / sqrt(var + eps), t = B - mean * s.
    Node* t = transpose_producer(n.inputs[0], kToNchw);
    if (!t || n.inputs.size() != 5 || a.dtype(n.inputs[0]) != DataType::Float || !plain_inference_bn(a, n))
      return false;
    const Tensor* scale = n.inputs[1] ? a.constant(n.inputs[1]) : nullptr;
    if (!scale || scale->dims().size() != 1) return false;
    const int64_t C = scale->dims()[0];
    const std::optional<BnParams> p = bn_params(a, n, C);
    if (!p) return false;
    // As a depthwise 1x1 NhwcConv (weights s, bias t): one pass over the tensor, and an activation after it fuses
    // into the same pass (nhwc-conv-fusion).
    const std::string name = n.name;
    Value& wv = ctx.add_initializer(name.empty() ? "bn_scale" : name + "_scale", make_float_tensor(DataType::Float, {C, 1, 1, 1}, p->s));
    Value& tv = ctx.add_initializer(name.empty() ? "bn_shift" : name + "_shift", make_float_tensor(DataType::Float, {C}, p->shift));
    Value* y = n.outputs[0];
    Value& yt = new_value(ctx, y->name + "_nhwc");
    Value* x = t->inputs[0];
    Node& conv = ctx.replace_node(n, "NhwcConv", kOnyxDomain, {x, &wv, &tv}, {&yt}, name);
    conv.attributes.push_back(make_attr_int("group", C));
    conv.attributes.push_back(make_attr_ints("kernel_shape", {1, 1}));
    add_transpose(ctx, conv, &yt, y, kToNchw, name.empty() ? y->name : name);
    return true;
  } else {
    return false;
  }
  Value* y = n.outputs[0];
  Value& yt = new_value(ctx, y->name + "_nhwc");
  const std::string name = n.name;
  Node& m = ctx.replace_node(n, op, domain, inputs, {&yt}, name);
  m.attributes = std::move(attrs);
  add_transpose(ctx, m, &yt, y, kToNchw, name.empty() ? y->name : name);
  return true;
}

}  // namespace

bool to_channels_last(PassContext& ctx) {
  bool changed = false;
  const std::vector<Node*> order = ctx.node_order();
  {
    const Analysis& a = ctx.analysis();
    std::vector<std::pair<Node*, const char*>> todo;
    for (Node* n : order) {
      if (convertible(a, *n)) todo.emplace_back(n, "NhwcConv");
      else if (qlinear_convertible(a, *n)) todo.emplace_back(n, "NhwcQLinearConv");
    }
    for (auto [n, op] : todo) convert(ctx, *n, op);
    if (!todo.empty()) {
          changed = true;
    }
  }
  if (changed) return true;  // the next round sinks, with an analysis of the new nodes
  for (Node* n : order) {
    if (!ctx.alive(n)) continue;
    // A Transpose back to NHWC of a Transpose to NCHW: its readers read the NHWC tensor.
    if (is_op(n, "Transpose") && n->outputs.size() == 1 && n->outputs[0]) {
      auto p = attr_ints(*n, "perm");
      Node* inner = p && *p == kToNhwc ? transpose_producer(n->inputs[0], kToNchw) : nullptr;
      if (inner && ctx.can_substitute(n->outputs[0], inner->inputs[0])) {
        Value* from = n->outputs[0];
        ctx.remove_node(*n);
        ctx.substitute(from, inner->inputs[0]);
        changed = true;
      }
      continue;
    }
    // One sweep in graph order carries a Transpose down a whole chain: each rewrite leaves it in front of the
    // next reader, which comes later in the order (the analysis of the original values still holds).
    changed |= sink(ctx, *n);
  }
  return changed;
}

}  // namespace onyx::opt
