// Gradient (ai.onnx.preview.training): analytic gradients compared with central finite differences of sum(y) on
// random inputs (fixed seed, double precision), plus the spec tests' cases and the error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph_builder.hpp"
#include "op_test_util.hpp"
#include "ops/op_kit.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;
using D = DataType;

// A model: graph inputs, forward nodes, one Gradient node; outputs y then the gradients.
struct GradModel {
  ModelBuilder mb;
  pb::Graph g;
  int64_t opset = 13;
  DataType dtype = D::Double;
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs;

  GradModel& in(const std::string& name, std::vector<int64_t> dims) {
    mb.input(g, name, mb.tensor_t(dtype, dims));
    inputs.emplace_back(name, std::move(dims));
    return *this;
  }
  pb::Node& node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
    return mb.node(g, op, ins, outs);
  }
  void attr_float(pb::Node& n, const std::string& name, float v) { mb.attr(n, name, pb::AttrType::Float).f = v; }
  void init_i64(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> v) {
    pb::Tensor& t = g.initializer.emplace_back();
    t.name = mb.arena.save(name);
    t.dims = std::move(dims);
    t.data_type = static_cast<int32_t>(D::Int64);
    t.int64_data = std::move(v);
  }
  void init_f64(const std::string& name, std::vector<int64_t> dims, std::vector<double> v) {
    pb::Tensor& t = g.initializer.emplace_back();
    t.name = mb.arena.save(name);
    t.dims = std::move(dims);
    t.data_type = static_cast<int32_t>(D::Double);
    t.double_data = std::move(v);
  }
  // The Gradient node; `values` are its inputs (default: the xs and zs names themselves).
  pb::Node& gradient(const std::vector<std::string>& xs, const std::vector<std::string>& zs, const std::string& y,
                     std::vector<std::string> values = {}, std::vector<std::string> outs = {}) {
    if (values.empty()) {
      values = xs;
      values.insert(values.end(), zs.begin(), zs.end());
    }
    if (outs.empty())
      for (const auto& x : xs) outs.push_back("d_" + x);
    pb::Node& n = mb.node(g, "Gradient", values, outs);
    n.domain = mb.arena.save("ai.onnx.preview.training");
    n.name = mb.arena.save("grad");
    auto& a = mb.attr(n, "xs", pb::AttrType::Strings);
    for (const auto& x : xs) a.strings.push_back(mb.arena.save(x));
    if (!zs.empty()) {
      auto& z = mb.attr(n, "zs", pb::AttrType::Strings);
      for (const auto& x : zs) z.strings.push_back(mb.arena.save(x));
    }
    mb.attr(n, "y", pb::AttrType::String).s = mb.arena.save(y);
    mb.output(g, y);
    for (const auto& o : outs)
      if (!o.empty()) mb.output(g, o);
    return n;
  }
  Session session() {
    pb::Model m;
    m.ir_version = 10;
    m.opset_import.push_back({mb.arena.save(""), opset, {}});
    m.opset_import.push_back({mb.arena.save("ai.onnx.preview.training"), 1, {}});
    g.name = mb.arena.save("main");
    m.graph = g;
    return Session::from_bytes(pb::serialize_model(m));
  }
};

std::map<std::string, Datum> random_feeds(const GradModel& m, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::map<std::string, Datum> feeds;
  for (const auto& [name, dims] : m.inputs) {
    Tensor t = Tensor::allocate(D::Double, dims);
    for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<double>()[i] = u(gen);
    feeds[name] = Datum::of(std::move(t));
  }
  return feeds;
}

double sum_of(const Tensor& t) {
  double s = 0;
  for (double v : ops::read_doubles(t)) s += v;
  return s;
}

