// GELU patterns (erf and tanh forms, in the orders exporters write) -> Gelu.
#include <cmath>

#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

// order 0: (x * f) * 0.5; 1: (x * 0.5) * f; 2: x * (f * 0.5).
void product(GraphSpec& g, const std::string& f, int order) {
  if (order == 0) g.node("Mul", {"x", f}, {"xf"}).node("Mul", {"xf", "half"}, {"y"});
  if (order == 1) g.node("Mul", {"x", "half"}, {"xh"}).node("Mul", {"xh", f}, {"y"});
  if (order == 2) g.node("Mul", {f, "half"}, {"fh"}).node("Mul", {"x", "fh"}, {"y"});
}

std::string erf_model(int64_t opset, int order, bool divide, float half = 0.5f) {
  GraphSpec g(opset);
  g.input("x", DataType::Float, {3, 7}).floats("one", {}, {1.0f}).floats("half", {}, {half});
  if (divide) g.floats("c", {}, {1.4142135f}).node("Div", {"x", "c"}, {"s"});
  else g.floats("c", {}, {0.70710677f}).node("Mul", {"c", "x"}, {"s"});
  g.node("Erf", {"s"}, {"e"}).node("Add", {"e", "one"}, {"f"});
  product(g, "f", order);
  g.output("y");
  return g.bytes();
}

std::string tanh_model(int64_t opset, int order, bool pow) {
  GraphSpec g(opset);
  g.input("x", DataType::Float, {3, 7})
      .floats("one", {}, {1.0f})
      .floats("half", {}, {0.5f})
      .floats("three", {}, {3.0f})
      .floats("k", {}, {0.044715f})
      .floats("sq2pi", {}, {static_cast<float>(std::sqrt(2.0 / M_PI))});
  if (pow) g.node("Pow", {"x", "three"}, {"cube"});
  else g.node("Mul", {"x", "x"}, {"sq"}).node("Mul", {"sq", "x"}, {"cube"});
  g.node("Mul", {"k", "cube"}, {"kc"})
      .node("Add", {"x", "kc"}, {"inner"})
      .node("Mul", {"inner", "sq2pi"}, {"scaled"})
      .node("Tanh", {"scaled"}, {"t"})
      .node("Add", {"one", "t"}, {"f"});
  product(g, "f", order);
  g.output("y");
  return g.bytes();
}

TEST(GeluFusion, ErfFormInEachOrder) {
  for (int order = 0; order < 3; ++order)
    for (bool divide : {true, false}) {
      std::string bytes = erf_model(17, order, divide);
      Model m = load_ir(bytes);
      optimize_ir(m, 2);
      ASSERT_EQ(op_list(m), V{"ai.onyx.Gelu"}) << "order " << order;
      EXPECT_EQ(m.graph->nodes[0]->attribute("approximate"), nullptr);
      expect_same_outputs(bytes);
      expect_idempotent(bytes, 2);
    }
}

TEST(GeluFusion, TanhForm) {
  for (int order = 0; order < 3; ++order)
    for (bool pow : {true, false}) {
      std::string bytes = tanh_model(20, order, pow);
      Model m = load_ir(bytes);
      optimize_ir(m, 2);
      ASSERT_EQ(op_list(m), V{"Gelu"}) << "order " << order;
      EXPECT_EQ(m.graph->nodes[0]->attribute("approximate")->s, "tanh");
      expect_same_outputs(bytes);
      expect_idempotent(bytes, 2);
    }
}

TEST(GeluFusion, StandardFromOpset20) {
  std::string bytes = erf_model(20, 1, true);
  Model m = load_ir(bytes);
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), V{"Gelu"});
  expect_same_outputs(bytes);
}

TEST(GeluFusion, LeavesOtherConstants) {
  Model m = load_ir(erf_model(17, 0, true, 0.6f));
  optimize_ir(m, 2);
  EXPECT_EQ(m.graph->nodes.size(), 5u);
}

}  // namespace
}  // namespace onyx
