// ONNX Runtime's quantization contrib ops (domain com.microsoft, version 1), as its quantization tools write them
// in the "QOperator" form and its optimizer saves them. Each is defined by the standard (or ai.onyx) nodes that
// compute it (OpDef::expand): a session replaces it at load, and the optimizer's fusions then give the int8
// kernels (qdq-fusion: DequantizeLinear -> Add -> QuantizeLinear becomes ai.onyx QLinearAdd; matmul-integer-fusion:
// MatMulInteger -> Cast -> Mul -> Add becomes ai.onyx MatMulIntegerToFloat).
// Quantized tensors are uint8 or int8 ("T"); scales float; scales and zero points per tensor unless said otherwise;
// an omitted zero point is 0 of T, and the output has type T (an explicit 0 of T is given to QuantizeLinear, which
// would otherwise give uint8). Most need ai.onnx opset >= 10 (QuantizeLinear/DequantizeLinear).
//   QLinearAdd / QLinearMul(A, A_scale, A_zp?, B, B_scale, B_zp?, C_scale, C_zp?) -> C
//                       quantize(dequantize(A) +/* dequantize(B)); numpy broadcasting.
//   QLinearGlobalAveragePool(X, x_scale, x_zp, y_scale, y_zp; channels_last)
//                       average over the spatial dims (X [N, C, D1...] or, channels_last, [N, D1..., C]); those
//                       dims become 1.
//   QLinearAveragePool(X, x_scale, x_zp?, y_scale, y_zp?; AveragePool's attributes, channels_last)
//   QLinearConcat(Y_scale, Y_zp, (X, x_scale, x_zp)...; axis)
//                       each X requantized to Y's parameters (passed as is where they are the same), concatenated.
//   QLinearSigmoid / QLinearLeakyRelu(X, X_scale, X_zp?, Y_scale, Y_zp?; alpha = 0.01)
//   QLinearSoftmax(X, X_scale, x_zp?, y_scale, y_zp; axis, opset)
//                       `opset` < 13: softmax of X coerced to 2-D at axis (default 1); else along axis (default
//                       -1). As ONNX Runtime's kernel, the output step is 1 / floor(1 / y_scale).
//   QLinearReduceMean(data, data_scale, data_zp?, reduced_scale, reduced_zp?; axes, keepdims)
//   QLinearWhere(condition, X, x_scale, x_zp, Y, y_scale, y_zp, z_scale, z_zp) -> Z
//   QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?; Conv's attributes, channels_last)
//                       the standard QLinearConv; channels_last: x and y are [N, D1..., C] (w stays [M, C/g, k...]).
//   QGemm(A, a_scale, a_zp, B, b_scale, b_zp, C?, y_scale?, y_zp?; transA, transB, alpha)
//                       Y = alpha * a_scale * b_scale * ((A - a_zp) x (B - b_zp) + C); float, or quantized with
//                       y_scale/y_zp. b_scale/b_zp per tensor or per column; C int32, broadcast to [M, N].
//   MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp?, b_zp?, bias?) -> Y (a_scale's type)
//                       float(MatMulInteger(A, B, a_zp, b_zp)) * a_scale * b_scale + bias; b_* per column allowed.
//   DynamicQuantizeMatMul(A float, B, b_scale, b_zp?, bias?) -> float
//                       A quantized to uint8 by DynamicQuantizeLinear, then as MatMulIntegerToFloat.
//   QuantizeLinear / DequantizeLinear(x, scale, zero_point?; axis)
//                       as the standard ops (per tensor, or per `axis` when given). Their types go beyond what
//                       the standard ops take below opset 19/21: float16 then goes through float, and 16-bit
//                       integers through the arithmetic (round half to even, saturate); 4-bit ones are refused.
//   MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?; K, N, bits, block_size)
//                       A x W (+ bias), W [K, N] = (q - zero_point) * scale per block of block_size along K, q the
//                       `bits`-bit values packed low bits first in B [N, ceil(K / block_size), block_size * bits / 8];
//                       zero_points packed the same way ([N, ceil(blocks * bits / 8)] uint8) or unpacked (A's type,
//                       [N, blocks]), default 2^(bits - 1). B, scales and zero_points must be constants: W is
//                       dequantized at load into a float constant (bits 2, 4, 8; g_idx refused).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
using E = ExpandContext;
constexpr const char* kMsQuantDomain = "com.microsoft";
const std::vector<D> kEightBitTypes = {D::UInt8, D::Int8};
const std::vector<D> kF = {D::Float};

bool is_8bit(D t) { return t == D::UInt8 || t == D::Int8; }
bool is_16bit(D t) { return t == D::UInt16 || t == D::Int16; }
bool is_4bit(D t) { return t == D::UInt4 || t == D::Int4; }

// Emits a one-output node (emit drops trailing omitted inputs).
Value* op(ExpandContext& ctx, const std::string& type, std::vector<Value*> in, std::vector<Attribute> at = {},
          Value* out = nullptr, const std::string& domain = "") {
  return ctx.emit1(type, std::move(in), std::move(at), out, domain);
}

Value* cast(ExpandContext& ctx, Value* v, D to, Value* out = nullptr) {
  return op(ctx, "Cast", {v}, E::attributes(make_attr_int("to", static_cast<int64_t>(to))), out);
}

const Tensor* value_of(const ExpandContext& ctx, size_t i) { return ctx.has_input(i) ? ctx.input_value(i) : nullptr; }

// Whether input i is known to hold one value (a rank-0 tensor, or a constant of one element).
bool known_single(const ExpandContext& ctx, size_t i) {
  const Tensor* t = value_of(ctx, i);
  return (t && t->element_count() == 1) || ctx.input_rank(i) == 0;
}

void require_opset(const ExpandContext& ctx, int64_t min, const char* why) {
  if (ctx.onnx_opset() < min)
    ctx.error(cat(why, " needs ai.onnx opset >= ", min, "; the model imports opset ", ctx.onnx_opset()));
}

