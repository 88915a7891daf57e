// The replacement of ops defined by other ops (ONNX Runtime's contrib ops) at load: chains of them (the second
// expanded with what the first's inference told), inside subgraphs, at optimization level 0, graph outputs keeping
// their names, errors naming the node; and the ONNX-domain ops of ONNX Runtime's optimizer moved to ai.onyx.
#include <cmath>

#include "base/error.hpp"
#include "check/runtime_ops.hpp"
#include "opt_test_util.hpp"

namespace onyx::testing {
namespace {

constexpr const char* kMs = "com.microsoft";

float gelu_erf(float x) { return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f))); }

std::vector<float> run_one(const std::string& bytes, const std::vector<float>& x, std::vector<int64_t> dims, int level) {
  SessionOptions o;
  o.optimization_level = level;
  Session s = Session::from_bytes(bytes, o);
  Tensor t = Tensor::allocate(DataType::Float, std::move(dims));
  std::copy(x.begin(), x.end(), t.mutable_data<float>());
  auto out = s.run({{s.inputs()[0].name, Datum::of(t)}});
  const Tensor& y = out.at(0).second.tensor;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.element_count());
}

TEST(OpExpansion, ChainedContribOpsExpandAndKeepTheOutputName) {
  // BiasGelu feeding QuickGelu (which needs its input's element type: it comes from BiasGelu's inference) feeding
  // the graph output; opset 13 has no Gelu, so the expansion takes ai.onyx's.
  GraphSpec g(13);
  g.import(kMs, 1)
      .input("x", DataType::Float, {2, 3})
      .floats("b", {3}, {0.5f, -1.0f, 2.0f})
      .node("BiasGelu", {"x", "b"}, {"g"}, {}, kMs)
      .node("QuickGelu", {"g"}, {"y"}, {{"alpha", 2.0f}}, kMs)
      .output("y", DataType::Float, {2, 3});
  const std::vector<float> x = {-1.5f, -0.25f, 0.0f, 0.3f, 1.0f, 2.5f};
  for (int level : {0, 3}) {
    std::vector<float> y = run_one(g.bytes(), x, {2, 3}, level);
    ASSERT_EQ(y.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
      const float h = gelu_erf(x[i] + (i % 3 == 0 ? 0.5f : i % 3 == 1 ? -1.0f : 2.0f));
      EXPECT_NEAR(y[i], h / (1.0f + std::exp(-2.0f * h)), 1e-5f) << "level " << level << " element " << i;
    }
  }
  Model m = load_ir(g.bytes());
  EXPECT_TRUE(opt::expand_ops(m));
  EXPECT_EQ(opt::verify_graph(*m.graph), "");
  std::vector<std::string> ops = op_list(m);
  EXPECT_EQ(ops, (std::vector<std::string>{"Add", "ai.onyx.Gelu", "Mul", "Sigmoid", "Mul"}));
  ASSERT_EQ(m.graph->outputs.size(), 1u);
  EXPECT_EQ(m.graph->outputs[0]->name, "y");
  EXPECT_EQ(m.opset("ai.onyx"), std::optional<int64_t>(1));
  EXPECT_FALSE(opt::expand_ops(m));  // nothing left to expand
}

TEST(OpExpansion, SubgraphsExpandToo) {
  // An If whose branches hold contrib ops (merged decoders keep their layers in If branches).
  GraphSpec then_branch(17), else_branch(17);
  then_branch.node("FastGelu", {"x"}, {"t"}, {}, kMs).output("t", DataType::Float, {4});
  else_branch.node("Gelu", {"x"}, {"e"}, {}, kMs).output("e", DataType::Float, {4});
  GraphSpec g(17);
  g.import(kMs, 1)
      .input("x", DataType::Float, {4})
      .input("c", DataType::Bool, {})
      .node("If", {"c"}, {"y"})
      .graph_attr("then_branch", then_branch)
      .graph_attr("else_branch", else_branch)
      .output("y", DataType::Float, {4});
  Session s = Session::from_bytes(g.bytes());
  Tensor x = Tensor::allocate(DataType::Float, {4});
  const std::vector<float> xs = {-2.0f, -0.5f, 0.5f, 3.0f};
  std::copy(xs.begin(), xs.end(), x.mutable_data<float>());
  for (bool cond : {true, false}) {
    Tensor c = Tensor::allocate(DataType::Bool, {});
    c.mutable_data<bool>()[0] = cond;
    auto out = s.run({{"x", Datum::of(x)}, {"c", Datum::of(c)}});
    const float* y = out.at(0).second.tensor.data<float>();
    for (size_t i = 0; i < 4; ++i) {
      const float v = xs[i];
      const float want = cond ? 0.5f * v * (1 + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))) : gelu_erf(v);
      EXPECT_NEAR(y[i], want, 1e-5f) << cond << " " << i;
    }
  }
}

