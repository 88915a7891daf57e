#include "kernels/rnn.hpp"

#include "base/target_clones.hpp"
#include "kernels/serial.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include <omp.h>

namespace onyx::kernels {

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define ONYX_RNN_CLONES ONYX_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
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

// y[rows, N] = h[rows, K] · Rᵀ from the panels; panels split over the OpenMP team when it has several threads and
// the step is big enough to repay starting them (a voice detector's 64-unit LSTM step is not: see runs_serially).
void panels_product(const float* h, int64_t rows, const std::vector<float>& panels, int64_t K, int64_t N, float* y) {
  const int64_t count = (N + kPanel - 1) / kPanel;
  const bool shared = count > 1 && omp_get_max_threads() > 1 &&
                      !runs_serially(static_cast<double>(rows) * static_cast<double>(K) * static_cast<double>(N));
#pragma omp parallel for schedule(static) if (shared)
  for (int64_t q = 0; q < count; ++q)
    panel_product(h, rows, panels.data() + q * K * kPanel, K, std::min(kPanel, N - q * kPanel), y + q * kPanel, N);
}

// GRU step for one batch row, gates in ONNX's order (z, r, h). hzr: h·Rᵀ of the z and r rows (2H, overwritten);
// x: input products with biases (z, r: Wb + Rb; h: Wb, plus Rbh unless linear_before_reset). lbr: null, or
// h·Rhᵀ + Rbh (linear_before_reset). Without lbr, the candidate's recurrent product needs r first: this writes
// r ⊙ h into rh and the caller finishes with gru_finish.
ONYX_RNN_CLONES
void gru_gates(float* hzr, const float* x, const float* lbr, int64_t H, const float* h, float* rh, float* hn) {
  float* gz = hzr;
  float* gr = hzr + H;
  if (lbr) {
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const float z = sigmoid(gz[j] + x[j]);
      const float n = tanh_fast(x[2 * H + j] + sigmoid(gr[j] + x[H + j]) * lbr[j]);
      hn[j] = (1.0f - z) * n + z * h[j];
    }
    return;
  }
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    gz[j] = sigmoid(gz[j] + x[j]);
    rh[j] = sigmoid(gr[j] + x[H + j]) * h[j];
  }
}

// The rest of a GRU step without linear_before_reset: z in hzr's first H, hh = (r ⊙ h)·Rhᵀ.
ONYX_RNN_CLONES
void gru_finish(const float* z, const float* x, const float* hh, int64_t H, const float* h, float* hn) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) hn[j] = (1.0f - z[j]) * tanh_fast(x[2 * H + j] + hh[j]) + z[j] * h[j];
}

// Offsets of the ONNX tensors for (time step, direction, batch row) in either layout.
struct Layout {
  int64_t seq, batch, dirs, H;
  bool batch_major;
  int64_t x_row(int64_t t, int64_t n) const { return batch_major ? n * seq + t : t * batch + n; }
  int64_t y(int64_t t, int64_t d, int64_t n) const {
    return batch_major ? ((n * seq + t) * dirs + d) * H : ((t * dirs + d) * batch + n) * H;
  }
  int64_t state(int64_t d, int64_t n) const { return batch_major ? (n * dirs + d) * H : (d * batch + n) * H; }
};

// Per direction: copies the initial state of every batch row (or zeros) into a [batch, H] buffer.
void load_state(const float* src, const Layout& l, int64_t d, float* dst) {
  for (int64_t n = 0; n < l.batch; ++n) {
    if (src) std::copy_n(src + l.state(d, n), l.H, dst + n * l.H);
    else std::fill_n(dst + n * l.H, l.H, 0.0f);
  }
}

void store_state(const float* src, const Layout& l, int64_t d, float* dst) {
  if (dst)
    for (int64_t n = 0; n < l.batch; ++n) std::copy_n(src + n * l.H, l.H, dst + l.state(d, n));
}

}  // namespace

RecurrentProduct::RecurrentProduct(const float* r, int64_t N, int64_t K)
    : N_(N), K_(K), gemm_(r, K, N, true, {}), panels_(to_panels(r, N, K)) {}

