// DequantizeLinear -> Conv -> [Relu] -> QuantizeLinear -> QLinearConv and DequantizeLinear -> MatMul ->
// QuantizeLinear -> QLinearMatMul, in the forms static quantization writes: outputs within one quantization step
// of the float graph's.
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

std::vector<int8_t> weights(size_t n) {
  std::vector<int8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int8_t>(static_cast<int>((i * 37 + 11) % 255) - 127);
  return v;
}

// x (float) -> Q -> DQ -> Conv(W = DQ(wq), B) -> [Relu] -> Q(y_scale, y_zero) -> DQ -> y.
// uint8_weights: W as uint8 with zero point 128 (int8 otherwise, without a zero point).
GraphSpec qdq_conv(bool per_channel, bool relu, uint8_t y_zero, bool bias_as_dq, int64_t group = 1,
                   bool uint8_weights = false) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 4, 7, 6});
  g.floats("xs", {}, {0.02f}).init("xz", DataType::UInt8, {}, std::vector<uint8_t>{120});
  const std::vector<int8_t> w = weights(static_cast<size_t>(6 * 4 / group * 9));
  if (uint8_weights) {
    std::vector<uint8_t> u(w.size());
    for (size_t i = 0; i < w.size(); ++i) u[i] = static_cast<uint8_t>(w[i] + 128);
    g.init("wq", DataType::UInt8, {6, 4 / group, 3, 3}, u);
    g.init("wz", DataType::UInt8, {}, std::vector<uint8_t>{128});
  } else {
    g.init("wq", DataType::Int8, {6, 4 / group, 3, 3}, w);
  }
  if (per_channel) g.floats("ws", {6}, {0.01f, 0.02f, 0.015f, 0.005f, 0.03f, 0.01f});
  else g.floats("ws", {}, {0.01f});
  g.floats("ys", {}, {0.05f}).init("yz", DataType::UInt8, {}, std::vector<uint8_t>{y_zero});
  g.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"})
      .node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"})
      .node("DequantizeLinear", uint8_weights ? std::vector<std::string>{"wq", "ws", "wz"} : std::vector<std::string>{"wq", "ws"},
            {"wd"}, {{"axis", 0}});
  if (bias_as_dq) {
    // The bias as static quantization writes it: int32 at scale x_scale * w_scale.
    g.init("bq", DataType::Int32, {6}, std::vector<int32_t>{100, -250, 0, 7, 3000, -1});
    if (per_channel) g.floats("bs", {6}, {0.0002f, 0.0004f, 0.0003f, 0.0001f, 0.0006f, 0.0002f});
    else g.floats("bs", {}, {0.0002f});
    g.node("DequantizeLinear", {"bq", "bs"}, {"b"}, {{"axis", 0}});
  } else {
    g.floats("b", {6}, {0.1f, -0.2f, 0.05f, 0.0f, 0.3f, -0.01f});
  }
  g.node("Conv", {"xd", "wd", "b"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", group}});
  if (relu) g.node("Relu", {"c"}, {"r"});
  g.node("QuantizeLinear", {relu ? "r" : "c", "ys", "yz"}, {"yq"}).node("DequantizeLinear", {"yq", "ys", "yz"}, {"y"});
  g.output("y");
  return g;
}

TEST(QdqFusion, PerChannelWeightsReluAndQuantizedBias) {
  GraphSpec g = qdq_conv(true, true, 0, true);
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), (V{"QuantizeLinear", "QLinearConv", "DequantizeLinear"}));
  EXPECT_EQ(m.graph->nodes[1]->inputs.size(), 9u);
  // Within one step of y (0.05) of the float graph.
  expect_same_outputs(g.bytes(), 0, 0.0501);
  expect_idempotent(g.bytes(), 2);
}

TEST(QdqFusion, PerTensorWeightsFloatBiasNoRelu) {
  GraphSpec g = qdq_conv(false, false, 128, false);
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), (V{"QuantizeLinear", "QLinearConv", "DequantizeLinear"}));
  expect_same_outputs(g.bytes(), 0, 0.0501);
}

