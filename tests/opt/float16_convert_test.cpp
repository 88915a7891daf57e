// float32 -> float16 conversion (include/onyx/float16.hpp): clamping, block lists with their Casts, keep_io_types,
// subgraphs, and that the converted models check and run close to the float32 ones.

#include "onyx/float16.hpp"

#include <cmath>
#include <cstring>

#include "base/error.hpp"
#include "opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {
using namespace testing;

std::string to_f16(const std::string& bytes, const opt::Float16Options& o = {}, opt::Float16Report* r = nullptr) {
  pb::ModelDocument doc = pb::load_model_bytes(bytes, "f16_test.onnx");
  return opt::convert_float_to_float16(doc, o, r);
}

// The tensor's values as floats; the tensor may view the model's bytes at any offset, so reads go through memcpy.
std::vector<float> f16_floats(const Tensor& t) {
  std::vector<float> v;
  const char* p = t.bytes().data();
  for (uint64_t i = 0; i < t.element_count(); ++i) {
    if (t.dtype() == DataType::Float16) {
      uint16_t h;
      std::memcpy(&h, p + i * sizeof h, sizeof h);
      v.push_back(half_to_float(h));
    } else {
      float f;
      std::memcpy(&f, p + i * sizeof f, sizeof f);
      v.push_back(f);
    }
  }
  return v;
}

// Runs both models on the same float32 feeds (cast to float16 where the converted model takes float16) and
// compares every output within float16's accuracy.
void expect_close_to_float32(const std::string& fp32, const std::string& fp16, double rtol = 1e-2, double atol = 1e-2) {
  Session a = Session::from_bytes(fp32), b = Session::from_bytes(fp16);
  auto feeds = random_feeds(a, 3);
  std::map<std::string, Datum> feeds16;
  for (const IoInfo& in : b.inputs()) {
    const Tensor& t = feeds.at(in.name).tensor;
    if (in.type.elem != DataType::Float16) {
      feeds16[in.name] = feeds.at(in.name);
      continue;
    }
    Tensor h = Tensor::allocate(DataType::Float16, t.dims());
    for (uint64_t i = 0; i < t.element_count(); ++i) h.mutable_data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
    feeds16[in.name] = Datum::of(std::move(h));
  }
  auto want = a.run(feeds), got = b.run(feeds16);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    std::vector<float> w = f16_floats(want[k].second.tensor), g = f16_floats(got[k].second.tensor);
    ASSERT_EQ(w.size(), g.size()) << want[k].first;
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_NEAR(w[i], g[i], atol + rtol * std::fabs(w[i])) << want[k].first << "[" << i << "]";
  }
}

Model load_checked(const std::string& bytes) { return load_ir(bytes); }

const Node* find_node(const Graph& g, const std::string& op, int64_t to = -1) {
  for (const auto& n : g.nodes)
    if (n->op_type == op && (to < 0 || (n->attribute("to") && n->attribute("to")->i == to))) return n.get();
  return nullptr;
}

size_t count_ops(const Graph& g, const std::string& op) {
  size_t c = 0;
  for (const auto& n : g.nodes) c += n->op_type == op;
  return c;
}

TEST(Float16Convert, ClampsInitializersAndConvertsTypes) {
  GraphSpec s(17);
  s.input("X", DataType::Float, {6})
      .floats("W", {6}, {1e-9f, -1e-9f, 0.0f, 2e5f, -2e5f, 1.5f})
      .node("Add", {"X", "W"}, {"Y"})
      .output("Y", DataType::Float, {6});
  opt::Float16Report r;
  std::string out = to_f16(s.bytes(), {}, &r);
  EXPECT_EQ(r.clamped_small, 2u);
  EXPECT_EQ(r.clamped_large, 2u);
  EXPECT_EQ(r.tensors_converted, 1u);
  EXPECT_EQ(r.float32_bytes, 24u);
  EXPECT_EQ(r.float16_bytes, 12u);
  EXPECT_EQ(r.casts_inserted, 0u);
  Model m = load_checked(out);
  const Value* x = m.graph->find("X");
  const Value* y = m.graph->find("Y");
  EXPECT_EQ(x->type.elem, DataType::Float16);
  EXPECT_EQ(y->type.elem, DataType::Float16);
  const Tensor& w = m.graph->initializers.at("W");
  ASSERT_EQ(w.dtype(), DataType::Float16);
  std::vector<float> v = f16_floats(w);
  EXPECT_NEAR(v[0], 1e-7, 2e-8);
  EXPECT_NEAR(v[1], -1e-7, 2e-8);
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_EQ(v[3], 10000.0f);
  EXPECT_EQ(v[4], -10000.0f);
  EXPECT_EQ(v[5], 1.5f);
  // The model runs on the clamped weights: X + W with W's large values at ±1e4.
  Session b = Session::from_bytes(out);
  Tensor ones = Tensor::allocate(DataType::Float16, {6});
  for (int i = 0; i < 6; ++i) ones.mutable_data<uint16_t>()[i] = float_to_half(1.0f);
  std::map<std::string, Datum> feeds;
  feeds["X"] = Datum::of(std::move(ones));
  auto got = b.run(feeds);
  EXPECT_EQ(f16_floats(got[0].second.tensor), (std::vector<float>{1, 1, 1, 10000, -10000, 2.5f}));
}

