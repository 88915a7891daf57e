#include "kernels/rnn.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace onyx::kernels {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

// ONNX gate index of each of oneDNN's LSTM gates (oneDNN: i, f, c, o; ONNX: i, o, f, c).
constexpr int kOnnxGate[4] = {0, 2, 3, 1};
// ONNX peephole index of each of oneDNN's peepholes (oneDNN: i, f, o; ONNX: i, o, f).
constexpr int kOnnxPeephole[3] = {0, 2, 1};

int64_t dir_count(RnnDirection d) { return d == RnnDirection::Bidirectional ? 2 : 1; }

dnnl::rnn_direction to_dnnl(RnnDirection d) {
  switch (d) {
    case RnnDirection::Forward: return dnnl::rnn_direction::unidirectional_left2right;
    case RnnDirection::Reverse: return dnnl::rnn_direction::unidirectional_right2left;
    case RnnDirection::Bidirectional: return dnnl::rnn_direction::bidirectional_concat;
  }
  return dnnl::rnn_direction::unidirectional_left2right;
}

// ONNX [dirs, 4H, K] (row = gate * H + h, column k) -> oneDNN ldigo [1, dirs, K, 4, H].
void to_ldigo(const float* src, int64_t dirs, int64_t K, int64_t H, float* dst) {
  for (int64_t d = 0; d < dirs; ++d)
    for (int g = 0; g < 4; ++g)
      for (int64_t h = 0; h < H; ++h) {
        const float* row = src + ((d * 4 + kOnnxGate[g]) * H + h) * K;
        float* col = dst + d * K * 4 * H + g * H + h;
        for (int64_t k = 0; k < K; ++k) col[k * 4 * H] = row[k];
      }
}

}  // namespace

PackedLstm::PackedLstm(const float* w, const float* r, const float* b, const float* p, RnnDirection direction,
                       int64_t input, int64_t hidden)
    : direction_(direction), dirs_(dir_count(direction)), I_(input), H_(hidden), peephole_(p != nullptr),
      w_layer_(static_cast<size_t>(dirs_ * I_ * 4 * H_)), w_iter_(static_cast<size_t>(dirs_ * H_ * 4 * H_)),
      bias_(static_cast<size_t>(dirs_ * 4 * H_), 0.0f), peep_(p ? static_cast<size_t>(dirs_ * 3 * H_) : 0),
      layer_packs_(w_layer_.data(), memory::desc({1, dirs_, I_, 4, H_}, dt::f32, tag::ldigo)),
      iter_packs_(w_iter_.data(), memory::desc({1, dirs_, H_, 4, H_}, dt::f32, tag::ldigo)) {
  to_ldigo(w, dirs_, I_, H_, w_layer_.data());
  to_ldigo(r, dirs_, H_, H_, w_iter_.data());
  for (int64_t d = 0; d < dirs_; ++d) {
    for (int g = 0; g < 4; ++g) {
      float* dst = bias_.data() + (d * 4 + g) * H_;
      if (b) {
        const float* wb = b + d * 8 * H_ + kOnnxGate[g] * H_;
        const float* rb = wb + 4 * H_;
        for (int64_t h = 0; h < H_; ++h) dst[h] = wb[h] + rb[h];
      }
    }
    if (p)
      for (int g = 0; g < 3; ++g)
        std::copy_n(p + (d * 3 + kOnnxPeephole[g]) * H_, H_, peep_.data() + (d * 3 + g) * H_);
  }
}

