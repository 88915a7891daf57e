// onyx's internal op domain "ai.onyx": ops the optimizer creates when ONNX has no standard op for the fused form
// at the model's opset. A model saved after optimization imports the domain (version 1) and loads again.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

namespace onyx::ops {

inline constexpr const char* kFusedDomain = "ai.onyx";

// An activation FusedConv can apply: the standard op and version whose kernel runs it, and its float attributes
// in the order FusedConv's activation_params lists them, with their defaults.
struct FusedActivation {
  const char* op_type;
  int since_version;
  std::vector<std::pair<const char*, float>> params;
};

// The activation named `op_type`, or null when FusedConv cannot apply it.
const FusedActivation* find_fused_activation(std::string_view op_type);

}  // namespace onyx::ops