// Checks each Gradient output (outputs 1..) against central differences of sum(output 0) in the named inputs.
void expect_matches_finite_differences(Session& s, const std::map<std::string, Datum>& feeds,
                                       const std::vector<std::string>& xs, double tol = 1e-6) {
  auto out = s.run(feeds);
  ASSERT_EQ(out.size(), xs.size() + 1);
  const double h = 1e-6;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = feeds.at(xs[i]).tensor;
    const Tensor& g = out[i + 1].second.tensor;
    ASSERT_EQ(g.dims(), x.dims()) << xs[i];
    ASSERT_EQ(g.dtype(), D::Double);
    for (uint64_t k = 0; k < x.element_count(); ++k) {
      double f[2];
      for (int side = 0; side < 2; ++side) {
        auto moved = feeds;
        Tensor t = x.clone();
        t.mutable_data<double>()[k] += side ? -h : h;
        moved[xs[i]] = Datum::of(std::move(t));
        f[side] = sum_of(s.run(moved)[0].second.tensor);
      }
      const double numeric = (f[0] - f[1]) / (2 * h), analytic = g.data<double>()[k];
      EXPECT_NEAR(analytic, numeric, tol * (1 + std::abs(numeric))) << "d/d" << xs[i] << "[" << k << "]";
    }
  }
}

// Every op the Gradient kernel's header names has its rule on every registered version of it.
TEST(Gradient, RulesAreOnTheOpsDefinitions) {
  const char* with_rules[] = {"Add", "Sub", "Mul", "Div", "Pow", "Neg", "Abs", "Reciprocal", "Exp", "Log", "Sqrt", "Sin",
                              "Cos", "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Elu", "Softplus", "Erf", "Clip",
                              "Identity", "Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand", "Transpose",
                              "Concat", "Split", "Where", "Sum", "Mean", "MatMul", "Gemm", "ReduceSum", "ReduceMean",
                              "ReduceSumSquare", "Softmax", "LogSoftmax", "Slice", "Gather", "GatherElements",
                              "GatherND", "Tile", "Pad", "Compress", "ReverseSequence", "DepthToSpace", "SpaceToDepth"};
  const ops::Registry& r = ops::builtin_registry();
  for (const char* op : with_rules) {
    const std::vector<int> versions = r.versions("", op);
    ASSERT_FALSE(versions.empty()) << op;
    for (int v : versions) EXPECT_NE(r.find("", op, v)->gradient, nullptr) << op << "-" << v;
  }
  for (const char* op : {"Det", "Conv", "MaxPool"}) EXPECT_EQ(r.find("", op, r.versions("", op).back())->gradient, nullptr) << op;
}

TEST(Gradient, OfAddAndOfAddAndMul) {  // the spec tests' graphs: c = a + b; d = (a + b) * a
  GradModel m;
  m.opset = 12;
  m.in("a", {}).in("b", {});
  m.node("Add", {"a", "b"}, {"c"});
  m.node("Mul", {"c", "a"}, {"d"});
  m.gradient({"a", "b"}, {}, "d");
  Session s = m.session();
  auto out = s.run({{"a", Datum::of(make_tensor<double>(D::Double, {}, {1.0}))},
                    {"b", Datum::of(make_tensor<double>(D::Double, {}, {2.0}))}});
  EXPECT_EQ(values<double>(out[0].second)[0], 3.0);
  EXPECT_EQ(values<double>(out[1].second)[0], 4.0);  // dd/da = 2a + b
  EXPECT_EQ(values<double>(out[2].second)[0], 1.0);  // dd/db = a
}

