// ONNX Runtime's contrib ops (domain com.microsoft, version 1) for activations and normalizations, as its
// transformer optimizer and exporters write them. Each is defined by the standard (or ai.onyx) nodes that compute
// it (OpDef::expand): a session replaces it at load, and the optimizer's fusions and fast kernels then apply.
//   Gelu(X)                 erf form of GELU.
//   FastGelu(X, bias?)      tanh form of GELU of X + bias.
//   BiasGelu(A, B)          erf GELU of A + B.
//   QuickGelu(X)            X * Sigmoid(alpha * X), alpha default 1.702.
//   BiasAdd(X, bias, skip)  X + bias + skip (X, skip [N, S, C], bias [C]).
//   SkipLayerNormalization(input, skip, gamma, beta?, bias?) -> output, mean?, inv_std_var?, input_skip_bias_sum?
//                           LayerNormalization over the last axis of input + skip (+ bias); epsilon default 1e-12;
//                           skip [N, S, H], [1, S, H] or [S, H] (numpy broadcast).
//   SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) -> output, mean?, inv_std_var?, input_skip_bias_sum?
//                           RMS normalization of input + skip (+ bias), epsilon default 1e-12; `mean` is not computed
//                           by ONNX Runtime either and is refused when read.
//   EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding, segment_embedding?, gamma,
//                           beta, mask?, position_ids?) -> output, mask_index?, embedding_sum?
//                           LayerNormalization (epsilon default 1e-12) of the summed embeddings: words and segments
//                           gathered by id, positions by position_ids or 0..S-1; mask_index = number of ones per row
//                           of mask (int32 [B]); without a mask ONNX Runtime writes a mask_index that means nothing,
//                           so reading one is refused.
//   FusedMatMul(A, B)       MatMul after optional transposes: transBatchA/B move the leading axis just before the
//                           last (rank >= 3), then transA/B swap the last two; times alpha. TransposeMatMul is the
//                           same op under its older name (no batch transposes).
//   FusedConv(X, W, B?, Z?) Conv (Conv's attributes), + Z, then `activation` (Relu, Tanh, Sigmoid, LeakyRelu, Clip,
//                           HardSigmoid; parameters in activation_params in that op's order).
//   FusedGemm(A, B, C?)     Gemm, then `activation` with activation_alpha / activation_beta (LeakyRelu, HardSigmoid,
//                           Relu, Tanh, Sigmoid).
//   GridSample(X, grid)     GridSample-16 (the contrib op came first and has the same attributes and meaning).
//   SparseToDenseMatMul(A, B)  Y = alpha * op(A) @ op(B), 2-D, transA/transB transposing; A is sparse in ONNX
//                           Runtime, dense here (sessions compute sparse graph inputs and initializers dense).
// The standard forms each picks: Gelu-20 / LayerNormalization-17 / RMSNormalization-23 where the model's ai.onnx
// opset has them, else their ai.onyx aliases (src/ops/fused/fused.cpp).
#include <limits>

#include "ops/fused/fused.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
constexpr const char* kMsNnDomain = "com.microsoft";
const std::vector<D> kHalfAndFloat = {D::Float, D::Float16, D::BFloat16, D::Double};

// Output 0: input 0's type and shape.
void infer_like_input0(InferContext& ctx) { infer_same_as_input(ctx); }

Value* gelu(ExpandContext& ctx, Value* x, const char* approximate, Value* out) {
  std::vector<Attribute> attrs;
  if (std::string(approximate) != "none") attrs.push_back(make_attr_string("approximate", approximate));
  if (ctx.onnx_opset() >= 20) return ctx.emit1("Gelu", {x}, std::move(attrs), out);
  return ctx.emit1("Gelu", {x}, std::move(attrs), out, kFusedDomain);
}

// LayerNormalization-17 (or its ai.onyx alias) over the last axis, writing outputs 0..2 of `outs` (null: unused).
void layer_norm(ExpandContext& ctx, Value* x, Value* gamma, Value* beta, float epsilon, std::vector<Value*> outs) {
  std::vector<Attribute> attrs =
      ExpandContext::attributes(make_attr_int("axis", -1), make_attr_float("epsilon", epsilon));
  const bool standard = ctx.onnx_opset() >= 17;
  while (outs.size() > 1 && !outs.back()) outs.pop_back();  // unused trailing outputs are omitted
  ctx.emit("LayerNormalization", standard ? "" : kFusedDomain, {x, gamma, beta}, std::move(outs), std::move(attrs));
}

