// QDQ fusion: the forms static quantization tools write for int8 products,
//   DequantizeLinear(xq) -> Conv(., DequantizeLinear(Wq), B?) [-> Relu] -> QuantizeLinear -> yq
//   DequantizeLinear(aq) -> MatMul(., DequantizeLinear(Bq)) -> QuantizeLinear -> yq
// become QLinearConv(xq, x_scale, x_zero, Wq, w_scale, w_zero, y_scale, y_zero, B_int32) and
// QLinearMatMul(aq, a_scale, a_zero, Bq, b_scale, b_zero, y_scale, y_zero), and a residual sum
//   DequantizeLinear(aq), DequantizeLinear(bq) -> Add -> [Relu] -> QuantizeLinear
// becomes ai.onyx QLinearAdd (per tensor, same shapes; bit-identical to the nodes). The products of the 8-bit values
// accumulate exactly in int32 (VNNI) instead of float32 products of dequantized copies, and consecutive layers
// pass uint8/int8 tensors with no DequantizeLinear/QuantizeLinear pass between them. The float graph rounds its
// products; the integer one does not, so an output may differ by one quantization step (ONNX Runtime makes the
// same substitution). Conditions: activations per tensor, weights per tensor or per output channel (Conv: axis 0;
// MatMul: a 2-D B, per column), constant scales and zero points, 8-bit types; grouped and depthwise Convs only
// with int8 weights of zero point 0 (QLinearConv's oneDNN int8 kernel; its other path runs one small product per
// group, slower than the float depthwise kernel); a float bias is quantized to int32 with scale x_scale * w_scale (a bias that is
// already DequantizeLinear(int32) at that scale is taken as it is); a Relu only where y's zero point is its type's
// minimum (then saturation is the Relu). It runs before constant folding, which would turn DequantizeLinear(Wq)
// into a float weight.
#include <cmath>
#include <limits>

#include "ops/op_kit.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

using ops::Dims;

bool is_8bit(DataType t) { return t == DataType::UInt8 || t == DataType::Int8; }

// A (De)QuantizeLinear node whose scale (and zero point, if any) are constants without blocks; its scale values.
const Tensor* constant_scale(const Analysis& a, const Node& n) {
  if (!a.def(&n) || n.inputs.size() < 2 || !n.inputs[0] || !n.inputs[1] || n.outputs.size() != 1 || !n.outputs[0])
    return nullptr;
  if (attr_int(n, "block_size").value_or(0) != 0) return nullptr;
  if (const Attribute* p = n.attribute("precision"); p && attr_int(n, "precision").value_or(1) != 1) return nullptr;
  const Tensor* s = a.constant(n.inputs[1]);
  if (!s || s->dtype() != DataType::Float) return nullptr;
  if (n.inputs.size() > 2 && n.inputs[2] && !a.constant(n.inputs[2])) return nullptr;
  return s;
}

// The zero point input of a (De)QuantizeLinear (null when absent).
const Tensor* zero_point(const Analysis& a, const Node& n) {
  return n.inputs.size() > 2 && n.inputs[2] ? a.constant(n.inputs[2]) : nullptr;
}

// A per-tensor parameter: one element.
bool scalar(const Tensor* t) { return t && t->element_count() == 1; }

