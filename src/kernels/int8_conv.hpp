// Quantized 2-D convolution (QLinearConv's arithmetic) on oneDNN's int8 direct kernels (VNNI where the CPU has
// it): 8-bit x with a per-tensor zero point, int8 weights with zero point 0 (per tensor or per output channel
// scales), an optional int32 bias, requantized to 8-bit y inside the kernel:
//   y = saturate(round_half_even(scale[m] * (sum (x - x_zero) * w + bias[m])) + y_zero)
// where scale[m] = x_scale * w_scale[m] / y_scale. Weights are reordered once into oneDNN's layout; the kernel reads
// and writes NHWC, and NCHW tensors are converted around it (one byte per element).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/conv.hpp"
#include "kernels/dnnl_kit.hpp"

namespace onyx::kernels {

struct Int8ConvParams {
  ConvShape shape;
  bool x_signed = false, y_signed = false;
  int32_t x_zero = 0, y_zero = 0;
  std::vector<float> scales;  // one, or M (per output channel)
  std::vector<int32_t> bias;  // empty or M
};

class PackedInt8Conv {
 public:
  // w: (M, C/group, kh, kw) int8, row-major; must outlive the object.
  PackedInt8Conv(const int8_t* w, Int8ConvParams params);
  const Int8ConvParams& params() const { return params_; }
  // x: (N, C, H, W), y: (N, M, OH, OW), or with `nhwc` (N, H, W, C) and (N, OH, OW, M); 8-bit of the params'
  // signedness. False (nothing written) where oneDNN has no kernel for this case; the caller then computes it
  // another way.
  bool run(const void* x, int64_t N, int64_t H, int64_t W, void* y, bool nhwc) const;

 private:
  struct Plan {
    bool ok = false;
    dnnl::convolution_forward primitive;
    dnnl::memory weights;
    dnnl::memory::desc src, dst, src_conv, dst_conv, scratchpad;
    Reorder src_in, dst_out;
  };
  const Plan& plan(int64_t N, int64_t H, int64_t W) const;
  Int8ConvParams params_;
  WeightPacks packs_;
  PrimitiveCache<std::array<int64_t, 3>, Plan> plans_;
};

}  // namespace onyx::kernels
