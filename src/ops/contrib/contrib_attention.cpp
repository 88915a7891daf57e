// ONNX Runtime's contrib attention ops (domain com.microsoft, version 1), as its transformer optimizer writes them
// for BERT-like encoders, GPT-2, ViT and Whisper. Each is defined by the standard and ai.onyx nodes that compute it
// (OpDef::expand): a session replaces it at load, so the projections become MatMul + Add of constants (which the
// optimizer packs into FusedMatMul; Attention's merged Q/K/V weight stays one product, its result split) and the
// attention itself one ai.onyx Attention (= Attention-23) on 4-D [batch, heads, seq, head_size] tensors with at
// most a float additive mask: the form its fast path takes.
//   Attention(input [B,S,Hin], weights [Hin, H+H+Hv], bias? [H+H+Hv], mask_index? (int32), past? [2,B,N,P,h],
//             attention_bias? [B|1, N|1, S, T], past_sequence_length?) -> output [B,S,Hv], present? [2,B,N,T,h]
//       Self-attention with the Q/K/V projections merged into one weight (split by qkv_hidden_sizes, else in
//       three equal parts); num_heads N; T = P + S. mask_index forms: [B, T] or [B, S, T] raw (> 0 attends,
//       else mask_filter_value, default -10000, is added), [B] key lengths (keys at or after them get the filter
//       value), [2B] ends then starts (keys before the start too); longer 1-D forms (ORT's [3B+2]) are read for
//       their first B values, the key lengths, as ORT's CPU kernel does. unidirectional: query i sees key j only
//       when j <= i + P (the others get the type's lowest value, replacing the mask's as ORT does). scale 0 (the
//       default) means 1/sqrt(h). present stacks past + new keys and values.
//   QAttention(input (8-bit) [B,S,Hin], weight (8-bit) [Hin, 3H], bias [3H], input_scale, weight_scale (one value
//             or [3H]), mask_index?, input_zero_point?, weight_zero_point? (one value or [3H]), past?)
//             -> output [B,S,H], present?
//       Attention whose projection is (input - input_zp) x (weight - weight_zp) * input_scale * weight_scale + bias
//       (what ONNX Runtime's dynamic quantization makes of Attention, the input from DynamicQuantizeLinear).
//   MultiHeadAttention(query [B,S,D], key?, value?, bias? [D+D+Dv], key_padding_mask? (int32), attention_bias?,
//             past_key? [B,N,P,h], past_value?, past_sequence_length?, cache_indirection?)
//             -> output [B,S,Dv], present_key? [B,N,T,h], present_value?, qk?
//       Attention over already projected inputs: key/value [B,L,D]/[B,L,Dv] (bias slices added to Q, K, V), or
//       key/value already split in heads [B,N,L,h] (cross attention reusing the encoder's; no bias or past then).
//       key_padding_mask: [B] key lengths, [B, T] or [B, S, T] raw (as Attention's); unidirectional as Attention's
//       (ORT's CPU kernel leaves the last query row unmasked when L > S, a cross attention nobody makes causal).
//   RotaryEmbedding(input [B,S,N*h] or [B,N,S,h], position_ids [B,S] or [1] (an offset: positions offset + s),
//             cos_cache [M, r/2], sin_cache [M, r/2]) -> output like input
//       RoPE over the first r = rotary_embedding_dim (0: the head size, 2 * the caches' width) channels of each
//       head, as halves or (interleaved) even/odd pairs; the others pass through. scale only matters to ORT for
//       caches it would have to extend, which it does not do either.
//   GroupQueryAttention(query [B,S,N*h] (or packed [B,S,(N+2Nkv)*h] without key/value), key? [B,S,Nkv*h],
//             value?, past_key? [B,Nkv,P,h], past_value?, seqlens_k [B], total_sequence_length, cos_cache?,
//             sin_cache?, position_ids?, attention_bias?) -> output [B,S,N*h], present_key, present_value
//       Causal attention over a KV cache, query head q reading kv head q / (N / Nkv). Entry b holds
//       T_b = seqlens_k[b] + 1 tokens, the past being P_b = T_b - S, or none in a first prompt (S equal to
//       total_sequence_length, T_b < S for right padding). present has max(total_sequence_length, P) rows:
//       past rows [0, P_b), the new ones at [P_b, P_b + S), zeros after. Query i sees keys j <= P_b + i, and with
//       local_window_size W only the last W of them. do_rotary rotates Q and K first (positions P_b + i unless
//       position_ids are given; width twice the caches'); softcap applies to the scaled scores.
// Refused with an error naming the form: 4-D mask_index (Megatron), past_present_share_buffer,
// past_sequence_length, do_rotary in Attention, packed QKV / KV in MultiHeadAttention (not in ORT's CPU kernel
// either), cache_indirection, qk outputs, is_packed_batching; in GroupQueryAttention smooth_softmax, causal = 0,
// quantized caches, sliding_window_cache and head_sink.
#include <limits>

#include "ops/fused/fused.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
using E = ExpandContext;
constexpr const char* kMsAttentionDomain = "com.microsoft";
const std::vector<D> kAttentionFloats = {D::Float, D::Float16, D::BFloat16};
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Emits standard ops in the forms valid at the model's ai.onnx opset (axes as attributes or inputs...).
class Builder {
 public:
  explicit Builder(E& ctx) : ctx_(ctx), opset_(ctx.onnx_opset()) {}
  E& ctx() { return ctx_; }
  int64_t opset() const { return opset_; }

