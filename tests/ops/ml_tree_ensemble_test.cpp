#include <gtest/gtest.h>

#include <cmath>

#include "ml_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

// Tree 0: x0 <= 0.5 ? leaf 1 : leaf 2. Tree 1: a single leaf.
MlNode legacy_regressor(int64_t opset, Tensor x) {
  MlNode n("TreeEnsembleRegressor", opset);
  n.input("X", std::move(x))
      .attr_ints("nodes_treeids", {0, 0, 0, 1})
      .attr_ints("nodes_nodeids", {0, 1, 2, 0})
      .attr_ints("nodes_featureids", {0, 0, 0, 0})
      .attr_floats("nodes_values", {0.5f, 0, 0, 0})
      .attr_strings("nodes_modes", {"BRANCH_LEQ", "LEAF", "LEAF", "LEAF"})
      .attr_ints("nodes_truenodeids", {1, 0, 0, 0})
      .attr_ints("nodes_falsenodeids", {2, 0, 0, 0})
      .attr_ints("target_treeids", {0, 0, 1})
      .attr_ints("target_nodeids", {1, 2, 0})
      .attr_ints("target_ids", {0, 0, 0})
      .attr_floats("target_weights", {1, 2, 10})
      .attr_int("n_targets", 1);
  return n;
}

TEST(TreeEnsembleRegressor, SumAverageAndBase_Opset1And3) {
  auto sum = legacy_regressor(1, f32({3, 1}, {0.2f, 0.8f, NAN})).run();
  EXPECT_EQ(sum[0].tensor.dims(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(vals<float>(sum[0]), (std::vector<float>{11, 12, 12}));  // NaN fails <= and takes the false branch
  auto avg = legacy_regressor(3, f32({2, 1}, {0.2f, 0.8f}))
                 .attr_string("aggregate_function", "AVERAGE")
                 .attr_tensor("base_values_as_tensor", f64({1}, {100}))
                 .run();
  EXPECT_EQ(vals<float>(avg[0]), (std::vector<float>{105.5f, 106}));
  auto mx = legacy_regressor(3, f64({1, 1}, {0.2})).attr_string("aggregate_function", "MAX").run();
  EXPECT_EQ(vals<float>(mx[0]), (std::vector<float>{10}));
}

TEST(TreeEnsembleRegressor, MissingValueTracksTrue) {
  auto out = legacy_regressor(3, f32({1, 1}, {NAN})).attr_ints("nodes_missing_value_tracks_true", {1, 0, 0, 0}).run();
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{11}));
}

TEST(TreeEnsembleRegressor, ValuesAndTensorTogetherAreAnError) {
  std::string e = error_of(legacy_regressor(3, f32({1, 1}, {0})).attr_tensor("nodes_values_as_tensor", f64({4}, {0, 0, 0, 0})));
  EXPECT_NE(e.find("only one of the attributes 'nodes_values'"), std::string::npos) << e;
}

TEST(TreeEnsembleRegressor, DeprecatedAtOpset5) {
  std::string e = error_of(legacy_regressor(5, f32({1, 1}, {0})));
  EXPECT_NE(e.find("deprecated since ai.onnx.ml opset 5"), std::string::npos) << e;
}

TEST(TreeEnsembleRegressor, MissingChildIsAnError) {
  std::string e = error_of(legacy_regressor(1, f32({1, 1}, {0})).attr_ints("nodes_truenodeids", {7, 0, 0, 0}));
  EXPECT_NE(e.find("points to node 7"), std::string::npos) << e;
}

MlNode legacy_classifier(std::vector<int64_t> class_ids, std::vector<float> weights) {
  MlNode n("TreeEnsembleClassifier", 3);
  n.attr_ints("nodes_treeids", {0, 0, 0})
      .attr_ints("nodes_nodeids", {0, 1, 2})
      .attr_ints("nodes_featureids", {1, 0, 0})
      .attr_floats("nodes_values", {0.5f, 0, 0})
      .attr_strings("nodes_modes", {"BRANCH_LT", "LEAF", "LEAF"})
      .attr_ints("nodes_truenodeids", {1, 0, 0})
      .attr_ints("nodes_falsenodeids", {2, 0, 0})
      .attr_ints("class_treeids", std::vector<int64_t>(class_ids.size(), 0))
      .attr_ints("class_nodeids", class_ids.size() == 2 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1, 1, 2, 2})
      .attr_ints("class_ids", class_ids)
      .attr_floats("class_weights", weights);
  return n;
}