TEST(Gradient, ElementwiseChainWithBroadcasting) {
  GradModel m;
  m.in("a", {2, 3}).in("b", {3}).in("c", {2, 1});
  m.node("Mul", {"a", "b"}, {"ab"});
  m.node("Tanh", {"ab"}, {"t"});
  m.node("Exp", {"a"}, {"e"});
  m.node("Mul", {"c", "c"}, {"cc"});
  m.node("Add", {"cc", "c"}, {"cc1"});
  m.node("Sigmoid", {"cc1"}, {"sg"});
  m.node("Div", {"e", "sg"}, {"q"});
  m.node("Sub", {"t", "q"}, {"u"});
  m.node("Neg", {"u"}, {"v"});
  m.node("Sin", {"v"}, {"w"});
  m.node("Cos", {"w"}, {"w2"});
  m.node("Abs", {"w2"}, {"w3"});
  m.node("Identity", {"w3"}, {"y"});
  m.gradient({"a", "b", "c"}, {}, "y");
  Session s = m.session();
  expect_matches_finite_differences(s, random_feeds(m, 1), {"a", "b", "c"});
}

TEST(Gradient, PositiveDomainOps) {  // Log, Sqrt, Pow (constant and variable exponent), Reciprocal, Softplus, Erf
  GradModel m;
  m.in("x", {3, 2}).in("p", {2});
  m.init_f64("three", {}, {3.0});
  m.node("Log", {"x"}, {"l"});
  m.node("Sqrt", {"x"}, {"r"});
  m.node("Pow", {"x", "three"}, {"x3"});
  m.node("Pow", {"x", "p"}, {"xp"});
  m.node("Reciprocal", {"x"}, {"rx"});
  m.node("Softplus", {"l"}, {"sp"});
  m.node("Erf", {"r"}, {"er"});
  m.node("Sum", {"l", "x3", "xp", "rx", "sp", "er"}, {"s"});
  m.node("Mean", {"s", "r", "p"}, {"y"});
  m.gradient({"x", "p"}, {}, "y");
  Session s = m.session();
  expect_matches_finite_differences(s, random_feeds(m, 2, 0.5, 2.0), {"x", "p"});
}

TEST(Gradient, MatMulWithBatchBroadcastAndVectors) {
  GradModel m;
  m.in("a", {2, 3, 4}).in("b", {4, 5}).in("v", {5}).in("w", {3});
  m.node("MatMul", {"a", "b"}, {"ab"});    // [2,3,5]
  m.node("MatMul", {"ab", "v"}, {"abv"});  // [2,3]
  m.node("MatMul", {"w", "ab"}, {"wab"});  // [2,5]
  m.node("Sigmoid", {"abv"}, {"s1"});
  m.node("Tanh", {"wab"}, {"s2"});
  m.init_i64("axes", {1}, {1});
  m.node("ReduceSum", {"s1", "axes"}, {"r1"});  // keepdims: [2,1]
  pb::Node& rm = m.node("ReduceMean", {"s2"}, {"r2"});  // opset 13: axes attribute; keepdims 0: [2]
  m.mb.attr_ints(rm, "axes", {1});
  m.mb.attr_int(rm, "keepdims", 0);
  m.node("Add", {"r1", "r2"}, {"y"});  // [2,2]
  m.gradient({"a", "b", "v", "w"}, {}, "y");
  Session s = m.session();
  expect_matches_finite_differences(s, random_feeds(m, 3), {"a", "b", "v", "w"});
}

TEST(Gradient, GemmSoftmaxAndActivations) {
  GradModel m;
  m.in("a", {4, 3}).in("b", {5, 4}).in("c", {5});
  pb::Node& gemm = m.node("Gemm", {"a", "b", "c"}, {"g"});  // a^T: [3,4]; b^T: [4,5]; g: [3,5]
  m.mb.attr_int(gemm, "transA", 1);
  m.mb.attr_int(gemm, "transB", 1);
  m.attr_float(gemm, "alpha", 0.5f);
  m.attr_float(gemm, "beta", 2.0f);
  pb::Node& lr = m.node("LeakyRelu", {"g"}, {"lr"});
  m.attr_float(lr, "alpha", 0.2f);
  m.node("Elu", {"lr"}, {"el"});
  m.node("Relu", {"g"}, {"re"});
  m.node("Add", {"el", "re"}, {"h"});
  pb::Node& sm = m.node("Softmax", {"h"}, {"p"});
  m.mb.attr_int(sm, "axis", 0);
  m.node("LogSoftmax", {"h"}, {"lp"});
  m.node("Mul", {"p", "lp"}, {"y"});
  m.gradient({"a", "b", "c"}, {}, "y");
  Session s = m.session();
  expect_matches_finite_differences(s, random_feeds(m, 4), {"a", "b", "c"});
}