  // Refuses a form whose ops (Range, Slice by inputs...) are newer than the model's ai.onnx opset.
  void need_opset(int64_t v, const char* what) {
    if (opset_ < v) ctx_.error(cat(what, " needs ai.onnx opset ", v, " or later (the model has ", opset_, ")"));
  }

  Value* op(const std::string& type, std::vector<Value*> in, std::vector<Attribute> attrs = {}, Value* out = nullptr) {
    return ctx_.emit1(type, std::move(in), std::move(attrs), out);
  }
  Value* unsqueeze(Value* x, std::vector<int64_t> axes) {
    if (opset_ >= 13) return op("Unsqueeze", {x, ctx_.int64s(axes)});
    return op("Unsqueeze", {x}, E::attributes(make_attr_ints("axes", std::move(axes))));
  }
  Value* transpose(Value* x, std::vector<int64_t> perm, Value* out = nullptr) {
    return op("Transpose", {x}, E::attributes(make_attr_ints("perm", std::move(perm))), out);
  }
  Value* reshape(Value* x, const std::vector<int64_t>& shape, Value* out = nullptr) {
    return op("Reshape", {x, ctx_.int64s(shape)}, {}, out);
  }
  Value* reshape(Value* x, Value* shape, Value* out = nullptr) { return op("Reshape", {x, shape}, {}, out); }
  Value* concat(std::vector<Value*> xs, int64_t axis, Value* out = nullptr) {
    return op("Concat", std::move(xs), E::attributes(make_attr_int("axis", axis)), out);
  }
  Value* cast(Value* x, D to) { return op("Cast", {x}, E::attributes(make_attr_int("to", static_cast<int64_t>(to)))); }
  // Dim `axis` of x: as a 1-D [1] int64 tensor, or as a scalar.
  Value* dim1(Value* x, int64_t axis) { return op("Gather", {op("Shape", {x}), ctx_.int64s({axis})}); }
  Value* dim0(Value* x, int64_t axis) { return op("Gather", {op("Shape", {x}), ctx_.scalar(D::Int64, double(axis))}); }
  // x[starts:ends] along `axis`, with 1-D [1] int64 bounds (Slice takes them as inputs from opset 10).
  Value* slice(Value* x, Value* starts, Value* ends, int64_t axis) {
    need_opset(10, "slicing by computed bounds");
    return op("Slice", {x, starts, ends, ctx_.int64s({axis})});
  }
  // [0, 1, ..., n) as int64, n a scalar.
  Value* range(Value* n) { return range(ctx_.scalar(D::Int64, 0), n); }
  Value* range(Value* start, Value* limit) {
    need_opset(11, "a computed range (Range)");
    return op("Range", {start, limit, ctx_.scalar(D::Int64, 1)});
  }
  // Splits x along `axis` into parts of `sizes`, or into `n` equal parts when sizes is empty.
  std::vector<Value*> split(Value* x, int64_t axis, const std::vector<int64_t>& sizes, size_t n) {
    std::vector<Attribute> attrs = E::attributes(make_attr_int("axis", axis));
    std::vector<Value*> in = {x};
    if (!sizes.empty()) {
      if (opset_ >= 13) in.push_back(ctx_.int64s(sizes));
      else attrs.push_back(make_attr_ints("split", sizes));
    } else if (opset_ >= 18) {
      attrs.push_back(make_attr_int("num_outputs", static_cast<int64_t>(n)));
    }
    return ctx_.emit("Split", "", std::move(in), std::vector<Value*>(n, nullptr), std::move(attrs));
  }

 private:
  E& ctx_;
  int64_t opset_;
};