// The Conv form.
bool fuse_qdq_at(PassContext& ctx, Node& conv) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&conv) || conv.inputs.size() < 2 || conv.outputs.size() != 1 || !conv.outputs[0] || ctx.opset("") < 10)
    return false;
  const bool grouped = attr_int(conv, "group").value_or(1) != 1;
  Node* dqx = producer_of(conv, 0);
  Node* dqw = producer_of(conv, 1);
  if (!is_op(dqx, "DequantizeLinear") || !is_op(dqw, "DequantizeLinear")) return false;
  const Tensor* xs = constant_scale(a, *dqx);
  const Tensor* ws = constant_scale(a, *dqw);
  const Tensor* wq = ws ? a.constant(dqw->inputs[0]) : nullptr;
  if (!scalar(xs) || !ws || !wq || !is_8bit(a.dtype(dqx->inputs[0])) || !is_8bit(wq->dtype()) || wq->dims().size() < 3 ||
      a.dtype(dqx->outputs[0]) != DataType::Float || a.dtype(dqw->outputs[0]) != DataType::Float)
    return false;
  const int64_t OC = wq->dims()[0];
  const Tensor* wz = zero_point(a, *dqw);
  const bool per_channel = ws->element_count() != 1;
  if (per_channel) {
    const int64_t axis = attr_int(*dqw, "axis").value_or(1);
    if (a.opset(dqw) < 13 || !(axis == 0 || axis == -static_cast<int64_t>(wq->dims().size())) || ws->dims() != Dims{OC} ||
        (wz && wz->dims() != Dims{OC}))
      return false;
  } else if (wz && !scalar(wz)) {
    return false;
  }
  // Grouped (depthwise) convolutions only with int8 weights of zero point 0, which oneDNN's int8 kernels take;
  // otherwise QLinearConv's integer path runs one small product per group, slower than the float depthwise kernel.
  if (grouped) {
    if (wq->dtype() != DataType::Int8) return false;
    if (wz)
      for (int64_t z : ops::read_ints(*wz))
        if (z != 0) return false;
  }
  // Conv -> [Relu] -> QuantizeLinear, each the sole reader.
  Node* next = sole_reader(conv.outputs[0]);
  Node* relu = nullptr;
  if (is_op(next, "Relu")) {
    relu = next;
    next = relu->outputs.size() == 1 && relu->outputs[0] ? sole_reader(relu->outputs[0]) : nullptr;
  }
  if (!is_op(next, "QuantizeLinear")) return false;
  Node& q = *next;
  const Tensor* ys = constant_scale(a, q);
  const DataType yt = a.dtype(q.outputs[0]);
  if (!scalar(ys) || !is_8bit(yt) || (relu ? relu->outputs[0] : conv.outputs[0]) != q.inputs[0]) return false;
  const Tensor* yz = zero_point(a, q);
  if (yz && !scalar(yz)) return false;
  const int64_t y_zero = yz ? ops::read_ints(*yz)[0] : 0;
  if (relu && y_zero != (yt == DataType::UInt8 ? 0 : -128)) return false;
  const Tensor* xz = zero_point(a, *dqx);
  if (xz && !scalar(xz)) return false;

  // The bias as int32 at scale x_scale * w_scale[oc].
  const double x_scale = ops::read_doubles(*xs)[0];
  const std::vector<double> w_scales = ops::read_doubles(*ws);
  std::optional<std::vector<int64_t>> bias;
  if (conv.inputs.size() > 2 && conv.inputs[2]) {
    Node* dqb = producer_of(conv, 2);
    const Tensor* bq = is_op(dqb, "DequantizeLinear") ? a.constant(dqb->inputs[0]) : nullptr;
    const Tensor* bs = bq ? constant_scale(a, *dqb) : nullptr;
    const Tensor* bz = bs ? zero_point(a, *dqb) : nullptr;
    if (bq && bs && bq->dtype() == DataType::Int32 && bq->dims() == Dims{OC} &&
        (bs->element_count() == 1 || bs->dims() == Dims{OC}) && (!bz || ops::read_ints(*bz) == std::vector<int64_t>(bz->element_count(), 0))) {
      const std::vector<double> b_scales = ops::read_doubles(*bs);
      bool same = true;
      for (int64_t c = 0; c < OC && same; ++c) {
        const double want = x_scale * w_scales[per_channel ? static_cast<size_t>(c) : 0];
        same = std::fabs(b_scales[b_scales.size() == 1 ? 0 : static_cast<size_t>(c)] - want) <= 1e-6 * std::fabs(want);
      }
      if (same) bias = ops::read_ints(*bq);
    }
    if (!bias) {
      const Tensor* bf = a.constant(conv.inputs[2]);
      if (!bf || bf->dtype() != DataType::Float || bf->dims() != Dims{OC}) return false;
      const std::vector<double> b = ops::read_doubles(*bf);
      std::vector<int64_t> out(static_cast<size_t>(OC));
      for (int64_t c = 0; c < OC; ++c) {
        const double step = x_scale * w_scales[per_channel ? static_cast<size_t>(c) : 0];
        const double v = step > 0 ? std::nearbyint(b[static_cast<size_t>(c)] / step) : 0;
        if (!(std::fabs(v) < 2147483647.0)) return false;
        out[static_cast<size_t>(c)] = static_cast<int64_t>(v);
      }
      bias = std::move(out);
    }
  }

  // Absent zero points become explicit zeros of their tensor's type (QLinearConv takes them all).
  auto zeros = [&](const char* base, DataType t, Dims dims) -> Value* {
    return &ctx.add_initializer(cat(conv.name.empty() ? "qlinear_conv" : conv.name, "_", base), Tensor::allocate(t, std::move(dims)));
  };
  Value* xz_v = dqx->inputs.size() > 2 && dqx->inputs[2] ? dqx->inputs[2] : zeros("x_zero_point", a.dtype(dqx->inputs[0]), {});
  Value* wz_v = dqw->inputs.size() > 2 && dqw->inputs[2] ? dqw->inputs[2] : zeros("w_zero_point", wq->dtype(), {});
  Value* yz_v = q.inputs.size() > 2 && q.inputs[2] ? q.inputs[2] : zeros("y_zero_point", yt, {});
  std::vector<Value*> inputs{dqx->inputs[0], dqx->inputs[1], xz_v, dqw->inputs[0], dqw->inputs[1], wz_v, q.inputs[1], yz_v};
  if (bias) {
    Tensor b = Tensor::allocate(DataType::Int32, {OC});
    for (int64_t c = 0; c < OC; ++c) b.mutable_data<int32_t>()[c] = static_cast<int32_t>((*bias)[static_cast<size_t>(c)]);
    inputs.push_back(&ctx.add_initializer(cat(conv.name.empty() ? "qlinear_conv" : conv.name, "_bias"), std::move(b)));
  }
  std::vector<Attribute> attrs;
  for (const Attribute& at : conv.attributes) attrs.push_back(copy_attribute(at));
  const std::string name = conv.name.empty() ? q.name : conv.name;
  Value* out = q.outputs[0];
  if (relu) ctx.remove_node(*relu);
  ctx.remove_node(conv);
  Node& fused = ctx.replace_node(q, "QLinearConv", "", inputs, {out}, name);
  fused.attributes = std::move(attrs);
  return true;
}