void RecurrentProduct::prepare(int64_t batch) const {
  if (batch <= kMaxPanelBatch) return;
  std::vector<float> zeros(static_cast<size_t>(batch * K_), 0.0f), out(static_cast<size_t>(batch * N_));
  gemm_.run(zeros.data(), batch, out.data());
}

void RecurrentProduct::run(const float* h, int64_t batch, float* y) const {
  if (batch > kMaxPanelBatch) gemm_.run(h, batch, y);
  else panels_product(h, batch, panels_, K_, N_, y);
}

PackedLstm::PackedLstm(const float* w, const float* r, const float* b, const float* p, RnnDirection direction,
                       int64_t input, int64_t hidden)
    : direction_(direction), I_(input), H_(hidden) {
  const int64_t H = hidden;
  for (int64_t d = 0; d < dir_count(direction); ++d) {
    std::vector<float> bias(static_cast<size_t>(4 * H), 0.0f);
    if (b)
      for (int64_t j = 0; j < 4 * H; ++j) bias[j] = b[d * 8 * H + j] + b[d * 8 * H + 4 * H + j];
    dirs_.push_back(std::make_unique<Direction>(
        w + d * 4 * H * input, r + d * 4 * H * H, std::move(bias),
        p ? std::vector<float>(p + d * 3 * H, p + (d + 1) * 3 * H) : std::vector<float>{}, input, H));
  }
}

void PackedLstm::prepare(int64_t seq, int64_t batch) const {
  // PackedGemm makes its primitive on first use: run the input product once on zeros.
  std::vector<float> in(static_cast<size_t>(seq * batch * I_), 0.0f), out(static_cast<size_t>(seq * batch * 4 * H_));
  for (const auto& d : dirs_) {
    d->input.run(in.data(), seq * batch, out.data());
    d->recurrent.prepare(batch);
  }
}

void PackedLstm::run(int64_t seq, int64_t batch, bool batch_major, const RnnIo& io) const {
  const int64_t H = H_, G = 4 * H;
  const Layout l{seq, batch, static_cast<int64_t>(dirs_.size()), H, batch_major};
  std::vector<float> xw(static_cast<size_t>(seq * batch * G)), hr(static_cast<size_t>(batch * G));
  std::vector<float> h(static_cast<size_t>(batch * H)), c(static_cast<size_t>(batch * H));
  for (int64_t d = 0; d < l.dirs; ++d) {
    const Direction& dir = *dirs_[static_cast<size_t>(d)];
    const bool reverse = direction_ == RnnDirection::Reverse || d == 1;
    dir.input.run(io.x, seq * batch, xw.data());
    load_state(io.h0, l, d, h.data());
    load_state(io.c0, l, d, c.data());
    const float* peep = dir.peep.empty() ? nullptr : dir.peep.data();
    for (int64_t step = 0; step < seq; ++step) {
      const int64_t t = reverse ? seq - 1 - step : step;
      if (step == 0 && !io.h0) std::fill(hr.begin(), hr.end(), 0.0f);  // h is zero: so is its product
      else dir.recurrent.run(h.data(), batch, hr.data());
      for (int64_t n = 0; n < batch; ++n) {
        lstm_cell(hr.data() + n * G, xw.data() + l.x_row(t, n) * G, peep, H, c.data() + n * H, h.data() + n * H);
        if (io.y) std::copy_n(h.data() + n * H, H, io.y + l.y(t, d, n));
      }
    }
    store_state(h.data(), l, d, io.yh);
    store_state(c.data(), l, d, io.yc);
  }
}

