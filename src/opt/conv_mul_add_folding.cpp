// Conv (or a channels-last ai.onyx NhwcConv without fused epilogue) followed by a per-channel constant Mul or Add
// (Caffe2 exports write BatchNormalization's affine part this way): the Mul scales W and B per output channel, the
// Add shifts B. The constant must vary at most along the channel axis of the Conv's result (axis 1, or the last
// axis for NhwcConv; dims of 1 elsewhere), so the fold cannot change its shape. New weights are new initializers.
#include "ops/op_kit.hpp"
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// Per-channel values of constant `c` broadcast against a result of rank `rank` whose channels are on axis `axis`
// ([N, channels, spatial...]: 1; channels-last: rank - 1).
std::optional<std::vector<double>> per_channel(const Tensor* c, int64_t channels, int64_t rank, int64_t axis) {
  if (!c || !is_float_type(c->dtype())) return std::nullopt;
  const auto& d = c->dims();
  if (static_cast<int64_t>(d.size()) > rank) return std::nullopt;
  const int64_t channel_axis = static_cast<int64_t>(d.size()) - (rank - axis);  // the result's axis, in c's dims
  for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i)
    if (d[static_cast<size_t>(i)] != 1 && !(i == channel_axis && d[static_cast<size_t>(i)] == channels)) return std::nullopt;
  std::vector<double> v = ops::read_doubles(*c);
  if (v.size() == 1) return std::vector<double>(static_cast<size_t>(channels), v[0]);
  if (static_cast<int64_t>(v.size()) != channels) return std::nullopt;
  return v;
}

// An NhwcConv whose result is the convolution plus bias only (no residual sum, no activation).
bool plain_nhwc_conv(const Node* n) {
  return n && n->domain == kOnyxDomain && n->op_type == "NhwcConv" && n->inputs.size() <= 3 && !n->attribute("activation");
}

bool fold_one(PassContext& ctx, Node& op) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&op) || op.inputs.size() != 2 || !op.outputs[0]) return false;
  Node* conv = nullptr;
  Value* c = nullptr;
  for (size_t i = 0; i < 2 && !conv; ++i) {
    Value* in = op.inputs[i];
    if (in && (is_op(in->producer, "Conv") || plain_nhwc_conv(in->producer)) && sole_reader(in) == &op &&
        in->producer->outputs.size() == 1) {
      conv = in->producer;
      c = op.inputs[1 - i];
    }
  }
  if (!conv || !a.def(conv) || conv->inputs.size() < 2 || c == conv->outputs[0]) return false;
  const Tensor* w = a.constant(conv->inputs[1]);
  const bool has_bias = conv->inputs.size() > 2 && conv->inputs[2];
  const Tensor* b = has_bias ? a.constant(conv->inputs[2]) : nullptr;
  if (!w || !is_float_type(w->dtype()) || w->dims().size() < 3 || (has_bias && !b)) return false;
  const DataType dt = w->dtype();
  if (a.dtype(op.outputs[0]) != dt || a.dtype(conv->outputs[0]) != dt) return false;
  const int64_t m = w->dims()[0];
  const int64_t rank = static_cast<int64_t>(w->dims().size());
  auto v = per_channel(a.constant(c), m, rank, conv->domain == kOnyxDomain ? rank - 1 : 1);
  if (!v || m <= 0 || (b && static_cast<int64_t>(b->element_count()) != m)) return false;

  std::vector<double> bv = b ? ops::read_doubles(*b) : std::vector<double>(static_cast<size_t>(m), 0.0);
  const bool scale = op.op_type == "Mul";
  Value* nw = conv->inputs[1];
  if (scale) {
    const size_t per = static_cast<size_t>(w->element_count()) / static_cast<size_t>(m);
    nw = &ctx.add_initializer(conv->inputs[1]->name + "_scaled", scaled_along_axis(*w, *v, per));
  }
  for (size_t k = 0; k < bv.size(); ++k) bv[k] = scale ? bv[k] * (*v)[k] : bv[k] + (*v)[k];
  Value& nb = ctx.add_initializer(op.outputs[0]->name + "_bias", make_float_tensor(dt, {m}, bv));
  Value* y = op.outputs[0];
  ctx.remove_node(op);
  ctx.set_input(*conv, 1, nw);
  if (conv->inputs.size() < 3) conv->inputs.resize(3, nullptr);
  ctx.set_input(*conv, 2, &nb);
  ctx.set_output(*conv, 0, y);
  return true;
}

}  // namespace

bool fold_conv_mul_add(PassContext& ctx) {
  return for_each_op(
      ctx, [](const Node& n) { return is_op(&n, "Mul") || is_op(&n, "Add"); }, [&](Node& n) { return fold_one(ctx, n); });
}

}  // namespace onyx::opt
