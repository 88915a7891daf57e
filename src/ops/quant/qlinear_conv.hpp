// QLinearConv's fast kernel, shared by QLinearConv (NCHW) and ai.onyx NhwcQLinearConv (channels-last): oneDNN's
// int8 convolution for a node whose weights (int8, zero point 0), scales, zero points and bias are constants and
// whose padding is explicit (what static quantization tools write), packed at creation.
#pragma once
#include <array>
#include <memory>
#include <optional>

#include "kernels/int8_conv.hpp"
#include "ops/registry.hpp"

namespace onyx::ops {

class QLinearConvPack {
 public:
  explicit QLinearConvPack(const KernelInit& init);
  // The kernel's parameters for this node, or nullopt where it does not apply.
  static std::optional<kernels::Int8ConvParams> params(const KernelInit& init);
  bool applies() const { return conv_ != nullptr; }
  // Runs the node (x and y NCHW, or NHWC) and sets output 0; false (nothing set) where this run's inputs are not the
  // constants it was made for, or oneDNN has no kernel for the case.
  bool run(KernelContext& ctx, bool nhwc) const;

 private:
  std::array<const void*, 9> sources_{};
  std::unique_ptr<kernels::PackedInt8Conv> conv_;
};

}  // namespace onyx::ops
