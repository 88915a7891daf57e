// Float32 LSTM and GRU with constant weights, for the LSTM and GRU ops' fast kernels.
// X·Wᵀ for every time step is one matrix product on oneDNN (biases folded in); then per step the recurrent
// product h·Rᵀ and the gates, with a vectorized sigmoid/tanh. At batch 1 the recurrent product is a matrix-vector
// product bound by reading R every step: R is kept in column panels streamed with the accumulators in registers;
// batches above a few rows use oneDNN's matmul. Weights are taken in ONNX's layout and gate order (LSTM i, o, f,
// c, peepholes i, o, f; GRU z, r, h; B = [Wb, Rb] per direction). Default activations only (sigmoid, tanh,
// tanh / sigmoid, tanh), no clip, no coupled LSTM input/forget gate: the caller checks that.
// (oneDNN's own lstm_forward was measured too, on the benchmark LSTM with one thread: about 25 ms against 18 ms
// here, and it sizes its work for the thread count at creation rather than at the run.)
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/gemm.hpp"

namespace onyx::kernels {

enum class RnnDirection { Forward, Reverse, Bidirectional };

// Tensors in ONNX's layouts: layout 0 (batch_major false) x [seq, batch, I], y [seq, dirs, batch, H], states
// [dirs, batch, H]; layout 1 x [batch, seq, I], y [batch, seq, dirs, H], states [batch, dirs, H].
// h0/c0 null: zeros. y/yh/yc null: not wanted. c0/yc: LSTM only.
struct RnnIo {
  const float* x = nullptr;
  const float* h0 = nullptr;
  const float* c0 = nullptr;
  float* y = nullptr;
  float* yh = nullptr;
  float* yc = nullptr;
};

// y[batch, N] = h[batch, K] · Rᵀ for a constant R [N, K] (rows of some gates). r must outlive the object.
class RecurrentProduct {
 public:
  RecurrentProduct(const float* r, int64_t N, int64_t K);
  void prepare(int64_t batch) const;
  void run(const float* h, int64_t batch, float* y) const;

 private:
  int64_t N_, K_;
  PackedGemm gemm_;
  std::vector<float> panels_;  // for a few batch rows (see rnn.cpp)
};

class PackedLstm {
 public:
  // w: [dirs, 4H, I], r: [dirs, 4H, H], b: [dirs, 8H] or null, p: [dirs, 3H] or null, all row-major; w and r
  // must outlive the object (products pack them on first use of a row count), b and p are copied.
  PackedLstm(const float* w, const float* r, const float* b, const float* p, RnnDirection direction, int64_t input,
             int64_t hidden);
  int64_t input_size() const { return I_; }
  int64_t hidden_size() const { return H_; }
  // Creates the primitives for this shape now (a session with static shapes does it at creation).
  void prepare(int64_t seq, int64_t batch) const;
  void run(int64_t seq, int64_t batch, bool batch_major, const RnnIo& io) const;

 private:
  struct Direction {
    Direction(const float* w, const float* r, std::vector<float> bias, std::vector<float> p, int64_t I, int64_t H)
        : input(w, I, 4 * H, true, std::move(bias)), recurrent(r, 4 * H, H), peep(std::move(p)) {}
    PackedGemm input;
    RecurrentProduct recurrent;
    std::vector<float> peep;  // ONNX order i, o, f; empty without peepholes
  };
  RnnDirection direction_;
  int64_t I_, H_;
  std::vector<std::unique_ptr<Direction>> dirs_;
};

class PackedGru {
 public:
  // w: [dirs, 3H, I], r: [dirs, 3H, H], b: [dirs, 6H] or null; w and r must outlive the object, b is copied.
  PackedGru(const float* w, const float* r, const float* b, bool linear_before_reset, RnnDirection direction,
            int64_t input, int64_t hidden);
  int64_t input_size() const { return I_; }
  int64_t hidden_size() const { return H_; }
  void prepare(int64_t seq, int64_t batch) const;
  void run(int64_t seq, int64_t batch, bool batch_major, const RnnIo& io) const;

 private:
  struct Direction {
    Direction(const float* w, const float* r, std::vector<float> bias, std::vector<float> rbh_, int64_t I, int64_t H)
        : input(w, I, 3 * H, true, std::move(bias)), recurrent_zr(r, 2 * H, H), recurrent_h(r + 2 * H * H, H, H),
          rbh(std::move(rbh_)) {}
    PackedGemm input;
    RecurrentProduct recurrent_zr, recurrent_h;
    std::vector<float> rbh;  // Rbh, kept apart with linear_before_reset (empty otherwise: folded into the input)
  };
  RnnDirection direction_;
  bool lbr_;
  int64_t I_, H_;
  std::vector<std::unique_ptr<Direction>> dirs_;
};

}  // namespace onyx::kernels
