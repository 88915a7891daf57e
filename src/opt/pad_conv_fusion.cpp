// Pad + Conv -> Conv with wider pads. Exporters from frameworks whose convolutions pad asymmetrically or only in
// "SAME"/"VALID" terms (TensorFlow through tf2onnx, for strided depthwise blocks) write a separate zero Pad before
// the Conv; run as written, the Pad copies the whole tensor, and in a channels-last region it also stops the layout
// conversions from cancelling. A Conv (or FusedConv) reading, as X, the output of a constant-mode Pad with constant,
// non-negative pads on the spatial axes only and a zero pad value reads the Pad's input instead, its own pads
// increased by the Pad's. The Pad stays for any other reader; dead code drops it when none is left.
#include "ops/op_kit.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// The Pad's pads as [begin_0.., end_0..] for all `rank` axes when it pads with zeros in constant mode, every pad is
// a known constant, and none is negative; else nullopt.
std::optional<std::vector<int64_t>> zero_pads(const Analysis& a, const Node& pad, int64_t rank) {
  if (rank < 0 || !a.def(&pad) || pad.outputs.size() != 1) return std::nullopt;
  const Attribute* mode = pad.attribute("mode");
  if (mode && (mode->type != AttributeType::String || mode->s != "constant")) return std::nullopt;
  const int64_t opset = a.opset(&pad);
  std::vector<int64_t> pads;
  double value = 0;
  if (opset < 11) {
    auto p = attr_ints(pad, "pads");
    if (!p) return std::nullopt;
    pads = *p;
    if (pad.attribute("value")) {
      auto v = attr_float(pad, "value");
      if (!v) return std::nullopt;
      value = *v;
    }
  } else {
    if (pad.inputs.size() < 2 || !pad.inputs[1]) return std::nullopt;
    const Tensor* p = a.constant(pad.inputs[1]);
    if (!p || p->dtype() != DataType::Int64) return std::nullopt;
    pads = ops::read_ints(*p);
    if (pad.inputs.size() > 2 && pad.inputs[2]) {
      auto v = scalar_value(a.constant(pad.inputs[2]));
      if (!v) return std::nullopt;
      value = *v;
    }
    if (pad.inputs.size() > 3 && pad.inputs[3]) {  // axes (opset 18): pads name only these axes
      const Tensor* ax = a.constant(pad.inputs[3]);
      if (!ax) return std::nullopt;
      const std::vector<int64_t> axes = ops::read_ints(*ax);
      if (pads.size() != 2 * axes.size()) return std::nullopt;
      std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (axis < 0 || axis >= rank || full[static_cast<size_t>(axis)] || full[static_cast<size_t>(axis + rank)])
          return std::nullopt;
        full[static_cast<size_t>(axis)] = pads[i];
        full[static_cast<size_t>(axis + rank)] = pads[i + axes.size()];
      }
      pads = full;
    }
  }
  if (value != 0 || pads.size() != static_cast<size_t>(2 * rank)) return std::nullopt;
  for (int64_t p : pads)
    if (p < 0) return std::nullopt;
  return pads;
}

bool is_conv(const Node* n) {
  return n && n->outputs.size() >= 1 &&
         ((n->domain.empty() && n->op_type == "Conv") || (n->domain == kOnyxDomain && n->op_type == "FusedConv"));
}

bool fuse_pad_conv_at(PassContext& ctx, Node& pad) {
  const Analysis& a = ctx.analysis();
  if (pad.inputs.empty() || !pad.inputs[0] || pad.outputs.size() != 1 || !pad.outputs[0]) return false;
  Value* x = pad.inputs[0];
  Value* padded = pad.outputs[0];
  const int64_t rank = a.rank(x);
  if (rank < 3) return false;
  auto pads = zero_pads(a, pad, rank);
  if (!pads || (*pads)[0] || (*pads)[1] || (*pads)[rank] || (*pads)[rank + 1]) return false;  // batch, channels
  const size_t nd = static_cast<size_t>(rank - 2);
  bool changed = false;
  const std::vector<Node*> readers = padded->consumers;
  for (Node* conv : readers) {
    if (!ctx.alive(conv) || conv->graph != &ctx.graph || !is_conv(conv) || !a.def(conv) || conv->inputs.empty() ||
        conv->inputs[0] != padded)
      continue;
    bool other_use = false;  // the padded tensor as the weights or bias too: leave it
    for (size_t i = 1; i < conv->inputs.size(); ++i) other_use |= conv->inputs[i] == padded;
    if (other_use) continue;
    const Attribute* auto_pad = conv->attribute("auto_pad");
    const bool valid = auto_pad && auto_pad->type == AttributeType::String && auto_pad->s == "VALID";
    if (auto_pad && !valid && (auto_pad->type != AttributeType::String || auto_pad->s != "NOTSET")) continue;
    std::vector<int64_t> conv_pads(2 * nd, 0);
    if (!valid && conv->attribute("pads")) {
      auto p = attr_ints(*conv, "pads");
      if (!p || p->size() != 2 * nd) continue;
      conv_pads = *p;
    }
    for (size_t i = 0; i < nd; ++i) {
      conv_pads[i] += (*pads)[2 + i];
      conv_pads[nd + i] += (*pads)[static_cast<size_t>(rank) + 2 + i];
    }
    std::vector<Attribute> attrs;
    for (const Attribute& at : conv->attributes)
      if (at.name != "pads" && at.name != "auto_pad") attrs.push_back(copy_attribute(at));
    attrs.push_back(make_attr_ints("pads", conv_pads));
    conv->attributes = std::move(attrs);
    ctx.set_input(*conv, 0, x);
    changed = true;
  }
  return changed;
}

}  // namespace

bool fuse_pad_into_conv(PassContext& ctx) {
  return for_each_op(ctx, "Pad", [&](Node& n) { return fuse_pad_conv_at(ctx, n); });
}

}  // namespace onyx::opt
