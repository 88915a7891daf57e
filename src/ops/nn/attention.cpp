// ai.onnx Attention (23, 24), RotaryEmbedding (23), LinearAttention (27); ai.onnx.preview FlexAttention (1).
//
// Attention: Q, K, V are all 3-D ([batch, seq, heads*head_size], with q_num_heads/kv_num_heads required) or all
//   4-D ([batch, heads, seq, head_size]). Optional attn_mask (bool: true takes part; otherwise added to the scores)
//   broadcasts to [batch, q_heads, q_seq, total_seq]; a shorter last dim is padded with "masked". past_key /
//   past_value ([batch, kv_heads, past, size], both or neither) are prepended to K/V to form present_key /
//   present_value. GQA/MQA: query head h reads kv head h / (q_heads / kv_heads). scale defaults to
//   1/sqrt(head_size). Scores = Q.K^T * scale, then softcap (softcap * tanh(x / softcap) when softcap > 0), then the
//   mask/causal/padding bias, then softmax. qk_matmul_output (output 3) is selected by qk_matmul_output_mode:
//   0 the scaled Q.K^T, 1 after softcap, 2 after softcap and bias, 3 the softmax (the order the ops apply in).
//   is_causal: query i (of the block) sees key j iff j <= i + offset, offset = past length (or, v24, with
//   nonpad_kv_seqlen and no past: nonpad_kv_seqlen[b] - q_seq). A row with every key masked yields zero
//   probabilities (no NaN).
//   Attention-24 adds input 6, nonpad_kv_seqlen (int64 [batch]): keys at or past it are masked for that batch.
// RotaryEmbedding-23: input [batch, heads, seq, head] or [batch, seq, heads*head] (num_heads required);
//   cos/sin caches [max_pos, rot/2] indexed by position_ids [batch, seq], or [batch, seq, rot/2] without them.
//   rotary_embedding_dim (0: head size) first dims rotate, as halves or (interleaved) as even/odd pairs.
// LinearAttention-27: packed [B, T, H*D] query/key/value; update_rule linear | gated | delta | gated_delta over the
//   per-kv-head state S (B, H_kv, d_k, d_v), read by q heads in groups; decay (log space, [B,T,H_kv] or
//   [B,T,H_kv*d_k]) for gated rules, beta ([B,T,H_kv] or [B,T,1]) for delta rules. scale 0 means 1/sqrt(d_k).
//   present_state has past_state's element type (query's when absent). Computation in double.
// FlexAttention (ai.onnx.preview 1): rank-4 Q, K, V with GQA; scores = Q.K^T * scale, optional score_mod subgraph,
//   softmax, optional prob_mod subgraph, then Probs.V. The subgraphs see tensors of the softmax_precision type
//   (float for non-double inputs by default, double for double).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Softmax of row[0..n) in place; a row whose entries are all -inf gives zeros.
void softmax_row(double* row, int64_t n) {
  double mx = kNegInf;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
  if (mx == kNegInf) {
    std::fill(row, row + n, 0.0);
    return;
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - mx);
    sum += row[j];
  }
  for (int64_t j = 0; j < n; ++j) row[j] /= sum;
}

// ---------------------------------------------------------------------------------------------------------------
// Attention

struct AttnConfig {
  int version = 23;
  bool causal = false;
  int64_t q_heads = 0, kv_heads = 0;  // 0 when not given
  int64_t mode = 0;
  std::optional<double> scale;
  double softcap = 0;
};

AttnConfig parse_attention(const AttributeView& a, int version) {
  AttnConfig c;
  c.version = version;
  c.causal = a.get_int("is_causal", 0) != 0;
  c.q_heads = a.get_int("q_num_heads", 0);
  c.kv_heads = a.get_int("kv_num_heads", 0);
  if (c.q_heads < 0 || c.kv_heads < 0) fail("q_num_heads and kv_num_heads must not be negative");
  c.mode = a.get_int("qk_matmul_output_mode", 0);
  if (c.mode < 0 || c.mode > 3) fail("qk_matmul_output_mode ", c.mode, " is not in [0, 3]");
  if (a.has("scale")) c.scale = a.get_float("scale");
  c.softcap = a.get_float("softcap", 0.0f);
  if (a.has("softmax_precision")) {
    int64_t p = a.get_int("softmax_precision");
    if (p != static_cast<int64_t>(D::Float) && p != static_cast<int64_t>(D::Float16) &&
        p != static_cast<int64_t>(D::BFloat16) && p != static_cast<int64_t>(D::Double))
      fail("softmax_precision ", p, " is not a float type");
  }
  return c;
}

struct AttnShapes {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_seq = 0, kv_seq = 0, head = 0, v_head = 0, past = 0;
  bool packed = false;  // 3-D inputs
};