// The element type of quantized input i: known and 8-bit.
D quantized_type(const ExpandContext& ctx, size_t i, const char* name) {
  const D t = ctx.input_dtype(i);
  if (t == D::Undefined) ctx.error(cat("the element type of ", name, " is not known"));
  if (!is_8bit(t)) ctx.error(cat(name, " has element type ", t, "; expected uint8 or int8"));
  return t;
}

// Input i (when present and its type is known) has element type t.
void require_type(const ExpandContext& ctx, size_t i, D t, const char* name) {
  const D u = ctx.has_input(i) ? ctx.input_dtype(i) : D::Undefined;
  if (u != D::Undefined && u != t) ctx.error(cat(name, " has element type ", u, "; expected ", t));
}

// Scales and zero points of the QLinear ops are per tensor: a constant with several elements is refused (one
// not known until run time is checked by DequantizeLinear/QuantizeLinear).
void require_per_tensor(const ExpandContext& ctx, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (const Tensor* t = value_of(ctx, i); t && t->element_count() != 1)
      ctx.error(cat("input ", i, " must hold one value (per-tensor quantization), got shape ",
                    shape_of(t->dims()).to_string()));
}

// The operands of the one-input QLinear ops (X, x_scale, x_zero_point?, y_scale, y_zero_point?): per tensor, X
// 8-bit and the zero points of its type; returns that type.
D check_unary_operands(const ExpandContext& ctx, const char* x, const char* x_zero, const char* y_zero) {
  require_opset(ctx, 10, "QuantizeLinear");
  const D t = quantized_type(ctx, 0, x);
  require_type(ctx, 2, t, x_zero);
  require_type(ctx, 4, t, y_zero);
  require_per_tensor(ctx, {1, 2, 3, 4});
  return t;
}

// DequantizeLinear-10 of an 8-bit tensor (an omitted zero point is 0 there too).
Value* dequantize(ExpandContext& ctx, Value* x, Value* scale, Value* zero) {
  return op(ctx, "DequantizeLinear", {x, scale, zero});
}

// QuantizeLinear-10 to type t; an omitted zero point becomes an explicit 0 of t.
Value* quantize(ExpandContext& ctx, Value* y, Value* scale, Value* zero, D t, Value* out) {
  return op(ctx, "QuantizeLinear", {y, scale, zero ? zero : ctx.scalar(t, 0)}, {}, out);
}

// A float constant of `dims` holding `v`.
Value* read_floats_attr(ExpandContext& ctx, const std::vector<float>& v, Dims dims) {
  Tensor t = Tensor::allocate(D::Float, std::move(dims));
  std::copy(v.begin(), v.end(), t.mutable_data<float>());
  return ctx.constant(std::move(t));
}

// ReduceMean over `axes` (all when empty) in the form of the model's opset (axes an input from 18).
Value* reduce_mean(ExpandContext& ctx, Value* x, const std::vector<int64_t>& axes, int64_t keepdims, Value* out) {
  std::vector<Attribute> at = E::attributes(make_attr_int("keepdims", keepdims));
  if (ctx.onnx_opset() >= 18)
    return op(ctx, "ReduceMean", {x, axes.empty() ? nullptr : ctx.int64s(axes)}, std::move(at), out);
  if (!axes.empty()) at.push_back(make_attr_ints("axes", axes));
  return op(ctx, "ReduceMean", {x}, std::move(at), out);
}

// Copies the node's attribute `name`, when it has one, to `out` (for the attributes an op passes on).
void forward_attribute(const ExpandContext& ctx, const char* name, std::vector<Attribute>& out) {
  if (const Attribute* a = ctx.attrs.find(name)) out.push_back(copy_attribute(*a));
}

// The rank of input i, which the expansion needs (channels-last layouts, axes).
int64_t required_rank(const ExpandContext& ctx, size_t i, const char* why, int64_t min = 1) {
  const int64_t r = ctx.input_rank(i);
  if (r < 0) ctx.error(cat("the rank of input ", i, " is not known, which ", why, " needs"));
  if (r < min) ctx.error(cat("input ", i, " has rank ", r, "; ", why, " needs rank >= ", min));
  return r;
}