// DequantizeLinear(aq) -> MatMul(., DequantizeLinear(Bq)) -> QuantizeLinear, B 2-D and constant.
bool fuse_matmul_at(PassContext& ctx, Node& mm) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&mm) || mm.inputs.size() != 2 || mm.outputs.size() != 1 || !mm.outputs[0] || ctx.opset("") < 10)
    return false;
  Node* dqa = producer_of(mm, 0);
  Node* dqb = producer_of(mm, 1);
  if (!is_op(dqa, "DequantizeLinear") || !is_op(dqb, "DequantizeLinear")) return false;
  const Tensor* as = constant_scale(a, *dqa);
  const Tensor* bs = constant_scale(a, *dqb);
  const Tensor* bq = bs ? a.constant(dqb->inputs[0]) : nullptr;
  if (!scalar(as) || !bs || !bq || !is_8bit(a.dtype(dqa->inputs[0])) || !is_8bit(bq->dtype()) || bq->dims().size() != 2 ||
      a.rank(dqa->inputs[0]) < 2 || a.dtype(dqa->outputs[0]) != DataType::Float || a.dtype(dqb->outputs[0]) != DataType::Float)
    return false;
  const int64_t N = bq->dims()[1];
  const Tensor* bz = zero_point(a, *dqb);
  if (bs->element_count() != 1) {
    const int64_t axis = attr_int(*dqb, "axis").value_or(1);
    if (a.opset(dqb) < 13 || !(axis == 1 || axis == -1) || bs->dims() != Dims{N} || (bz && bz->dims() != Dims{N}))
      return false;
  } else if (bz && !scalar(bz)) {
    return false;
  }
  const Tensor* az = zero_point(a, *dqa);
  if (az && !scalar(az)) return false;
  Node* q = sole_reader(mm.outputs[0]);
  if (!is_op(q, "QuantizeLinear") || q->inputs[0] != mm.outputs[0]) return false;
  const Tensor* ys = constant_scale(a, *q);
  const DataType yt = a.dtype(q->outputs[0]);
  const Tensor* yz = zero_point(a, *q);
  if (!scalar(ys) || !is_8bit(yt) || (yz && !scalar(yz))) return false;
  auto zeros = [&](const char* base, DataType t) -> Value* {
    return &ctx.add_initializer(cat(mm.name.empty() ? "qlinear_matmul" : mm.name, "_", base), Tensor::allocate(t, {}));
  };
  Value* az_v = dqa->inputs.size() > 2 && dqa->inputs[2] ? dqa->inputs[2] : zeros("a_zero_point", a.dtype(dqa->inputs[0]));
  Value* bz_v = dqb->inputs.size() > 2 && dqb->inputs[2] ? dqb->inputs[2] : zeros("b_zero_point", bq->dtype());
  Value* yz_v = q->inputs.size() > 2 && q->inputs[2] ? q->inputs[2] : zeros("y_zero_point", yt);
  const std::vector<Value*> inputs{dqa->inputs[0], dqa->inputs[1], az_v, dqb->inputs[0], dqb->inputs[1], bz_v,
                                   q->inputs[1], yz_v};
  const std::string name = mm.name.empty() ? q->name : mm.name;
  Value* out = q->outputs[0];
  ctx.remove_node(mm);
  ctx.replace_node(*q, "QLinearMatMul", "", inputs, {out}, name);
  return true;
}

