// Float matrix products on oneDNN.
// PackedGemm: y[M,N] = a[M,K] * B + bias with a constant B, reordered once into the layout oneDNN's
//   kernel wants (per distinct M only if that layout differs); the caller's B is never written. A single row
//   (M = 1) is a matrix-vector product, bound by reading B once: it streams B in its own layout instead
//   (libraries' GEMMs sit far below memory speed there), and B is never packed for it.
// batched_matmul: numpy-style batched product of two runtime tensors (batch dims broadcast), for attention.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/dnnl_kit.hpp"

namespace onyx::kernels {

class PackedGemm {
 public:
  // b: K×N row-major, or N×K when b_transposed. bias: empty or N values; the epilogue follows it. b must
  // outlive the object, or `keep` must own it.
  PackedGemm(const float* b, int64_t K, int64_t N, bool b_transposed, std::vector<float> bias, Epilogue epilogue = {},
             std::shared_ptr<const void> keep = nullptr);
  int64_t K() const { return K_; }
  // Creates the primitive (and packs B) for M rows now: sessions call it at creation when M is static.
  void prepare(int64_t M) const {
    const SerialScope serial(runs_serially(static_cast<double>(M) * static_cast<double>(K_) * static_cast<double>(N_)));
    if (M > 1 || !epilogue_.empty()) plan(M);
  }
  int64_t N() const { return N_; }
  // a: M×K row-major; y: M×N row-major (written whole). With a sum epilogue y holds the addend on entry.
  void run(const float* a, int64_t M, float* y) const;

 private:
  struct Plan {
    dnnl::matmul primitive;
    dnnl::memory weights;
    dnnl::memory::desc scratchpad;
  };
  const Plan& plan(int64_t M) const;
  int64_t K_, N_;
  const float* b_;
  bool b_transposed_;
  std::vector<float> bias_;
  Epilogue epilogue_;
  std::shared_ptr<const void> keep_;
  WeightPacks packs_;
  PrimitiveCache<int64_t, Plan> plans_;
};

// y[N] = x[K] * B + bias (bias may be null), B K×N row-major or N×K when b_transposed; split over the OpenMP team
// when large.
void gemv(const float* x, const float* b, int64_t K, int64_t N, bool b_transposed, const float* bias, float* y);

// c = a @ b over the last two dims with broadcast batch dims; a: [...,M,K], b: [...,K,N] of equal rank (callers
// pad with leading 1s), c: [...,M,N] with the broadcast batch dims. All row-major and contiguous.
void batched_matmul(const float* a, const std::vector<int64_t>& a_dims, const float* b,
                    const std::vector<int64_t>& b_dims, float* c);

}  // namespace onyx::kernels
