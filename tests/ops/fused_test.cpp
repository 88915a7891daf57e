// ai.onyx fused ops: results equal to the standard ops they stand for, clear errors for bad attributes, and
// models using them load again through the checker.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

std::vector<Datum> run_plain(const std::string& bytes, const std::map<std::string, Datum>& feeds) {
  std::vector<Datum> out;
  for (auto& [name, d] : session_at(bytes, 0).run(feeds)) out.push_back(std::move(d));
  return out;
}

TEST(FusedOps, FusedConvEqualsConvThenActivation) {
  GraphSpec ref(17), fused(17);
  for (GraphSpec* g : {&ref, &fused}) g->input("x", DataType::Float, {1, 2, 4, 4}).random("w", {2, 2, 3, 3});
  ref.node("Conv", {"x", "w"}, {"c"}, {{"group", 1}}).node("LeakyRelu", {"c"}, {"y"}, {{"alpha", 0.3f}}).output("y");
  fused.import("ai.onyx", 1)
      .node("FusedConv", {"x", "w"}, {"y"},
            {{"group", 1}, {"activation", "LeakyRelu"}, {"activation_params", std::vector<float>{0.3f}}}, "ai.onyx")
      .output("y");
  Session s = session_at(ref.bytes(), 0);
  auto feeds = random_feeds(s);
  auto want = run_plain(ref.bytes(), feeds);
  auto got = run_plain(fused.bytes(), feeds);
  EXPECT_FALSE(compare_datums(want[0], got[0], 0, 0));  // the same kernels: the same bits
  EXPECT_EQ(session_at(fused.bytes(), 0).outputs()[0].type.to_string_with_shape(), "float[1,2,2,2]");
}

TEST(FusedOps, AliasesEqualTheStandardOps) {
  GraphSpec ref(20), fused(17);
  ref.input("x", DataType::Float, {3, 4}).node("Gelu", {"x"}, {"y"}, {{"approximate", "tanh"}}).output("y");
  fused.import("ai.onyx", 1)
      .input("x", DataType::Float, {3, 4})
      .node("Gelu", {"x"}, {"y"}, {{"approximate", "tanh"}}, "ai.onyx")
      .output("y");
  auto feeds = random_feeds(session_at(ref.bytes(), 0));
  EXPECT_FALSE(compare_datums(run_plain(ref.bytes(), feeds)[0], run_plain(fused.bytes(), feeds)[0], 0, 0));

  GraphSpec ln(13);
  ln.import("ai.onyx", 1)
      .input("x", DataType::Float, {2, 6})
      .floats("s", {6}, {1, 2, 3, 4, 5, 6})
      .node("LayerNormalization", {"x", "s"}, {"y"}, {{"epsilon", 1e-3f}}, "ai.onyx")
      .output("y");
  EXPECT_EQ(session_at(ln.bytes(), 0).outputs()[0].type.to_string_with_shape(), "float[2,6]");
  auto out = run_plain(ln.bytes(), random_feeds(session_at(ln.bytes(), 0)));
  ASSERT_TRUE(out[0].is_tensor());
  double mean = 0;
  for (int i = 0; i < 6; ++i) mean += out[0].tensor.data<float>()[i] / (i + 1);
  EXPECT_NEAR(mean / 6, 0.0, 1e-5);  // normalized, then scaled per feature
}

TEST(FusedOps, BadAttributesAreClearErrors) {
  auto expect_error = [](const std::string& activation, std::vector<float> params, const std::string& fragment) {
    GraphSpec g(17);
    g.import("ai.onyx", 1).input("x", DataType::Float, {1, 1, 3, 3}).random("w", {1, 1, 1, 1});
    g.node("FusedConv", {"x", "w"}, {"y"}, {{"activation", activation.c_str()}, {"activation_params", params}}, "ai.onyx")
        .output("y");
    try {
      session_at(g.bytes(), 0);
      ADD_FAILURE() << "expected an error containing " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("FusedConv"), std::string::npos) << e.what();
    }
  };
  expect_error("Softmax", {}, "activation 'Softmax' is not one the fused ops apply");
  expect_error("LeakyRelu", {0.1f, 0.2f}, "activation_params has 2 values; LeakyRelu takes 1");
}

TEST(FusedOps, NeedTheDomainImported) {
  GraphSpec g(17);
  g.input("x", DataType::Float, {2}).node("Gelu", {"x"}, {"y"}, {}, "ai.onyx").output("y");
  try {
    session_at(g.bytes(), 0);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ai.onyx"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