// Grouped convolutions with int8 weights of zero point 0 run oneDNN's int8 kernel (depthwise included); with
// other weights they stay float (QLinearConv's other path runs one small product per group).
TEST(QdqFusion, GroupedConvolutionsFuseOnlyWithSymmetricInt8Weights) {
  GraphSpec g = qdq_conv(true, true, 0, true, 2);
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_EQ(op_list(m), (V{"QuantizeLinear", "QLinearConv", "DequantizeLinear"}));
  expect_same_outputs(g.bytes(), 0, 0.0501);
  GraphSpec u = qdq_conv(true, true, 0, true, 2, true);
  Model mu = load_ir(u.bytes());
  optimize_ir(mu, 2);
  const V ops = op_list(mu);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "QLinearConv"), 0);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "ai.onyx.FusedConv"), 1);
  GraphSpec u1 = qdq_conv(false, false, 128, false, 1, true);
  Model mu1 = load_ir(u1.bytes());
  optimize_ir(mu1, 2);
  ASSERT_EQ(op_list(mu1), (V{"QuantizeLinear", "QLinearConv", "DequantizeLinear"}));
  expect_same_outputs(u1.bytes(), 0, 0.0501);
}

TEST(QdqFusion, ReluWithANonzeroOutputZeroPointStays) {
  // Saturation at 0 would not be the Relu when y's zero point is 128: nothing fuses (the weights fold to float).
  GraphSpec g = qdq_conv(false, true, 128, false);
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"QuantizeLinear", "DequantizeLinear", "ai.onyx.FusedConv", "QuantizeLinear", "DequantizeLinear"}));
  expect_same_outputs(g.bytes(), 1e-5, 1e-6);
}

// A transformer projection in QDQ form: per-column weight scales (axis 1).
TEST(QdqFusion, MatMulWithPerColumnWeights) {
  for (bool per_column : {false, true}) {
    GraphSpec g(13);
    g.input("x", DataType::Float, {2, 5, 8});
    g.floats("as", {}, {0.02f}).init("az", DataType::UInt8, {}, std::vector<uint8_t>{128});
    g.init("bq", DataType::Int8, {8, 6}, weights(48));
    if (per_column) g.floats("bs", {6}, {0.01f, 0.02f, 0.015f, 0.005f, 0.03f, 0.01f});
    else g.floats("bs", {}, {0.01f});
    g.floats("ys", {}, {0.04f}).init("yz", DataType::Int8, {}, std::vector<int8_t>{3});
    g.node("QuantizeLinear", {"x", "as", "az"}, {"xq"})
        .node("DequantizeLinear", {"xq", "as", "az"}, {"xd"})
        .node("DequantizeLinear", {"bq", "bs"}, {"bd"}, {{"axis", 1}})
        .node("MatMul", {"xd", "bd"}, {"p"})
        .node("QuantizeLinear", {"p", "ys", "yz"}, {"yq"})
        .node("DequantizeLinear", {"yq", "ys", "yz"}, {"y"})
        .output("y");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 2);
    ASSERT_EQ(op_list(m), (V{"QuantizeLinear", "QLinearMatMul", "DequantizeLinear"})) << per_column;
    expect_same_outputs(g.bytes(), 0, 0.0401);
    expect_idempotent(g.bytes(), 2);
  }
}

// A residual sum between quantized tensors: DequantizeLinear twice -> Add [-> Relu] -> QuantizeLinear becomes one
// ai.onyx QLinearAdd, with the results of the nodes it replaces exactly.
TEST(QdqFusion, ResidualAddBecomesQLinearAdd) {
  for (bool relu : {false, true}) {
    GraphSpec g(13);
    g.input("x", DataType::Float, {2, 3, 5, 7}).input("r", DataType::Float, {2, 3, 5, 7});
    g.floats("xs", {}, {0.03f}).init("xz", DataType::UInt8, {}, std::vector<uint8_t>{100});
    g.floats("rs", {}, {0.02f}).init("rz", DataType::Int8, {}, std::vector<int8_t>{-3});
    g.floats("ys", {}, {0.05f}).init("yz", DataType::UInt8, {}, std::vector<uint8_t>{static_cast<uint8_t>(relu ? 0 : 128)});
    g.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"})
        .node("QuantizeLinear", {"r", "rs", "rz"}, {"rq"})
        .node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"})
        .node("DequantizeLinear", {"rq", "rs", "rz"}, {"rd"})
        .node("Add", {"xd", "rd"}, {"s"});
    if (relu) g.node("Relu", {"s"}, {"sr"});
    g.node("QuantizeLinear", {relu ? "sr" : "s", "ys", "yz"}, {"yq"})
        .node("DequantizeLinear", {"yq", "ys", "yz"}, {"y"})
        .output("y");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 2);
    ASSERT_EQ(op_list(m), (V{"QuantizeLinear", "QuantizeLinear", "ai.onyx.QLinearAdd", "DequantizeLinear"})) << relu;
    expect_same_outputs(g.bytes(), 0, 0);
    expect_idempotent(g.bytes(), 2);
  }
}

}  // namespace
}  // namespace onyx
