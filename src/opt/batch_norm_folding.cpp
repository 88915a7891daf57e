// BatchNormalization folding (inference mode) into the Conv, Gemm or MatMul before it, when that node's result
// has no other reader and its weights are constant. With s = scale / sqrt(var + epsilon) per output channel:
//   Conv:   W' = W * s (per output channel), B' = (B - mean) * s + bias
//   Gemm:   B' = B * s (per column), C' = (beta * C - mean) * s + bias, beta = 1 (C: absent, scalar or [N])
//   MatMul: 2-D, becomes Gemm(A, W * s, -mean * s + bias)
// The new weights are new initializers; the model's own tensors are left as they are.
#include <algorithm>
#include <cmath>

#include "ops/op_kit.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {

// The BN's per-channel affine form, when its parameters are constant with `channels` values each.
std::optional<BnParams> bn_params(const Analysis& a, const Node& bn, int64_t channels) {
  if (bn.inputs.size() != 5) return std::nullopt;
  std::vector<std::vector<double>> p;
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* t = a.constant(bn.inputs[i]);
    if (!t || !is_float_type(t->dtype()) || static_cast<int64_t>(t->element_count()) != channels) return std::nullopt;
    p.push_back(ops::read_doubles(*t));
  }
  const double eps = attr_float(bn, "epsilon").value_or(1e-5f);
  BnParams r;
  for (int64_t c = 0; c < channels; ++c) {
    const double var = p[3][c] + eps;
    if (!(var > 0)) return std::nullopt;
    const double s = p[0][c] / std::sqrt(var);
    r.s.push_back(s);
    r.shift.push_back(p[1][c] - p[2][c] * s);
  }
  return r;
}

// Inference mode, only Y wanted, per-channel parameters.
bool plain_inference_bn(const Analysis& a, const Node& bn) {
  if (!a.def(&bn) || bn.outputs.empty() || !bn.outputs[0] || !bn.inputs[0]) return false;
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (bn.outputs[i]) return false;
  if (attr_int(bn, "training_mode").value_or(0) != 0) return false;
  if (attr_int(bn, "spatial").value_or(1) != 1) return false;
  return true;
}

