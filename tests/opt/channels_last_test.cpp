// Channels-last layout (level 3) and the NhwcConv epilogue fusion: convolution chains run in NHWC with the
// layout conversions only at their edges, residual sums and activations inside the convolution, and the results
// of the original model.
#include <algorithm>

#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

size_t count(const V& ops, const std::string& op) { return static_cast<size_t>(std::count(ops.begin(), ops.end(), op)); }

// A small residual CNN with the ops a channels-last region carries: Conv+Relu, MaxPool, a residual Add, Relu,
// Concat, an unfoldable BatchNormalization, Dropout, Mul by a per-channel constant, GlobalAveragePool.
std::string residual_cnn(int64_t opset) {
  GraphSpec g(opset);
  g.input("x", DataType::Float, {2, 3, 16, 16})
      .random("w1", {8, 3, 3, 3}).random("b1", {8})
      .random("w2", {8, 8, 3, 3}).random("b2", {8})
      .random("w3", {4, 8, 1, 1})
      .random("w4", {6, 12, 3, 3})
      .floats("scale", {12}, {1, 2, 0.5f, 1, 1, 1, 0.25f, 1, 1, 1, 1.5f, 1})
      .floats("shift", {12}, {0, 0.1f, 0, 0, -0.2f, 0, 0, 0, 0.3f, 0, 0, 0})
      .floats("mean", {12}, {0, 0, 0.1f, 0, 0, 0, 0, -0.1f, 0, 0, 0, 0})
      .floats("var", {12}, {1, 1, 1, 2, 1, 1, 1, 1, 1, 0.5f, 1, 1})
      .floats("per_channel", {6, 1, 1}, {1, -1, 2, 0.5f, 1, 3});
  const std::vector<int64_t> pads1{1, 1, 1, 1};
  g.node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", pads1}})
      .node("Relu", {"c1"}, {"r1"})
      .node("MaxPool", {"r1"}, {"p1"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Conv", {"p1", "w2", "b2"}, {"c2"}, {{"pads", pads1}})
      .node("Add", {"c2", "p1"}, {"s2"})
      .node("Relu", {"s2"}, {"r2"})
      .node("Conv", {"r2", "w3"}, {"c3"})
      .node("Concat", {"r2", "c3"}, {"cat"}, {{"axis", int64_t{1}}})
      .node("BatchNormalization", {"cat", "scale", "shift", "mean", "var"}, {"bn"})
      .node("Relu", {"bn"}, {"r3"})
      .node("Dropout", {"r3"}, {"d3"})
      .node("Conv", {"d3", "w4"}, {"c4"}, {{"pads", pads1}})
      .node("Mul", {"c4", "per_channel"}, {"m4"})
      .node("GlobalAveragePool", {"m4"}, {"y"})
      .output("y");
  return g.bytes();
}

TEST(ChannelsLast, ConvolutionChainsStayChannelsLast) {
  for (int64_t opset : {13, 17}) {
    const std::string bytes = residual_cnn(opset);
    Model m = load_ir(bytes);
    optimize_ir(m, 3);
    const V ops = op_list(m);
    // One conversion in, one out; every conv, pool and elementwise op runs on the NHWC tensors.
    EXPECT_EQ(count(ops, "Transpose"), 2u) << ::testing::PrintToString(ops);
    EXPECT_EQ(count(ops, "ai.onyx.NhwcConv"), 5u) << ::testing::PrintToString(ops);
    EXPECT_EQ(count(ops, "ai.onyx.NhwcMaxPool"), 1u);
    EXPECT_EQ(count(ops, "ai.onyx.NhwcAveragePool"), 1u);
    // BatchNormalization became a depthwise 1x1 NhwcConv, with the Relu after it fused.
    EXPECT_EQ(count(ops, "Relu"), 0u) << ::testing::PrintToString(ops);
    bool depthwise_bn = false;
    for (const auto& n : m.graph->nodes)
      if (n->op_type == "NhwcConv" && n->attribute("group") && n->attribute("group")->i == 12)
        depthwise_bn = n->attribute("activation") && n->attribute("activation")->s == "Relu";
    EXPECT_TRUE(depthwise_bn) << ::testing::PrintToString(ops);
    for (const char* gone : {"Conv", "MaxPool", "BatchNormalization", "Dropout", "GlobalAveragePool"})
      EXPECT_EQ(count(ops, gone), 0u) << gone << " in " << ::testing::PrintToString(ops);
    // The residual Add and the Relu after it went into the second convolution.
    bool fused_residual = false;
    for (const auto& n : m.graph->nodes)
      if (n->op_type == "NhwcConv" && n->inputs.size() == 4 && n->attribute("activation"))
        fused_residual = n->attribute("activation")->s == "Relu";
    EXPECT_TRUE(fused_residual) << ::testing::PrintToString(ops);
    expect_same_outputs(bytes);
    expect_idempotent(bytes, 3);
  }
}

// A statically quantized block (QDQ: uint8 activations, int8 symmetric weights): depthwise Conv + Relu, pointwise
// Conv, and a residual Add in float between DequantizeLinear / QuantizeLinear. The convolutions become QLinearConv
// (qdq-fusion), then NhwcQLinearConv, and the whole block runs NHWC, converting once in and once out; outputs
// within one quantization step (0.05) of the float graph's.
std::string qdq_block() {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 8, 10, 12});
  std::vector<int8_t> dw(8 * 9), pw(8 * 8);
  for (size_t i = 0; i < dw.size(); ++i) dw[i] = static_cast<int8_t>(static_cast<int>((i * 53 + 7) % 255) - 127);
  for (size_t i = 0; i < pw.size(); ++i) pw[i] = static_cast<int8_t>(static_cast<int>((i * 29 + 3) % 255) - 127);
  g.floats("s", {}, {0.05f}).init("z0", DataType::UInt8, {}, std::vector<uint8_t>{0})
      .init("z", DataType::UInt8, {}, std::vector<uint8_t>{128})
      .init("dwq", DataType::Int8, {8, 1, 3, 3}, dw).floats("dws", {8}, {0.01f, 0.02f, 0.01f, 0.005f, 0.01f, 0.03f, 0.01f, 0.02f})
      .init("pwq", DataType::Int8, {8, 8, 1, 1}, pw).floats("pws", {}, {0.004f});
  g.node("QuantizeLinear", {"x", "s", "z"}, {"xq"})
      .node("DequantizeLinear", {"xq", "s", "z"}, {"xd"})
      .node("DequantizeLinear", {"dwq", "dws"}, {"dwd"}, {{"axis", 0}})
      .node("Conv", {"xd", "dwd"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{8}}})
      .node("Relu", {"c1"}, {"r1"})
      .node("QuantizeLinear", {"r1", "s", "z0"}, {"q1"})
      .node("DequantizeLinear", {"q1", "s", "z0"}, {"d1"})
      .node("DequantizeLinear", {"pwq", "pws"}, {"pwd"})
      .node("Conv", {"d1", "pwd"}, {"c2"})
      .node("QuantizeLinear", {"c2", "s", "z"}, {"q2"})
      .node("DequantizeLinear", {"q2", "s", "z"}, {"d2"})
      .node("Add", {"d2", "xd"}, {"sum"})
      .node("QuantizeLinear", {"sum", "s", "z"}, {"q3"})
      .node("DequantizeLinear", {"q3", "s", "z"}, {"y"})
      .output("y");
  return g.bytes();
}