TEST(Float16Convert, RejectsClampBoundsOutsideFloat16) {
  GraphSpec s(17);
  s.input("X", DataType::Float, {2}).node("Relu", {"X"}, {"Y"}).output("Y", DataType::Float, {2});
  opt::Float16Options o;
  o.max_finite_val = 1e6f;
  EXPECT_THROW(to_f16(s.bytes(), o), Error);
  o = {};
  o.min_positive_val = 0;
  EXPECT_THROW(to_f16(s.bytes(), o), Error);
}

TEST(Float16Convert, BlockedOpsStayFloat32BetweenCasts) {
  // Max is in the default block list: it reads float32 copies of its inputs and its output is cast back.
  GraphSpec s(17);
  s.input("A", DataType::Float, {2, 3})
      .input("B", DataType::Float, {2, 3})
      .node("Relu", {"A"}, {"ra"})
      .node("Max", {"ra", "B"}, {"m"})
      .node("Sigmoid", {"m"}, {"Y"})
      .output("Y", DataType::Float, {2, 3});
  opt::Float16Report r;
  std::string out = to_f16(s.bytes(), {}, &r);
  EXPECT_EQ(r.blocked_ops.at("Max"), 1u);
  EXPECT_EQ(r.casts_inserted, 3u);
  Model m = load_checked(out);
  const Node* max = find_node(*m.graph, "Max");
  ASSERT_TRUE(max);
  for (const Value* in : max->inputs) {
    ASSERT_TRUE(in->producer) << in->name;
    EXPECT_EQ(in->producer->op_type, "Cast");
    EXPECT_EQ(in->producer->attribute("to")->i, static_cast<int64_t>(DataType::Float));
  }
  ASSERT_EQ(max->outputs[0]->consumers.size(), 1u);
  EXPECT_EQ(max->outputs[0]->consumers[0]->op_type, "Cast");
  EXPECT_EQ(max->outputs[0]->consumers[0]->attribute("to")->i, static_cast<int64_t>(DataType::Float16));
  expect_close_to_float32(s.bytes(), out);

  // An empty block list converts Max too; a node block list keeps the named node.
  opt::Float16Options none;
  none.op_block_list = std::vector<std::string>{};
  EXPECT_EQ(count_ops(*load_checked(to_f16(s.bytes(), none)).graph, "Cast"), 0u);
  GraphSpec named(17);
  named.input("A", DataType::Float, {2}).node("Relu", {"A"}, {"r"}).node("Sigmoid", {"r"}, {"Y"});
  named.graph().node[1].name = named.arena().save(std::string("keep_me"));
  named.output("Y", DataType::Float, {2});
  opt::Float16Options by_name;
  by_name.node_block_list = {"keep_me"};
  opt::Float16Report rn;
  std::string out2 = to_f16(named.bytes(), by_name, &rn);
  EXPECT_EQ(rn.blocked_ops.at("Sigmoid"), 1u);
  EXPECT_EQ(rn.casts_inserted, 2u);
  expect_close_to_float32(named.bytes(), out2);
  by_name.node_block_list = {"no_such_node"};
  EXPECT_THROW(to_f16(named.bytes(), by_name), Error);
}

