// Pad + Conv -> Conv with the Pad's zeros added to its pads, and the Pads it must leave alone.
#include "opt/graph_edit.hpp"
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;
using I = std::vector<int64_t>;

const Node* find_op(const Model& m, const std::string& op) {
  for (const auto& n : m.graph->nodes)
    if (n->op_type == op) return n.get();
  return nullptr;
}

// A tf2onnx-style strided depthwise block: an activation, asymmetric zero Pad, then a 3x3 stride-2 depthwise Conv.
std::string padded_depthwise(int64_t opset, const I& pads, float value = 0, const std::string& mode = "constant") {
  GraphSpec g(opset);
  g.input("x", DataType::Float, {1, 4, 9, 8});
  g.random("w", {4, 1, 3, 3}).random("b", {4});
  g.node("Relu", {"x"}, {"r"});
  if (opset >= 11) {
    g.ints("pads", {8}, pads).floats("value", {}, {value});
    g.node("Pad", {"r", "pads", "value"}, {"p"}, {{"mode", mode.c_str()}});
  } else {
    g.node("Pad", {"r"}, {"p"}, {{"mode", mode.c_str()}, {"pads", pads}, {"value", value}});
  }
  g.node("Conv", {"p", "w", "b"}, {"y"},
         {{"group", int64_t{4}}, {"strides", I{2, 2}}, {"pads", I{1, 0, 0, 1}}, {"kernel_shape", I{3, 3}}})
      .output("y");
  return g.bytes();
}

TEST(PadConvFusion, ZeroPadOnSpatialAxesJoinsTheConvPads) {
  for (int64_t opset : {int64_t{10}, int64_t{17}}) {
    const std::string bytes = padded_depthwise(opset, {0, 0, 0, 1, 0, 0, 1, 2});
    Model m = load_ir(bytes);
    optimize_ir(m, 2);
    EXPECT_EQ(find_op(m, "Pad"), nullptr) << "opset " << opset;
    const Node* conv = find_op(m, "Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(opt::attr_ints(*conv, "pads"), (I{1, 1, 1, 3}));
    EXPECT_EQ(conv->inputs[0]->name, "r");
    expect_same_outputs(bytes);
    expect_idempotent(bytes, 2);
  }
}

TEST(PadConvFusion, AxesInputAndChannelsLastRegion) {
  GraphSpec g(18);
  g.input("x", DataType::Float, {1, 3, 10, 10});
  g.random("w1", {8, 3, 3, 3}).random("w2", {8, 1, 3, 3});
  g.ints("pads", {4}, {1, 0, 1, 1}).ints("axes", {2}, {-1, 2});
  g.node("Conv", {"x", "w1"}, {"c"}, {{"pads", I{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"r"})
      .node("Pad", {"r", "pads", "", "axes"}, {"p"})
      .node("Conv", {"p", "w2"}, {"y"}, {{"group", int64_t{8}}, {"strides", I{2, 2}}})
      .output("y");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 3);
  EXPECT_EQ(find_op(m, "Pad"), nullptr);
  int transposes = 0;
  for (const auto& n : m.graph->nodes) transposes += n->op_type == "Transpose";
  EXPECT_LE(transposes, 2);  // one conversion in, one out
  expect_same_outputs(g.bytes());
}

TEST(PadConvFusion, LeavesPadsAConvCannotTake) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {padded_depthwise(17, {1, 0, 0, 0, 0, 0, 0, 0}), "batch pad"},
      {padded_depthwise(17, {0, 0, -1, 0, 0, 0, 0, 0}), "negative pad (a crop)"},
      {padded_depthwise(17, {0, 0, 1, 1, 0, 0, 1, 1}, 0.5f), "non-zero pad value"},
      {padded_depthwise(17, {0, 0, 1, 1, 0, 0, 1, 1}, 0, "reflect"), "reflect mode"},
      {padded_depthwise(10, {0, 0, 1, 1, 0, 0, 1, 1}, 0, "edge"), "edge mode"},
  };
  for (const auto& [bytes, what] : cases) {
    Model m = load_ir(bytes);
    optimize_ir(m, 2);
    EXPECT_NE(find_op(m, "Pad"), nullptr) << what;
    expect_same_outputs(bytes);
  }
}

TEST(PadConvFusion, PadReadByOthersStays) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {1, 2, 5, 5});
  g.random("w", {3, 2, 3, 3});
  g.ints("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  g.node("Pad", {"x", "pads"}, {"p"})
      .node("Conv", {"p", "w"}, {"y"})
      .node("Sigmoid", {"p"}, {"s"})
      .output("y")
      .output("s");
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  ASSERT_NE(find_op(m, "Pad"), nullptr);
  EXPECT_EQ(find_op(m, "Conv")->inputs[0]->name, "x");
  expect_same_outputs(g.bytes());
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