// The common case in float32 on the matrix-product kernels: 4-D Q, K, V with as many K/V heads as Q heads, no past,
// no causal flag, softcap or extra outputs, and no mask or a float one whose last dim is the key length (broadcast
// over the others). Scores = Q.K^T (K transposed per head first) * scale + mask, softmax over rows (a row whose
// entries are all -inf gives zeros), then probabilities . V; computed in float where the reference uses double.
// False (nothing done) for any other case.
bool attention_fast(const AttnConfig& c, KernelContext& ctx) {
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  if (q.dtype() != D::Float || k.dtype() != D::Float || v.dtype() != D::Float || q.dims().size() != 4 ||
      k.dims().size() != 4 || v.dims().size() != 4 || c.causal || c.softcap != 0 || c.mode != 0)
    return false;
  for (size_t i = 4; i < 7; ++i)
    if (ctx.has_input(i)) return false;
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.output_wanted(i)) return false;
  const int64_t B = q.dims()[0], H = q.dims()[1], Sq = q.dims()[2], Dh = q.dims()[3];
  const int64_t Skv = k.dims()[2], Dv = v.dims()[3];
  if (k.dims() != Dims{B, H, Skv, Dh} || v.dims()[0] != B || v.dims()[1] != H || v.dims()[2] != Skv ||
      B * H * Sq * Skv == 0 || Dh == 0 || Dv == 0)
    return false;
  // The mask's strides over [B, H, Sq] (0 where it broadcasts); its last dim must be Skv.
  const float* mask = nullptr;
  int64_t ms[3] = {0, 0, 0};
  if (ctx.has_input(3)) {
    const Tensor& m = ctx.input(3);
    const Dims& md = m.dims();
    if (m.dtype() != D::Float || md.empty() || md.size() > 4 || md.back() != Skv) return false;
    const Dims full = {B, H, Sq};
    int64_t stride = Skv;
    for (size_t i = md.size() - 1; i-- > 0;) {
      const size_t at = 3 - (md.size() - 1) + i;
      if (md[i] != 1 && md[i] != full[at]) return false;
      ms[at] = md[i] == 1 ? 0 : stride;
      stride *= md[i];
    }
    mask = m.data<float>();
  }
  const float scale = static_cast<float>(c.scale ? *c.scale : 1.0 / std::sqrt(static_cast<double>(Dh)));
  const int64_t heads = B * H;
  std::vector<float> kt(static_cast<size_t>(heads * Dh * Skv));
  const float* pk = k.data<float>();
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < Skv; ++j)
      for (int64_t d = 0; d < Dh; ++d) kt[static_cast<size_t>((h * Dh + d) * Skv + j)] = pk[(h * Skv + j) * Dh + d];
  std::vector<float> scores(static_cast<size_t>(heads * Sq * Skv));
  kernels::batched_matmul(q.data<float>(), {B, H, Sq, Dh}, kt.data(), {B, H, Dh, Skv}, scores.data());
  std::vector<char> dead(static_cast<size_t>(heads * Sq), 0);  // rows with every key masked
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const int64_t r = (b * H + h) * Sq + i;
        float* row = scores.data() + r * Skv;
        const float* mrow = mask ? mask + b * ms[0] + h * ms[1] + i * ms[2] : nullptr;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < Skv; ++j) {
          row[j] = row[j] * scale + (mrow ? mrow[j] : 0.0f);
          mx = std::max(mx, row[j]);
        }
        dead[static_cast<size_t>(r)] = mx == -std::numeric_limits<float>::infinity();
      }
  kernels::softmax(scores.data(), scores.data(), heads * Sq, Skv, false);
  for (int64_t r = 0; r < heads * Sq; ++r)
    if (dead[static_cast<size_t>(r)]) std::fill(scores.begin() + r * Skv, scores.begin() + (r + 1) * Skv, 0.0f);
  Tensor& y = ctx.allocate_output(0, D::Float, {B, H, Sq, Dv});
  kernels::batched_matmul(scores.data(), {B, H, Sq, Skv}, v.data<float>(), {B, H, Skv, Dv}, y.mutable_data<float>());
  return true;
}