TEST(Float16Convert, KeepIoTypesCastsAtTheEdges) {
  GraphSpec s(17);
  s.input("X", DataType::Float, {2, 4})
      .random("W", {4, 3})
      .node("MatMul", {"X", "W"}, {"h"})
      .node("Relu", {"h"}, {"Y"})
      .node("TopK", {"h", "k"}, {"V", "I"}, {Attr("axis", 1)})
      .ints("k", {1}, {2})
      .output("Y", DataType::Float, {2, 3})
      .output("V", DataType::Float, {2, 2})
      .output("I", DataType::Int64, {2, 2});
  opt::Float16Options o;
  o.keep_io_types = true;
  std::string out = to_f16(s.bytes(), o);
  Model m = load_checked(out);
  EXPECT_EQ(m.graph->find("X")->type.elem, DataType::Float);
  EXPECT_EQ(m.graph->find("Y")->type.elem, DataType::Float);
  EXPECT_EQ(m.graph->find("V")->type.elem, DataType::Float);
  EXPECT_EQ(m.graph->initializers.at("W").dtype(), DataType::Float16);
  // X is cast to float16 once; Y comes from a Cast to float32; TopK (blocked) makes V in float32 directly.
  const Value* y = m.graph->find("Y");
  ASSERT_TRUE(y->producer);
  EXPECT_EQ(y->producer->op_type, "Cast");
  const Value* v = m.graph->find("V");
  ASSERT_TRUE(v->producer);
  EXPECT_EQ(v->producer->op_type, "TopK");
  ASSERT_EQ(m.graph->find("X")->consumers.size(), 1u);
  EXPECT_EQ(m.graph->find("X")->consumers[0]->op_type, "Cast");
  expect_close_to_float32(s.bytes(), out);
}

TEST(Float16Convert, ConstantsCastsAndAttributes) {
  GraphSpec s(17);
  s.input("X", DataType::Float, {3})
      .input("N", DataType::Int64, {3})
      .node("Constant", {}, {"c"}, {Attr("value_float", 0.5f)})
      .node("Constant", {}, {"cs"}, {Attr("value_floats", std::vector<float>{1, 2, 3})})
      .node("Cast", {"N"}, {"nf"}, {Attr("to", static_cast<int64_t>(DataType::Float))})
      .node("Mul", {"X", "c"}, {"a"})
      .node("Add", {"a", "cs"}, {"b"})
      .node("Add", {"b", "nf"}, {"Y"})
      .node("Shape", {"X"}, {"sh"})
      .node("ConstantOfShape", {"sh"}, {"Z"})
      .output("Y", DataType::Float, {3})
      .output("Z", DataType::Float, {3});
  std::string out = to_f16(s.bytes());
  Model m = load_checked(out);
  const Node* cast = find_node(*m.graph, "Cast");
  ASSERT_TRUE(cast);
  EXPECT_EQ(cast->attribute("to")->i, static_cast<int64_t>(DataType::Float16));
  for (const auto& n : m.graph->nodes)
    if (n->op_type == "Constant") {
      ASSERT_TRUE(n->attribute("value")) << n->label();
      EXPECT_EQ(n->attribute("value")->t->dtype(), DataType::Float16);
    }
  const Node* cos = find_node(*m.graph, "ConstantOfShape");
  ASSERT_TRUE(cos && cos->attribute("value"));
  EXPECT_EQ(cos->attribute("value")->t->dtype(), DataType::Float16);
  expect_close_to_float32(s.bytes(), out);
}

TEST(Float16Convert, SubgraphsAreConverted) {
  // Y = If(cond, X + W_then, X * c_else): the bodies read X from the main graph and hold their own constants.
  GraphSpec then_b(17), else_b(17);
  then_b.floats("Wt", {3}, {0.25f, 0.5f, 1e-9f}).node("Add", {"X", "Wt"}, {"t"}).output("t", DataType::Float, {3});
  else_b.node("Constant", {}, {"ce"}, {Attr("value_float", 3.0f)})
      .node("Mul", {"X", "ce"}, {"e"})
      .node("Max", {"e", "X"}, {"em"})
      .output("em", DataType::Float, {3});
  GraphSpec s(17);
  s.input("X", DataType::Float, {3})
      .input("cond", DataType::Bool, {})
      .node("If", {"cond"}, {"Y"})
      .graph_attr("then_branch", then_b)
      .graph_attr("else_branch", else_b)
      .output("Y", DataType::Float, {3});
  opt::Float16Report r;
  std::string out = to_f16(s.bytes(), {}, &r);
  EXPECT_EQ(r.clamped_small, 1u);
  EXPECT_EQ(r.blocked_ops.at("Max"), 1u);
  Model m = load_checked(out);
  const Node* iff = find_node(*m.graph, "If");
  ASSERT_TRUE(iff);
  const Graph& tb = *iff->attribute("then_branch")->g;
  EXPECT_EQ(tb.initializers.at("Wt").dtype(), DataType::Float16);
  EXPECT_EQ(tb.outputs[0]->type.elem, DataType::Float16);
  const Graph& eb = *iff->attribute("else_branch")->g;
  EXPECT_EQ(count_ops(eb, "Cast"), 3u);
  EXPECT_EQ(eb.outputs[0]->type.elem, DataType::Float16);
  for (bool c : {true, false}) {
    Session a = Session::from_bytes(s.bytes()), b = Session::from_bytes(out);
    Tensor x = Tensor::allocate(DataType::Float, {3}), xh = Tensor::allocate(DataType::Float16, {3});
    for (int i = 0; i < 3; ++i) {
      x.mutable_data<float>()[i] = 0.5f * static_cast<float>(i) - 0.3f;
      xh.mutable_data<uint16_t>()[i] = float_to_half(x.data<float>()[i]);
    }
    Tensor cond = Tensor::allocate(DataType::Bool, {});
    *cond.mutable_data<bool>() = c;
    auto want = a.run({{"X", Datum::of(x)}, {"cond", Datum::of(cond)}});
    auto got = b.run({{"X", Datum::of(xh)}, {"cond", Datum::of(cond)}});
    std::vector<float> w = f16_floats(want[0].second.tensor), g = f16_floats(got[0].second.tensor);
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], g[i], 1e-2 + 1e-2 * std::fabs(w[i])) << c << " " << i;
  }
}

