// One session run from several threads at once: oneDNN kernels (convolutions, Winograd included, pools, matrix
// products) give each run the result a lone run gives. oneDNN's own scratchpad is shared by every primitive on
// a build without concurrent execution, so kernels hand it memory of their own.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(ConcurrentRuns, OneDnnKernelsGiveEachRunItsOwnResult) {
  GraphSpec g(17);
  const std::vector<int64_t> pads1{1, 1, 1, 1};
  g.input("x", DataType::Float, {1, 16, 28, 28}).random("w1", {32, 16, 3, 3}).random("b1", {32});
  g.random("w2", {32, 32, 3, 3}).random("w3", {16, 32, 1, 1}).random("fc", {16, 24});
  g.node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", pads1}})
      .node("Relu", {"c1"}, {"r1"})
      .node("Conv", {"r1", "w2"}, {"c2"}, {{"pads", pads1}})
      .node("Add", {"c2", "r1"}, {"s2"})
      .node("MaxPool", {"s2"}, {"p2"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Conv", {"p2", "w3"}, {"c3"})
      .node("GlobalAveragePool", {"c3"}, {"g3"})
      .node("Flatten", {"g3"}, {"f3"})
      .node("MatMul", {"f3", "fc"}, {"y"})
      .output("y");
  for (int level : {1, 3}) {
    SessionOptions o;
    o.optimization_level = level;
    o.threads = 1;
    Session s = Session::from_bytes(g.bytes(), o);
    std::vector<std::map<std::string, Datum>> feeds;
    std::vector<std::vector<std::pair<std::string, Datum>>> want;
    for (uint32_t seed = 0; seed < 4; ++seed) {
      feeds.push_back(random_feeds(s, seed));
      want.push_back(s.run(feeds.back()));
    }
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 150; ++i) {
          const size_t k = static_cast<size_t>(i + t) % feeds.size();
          auto got = s.run(feeds[k]);
          if (got[0].second.tensor.bytes() != want[k][0].second.tensor.bytes()) ++mismatches;
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(mismatches.load(), 0) << "level " << level;
  }
}

}  // namespace
}  // namespace onyx