TEST(OpExpansion, SubgraphExpansionsKnowTheOuterValuesTypes) {
  // The branch's QuickGelu needs its input's element type: the input is an outer value computed by the main graph
  // (no declared type), and a quantized op in a branch reads outer 8-bit tensors the same way.
  GraphSpec then_branch(17), else_branch(17);
  then_branch.node("QuickGelu", {"s"}, {"t"}, {{"alpha", 1.0f}}, kMs).output("t", DataType::Float, {3});
  else_branch.node("Neg", {"s"}, {"e"}).output("e", DataType::Float, {3});
  GraphSpec g(17);
  g.import(kMs, 1)
      .input("x", DataType::Float, {3})
      .input("c", DataType::Bool, {})
      .node("Add", {"x", "x"}, {"s"})
      .node("If", {"c"}, {"y"})
      .graph_attr("then_branch", then_branch)
      .graph_attr("else_branch", else_branch)
      .output("y", DataType::Float, {3});
  Session s = Session::from_bytes(g.bytes());
  Tensor x = Tensor::allocate(DataType::Float, {3});
  const std::vector<float> xs = {-1.0f, 0.25f, 2.0f};
  std::copy(xs.begin(), xs.end(), x.mutable_data<float>());
  Tensor c = Tensor::allocate(DataType::Bool, {});
  c.mutable_data<bool>()[0] = true;
  auto out = s.run({{"x", Datum::of(x)}, {"c", Datum::of(c)}});
  const float* y = out.at(0).second.tensor.data<float>();
  for (size_t i = 0; i < 3; ++i) {
    const float v = 2 * xs[i];
    EXPECT_NEAR(y[i], v / (1 + std::exp(-v)), 1e-6f) << i;
  }
}

TEST(OpExpansion, UnsupportedFormsAreRefusedNamingTheNode) {
  GraphSpec g(17);
  g.import(kMs, 1)
      .input("x", DataType::Float, {1, 2, 3})
      .input("skip", DataType::Float, {1, 2, 3})
      .floats("gamma", {3}, {1, 1, 1})
      .node("SkipSimplifiedLayerNormalization", {"x", "skip", "gamma"}, {"y", "mean"}, {}, kMs)
      .output("y")
      .output("mean");
  g.graph().node.back().name = "ssln0";
  try {
    Session::from_bytes(g.bytes());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("ssln0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mean and inv_std_var are not supported"), std::string::npos) << msg;
  }
  // A type constraint is checked before expanding: Gelu of int32.
  GraphSpec h(17);
  h.import(kMs, 1).input("x", DataType::Int32, {2}).node("Gelu", {"x"}, {"y"}, {}, kMs).output("y");
  try {
    Session::from_bytes(h.bytes());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
}

TEST(OpExpansion, OnnxDomainLayerNormBelowOpset17MovesToOnyx) {
  GraphSpec g(12);
  g.input("x", DataType::Float, {2, 4})
      .floats("gamma", {4}, {1, 2, 1, 0.5f})
      .floats("beta", {4}, {0, 0.5f, 0, -1})
      .node("LayerNormalization", {"x", "gamma", "beta"}, {"y"}, {{"epsilon", 1e-5f}})
      .output("y", DataType::Float, {2, 4});
  pb::ModelDocument doc = pb::load_model_bytes(g.bytes(), "ln.onnx");
  std::vector<std::string> notes = check::move_runtime_ops(doc);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("LayerNormalization"), std::string::npos) << notes[0];
  EXPECT_EQ(doc.model.graph->node[0].domain.value_or(""), "ai.onyx");
  // Sessions run it; at opset 17 the node is an ONNX op and stays.
  const std::vector<float> x = {1, 2, 3, 4, -1, 0, 1, 5};
  std::vector<float> y = run_one(g.bytes(), x, {2, 4}, 0);
  ASSERT_EQ(y.size(), 8u);
  EXPECT_NEAR(y[0], -1.3416f * 1 + 0, 1e-3f);
  EXPECT_NEAR(y[3], 1.3416f * 0.5f - 1, 1e-3f);
  GraphSpec modern(17);
  modern.input("x", DataType::Float, {2, 4})
      .floats("gamma", {4}, {1, 1, 1, 1})
      .node("LayerNormalization", {"x", "gamma"}, {"y"})
      .output("y");
  pb::ModelDocument doc17 = pb::load_model_bytes(modern.bytes(), "ln17.onnx");
  EXPECT_TRUE(check::move_runtime_ops(doc17).empty());
}

}  // namespace
}  // namespace onyx::testing