// The most negative finite value of a float type: what ORT writes for keys a causal mask hides.
double lowest_of(D dt) {
  switch (dt) {
    case D::Float16: return -65504.0;
    case D::BFloat16: return -3.3895313892515355e38;  // largest finite bfloat16 (FLT_MAX would round to infinity)
    case D::Double: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

// Element type of the node's input i, which must be known (constants and masks are made in it).
D known_dtype(E& ctx, size_t i) {
  const D dt = ctx.input_dtype(i);
  if (dt == D::Undefined) ctx.error(cat("the element type of input ", i, " is not known"));
  return dt;
}

// [B, L, N*h] -> [B, N, L, h].
Value* split_heads(Builder& b, Value* x, int64_t heads) {
  return b.transpose(b.reshape(x, {0, 0, heads, -1}), {0, 2, 1, 3});
}

// What shapes the additive mask of an attention: the node's mask input (int32, ORT's forms), its attention_bias,
// the causal flag, and the query / all-keys tensors [B, N, S, h] / [B, N, T, h] it measures S and T from.
struct MaskSpec {
  Value* mask = nullptr;  // int32 mask_index / key_padding_mask
  int64_t mask_rank = -1;
  bool starts_allowed = false;  // a 1-D mask of length 2B holds starts too (Attention's form)
  Value* bias = nullptr;        // attention_bias, of the query's type
  bool causal = false;
  Value* past_len = nullptr;  // int64 scalar P, the causal offset (null: 0)
  float filter = -10000.0f;
};

// The float additive mask over the scores [B, N, S, T] (broadcast from [B,1,1,T], [B,1,S,T], [S,T] or
// attention_bias's shape), or null when there is none.
Value* build_mask(Builder& b, const MaskSpec& m, D dt, Value* q4, Value* k4) {
  E& ctx = b.ctx();
  Value* pad = nullptr;  // from the mask input, [B,1,1,T] or [B,1,S,T]
  if (m.mask) {
    b.need_opset(11, "an attention mask");
    Value* zero = ctx.scalar(dt, 0.0), *filter = ctx.scalar(dt, m.filter);
    if (m.mask_rank == 2 || m.mask_rank == 3) {
      // Raw 0/1 mask: [B, T] or [B, S, T].
      Value* keep = b.op("Greater", {m.mask, ctx.scalar(D::Int32, 0)});
      Value* add = b.op("Where", {keep, zero, filter});
      pad = b.unsqueeze(add, m.mask_rank == 2 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1});
    } else if (m.mask_rank == 1) {
      // Key lengths: the first B values (Reshape to [B] fails on a shorter mask rather than broadcasting it).
      Value* batch = b.dim1(q4, 0);
      Value* ends = b.reshape(b.slice(m.mask, ctx.int64s({0}), batch, 0), batch);
      Value* j = b.unsqueeze(b.range(b.dim0(k4, 2)), {0});  // [1, T]
      Value* hidden = b.op("Not", {b.op("Less", {j, b.unsqueeze(b.cast(ends, D::Int64), {1})})});
      if (m.starts_allowed) {
        // [2B]: starts follow the ends. Read from the mask twice over so the slice exists for any length >= B,
        // then kept only when the length is 2B.
        Value* twice = b.op("Mul", {batch, ctx.int64s({2})});
        Value* both = b.concat({m.mask, m.mask}, 0);
        Value* starts = b.slice(both, batch, twice, 0);
        Value* has_starts = b.op("Equal", {b.dim1(m.mask, 0), twice});
        starts = b.op("Where", {has_starts, starts, ctx.scalar(D::Int32, 0)});
        Value* before = b.op("Less", {j, b.unsqueeze(b.cast(starts, D::Int64), {1})});
        hidden = b.op("Or", {hidden, before});
      }
      pad = b.unsqueeze(b.op("Where", {hidden, filter, zero}), {1, 2});
    } else if (m.mask_rank == 4) {
      ctx.error("a 4-D mask_index (Megatron's [B, 1, max, max]) is not supported (nor by ORT's CPU kernel)");
    } else {
      ctx.error(m.mask_rank < 0 ? "the rank of the mask input is not known"
                                : cat("a mask of rank ", m.mask_rank, " is not one of ORT's forms"));
    }
  }
  Value* mask = pad;
  if (m.causal) {
    // Query i (of S) sees key j (of T) when j <= i + P.
    Value* i = b.range(b.dim0(q4, 2));
    if (m.past_len) i = b.op("Add", {i, m.past_len});
    Value* j = b.range(b.dim0(k4, 2));
    Value* ahead = b.op("Greater", {b.unsqueeze(j, {0}), b.unsqueeze(i, {1})});  // [S, T]
    mask = b.op("Where", {ahead, ctx.scalar(dt, lowest_of(dt)), pad ? pad : ctx.scalar(dt, 0.0)});
  }
  if (m.bias) mask = mask ? b.op("Add", {mask, m.bias}) : m.bias;
  return mask;
}

// Attention of q4 over k4/v4 ([B, N, *, h]) with the mask, written to output 0 as [B, S, N*hv].
void attend(Builder& b, Value* q4, Value* k4, Value* v4, Value* mask, float scale, float softcap = 0) {
  E& ctx = b.ctx();
  std::vector<Attribute> attrs;
  if (scale != 0) attrs.push_back(make_attr_float("scale", scale));
  if (softcap != 0) attrs.push_back(make_attr_float("softcap", softcap));
  Value* y4 = ctx.emit1("Attention", {q4, k4, v4, mask}, std::move(attrs), nullptr, kFusedDomain);
  b.reshape(b.transpose(y4, {0, 2, 1, 3}), {0, 0, -1}, ctx.output(0));
}

void refuse_attr(E& ctx, const char* name) {
  if (ctx.attrs.get_int(name, 0) != 0) ctx.error(cat("attribute ", name, " is not supported"));
}

int64_t num_heads(E& ctx) {
  const int64_t n = ctx.attrs.get_int("num_heads");
  if (n <= 0) ctx.error(cat("num_heads must be positive, got ", n));
  return n;
}

// ---------------------------------------------------------------------------------------------------------------
// Attention

// Where Attention and QAttention keep their inputs (after input, weights and bias, which both have first).
struct AttentionInputs {
  bool quantized;          // QAttention: 8-bit input and weights, the projection an integer product
  size_t mask, past, bias;  // mask_index, past, attention_bias (SIZE_MAX: the op has none)
};
constexpr size_t kNone = SIZE_MAX;

// The merged Q/K/V projection of QAttention: the integer product of the 8-bit input and weights, scaled by
// input_scale * weight_scale (per tensor or per column), plus the float bias. In the form matmul-integer-fusion
// turns into one MatMulIntegerToFloat.
Value* quantized_projection(E& ctx, Builder& b, D dt) {
  Value* acc = b.op("MatMulInteger", {ctx.input(0), ctx.input(1), ctx.input(6), ctx.input(7)});
  Value* y = b.op("Mul", {b.op("Cast", {acc}, E::attributes(make_attr_int("to", static_cast<int64_t>(dt)))),
                          b.op("Mul", {ctx.input(3), ctx.input(4)})});
  return b.op("Add", {y, ctx.input(2)});
}

void expand_attention_with(E& ctx, const AttentionInputs& in) {
  Builder b(ctx);
  const int64_t heads = num_heads(ctx);
  refuse_attr(ctx, "do_rotary");
  refuse_attr(ctx, "past_present_share_buffer");
  if (!in.quantized && ctx.has_input(6))
    ctx.error("input past_sequence_length (for past_present_share_buffer) is not supported");
  const D dt = known_dtype(ctx, in.quantized ? 2 : 0);
  if (const int64_t r = ctx.input_rank(0); r >= 0 && r != 3) ctx.error(cat("input must be 3-D, got rank ", r));

  // Split sizes of the merged projection.
  std::vector<int64_t> sizes = ctx.attrs.get_ints("qkv_hidden_sizes", std::vector<int64_t>{});
  if (!sizes.empty()) {
    if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] <= 0 || sizes[2] <= 0)
      ctx.error("qkv_hidden_sizes must be 3 positive sizes, the first two equal");
    for (int64_t s : sizes)
      if (s % heads != 0) ctx.error(cat("qkv_hidden_sizes ", s, " is not a multiple of num_heads ", heads));
  }
  const Tensor* w = ctx.input_value(1);
  if (w) {
    if (w->dims().size() != 2) ctx.error("weights must be 2-D");
    const int64_t total = w->dims()[1];
    if (sizes.empty()) {
      if (total % 3 != 0) ctx.error(cat("weights have ", total, " columns, not 3 equal parts"));
      sizes = {total / 3, total / 3, total / 3};
    } else if (sizes[0] + sizes[1] + sizes[2] != total) {
      ctx.error(cat("qkv_hidden_sizes add up to ", sizes[0] + sizes[1] + sizes[2], ", weights have ", total,
                    " columns"));
    }
  }
  std::vector<Value*> qkv(3);
  if (in.quantized) {
    std::vector<Value*> parts = b.split(quantized_projection(ctx, b, dt), 2, sizes, 3);
    for (size_t p = 0; p < 3; ++p) qkv[p] = split_heads(b, parts[p], heads);
  } else if (w) {
    // One product with the merged weight (one GEMM of all the columns, the weight packed as it is in the file),
    // then the result split into Q, K and V.
    if (const Tensor* bias = ctx.has_input(2) ? ctx.input_value(2) : nullptr;
        bias && (bias->dims().size() != 1 || bias->dims()[0] != w->dims()[1]))
      ctx.error(cat("bias must be 1-D of ", w->dims()[1], " elements"));
    Value* y = b.op("MatMul", {ctx.input(0), ctx.input(1)});
    if (ctx.has_input(2)) y = b.op("Add", {y, ctx.input(2)});
    std::vector<Value*> parts = b.split(y, 2, sizes, 3);
    for (size_t p = 0; p < 3; ++p) qkv[p] = split_heads(b, parts[p], heads);
  } else {
    std::vector<Value*> ws = b.split(ctx.input(1), 1, sizes, 3), bs(3, nullptr);
    if (ctx.has_input(2)) bs = b.split(ctx.input(2), 0, sizes, 3);
    for (size_t p = 0; p < 3; ++p) {
      Value* y = b.op("MatMul", {ctx.input(0), ws[p]});
      if (bs[p]) y = b.op("Add", {y, bs[p]});
      qkv[p] = split_heads(b, y, heads);
    }
  }
  Value* k4 = qkv[1], *v4 = qkv[2];
  MaskSpec m;
  if (in.past != kNone && ctx.has_input(in.past)) {
    // past [2, B, N, P, h]: keys then values, before the new ones.
    Value* past = ctx.input(in.past);
    k4 = b.concat({b.op("Gather", {past, ctx.scalar(D::Int64, 0)}), k4}, 2);
    v4 = b.concat({b.op("Gather", {past, ctx.scalar(D::Int64, 1)}), v4}, 2);
    m.past_len = b.dim0(past, 3);
  }
  if (ctx.output_wanted(1)) b.concat({b.unsqueeze(k4, {0}), b.unsqueeze(v4, {0})}, 0, ctx.output(1));
  m.mask = ctx.input(in.mask);
  m.mask_rank = ctx.input_rank(in.mask);
  m.starts_allowed = true;
  m.bias = in.bias != kNone ? ctx.input(in.bias) : nullptr;
  m.causal = ctx.attrs.get_int("unidirectional", 0) != 0;
  m.filter = ctx.attrs.get_float("mask_filter_value", -10000.0f);
  attend(b, qkv[0], k4, v4, build_mask(b, m, dt, qkv[0], k4), ctx.attrs.get_float("scale", 0.0f));
}

