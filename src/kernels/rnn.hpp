// Float32 LSTM with constant weights, for the LSTM op's fast kernel.
// X·Wᵀ for every time step is one matrix product on oneDNN (both biases folded in); then per step the recurrent
// product h·Rᵀ and the gates. At batch 1 the recurrent product is a matrix-vector product bound by reading R
// (4H×H floats) every step: R is kept in column panels streamed with the accumulators in registers; larger
// batches use oneDNN's matmul. Weights are taken in ONNX's layout and gate order (i, o, f, c; peepholes i, o, f;
// B = [Wb, Rb] per direction). Default activations only (sigmoid, tanh, tanh), no clip, no coupled input/forget
// gate: the caller checks that.
// (oneDNN's own lstm_forward was measured too, on the benchmark LSTM with one thread: about 25 ms against 18 ms
// here, and it sizes its work for the thread count at creation rather than at the run.)
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/gemm.hpp"

namespace onyx::kernels {

enum class RnnDirection { Forward, Reverse, Bidirectional };

class PackedLstm {
 public:
  // w: [dirs, 4H, I], r: [dirs, 4H, H], b: [dirs, 8H] or null, p: [dirs, 3H] or null, all row-major; w and r
  // must outlive the object (the input products pack W on first use of a row count), b and p are copied.
  PackedLstm(const float* w, const float* r, const float* b, const float* p, RnnDirection direction, int64_t input,
             int64_t hidden);
  int64_t input_size() const { return I_; }
  int64_t hidden_size() const { return H_; }

  // Creates the primitives for this shape now (a session with static shapes does it at creation).
  void prepare(int64_t seq, int64_t batch) const;

  // Tensors in ONNX's layouts: layout 0 (batch_major false) x [seq, batch, I], y [seq, dirs, batch, H], states
  // [dirs, batch, H]; layout 1 x [batch, seq, I], y [batch, seq, dirs, H], states [batch, dirs, H].
  // h0/c0 null: zeros. y/yh/yc null: not wanted.
  struct Io {
    const float* x = nullptr;
    const float* h0 = nullptr;
    const float* c0 = nullptr;
    float* y = nullptr;
    float* yh = nullptr;
    float* yc = nullptr;
  };
  void run(int64_t seq, int64_t batch, bool batch_major, const Io& io) const;

 private:
  struct Direction {
    std::unique_ptr<PackedGemm> input, recurrent;
    std::vector<float> recurrent_panels;  // R for a few batch rows (see rnn.cpp)
    std::vector<float> peep;              // ONNX order i, o, f; empty without peepholes
  };
  RnnDirection direction_;
  int64_t I_, H_;
  std::vector<Direction> dirs_;
};

}  // namespace onyx::kernels