// Permutations between [N, D1..., C] and [N, C, D1...].
std::vector<int64_t> to_channels_first(int64_t rank) {
  std::vector<int64_t> p{0, rank - 1};
  for (int64_t i = 1; i < rank - 1; ++i) p.push_back(i);
  return p;
}
std::vector<int64_t> to_channels_last(int64_t rank) {
  std::vector<int64_t> p{0};
  for (int64_t i = 2; i < rank; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}
Value* transpose(ExpandContext& ctx, Value* x, std::vector<int64_t> perm, Value* out = nullptr) {
  return op(ctx, "Transpose", {x}, E::attributes(make_attr_ints("perm", std::move(perm))), out);
}

// ---- inference (before expansion: element types, shapes where easy) ----

const Type* type_in(const InferContext& ctx, size_t i) {
  return ctx.has_input(i) && ctx.input_type(i).kind == Type::Kind::Tensor ? &ctx.input_type(i) : nullptr;
}
Shape shape_in(const InferContext& ctx, size_t i) {
  const Type* t = type_in(ctx, i);
  return t ? t->shape : Shape{};
}
D dtype_in(const InferContext& ctx, size_t i) { return ctx.has_input(i) ? ctx.input_dtype(i) : D::Undefined; }
void set_tensor(InferContext& ctx, D dt, Shape s) {
  if (dt != D::Undefined) ctx.set_output(0, Type::tensor(dt, std::move(s)));
}
// The rank of input i with every dim unknown.
Shape same_rank(const InferContext& ctx, size_t i) {
  Shape s = shape_in(ctx, i);
  for (Dim& d : s.dims) d = Dim{};
  return s;
}

// Output: input `type_from`'s element type, input `shape_from`'s shape.
InferFn infer_like(size_t type_from, size_t shape_from) {
  return [=](InferContext& ctx) { set_tensor(ctx, dtype_in(ctx, type_from), shape_in(ctx, shape_from)); };
}

void infer_binary(InferContext& ctx) {
  set_tensor(ctx, dtype_in(ctx, 0), broadcast_shape(shape_in(ctx, 0), shape_in(ctx, 3)));
}

void infer_qglobal_pool(InferContext& ctx) {
  Shape s = shape_in(ctx, 0);
  const bool last = ctx.attrs.get_int("channels_last", 0) != 0;
  if (s.rank_known && s.dims.size() >= 3)
    for (size_t i = last ? 1 : 2; i < (last ? s.dims.size() - 1 : s.dims.size()); ++i) s.dims[i] = known_dim(1);
  set_tensor(ctx, dtype_in(ctx, 0), s);
}

void infer_qconcat(InferContext& ctx) {
  Shape out;
  if (ctx.num_inputs() >= 5 && (ctx.num_inputs() - 2) % 3 == 0) {
    out = shape_in(ctx, 2);
    const int64_t axis = ctx.attrs.get_int("axis");
    for (size_t i = 5; out.rank_known && i < ctx.num_inputs(); i += 3) {
      const Shape s = shape_in(ctx, i);
      if (!s.rank_known || s.dims.size() != out.dims.size()) {
        out = Shape{};
        break;
      }
      const int64_t r = static_cast<int64_t>(out.dims.size());
      if (axis < -r || axis >= r) ctx.error(cat("axis ", axis, " is out of range for rank ", r));
      Dim& d = out.dims[static_cast<size_t>(axis < 0 ? axis + r : axis)];
      const Dim& e = s.dims[static_cast<size_t>(axis < 0 ? axis + r : axis)];
      d = d.value && e.value ? known_dim(*d.value + *e.value) : Dim{};
    }
  }
  set_tensor(ctx, dtype_in(ctx, 1), out);
}

// [..., M, K] x [K, N] -> [..., M, N] when both ranks are known and B is 2-D; else the rank is not given.
Shape contrib_matmul_shape(const Shape& a, const Shape& b) {
  if (!a.rank_known || !b.rank_known || a.dims.size() < 2 || b.dims.size() != 2) return {};
  Shape s = a;
  s.dims.back() = b.dims[1];
  return s;
}

// ---- expansions ----

// QLinearAdd, QLinearMul.
ExpandFn expand_binary(const char* std_op) {
  return [std_op](ExpandContext& ctx) {
    require_opset(ctx, 10, "QuantizeLinear");
    const D t = quantized_type(ctx, 0, "A");
    require_type(ctx, 3, t, "B");
    require_type(ctx, 2, t, "A_zero_point");
    require_type(ctx, 5, t, "B_zero_point");
    require_type(ctx, 7, t, "C_zero_point");
    require_per_tensor(ctx, {1, 2, 4, 5, 6, 7});
    Value* a = dequantize(ctx, ctx.input(0), ctx.input(1), ctx.input(2));
    Value* b = dequantize(ctx, ctx.input(3), ctx.input(4), ctx.input(5));
    quantize(ctx, op(ctx, std_op, {a, b}), ctx.input(6), ctx.input(7), t, ctx.output(0));
  };
}

// QLinearSigmoid, QLinearLeakyRelu: quantize(f(dequantize(X))).
ExpandFn expand_unary(const char* std_op, bool has_alpha) {
  return [std_op, has_alpha](ExpandContext& ctx) {
    const D t = check_unary_operands(ctx, "X", "X_zero_point", "Y_zero_point");
    std::vector<Attribute> at;
    if (has_alpha) at.push_back(make_attr_float("alpha", ctx.attrs.get_float("alpha", 0.01f)));
    Value* f = op(ctx, std_op, {dequantize(ctx, ctx.input(0), ctx.input(1), ctx.input(2))}, std::move(at));
    quantize(ctx, f, ctx.input(3), ctx.input(4), t, ctx.output(0));
  };
}

void expand_global_average_pool(ExpandContext& ctx) {
  const D t = check_unary_operands(ctx, "X", "x_zero_point", "y_zero_point");
  const int64_t channels_last = ctx.attrs.get_int("channels_last", 0);
  if (channels_last != 0 && channels_last != 1) ctx.error(cat("channels_last must be 0 or 1, got ", channels_last));
  Value* x = dequantize(ctx, ctx.input(0), ctx.input(1), ctx.input(2));
  Value* mean;
  if (!channels_last) {
    mean = op(ctx, "GlobalAveragePool", {x});
  } else {
    // [N, D1..., C]: the mean over D1... keeping them as 1s.
    const int64_t rank = required_rank(ctx, 0, "channels_last", 3);
    std::vector<int64_t> axes(static_cast<size_t>(rank - 2));
    std::iota(axes.begin(), axes.end(), 1);
    mean = reduce_mean(ctx, x, axes, 1, nullptr);
  }
  quantize(ctx, mean, ctx.input(3), ctx.input(4), t, ctx.output(0));
}

void expand_average_pool(ExpandContext& ctx) {
  const D t = check_unary_operands(ctx, "X", "x_zero_point", "y_zero_point");
  const int64_t channels_last = ctx.attrs.get_int("channels_last", 0);
  if (channels_last != 0 && channels_last != 1) ctx.error(cat("channels_last must be 0 or 1, got ", channels_last));
  if (ctx.attrs.has("dilations")) ctx.error("attribute 'dilations' is not part of QLinearAveragePool");
  std::vector<Attribute> at;
  for (const char* name : {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"})
    forward_attribute(ctx, name, at);
  const int64_t rank = channels_last ? required_rank(ctx, 0, "channels_last", 3) : 0;
  // The layout moves on the 8-bit tensors (a quarter of the bytes of the float ones).
  Value* x = channels_last ? transpose(ctx, ctx.input(0), to_channels_first(rank)) : ctx.input(0);
  Value* pooled = op(ctx, "AveragePool", {dequantize(ctx, x, ctx.input(1), ctx.input(2))}, std::move(at));
  if (!channels_last) {
    quantize(ctx, pooled, ctx.input(3), ctx.input(4), t, ctx.output(0));
    return;
  }
  transpose(ctx, quantize(ctx, pooled, ctx.input(3), ctx.input(4), t, nullptr), to_channels_last(rank), ctx.output(0));
}

// Whether constants a and b hold the same values (scales or zero points of one type), nullptr meaning 0.
bool same_values(const Tensor* a, const Tensor* b) {
  const std::vector<double> x = a ? read_doubles(*a) : std::vector<double>{0};
  const std::vector<double> y = b ? read_doubles(*b) : std::vector<double>{0};
  return x == y;
}

void expand_concat(ExpandContext& ctx) {
  require_opset(ctx, 10, "QuantizeLinear");
  const size_t n = ctx.num_inputs();
  if (n < 5 || (n - 2) % 3 != 0)
    ctx.error(cat("expects Y_scale, Y_zero_point and (tensor, scale, zero point) triples; got ", n, " inputs"));
  if (!ctx.has_input(1)) ctx.error("Y_zero_point is required");
  const D t = quantized_type(ctx, 1, "Y_zero_point");
  require_per_tensor(ctx, {0, 1});
  const int64_t axis = ctx.attrs.get_int("axis");
  const Tensor* ys = value_of(ctx, 0);
  const Tensor* yz = value_of(ctx, 1);
  std::vector<Value*> parts;
  for (size_t i = 2; i < n; i += 3) {
    const std::string which = cat("input ", (i - 2) / 3);
    if (!ctx.has_input(i) || !ctx.has_input(i + 1)) ctx.error(cat(which, " lacks its tensor or scale"));
    require_type(ctx, i, t, which.c_str());
    require_type(ctx, i + 2, t, (which + "'s zero point").c_str());
    require_type(ctx, i + 1, D::Float, (which + "'s scale").c_str());
    require_per_tensor(ctx, {i + 1, i + 2});
    const Tensor* xs = value_of(ctx, i + 1);
    const Tensor* xz = value_of(ctx, i + 2);
    // Already at Y's scale and zero point: taken as it is (a dequantize/quantize round trip gives the same bytes).
    const bool same = ys && xs && yz && (xz || !ctx.has_input(i + 2)) && same_values(ys, xs) && same_values(yz, xz);
    if (same) {
      parts.push_back(ctx.input(i));
    } else {
      Value* f = dequantize(ctx, ctx.input(i), ctx.input(i + 1), ctx.input(i + 2));
      parts.push_back(quantize(ctx, f, ctx.input(0), ctx.input(1), t, nullptr));
    }
  }
  op(ctx, "Concat", parts, E::attributes(make_attr_int("axis", axis)), ctx.output(0));
}

// Softmax of x along `axis` with the semantics of Softmax before opset 13 (`coerced`: over the dims from axis
// on, as one) or from 13 (one axis), in a form valid at the model's opset.
Value* softmax(ExpandContext& ctx, Value* x, int64_t axis, bool coerced, int64_t rank) {
  auto soft = [&](Value* v, int64_t a) { return op(ctx, "Softmax", {v}, E::attributes(make_attr_int("axis", a))); };
  const bool new_form = ctx.onnx_opset() >= 13;
  if (coerced == !new_form) return soft(x, axis);  // the model's Softmax has the wanted meaning
  // Along the last axis both meanings agree (negative axes from opset 11).
  if (axis == -1 && ctx.onnx_opset() >= 11) return soft(x, -1);
  if (rank > 0 && (axis == rank - 1 || axis == -1)) return soft(x, rank - 1);
  if (coerced) {
    // Over the dims from `axis` on (here opset >= 13): flattened to 2-D there, back to x's shape after.
    Value* flat = op(ctx, "Flatten", {x}, E::attributes(make_attr_int("axis", axis)));
    return op(ctx, "Reshape", {soft(flat, -1), op(ctx, "Shape", {x})});
  }
  // One axis with the older Softmax: that axis swapped with the last one.
  if (rank < 0) ctx.error("the rank of X is not known, which Softmax along one axis before opset 13 needs");
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) ctx.error(cat("axis ", axis, " is out of range for rank ", rank));
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(a)], perm.back());
  return transpose(ctx, soft(transpose(ctx, x, perm), rank - 1), perm);
}