void expand_attention(E& ctx) { expand_attention_with(ctx, {false, 3, 4, 5}); }
void expand_qattention(E& ctx) { expand_attention_with(ctx, {true, 5, 8, kNone}); }

void infer_contrib_attention(InferContext& ctx) {
  const D dt = ctx.input_dtype(0);
  const int64_t heads = ctx.attrs.get_int("num_heads");
  if (heads <= 0) ctx.error(cat("num_heads must be positive, got ", heads));
  std::vector<int64_t> sizes = ctx.attrs.get_ints("qkv_hidden_sizes", std::vector<int64_t>{});
  if (sizes.empty())
    if (auto total = dim_of(ctx, 1, 1).value; total && *total % 3 == 0) sizes = {*total / 3, *total / 3, *total / 3};
  Dim hv, h;
  if (sizes.size() == 3) hv = known_dim(sizes[2]), h = known_dim(sizes[0] / heads);
  const bool x3 = input_rank(ctx, 0) == 3;
  ctx.set_output(0, Type::tensor(dt, x3 ? shape_from({dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), hv}) : Shape{}));
  if (ctx.output_types.size() > 1) {
    Dim total;
    auto s = dim_of(ctx, 0, 1).value;
    auto p = ctx.has_input(4) ? dim_of(ctx, 4, 3).value : std::optional<int64_t>{0};
    if (s && p) total = known_dim(*s + *p);
    else if (!ctx.has_input(4)) total = dim_of(ctx, 0, 1);
    ctx.set_output(1, Type::tensor(dt, shape_from({known_dim(2), dim_of(ctx, 0, 0), known_dim(heads), total, h})));
  }
}