PackedGru::PackedGru(const float* w, const float* r, const float* b, bool linear_before_reset, RnnDirection direction,
                     int64_t input, int64_t hidden)
    : direction_(direction), lbr_(linear_before_reset), I_(input), H_(hidden) {
  const int64_t H = hidden;
  for (int64_t d = 0; d < dir_count(direction); ++d) {
    const float* wb = b ? b + d * 6 * H : nullptr;
    const float* rb = b ? wb + 3 * H : nullptr;
    // z and r take both biases; the candidate takes Wbh, and Rbh too unless it sits inside r ⊙ (...).
    std::vector<float> bias(static_cast<size_t>(3 * H), 0.0f), rbh(lbr_ ? static_cast<size_t>(H) : 0, 0.0f);
    if (b) {
      for (int64_t j = 0; j < 3 * H; ++j) bias[j] = wb[j] + (j < 2 * H || !lbr_ ? rb[j] : 0.0f);
      if (lbr_) std::copy_n(rb + 2 * H, H, rbh.data());
    }
    dirs_.push_back(std::make_unique<Direction>(w + d * 3 * H * input, r + d * 3 * H * H, std::move(bias),
                                                std::move(rbh), input, H));
  }
}

void PackedGru::prepare(int64_t seq, int64_t batch) const {
  std::vector<float> in(static_cast<size_t>(seq * batch * I_), 0.0f), out(static_cast<size_t>(seq * batch * 3 * H_));
  for (const auto& d : dirs_) {
    d->input.run(in.data(), seq * batch, out.data());
    d->recurrent_zr.prepare(batch);
    d->recurrent_h.prepare(batch);
  }
}

void PackedGru::run(int64_t seq, int64_t batch, bool batch_major, const RnnIo& io) const {
  const int64_t H = H_, G = 3 * H;
  const Layout l{seq, batch, static_cast<int64_t>(dirs_.size()), H, batch_major};
  std::vector<float> xw(static_cast<size_t>(seq * batch * G)), hzr(static_cast<size_t>(batch * 2 * H)),
      hh(static_cast<size_t>(batch * H)), rh(static_cast<size_t>(batch * H));
  std::vector<float> h(static_cast<size_t>(batch * H)), hn(static_cast<size_t>(batch * H));
  for (int64_t d = 0; d < l.dirs; ++d) {
    const Direction& dir = *dirs_[static_cast<size_t>(d)];
    const bool reverse = direction_ == RnnDirection::Reverse || d == 1;
    dir.input.run(io.x, seq * batch, xw.data());
    load_state(io.h0, l, d, h.data());
    for (int64_t step = 0; step < seq; ++step) {
      const int64_t t = reverse ? seq - 1 - step : step;
      const bool h_zero = step == 0 && !io.h0;
      if (h_zero) std::fill(hzr.begin(), hzr.end(), 0.0f);
      else dir.recurrent_zr.run(h.data(), batch, hzr.data());
      if (lbr_) {
        if (h_zero) std::fill(hh.begin(), hh.end(), 0.0f);
        else dir.recurrent_h.run(h.data(), batch, hh.data());
        for (int64_t n = 0; n < batch; ++n) {
          float* lin = hh.data() + n * H;
          for (int64_t j = 0; j < H; ++j) lin[j] += dir.rbh[j];
          gru_gates(hzr.data() + n * 2 * H, xw.data() + l.x_row(t, n) * G, lin, H, h.data() + n * H, nullptr,
                    hn.data() + n * H);
        }
      } else {
        for (int64_t n = 0; n < batch; ++n)
          gru_gates(hzr.data() + n * 2 * H, xw.data() + l.x_row(t, n) * G, nullptr, H, h.data() + n * H,
                    rh.data() + n * H, nullptr);
        if (h_zero) std::fill(hh.begin(), hh.end(), 0.0f);
        else dir.recurrent_h.run(rh.data(), batch, hh.data());
        for (int64_t n = 0; n < batch; ++n)
          gru_finish(hzr.data() + n * 2 * H, xw.data() + l.x_row(t, n) * G, hh.data() + n * H, H, h.data() + n * H,
                     hn.data() + n * H);
      }
      h.swap(hn);
      if (io.y)
        for (int64_t n = 0; n < batch; ++n) std::copy_n(h.data() + n * H, H, io.y + l.y(t, d, n));
    }
    store_state(h.data(), l, d, io.yh);
  }
}

}  // namespace onyx::kernels