void expand_softmax(ExpandContext& ctx) {
  const D t = check_unary_operands(ctx, "X", "x_zero_point", "y_zero_point");
  if (!ctx.attrs.has("opset")) ctx.error("required attribute 'opset' is missing");
  const int64_t semantics = ctx.attrs.get_int("opset");
  const bool coerced = semantics < 13;
  const int64_t axis = ctx.attrs.get_int("axis", coerced ? 1 : -1);
  Value* p = softmax(ctx, dequantize(ctx, ctx.input(0), ctx.input(1), ctx.input(2)), axis, coerced, ctx.input_rank(0));
  // ONNX Runtime's kernel multiplies the probabilities by floor(1 / y_scale), not by 1 / y_scale: the same for
  // the usual 1/256, one step less for 1/255 (whose reciprocal is 254.99998 in float). Models quantized for it
  // expect that step.
  Value* scale;
  if (const Tensor* s = value_of(ctx, 3); s && s->dtype() == D::Float) {
    const float inv = std::floor(1.0f / s->data<float>()[0]);
    if (!(inv >= 1)) ctx.error(cat("y_scale ", s->data<float>()[0], " is not a probability step (1 / y_scale < 1)"));
    scale = read_floats_attr(ctx, {1.0f / inv}, {});
  } else {
    Value* one = ctx.scalar(D::Float, 1);
    scale = op(ctx, "Div", {one, op(ctx, "Floor", {op(ctx, "Div", {one, ctx.input(3)})})});
  }
  quantize(ctx, p, scale, ctx.input(4), t, ctx.output(0));
}

void expand_reduce_mean(ExpandContext& ctx) {
  const D t = check_unary_operands(ctx, "data", "data_zero_point", "reduced_zero_point");
  const std::vector<int64_t> axes = ctx.attrs.get_ints("axes", std::vector<int64_t>{});
  const int64_t keepdims = ctx.attrs.get_int("keepdims", 1);
  Value* m = reduce_mean(ctx, dequantize(ctx, ctx.input(0), ctx.input(1), ctx.input(2)), axes, keepdims, nullptr);
  quantize(ctx, m, ctx.input(3), ctx.input(4), t, ctx.output(0));
}