TEST(Float16Convert, BlockingANodeWithSubgraphsIsRefused) {
  GraphSpec then_b(17), else_b(17);
  then_b.node("Relu", {"X"}, {"t"}).output("t", DataType::Float, {2});
  else_b.node("Neg", {"X"}, {"e"}).output("e", DataType::Float, {2});
  GraphSpec s(17);
  s.input("X", DataType::Float, {2})
      .input("cond", DataType::Bool, {})
      .node("If", {"cond"}, {"Y"})
      .graph_attr("then_branch", then_b)
      .graph_attr("else_branch", else_b)
      .output("Y", DataType::Float, {2});
  opt::Float16Options o;
  o.op_block_list = std::vector<std::string>{"If"};
  try {
    to_f16(s.bytes(), o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has subgraphs"), std::string::npos) << e.what();
  }
}

TEST(Float16Convert, OutputsOfOpsThatAlwaysMakeFloat32GetACast) {
  // TfIdfVectorizer reads integers and always writes float32: a Cast after it makes its output float16.
  GraphSpec s(17);
  s.input("T", DataType::Int64, {4})
      .node("TfIdfVectorizer", {"T"}, {"f"},
            {Attr("mode", "TF"), Attr("min_gram_length", 1), Attr("max_gram_length", 1), Attr("max_skip_count", 0),
             Attr("ngram_counts", std::vector<int64_t>{0}), Attr("ngram_indexes", std::vector<int64_t>{0, 1}),
             Attr("pool_int64s", std::vector<int64_t>{2, 3})})
      .node("Relu", {"f"}, {"Y"})
      .output("Y", DataType::Float, {2});
  opt::Float16Report r;
  std::string out = to_f16(s.bytes(), {}, &r);
  EXPECT_EQ(r.casts_inserted, 1u);
  Model m = load_checked(out);
  EXPECT_EQ(m.graph->find("Y")->type.elem, DataType::Float16);
  expect_close_to_float32(s.bytes(), out);
}

TEST(Float16Convert, UntypedIfOutputsRunAtEveryLevel) {
  // Converted models keep the untyped If outputs exporters write; half promotion (level 2) must not turn the Add
  // reading one of them into float32 beside a float16 value.
  GraphSpec then_b(17), else_b(17);
  then_b.node("Identity", {"X"}, {"t"}).output("t");
  else_b.node("Neg", {"X"}, {"e"}).output("e");
  GraphSpec s(17);
  s.input("X", DataType::Float, {2})
      .input("cond", DataType::Bool, {})
      .node("If", {"cond"}, {"i"})
      .graph_attr("then_branch", then_b)
      .graph_attr("else_branch", else_b)
      .node("Mul", {"X", "X"}, {"m"})
      .node("Add", {"i", "m"}, {"Y"})
      .output("Y", DataType::Float, {2});
  std::string out = to_f16(s.bytes());
  for (int level : {0, 1, 2, 3}) {
    Session b = session_at(out, level);
    Tensor xh = Tensor::allocate(DataType::Float16, {2});
    xh.mutable_data<uint16_t>()[0] = float_to_half(1.5f);
    xh.mutable_data<uint16_t>()[1] = float_to_half(-2.0f);
    Tensor cond = Tensor::allocate(DataType::Bool, {});
    *cond.mutable_data<bool>() = false;
    auto got = b.run({{"X", Datum::of(xh)}, {"cond", Datum::of(cond)}});
    EXPECT_EQ(f16_floats(got[0].second.tensor), (std::vector<float>{0.75f, 6.0f})) << "level " << level;
  }
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