void run_attention(const AttnConfig& c, KernelContext& ctx) {
  const Tensor& q_t = ctx.input(0);
  const Tensor& k_t = ctx.input(1);
  const Tensor& v_t = ctx.input(2);
  const DataType dt = q_t.dtype();
  if (k_t.dtype() != dt) ctx.error("Q and K must have the same element type");
  const size_t rank = q_t.dims().size();
  if ((rank != 3 && rank != 4) || k_t.dims().size() != rank || v_t.dims().size() != rank)
    ctx.error(cat("Q, K and V must all be 3-D or all 4-D, got ", shape_of(q_t.dims()).to_string(), ", ",
                  shape_of(k_t.dims()).to_string(), ", ", shape_of(v_t.dims()).to_string()));
  AttnShapes s;
  s.packed = rank == 3;
  s.batch = q_t.dims()[0];
  if (k_t.dims()[0] != s.batch || v_t.dims()[0] != s.batch) ctx.error("Q, K and V must have the same batch size");
  if (s.packed) {
    if (c.q_heads <= 0 || c.kv_heads <= 0) ctx.error("3-D inputs need positive q_num_heads and kv_num_heads");
    s.q_heads = c.q_heads;
    s.kv_heads = c.kv_heads;
    s.q_seq = q_t.dims()[1];
    s.kv_seq = k_t.dims()[1];
    if (v_t.dims()[1] != s.kv_seq) ctx.error("K and V must have the same sequence length");
    if (q_t.dims()[2] % s.q_heads != 0) ctx.error(cat("Q hidden size ", q_t.dims()[2], " is not a multiple of q_num_heads ", s.q_heads));
    if (k_t.dims()[2] % s.kv_heads != 0) ctx.error(cat("K hidden size ", k_t.dims()[2], " is not a multiple of kv_num_heads ", s.kv_heads));
    if (v_t.dims()[2] % s.kv_heads != 0) ctx.error(cat("V hidden size ", v_t.dims()[2], " is not a multiple of kv_num_heads ", s.kv_heads));
    s.head = q_t.dims()[2] / s.q_heads;
    if (k_t.dims()[2] / s.kv_heads != s.head) ctx.error("Q and K head sizes differ");
    s.v_head = v_t.dims()[2] / s.kv_heads;
  } else {
    s.q_heads = q_t.dims()[1];
    s.kv_heads = k_t.dims()[1];
    s.q_seq = q_t.dims()[2];
    s.kv_seq = k_t.dims()[2];
    s.head = q_t.dims()[3];
    s.v_head = v_t.dims()[3];
    if (v_t.dims()[1] != s.kv_heads || v_t.dims()[2] != s.kv_seq) ctx.error("K and V must have the same heads and sequence length");
    if (k_t.dims()[3] != s.head) ctx.error("Q and K head sizes differ");
  }
  if (s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0)
    ctx.error(cat("q_num_heads ", s.q_heads, " must be a multiple of kv_num_heads ", s.kv_heads));
  const bool has_pk = ctx.has_input(4), has_pv = ctx.has_input(5);
  if (has_pk != has_pv) ctx.error("past_key and past_value must be given together");
  const Tensor* pk = has_pk ? &ctx.input(4) : nullptr;
  const Tensor* pv = has_pv ? &ctx.input(5) : nullptr;
  if (pk) {
    if (pk->dtype() != dt) ctx.error("past_key must have Q's element type");
    if (pv->dtype() != v_t.dtype()) ctx.error("past_value must have V's element type");
    if (pk->dims().size() != 4 || pk->dims()[0] != s.batch || pk->dims()[1] != s.kv_heads || pk->dims()[3] != s.head)
      ctx.error(cat("past_key has shape ", shape_of(pk->dims()).to_string(), ", expected [", s.batch, ",", s.kv_heads, ",past,", s.head, "]"));
    s.past = pk->dims()[2];
    if (pv->dims() != Dims{s.batch, s.kv_heads, s.past, s.v_head})
      ctx.error(cat("past_value has shape ", shape_of(pv->dims()).to_string(), ", expected [", s.batch, ",", s.kv_heads, ",", s.past, ",", s.v_head, "]"));
  }
  const int64_t total = s.past + s.kv_seq;
  std::vector<int64_t> nonpad;
  if (c.version >= 24 && ctx.has_input(6)) {
    const Tensor& np_t = ctx.input(6);
    if (np_t.dims() != Dims{s.batch}) ctx.error(cat("nonpad_kv_seqlen must have shape [", s.batch, "]"));
    nonpad = read_ints(np_t);
    for (int64_t n : nonpad)
      if (n < 0 || n > total) ctx.error(cat("nonpad_kv_seqlen value ", n, " is outside [0, ", total, "]"));
  }
  const int64_t probs_size = static_cast<int64_t>(check_data_sized({s.batch, s.q_heads, s.q_seq, total}));
  check_data_sized({s.batch, s.q_heads, s.q_seq, s.v_head});

  // Q [b, h, i, k], present K [b, g, j, k], present V [b, g, j, m] as doubles.
  const std::vector<double> qr = read_doubles(q_t), kr = read_doubles(k_t), vr = read_doubles(v_t);
  const auto q_at = [&](int64_t b, int64_t h, int64_t i, int64_t k) {
    return s.packed ? qr[((b * s.q_seq + i) * s.q_heads + h) * s.head + k] : qr[((b * s.q_heads + h) * s.q_seq + i) * s.head + k];
  };
  std::vector<double> K(static_cast<size_t>(check_data_sized({s.batch, s.kv_heads, total, s.head})));
  std::vector<double> V(static_cast<size_t>(check_data_sized({s.batch, s.kv_heads, total, s.v_head})));
  {
    const std::vector<double> pkr = pk ? read_doubles(*pk) : std::vector<double>{};
    const std::vector<double> pvr = pv ? read_doubles(*pv) : std::vector<double>{};
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t g = 0; g < s.kv_heads; ++g)
        for (int64_t j = 0; j < total; ++j) {
          double* kd = &K[((b * s.kv_heads + g) * total + j) * s.head];
          double* vd = &V[((b * s.kv_heads + g) * total + j) * s.v_head];
          if (j < s.past) {
            for (int64_t k = 0; k < s.head; ++k) kd[k] = pkr[((b * s.kv_heads + g) * s.past + j) * s.head + k];
            for (int64_t m = 0; m < s.v_head; ++m) vd[m] = pvr[((b * s.kv_heads + g) * s.past + j) * s.v_head + m];
          } else {
            const int64_t jj = j - s.past;
            for (int64_t k = 0; k < s.head; ++k)
              kd[k] = s.packed ? kr[((b * s.kv_seq + jj) * s.kv_heads + g) * s.head + k] : kr[((b * s.kv_heads + g) * s.kv_seq + jj) * s.head + k];
            for (int64_t m = 0; m < s.v_head; ++m)
              vd[m] = s.packed ? vr[((b * s.kv_seq + jj) * s.kv_heads + g) * s.v_head + m] : vr[((b * s.kv_heads + g) * s.kv_seq + jj) * s.v_head + m];
          }
        }
  }

  // The mask as an additive bias, broadcast to [batch, q_heads, q_seq, total] through strides.
  const Tensor* mask_t = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  std::vector<double> mask;
  Dims mstr(4, 0);
  int64_t mask_last = 0;
  if (mask_t) {
    const Dims& md = mask_t->dims();
    if (md.size() < 2 || md.size() > 4) ctx.error(cat("attn_mask must have rank 2 to 4, got ", shape_of(md).to_string()));
    const Dims full = {s.batch, s.q_heads, s.q_seq, total};
    Dims m4(4 - md.size(), 1);
    m4.insert(m4.end(), md.begin(), md.end());
    mask_last = m4[3];
    if (mask_last > total) ctx.error(cat("attn_mask last dim ", mask_last, " exceeds the total sequence length ", total));
    for (size_t a = 0; a < 3; ++a)
      if (m4[a] != 1 && m4[a] != full[a])
        ctx.error(cat("attn_mask shape ", shape_of(md).to_string(), " does not broadcast to ", shape_of(full).to_string()));
    const Dims st = strides_of(m4);
    for (size_t a = 0; a < 4; ++a) mstr[a] = m4[a] == 1 && a < 3 ? 0 : st[a];
    if (mask_t->dtype() == D::Bool) {
      const bool* p = mask_t->data<bool>();
      mask.resize(mask_t->element_count());
      for (size_t i = 0; i < mask.size(); ++i) mask[i] = p[i] ? 0.0 : kNegInf;
    } else {
      mask = read_doubles(*mask_t);
    }
  }

  const double scale = c.scale ? *c.scale : 1.0 / std::sqrt(static_cast<double>(s.head));
  const int64_t group = s.q_heads / s.kv_heads;
  std::vector<double> probs(static_cast<size_t>(probs_size)), qk_out;
  const bool want_qk = ctx.num_outputs() > 3 && ctx.output_wanted(3);
  if (want_qk) qk_out.resize(static_cast<size_t>(probs_size));
  std::vector<double> Y(static_cast<size_t>(s.batch * s.q_heads * s.q_seq * s.v_head), 0.0);
  for (int64_t b = 0; b < s.batch; ++b) {
    int64_t offset = s.past;
    if (!pk && !nonpad.empty()) offset = nonpad[b] - s.q_seq;
    const int64_t valid = nonpad.empty() ? total : nonpad[b];
    for (int64_t h = 0; h < s.q_heads; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < s.q_seq; ++i) {
        double* row = &probs[((b * s.q_heads + h) * s.q_seq + i) * total];
        double* qk_row = want_qk ? &qk_out[((b * s.q_heads + h) * s.q_seq + i) * total] : nullptr;
        for (int64_t j = 0; j < total; ++j) {
          const double* kd = &K[((b * s.kv_heads + g) * total + j) * s.head];
          double dot = 0;
          for (int64_t k = 0; k < s.head; ++k) dot += q_at(b, h, i, k) * kd[k];
          double x = dot * scale;
          if (qk_row && c.mode == 0) qk_row[j] = x;
          if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
          if (qk_row && c.mode == 1) qk_row[j] = x;
          double bias = 0;
          if (mask_t) {
            if (j >= mask_last) bias = kNegInf;
            else bias = mask[static_cast<size_t>(b * mstr[0] + h * mstr[1] + i * mstr[2] + j * mstr[3])];
          }
          if (c.causal && j > i + offset) bias = kNegInf;
          if (j >= valid) bias = kNegInf;
          x += bias;
          if (qk_row && c.mode == 2) qk_row[j] = x;
          row[j] = x;
        }
        softmax_row(row, total);
        if (qk_row && c.mode == 3) std::copy(row, row + total, qk_row);
        double* y = &Y[((b * s.q_heads + h) * s.q_seq + i) * s.v_head];
        for (int64_t j = 0; j < total; ++j) {
          if (row[j] == 0) continue;
          const double* vd = &V[((b * s.kv_heads + g) * total + j) * s.v_head];
          for (int64_t m = 0; m < s.v_head; ++m) y[m] += row[j] * vd[m];
        }
      }
    }
  }
  if (ctx.output_wanted(0)) {
    if (s.packed) {
      std::vector<double> packed(Y.size());
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t h = 0; h < s.q_heads; ++h)
          for (int64_t i = 0; i < s.q_seq; ++i)
            for (int64_t m = 0; m < s.v_head; ++m)
              packed[((b * s.q_seq + i) * s.q_heads + h) * s.v_head + m] = Y[((b * s.q_heads + h) * s.q_seq + i) * s.v_head + m];
      store_doubles(ctx.allocate_output(0, v_t.dtype(), {s.batch, s.q_seq, s.q_heads * s.v_head}), packed);
    } else {
      store_doubles(ctx.allocate_output(0, v_t.dtype(), {s.batch, s.q_heads, s.q_seq, s.v_head}), Y);
    }
  }
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) store_doubles(ctx.allocate_output(1, dt, {s.batch, s.kv_heads, total, s.head}), K);
  if (ctx.num_outputs() > 2 && ctx.output_wanted(2))
    store_doubles(ctx.allocate_output(2, v_t.dtype(), {s.batch, s.kv_heads, total, s.v_head}), V);
  if (want_qk) store_doubles(ctx.allocate_output(3, dt, {s.batch, s.q_heads, s.q_seq, total}), qk_out);
}

