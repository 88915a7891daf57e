// MatMulInteger fusion: the dynamically quantized matrix product that quantization tools write,
//   MatMulInteger(A, B, a_zero, b_zero) -> Cast(to float) -> Mul(., scale) [-> Add(., bias)]
// (scale being a_scale * b_scale, a scalar or one per column; bias a constant [N]), becomes one
// ai.onyx MatMulIntegerToFloat(A, B, a_zero, b_zero, scale, bias?): the integer kernel converts, scales and adds
// the bias while its accumulators are in registers, instead of three more passes over an int32 and a float tensor.
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// Whether a float tensor of static dims `s` multiplies an [..., N] product without changing its shape and as one
// value or one per column: rank <= the product's, every dim 1 except a last of 1 or N.
bool is_column_scale(const std::vector<int64_t>& s, int64_t rank, int64_t N) {
  if (static_cast<int64_t>(s.size()) > rank) return false;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] != 1) return false;
  return s.empty() || s.back() == 1 || s.back() == N;
}

bool fuse_integer_matmul_at(PassContext& ctx, Node& mm) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&mm) || mm.inputs.size() < 2 || !mm.inputs[0] || !mm.inputs[1] || mm.outputs.size() != 1 || !mm.outputs[0])
    return false;
  const int64_t rank = a.rank(mm.outputs[0]);
  const auto b_dims = a.static_dims(mm.inputs[1]);
  if (rank < 2 || !b_dims || b_dims->size() != 2) return false;
  const int64_t N = (*b_dims)[1];
  Node* cast = sole_reader(mm.outputs[0]);
  if (!is_op(cast, "Cast") || !a.def(cast) || cast->outputs.size() != 1 || !cast->outputs[0] ||
      a.dtype(cast->outputs[0]) != DataType::Float)
    return false;
  Node* mul = sole_reader(cast->outputs[0]);
  if (!is_op(mul, "Mul") || !a.def(mul) || mul->outputs.size() != 1 || !mul->outputs[0]) return false;
  Value* scale = other_input(*mul, cast->outputs[0]);
  if (!scale || scale == cast->outputs[0] || a.dtype(scale) != DataType::Float) return false;
  const auto scale_dims = a.static_dims(scale);
  if (!scale_dims || !is_column_scale(*scale_dims, rank, N)) return false;
  Node* last = mul;
  Value* bias = nullptr;
  Node* add = sole_reader(mul->outputs[0]);
  if (is_op(add, "Add") && a.def(add) && add->outputs.size() == 1 && add->outputs[0]) {
    Value* c = other_input(*add, mul->outputs[0]);
    const Tensor* ct = c && c != mul->outputs[0] ? a.constant(c) : nullptr;
    if (ct && ct->dtype() == DataType::Float && ct->dims() == std::vector<int64_t>{N}) {
      bias = c;
      last = add;
    }
  }
  std::vector<Value*> inputs{mm.inputs[0], mm.inputs[1], mm.inputs.size() > 2 ? mm.inputs[2] : nullptr,
                             mm.inputs.size() > 3 ? mm.inputs[3] : nullptr, scale};
  if (bias) inputs.push_back(bias);
  Value* out = last->outputs[0];
  const std::string name = mm.name.empty() ? last->name : mm.name;
  // The fused node takes the place of the last node it replaces: the scale is computed by then.
  std::vector<Node*> gone{&mm, cast};
  if (last != mul) gone.push_back(mul);
  for (Node* n : gone) ctx.remove_node(*n);
  ctx.replace_node(*last, "MatMulIntegerToFloat", kOnyxDomain, inputs, {out}, name);
  return true;
}

}  // namespace

bool fuse_matmul_integer(PassContext& ctx) {
  return for_each_op(ctx, "MatMulInteger", [&](Node& n) { return fuse_integer_matmul_at(ctx, n); });
}

}  // namespace onyx::opt