// QAttention: outputs of the float type of its bias; the output [B, S, H] with H a third of the weight's columns.
void infer_qattention(InferContext& ctx) {
  const D dt = ctx.input_dtype(2);
  const bool x3 = input_rank(ctx, 0) == 3;
  Dim h;
  if (auto total = dim_of(ctx, 1, 1).value; total && *total % 3 == 0) h = known_dim(*total / 3);
  ctx.set_output(0, Type::tensor(dt, x3 ? shape_from({dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), h}) : Shape{}));
  if (ctx.output_types.size() > 1) ctx.set_output(1, Type::tensor(dt));
}

// ---------------------------------------------------------------------------------------------------------------
// MultiHeadAttention

void expand_mha(E& ctx) {
  Builder b(ctx);
  const int64_t heads = num_heads(ctx);
  const D dt = known_dtype(ctx, 0);
  if (ctx.has_input(8)) ctx.error("input past_sequence_length (a shared past/present buffer) is not supported");
  if (ctx.has_input(9)) ctx.error("input cache_indirection (beam search) is not supported");
  if (ctx.output_wanted(3)) ctx.error("output qk is not supported");
  const int64_t qr = ctx.input_rank(0);
  if (qr == 5) ctx.error("packed QKV in query ([B, L, N, 3, h]) is not supported (nor by ORT's CPU kernel)");
  if (qr != 3) ctx.error(qr < 0 ? "the rank of query is not known" : cat("query must be 3-D, got rank ", qr));
  if (!ctx.has_input(1)) ctx.error("a query without key (packed QKV) is not supported");
  const int64_t kr = ctx.input_rank(1), vr = ctx.has_input(2) ? ctx.input_rank(2) : -1;
  if (kr == 5) ctx.error("packed KV in key ([B, L, N, 2, h]) is not supported (nor by ORT's CPU kernel)");
  if (!ctx.has_input(2)) ctx.error("value is required with a 3-D or 4-D key");
  if (kr < 0 || vr < 0) ctx.error("the ranks of key and value are not known");
  if (kr != vr || (kr != 3 && kr != 4))
    ctx.error(cat("key and value must both be 3-D or both 4-D, got ranks ", kr, " and ", vr));
  const bool has_past = ctx.has_input(6) || ctx.has_input(7);
  if (ctx.has_input(6) != ctx.has_input(7)) ctx.error("past_key and past_value must be given together");

  Value* q = ctx.input(0), *k = ctx.input(1), *v = ctx.input(2);
  Value* k4 = nullptr, *v4 = nullptr;
  if (kr == 4) {
    // Keys and values already in heads (a decoder's cross attention over the encoder's).
    if (ctx.has_input(3)) ctx.error("bias with 4-D key and value is not supported");
    if (has_past) ctx.error("past_key / past_value with 4-D key and value are not allowed");
    k4 = k, v4 = v;
  }
  if (ctx.has_input(3)) {
    // bias [D + D + Dv]: D is the query's hidden size (from its shape; folded when static).
    Value* d = b.dim1(q, 2);
    Value* d2 = b.op("Mul", {d, ctx.int64s({2})});
    Value* bias = ctx.input(3);
    q = b.op("Add", {q, b.slice(bias, ctx.int64s({0}), d, 0)});
    k = b.op("Add", {k, b.slice(bias, d, d2, 0)});
    v = b.op("Add", {v, b.slice(bias, d2, ctx.int64s({kInt64Max}), 0)});
  }
  Value* q4 = split_heads(b, q, heads);
  if (!k4) k4 = split_heads(b, k, heads), v4 = split_heads(b, v, heads);
  MaskSpec m;
  if (has_past) {
    k4 = b.concat({ctx.input(6), k4}, 2);
    v4 = b.concat({ctx.input(7), v4}, 2);
    m.past_len = b.dim0(ctx.input(6), 2);
  }
  if (ctx.output_wanted(1)) b.op("Identity", {k4}, {}, ctx.output(1));
  if (ctx.output_wanted(2)) b.op("Identity", {v4}, {}, ctx.output(2));
  m.mask = ctx.input(4);
  m.mask_rank = ctx.input_rank(4);
  m.bias = ctx.input(5);
  m.causal = ctx.attrs.get_int("unidirectional", 0) != 0;
  m.filter = ctx.attrs.get_float("mask_filter_value", -10000.0f);
  attend(b, q4, k4, v4, build_mask(b, m, dt, q4, k4), ctx.attrs.get_float("scale", 0.0f));
}