// DequantizeLinear(a), DequantizeLinear(b) -> Add -> [Relu] -> QuantizeLinear, all per tensor, a and b of one
// static shape: a residual sum of a quantized network, as ai.onyx QLinearAdd (bit-identical: the same float steps).
bool fuse_add_at(PassContext& ctx, Node& add) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&add) || add.inputs.size() != 2 || add.outputs.size() != 1 || !add.outputs[0] || a.opset(&add) < 7)
    return false;
  Node* dqa = producer_of(add, 0);
  Node* dqb = producer_of(add, 1);
  if (!is_op(dqa, "DequantizeLinear") || !is_op(dqb, "DequantizeLinear")) return false;
  for (Node* dq : {dqa, dqb}) {
    if (!scalar(constant_scale(a, *dq)) || !is_8bit(a.dtype(dq->inputs[0])) || a.dtype(dq->outputs[0]) != DataType::Float)
      return false;
    const Tensor* z = zero_point(a, *dq);
    if (z && !scalar(z)) return false;
  }
  const auto da = a.static_dims(add.inputs[0]), db = a.static_dims(add.inputs[1]);
  if (!da || !db || *da != *db) return false;
  Node* next = sole_reader(add.outputs[0]);
  Node* relu = nullptr;
  if (is_op(next, "Relu")) {
    relu = next;
    next = relu->outputs.size() == 1 && relu->outputs[0] ? sole_reader(relu->outputs[0]) : nullptr;
  }
  if (!is_op(next, "QuantizeLinear") || next->inputs[0] != (relu ? relu->outputs[0] : add.outputs[0])) return false;
  Node& q = *next;
  const DataType yt = a.dtype(q.outputs[0]);
  const Tensor* yz = zero_point(a, q);
  if (!scalar(constant_scale(a, q)) || !is_8bit(yt) || (yz && !scalar(yz))) return false;
  const std::string name = add.name.empty() ? q.name : add.name;
  auto zero_of = [&](Node& n, DataType t, const char* base) -> Value* {
    if (n.inputs.size() > 2 && n.inputs[2]) return n.inputs[2];
    return &ctx.add_initializer(cat(name.empty() ? "qlinear_add" : name, "_", base), Tensor::allocate(t, {}));
  };
  const std::vector<Value*> inputs{dqa->inputs[0], dqa->inputs[1], zero_of(*dqa, a.dtype(dqa->inputs[0]), "a_zero_point"),
                                   dqb->inputs[0], dqb->inputs[1], zero_of(*dqb, a.dtype(dqb->inputs[0]), "b_zero_point"),
                                   q.inputs[1], zero_of(q, yt, "c_zero_point")};
  Value* out = q.outputs[0];
  if (relu) ctx.remove_node(*relu);
  ctx.remove_node(add);
  Node& fused = ctx.replace_node(q, "QLinearAdd", kOnyxDomain, inputs, {out}, name);
  fused.attributes.push_back(make_attr_int("relu", relu ? 1 : 0));
  return true;
}

}  // namespace

bool fuse_qdq(PassContext& ctx) {
  bool changed = false;
  const std::vector<Node*> order = ctx.node_order();
  for (Node* n : order) {
    if (!ctx.alive(n)) continue;
    if (is_op(n, "Conv")) changed |= fuse_qdq_at(ctx, *n);
    else if (is_op(n, "MatMul")) changed |= fuse_matmul_at(ctx, *n);
    else if (is_op(n, "Add")) changed |= fuse_add_at(ctx, *n);
  }
  return changed;
}

}  // namespace onyx::opt