TEST(ChannelsLast, QuantizedBlocksStayChannelsLast) {
  const std::string bytes = qdq_block();
  Model m = load_ir(bytes);
  optimize_ir(m, 3);
  const V ops = op_list(m);
  EXPECT_EQ(count(ops, "ai.onyx.NhwcQLinearConv"), 2u) << ::testing::PrintToString(ops);
  EXPECT_EQ(count(ops, "QLinearConv"), 0u) << ::testing::PrintToString(ops);
  EXPECT_EQ(count(ops, "Transpose"), 2u) << ::testing::PrintToString(ops);
  expect_same_outputs(bytes, 0, 0.0501);
  expect_idempotent(bytes, 3);
}

// DenseNet as Caffe2 exports it: Concat, BatchNormalization, then its affine part again as a per-channel Mul and
// Add, then Relu, before each convolution. Channels-last, all four become one depthwise 1x1 NhwcConv: the Mul and
// Add fold into its weights and bias, the Relu into its epilogue.
TEST(ChannelsLast, PreActivationBatchNormBecomesOneConvolution) {
  GraphSpec g(9);
  g.input("x", DataType::Float, {1, 3, 8, 8}).random("w0", {3, 3, 1, 1}).random("w1", {4, 3, 3, 3}).random("w2", {5, 7, 1, 1});
  g.floats("scale", {7}, {1, 2, 0.5f, 1, 1.5f, 1, 0.25f}).floats("shift", {7}, {0, 0.1f, 0, -0.2f, 0, 0.3f, 0});
  g.floats("mean", {7}, {0, 0.2f, 0, 0, -0.1f, 0, 0}).floats("var", {7}, {1, 2, 1, 1, 0.5f, 1, 1});
  g.floats("mul", {7, 1, 1}, {1, -1, 2, 0.5f, 1, 3, -0.5f}).floats("add", {1, 7, 1, 1}, {0.1f, 0, -0.3f, 0, 0, 0.2f, 1});
  const std::vector<int64_t> pads1{1, 1, 1, 1};
  g.node("Conv", {"x", "w0"}, {"c0"})
      .node("Conv", {"c0", "w1"}, {"c1"}, {{"pads", pads1}})
      .node("Concat", {"c0", "c1"}, {"cat"}, {{"axis", int64_t{1}}})
      .node("BatchNormalization", {"cat", "scale", "shift", "mean", "var"}, {"bn"})
      .node("Mul", {"bn", "mul"}, {"m"})
      .node("Add", {"m", "add"}, {"a"})
      .node("Relu", {"a"}, {"r"})
      .node("Conv", {"r", "w2"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 3);
  const V ops = op_list(m);
  EXPECT_EQ(ops, (V{"Transpose", "ai.onyx.NhwcConv", "ai.onyx.NhwcConv", "Concat", "ai.onyx.NhwcConv",
                    "ai.onyx.NhwcConv", "Transpose"}))
      << ::testing::PrintToString(ops);
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 3);
}