void expand_where(ExpandContext& ctx) {
  require_opset(ctx, 10, "QuantizeLinear");
  const D t = quantized_type(ctx, 1, "X");
  for (size_t i : {3, 4, 6, 8}) require_type(ctx, i, t, cat("input ", i).c_str());
  require_per_tensor(ctx, {2, 3, 5, 6, 7, 8});
  Value* x = dequantize(ctx, ctx.input(1), ctx.input(2), ctx.input(3));
  Value* y = dequantize(ctx, ctx.input(4), ctx.input(5), ctx.input(6));
  quantize(ctx, op(ctx, "Where", {ctx.input(0), x, y}), ctx.input(7), ctx.input(8), t, ctx.output(0));
}

void expand_qlinear_conv(ExpandContext& ctx) {
  require_opset(ctx, 10, "QLinearConv");
  const int64_t channels_last = ctx.attrs.get_int("channels_last", 0);
  if (channels_last != 0 && channels_last != 1) ctx.error(cat("channels_last must be 0 or 1, got ", channels_last));
  std::vector<Attribute> at;
  for (const char* name : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    forward_attribute(ctx, name, at);
  std::vector<Value*> in;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) in.push_back(ctx.input(i));
  if (!channels_last) {
    op(ctx, "QLinearConv", in, std::move(at), ctx.output(0));
    return;
  }
  const int64_t rank = required_rank(ctx, 0, "channels_last", 3);
  in[0] = transpose(ctx, in[0], to_channels_first(rank));
  transpose(ctx, op(ctx, "QLinearConv", in, std::move(at)), to_channels_last(rank), ctx.output(0));
}

// alpha * a_scale * b_scale[i] in float, as ONNX Runtime computes the output scale; dims of the longer one.
Value* scale_product(ExpandContext& ctx, size_t a, size_t b, float alpha, std::vector<float>* values = nullptr) {
  const Tensor* as = value_of(ctx, a);
  const Tensor* bs = value_of(ctx, b);
  if (as && bs && as->dtype() == D::Float && bs->dtype() == D::Float && as->element_count() == 1) {
    std::vector<float> v(bs->element_count());
    for (size_t i = 0; i < v.size(); ++i) v[i] = alpha * as->data<float>()[0] * bs->data<float>()[i];
    if (values) *values = v;
    Dims dims = bs->element_count() == 1 && as->dims().size() > bs->dims().size() ? as->dims() : bs->dims();
    return read_floats_attr(ctx, v, dims);
  }
  Value* s = op(ctx, "Mul", {ctx.input(a), ctx.input(b)});
  const D t = ctx.input_dtype(a) == D::Undefined ? D::Float : ctx.input_dtype(a);
  if (alpha != 1.0f) s = op(ctx, "Mul", {s, ctx.scalar(t, alpha)});
  return s;
}

void expand_qgemm(ExpandContext& ctx) {
  require_opset(ctx, 10, "MatMulInteger");
  const D ta = quantized_type(ctx, 0, "A");
  const D tb = quantized_type(ctx, 3, "B");
  require_type(ctx, 2, ta, "a_zero_point");
  require_type(ctx, 5, tb, "b_zero_point");
  const bool quantized = ctx.has_input(7) || ctx.has_input(8);
  // ONNX Runtime's kernel takes them together only (y_scale alone gives float values divided by y_scale).
  if (ctx.has_input(7) != ctx.has_input(8)) ctx.error("y_scale and y_zero_point must be given together");
  require_per_tensor(ctx, {1, 2, 7, 8});
  const float alpha = ctx.attrs.get_float("alpha", 1.0f);
  const bool trans_a = ctx.attrs.get_int("transA", 0) != 0;
  const bool trans_b = ctx.attrs.get_int("transB", 0) != 0;
  Value* a = trans_a ? op(ctx, "Transpose", {ctx.input(0)}) : ctx.input(0);
  Value* b = trans_b ? op(ctx, "Transpose", {ctx.input(3)}) : ctx.input(3);
  Value* acc = op(ctx, "MatMulInteger", {a, b, ctx.input(2), ctx.input(5)});
  std::vector<float> scales;
  Value* scale = scale_product(ctx, 1, 4, alpha, &scales);
  // C at scale alpha * a_scale * b_scale: a constant one along N becomes a float bias after the scaling (the
  // form matmul-integer-fusion takes, rounding once more than the int32 sum); otherwise it joins the int32 sum.
  Value* bias = nullptr;
  if (ctx.has_input(6)) {
    const Tensor* c = value_of(ctx, 6);
    const Tensor* bq = value_of(ctx, 3);
    int64_t n = bq && bq->dims().size() == 2 ? bq->dims()[trans_b ? 0 : 1] : -1;
    const bool along_n = c && n > 0 && c->dtype() == D::Int32 && !scales.empty() &&
                         (scales.size() == 1 || static_cast<int64_t>(scales.size()) == n) &&
                         (c->element_count() == 1 || c->dims() == Dims{n} || c->dims() == Dims{1, n});
    if (along_n) {
      std::vector<float> v(static_cast<size_t>(n));
      for (size_t j = 0; j < v.size(); ++j)
        v[j] = static_cast<float>(c->data<int32_t>()[c->element_count() == 1 ? 0 : j]) * scales[scales.size() == 1 ? 0 : j];
      bias = read_floats_attr(ctx, v, {n});
    } else {
      acc = op(ctx, "Add", {acc, ctx.input(6)});
    }
  }
  Value* y = op(ctx, "Mul", {cast(ctx, acc, D::Float), scale}, {}, bias || quantized ? nullptr : ctx.output(0));
  if (bias) y = op(ctx, "Add", {y, bias}, {}, quantized ? nullptr : ctx.output(0));
  if (quantized) quantize(ctx, y, ctx.input(7), ctx.input(8), ctx.input_dtype(8), ctx.output(0));
}

