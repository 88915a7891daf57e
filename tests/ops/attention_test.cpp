#include <gtest/gtest.h>

#include <cmath>

#include "shape_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::f32;

using testing::make_tensor;
using testing::OneNode;

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count()); }

// One query [1, 0] against keys [1, 0] and [0, 1], values 10 and 20, head size 2 (scale 1/sqrt(2)).
TEST(Attention, SingleQuery4D_Opset23) {
  auto out = OneNode("Attention", 23)
                 .input("Q", f32({1, 1, 1, 2}, {1, 0}))
                 .input("K", f32({1, 1, 2, 2}, {1, 0, 0, 1}))
                 .input("V", f32({1, 1, 2, 1}, {10, 20}))
                 .run();
  const double s = 1 / std::sqrt(2.0);
  const double p0 = std::exp(s) / (std::exp(s) + 1.0);
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_NEAR(values(out.at(0).tensor)[0], 10 * p0 + 20 * (1 - p0), 1e-5);
}

TEST(Attention, CausalGqaPackedAndPresent_Opset23) {
  // 3-D packed: 2 query heads share 1 kv head; q_seq = kv_seq = 2; causal: row 0 sees only key 0.
  auto out = OneNode("Attention", 23)
                 .input("Q", f32({1, 2, 2}, {1, 1, 1, 1}))
                 .input("K", f32({1, 2, 1}, {1, 1}))
                 .input("V", f32({1, 2, 1}, {3, 5}))
                 .omitted_input()
                 .input("PK", f32({1, 1, 1, 1}, {1}))
                 .input("PV", f32({1, 1, 1, 1}, {7}))
                 .attr_int("q_num_heads", 2)
                 .attr_int("kv_num_heads", 1)
                 .attr_int("is_causal", 1)
                 .outputs(3)
                 .run();
  // Past length 1: query 0 sees keys 0..1 (values 7, 3), query 1 sees all three; all scores equal.
  std::vector<float> y = values(out.at(0).tensor);
  ASSERT_EQ(out.at(0).tensor.dims(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_NEAR(y[0], 5.0, 1e-5);  // (7 + 3) / 2, head 0
  EXPECT_NEAR(y[1], 5.0, 1e-5);  // head 1
  EXPECT_NEAR(y[2], 5.0, 1e-5);  // (7 + 3 + 5) / 3
  EXPECT_EQ(out.at(1).tensor.dims(), (std::vector<int64_t>{1, 1, 3, 1}));
  EXPECT_EQ(values(out.at(2).tensor), (std::vector<float>{7, 3, 5}));
}

TEST(Attention, BoolMaskShortLastDimAndFullyMaskedRow_Opset23) {
  // Mask [q 2, 1] shorter than kv 2: key 1 is masked; query 1's row is all false -> zeros.
  auto out = OneNode("Attention", 23)
                 .input("Q", f32({1, 1, 2, 1}, {1, 1}))
                 .input("K", f32({1, 1, 2, 1}, {1, 1}))
                 .input("V", f32({1, 1, 2, 1}, {4, 8}))
                 .input("M", make_tensor<uint8_t>(DataType::Bool, {2, 1}, {1, 0}))
                 .attr_int("qk_matmul_output_mode", 3)
                 .outputs(4)
                 .run();
  std::vector<float> y = values(out.at(0).tensor);
  EXPECT_NEAR(y[0], 4.0, 1e-6);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(values(out.at(3).tensor), (std::vector<float>{1, 0, 0, 0}));
}

TEST(Attention, SoftcapAndQkOutputModes_Opset23) {
  auto run = [](int mode) {
    return values(OneNode("Attention", 23)
                      .input("Q", f32({1, 1, 1, 1}, {4}))
                      .input("K", f32({1, 1, 2, 1}, {1, 2}))
                      .input("V", f32({1, 1, 2, 1}, {0, 1}))
                      .input("M", f32({1, 2}, {0.5f, -1}))
                      .attr_float("scale", 1.0f)
                      .attr_float("softcap", 2.0f)
                      .attr_int("qk_matmul_output_mode", mode)
                      .outputs(4)
                      .run()
                      .at(3)
                      .tensor);
  };
  EXPECT_NEAR(run(0)[1], 8.0, 1e-5);                     // raw scaled Q.K^T
  EXPECT_NEAR(run(1)[1], 2 * std::tanh(4.0), 1e-5);      // softcap
  EXPECT_NEAR(run(2)[1], 2 * std::tanh(4.0) - 1, 1e-5);  // softcap, then the mask
}

TEST(Attention, NonpadKvSeqlenMasksPadding_Opset24) {
  auto out = OneNode("Attention", 24)
                 .input("Q", f32({2, 1, 1, 1}, {1, 1}))
                 .input("K", f32({2, 1, 2, 1}, {1, 1, 1, 1}))
                 .input("V", f32({2, 1, 2, 1}, {2, 6, 2, 6}))
                 .omitted_input()
                 .omitted_input()
                 .omitted_input()
                 .input("N", make_tensor<int64_t>(DataType::Int64, {2}, {1, 2}))
                 .run();
  std::vector<float> y = values(out.at(0).tensor);
  EXPECT_NEAR(y[0], 2.0, 1e-6);
  EXPECT_NEAR(y[1], 4.0, 1e-6);
}

TEST(Attention, PackedInputsNeedHeadCounts_Opset23) {
  try {
    OneNode("Attention", 23)
        .input("Q", f32({1, 1, 2}, {1, 1}))
        .input("K", f32({1, 1, 2}, {1, 1}))
        .input("V", f32({1, 1, 2}, {1, 1}))
        .run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q_num_heads"), std::string::npos) << e.what();
  }
}

TEST(Attention, InfersPresentShapes_Opset24) {
  testing::GraphBuilder g(24);
  g.input("Q", DataType::Float, {"B", "8", "S", "16"})
      .input("K", DataType::Float, {"B", "2", "S", "16"})
      .input("V", DataType::Float, {"B", "2", "S", "32"})
      .input("PK", DataType::Float, {"B", "2", "4", "16"})
      .input("PV", DataType::Float, {"B", "2", "4", "32"});
  g.output("Y").output("PKo").output("PVo");
  g.node("Attention", {"Q", "K", "V", "", "PK", "PV"}, {"Y", "PKo", "PVo"});
  Session s = g.session();
  EXPECT_EQ(testing::output_type(s, 0), "float[B,8,S,32]");
  EXPECT_EQ(testing::output_type(s, 1), "float[B,2,?,16]");
}

TEST(RotaryEmbedding, PositionIdsAndInterleaved_Opset23) {
  const double c = std::cos(0.5), s = std::sin(0.5);
  // 4-D input [1, 1, 1, 4], rotary dim 4 (half 2); position 1 selects cache row 1.
  auto run = [&](int interleaved) {
    return values(OneNode("RotaryEmbedding", 23)
                      .input("X", f32({1, 1, 1, 4}, {1, 2, 3, 4}))
                      .input("C", f32({2, 2}, {1, 1, static_cast<float>(c), static_cast<float>(c)}))
                      .input("S", f32({2, 2}, {0, 0, static_cast<float>(s), static_cast<float>(s)}))
                      .input("P", make_tensor<int64_t>(DataType::Int64, {1, 1}, {1}))
                      .attr_int("interleaved", interleaved)
                      .run()
                      .at(0)
                      .tensor);
  };
  std::vector<float> halves = run(0);  // pairs (1, 3), (2, 4)
  EXPECT_NEAR(halves[0], c * 1 - s * 3, 1e-6);
  EXPECT_NEAR(halves[2], s * 1 + c * 3, 1e-6);
  std::vector<float> inter = run(1);  // pairs (1, 2), (3, 4)
  EXPECT_NEAR(inter[0], c * 1 - s * 2, 1e-6);
  EXPECT_NEAR(inter[1], s * 1 + c * 2, 1e-6);
  EXPECT_THROW(OneNode("RotaryEmbedding", 23)
                   .input("X", f32({1, 1, 1, 4}, {1, 2, 3, 4}))
                   .input("C", f32({2, 2}, {1, 1, 1, 1}))
                   .input("S", f32({2, 2}, {0, 0, 0, 0}))
                   .input("P", make_tensor<int64_t>(DataType::Int64, {1, 1}, {2}))
                   .run(),
               Error);
}

TEST(RotaryEmbedding, PartialRotationOfPackedInput_Opset23) {
  // 3-D input with 1 head of size 4, rotary dim 2, caches per (batch, seq) without position ids.
  auto y = values(OneNode("RotaryEmbedding", 23)
                      .input("X", f32({1, 1, 4}, {1, 2, 3, 4}))
                      .input("C", f32({1, 1, 1}, {0}))
                      .input("S", f32({1, 1, 1}, {1}))
                      .attr_int("num_heads", 1)
                      .attr_int("rotary_embedding_dim", 2)
                      .run()
                      .at(0)
                      .tensor);
  EXPECT_EQ(y, (std::vector<float>{-2, 1, 3, 4}));
}

OneNode linear_attention(const std::string& rule) {
  OneNode n("LinearAttention", 27);
  n.input("q", f32({1, 2, 1}, {1, 1})).input("k", f32({1, 2, 1}, {1, 1})).input("v", f32({1, 2, 1}, {1, 2}));
  n.attr_int("q_num_heads", 1).attr_int("kv_num_heads", 1).attr_string("update_rule", rule).outputs(2);
  return n;
}

TEST(LinearAttention, UpdateRules_Opset27) {
  // linear: S1 = 1, S2 = 1 + 2 = 3; scale 1/sqrt(1).
  auto lin = linear_attention("linear").omitted_input().run();
  EXPECT_EQ(values(lin.at(0).tensor), (std::vector<float>{1, 3}));
  EXPECT_EQ(values(lin.at(1).tensor), (std::vector<float>{3}));
  // gated with log-decay ln(0.5): S1 = 1, S2 = 0.5 + 2.
  auto gated = linear_attention("gated").omitted_input().input("g", f32({1, 2, 1}, {std::log(0.5f), std::log(0.5f)})).run();
  EXPECT_NEAR(values(gated.at(0).tensor)[1], 2.5, 1e-6);
  // delta with beta 0.5 from past state 2: S1 = 2 + 0.5*(1 - 2) = 1.5; S2 = 1.5 + 0.5*(2 - 1.5) = 1.75.
  auto delta = linear_attention("delta")
                   .input("S", f32({1, 1, 1, 1}, {2}))
                   .omitted_input()
                   .input("b", f32({1, 2, 1}, {0.5f, 0.5f}))
                   .run();
  EXPECT_NEAR(values(delta.at(0).tensor)[0], 1.5, 1e-6);
  EXPECT_NEAR(values(delta.at(1).tensor)[0], 1.75, 1e-6);
}

TEST(LinearAttention, GatedRuleNeedsDecay_Opset27) {
  try {
    linear_attention("gated_delta").run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("requires the decay input"), std::string::npos) << e.what();
  }
}

TEST(FlexAttention, GqaMatchesPlainSoftmax_Preview1) {
  auto out = OneNode("FlexAttention", 1, "ai.onnx.preview")
                 .input("Q", f32({1, 2, 1, 1}, {0, 1}))
                 .input("K", f32({1, 1, 2, 1}, {0, 1}))
                 .input("V", f32({1, 1, 2, 1}, {1, 3}))
                 .attr_float("scale", 1.0f)
                 .run();
  std::vector<float> y = values(out.at(0).tensor);
  const double p1 = std::exp(1.0) / (1 + std::exp(1.0));
  EXPECT_NEAR(y[0], 2.0, 1e-6);  // head 0: equal scores
  EXPECT_NEAR(y[1], 1 * (1 - p1) + 3 * p1, 1e-6);
}

}  // namespace
}  // namespace onyx
