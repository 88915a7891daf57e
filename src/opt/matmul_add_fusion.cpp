// MatMul + Add -> Gemm: MatMul(A, B) of 2-D A and B whose result only an Add reads, with a constant addend C
// that broadcasts one way to the [M, N] result (scalar, [N], [1, N], [M, 1] or [M, N]). Gemm computes
// A * B + C in one op. From opset 7 (Gemm's unidirectional broadcast), for the types Gemm takes there.
#include "opt/passes.hpp"

namespace onyx::opt {
namespace {

// Whether constant dims `c` broadcast one way to [m, n].
bool broadcasts_to(const std::vector<int64_t>& c, const Dim& m, const Dim& n) {
  if (c.size() > 2) return false;
  auto fits = [](int64_t d, const Dim& want) { return d == 1 || (want.value && *want.value == d); };
  if (!c.empty() && !fits(c.back(), n)) return false;
  if (c.size() == 2 && !fits(c[0], m)) return false;
  return true;
}

bool fuse_matmul_add_at(PassContext& ctx, Node& mm) {
  const Analysis& a = ctx.analysis();
  if (!a.def(&mm) || mm.inputs.size() != 2 || !mm.inputs[0] || !mm.inputs[1] || !mm.outputs[0]) return false;
  if (a.rank(mm.inputs[0]) != 2 || a.rank(mm.inputs[1]) != 2) return false;
  Value* prod = mm.outputs[0];
  Node* add = sole_reader(prod);
  if (!is_op(add, "Add") || !a.def(add) || !add->outputs[0]) return false;
  Value* c = other_input(*add, prod);
  const Tensor* ct = c ? a.constant(c) : nullptr;
  const DataType dt = a.dtype(prod);
  if (!ct || c == prod || ct->dtype() != dt || !is_float_type(dt) || !gemm_allows(ctx.opset(""), dt)) return false;
  const Type& pt = a.type(prod);
  if (!pt.shape.rank_known || pt.shape.dims.size() != 2) return false;
  if (!broadcasts_to(ct->dims(), pt.shape.dims[0], pt.shape.dims[1])) return false;
  Value* y = add->outputs[0];
  std::string name = add->name.empty() ? mm.name : add->name;
  Value* x = mm.inputs[0];
  Value* w = mm.inputs[1];
  ctx.remove_node(*add);
  ctx.insert_node(mm, "Gemm", "", {x, w, c}, {y}, name);
  ctx.remove_node(mm);
  return true;
}

}  // namespace

bool fuse_matmul_add(PassContext& ctx) {
  return for_each_op(ctx, "MatMul", [&](Node& n) { return fuse_matmul_add_at(ctx, n); });
}

}  // namespace onyx::opt
