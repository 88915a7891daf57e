// Float 2-D max and average pooling on oneDNN over channels-last (NHWC) or channels-first (NCHW) tensors. The geometry is given whole
// (kernel, strides, dilations, the four pads and the output size), so the caller's rules (auto_pad, ceil_mode)
// decide it; oneDNN is asked for exactly that window.
#pragma once
#include <array>
#include <cstdint>

#include "kernels/dnnl_kit.hpp"

namespace onyx::kernels {

struct PoolShape {
  enum class Kind { Max, AverageIncludePad, AverageExcludePad } kind = Kind::Max;
  bool channels_last = true;
  int64_t N = 0, C = 0;
  std::array<int64_t, 2> in{}, out{}, kernel{}, strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{};  // top, left, bottom, right: the right/bottom ones as the output size needs
  auto key() const { return std::tuple(kind, channels_last, N, C, in, out, kernel, strides, dilations, pads); }
};

// One pooling primitive per shape; x: (N, H, W, C), y: (N, OH, OW, C) (channels first: (N, C, H, W) ...).
class Pool2d {
 public:
  explicit Pool2d(const PoolShape& shape);
  void run(const float* x, float* y) const;

 private:
  PoolShape shape_;
  dnnl::pooling_v2_forward primitive_;
  dnnl::memory::desc scratchpad_;
};

}  // namespace onyx::kernels