const PackedLstm::Plan& PackedLstm::plan(int64_t seq, int64_t batch, bool batch_major) const {
  return plans_.get({seq, batch, batch_major}, [&] {
    const tag seq_tag = batch_major ? tag::ntc : tag::tnc;
    memory::desc src_layer({seq, batch, I_}, dt::f32, seq_tag);
    memory::desc state({1, dirs_, batch, H_}, dt::f32, tag::ldnc);
    memory::desc w_layer({1, dirs_, I_, 4, H_}, dt::f32, tag::any);
    memory::desc w_iter({1, dirs_, H_, 4, H_}, dt::f32, tag::any);
    memory::desc peep = peephole_ ? memory::desc({1, dirs_, 3, H_}, dt::f32, tag::ldgo) : memory::desc();
    memory::desc bias({1, dirs_, 4, H_}, dt::f32, tag::ldgo);
    memory::desc dst_layer({seq, batch, dirs_ * H_}, dt::f32, seq_tag);
    dnnl::lstm_forward::desc d(dnnl::prop_kind::forward_inference, to_dnnl(direction_), src_layer, state, state,
                               w_layer, w_iter, peep, bias, dst_layer, state, state);
    dnnl::lstm_forward::primitive_desc pd(d, cpu_engine());
    return Plan{dnnl::lstm_forward(pd), layer_packs_.get(pd.weights_layer_desc()),
                iter_packs_.get(pd.weights_iter_desc())};
  });
}

void PackedLstm::prepare(int64_t seq, int64_t batch, bool batch_major) const { plan(seq, batch, batch_major); }

void PackedLstm::run(int64_t seq, int64_t batch, bool batch_major, const Io& io) const {
  const Plan& p = plan(seq, batch, batch_major);
  auto& eng = cpu_engine();
  const int64_t state_size = dirs_ * batch * H_;
  // States are [dirs, batch, H] for oneDNN; ONNX's layout 1 puts batch first, which is the same bytes only when
  // one of the two is 1.
  const bool transpose_states = batch_major && dirs_ > 1 && batch > 1;
  std::vector<float> zeros, h0, c0, hn, cn;
  const auto to_dnb = [&](const float* src, std::vector<float>& dst) -> const float* {
    if (!src) {
      if (zeros.empty()) zeros.assign(static_cast<size_t>(state_size), 0.0f);
      return zeros.data();
    }
    if (!transpose_states) return src;
    dst.resize(static_cast<size_t>(state_size));
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t d = 0; d < dirs_; ++d) std::copy_n(src + (n * dirs_ + d) * H_, H_, dst.data() + (d * batch + n) * H_);
    return dst.data();
  };
  const float* h0p = to_dnb(io.h0, h0);
  const float* c0p = to_dnb(io.c0, c0);
  // oneDNN's dst_layer holds both directions side by side per (t, n): ONNX's layout 0 wants them apart.
  const bool y_direct = io.y && (dirs_ == 1 || batch_major);
  std::vector<float> y_tmp;
  float* y = io.y;
  if (!y_direct) {
    y_tmp.resize(static_cast<size_t>(seq * batch * dirs_ * H_));
    y = y_tmp.data();
  }
  const bool states_direct = !transpose_states;
  // oneDNN always writes the final states; unwanted ones (or ones to transpose) go to scratch.
  const auto final_state = [&](float* out, std::vector<float>& scratch) {
    if (out && states_direct) return out;
    scratch.resize(static_cast<size_t>(state_size));
    return scratch.data();
  };
  float* hnp = final_state(io.yh, hn);
  float* cnp = final_state(io.yc, cn);

  const tag seq_tag = batch_major ? tag::ntc : tag::tnc;
  memory::desc state({1, dirs_, batch, H_}, dt::f32, tag::ldnc);
  memory src_layer({{seq, batch, I_}, dt::f32, seq_tag}, eng, const_cast<float*>(io.x));
  memory dst_layer({{seq, batch, dirs_ * H_}, dt::f32, seq_tag}, eng, y);
  memory src_iter(state, eng, const_cast<float*>(h0p)), src_iter_c(state, eng, const_cast<float*>(c0p));
  memory dst_iter(state, eng, hnp), dst_iter_c(state, eng, cnp);
  memory bias({{1, dirs_, 4, H_}, dt::f32, tag::ldgo}, eng, const_cast<float*>(bias_.data()));
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC_LAYER, src_layer},   {DNNL_ARG_SRC_ITER, src_iter},
                                       {DNNL_ARG_SRC_ITER_C, src_iter_c}, {DNNL_ARG_WEIGHTS_LAYER, p.weights_layer},
                                       {DNNL_ARG_WEIGHTS_ITER, p.weights_iter}, {DNNL_ARG_BIAS, bias},
                                       {DNNL_ARG_DST_LAYER, dst_layer},   {DNNL_ARG_DST_ITER, dst_iter},
                                       {DNNL_ARG_DST_ITER_C, dst_iter_c}};
  if (peephole_)
    args.emplace(DNNL_ARG_WEIGHTS_PEEPHOLE,
                 memory({{1, dirs_, 3, H_}, dt::f32, tag::ldgo}, eng, const_cast<float*>(peep_.data())));
  p.primitive.execute(thread_stream(), args);
  thread_stream().wait();

  if (io.y && !y_direct)
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t d = 0; d < dirs_; ++d)
          std::copy_n(y_tmp.data() + ((t * batch + n) * dirs_ + d) * H_, H_, io.y + ((t * dirs_ + d) * batch + n) * H_);
  if (!states_direct) {
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t d = 0; d < dirs_; ++d) {
        if (io.yh) std::copy_n(hn.data() + (d * batch + n) * H_, H_, io.yh + (n * dirs_ + d) * H_);
        if (io.yc) std::copy_n(cn.data() + (d * batch + n) * H_, H_, io.yc + (n * dirs_ + d) * H_);
      }
  }
}

}  // namespace onyx::kernels