// x + skip (+ bias): the normalized sum of the Skip*Normalization ops; written to `sum_out` when it is wanted.
Value* skip_sum(ExpandContext& ctx, size_t bias_input, size_t sum_output) {
  Value* out = ctx.output_wanted(sum_output) ? ctx.output(sum_output) : nullptr;
  if (!ctx.has_input(bias_input)) return ctx.emit1("Add", {ctx.input(0), ctx.input(1)}, {}, out);
  Value* s = ctx.emit1("Add", {ctx.input(0), ctx.input(1)});
  return ctx.emit1("Add", {s, ctx.input(bias_input)}, {}, out);
}

void infer_skip_norm(InferContext& ctx) {
  infer_same_as_input(ctx, 0, 0);
  if (ctx.output_types.size() > 3) infer_same_as_input(ctx, 0, 3);
  // mean and inv_std_var: float, the input's shape with the last dim 1.
  const Type& x = ctx.input_type(0);
  for (size_t i = 1; i < std::min<size_t>(3, ctx.output_types.size()); ++i) {
    Type t = Type::tensor(D::Float);
    if (x.kind == Type::Kind::Tensor && x.shape.rank_known && !x.shape.dims.empty()) {
      t.shape = x.shape;
      t.shape.dims.back() = known_dim(1);
    }
    ctx.set_output(i, std::move(t));
  }
}

// Emits activation `name` (parameters in the op's attribute order, defaults where missing) reading `x` into `out`.
void activation(ExpandContext& ctx, const std::string& name, const std::vector<float>& params, Value* x, Value* out) {
  auto param = [&](size_t i, float dflt) { return i < params.size() ? params[i] : dflt; };
  if (name.empty() || name == "Identity") {
    ctx.emit1("Identity", {x}, {}, out);
  } else if (name == "Relu" || name == "Tanh" || name == "Sigmoid") {
    ctx.emit1(name, {x}, {}, out);
  } else if (name == "LeakyRelu") {
    ctx.emit1(name, {x}, ExpandContext::attributes(make_attr_float("alpha", param(0, 0.01f))), out);
  } else if (name == "HardSigmoid") {
    ctx.emit1(name, {x},
              ExpandContext::attributes(make_attr_float("alpha", param(0, 0.2f)),
                                        make_attr_float("beta", param(1, 0.5f))),
              out);
  } else if (name == "Clip") {
    const float lo = param(0, std::numeric_limits<float>::lowest()), hi = param(1, std::numeric_limits<float>::max());
    if (ctx.onnx_opset() >= 11) {
      const DataType dt = ctx.input_dtype(0);
      if (dt == D::Undefined) ctx.error("the element type of input 0 is not known");
      ctx.emit1("Clip", {x, ctx.scalar(dt, lo), ctx.scalar(dt, hi)}, {}, out);
    } else {
      ctx.emit1("Clip", {x}, ExpandContext::attributes(make_attr_float("min", lo), make_attr_float("max", hi)),
                out);
    }
  } else {
    ctx.error("activation '" + name + "' is not supported (Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid, Clip)");
  }
}

// The permutation that transBatch (leading axis moved before the last) and trans (last two swapped) make.
std::vector<int64_t> matmul_operand_perm(int64_t rank, bool trans_batch, bool trans) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
  if (trans_batch) {
    perm.clear();
    for (int64_t i = 1; i < rank - 1; ++i) perm.push_back(i);
    perm.push_back(0);
    perm.push_back(rank - 1);
  }
  if (trans) std::swap(perm[static_cast<size_t>(rank - 2)], perm[static_cast<size_t>(rank - 1)]);
  return perm;
}

Value* matmul_operand(ExpandContext& ctx, size_t i, bool trans_batch, bool trans) {
  if (!trans_batch && !trans) return ctx.input(i);
  const int64_t rank = ctx.input_rank(i);
  if (rank < 0) ctx.error(cat("the rank of input ", i, " is not known (transposed operands need it)"));
  if (rank < 2 || (trans_batch && rank < 3))
    ctx.error(cat("input ", i, " has rank ", rank, "; ", trans_batch ? "transBatch needs rank >= 3" : "trans needs rank >= 2"));
  return ctx.emit1("Transpose", {ctx.input(i)},
                   ExpandContext::attributes(make_attr_ints("perm", matmul_operand_perm(rank, trans_batch, trans))));
}

