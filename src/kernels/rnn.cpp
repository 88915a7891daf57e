#include "kernels/rnn.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include <omp.h>

namespace onyx::kernels {

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define ONYX_RNN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONYX_RNN_CLONES
#endif

// e^x for x clamped to [-88, 88]: 2^n * e^r with n = round(x / ln 2), |r| <= ln(2)/2, e^r by its Taylor series
// to degree 7 (relative error < 1e-8 before float rounding). Plain arithmetic so that loops calling it vectorize;
// a NaN stays NaN.
inline float exp_clamped(float x) {
  x = x < -88.0f ? -88.0f : x;
  x = x > 88.0f ? 88.0f : x;
  // Adding 1.5 * 2^23 rounds to an integer, which then sits in the low mantissa bits.
  const float shifter = 12582912.0f;
  const float shifted = x * 1.44269504f + shifter;
  const float n = shifted - shifter;
  const int32_t ni = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(shifter);
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln 2 in two parts
  float e = 1.0f / 5040;
  e = e * r + 1.0f / 720;
  e = e * r + 1.0f / 120;
  e = e * r + 1.0f / 24;
  e = e * r + 1.0f / 6;
  e = e * r + 0.5f;
  e = e * r + 1.0f;
  e = e * r + 1.0f;
  // 2^n by building floats' exponents; n is in [-127, 127], so split it to stay within the normal range.
  const int32_t half = ni / 2;
  const float s1 = std::bit_cast<float>((half + 127) << 23);
  const float s2 = std::bit_cast<float>((ni - half + 127) << 23);
  return e * s1 * s2;
}

int64_t dir_count(RnnDirection d) { return d == RnnDirection::Bidirectional ? 2 : 1; }

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

// The recurrent product h·Rᵀ for a few batch rows, memory-bound at batch 1 (R is read whole every step): R is
// stored as panels of kPanel output columns, each [H][kPanel] contiguous, streamed once per step with the
// accumulators in registers (GCC vector types: zmm in the x86-64-v4 clone, two ymm each in v3, SSE otherwise).
constexpr int64_t kPanel = 128;
// Above this many batch rows oneDNN's matmul (a real GEMM) does the recurrent product instead.
constexpr int64_t kMaxPanelBatch = 4;

typedef float Vec16 __attribute__((vector_size(64), aligned(4)));

// y[b * ldy + j] = sum_k h[b * K + k] * panel[k * kPanel + j] for b < rows, j < cols (cols <= kPanel).
ONYX_RNN_CLONES
void panel_product(const float* h, int64_t rows, const float* panel, int64_t K, int64_t cols, float* y, int64_t ldy) {
  for (int64_t b = 0; b < rows; ++b) {
    const float* hb = h + b * K;
    Vec16 a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {}, a6 = {}, a7 = {};
    for (int64_t k = 0; k < K; ++k) {
      const float hk = hb[k];
      const Vec16* r = reinterpret_cast<const Vec16*>(panel + k * kPanel);
      a0 += hk * r[0];
      a1 += hk * r[1];
      a2 += hk * r[2];
      a3 += hk * r[3];
      a4 += hk * r[4];
      a5 += hk * r[5];
      a6 += hk * r[6];
      a7 += hk * r[7];
    }
    float out[kPanel];
    std::memcpy(out, &a0, 64);
    std::memcpy(out + 16, &a1, 64);
    std::memcpy(out + 32, &a2, 64);
    std::memcpy(out + 48, &a3, 64);
    std::memcpy(out + 64, &a4, 64);
    std::memcpy(out + 80, &a5, 64);
    std::memcpy(out + 96, &a6, 64);
    std::memcpy(out + 112, &a7, 64);
    std::copy_n(out, cols, y + b * ldy);
  }
}

// ONNX's R [N, K] (row j: output j) -> panels [N / kPanel rounded up][K][kPanel], zero-padded.
std::vector<float> to_panels(const float* r, int64_t N, int64_t K) {
  const int64_t panels = (N + kPanel - 1) / kPanel;
  std::vector<float> out(static_cast<size_t>(panels * K * kPanel), 0.0f);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) out[((j / kPanel) * K + k) * kPanel + j % kPanel] = r[j * K + k];
  return out;
}

// y[rows, N] = h[rows, K] · Rᵀ from the panels; panels split over the OpenMP team when it has several threads.
void recurrent_product(const float* h, int64_t rows, const std::vector<float>& panels, int64_t K, int64_t N,
                       float* y) {
  const int64_t count = (N + kPanel - 1) / kPanel;
#pragma omp parallel for schedule(static) if (count > 1 && omp_get_max_threads() > 1)
  for (int64_t q = 0; q < count; ++q)
    panel_product(h, rows, panels.data() + q * K * kPanel, K, std::min(kPanel, N - q * kPanel), y + q * kPanel, N);
}

}  // namespace

PackedLstm::PackedLstm(const float* w, const float* r, const float* b, const float* p, RnnDirection direction,
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
    dir.recurrent_panels = to_panels(r + d * 4 * H * H, 4 * H, H);
    if (p) dir.peep.assign(p + d * 3 * H, p + (d + 1) * 3 * H);
    dirs_.push_back(std::move(dir));
  }
}

void PackedLstm::prepare(int64_t seq, int64_t batch) const {
  // PackedGemm makes its primitive on first use: run both products once on zeros.
  std::vector<float> in(static_cast<size_t>(seq * batch * std::max(I_, H_)), 0.0f);
  std::vector<float> out(static_cast<size_t>(seq * batch * 4 * H_));
  for (const Direction& d : dirs_) {
    d.input->run(in.data(), seq * batch, out.data());
    if (batch > kMaxPanelBatch) d.recurrent->run(in.data(), batch, out.data());
  }
}

void PackedLstm::run(int64_t seq, int64_t batch, bool batch_major, const Io& io) const {
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
      if (step == 0 && !io.h0) std::fill(hr.begin(), hr.end(), 0.0f);  // h is zero: so is its product
      else if (batch > kMaxPanelBatch) dir.recurrent->run(h.data(), batch, hr.data());
      else recurrent_product(h.data(), batch, dir.recurrent_panels, H, G, hr.data());
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