// ShuffleNet's channel shuffle between two convolutions runs on the NHWC tensor: no conversion in between.
TEST(ChannelsLast, ChannelShuffleStaysChannelsLast) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {2, 4, 5, 6}).random("w1", {6, 4, 1, 1}).random("w2", {5, 6, 1, 1});
  g.ints("split", {5}, {2, 3, 2, 5, 6}).ints("merge", {4}, {2, 6, 5, 6});
  g.node("Conv", {"x", "w1"}, {"c1"})
      .node("Reshape", {"c1", "split"}, {"s"})
      .node("Transpose", {"s"}, {"t"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}})
      .node("Reshape", {"t", "merge"}, {"m"})
      .node("Conv", {"m", "w2"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 3);
  const V ops = op_list(m);
  EXPECT_EQ(ops, (V{"Transpose", "ai.onyx.NhwcConv", "Reshape", "Transpose", "Reshape", "ai.onyx.NhwcConv", "Transpose"}))
      << ::testing::PrintToString(ops);
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 3);
}

// Resize between convolutions (a decoder's upsampling) runs on the NHWC tensor, its constant sizes, scales and roi
// permuted: linear with sizes, nearest with scales (Resize-11), Upsample-9, and a crop with roi.
TEST(ChannelsLast, ResizeStaysChannelsLast) {
  struct Case {
    int64_t opset;
    std::string op;
    std::vector<std::string> inputs;
    std::vector<Attr> attrs;
  };
  const std::vector<Case> cases = {
      {13, "Resize", {"c1", "", "", "sizes"}, {{"mode", "linear"}}},
      {11, "Resize", {"c1", "roi", "scales"}, {{"mode", "nearest"}}},
      {9, "Upsample", {"c1", "scales"}, {{"mode", "linear"}}},
      {13, "Resize", {"c1", "roi", "", "sizes"}, {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}}},
  };
  for (const Case& c : cases) {
    GraphSpec g(c.opset);
    g.input("x", DataType::Float, {1, 3, 5, 6}).random("w1", {4, 3, 3, 3}).random("w2", {2, 4, 1, 1});
    g.ints("sizes", {4}, {1, 4, 9, 11}).floats("scales", {4}, {1, 1, 2, 1.5f});
    g.floats("roi", {8}, {0, 0, 0.1f, 0, 1, 1, 0.9f, 1.2f});
    g.node("Conv", {"x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
        .node(c.op, c.inputs, {"up"}, c.attrs)
        .node("Conv", {"up", "w2"}, {"y"})
        .output("y");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 3);
    const V ops = op_list(m);
    EXPECT_EQ(ops, (V{"Transpose", "ai.onyx.NhwcConv", c.op, "ai.onyx.NhwcConv", "Transpose"}))
        << c.op << "-" << c.opset << ": " << ::testing::PrintToString(ops);
    expect_same_outputs(g.bytes());
    expect_idempotent(g.bytes(), 3);
  }
}