Dim add_dims(const Dim& a, const Dim& b) {
  if (a.value && b.value) return known_dim(*a.value + *b.value);
  if (a.value && *a.value == 0) return b;
  if (b.value && *b.value == 0) return a;
  return {};
}

void infer_attention(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const DataType vdt = ctx.has_input(2) ? ctx.input_dtype(2) : dt;
  const int64_t rank = input_rank(ctx, 0);
  for (size_t i : {size_t{1}, size_t{2}}) {
    const int64_t r = input_rank(ctx, i);
    if (rank >= 0 && r >= 0 && r != rank) ctx.error("Q, K and V must all be 3-D or all 4-D");
  }
  if (rank >= 0 && rank != 3 && rank != 4) ctx.error(cat("Q must be 3-D or 4-D, got rank ", rank));
  const int64_t qh_attr = ctx.attrs.get_int("q_num_heads", 0), kvh_attr = ctx.attrs.get_int("kv_num_heads", 0);
  Shape y, pk, pv, qk;
  if (rank == 3) {
    if (qh_attr <= 0 || kvh_attr <= 0) ctx.error("3-D inputs need positive q_num_heads and kv_num_heads");
    const Dim batch = dim_of(ctx, 0, 0), q_seq = dim_of(ctx, 0, 1), kv_seq = dim_of(ctx, 1, 1);
    Dim v_hidden;
    if (auto vh = dim_of(ctx, 2, 2).value) {
      if (*vh % kvh_attr != 0) ctx.error(cat("V hidden size ", *vh, " is not a multiple of kv_num_heads ", kvh_attr));
      v_hidden = known_dim(*vh / kvh_attr * qh_attr);
    }
    y = shape_from({batch, q_seq, v_hidden});
    Dim head, v_head;
    if (auto qd = dim_of(ctx, 0, 2).value) {
      if (*qd % qh_attr != 0) ctx.error(cat("Q hidden size ", *qd, " is not a multiple of q_num_heads ", qh_attr));
      head = known_dim(*qd / qh_attr);
    }
    if (auto vh = dim_of(ctx, 2, 2).value) v_head = known_dim(*vh / kvh_attr);
    const Dim total = ctx.has_input(4) ? add_dims(dim_of(ctx, 4, 2), kv_seq) : kv_seq;
    pk = shape_from({batch, known_dim(kvh_attr), total, head});
    pv = shape_from({batch, known_dim(kvh_attr), total, v_head});
    qk = shape_from({batch, known_dim(qh_attr), q_seq, total});
  } else if (rank == 4) {
    const Dim batch = dim_of(ctx, 0, 0), qh = dim_of(ctx, 0, 1), q_seq = dim_of(ctx, 0, 2);
    const Dim kvh = dim_of(ctx, 1, 1), kv_seq = dim_of(ctx, 1, 2);
    auto sq = dim_of(ctx, 0, 1).value, sk = dim_of(ctx, 1, 1).value;
    if (sq && sk && (*sk <= 0 || *sq % *sk != 0)) ctx.error(cat("q heads ", *sq, " must be a multiple of kv heads ", *sk));
    y = shape_from({batch, qh, q_seq, dim_of(ctx, 2, 3)});
    const Dim total = ctx.has_input(4) ? add_dims(dim_of(ctx, 4, 2), kv_seq) : kv_seq;
    pk = shape_from({batch, kvh, total, dim_of(ctx, 1, 3)});
    pv = shape_from({batch, kvh, total, dim_of(ctx, 2, 3)});
    qk = shape_from({batch, qh, q_seq, total});
  }
  ctx.set_output(0, Type::tensor(vdt, y));
  ctx.set_output(1, Type::tensor(dt, pk));
  ctx.set_output(2, Type::tensor(vdt, pv));
  ctx.set_output(3, Type::tensor(dt, qk));
}

