// Half-precision promotion: float16 / bfloat16 math runs in float32, with Casts only where something still needs
// the half value.
#include <set>

#include "opt/graph_edit.hpp"
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using V = std::vector<std::string>;

std::vector<uint16_t> halves(std::vector<float> v) {
  std::vector<uint16_t> h;
  for (float x : v) h.push_back(float_to_half(x));
  return h;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  return v;
}

// What a float16 converter writes with float32 inputs and outputs kept: Casts at the edges, an op it keeps in
// float32 (Resize) between Casts, and a half output.
std::string converted_model() {
  GraphSpec g(17);
  g.input("x", DataType::Float, {1, 2, 6, 6});
  g.init("w", DataType::Float16, {3, 2, 3, 3}, halves(random_values(54, 1)));
  g.init("b", DataType::Float16, {3}, halves({0.25f, -0.5f, 0.125f}));
  g.floats("scales", {4}, {1, 1, 2, 2});
  g.node("Cast", {"x"}, {"xh"}, {{"to", 10}})
      .node("Conv", {"xh", "w", "b"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"r"})
      .node("Cast", {"r"}, {"rf"}, {{"to", 1}})
      .node("Resize", {"rf", "", "scales"}, {"up"}, {{"mode", "linear"}})
      .node("Cast", {"up"}, {"uph"}, {{"to", 10}})
      .node("Sigmoid", {"uph"}, {"s"})
      .node("Cast", {"s"}, {"y"}, {{"to", 1}})
      .node("Atan", {"r"}, {"t"})  // an op the pass leaves in half precision
      .node("Add", {"r", "r"}, {"z"})
      .output("y", DataType::Float, {1, 3, 12, 12})
      .output("t", DataType::Float16, {1, 3, 6, 6})
      .output("z", DataType::Float16, {1, 3, 6, 6});
  return g.bytes();
}

// The element types of the values node `n` reads and writes (per the session's analysis of the optimized graph).
std::set<DataType> types_touched(const Model& m, const Node& n) {
  opt::OptimizeOptions o;
  opt::PassContext ctx(const_cast<Model&>(m), *m.graph, o);
  std::set<DataType> t;
  for (const Value* v : n.inputs)
    if (v) t.insert(ctx.analysis().dtype(v));
  for (const Value* v : n.outputs)
    if (v) t.insert(ctx.analysis().dtype(v));
  return t;
}

TEST(HalfPromotion, ConvertedModelRunsInFloat32) {
  const std::string bytes = converted_model();
  Model m = load_ir(bytes);
  const std::string_view w_data = m.graph->find("w")->initializer->bytes();  // a view of the model's bytes
  const std::string w_before(w_data);
  optimize_ir(m, 2);
  // The edge Casts and the pair around Resize are gone; two Casts to half remain, for Atan and the output z.
  int casts = 0;
  for (const auto& n : m.graph->nodes) {
    const std::set<DataType> t = types_touched(m, *n);
    if (n->op_type == "Cast") {
      ++casts;
      EXPECT_EQ(opt::attr_int(*n, "to").value_or(0), 10) << n->label();
    } else if (n->op_type == "Atan") {
      EXPECT_EQ(t, std::set<DataType>{DataType::Float16});
    } else {
      EXPECT_EQ(t.count(DataType::Float16), 0u) << n->label() << " still computes in float16";
    }
  }
  EXPECT_EQ(casts, 2);
  EXPECT_EQ(std::string(w_data), w_before);  // float32 copies were made; the model's own weights stay as they were
  // The interface keeps its names and types.
  Session s = session_at(bytes, 2);
  ASSERT_EQ(s.outputs().size(), 3u);
  EXPECT_EQ(s.outputs()[1].type.elem, DataType::Float16);
  expect_same_outputs(bytes, 1e-2, 1e-2);  // float16 rounding of intermediates at level 0
  expect_idempotent(bytes, 2);
}

TEST(HalfPromotion, HalfInputsAndOutputsGetCastsAtTheEdges) {
  GraphSpec g(17);
  g.input("a", DataType::Float16, {4, 8});
  g.init("w", DataType::Float16, {8, 5}, halves(random_values(40, 2)));
  g.node("MatMul", {"a", "w"}, {"p"}).node("Tanh", {"p"}, {"y"}).output("y", DataType::Float16, {4, 5});
  Model m = load_ir(g.bytes());
  optimize_ir(m, 2);
  EXPECT_EQ(op_list(m), (V{"Cast", "ai.onyx.FusedMatMul", "Cast"}));  // and the float32 fusions apply
  EXPECT_EQ(m.graph->outputs[0]->name, "y");
  expect_same_outputs(g.bytes(), 1e-2, 1e-2);
  expect_idempotent(g.bytes(), 2);
}

TEST(HalfPromotion, BasicLevelAndFloat32ModelsAreLeftAlone) {
  Model m = load_ir(converted_model());
  optimize_ir(m, 1);
  for (const auto& n : m.graph->nodes) {
    if (n->op_type == "Conv") {
      EXPECT_EQ(types_touched(m, *n), std::set<DataType>{DataType::Float16});
    }
  }
  GraphSpec g(17);
  g.input("a", DataType::Float, {2, 3}).node("Relu", {"a"}, {"y"}).output("y");
  Model f = load_ir(g.bytes());
  EXPECT_TRUE(optimize_ir(f, 2).applied.empty());
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