namespace onyx::kernels {

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define ONYX_RNN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONYX_RNN_CLONES
#endif

// e^x for x in [-88, 88] (inputs are clamped there): 2^n * e^r with n = round(x / ln 2), |r| <= ln(2)/2, e^r by
// its Taylor series to degree 7 (relative error < 1e-8 before float rounding). Plain arithmetic so that loops
// calling it vectorize.
inline float exp_clamped(float x) {
  x = std::min(88.0f, std::max(-88.0f, x));
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504f + shifter) - shifter;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln 2 in two parts
  float e = 1.0f / 5040;
  e = e * r + 1.0f / 720;
  e = e * r + 1.0f / 120;
  e = e * r + 1.0f / 24;
  e = e * r + 1.0f / 6;
  e = e * r + 0.5f;
  e = e * r + 1.0f;
  e = e * r + 1.0f;
  // 2^n by building the float's exponent; n is in [-127, 127], so split it to stay within normal range.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni / 2;
  const float s1 = std::bit_cast<float>((half + 127) << 23);
  const float s2 = std::bit_cast<float>((ni - half + 127) << 23);
  return e * s1 * s2;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + exp_clamped(-x)); }

// tanh(x) = sign(x) (1 - e^{-2|x|}) / (1 + e^{-2|x|}).
inline float tanh_fast(float x) {
  const float e = exp_clamped(-2.0f * std::fabs(x));
  return std::copysign((1.0f - e) / (1.0f + e), x);
}

// One LSTM step for one batch row. g: the 4H recurrent products in ONNX's gate order (i, o, f, c), overwritten;
// x: the input products (bias included) to add; c: cell state (updated); h: hidden state out; p: peepholes
// (i, o, f) or null. `omp simd`: the loops vectorize whatever GCC's -O2 cost model thinks (the pointers never
// alias).
ONYX_RNN_CLONES
void lstm_cell(float* g, const float* x, const float* p, int64_t H, float* c, float* h) {
  float* gi = g;
  float* go = g + H;
  float* gf = g + 2 * H;
  float* gc = g + 3 * H;
  const float* xi = x;
  const float* xo = x + H;
  const float* xf = x + 2 * H;
  const float* xc = x + 3 * H;
  if (p) {
    const float* pi = p;
    const float* po = p + H;
    const float* pf = p + 2 * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const float cn = sigmoid(gf[j] + xf[j] + pf[j] * c[j]) * c[j] +
                       sigmoid(gi[j] + xi[j] + pi[j] * c[j]) * tanh_fast(gc[j] + xc[j]);
      c[j] = cn;
      h[j] = sigmoid(go[j] + xo[j] + po[j] * cn) * tanh_fast(cn);
    }
    return;
  }
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const float cn = sigmoid(gf[j] + xf[j]) * c[j] + sigmoid(gi[j] + xi[j]) * tanh_fast(gc[j] + xc[j]);
    c[j] = cn;
    h[j] = sigmoid(go[j] + xo[j]) * tanh_fast(cn);
  }
}

}  // namespace

