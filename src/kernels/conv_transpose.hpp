// Float transposed convolution (ONNX ConvTranspose) on oneDNN's deconvolution, 1-D/2-D/3-D, NCHW in and out.
// ONNX's W (C, M/group, k...) is oneDNN's deconvolution weights (M, C, k...) / (group, M/g, C/g, k...) stored
// input-channel-major ("iohw" / "giohw"), so it is read as it is: reordered once into the primitive's layout when
// constant, or at each run when fed. The caller gives each run's geometry (input and output sizes, leading pads);
// the trailing pads follow from oneDNN's output size formula, so output_padding and output_shape need no case of
// their own. Cases oneDNN rejects (negative leading pads) are reported by prepare, for the caller's own kernel.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/dnnl_kit.hpp"

namespace onyx::kernels {

struct ConvTransposeShape {
  int64_t C = 0, M = 0, group = 1;                  // input and output channels
  std::vector<int64_t> kernel, strides, dilations;  // one per spatial dim
};

// One run's sizes: spatial input and output dims and the pads before the first output element.
struct ConvTransposeSizes {
  int64_t N = 0;
  std::vector<int64_t> in, out, pads_begin;
  bool bias = false;
  auto operator<=>(const ConvTransposeSizes&) const = default;
};

class PackedConvTranspose {
 public:
  // w: (C, M/group, k...) row-major, packed on first use and must outlive the object; null when each run brings W.
  PackedConvTranspose(const ConvTransposeShape& shape, const float* w);
  const ConvTransposeShape& shape() const { return shape_; }
  // Creates the primitive for these sizes now; false when oneDNN cannot compute them (the caller computes).
  bool prepare(const ConvTransposeSizes& s) const { return plan(s) != nullptr; }
  // x: (N, C, in...), y: (N, M, out...). w: the weights when none were given at construction (ignored otherwise);
  // bias: M values when s.bias. Only for sizes prepare accepted.
  void run_nchw(const ConvTransposeSizes& s, const float* x, const float* w, const float* bias, float* y) const;

 private:
  struct Plan {
    dnnl::deconvolution_forward primitive;
    dnnl::memory::desc src_plain, dst_plain, src, dst, weights;
    Reorder to_src, from_dst, pack_weights;  // empty where the layouts are the same
    dnnl::memory::desc scratchpad;
    dnnl::memory packed;                                        // the constant weights in the primitive's layout
  };
  const Plan* plan(const ConvTransposeSizes& s) const;
  ConvTransposeShape shape_;
  dnnl::memory::desc plain_weights_;
  std::optional<WeightPacks> packs_;
  // Null entries: sizes oneDNN rejected.
  PrimitiveCache<ConvTransposeSizes, std::optional<Plan>> plans_;
};

}  // namespace onyx::kernels
