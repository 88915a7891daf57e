// Float32 LSTM on oneDNN's lstm_forward (inference), with constant weights reordered once.
// PackedLstm takes ONNX's tensors (gate order i, o, f, c; peepholes i, o, f; bias [Wb, Rb] per direction) and
// holds them in oneDNN's order (i, f, c, o; peepholes i, f, o; one summed bias), packed into the layout the
// primitive wants. Default activations only (sigmoid, tanh, tanh), no clip, no coupled input/forget gate: the
// caller checks that. One primitive per (sequence length, batch, layout), cached.
#pragma once
#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "kernels/dnnl_kit.hpp"
#include "kernels/gemm.hpp"

namespace onyx::kernels {

enum class RnnDirection { Forward, Reverse, Bidirectional };

class PackedLstm {
 public:
  // w: [dirs, 4H, I], r: [dirs, 4H, H], b: [dirs, 8H] or null, p: [dirs, 3H] or null (all row-major, read once
  // here and not kept).
  PackedLstm(const float* w, const float* r, const float* b, const float* p, RnnDirection direction, int64_t input,
             int64_t hidden);
  int64_t dirs() const { return dirs_; }
  int64_t input_size() const { return I_; }
  int64_t hidden_size() const { return H_; }

  // Creates the primitive for this shape now (a session with static shapes does it at creation).
  void prepare(int64_t seq, int64_t batch, bool batch_major) const;

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
  struct Plan {
    dnnl::lstm_forward primitive;
    dnnl::memory weights_layer, weights_iter;
  };
  using Key = std::tuple<int64_t, int64_t, bool>;
  const Plan& plan(int64_t seq, int64_t batch, bool batch_major) const;

  RnnDirection direction_;
  int64_t dirs_, I_, H_;
  bool peephole_;
  // oneDNN's plain layouts: weights ldigo, bias ldgo (Wb + Rb), peepholes ldgo.
  std::vector<float> w_layer_, w_iter_, bias_, peep_;
  WeightPacks layer_packs_, iter_packs_;
  PrimitiveCache<Key, Plan> plans_;
};

// The same LSTM as matrix products and a vectorized cell: X·W for every time step in one product (bias folded
// in), then per step h·R and the gates. Same interface as PackedLstm; w, r must outlive it.
class GemmLstm {
 public:
  GemmLstm(const float* w, const float* r, const float* b, const float* p, RnnDirection direction, int64_t input,
           int64_t hidden);
  int64_t input_size() const { return I_; }
  int64_t hidden_size() const { return H_; }
  void prepare(int64_t seq, int64_t batch, bool batch_major) const;
  void run(int64_t seq, int64_t batch, bool batch_major, const PackedLstm::Io& io) const;

 private:
  struct Direction {
    std::unique_ptr<PackedGemm> input, recurrent;
    std::vector<float> peep;  // ONNX order i, o, f; empty without peepholes
  };
  RnnDirection direction_;
  int64_t I_, H_;
  std::vector<Direction> dirs_;
};

}  // namespace onyx::kernels