void expand_fused_matmul(ExpandContext& ctx, bool batch_transposes) {
  const bool ta = ctx.attrs.get_int("transA", 0) != 0, tb = ctx.attrs.get_int("transB", 0) != 0;
  const bool tba = batch_transposes && ctx.attrs.get_int("transBatchA", 0) != 0;
  const bool tbb = batch_transposes && ctx.attrs.get_int("transBatchB", 0) != 0;
  const float alpha = ctx.attrs.get_float("alpha", 1.0f);
  Value* a = matmul_operand(ctx, 0, tba, ta);
  Value* b = matmul_operand(ctx, 1, tbb, tb);
  if (alpha == 1.0f) {
    ctx.emit1("MatMul", {a, b}, {}, ctx.output(0));
    return;
  }
  const DataType dt = ctx.input_dtype(0);
  if (dt == D::Undefined) ctx.error("the element type of input 0 is not known");
  ctx.emit1("Mul", {ctx.emit1("MatMul", {a, b}), ctx.scalar(dt, alpha)}, {}, ctx.output(0));
}

void infer_matmul_like(InferContext& ctx) {
  const D dt = ctx.input_dtype(0);
  ctx.set_output(0, dt == D::Undefined ? Type{} : Type::tensor(dt));
}

// Conv's attributes of a fused node (its own activation attributes dropped).
std::vector<Attribute> conv_attributes(const Node& n) {
  std::vector<Attribute> out;
  for (const Attribute& a : n.attributes)
    if (a.name != "activation" && a.name != "activation_params") out.push_back(copy_attribute(a));
  return out;
}

void expand_embed_layer_norm(ExpandContext& ctx) {
  const float epsilon = ctx.attrs.get_float("epsilon", 1e-12f);
  Value* ids = ctx.input(0);
  if (ctx.has_input(1) != ctx.has_input(4)) ctx.error("segment_ids and segment_embedding must be given together");
  Value* sum = ctx.emit1("Gather", {ctx.input(2), ids}, ExpandContext::attributes(make_attr_int("axis", 0)));
  Value* positions = nullptr;
  if (ctx.has_input(8)) {
    positions = ctx.emit1("Gather", {ctx.input(3), ctx.input(8)}, ExpandContext::attributes(make_attr_int("axis", 0)));
  } else {
    // Rows 0..S-1 of the table ([S, H], broadcast over the batch), S = input_ids' dim 1.
    Value* shape = ctx.emit1("Shape", {ids});
    Value* seq = ctx.emit1("Slice", {shape, ctx.int64s({1}), ctx.int64s({2}), ctx.int64s({0})});
    positions = ctx.emit1("Slice", {ctx.input(3), ctx.int64s({0}), seq, ctx.int64s({0})});
  }
  sum = ctx.emit1("Add", {sum, positions});
  if (ctx.has_input(1)) {
    Value* seg = ctx.emit1("Gather", {ctx.input(4), ctx.input(1)}, ExpandContext::attributes(make_attr_int("axis", 0)));
    sum = ctx.emit1("Add", {sum, seg}, {}, ctx.output_wanted(2) ? ctx.output(2) : nullptr);
  } else if (ctx.output_wanted(2)) {
    sum = ctx.emit1("Identity", {sum}, {}, ctx.output(2));
  }
  layer_norm(ctx, sum, ctx.input(5), ctx.input(6), epsilon, {ctx.output(0)});
  if (ctx.output_wanted(1)) {
    if (!ctx.has_input(7)) ctx.error("mask_index is read but there is no mask input to count it from");
    std::vector<Attribute> attrs = ExpandContext::attributes(make_attr_int("keepdims", 0));
    std::vector<Value*> in = {ctx.input(7)};
    if (ctx.onnx_opset() >= 13) in.push_back(ctx.int64s({1}));
    else attrs.push_back(make_attr_ints("axes", {1}));
    Value* count = ctx.emit1("ReduceSum", std::move(in), std::move(attrs));
    ctx.emit1("Cast", {count}, ExpandContext::attributes(make_attr_int("to", static_cast<int64_t>(D::Int32))),
              ctx.output(1));
  }
}