// ---------------------------------------------------------------------------------------------------------------
// RotaryEmbedding

struct RopeConfig {
  bool interleaved = false;
  int64_t num_heads = 0;
  int64_t rot_dim = 0;
};

void run_rope(const RopeConfig& c, KernelContext& ctx) {
  const Tensor& x_t = ctx.input(0);
  const Tensor& cos_t = ctx.input(1);
  const Tensor& sin_t = ctx.input(2);
  const DataType dt = x_t.dtype();
  if (cos_t.dtype() != dt || sin_t.dtype() != dt) ctx.error("cos_cache and sin_cache must have the input's element type");
  const Dims& xd = x_t.dims();
  int64_t B, H, S, dh;
  const bool packed = xd.size() == 3;
  if (xd.size() == 4) {
    B = xd[0], H = xd[1], S = xd[2], dh = xd[3];
  } else if (packed) {
    if (c.num_heads <= 0) ctx.error("a 3-D input needs a positive num_heads");
    B = xd[0], S = xd[1], H = c.num_heads;
    if (xd[2] % H != 0) ctx.error(cat("hidden size ", xd[2], " is not a multiple of num_heads ", H));
    dh = xd[2] / H;
  } else {
    ctx.error(cat("input must be 3-D or 4-D, got ", shape_of(xd).to_string()));
  }
  const int64_t rot = c.rot_dim == 0 ? dh : c.rot_dim;
  if (rot < 0 || rot > dh || rot % 2 != 0) ctx.error(cat("rotary_embedding_dim ", rot, " must be even and at most the head size ", dh));
  const int64_t half = rot / 2;
  std::vector<int64_t> pos;
  if (ctx.has_input(3)) {
    const Tensor& p_t = ctx.input(3);
    if (p_t.dims() != Dims{B, S}) ctx.error(cat("position_ids must have shape [", B, ",", S, "], got ", shape_of(p_t.dims()).to_string()));
    if (cos_t.dims().size() != 2 || cos_t.dims()[1] != half)
      ctx.error(cat("cos_cache must have shape [max_position, ", half, "], got ", shape_of(cos_t.dims()).to_string()));
    pos = read_ints(p_t);
    for (int64_t p : pos)
      if (p < 0 || p >= cos_t.dims()[0]) ctx.error(cat("position id ", p, " is outside [0, ", cos_t.dims()[0], ")"));
  } else if (cos_t.dims() != Dims{B, S, half}) {
    ctx.error(cat("cos_cache must have shape [", B, ",", S, ",", half, "] without position_ids, got ", shape_of(cos_t.dims()).to_string()));
  }
  if (sin_t.dims() != cos_t.dims()) ctx.error("sin_cache and cos_cache must have the same shape");
  const std::vector<double> x = read_doubles(x_t), cs = read_doubles(cos_t), sn = read_doubles(sin_t);
  std::vector<double> y = x;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t base = packed ? ((b * S + s) * H + h) * dh : ((b * H + h) * S + s) * dh;
        const int64_t crow = (pos.empty() ? b * S + s : pos[b * S + s]) * half;
        for (int64_t k = 0; k < half; ++k) {
          const int64_t i1 = c.interleaved ? base + 2 * k : base + k;
          const int64_t i2 = c.interleaved ? base + 2 * k + 1 : base + k + half;
          const double co = cs[crow + k], si = sn[crow + k];
          y[i1] = co * x[i1] - si * x[i2];
          y[i2] = si * x[i1] + co * x[i2];
        }
      }
  store_doubles(ctx.allocate_output(0, dt, xd), y);
}

// ---------------------------------------------------------------------------------------------------------------
// LinearAttention

enum class Rule { Linear, Gated, Delta, GatedDelta };

struct LinConfig {
  Rule rule = Rule::GatedDelta;
  int64_t q_heads = 0, kv_heads = 0;
  double scale = 0;
};

LinConfig parse_linear(const AttributeView& a) {
  LinConfig c;
  std::string r = a.get_string("update_rule", "gated_delta");
  if (r == "linear") c.rule = Rule::Linear;
  else if (r == "gated") c.rule = Rule::Gated;
  else if (r == "delta") c.rule = Rule::Delta;
  else if (r == "gated_delta") c.rule = Rule::GatedDelta;
  else fail("update_rule '", r, "' is not one of linear, gated, delta, gated_delta");
  c.q_heads = a.get_int("q_num_heads");
  c.kv_heads = a.get_int("kv_num_heads");
  if (c.q_heads <= 0 || c.kv_heads <= 0 || c.q_heads % c.kv_heads != 0)
    fail("q_num_heads (", c.q_heads, ") must be a positive multiple of kv_num_heads (", c.kv_heads, ")");
  c.scale = a.get_float("scale", 0.0f);
  return c;
}