void expand_matmul_integer_to_float(ExpandContext& ctx) {
  require_opset(ctx, 10, "MatMulInteger");
  const D t = ctx.input_dtype(2);
  if (t == D::Undefined) ctx.error("the element type of a_scale is not known");
  require_type(ctx, 3, t, "b_scale");
  require_type(ctx, 6, t, "bias");
  require_type(ctx, 4, ctx.input_dtype(0), "a_zero_point");
  require_type(ctx, 5, ctx.input_dtype(1), "b_zero_point");
  // A's parameters are per tensor in ONNX Runtime's kernel too.
  require_per_tensor(ctx, {2, 4});
  Value* acc = op(ctx, "MatMulInteger", {ctx.input(0), ctx.input(1), ctx.input(4), ctx.input(5)});
  if (t == D::Float) {
    Value* y = op(ctx, "Mul", {cast(ctx, acc, t), scale_product(ctx, 2, 3, 1.0f)}, {},
                  ctx.has_input(6) ? nullptr : ctx.output(0));
    if (ctx.has_input(6)) op(ctx, "Add", {y, ctx.input(6)}, {}, ctx.output(0));
    return;
  }
  // float16: computed in float (an int32 sum is out of float16's range long before it overflows), then rounded.
  Value* scale = op(ctx, "Mul", {cast(ctx, ctx.input(2), D::Float), cast(ctx, ctx.input(3), D::Float)});
  Value* y = op(ctx, "Mul", {cast(ctx, acc, D::Float), scale});
  if (ctx.has_input(6)) y = op(ctx, "Add", {y, cast(ctx, ctx.input(6), D::Float)});
  cast(ctx, y, t, ctx.output(0));
}

void expand_dynamic_quantize_matmul(ExpandContext& ctx) {
  require_opset(ctx, 11, "DynamicQuantizeLinear");
  require_type(ctx, 3, ctx.input_dtype(1), "b_zero_point");
  // The pattern ONNX Runtime itself fuses into this op: A to uint8 with its own scale and zero point.
  std::vector<Value*> q = ctx.emit("DynamicQuantizeLinear", "", {ctx.input(0)}, {nullptr, nullptr, nullptr});
  Value* acc = op(ctx, "MatMulInteger", {q[0], ctx.input(1), q[2], ctx.input(3)});
  Value* scale = op(ctx, "Mul", {q[1], ctx.input(2)});
  Value* y = op(ctx, "Mul", {cast(ctx, acc, D::Float), scale}, {}, ctx.has_input(4) ? nullptr : ctx.output(0));
  if (ctx.has_input(4)) op(ctx, "Add", {y, ctx.input(4)}, {}, ctx.output(0));
}

// For the arithmetic forms of QuantizeLinear/DequantizeLinear: a scale or zero point `v` shaped to broadcast
// along the node's `axis` of x ([C] -> [C, 1, ..., 1]); as it is when it is one value.
Value* along_axis(ExpandContext& ctx, Value* v, size_t input) {
  if (!v || !ctx.attrs.has("axis") || known_single(ctx, input)) return v;
  const int64_t rank = required_rank(ctx, 0, "per-axis quantization of 16-bit integers before opset 21");
  const int64_t axis = normalize_axis(ctx.attrs.get_int("axis"), rank);
  std::vector<int64_t> shape(static_cast<size_t>(rank - axis), 1);
  shape[0] = -1;
  return op(ctx, "Reshape", {v, ctx.int64s(shape)});
}

// Checks common to com.microsoft QuantizeLinear/DequantizeLinear; returns whether they are per axis.
bool check_linear_quant(const ExpandContext& ctx, D integer) {
  require_opset(ctx, 10, "QuantizeLinear/DequantizeLinear");
  const bool per_axis = ctx.attrs.has("axis") && !known_single(ctx, 1);
  if (per_axis) require_opset(ctx, 13, "per-axis quantization");
  if (is_4bit(integer)) require_opset(ctx, 21, cat(integer, " quantization").c_str());
  return per_axis;
}

std::vector<Attribute> axis_attr(const ExpandContext& ctx) {
  std::vector<Attribute> at;
  if (ctx.attrs.has("axis") && ctx.onnx_opset() >= 13) at.push_back(make_attr_int("axis", ctx.attrs.get_int("axis")));
  return at;
}

void expand_quantize_linear(ExpandContext& ctx) {
  const D xt = ctx.input_dtype(0);
  const D yt = ctx.has_input(2) ? ctx.input_dtype(2) : D::UInt8;
  if (xt == D::Undefined || yt == D::Undefined) ctx.error("the element types of x and y_zero_point must be known");
  require_type(ctx, 1, xt, "y_scale");
  check_linear_quant(ctx, yt);
  const int64_t opset = ctx.onnx_opset();
  const bool arithmetic = is_16bit(yt) && opset < 21;
  Value* x = ctx.input(0);
  Value* scale = ctx.input(1);
  if (xt != D::Float && (opset < 19 || arithmetic)) {  // float16 through float (standard before 19)
    x = cast(ctx, x, D::Float);
    scale = cast(ctx, scale, D::Float);
  }
  if (!arithmetic) {
    op(ctx, "QuantizeLinear", {x, scale, ctx.input(2)}, axis_attr(ctx), ctx.output(0));
    return;
  }
  // saturate(round(x / scale) + zero_point), rounding half to even (Round), in float as the standard op.
  require_opset(ctx, 11, cat(yt, " quantization before opset 21").c_str());
  Value* q = op(ctx, "Round", {op(ctx, "Div", {x, along_axis(ctx, scale, 1)})});
  if (ctx.has_input(2)) q = op(ctx, "Add", {q, cast(ctx, along_axis(ctx, ctx.input(2), 2), D::Float)});
  const bool is_signed = yt == D::Int16;
  q = op(ctx, "Clip", {q, ctx.scalar(D::Float, is_signed ? -32768 : 0), ctx.scalar(D::Float, is_signed ? 32767 : 65535)});
  cast(ctx, q, yt, ctx.output(0));
}

