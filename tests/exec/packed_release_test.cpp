// Sessions release the memory of constants that every reader packed into its own layout at creation, and only
// those: results stay those of an unoptimized session, and a constant another node still reads keeps its data.
#include <gtest/gtest.h>

#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

// The folded constant of `dims` (an owned tensor; 64 KiB of floats or more: page-aligned buffers).
const Tensor& folded(const Session& s, const std::vector<int64_t>& dims = {128, 128}) {
  for (const auto& [name, t] : s.model().graph->initializers)
    if (t.dims() == dims && !t.is_view()) return t;
  throw std::runtime_error("no folded initializer of those dims");
}

bool all_zero(const Tensor& t) {
  for (uint64_t i = 0; i < t.element_count(); ++i)
    if (t.data<float>()[i] != 0.0f) return false;
  return true;
}

TEST(PackedRelease, ConstantsOnlyPackingKernelsReadAreReleased) {
  GraphSpec g(13);
  g.input("a", DataType::Float, {8, 128}).random("b1", {128, 128}).random("b2", {128, 128}, 0.5f, 1.0f);
  g.node("Add", {"b1", "b2"}, {"b"}).node("MatMul", {"a", "b"}, {"y"}).output("y");
  Session s = session_at(g.bytes(), 1);
  EXPECT_TRUE(all_zero(folded(s))) << "the packed B kept its memory";
  expect_same_outputs(g.bytes());
  // The packed copy computes: a second run gives the first run's result.
  auto feeds = random_feeds(s, 3);
  auto first = s.run(feeds), second = s.run(feeds);
  EXPECT_FALSE(compare_datums(first[0].second, second[0].second, 0, 0));
}

// NCHW Conv (levels 1 and 2, FusedConv at 2) packs W at creation for a static input shape too.
TEST(PackedRelease, ConvolutionWeightsPackedAtCreationAreReleased) {
  GraphSpec g(13);
  g.input("x", DataType::Float, {1, 64, 9, 9}).random("w1", {64, 64, 2, 2}).random("w2", {64, 64, 2, 2}, 0.5f, 1.0f);
  g.node("Add", {"w1", "w2"}, {"w"}).node("Conv", {"x", "w"}, {"c"}).node("Relu", {"c"}, {"y"}).output("y");
  for (int level : {1, 2}) {
    Session s = session_at(g.bytes(), level);
    EXPECT_TRUE(all_zero(folded(s, {64, 64, 2, 2}))) << "level " << level;
  }
  expect_same_outputs(g.bytes());
}

TEST(PackedRelease, ConstantsOtherNodesReadKeepTheirData) {
  GraphSpec g(13);
  g.input("a", DataType::Float, {8, 128}).input("c", DataType::Float, {128, 128});
  g.random("b1", {128, 128}).random("b2", {128, 128}, 0.5f, 1.0f);
  // The Add with input c reads B's elements at run time: B stays.
  g.node("Add", {"b1", "b2"}, {"b"}).node("MatMul", {"a", "b"}, {"y"}).node("Add", {"b", "c"}, {"s"});
  g.output("y").output("s");
  Session s = session_at(g.bytes(), 1);
  EXPECT_FALSE(all_zero(folded(s)));
  expect_same_outputs(g.bytes());

  // A dynamic number of rows: the pack is made per shape at run time, from B.
  GraphSpec h(13);
  h.input("a", DataType::Float, {-1, 128}).random("b1", {128, 128}).random("b2", {128, 128}, 0.5f, 1.0f);
  h.node("Add", {"b1", "b2"}, {"b"}).node("MatMul", {"a", "b"}, {"y"}).output("y");
  Session d = session_at(h.bytes(), 1);
  EXPECT_FALSE(all_zero(folded(d)));
}

}  // namespace
}  // namespace onyx