TEST(Gradient, SoftmaxBeforeOpset13NormalizesTheFlattenedTail) {
  GradModel m;
  m.opset = 11;
  m.in("x", {2, 3, 2}).in("w", {2, 3, 2});
  pb::Node& sm = m.node("Softmax", {"x"}, {"p"});
  m.mb.attr_int(sm, "axis", 1);
  m.node("Mul", {"p", "w"}, {"y"});  // weights make sum(y) depend on the softmax
  m.gradient({"x"}, {"w"}, "y");
  Session s = m.session();
  expect_matches_finite_differences(s, random_feeds(m, 5), {"x"});
}

TEST(Gradient, LayoutOps) {  // Reshape, Transpose, Concat, Split, Expand, Unsqueeze, Squeeze, Flatten, Where, Clip
  GradModel m;
  m.in("x", {2, 3}).in("z", {3, 1}).in("k", {2, 3});
  m.init_i64("shape", {3}, {3, 2, 1});
  m.init_i64("ax0", {1}, {0});
  m.init_i64("eshape", {3}, {3, 2, 4});
  m.init_i64("split", {2}, {1, 2});
  m.node("Reshape", {"x", "shape"}, {"r"});  // [3,2,1]
  pb::Node& tr = m.node("Transpose", {"r"}, {"t"});
  m.mb.attr_ints(tr, "perm", {1, 2, 0});  // [2,1,3]
  m.node("Squeeze", {"t"}, {"sq"});        // [2,3]
  m.node("Transpose", {"z"}, {"zt"});       // [1,3]
  pb::Node& cc = m.node("Concat", {"sq", "zt", "sq"}, {"c"});  // [5,3]
  m.mb.attr_int(cc, "axis", 0);
  pb::Node& sp = m.node("Split", {"x", "split"}, {"s1", "s2"});  // [2,1], [2,2]
  m.mb.attr_int(sp, "axis", 1);
  m.node("Unsqueeze", {"s1", "ax0"}, {"u"});  // [1,2,1]
  m.node("Expand", {"u", "eshape"}, {"e"});    // [3,2,4]
  m.node("Flatten", {"e"}, {"f"});             // [3,8]
  m.node("Greater", {"k", "x"}, {"cond"});
  m.node("Where", {"cond", "x", "sq"}, {"wh"});
  m.init_f64("lo", {}, {-0.3});
  m.init_f64("hi", {}, {0.4});
  m.node("Clip", {"wh", "lo", "hi"}, {"cl"});
  m.node("ReduceSumSquare", {"c"}, {"a1"});
  m.node("ReduceSumSquare", {"f"}, {"a2"});
  m.node("ReduceSumSquare", {"s2"}, {"a3"});
  m.node("ReduceSumSquare", {"cl"}, {"a4"});
  m.node("Sum", {"a1", "a2", "a3", "a4"}, {"y"});
  m.gradient({"x", "z"}, {"k"}, "y");
  Session s = m.session();
  expect_matches_finite_differences(s, random_feeds(m, 6), {"x", "z"});
}