void expand_dequantize_linear(ExpandContext& ctx) {
  const D xt = ctx.input_dtype(0);
  const D st = ctx.input_dtype(1);
  if (xt == D::Undefined || st == D::Undefined) ctx.error("the element types of x and x_scale must be known");
  require_type(ctx, 2, xt, "x_zero_point");
  check_linear_quant(ctx, xt);
  const int64_t opset = ctx.onnx_opset();
  const bool arithmetic = is_16bit(xt) && opset < 21;
  // float16 scales through float (standard before 19), the result cast back.
  const bool via_float = st != D::Float && (opset < 19 || arithmetic);
  Value* scale = via_float ? cast(ctx, ctx.input(1), D::Float) : ctx.input(1);
  Value* out = via_float ? nullptr : ctx.output(0);
  Value* y;
  if (!arithmetic) {
    y = op(ctx, "DequantizeLinear", {ctx.input(0), scale, ctx.input(2)}, axis_attr(ctx), out);
  } else {
    // (x - zero_point) * scale: 16-bit integers are exact in float.
    Value* xf = cast(ctx, ctx.input(0), D::Float);
    if (ctx.has_input(2)) xf = op(ctx, "Sub", {xf, cast(ctx, along_axis(ctx, ctx.input(2), 2), D::Float)});
    y = op(ctx, "Mul", {xf, along_axis(ctx, scale, 1)}, {}, out);
  }
  if (via_float) cast(ctx, y, st, ctx.output(0));
}

// Stores v at element i of a float, float16 or bfloat16 tensor.
void store_float(Tensor& t, size_t i, float v) {
  switch (t.dtype()) {
    case D::Float: t.mutable_data<float>()[i] = v; break;
    case D::Float16: t.mutable_data<uint16_t>()[i] = float_to_half(v); break;
    case D::BFloat16: t.mutable_data<uint16_t>()[i] = float_to_bfloat16(v); break;
    default: fail("unexpected weight type ", t.dtype());
  }
}

// The `bits`-bit value j of packed bytes p (low bits first).
inline uint32_t packed_at(const uint8_t* p, int64_t j, int64_t bits) {
  const int64_t bit = j * bits;
  return (static_cast<uint32_t>(p[bit / 8]) >> (bit % 8)) & ((1u << bits) - 1);
}

void expand_matmul_nbits(ExpandContext& ctx) {
  const int64_t K = ctx.attrs.get_int("K");
  const int64_t N = ctx.attrs.get_int("N");
  const int64_t bits = ctx.attrs.get_int("bits", 4);
  const int64_t block = ctx.attrs.get_int("block_size");
  if (K <= 0 || N <= 0) ctx.error(cat("K and N must be positive, got K=", K, ", N=", N));
  if (bits != 2 && bits != 4 && bits != 8) ctx.error(cat("bits=", bits, " is not supported (2, 4 and 8 are)"));
  if (block < 16 || (block & (block - 1)) != 0) ctx.error(cat("block_size must be a power of 2 >= 16, got ", block));
  if (ctx.attrs.get_int("weight_prepacked", 0) != 0)
    ctx.error("weight_prepacked (an execution provider's layout) is not supported");
  if (ctx.has_input(4)) ctx.error("input g_idx (deprecated by ONNX Runtime) is not supported");
  const D t = ctx.input_dtype(0);
  if (t == D::Undefined) ctx.error("the element type of A is not known");
  const Tensor* b = value_of(ctx, 1);
  const Tensor* scales = value_of(ctx, 2);
  const Tensor* zeros = value_of(ctx, 3);
  if (!b || !scales || (ctx.has_input(3) && !zeros))
    ctx.error("B, scales and zero_points must be constants (they are dequantized into a float weight at load)");
  const int64_t blocks = (K + block - 1) / block;
  const int64_t blob = block * bits / 8;
  if (b->dtype() != D::UInt8 || static_cast<int64_t>(b->element_count()) != N * blocks * blob)
    ctx.error(cat("B must be uint8 [N, ceil(K / block_size), block_size * bits / 8] = [", N, ", ", blocks, ", ", blob,
                  "], got ", b->dtype(), " ", shape_of(b->dims()).to_string()));
  if (scales->dtype() != t || static_cast<int64_t>(scales->element_count()) != N * blocks)
    ctx.error(cat("scales must be ", t, " with N * ceil(K / block_size) = ", N * blocks, " elements, got ", scales->dtype(),
                  " ", shape_of(scales->dims()).to_string()));
  const int64_t zero_row = (blocks * bits + 7) / 8;  // bytes per row of packed zero points
  const bool packed_zeros = zeros && zeros->dtype() == D::UInt8;
  if (zeros) {
    const int64_t want = packed_zeros ? N * zero_row : N * blocks;
    if ((!packed_zeros && zeros->dtype() != t) || static_cast<int64_t>(zeros->element_count()) != want)
      ctx.error(cat("zero_points must be uint8 [N, ", zero_row, "] (packed) or ", t, " [N, ", blocks, "], got ",
                    zeros->dtype(), " ", shape_of(zeros->dims()).to_string()));
  }
  const std::vector<double> s = read_doubles(*scales);
  const std::vector<double> z = zeros && !packed_zeros ? read_doubles(*zeros) : std::vector<double>{};
  const float default_zero = static_cast<float>(int64_t{1} << (bits - 1));
  Tensor w = Tensor::allocate(t, {K, N});
  const uint8_t* q = b->data<uint8_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t kb = 0; kb < blocks; ++kb) {
      const size_t at = static_cast<size_t>(n * blocks + kb);
      const float scale = static_cast<float>(s[at]);
      float zero = default_zero;
      if (packed_zeros) zero = static_cast<float>(packed_at(zeros->data<uint8_t>() + n * zero_row, kb, bits));
      else if (zeros) zero = static_cast<float>(z[at]);
      const uint8_t* blk = q + static_cast<int64_t>(at) * blob;
      for (int64_t j = 0; j < block && kb * block + j < K; ++j) {
        const float v = (static_cast<float>(packed_at(blk, j, bits)) - zero) * scale;
        store_float(w, static_cast<size_t>((kb * block + j) * N + n), v);
      }
    }
  Value* y = op(ctx, "MatMul", {ctx.input(0), ctx.constant(std::move(w))}, {}, ctx.has_input(5) ? nullptr : ctx.output(0));
  if (ctx.has_input(5)) op(ctx, "Add", {y, ctx.input(5)}, {}, ctx.output(0));
}

}  // namespace