namespace {

bool fold_into_conv(PassContext& ctx, Node& bn, Node& conv) {
  const Analysis& a = ctx.analysis();
  if (conv.inputs.size() < 2 || !a.def(&conv)) return false;
  const Tensor* w = a.constant(conv.inputs[1]);
  const Tensor* b = conv.inputs.size() > 2 && conv.inputs[2] ? a.constant(conv.inputs[2]) : nullptr;
  if (!w || !is_float_type(w->dtype()) || w->dims().size() < 3) return false;
  if (conv.inputs.size() > 2 && conv.inputs[2] && !b) return false;
  const int64_t m = w->dims()[0];
  if (m <= 0 || (b && static_cast<int64_t>(b->element_count()) != m)) return false;
  auto p = bn_params(a, bn, m);
  if (!p) return false;
  const size_t per = static_cast<size_t>(w->element_count()) / static_cast<size_t>(m);
  std::vector<double> bv = b ? ops::read_doubles(*b) : std::vector<double>(static_cast<size_t>(m), 0.0);
  for (size_t c = 0; c < bv.size(); ++c) bv[c] = bv[c] * p->s[c] + p->shift[c];
  Value& nw = ctx.add_initializer(conv.inputs[1]->name + "_bn", scaled_along_axis(*w, p->s, per));
  Value& nb = ctx.add_initializer(bn.outputs[0]->name + "_bias", make_float_tensor(w->dtype(), {m}, bv));
  Value* y = bn.outputs[0];
  ctx.remove_node(bn);
  ctx.set_input(conv, 1, &nw);
  if (conv.inputs.size() < 3) conv.inputs.resize(3, nullptr);
  ctx.set_input(conv, 2, &nb);
  ctx.set_output(conv, 0, y);
  return true;
}

// Gemm(A, B, C) or 2-D MatMul(A, B) followed by BN over its columns.
bool fold_into_gemm(PassContext& ctx, Node& bn, Node& mm) {
  const Analysis& a = ctx.analysis();
  const bool is_gemm = mm.op_type == "Gemm";
  if (!a.def(&mm) || mm.inputs.size() < 2 || !mm.inputs[0] || !mm.inputs[1]) return false;
  const Tensor* w = a.constant(mm.inputs[1]);
  if (!w || !is_float_type(w->dtype()) || w->dims().size() != 2) return false;
  if (!is_gemm && (a.rank(mm.inputs[0]) != 2 || !gemm_allows(ctx.opset(""), w->dtype()))) return false;
  const bool trans_b = is_gemm && attr_int(mm, "transB").value_or(0) != 0;
  const int64_t n = trans_b ? w->dims()[0] : w->dims()[1];
  if (n <= 0) return false;
  auto p = bn_params(a, bn, n);
  if (!p) return false;
  std::vector<double> c(static_cast<size_t>(n), 0.0);
  if (is_gemm && mm.inputs.size() > 2 && mm.inputs[2]) {
    const Tensor* ct = a.constant(mm.inputs[2]);
    if (!ct || !is_float_type(ct->dtype())) return false;
    const auto& cd = ct->dims();
    const bool scalar = ct->element_count() == 1;
    const bool row = (cd.size() == 1 && cd[0] == n) || (cd.size() == 2 && cd[0] == 1 && cd[1] == n);
    if (!scalar && !row) return false;
    std::vector<double> cv = ops::read_doubles(*ct);
    const double beta = attr_float(mm, "beta").value_or(1.0f);
    for (size_t j = 0; j < c.size(); ++j) c[j] = beta * cv[scalar ? 0 : j];
  }
  if (is_gemm && a.opset(&mm) < 7) return false;
  for (size_t j = 0; j < c.size(); ++j) c[j] = c[j] * p->s[j] + p->shift[j];
  // B's rows (transposed) or columns meet the normalized outputs.
  Value& nw = ctx.add_initializer(mm.inputs[1]->name + "_bn",
                                  scaled_along_axis(*w, p->s, trans_b ? static_cast<size_t>(w->dims()[1]) : 1));
  Value& nc = ctx.add_initializer(bn.outputs[0]->name + "_bias", make_float_tensor(w->dtype(), {n}, c));
  Value* y = bn.outputs[0];
  if (is_gemm) {
    ctx.remove_node(bn);
    ctx.set_input(mm, 1, &nw);
    if (mm.inputs.size() < 3) mm.inputs.resize(3, nullptr);
    ctx.set_input(mm, 2, &nc);
    mm.attributes.erase(std::remove_if(mm.attributes.begin(), mm.attributes.end(),
                                       [](const Attribute& at) { return at.name == "beta"; }),
                        mm.attributes.end());
    ctx.set_output(mm, 0, y);
  } else {
    Value* x = mm.inputs[0];
    std::string name = mm.name.empty() ? std::string() : mm.name + "_bn";
    ctx.remove_node(bn);
    ctx.insert_node(mm, "Gemm", "", {x, &nw, &nc}, {y}, name);
    ctx.remove_node(mm);
  }
  return true;
}

}  // namespace

bool fold_batch_norm(PassContext& ctx) {
  bool changed = false;
  const std::vector<Node*> order = ctx.node_order();
  for (Node* bn : order) {
    if (!ctx.alive(bn) || !is_op(bn, "BatchNormalization") || !plain_inference_bn(ctx.analysis(), *bn)) continue;
    Node* p = bn->inputs[0]->producer;
    if (!p || sole_reader(bn->inputs[0]) != bn || p->graph != &ctx.graph || p->outputs.size() != 1) continue;
    if (ctx.analysis().dtype(bn->inputs[0]) != ctx.analysis().dtype(bn->outputs[0])) continue;
    if (is_op(p, "Conv")) changed |= fold_into_conv(ctx, *bn, *p);
    else if (is_op(p, "Gemm") || is_op(p, "MatMul")) changed |= fold_into_gemm(ctx, *bn, *p);
  }
  return changed;
}

}  // namespace onyx::opt