TEST(Gradient, OpsThatMoveElements) {  // the map from each output element back to its source comes from the kernel
  GradModel m;
  m.in("x", {4, 3}).in("cv", {});
  m.init_i64("starts", {2}, {3, 0});
  m.init_i64("ends", {2}, {-100, 3});
  m.init_i64("axes", {2}, {0, 1});
  m.init_i64("steps", {2}, {-2, 2});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"sl"});  // rows 3, 1; columns 0, 2: [2,2]
  m.init_i64("rows", {3}, {2, 0, 2});                                  // row 2 twice: its gradient adds up
  m.node("Gather", {"x", "rows"}, {"ga"});                             // [3,3]
  m.init_i64("cols", {2, 2}, {1, 1, 0, 1});
  pb::Node& ge = m.node("GatherElements", {"sl", "cols"}, {"ge"});     // [2,2]
  m.mb.attr_int(ge, "axis", 1);
  m.init_i64("reps", {2}, {2, 1});
  m.node("Tile", {"ge", "reps"}, {"ti"});                              // [4,2]
  m.init_i64("pads", {4}, {1, 0, 0, 2});
  m.node("Pad", {"ti", "pads", "cv"}, {"pc"});                         // constant cv: [5,4]
  pb::Node& pr = m.node("Pad", {"ga", "pads"}, {"pr"});               // reflect: [4,5]
  m.mb.attr(pr, "mode", pb::AttrType::String).s = m.mb.arena.save("reflect");
  m.node("ReduceSumSquare", {"pc"}, {"a1"});
  m.node("ReduceSumSquare", {"pr"}, {"a2"});
  m.node("Add", {"a1", "a2"}, {"y"});
  m.gradient({"x", "cv"}, {}, "y");
  Session s = m.session();
  expect_matches_finite_differences(s, random_feeds(m, 11), {"x", "cv"});
}

TEST(Gradient, IntegerPathsCarryNoGradient) {  // Shape -> Reshape target, Cast to int and back
  GradModel m;
  m.in("x", {2, 3});
  m.node("Shape", {"x"}, {"shp"});
  m.node("Exp", {"x"}, {"e"});
  m.node("Reshape", {"e", "shp"}, {"r"});
  pb::Node& c1 = m.node("Cast", {"x"}, {"xi"});
  m.mb.attr_int(c1, "to", static_cast<int64_t>(D::Int64));
  pb::Node& c2 = m.node("Cast", {"xi"}, {"xf"});
  m.mb.attr_int(c2, "to", static_cast<int64_t>(D::Double));
  m.node("Add", {"r", "xf"}, {"y"});
  m.gradient({"x"}, {}, "y");
  Session s = m.session();
  auto feeds = random_feeds(m, 7);
  auto out = s.run(feeds);
  const auto x = ops::read_doubles(feeds["x"].tensor), g = ops::read_doubles(out[1].second.tensor);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(g[i], std::exp(x[i]), 1e-12);
}

TEST(Gradient, AtGivenValuesOfIntermediateAndNonDifferentiatedTensors) {
  // h = x * 2 is named in xs: y's gradient w.r.t. h is evaluated at the Gradient node's input hv, not at x * 2;
  // zs names w, whose value comes from the input wv.
  GradModel m;
  m.in("x", {3}).in("w", {3}).in("hv", {3}).in("wv", {3});
  m.init_f64("two", {}, {2.0});
  m.node("Mul", {"x", "two"}, {"h"});
  m.node("Mul", {"h", "h"}, {"hh"});
  m.node("Mul", {"hh", "w"}, {"y"});
  m.gradient({"h"}, {"w"}, "y", {"hv", "wv"}, {"dh"});
  Session s = m.session();
  auto feeds = random_feeds(m, 8);
  auto out = s.run(feeds);
  const auto hv = ops::read_doubles(feeds["hv"].tensor), wv = ops::read_doubles(feeds["wv"].tensor);
  const auto dh = ops::read_doubles(out[1].second.tensor);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(dh[i], 2 * hv[i] * wv[i], 1e-12);
}