void run_linear(const LinConfig& c, KernelContext& ctx) {
  const Tensor& q_t = ctx.input(0);
  const Tensor& k_t = ctx.input(1);
  const Tensor& v_t = ctx.input(2);
  const DataType dt = q_t.dtype();
  if (k_t.dtype() != dt || v_t.dtype() != dt) ctx.error("query, key and value must have the same element type");
  for (const Tensor* t : {&q_t, &k_t, &v_t})
    if (t->dims().size() != 3) ctx.error(cat("query, key and value must be 3-D [B, T, H*D], got ", shape_of(t->dims()).to_string()));
  const int64_t B = q_t.dims()[0], T = q_t.dims()[1], Hq = c.q_heads, Hk = c.kv_heads;
  if (k_t.dims()[0] != B || v_t.dims()[0] != B || k_t.dims()[1] != T || v_t.dims()[1] != T)
    ctx.error("query, key and value must share batch and sequence dims");
  if (q_t.dims()[2] % Hq != 0) ctx.error(cat("query last dim ", q_t.dims()[2], " is not a multiple of q_num_heads ", Hq));
  const int64_t dk = q_t.dims()[2] / Hq;
  if (k_t.dims()[2] != Hk * dk) ctx.error(cat("key last dim ", k_t.dims()[2], " must be kv_num_heads*d_k = ", Hk * dk));
  if (v_t.dims()[2] % Hk != 0) ctx.error(cat("value last dim ", v_t.dims()[2], " is not a multiple of kv_num_heads ", Hk));
  const int64_t dv = v_t.dims()[2] / Hk;
  const bool gated = c.rule == Rule::Gated || c.rule == Rule::GatedDelta;
  const bool delta = c.rule == Rule::Delta || c.rule == Rule::GatedDelta;
  const bool has_decay = ctx.has_input(4), has_beta = ctx.has_input(5);
  if (gated != has_decay) ctx.error(gated ? "this update_rule requires the decay input" : "this update_rule takes no decay input");
  if (delta != has_beta) ctx.error(delta ? "this update_rule requires the beta input" : "this update_rule takes no beta input");
  const bool has_erase = ctx.num_inputs() > 6 && ctx.has_input(6);
  if (has_erase && !delta) ctx.error("erase_gate needs a delta update_rule");

  std::vector<double> decay, beta, erase;
  int64_t decay_w = 0, beta_w = 0;
  if (has_decay) {
    const Tensor& t = ctx.input(4);
    if (t.dtype() != dt) ctx.error("decay must have the query's element type");
    if (t.dims().size() != 3 || t.dims()[0] != B || t.dims()[1] != T || (t.dims()[2] != Hk && t.dims()[2] != Hk * dk))
      ctx.error(cat("decay must have shape [", B, ",", T, ",", Hk, "] or [", B, ",", T, ",", Hk * dk, "], got ", shape_of(t.dims()).to_string()));
    decay_w = t.dims()[2] == Hk * dk ? dk : 1;
    decay = read_doubles(t);
  }
  if (has_beta) {
    const Tensor& t = ctx.input(5);
    if (t.dtype() != dt) ctx.error("beta must have the query's element type");
    if (t.dims().size() != 3 || t.dims()[0] != B || t.dims()[1] != T || (t.dims()[2] != Hk && t.dims()[2] != 1))
      ctx.error(cat("beta must have shape [", B, ",", T, ",", Hk, "] or [", B, ",", T, ",1], got ", shape_of(t.dims()).to_string()));
    beta_w = t.dims()[2];
    beta = read_doubles(t);
  }
  if (has_erase) {
    const Tensor& t = ctx.input(6);
    if (t.dims() != Dims{B, T, Hk * dk}) ctx.error(cat("erase_gate must have shape [", B, ",", T, ",", Hk * dk, "]"));
    erase = read_doubles(t);
  }
  const size_t state_size = static_cast<size_t>(check_data_sized({B, Hk, dk, dv}));
  std::vector<double> S(state_size, 0.0);
  DataType state_dt = dt;
  if (ctx.has_input(3)) {
    const Tensor& p = ctx.input(3);
    if (p.dims() != Dims{B, Hk, dk, dv})
      ctx.error(cat("past_state has shape ", shape_of(p.dims()).to_string(), ", expected [", B, ",", Hk, ",", dk, ",", dv, "]"));
    state_dt = p.dtype();
    S = read_doubles(p);
  }
  const double scale = c.scale == 0 ? 1.0 / std::sqrt(static_cast<double>(dk)) : c.scale;
  const std::vector<double> q = read_doubles(q_t), k = read_doubles(k_t), v = read_doubles(v_t);
  std::vector<double> out(static_cast<size_t>(check_data_sized({B, T, Hq, dv})), 0.0);
  const int64_t group = Hq / Hk;
  std::vector<double> vt(static_cast<size_t>(dv)), ke(static_cast<size_t>(dk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t g = 0; g < Hk; ++g) {
        double* st = &S[static_cast<size_t>(((b * Hk + g) * dk) * dv)];
        const double* kt = &k[static_cast<size_t>(((b * T + t) * Hk + g) * dk)];
        const double* vv = &v[static_cast<size_t>(((b * T + t) * Hk + g) * dv)];
        if (gated) {
          for (int64_t d = 0; d < dk; ++d) {
            const double gate = std::exp(decay[static_cast<size_t>(((b * T + t) * Hk + g) * decay_w + (decay_w == 1 ? 0 : d))]);
            for (int64_t m = 0; m < dv; ++m) st[d * dv + m] *= gate;
          }
        }
        for (int64_t m = 0; m < dv; ++m) vt[m] = vv[m];
        if (delta) {
          for (int64_t d = 0; d < dk; ++d) ke[d] = has_erase ? erase[static_cast<size_t>(((b * T + t) * Hk + g) * dk + d)] * kt[d] : kt[d];
          const double bt = beta[static_cast<size_t>((b * T + t) * beta_w + (beta_w == 1 ? 0 : g))];
          for (int64_t m = 0; m < dv; ++m) {
            double r = 0;
            for (int64_t d = 0; d < dk; ++d) r += st[d * dv + m] * ke[d];
            vt[m] = bt * (vt[m] - r);
          }
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t m = 0; m < dv; ++m) st[d * dv + m] += kt[d] * vt[m];
      }
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t g = h / group;
        const double* st = &S[static_cast<size_t>(((b * Hk + g) * dk) * dv)];
        const double* qt = &q[static_cast<size_t>(((b * T + t) * Hq + h) * dk)];
        double* o = &out[static_cast<size_t>(((b * T + t) * Hq + h) * dv)];
        for (int64_t m = 0; m < dv; ++m) {
          double acc = 0;
          for (int64_t d = 0; d < dk; ++d) acc += qt[d] * st[d * dv + m];
          o[m] = scale * acc;
        }
      }
    }
  if (ctx.output_wanted(0)) store_doubles(ctx.allocate_output(0, dt, {B, T, Hq * dv}), out);
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) store_doubles(ctx.allocate_output(1, state_dt, {B, Hk, dk, dv}), S);
}

