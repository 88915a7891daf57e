// Float 2-D convolution on oneDNN, channels-last (NHWC), where its fastest kernels run (brgemm-based, depthwise
// included). Weights (M, C/group, kh, kw) are reordered once into oneDNN's layout; the bias is applied inside.
// Callers hold NCHW tensors, converted to channels-last and back around the kernel.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/dnnl_kit.hpp"

namespace onyx::kernels {

struct ConvShape {
  int64_t C = 0, M = 0, group = 1;
  std::array<int64_t, 2> kernel{}, strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{};  // top, left, bottom, right
};

class PackedConv {
 public:
  // w: (M, C/group, kh, kw) row-major; must outlive the object. bias: empty or M values.
  PackedConv(const float* w, const ConvShape& shape, std::vector<float> bias);
  const ConvShape& shape() const { return shape_; }
  std::array<int64_t, 2> out_hw(int64_t H, int64_t W) const;
  // x: (N, C, H, W); y: (N, M, OH, OW).
  void run_nchw(const float* x, int64_t N, int64_t H, int64_t W, float* y) const;

 private:
  struct Plan {
    dnnl::convolution_forward primitive;
    dnnl::memory weights;
    dnnl::memory::desc src_nhwc, dst_nhwc, src_nchw, dst_nchw;
    dnnl::reorder to_nhwc, to_nchw;
  };
  const Plan& plan(int64_t N, int64_t H, int64_t W) const;
  ConvShape shape_;
  std::vector<float> bias_;
  WeightPacks packs_;
  PrimitiveCache<std::array<int64_t, 3>, Plan> plans_;
};

}  // namespace onyx::kernels
