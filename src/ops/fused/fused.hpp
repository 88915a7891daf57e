// onyx's internal op domain "ai.onyx": ops the optimizer creates when ONNX has no standard op for the fused form
// at the model's opset. A model saved after optimization imports the domain (version 1) and loads again. The ops
// are defined in this folder (fused.cpp lists them); what they share with the standard ops' families is exposed
// beside those (ops/nn/conv_epilogue.hpp, ops/nn/matmul_epilogue.hpp, ops/quant/matmul_integer.hpp,
// ops/quant/qlinear_conv.hpp). This header: the domain's name and what the fused families share.
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ops/registry.hpp"

namespace onyx::kernels {
struct Eltwise;
}

namespace onyx::ops {

inline constexpr const char* kFusedDomain = "ai.onyx";

// An activation FusedConv can apply: the standard op and version whose kernel runs it, and its float attributes
// in the order FusedConv's activation_params lists them, with their defaults.
struct FusedActivation {
  const char* op_type;
  int since_version;
  std::vector<std::pair<const char*, float>> params;
};

// A rank-4 tensor (any element type of whole bytes) with its dims in the order `perm` (out dim i = in dim perm[i])
// and its elements moved to match: NCHW <-> NHWC for the channels-last ops and the layout pass.
Tensor permute4(const Tensor& t, const std::array<int64_t, 4>& perm);

// The activation named `op_type`, or null when FusedConv cannot apply it.
const FusedActivation* find_fused_activation(std::string_view op_type);

// The activation a fused node names in its attributes `activation` and `activation_params`, run with the
// standard op's reference kernel (errors name the fused node).
class ActivationStep {
 public:
  explicit ActivationStep(const KernelInit& init);
  const FusedActivation& activation() const { return *act_; }
  const std::vector<float>& params() const { return params_; }  // every parameter, defaults filled in
  Datum run(const Datum& x) const;

 private:
  const FusedActivation* act_ = nullptr;
  std::vector<float> params_;
  std::unique_ptr<Node> node_;
  const OpDef* def_ = nullptr;
  std::unique_ptr<Kernel> kernel_;
};

// The activation as oneDNN eltwise post-ops (kernels/dnnl_kit.hpp), or nullopt when oneDNN has none for it.
std::optional<std::vector<kernels::Eltwise>> eltwise_of(const ActivationStep& act);

}  // namespace onyx::ops