void infer_mha(InferContext& ctx) {
  const D dt = ctx.input_dtype(0);
  const int64_t heads = ctx.attrs.get_int("num_heads");
  if (heads <= 0) ctx.error(cat("num_heads must be positive, got ", heads));
  const int64_t vr = input_rank(ctx, 2);
  Dim dv, h, hv;
  if (auto d = dim_of(ctx, 0, 2).value; d && input_rank(ctx, 0) == 3) h = known_dim(*d / heads);
  if (vr == 3) {
    if (auto x = dim_of(ctx, 2, 2).value) dv = known_dim(*x), hv = known_dim(*x / heads);
  } else if (vr == 4) {
    auto n = dim_of(ctx, 2, 1).value, x = dim_of(ctx, 2, 3).value;
    if (n && x) dv = known_dim(*n * *x);
    hv = dim_of(ctx, 2, 3);
  }
  const bool q3 = input_rank(ctx, 0) == 3;
  ctx.set_output(0, Type::tensor(dt, q3 ? shape_from({dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), dv}) : Shape{}));
  Dim total;
  const size_t kv_axis = vr == 4 ? 2 : 1;
  auto l = dim_of(ctx, 1, kv_axis).value;
  auto p = ctx.has_input(6) ? dim_of(ctx, 6, 2).value : std::optional<int64_t>{0};
  if (l && p) total = known_dim(*l + *p);
  else if (!ctx.has_input(6)) total = dim_of(ctx, 1, kv_axis);
  if (ctx.output_types.size() > 1)
    ctx.set_output(1, Type::tensor(dt, shape_from({dim_of(ctx, 0, 0), known_dim(heads), total, h})));
  if (ctx.output_types.size() > 2)
    ctx.set_output(2, Type::tensor(dt, shape_from({dim_of(ctx, 0, 0), known_dim(heads), total, hv})));
  if (ctx.output_types.size() > 3) ctx.set_output(3, Type::tensor(dt));
}

// ---------------------------------------------------------------------------------------------------------------
// RotaryEmbedding

void expand_rotary(E& ctx) {
  Builder b(ctx);
  if (ctx.attrs.get_int("is_packed_batching", 0) != 0)
    ctx.error("is_packed_batching (ragged batches) is not supported");
  const int64_t heads = ctx.attrs.get_int("num_heads", 0);
  const int64_t rot = ctx.attrs.get_int("rotary_embedding_dim", 0);
  if (rot > 0 && heads <= 0) ctx.error("rotary_embedding_dim needs num_heads");
  const int64_t rank = ctx.input_rank(0);
  if (rank != 3 && rank != 4)
    ctx.error(rank < 0 ? "the rank of input is not known" : cat("input must be 3-D or 4-D, got rank ", rank));
  Value* x = ctx.input(0), *cos = ctx.input(2), *sin = ctx.input(3);
  const int64_t seq_axis = rank == 3 ? 1 : 2;

  // Positions [B, S]: given, or offset + [0, S) for every batch entry.
  Value* pos = ctx.input(1);
  const int64_t pr = ctx.input_rank(1);
  if (pr == 0 || pr == 1) {
    Value* offset = b.reshape(pos, std::vector<int64_t>{});  // a scalar (a [1] of another length fails here)
    Value* row = b.range(offset, b.op("Add", {offset, b.dim0(x, seq_axis)}));
    pos = b.op("Expand", {b.unsqueeze(row, {0}), b.concat({b.dim1(x, 0), b.dim1(x, seq_axis)}, 0)});
  } else if (pr != 2) {
    ctx.error(pr < 0 ? "the rank of position_ids is not known"
                     : cat("position_ids must be [1] or [B, S], got rank ", pr));
  }

  std::vector<Attribute> attrs = E::attributes(make_attr_int("interleaved", ctx.attrs.get_int("interleaved", 0)));
  if (rot > 0) attrs.push_back(make_attr_int("rotary_embedding_dim", rot));
  if (rank == 4 || heads > 0) {
    if (rank == 3) attrs.push_back(make_attr_int("num_heads", heads));
    ctx.emit1("RotaryEmbedding", {x, cos, sin, pos}, std::move(attrs), ctx.output(0), kFusedDomain);
    return;
  }
  // 3-D without num_heads: ORT takes the head size from the caches (2 * their width). Each head rotates alone,
  // so [B, S, N*h] is seen as [B, S*N, h] with one head, each position repeated for the N heads of its token.
  Value* head = b.op("Mul", {b.dim1(cos, 1), ctx.int64s({2})});
  Value* n = b.op("Div", {b.dim1(x, 2), head});
  Value* flat = b.reshape(x, b.concat({ctx.int64s({0, -1}), head}, 0));
  Value* rep = b.op("Expand", {b.unsqueeze(pos, {2}), b.concat({b.dim1(pos, 0), b.dim1(pos, 1), n}, 0)});
  Value* flat_pos = b.reshape(rep, std::vector<int64_t>{0, -1});
  attrs.push_back(make_attr_int("num_heads", 1));
  Value* y = ctx.emit1("RotaryEmbedding", {flat, cos, sin, flat_pos}, std::move(attrs), nullptr, kFusedDomain);
  b.reshape(y, b.op("Shape", {x}), ctx.output(0));
}

// ---------------------------------------------------------------------------------------------------------------
// GroupQueryAttention

// x [B, n, L, h] with each of the n heads repeated `times` times in a row: [B, n * times, L, h] (what query head
// q reads is kv head q / times, the layout Attention's fast path wants as plain multi-head attention).
Value* repeat_heads(Builder& b, Value* x, int64_t heads, int64_t times) {
  if (times == 1) return x;
  Value* wide = b.op("Expand", {b.unsqueeze(x, {2}), b.ctx().int64s({1, 1, times, 1, 1})});
  Value* shape = b.concat({b.dim1(x, 0), b.ctx().int64s({heads * times}), b.dim1(x, 2), b.dim1(x, 3)}, 0);
  return b.reshape(wide, shape);
}

