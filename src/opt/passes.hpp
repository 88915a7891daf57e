// The optimization passes, one file each under src/opt/. Each returns true when it changed the graph.
#pragma once
#include "ops/fused/fused.hpp"
#include "opt/graph_edit.hpp"

namespace onyx::opt {

// Level 1 (basic).
bool fold_constants(PassContext& ctx);         // constant_folding.cpp
bool fold_shape_computations(PassContext& ctx);  // shape_folding.cpp
bool eliminate_identities(PassContext& ctx);    // identity_elimination.cpp
bool cancel_layout_pairs(PassContext& ctx);     // layout_cancellation.cpp
bool eliminate_dead_code(PassContext& ctx);     // dead_code.cpp

// Level 2 (all).
bool fuse_qdq(PassContext& ctx);                // qdq_fusion.cpp
bool promote_half_precision(PassContext& ctx);  // half_promotion.cpp
bool fuse_attention(PassContext& ctx);          // attention_fusion.cpp
bool fuse_layer_norm(PassContext& ctx);         // layer_norm_fusion.cpp
bool fuse_gelu(PassContext& ctx);               // gelu_fusion.cpp
bool fuse_hard_swish(PassContext& ctx);         // hard_swish_fusion.cpp
bool min_max_to_clip(PassContext& ctx);         // min_max_clip.cpp
bool fold_batch_norm(PassContext& ctx);         // batch_norm_folding.cpp
bool fold_conv_mul_add(PassContext& ctx);       // conv_mul_add_folding.cpp
bool fuse_pad_into_conv(PassContext& ctx);      // pad_conv_fusion.cpp
bool fuse_matmul_add(PassContext& ctx);         // matmul_add_fusion.cpp
bool fuse_conv_activation(PassContext& ctx);    // conv_activation_fusion.cpp
bool to_channels_last(PassContext& ctx);        // channels_last.cpp
bool fuse_nhwc_conv_epilogue(PassContext& ctx);  // nhwc_conv_fusion.cpp
bool fuse_matmul_epilogue(PassContext& ctx);     // matmul_epilogue_fusion.cpp
bool fuse_matmul_integer(PassContext& ctx);      // matmul_integer_fusion.cpp

// The parameters of activation node `act` in the order fused ops list them (activation_params), defaults filled
// in; nullopt when one is not a known constant. In conv_activation_fusion.cpp.
std::optional<std::vector<float>> fused_activation_params(const Analysis& a, const Node& act,
                                                          const ops::FusedActivation& f);

// Activation node `act` as a fused op's attributes `activation` and `activation_params`, or nullopt when it is
// not one the fused ops apply or a parameter is not a known constant. In conv_activation_fusion.cpp.
std::optional<std::vector<Attribute>> fused_activation_attrs(const Analysis& a, const Node& act);

// An inference BatchNormalization as a per-channel affine map y = x * s + shift (batch_norm_folding.cpp).
struct BnParams {
  std::vector<double> s, shift;
};
// The BN's s and shift when its four parameters are constant with `channels` values each, else nullopt.
std::optional<BnParams> bn_params(const Analysis& a, const Node& bn, int64_t channels);
// Whether `bn` is in inference mode with only Y wanted and per-channel parameters.
bool plain_inference_bn(const Analysis& a, const Node& bn);

// The internal domain of onyx's fused ops that ONNX lacks at the model's opset.
inline constexpr const char* kOnyxDomain = ops::kFusedDomain;

}  // namespace onyx::opt