void infer_linear(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const int64_t hq = ctx.attrs.get_int("q_num_heads"), hk = ctx.attrs.get_int("kv_num_heads");
  if (hq <= 0 || hk <= 0 || hq % hk != 0) ctx.error(cat("q_num_heads (", hq, ") must be a positive multiple of kv_num_heads (", hk, ")"));
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}}) {
    const int64_t r = input_rank(ctx, i);
    if (r >= 0 && r != 3) ctx.error(cat("input ", i, " must be 3-D [B, T, H*D], got rank ", r));
  }
  Dim dk, dv;
  if (auto qd = dim_of(ctx, 0, 2).value) {
    if (*qd % hq != 0) ctx.error(cat("query last dim ", *qd, " is not a multiple of q_num_heads ", hq));
    dk = known_dim(*qd / hq);
  }
  Dim out_last;
  if (auto vd = dim_of(ctx, 2, 2).value) {
    if (*vd % hk != 0) ctx.error(cat("value last dim ", *vd, " is not a multiple of kv_num_heads ", hk));
    dv = known_dim(*vd / hk);
    out_last = known_dim(*vd / hk * hq);
  }
  const bool known = input_rank(ctx, 0) == 3;
  ctx.set_output(0, Type::tensor(dt, known ? shape_from({dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), out_last}) : Shape{}));
  const DataType sdt = ctx.has_input(3) ? ctx.input_dtype(3) : dt;
  ctx.set_output(1, Type::tensor(sdt, known ? shape_from({dim_of(ctx, 0, 0), known_dim(hk), dk, dv}) : Shape{}));
}

// ---------------------------------------------------------------------------------------------------------------
// FlexAttention

struct FlexConfig {
  std::optional<double> scale;
  std::optional<DataType> precision;
  const Graph* score_mod = nullptr;
  const Graph* prob_mod = nullptr;
};

DataType flex_precision(const FlexConfig& c, DataType dt) {
  if (c.precision) return *c.precision;
  return dt == D::Double ? D::Double : D::Float;
}

// Runs a modifier subgraph on `vals` (shape dims, element type dt) and reads its single output back.
void run_modifier(KernelContext& ctx, const Graph& g, const char* name, const Dims& dims, DataType dt, std::vector<double>& vals) {
  Tensor in = Tensor::allocate(dt, dims);
  store_doubles(in, vals);
  std::vector<Datum> outs = ctx.subgraphs().run(g, {Datum::of(std::move(in))});
  if (outs.size() != 1 || !outs[0].is_tensor()) ctx.error(cat(name, " must produce exactly one tensor"));
  const Tensor& o = outs[0].tensor;
  if (o.dims() != dims) ctx.error(cat(name, " output has shape ", shape_of(o.dims()).to_string(), ", expected ", shape_of(dims).to_string()));
  vals = read_doubles(o);
}

void run_flex(const FlexConfig& c, KernelContext& ctx) {
  const Tensor& q_t = ctx.input(0);
  const Tensor& k_t = ctx.input(1);
  const Tensor& v_t = ctx.input(2);
  const DataType dt = q_t.dtype();
  if (k_t.dtype() != dt || v_t.dtype() != dt) ctx.error("Q, K and V must have the same element type");
  for (const Tensor* t : {&q_t, &k_t, &v_t})
    if (t->dims().size() != 4) ctx.error(cat("Q, K and V must be 4-D, got ", shape_of(t->dims()).to_string()));
  const int64_t B = q_t.dims()[0], Hq = q_t.dims()[1], Sq = q_t.dims()[2], dh = q_t.dims()[3];
  const int64_t Hk = k_t.dims()[1], Sk = k_t.dims()[2], dv = v_t.dims()[3];
  if (k_t.dims()[0] != B || v_t.dims()[0] != B) ctx.error("Q, K and V must have the same batch size");
  if (k_t.dims()[3] != dh) ctx.error("Q and K head sizes differ");
  if (v_t.dims()[1] != Hk || v_t.dims()[2] != Sk) ctx.error("K and V must have the same heads and sequence length");
  if (Hk <= 0 || Hq % Hk != 0) ctx.error(cat("q heads ", Hq, " must be a multiple of kv heads ", Hk));
  const Dims sdims = {B, Hq, Sq, Sk};
  std::vector<double> scores(static_cast<size_t>(check_data_sized({B, Hq, Sq, Sk})));
  const double scale = c.scale ? *c.scale : 1.0 / std::sqrt(static_cast<double>(dh));
  const std::vector<double> q = read_doubles(q_t), k = read_doubles(k_t), v = read_doubles(v_t);
  const int64_t group = Hq / Hk;
  const DataType pdt = flex_precision(c, dt);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Sq; ++i)
        for (int64_t j = 0; j < Sk; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < dh; ++d)
            dot += q[((b * Hq + h) * Sq + i) * dh + d] * k[((b * Hk + h / group) * Sk + j) * dh + d];
          scores[((b * Hq + h) * Sq + i) * Sk + j] = round_to(pdt, dot * scale);
        }
  if (c.score_mod) run_modifier(ctx, *c.score_mod, "score_mod", sdims, pdt, scores);
  for (int64_t r = 0; r < B * Hq * Sq; ++r) {
    softmax_row(scores.data() + r * Sk, Sk);  // no keys (Sk = 0): an empty row, not a reference into nothing
    for (int64_t j = 0; j < Sk; ++j) scores[r * Sk + j] = round_to(pdt, scores[r * Sk + j]);
  }
  if (c.prob_mod) run_modifier(ctx, *c.prob_mod, "prob_mod", sdims, pdt, scores);
  std::vector<double> y(static_cast<size_t>(check_data_sized({B, Hq, Sq, dv})), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Sq; ++i)
        for (int64_t j = 0; j < Sk; ++j) {
          const double p = scores[((b * Hq + h) * Sq + i) * Sk + j];
          for (int64_t m = 0; m < dv; ++m) y[((b * Hq + h) * Sq + i) * dv + m] += p * v[((b * Hk + h / group) * Sk + j) * dv + m];
        }
  store_doubles(ctx.allocate_output(0, dt, {B, Hq, Sq, dv}), y);
}

