// Float 2-D convolution on oneDNN, channels-last (NHWC), where its fastest direct kernels run (brgemm-based,
// depthwise included), or Winograd on oneDNN's blocked layout (nChw16c) for the 3x3 stride-1 convolutions where it
// pays. Weights (M, C/group, kh, kw) are reordered once into oneDNN's layout; the bias and an epilogue (a residual
// sum, then elementwise activations) are applied inside the primitive. run_nhwc and run_nchw read and write
// tensors in those layouts, converting around the kernel where its layout differs. Convolutions too small to repay
// oneDNN's fixed cost per execution run onyx's own direct loops instead, on either layout (conv_runs_direct).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/dnnl_kit.hpp"

namespace onyx::kernels {

struct ConvShape {
  int64_t C = 0, M = 0, group = 1;
  std::array<int64_t, 2> kernel{}, strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{};  // top, left, bottom, right
};

// Output height and width of `s` on an H x W input.
std::array<int64_t, 2> conv_out_hw(const ConvShape& s, int64_t H, int64_t W);

// What oneDNN's convolution descriptors take for `s` on an H x W input: weight dims ((M, C, kh, kw), or (groups,
// M/g, C/g, kh, kw) for grouped convolutions), strides, dilations (oneDNN counts from 0), left padding, and the
// right padding that makes oneDNN's output size formula land on ours.
struct DnnlConvGeometry {
  dnnl::memory::dims weights, strides, dilations, pad_l, pad_r;
};
DnnlConvGeometry dnnl_conv_geometry(const ConvShape& s, int64_t H, int64_t W);

// Multiply-adds of `s` on N images of H x W.
double conv_macs(const ConvShape& s, int64_t N, int64_t H, int64_t W);

// Whether PackedConv computes `s` on N images of H x W with its own direct loops instead of oneDNN: convolutions
// so small (a voice-activity model's 1-D layers over a few frames) that oneDNN's fixed cost per run (memory
// objects, argument maps, and for NCHW tensors two layout reorders: about 80,000 instructions) is most of the time.
bool conv_runs_direct(const ConvShape& s, int64_t N, int64_t H, int64_t W);
// How many runs of this process took those direct loops (tests tell them from a fallback to the reference by it).
uint64_t direct_conv_runs();

class PackedConv {
 public:
  // w: (M, C/group, kh, kw) row-major; must outlive the object. bias: empty or M values.
  PackedConv(const float* w, const ConvShape& shape, std::vector<float> bias, Epilogue epilogue = {});
  const ConvShape& shape() const { return shape_; }
  std::array<int64_t, 2> out_hw(int64_t H, int64_t W) const;
  // Creates the primitive for this input size now (sessions call it at creation for static shapes).
  void prepare(int64_t N, int64_t H, int64_t W) const;
  // x: (N, C, H, W); y: (N, M, OH, OW). With a sum epilogue y holds the addend on entry.
  void run_nchw(const float* x, int64_t N, int64_t H, int64_t W, float* y) const;
  // x: (N, H, W, C); y: (N, OH, OW, M). With a sum epilogue y holds the addend on entry.
  void run_nhwc(const float* x, int64_t N, int64_t H, int64_t W, float* y) const;

 private:
  // The layouts a run's tensors come in, and the primitive's own (src_conv / dst_conv: NHWC, or nChw16c for
  // Winograd), with the reorders between them: [0] for NHWC tensors, [1] for NCHW.
  struct Plan {
    dnnl::convolution_forward primitive;
    dnnl::memory weights;
    dnnl::memory::desc src[2], dst[2], src_conv, dst_conv, scratchpad;
    Reorder src_in[2], dst_in[2], dst_out[2];  // dst_in: the sum epilogue's addend
  };
  const Plan& plan(int64_t N, int64_t H, int64_t W) const;
  double macs(int64_t N, int64_t H, int64_t W) const { return conv_macs(shape_, N, H, W); }
  void execute(const Plan& p, dnnl::memory& src, dnnl::memory& dst) const;
  void run(const float* x, int64_t N, int64_t H, int64_t W, float* y, int layout) const;
  // The direct loops' weights, (group, C/group, kh, kw, Mp), then the bias, (group, Mp): one group's output
  // channels side by side, Mp = M/group rounded up to 16 with zeros.
  const std::vector<float>& direct_weights() const;
  const float* w_;
  ConvShape shape_;
  std::vector<float> bias_;
  Epilogue epilogue_;
  WeightPacks packs_;
  PrimitiveCache<std::array<int64_t, 3>, Plan> plans_;
  mutable std::once_flag direct_once_;
  mutable std::vector<float> direct_w_;
};

}  // namespace onyx::kernels