void register_contrib_quant(Registry& r) {
  auto add = [&](const char* name, std::vector<TypeConstraint> types, InferFn infer, ExpandFn expand) {
    r.add(OpDef{kMsQuantDomain, name, 1, std::move(types), std::move(infer), nullptr, std::move(expand)});
  };
  // Inputs in the usual (X, x_scale, x_zero_point, y_scale, y_zero_point) order.
  const std::vector<TypeConstraint> unary = {{{0, 2, 4}, kEightBitTypes}, {{1, 3}, kF}};

  const std::vector<TypeConstraint> binary = {{{0, 2, 3, 5, 7}, kEightBitTypes}, {{1, 4, 6}, kF}};
  add("QLinearAdd", binary, infer_binary, expand_binary("Add"));
  add("QLinearMul", binary, infer_binary, expand_binary("Mul"));
  add("QLinearGlobalAveragePool", unary, infer_qglobal_pool, expand_global_average_pool);
  add("QLinearAveragePool", unary, [](InferContext& ctx) { set_tensor(ctx, dtype_in(ctx, 0), same_rank(ctx, 0)); },
      expand_average_pool);
  add("QLinearConcat", {{{0}, kF}, {{1}, kEightBitTypes}, {{-1}, {D::UInt8, D::Int8, D::Float}}}, infer_qconcat, expand_concat);
  add("QLinearSigmoid", unary, infer_like(0, 0), expand_unary("Sigmoid", false));
  add("QLinearLeakyRelu", unary, infer_like(0, 0), expand_unary("LeakyRelu", true));
  add("QLinearSoftmax", unary, infer_like(0, 0), expand_softmax);
  add("QLinearReduceMean", unary, [](InferContext& ctx) { set_tensor(ctx, dtype_in(ctx, 0), Shape{}); }, expand_reduce_mean);
  add("QLinearWhere", {{{0}, {D::Bool}}, {{1, 3, 4, 6, 8}, kEightBitTypes}, {{2, 5, 7}, kF}},
      [](InferContext& ctx) {
        const Shape xy = broadcast_shape(shape_in(ctx, 1), shape_in(ctx, 4));
        set_tensor(ctx, dtype_in(ctx, 1), broadcast_shape(shape_in(ctx, 0), xy));
      },
      expand_where);
  add("QLinearConv", {{{0, 2, 3, 5, 7}, kEightBitTypes}, {{1, 4, 6}, kF}, {{8}, {D::Int32}}},
      [](InferContext& ctx) { set_tensor(ctx, dtype_in(ctx, 7), same_rank(ctx, 0)); }, expand_qlinear_conv);
  add("QGemm", {{{0, 2, 3, 5, 8}, kEightBitTypes}, {{1, 4, 7}, kF}, {{6}, {D::Int32}}},
      [](InferContext& ctx) {
        Shape s;
        const Shape a = shape_in(ctx, 0), b = shape_in(ctx, 3);
        if (a.rank_known && b.rank_known && a.dims.size() == 2 && b.dims.size() == 2) {
          s.rank_known = true;
          s.dims = {a.dims[ctx.attrs.get_int("transA", 0) ? 1 : 0], b.dims[ctx.attrs.get_int("transB", 0) ? 0 : 1]};
        }
        set_tensor(ctx, ctx.has_input(8) ? dtype_in(ctx, 8) : D::Float, s);
      },
      expand_qgemm);
  add("MatMulIntegerToFloat", {{{0, 1, 4, 5}, kEightBitTypes}, {{2, 3, 6}, {D::Float, D::Float16}}},
      [](InferContext& ctx) { set_tensor(ctx, dtype_in(ctx, 2), contrib_matmul_shape(shape_in(ctx, 0), shape_in(ctx, 1))); },
      expand_matmul_integer_to_float);
  add("DynamicQuantizeMatMul", {{{0, 2, 4}, kF}, {{1, 3}, kEightBitTypes}},
      [](InferContext& ctx) { set_tensor(ctx, D::Float, contrib_matmul_shape(shape_in(ctx, 0), shape_in(ctx, 1))); },
      expand_dynamic_quantize_matmul);
  add("QuantizeLinear",
      {{{0, 1}, {D::Float, D::Float16}}, {{2}, {D::Int8, D::UInt8, D::Int16, D::UInt16, D::Int4, D::UInt4}}},
      [](InferContext& ctx) { set_tensor(ctx, ctx.has_input(2) ? dtype_in(ctx, 2) : D::UInt8, shape_in(ctx, 0)); },
      expand_quantize_linear);
  add("DequantizeLinear",
      {{{0, 2}, {D::Int8, D::UInt8, D::Int16, D::UInt16, D::Int32, D::Int4, D::UInt4}}, {{1}, {D::Float, D::Float16}}},
      infer_like(1, 0), expand_dequantize_linear);
  add("MatMulNBits", {{{0, 2, 5}, {D::Float, D::Float16, D::BFloat16}}, {{1}, {D::UInt8}},
                      {{3}, {D::UInt8, D::Float, D::Float16, D::BFloat16}}, {{4}, {D::Int32}}},
      [](InferContext& ctx) {
        Shape s = shape_in(ctx, 0);
        if (s.rank_known && !s.dims.empty()) s.dims.back() = known_dim(ctx.attrs.get_int("N"));
        set_tensor(ctx, dtype_in(ctx, 0), s);
      },
      expand_matmul_nbits);
}

}  // namespace onyx::ops