TEST(TreeEnsembleClassifier, MulticlassScoresAndLabels) {
  auto out = legacy_classifier({0, 1, 1, 2}, {0.25f, 0.75f, 0.1f, 0.9f})
                 .input("X", f32({2, 2}, {0, 0, 0, 1}))
                 .attr_strings("classlabels_strings", {"a", "b", "c"})
                 .outputs(2)
                 .run();
  EXPECT_EQ(out[0].tensor.string_values(), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(vals<float>(out[1]), (std::vector<float>{0.25f, 0.75f, 0, 0, 0.1f, 0.9f}));
}

TEST(TreeEnsembleClassifier, BinaryLogistic) {
  auto out = legacy_classifier({0, 0}, {-1, 1})
                 .input("X", f32({2, 2}, {0, 0, 0, 1}))
                 .attr_ints("classlabels_int64s", {0, 1})
                 .attr_string("post_transform", "LOGISTIC")
                 .outputs(2)
                 .run();
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{0, 1}));
  std::vector<float> z = vals<float>(out[1]);
  ASSERT_EQ(z.size(), 4u);
  EXPECT_NEAR(z[0], 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(z[1], 1 / (1 + std::exp(1.0)), 1e-6);
  EXPECT_NEAR(z[3], 1 / (1 + std::exp(-1.0)), 1e-6);
}

TEST(TreeEnsembleClassifier, FeatureOutOfRangeIsAnError) {
  std::string e = error_of(legacy_classifier({0, 0}, {-1, 1}).outputs(2).input("X", f32({1, 1}, {0})).attr_ints("classlabels_int64s", {0, 1}));
  EXPECT_NE(e.find("the trees read feature 1, the input has 1 features"), std::string::npos) << e;
}

// Two trees: tree 0 is node 0 (x0 <= 1: leaf 0 else node 1), node 1 (x1 in {2, 3}: leaf 1 else leaf 2);
// tree 1 is node 2 whose both branches reach leaf 3.
MlNode v5(Tensor x) {
  MlNode n("TreeEnsemble", 5);
  n.input("X", std::move(x))
      .attr_ints("nodes_featureids", {0, 1, 0})
      .attr_tensor("nodes_splits", f32({3}, {1, 0, 0}))
      .attr_tensor("nodes_modes", make_tensor<uint8_t>(DataType::UInt8, {3}, {0, 6, 0}))
      .attr_ints("nodes_truenodeids", {0, 1, 3})
      .attr_ints("nodes_trueleafs", {1, 1, 1})
      .attr_ints("nodes_falsenodeids", {1, 2, 3})
      .attr_ints("nodes_falseleafs", {0, 1, 1})
      .attr_tensor("membership_values", f32({3}, {2, 3, NAN}))
      .attr_ints("leaf_targetids", {0, 1, 1, 0})
      .attr_tensor("leaf_weights", f32({4}, {1, 10, 20, 100}))
      .attr_ints("tree_roots", {0, 2})
      .attr_int("n_targets", 2);
  return n;
}

TEST(TreeEnsemble, SetMembershipAndDegenerateTree_Opset5) {
  auto out = v5(f32({3, 2}, {0, 0, 5, 3, 5, 4})).run();
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{101, 0, 100, 10, 100, 20}));
  auto d = v5(f64({1, 2}, {0, 0}))
               .attr_tensor("nodes_splits", f64({3}, {1, 0, 0}))
               .attr_tensor("leaf_weights", f64({4}, {1, 10, 20, 100}))
               .attr_int("aggregate_function", 3)
               .run();
  EXPECT_EQ(d[0].tensor.dtype(), DataType::Double);
  EXPECT_EQ(vals<double>(d[0]), (std::vector<double>{100, 0}));
}

TEST(TreeEnsemble, SplitTypeMustMatchInput) {
  std::string e = error_of(v5(f64({1, 2}, {0, 0})));
  EXPECT_NE(e.find("nodes_splits has element type float"), std::string::npos) << e;
}

TEST(TreeEnsemble, CycleIsAnError) {
  std::string e = error_of(v5(f32({1, 2}, {5, 0})).attr_ints("nodes_falsenodeids", {0, 2, 3}));
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