void infer_flex(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}}) {
    const int64_t r = input_rank(ctx, i);
    if (r >= 0 && r != 4) ctx.error(cat("input ", i, " must be 4-D, got rank ", r));
  }
  auto sq = dim_of(ctx, 0, 1).value, sk = dim_of(ctx, 1, 1).value;
  if (sq && sk && (*sk <= 0 || *sq % *sk != 0)) ctx.error(cat("q heads ", *sq, " must be a multiple of kv heads ", *sk));
  if (input_rank(ctx, 0) != 4) {
    ctx.set_output(0, Type::tensor(dt));
    return;
  }
  ctx.set_output(0, Type::tensor(dt, shape_from({dim_of(ctx, 0, 0), dim_of(ctx, 0, 1), dim_of(ctx, 0, 2), dim_of(ctx, 2, 3)})));
}

}  // namespace

void register_attention(Registry& r) {
  const std::vector<DataType> floats = {D::BFloat16, D::Float16, D::Float, D::Double};
  std::vector<DataType> mask_types = kNumericTypes;
  mask_types.push_back(D::Bool);
  for (int v : {23, 24}) {
    std::vector<TypeConstraint> types = {{{0, 1, 4}, floats}, {{2, 5}, floats}, {{3}, mask_types}};
    if (v >= 24) types.push_back({{6}, {D::Int64}});
    add_versions(r, "", "Attention", {v}, types, infer_attention, [v](const KernelInit& init) {
      AttnConfig c = parse_attention(init.attrs, v);
      if (init.reference_only) return make_kernel([c](KernelContext& ctx) { run_attention(c, ctx); });
      return make_kernel([c](KernelContext& ctx) {
        if (!attention_fast(c, ctx)) run_attention(c, ctx);
      });
    });
  }

  add_versions(
      r, "", "RotaryEmbedding", {23}, {{{0, 1, 2}, {D::Float, D::Float16, D::BFloat16}}, {{3}, {D::Int64}}},
      [](InferContext& ctx) {
        const int64_t rank = input_rank(ctx, 0);
        if (rank >= 0 && rank != 3 && rank != 4) ctx.error(cat("input must be 3-D or 4-D, got rank ", rank));
        if (rank == 3 && ctx.attrs.get_int("num_heads", 0) <= 0) ctx.error("a 3-D input needs a positive num_heads");
        infer_same_as_input(ctx);
      },
      [](const KernelInit& init) {
        RopeConfig c;
        c.interleaved = init.attrs.get_int("interleaved", 0) != 0;
        c.num_heads = init.attrs.get_int("num_heads", 0);
        c.rot_dim = init.attrs.get_int("rotary_embedding_dim", 0);
        return make_kernel([c](KernelContext& ctx) { run_rope(c, ctx); });
      });

  add_versions(r, "", "LinearAttention", {27},
               {{{0, 1, 2, 4, 5, 6}, {D::Float, D::Float16, D::BFloat16}}, {{3}, {D::Float, D::Float16, D::BFloat16}}},
               infer_linear, [](const KernelInit& init) {
                 LinConfig c = parse_linear(init.attrs);
                 return make_kernel([c](KernelContext& ctx) { run_linear(c, ctx); });
               });

  add_versions(r, "ai.onnx.preview", "FlexAttention", {1}, {{{0, 1, 2}, floats}}, infer_flex, [](const KernelInit& init) {
    FlexConfig c;
    if (init.attrs.has("scale")) c.scale = init.attrs.get_float("scale");
    if (init.attrs.has("softmax_precision")) {
      const int64_t p = init.attrs.get_int("softmax_precision");
      if (p != static_cast<int64_t>(D::Float) && p != static_cast<int64_t>(D::Float16) && p != static_cast<int64_t>(D::BFloat16) &&
          p != static_cast<int64_t>(D::Double))
        fail("softmax_precision ", p, " is not a float type");
      c.precision = static_cast<DataType>(p);
    }
    c.score_mod = init.attrs.get_graph("score_mod");
    c.prob_mod = init.attrs.get_graph("prob_mod");
    for (const Graph* g : {c.score_mod, c.prob_mod})
      if (g && (g->inputs.size() != 1 || g->outputs.size() != 1)) fail("score_mod and prob_mod must take one input and produce one output");
    return make_kernel([c](KernelContext& ctx) { run_flex(c, ctx); });
  });
  r.set_fast_kernels("", "Attention", {"float32, 4-D, no past: two batched oneDNN products around a vectorized softmax"});
}

}  // namespace onyx::ops