void expand_gqa(E& ctx) {
  Builder b(ctx);
  const int64_t heads = num_heads(ctx);
  const int64_t kv_heads = ctx.attrs.get_int("kv_num_heads");
  if (kv_heads <= 0 || heads % kv_heads != 0)
    ctx.error(cat("num_heads (", heads, ") must be a positive multiple of kv_num_heads (", kv_heads, ")"));
  refuse_attr(ctx, "smooth_softmax");
  refuse_attr(ctx, "qk_output");
  refuse_attr(ctx, "sliding_window_cache");
  if (ctx.attrs.get_int("causal", 1) != 1) ctx.error("causal = 0 is not supported");
  for (const char* q : {"k_quant_type", "v_quant_type"})
    if (ctx.attrs.get_string(q, "NONE") != "NONE") ctx.error(cat("a quantized KV cache (", q, ") is not supported"));
  for (size_t i = 11; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ctx.error(cat("input ", i, " (head_sink or KV cache scales) is not supported"));
  if (ctx.output_wanted(3)) ctx.error("output output_qk is not supported");
  const D dt = known_dtype(ctx, 0);
  if (const int64_t r = ctx.input_rank(0); r != 3)
    ctx.error(r < 0 ? "the rank of query is not known" : cat("query must be 3-D, got rank ", r));
  if (ctx.has_input(1) != ctx.has_input(2)) ctx.error("key and value must be given together");
  if (ctx.has_input(3) != ctx.has_input(4)) ctx.error("past_key and past_value must be given together");
  const bool rotary = ctx.attrs.get_int("do_rotary", 0) != 0;
  if (rotary && (!ctx.has_input(7) || !ctx.has_input(8))) ctx.error("do_rotary needs cos_cache and sin_cache");
  b.need_opset(11, "GroupQueryAttention");

  // Q, K, V in heads: [B, N, S, h], [B, Nkv, S, h].
  Value* q4, *k4, *v4;
  if (!ctx.has_input(1)) {
    Value* all = split_heads(b, ctx.input(0), heads + 2 * kv_heads);  // packed [B, S, (N + 2 Nkv) h]
    std::vector<Value*> parts = b.split(all, 1, {heads, kv_heads, kv_heads}, 3);
    q4 = parts[0], k4 = parts[1], v4 = parts[2];
  } else {
    q4 = split_heads(b, ctx.input(0), heads);
    k4 = split_heads(b, ctx.input(1), kv_heads);
    v4 = split_heads(b, ctx.input(2), kv_heads);
  }

  // Per batch entry b: T_b = seqlens_k[b] + 1 tokens in all, of which the past is P_b = T_b - S, except in the
  // first prompt (S == total_sequence_length): no past there, and T_b < S marks right padding (whose rows ORT leaves
  // undefined; here they attend causally like the others).
  Value* seq = b.dim0(q4, 2);
  Value* total = b.cast(b.reshape(ctx.input(6), std::vector<int64_t>{}), D::Int64);
  Value* zero = ctx.scalar(D::Int64, 0);
  Value* lengths = b.op("Add", {b.cast(ctx.input(5), D::Int64), ctx.scalar(D::Int64, 1)});  // [B]
  Value* first = b.op("Equal", {seq, total});
  Value* past_b = b.op("Where", {first, zero, b.op("Sub", {lengths, seq})});  // [B]
  // Absolute position of each new token: [B, S].
  Value* at = b.op("Add", {b.unsqueeze(past_b, {1}), b.unsqueeze(b.range(seq), {0})});

  if (rotary) {
    // Positions: the absolute ones (padding of a first prompt included, as ORT does), unless given.
    Value* pos = ctx.has_input(9) ? ctx.input(9) : at;
    const int64_t interleaved = ctx.attrs.get_int("rotary_interleaved", 0);
    const Tensor* cos = ctx.input_value(7);
    auto rope = [&](Value* x, int64_t rot) {
      std::vector<Attribute> attrs = E::attributes(make_attr_int("interleaved", interleaved));
      if (rot > 0) attrs.push_back(make_attr_int("rotary_embedding_dim", rot));
      return ctx.emit1("RotaryEmbedding", {x, ctx.input(7), ctx.input(8), pos}, std::move(attrs), nullptr,
                       kFusedDomain);
    };
    // The first 2 * (the caches' width) channels of each head rotate: an attribute when the caches are constant,
    // else the head is sliced there and the rotated part joined back to the rest.
    auto rotate = [&](Value* x) {
      if (cos && cos->dims().size() == 2) return rope(x, 2 * cos->dims()[1]);
      Value* width = b.op("Mul", {b.dim1(ctx.input(7), 1), ctx.int64s({2})});
      Value* head = b.slice(x, ctx.int64s({0}), width, 3);
      Value* rest = b.slice(x, width, ctx.int64s({kInt64Max}), 3);
      return b.concat({rope(head, 0), rest}, 3);
    };
    q4 = rotate(q4);
    k4 = rotate(k4);
  }

  // present [B, Nkv, T', h], T' = max(total_sequence_length, past buffer length): rows [0, P_b) from the past,
  // the new rows at [P_b, P_b + S), zeros elsewhere (ORT clears the buffer it does not share).
  Value* buf = ctx.has_input(3) ? b.dim0(ctx.input(3), 2) : zero;
  Value* rows = b.op("Where", {b.op("Greater", {total, buf}), total, buf});
  Value* j = b.range(rows);
  Value* keep = b.unsqueeze(b.op("Less", {b.unsqueeze(j, {0}), b.unsqueeze(past_b, {1})}), {1, 3});  // [B,1,T',1]
  Value* where = b.op("Expand", {b.unsqueeze(at, {1, 3}), b.op("Shape", {k4})});  // [B, Nkv, S, h]
  auto present = [&](Value* past, Value* fresh, size_t out) {
    // Zeros [B, Nkv, n, h] for n rows (Expand of a scalar: Concat then copies, where Pad goes element by element).
    auto zeros = [&](Value* n) {
      Value* shape = b.concat({b.dim1(fresh, 0), b.dim1(fresh, 1), b.unsqueeze(n, {0}), b.dim1(fresh, 3)}, 0);
      return b.op("Expand", {ctx.scalar(dt, 0.0), shape});
    };
    Value* base = zeros(rows);
    if (past) base = b.op("Where", {keep, b.concat({past, zeros(b.op("Sub", {rows, buf}))}, 2), base});
    return b.op("ScatterElements", {base, where, fresh}, E::attributes(make_attr_int("axis", 2)),
                ctx.output_wanted(out) ? ctx.output(out) : nullptr);
  };
  Value* pk = present(ctx.input(3), k4, 1);
  Value* pv = present(ctx.input(4), v4, 2);

  // Query i of entry b sees keys j <= P_b + i, and with a local window of W only the last W of them (itself
  // included, as Mistral's sliding window): j > P_b + i - W.
  Value* qpos = b.unsqueeze(at, {1, 3});                    // [B, 1, S, 1]
  Value* kpos = b.unsqueeze(j, {0, 1, 2});                  // [1, 1, 1, T']
  Value* hidden = b.op("Greater", {kpos, qpos});
  if (const int64_t w = ctx.attrs.get_int("local_window_size", -1); w > 0) {
    Value* oldest = b.op("Sub", {qpos, ctx.scalar(D::Int64, double(w - 1))});
    hidden = b.op("Or", {hidden, b.op("Less", {kpos, oldest})});
  }
  Value* mask = b.op("Where", {hidden, ctx.scalar(dt, lowest_of(dt)), ctx.scalar(dt, 0.0)});
  if (ctx.has_input(10)) mask = b.op("Add", {mask, ctx.input(10)});
  const int64_t times = heads / kv_heads;
  attend(b, q4, repeat_heads(b, pk, kv_heads, times), repeat_heads(b, pv, kv_heads, times), mask,
         ctx.attrs.get_float("scale", 0.0f), ctx.attrs.get_float("softcap", 0.0f));
}

void infer_gqa(InferContext& ctx) {
  const D dt = ctx.input_dtype(0);
  const int64_t heads = ctx.attrs.get_int("num_heads"), kv_heads = ctx.attrs.get_int("kv_num_heads");
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0)
    ctx.error(cat("num_heads (", heads, ") must be a positive multiple of kv_num_heads (", kv_heads, ")"));
  Dim hidden, h;
  if (auto d = dim_of(ctx, 0, 2).value) {
    const int64_t parts = ctx.has_input(1) ? heads : heads + 2 * kv_heads;
    if (*d % parts == 0) h = known_dim(*d / parts), hidden = known_dim(*d / parts * heads);
  }
  const bool q3 = input_rank(ctx, 0) == 3;
  ctx.set_output(0, Type::tensor(dt, q3 ? shape_from({dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), hidden}) : Shape{}));
  for (size_t i = 1; i < std::min<size_t>(3, ctx.output_types.size()); ++i)
    ctx.set_output(i, Type::tensor(dt, shape_from({dim_of(ctx, 0, 0), known_dim(kv_heads), Dim{}, h})));
  if (ctx.output_types.size() > 3) ctx.set_output(3, Type::tensor(dt));
}

}  // namespace