GemmLstm::GemmLstm(const float* w, const float* r, const float* b, const float* p, RnnDirection direction,
                   int64_t input, int64_t hidden)
    : direction_(direction), I_(input), H_(hidden) {
  const int64_t n = dir_count(direction), H = hidden;
  for (int64_t d = 0; d < n; ++d) {
    Direction dir;
    std::vector<float> bias(static_cast<size_t>(4 * H), 0.0f);
    if (b)
      for (int64_t j = 0; j < 4 * H; ++j) bias[j] = b[d * 8 * H + j] + b[d * 8 * H + 4 * H + j];
    dir.input = std::make_unique<PackedGemm>(w + d * 4 * H * input, input, 4 * H, true, std::move(bias));
    dir.recurrent = std::make_unique<PackedGemm>(r + d * 4 * H * H, H, 4 * H, true, std::vector<float>{});
    if (p) dir.peep.assign(p + d * 3 * H, p + (d + 1) * 3 * H);
    dirs_.push_back(std::move(dir));
  }
}

void GemmLstm::prepare(int64_t seq, int64_t batch, bool) const {
  // PackedGemm makes its primitive on first use: run both products once on zeros.
  std::vector<float> in(static_cast<size_t>(seq * batch * std::max(I_, H_)), 0.0f);
  std::vector<float> out(static_cast<size_t>(seq * batch * 4 * H_));
  for (const Direction& d : dirs_) {
    d.input->run(in.data(), seq * batch, out.data());
    d.recurrent->run(in.data(), batch, out.data());
  }
}

void GemmLstm::run(int64_t seq, int64_t batch, bool batch_major, const PackedLstm::Io& io) const {
  const int64_t H = H_, G = 4 * H, ND = static_cast<int64_t>(dirs_.size());
  // Row of (t, n) in X and in the input products; offsets of Y and of the states, in ONNX's layouts.
  const auto row = [&](int64_t t, int64_t n) { return batch_major ? n * seq + t : t * batch + n; };
  const auto y_off = [&](int64_t t, int64_t d, int64_t n) {
    return batch_major ? ((n * seq + t) * ND + d) * H : ((t * ND + d) * batch + n) * H;
  };
  const auto s_off = [&](int64_t d, int64_t n) { return batch_major ? (n * ND + d) * H : (d * batch + n) * H; };
  std::vector<float> xw(static_cast<size_t>(seq * batch * G)), hr(static_cast<size_t>(batch * G));
  std::vector<float> h(static_cast<size_t>(batch * H)), c(static_cast<size_t>(batch * H));
  for (int64_t d = 0; d < ND; ++d) {
    const Direction& dir = dirs_[static_cast<size_t>(d)];
    const bool reverse = direction_ == RnnDirection::Reverse || d == 1;
    dir.input->run(io.x, seq * batch, xw.data());
    for (int64_t n = 0; n < batch; ++n) {
      float* hn = h.data() + n * H;
      float* cn = c.data() + n * H;
      if (io.h0) std::copy_n(io.h0 + s_off(d, n), H, hn);
      else std::fill_n(hn, H, 0.0f);
      if (io.c0) std::copy_n(io.c0 + s_off(d, n), H, cn);
      else std::fill_n(cn, H, 0.0f);
    }
    const float* peep = dir.peep.empty() ? nullptr : dir.peep.data();
    for (int64_t step = 0; step < seq; ++step) {
      const int64_t t = reverse ? seq - 1 - step : step;
      dir.recurrent->run(h.data(), batch, hr.data());
      for (int64_t n = 0; n < batch; ++n) {
        lstm_cell(hr.data() + n * G, xw.data() + row(t, n) * G, peep, H, c.data() + n * H, h.data() + n * H);
        if (io.y) std::copy_n(h.data() + n * H, H, io.y + y_off(t, d, n));
      }
    }
    for (int64_t n = 0; n < batch; ++n) {
      if (io.yh) std::copy_n(h.data() + n * H, H, io.yh + s_off(d, n));
      if (io.yc) std::copy_n(c.data() + n * H, H, io.yc + s_off(d, n));
    }
  }
}

}  // namespace onyx::kernels