TEST(Gradient, FloatTensorsGiveFloatGradients) {
  GradModel m;
  m.dtype = D::Float;
  m.in("a", {2});
  m.node("Mul", {"a", "a"}, {"y"});
  m.gradient({"a"}, {}, "y");
  Session s = m.session();
  auto out = s.run({{"a", Datum::of(make_tensor<float>(D::Float, {2}, {1.5f, -2.0f}))}});
  ASSERT_EQ(out[1].second.tensor.dtype(), D::Float);
  EXPECT_EQ(values<float>(out[1].second), (std::vector<float>{3.0f, -4.0f}));
}

TEST(Gradient, UnreachedXsGetZerosAndYInXsGetsOnes) {
  GradModel m;
  m.in("a", {2}).in("b", {2});
  m.node("Exp", {"a"}, {"y"});
  m.gradient({"a", "b"}, {}, "y");
  Session s = m.session();
  auto feeds = random_feeds(m, 9);
  auto out = s.run(feeds);
  EXPECT_EQ(values<double>(out[2].second), (std::vector<double>{0, 0}));
  GradModel m2;
  m2.in("a", {2});
  m2.node("Exp", {"a"}, {"e"});
  m2.gradient({"a"}, {}, "a");
  Session s2 = m2.session();
  auto out2 = s2.run({{"a", feeds["a"]}});
  EXPECT_EQ(values<double>(out2[1].second), (std::vector<double>{1, 1}));
}

void expect_session_error(GradModel& m, const std::string& text) {
  try {
    Session s = m.session();
    s.run(random_feeds(m, 10));
    ADD_FAILURE() << "expected an error containing: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(Gradient, Errors) {
  {
    GradModel m;  // an op without a rule on the path
    m.in("a", {2}).in("b", {2});
    m.node("Max", {"a", "b"}, {"y"}).name = m.mb.arena.save("the_max");
    m.gradient({"a", "b"}, {}, "y");
    expect_session_error(m, "node 'the_max' (Max) lies on the path from xs to y, and onyx has no gradient rule for Max");
  }
  {
    GradModel m;  // y depends on an input named neither in xs nor in zs
    m.in("a", {2}).in("b", {2});
    m.node("Mul", {"a", "b"}, {"y"});
    m.gradient({"a"}, {}, "y");
    expect_session_error(m, "y depends on 'b', which is neither in xs nor in zs (a graph input)");
  }
  {
    GradModel m;  // inputs do not match xs + zs
    m.in("a", {2}).in("b", {2});
    m.node("Mul", {"a", "b"}, {"y"});
    m.gradient({"a"}, {"b"}, "y", {"a"}, {"da"});
    expect_session_error(m, "takes one input per name of xs and zs (1 + 1), the node has 1");
  }
  {
    GradModel m;  // xs names an unknown value
    m.in("a", {2});
    m.node("Exp", {"a"}, {"y"});
    m.gradient({"nope"}, {}, "y", {"a"}, {"da"});
    expect_session_error(m, "attribute 'xs' names 'nope', which is not a value of the graph");
  }
  {
    GradModel m;  // a node with a subgraph in the differentiated part
    m.in("a", {2});
    ModelBuilder& mb = m.mb;
    pb::Graph body;
    mb.node(body, "Identity", {"a"}, {"t"});
    mb.output(body, "t");
    pb::Graph other = body;
    pb::Node& cond_node = m.node("Constant", {}, {"cond"});
    pb::Tensor& ct = mb.attr(cond_node, "value", pb::AttrType::Tensor).t.emplace();
    ct.data_type = static_cast<int32_t>(D::Bool);
    ct.int32_data = {1};
    pb::Node& iff = m.node("If", {"cond"}, {"y"});
    iff.name = mb.arena.save("branch");
    mb.attr_graph(iff, "then_branch", body);
    mb.attr_graph(iff, "else_branch", other);
    m.gradient({"a"}, {}, "y");
    expect_session_error(m, "node 'branch' (If) lies between xs and y and has a subgraph");
  }
}

}  // namespace
}  // namespace onyx
