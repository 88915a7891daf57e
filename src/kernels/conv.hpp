// Float 2-D convolution on oneDNN, channels-last (NHWC), where its fastest kernels run (brgemm-based, depthwise
// included). Weights (M, C/group, kh, kw) are reordered once into oneDNN's layout; bias and an activation are
// applied inside the kernel, and so is an optional residual sum (y = act(conv + bias + z)).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/dnnl_kit.hpp"

namespace onyx::kernels {

struct ConvShape {
  int64_t C = 0, M = 0, group = 1;
  std::array<int64_t, 2> kernel{}, strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{};  // top, left, bottom, right
};

enum class Activation { None, Relu, LeakyRelu, Clip, Sigmoid, Tanh, HardSigmoid };
struct ActivationSpec {
  Activation kind = Activation::None;
  float alpha = 0, beta = 0;  // LeakyRelu: alpha; Clip: [alpha, beta]; HardSigmoid: alpha, beta
};

class PackedConv {
 public:
  // w: (M, C/group, kh, kw) row-major; must outlive the object. bias: empty or M values.
  PackedConv(const float* w, const ConvShape& shape, std::vector<float> bias, ActivationSpec act, bool with_sum);
  const ConvShape& shape() const { return shape_; }
  std::array<int64_t, 2> out_hw(int64_t H, int64_t W) const;
  // x: (N, H, W, C); y: (N, OH, OW, M), both channels-last; z (with_sum): like y, added before the activation
  // (may alias y).
  void run_nhwc(const float* x, int64_t N, int64_t H, int64_t W, float* y, const float* z = nullptr) const;
  // The same with x and y in NCHW: converted to channels-last and back around the kernel.
  void run_nchw(const float* x, int64_t N, int64_t H, int64_t W, float* y, const float* z = nullptr) const;

 private:
  struct Plan {
    dnnl::convolution_forward primitive;
    dnnl::memory weights;
    dnnl::memory::desc src_nhwc, dst_nhwc, src_nchw, dst_nchw;
    std::optional<dnnl::reorder> to_nhwc, to_nchw, sum_to_nhwc;  // for NCHW callers
  };
  const Plan& plan(int64_t N, int64_t H, int64_t W, bool nchw) const;
  // Runs the primitive on channels-last memories.
  void execute(const Plan& p, const dnnl::memory& x, const dnnl::memory& y) const;
  ConvShape shape_;
  std::vector<float> bias_;
  ActivationSpec act_;
  bool with_sum_;
  WeightPacks packs_;
  PrimitiveCache<std::array<int64_t, 4>, Plan> plans_;
};

}  // namespace onyx::kernels
