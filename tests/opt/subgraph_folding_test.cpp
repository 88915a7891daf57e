#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/graph_builder.hpp"
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::ModelBuilder;

// A merged decoder's shape: the work sits in an If on a fed flag, and its branches dequantize and transpose a
// weight of the outer graph on every run unless the optimizer folds inside the branches.
std::string decoder_like_model() {
  ModelBuilder b;
  pb::Graph g;
  b.input(g, "flag", b.tensor_t(DataType::Bool, std::vector<int64_t>{}));
  b.input(g, "X", b.tensor_t(DataType::Float, std::vector<int64_t>{2, 3}));
  b.output(g, "Y", b.tensor_t(DataType::Float, std::vector<int64_t>{2, 4}));
  for (const auto& [name, dt, dims, bytes] :
       std::vector<std::tuple<std::string, DataType, std::vector<int64_t>, std::vector<uint8_t>>>{
           {"Wq", DataType::UInt8, {4, 3}, {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110}},
           {"zp", DataType::UInt8, {}, {50}}}) {
    pb::Tensor& t = g.initializer.emplace_back();
    t.name = b.arena.save(name);
    t.data_type = static_cast<int32_t>(dt);
    t.dims = dims;
    t.raw_data = b.arena.save(std::string(bytes.begin(), bytes.end()));
  }
  pb::Tensor& scale = g.initializer.emplace_back();
  scale.name = b.arena.save("scale");
  scale.data_type = static_cast<int32_t>(DataType::Float);
  scale.float_data = {0.5f};
  pb::Node& if_node = b.node(g, "If", {"flag"}, {"Y"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    pb::Graph body;
    const std::string out = std::string(branch) + "_y";
    b.output(body, out, b.tensor_t(DataType::Float, std::vector<int64_t>{2, 4}));
    b.node(body, "DequantizeLinear", {"Wq", "scale", "zp"}, {"W"});
    b.attr_ints(b.node(body, "Transpose", {"W"}, {"Wt"}), "perm", {1, 0});
    b.node(body, "MatMul", {"X", "Wt"}, {"P"});
    b.node(body, branch[0] == 't' ? "Relu" : "Neg", {"P"}, {out});
    b.attr_graph(if_node, branch, std::move(body));
  }
  pb::Model m;
  m.ir_version = 8;
  m.opset_import.push_back({b.arena.save(""), 17, {}});
  g.name = b.arena.save("main");
  m.graph = std::move(g);
  return pb::serialize_model(m);
}

std::vector<std::string> branch_ops(const Model& m, const std::string& branch) {
  std::vector<std::string> ops;
  for (const auto& n : m.graph->nodes)
    for (const Attribute& a : n->attributes)
      if (a.name == branch && a.g)
        for (const auto& inner : a.g->nodes) ops.push_back(inner->op_type);
  return ops;
}

TEST(SubgraphFolding, BranchesFoldWhatReadsOnlyOuterConstants) {
  Model m = testing::load_ir(decoder_like_model());
  testing::optimize_ir(m, 1);
  EXPECT_EQ(branch_ops(m, "then_branch"), (std::vector<std::string>{"MatMul", "Relu"}));
  EXPECT_EQ(branch_ops(m, "else_branch"), (std::vector<std::string>{"MatMul", "Neg"}));
  // Level 0 leaves the branches as they are.
  Model untouched = testing::load_ir(decoder_like_model());
  testing::optimize_ir(untouched, 0);
  EXPECT_EQ(branch_ops(untouched, "then_branch").size(), 4u);
  // The optimized model checks, and computes what the unoptimized one does on either branch.
  EXPECT_TRUE(check::check_model(pb::load_model_bytes(testing::serialize_ir(m), "folded.onnx")).empty());
  for (bool flag : {true, false}) {
    Tensor f = Tensor::allocate(DataType::Bool, {});
    f.mutable_data<bool>()[0] = flag;
    const std::map<std::string, Datum> feeds = {
        {"flag", Datum::of(f)},
        {"X", Datum::of(testing::make_tensor<float>(DataType::Float, {2, 3}, {1, -2, 3, 0.5f, 4, -1}))}};
    const auto want = testing::session_at(decoder_like_model(), 0).run(feeds);
    const auto got = testing::session_at(decoder_like_model(), 1).run(feeds);
    EXPECT_EQ(testing::values_of<float>(got.at(0).second.tensor), testing::values_of<float>(want.at(0).second.tensor));
  }
}

// From level 2 the branches get the fusions too (a merged decoder's layers are all in its branches), computing the
// same values.
TEST(SubgraphFolding, BranchesFuseFromLevel2) {
  for (int level : {2, 3}) {
    Model m = testing::load_ir(decoder_like_model());
    testing::optimize_ir(m, level);
    EXPECT_EQ(branch_ops(m, "then_branch"), (std::vector<std::string>{"FusedMatMul"})) << "level " << level;
    EXPECT_EQ(branch_ops(m, "else_branch"), (std::vector<std::string>{"MatMul", "Neg"})) << "level " << level;
    EXPECT_TRUE(check::check_model(pb::load_model_bytes(testing::serialize_ir(m), "fused.onnx")).empty());
  }
  for (bool flag : {true, false}) {
    Tensor f = Tensor::allocate(DataType::Bool, {});
    f.mutable_data<bool>()[0] = flag;
    const std::map<std::string, Datum> feeds = {
        {"flag", Datum::of(f)},
        {"X", Datum::of(testing::make_tensor<float>(DataType::Float, {2, 3}, {1, -2, 3, 0.5f, 4, -1}))}};
    const auto want = testing::session_at(decoder_like_model(), 0).run(feeds);
    const auto got = testing::session_at(decoder_like_model(), 2).run(feeds);
    EXPECT_EQ(testing::values_of<float>(got.at(0).second.tensor), testing::values_of<float>(want.at(0).second.tensor));
  }
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