// A TFLite-style channel padding, Concat with a constant block of zeros, between convolutions stays channels-last.
TEST(ChannelsLast, ConcatWithConstantStaysChannelsLast) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 3, 6, 5}).random("w1", {4, 3, 3, 3}).random("w2", {2, 6, 1, 1});
  g.floats("zeros", {1, 2, 6, 5}, std::vector<float>(60, 0.0f));
  g.node("Conv", {"x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c1"}, {"r1"})
      .node("Concat", {"r1", "zeros"}, {"padded"}, {{"axis", int64_t{1}}})
      .node("Conv", {"padded", "w2"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 3);
  const V ops = op_list(m);
  EXPECT_EQ(ops, (V{"Transpose", "ai.onyx.NhwcConv", "Concat", "ai.onyx.NhwcConv", "Transpose"}))
      << ::testing::PrintToString(ops);
  expect_same_outputs(g.bytes());
  expect_idempotent(g.bytes(), 3);
}

// A squeeze-excitation block on an input of dynamic size: the global pool becomes a mean over the NHWC tensor's H
// and W, and the block stays channels-last (ReduceMean's axes as an attribute before opset 18, an input from it).
TEST(ChannelsLast, DynamicGlobalPoolStaysChannelsLast) {
  for (int64_t opset : {int64_t{13}, int64_t{18}}) {
    GraphSpec g(opset);
    g.input("x", DataType::Float, {1, 4, -1, -1}).random("w1", {8, 4, 3, 3}).random("w2", {8, 8, 1, 1});
    g.node("Conv", {"x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
        .node("GlobalAveragePool", {"c1"}, {"p"})
        .node("Conv", {"p", "w2"}, {"s"})
        .node("Sigmoid", {"s"}, {"g"})
        .node("Mul", {"c1", "g"}, {"y"})
        .output("y");
    Model m = load_ir(g.bytes());
    optimize_ir(m, 3);
    const V ops = op_list(m);
    EXPECT_EQ(count(ops, "Transpose"), 2u) << opset << ": " << ::testing::PrintToString(ops);
    EXPECT_EQ(count(ops, "ReduceMean"), 1u) << opset << ": " << ::testing::PrintToString(ops);
    expect_same_outputs(g.bytes());
    expect_idempotent(g.bytes(), 3);
  }
}

// Where the conversion cannot happen or would not pay, the graph keeps its ops.
TEST(ChannelsLast, LeavesWhatItCannotConvert) {
  // W is a graph input (not constant): the Conv stays NCHW; a pool outside any region stays too.
  GraphSpec g(17);
  g.input("x", DataType::Float, {1, 2, 6, 6}).input("w", DataType::Float, {3, 2, 3, 3});
  g.node("Conv", {"x", "w"}, {"c"}).node("MaxPool", {"c"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}).output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 3);
  EXPECT_EQ(op_list(m), (V{"Conv", "MaxPool"}));
  expect_same_outputs(g.bytes());

  // A MaxPool whose Indices output is read stays NCHW, after the conversion back.
  GraphSpec h(17);
  h.input("x", DataType::Float, {1, 2, 6, 6}).random("w", {3, 2, 3, 3});
  h.node("Conv", {"x", "w"}, {"c"})
      .node("MaxPool", {"c", }, {"y", "i"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}})
      .output("y")
      .output("i");
  Model mh = load_ir(h.bytes());
  optimize_ir(mh, 3);
  EXPECT_EQ(op_list(mh), (V{"Transpose", "ai.onyx.NhwcConv", "Transpose", "MaxPool"}));
  expect_same_outputs(h.bytes());
}

// A residual sum whose other side has another shape (broadcast) is no epilogue: it stays an Add.
TEST(ChannelsLast, EpilogueNeedsTheOutputShape) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {1, 4, 5, 5}).random("w", {4, 4, 3, 3}).floats("bias", {4, 1, 1}, {1, 2, 3, 4});
  g.node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Add", {"c", "bias"}, {"a"})
      .node("Relu", {"a"}, {"y"})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 3);
  // conv-mul-add folding takes the bias into the weights; the Relu fuses.
  EXPECT_EQ(op_list(m), (V{"Transpose", "ai.onyx.NhwcConv", "Transpose"}));
  expect_same_outputs(g.bytes());
}

}  // namespace
}  // namespace onyx
