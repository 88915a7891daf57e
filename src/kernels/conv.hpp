// Float 2-D convolution on oneDNN, channels-last (NHWC), where its fastest kernels run (brgemm-based, depthwise
// included). Weights (M, C/group, kh, kw) are reordered once into oneDNN's layout; the bias and an epilogue (a
// residual sum, then elementwise activations) are applied inside the primitive. run_nhwc reads and writes
// channels-last tensors as they are; run_nchw converts NCHW tensors to channels-last and back around the kernel.
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

// One elementwise step of oneDNN's eltwise family (alpha/beta as oneDNN defines them for `alg`).
struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};

// What follows the convolution and bias, in order: y += (what y held), then each eltwise step.
struct ConvEpilogue {
  bool sum = false;
  std::vector<Eltwise> eltwise;
};

class PackedConv {
 public:
  // w: (M, C/group, kh, kw) row-major; must outlive the object. bias: empty or M values.
  PackedConv(const float* w, const ConvShape& shape, std::vector<float> bias, ConvEpilogue epilogue = {});
  const ConvShape& shape() const { return shape_; }
  std::array<int64_t, 2> out_hw(int64_t H, int64_t W) const;
  // Creates the primitive for this input size now (sessions call it at creation for static shapes).
  void prepare(int64_t N, int64_t H, int64_t W) const { plan(N, H, W); }
  // x: (N, C, H, W); y: (N, M, OH, OW). With a sum epilogue y holds the addend on entry.
  void run_nchw(const float* x, int64_t N, int64_t H, int64_t W, float* y) const;
  // x: (N, H, W, C); y: (N, OH, OW, M). With a sum epilogue y holds the addend on entry.
  void run_nhwc(const float* x, int64_t N, int64_t H, int64_t W, float* y) const;

 private:
  struct Plan {
    dnnl::convolution_forward primitive;
    dnnl::memory weights;
    dnnl::memory::desc src_nhwc, dst_nhwc, src_nchw, dst_nchw;
    dnnl::reorder to_nhwc, to_nchw, dst_to_nhwc;
  };
  const Plan& plan(int64_t N, int64_t H, int64_t W) const;
  void execute(const Plan& p, dnnl::memory& src, dnnl::memory& dst) const;
  ConvShape shape_;
  std::vector<float> bias_;
  ConvEpilogue epilogue_;
  WeightPacks packs_;
  PrimitiveCache<std::array<int64_t, 3>, Plan> plans_;
};

}  // namespace onyx::kernels