void register_contrib_attention(Registry& r) {
  // Attention: T for input, weights, bias, past, attention_bias; M (int32) for mask_index, past_sequence_length.
  r.add(OpDef{kMsAttentionDomain, "Attention", 1, {{{0, 1, 2, 4, 5}, kAttentionFloats}, {{3, 6}, {D::Int32}}}, infer_contrib_attention,
              nullptr, expand_attention});
  // QAttention: T1 (8-bit) for input and its zero point, T2 (8-bit) for weight and its zero point, T3 for bias,
  // scales and past, T4 (int32) for mask_index.
  r.add(OpDef{kMsAttentionDomain, "QAttention", 1,
              {{{0, 6}, {D::UInt8, D::Int8}}, {{1, 7}, {D::UInt8, D::Int8}}, {{2, 3, 4, 8}, {D::Float, D::Float16}},
               {{5}, {D::Int32}}},
              infer_qattention, nullptr, expand_qattention});
  r.add(OpDef{kMsAttentionDomain, "MultiHeadAttention", 1, {{{0, 1, 2, 3, 5, 6, 7}, kAttentionFloats}, {{4, 8, 9}, {D::Int32}}},
              infer_mha, nullptr, expand_mha});
  r.add(OpDef{kMsAttentionDomain, "RotaryEmbedding", 1, {{{0, 2, 3}, kAttentionFloats}, {{1}, {D::Int64}}},
              [](InferContext& ctx) { infer_same_as_input(ctx); }, nullptr, expand_rotary});
  // GroupQueryAttention: T for query, key, value, past, caches, attention_bias; M (int32) for seqlens_k and
  // total_sequence_length; position_ids int64.
  r.add(OpDef{kMsAttentionDomain, "GroupQueryAttention", 1,
              {{{0, 1, 2, 3, 4, 7, 8, 10}, kAttentionFloats}, {{5, 6}, {D::Int32}}, {{9}, {D::Int64}}}, infer_gqa,
              nullptr, expand_gqa});
}

}  // namespace onyx::ops