void infer_embed_layer_norm(InferContext& ctx) {
  const D dt = ctx.input_dtype(2);
  ctx.set_output(0, dt == D::Undefined ? Type{} : Type::tensor(dt));
  if (ctx.output_types.size() > 1) ctx.set_output(1, Type::tensor(D::Int32));
  if (ctx.output_types.size() > 2) ctx.set_output(2, dt == D::Undefined ? Type{} : Type::tensor(dt));
}

}  // namespace

void register_contrib_nn(Registry& r) {
  const TypeConstraint all_float{{-1}, kHalfAndFloat};

  r.add(OpDef{kMsNnDomain, "Gelu", 1, {all_float}, infer_like_input0, nullptr,
              [](ExpandContext& ctx) { gelu(ctx, ctx.input(0), "none", ctx.output(0)); }});

  r.add(OpDef{kMsNnDomain, "FastGelu", 1, {all_float}, infer_like_input0, nullptr, [](ExpandContext& ctx) {
                Value* x = ctx.input(0);
                if (ctx.has_input(1)) x = ctx.emit1("Add", {x, ctx.input(1)});
                gelu(ctx, x, "tanh", ctx.output(0));
              }});

  r.add(OpDef{kMsNnDomain, "BiasGelu", 1, {all_float}, infer_like_input0, nullptr, [](ExpandContext& ctx) {
                gelu(ctx, ctx.emit1("Add", {ctx.input(0), ctx.input(1)}), "none", ctx.output(0));
              }});

  r.add(OpDef{kMsNnDomain, "QuickGelu", 1, {all_float}, infer_like_input0, nullptr, [](ExpandContext& ctx) {
                const float alpha = ctx.attrs.get_float("alpha", 1.702f);
                const D dt = ctx.input_dtype(0);
                if (dt == D::Undefined) ctx.error("the element type of input 0 is not known");
                Value* scaled = ctx.emit1("Mul", {ctx.input(0), ctx.scalar(dt, alpha)});
                Value* gate = ctx.emit1("Sigmoid", {scaled});
                ctx.emit1("Mul", {ctx.input(0), gate}, {}, ctx.output(0));
              }});

  r.add(OpDef{kMsNnDomain, "BiasAdd", 1, {all_float}, infer_like_input0, nullptr, [](ExpandContext& ctx) {
                Value* s = ctx.emit1("Add", {ctx.input(0), ctx.input(1)});
                ctx.emit1("Add", {s, ctx.input(2)}, {}, ctx.output(0));
              }});

  r.add(OpDef{kMsNnDomain, "SkipLayerNormalization", 1, {all_float}, infer_skip_norm, nullptr, [](ExpandContext& ctx) {
                const float epsilon = ctx.attrs.get_float("epsilon", 1e-12f);
                Value* sum = skip_sum(ctx, 4, 3);
                layer_norm(ctx, sum, ctx.input(2), ctx.input(3), epsilon,
                           {ctx.output(0), ctx.output_wanted(1) ? ctx.output(1) : nullptr,
                            ctx.output_wanted(2) ? ctx.output(2) : nullptr});
              }});

  r.add(OpDef{kMsNnDomain, "SkipSimplifiedLayerNormalization", 1, {all_float}, infer_skip_norm, nullptr,
              [](ExpandContext& ctx) {
                const float epsilon = ctx.attrs.get_float("epsilon", 1e-12f);
                if (ctx.output_wanted(1) || ctx.output_wanted(2))
                  ctx.error("outputs mean and inv_std_var are not supported (only output and input_skip_bias_sum)");
                Value* sum = skip_sum(ctx, 3, 3);
                std::vector<Attribute> attrs = ExpandContext::attributes(make_attr_int("axis", -1),
                                                                         make_attr_float("epsilon", epsilon));
                const bool standard = ctx.onnx_opset() >= 23;
                ctx.emit("RMSNormalization", standard ? "" : kFusedDomain, {sum, ctx.input(2)}, {ctx.output(0)},
                         std::move(attrs));
              }});

  r.add(OpDef{kMsNnDomain, "EmbedLayerNormalization", 1,
              {{{0, 1, 7, 8}, {D::Int32}}, {{2, 3, 4, 5, 6}, kHalfAndFloat}}, infer_embed_layer_norm, nullptr,
              expand_embed_layer_norm});

  r.add(OpDef{kMsNnDomain, "FusedMatMul", 1, {all_float}, infer_matmul_like, nullptr,
              [](ExpandContext& ctx) { expand_fused_matmul(ctx, true); }});
  r.add(OpDef{kMsNnDomain, "TransposeMatMul", 1, {all_float}, infer_matmul_like, nullptr,
              [](ExpandContext& ctx) { expand_fused_matmul(ctx, false); }});

  r.add(OpDef{kMsNnDomain, "SparseToDenseMatMul", 1, {{{0, 1}, {D::Float, D::Double, D::Int32, D::Int64, D::UInt32, D::UInt64}}},
              infer_matmul_like, nullptr, [](ExpandContext& ctx) {
                for (size_t i = 0; i < 2; ++i) {
                  const int64_t rank = ctx.input_rank(i);
                  if (rank >= 0 && rank != 2) ctx.error(cat("input ", i, " has rank ", rank, ", expected 2"));
                }
                // Gemm (2-D, C optional from opset 11) is the op; before it, the transposes and a product.
                if (ctx.onnx_opset() < 11) return expand_fused_matmul(ctx, false);
                std::vector<Attribute> gemm = ExpandContext::attributes(
                    make_attr_float("alpha", ctx.attrs.get_float("alpha", 1.0f)),
                    make_attr_int("transA", ctx.attrs.get_int("transA", 0)), make_attr_int("transB", ctx.attrs.get_int("transB", 0)));
                ctx.emit1("Gemm", {ctx.input(0), ctx.input(1)}, std::move(gemm), ctx.output(0));
              }});

  r.add(OpDef{kMsNnDomain, "FusedConv", 1, {all_float}, infer_matmul_like, nullptr, [](ExpandContext& ctx) {
                std::vector<Value*> in = {ctx.input(0), ctx.input(1)};
                if (ctx.has_input(2)) in.push_back(ctx.input(2));
                Value* y = ctx.emit1("Conv", std::move(in), conv_attributes(ctx.node));
                if (ctx.has_input(3)) y = ctx.emit1("Add", {y, ctx.input(3)});
                activation(ctx, ctx.attrs.get_string("activation", ""), ctx.attrs.get_floats("activation_params", std::vector<float>{}),
                           y, ctx.output(0));
              }});

  r.add(OpDef{kMsNnDomain, "FusedGemm", 1, {all_float}, infer_matmul_like, nullptr, [](ExpandContext& ctx) {
                std::vector<Attribute> gemm;
                for (const char* name : {"alpha", "beta"})
                  if (ctx.attrs.has(name)) gemm.push_back(make_attr_float(name, ctx.attrs.get_float(name)));
                for (const char* name : {"transA", "transB"})
                  if (ctx.attrs.has(name)) gemm.push_back(make_attr_int(name, ctx.attrs.get_int(name)));
                std::vector<Value*> in = {ctx.input(0), ctx.input(1)};
                if (ctx.has_input(2)) in.push_back(ctx.input(2));
                Value* y = ctx.emit1("Gemm", std::move(in), std::move(gemm));
                const std::string act = ctx.attrs.get_string("activation", "");
                if (act == "Clip") ctx.error("activation 'Clip' of FusedGemm is not supported");
                std::vector<float> params;
                if (ctx.attrs.has("activation_alpha")) params.push_back(ctx.attrs.get_float("activation_alpha"));
                if (ctx.attrs.has("activation_beta")) params.push_back(ctx.attrs.get_float("activation_beta"));
                activation(ctx, act, params, y, ctx.output(0));
              }});

  r.add(OpDef{kMsNnDomain, "GridSample", 1, {all_float}, infer_matmul_like, nullptr, [](ExpandContext& ctx) {
                std::vector<Attribute> attrs = conv_attributes(ctx.node);
                ctx.emit("GridSample", ctx.onnx_opset() >= 16 ? "" : kFusedDomain, {ctx.input(0), ctx.input(1)},
                         {ctx.output(0)}, std::move(attrs));
              }});
}

}  // namespace onyx::ops
