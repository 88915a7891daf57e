// One session run from several threads at once: oneDNN kernels (convolutions, Winograd included, pools, matrix
// products) give each run the result a lone run gives. oneDNN's own scratchpad is shared by every primitive on
// a build without concurrent execution, so kernels hand it memory of their own.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "exec/concurrency_models.hpp"
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using namespace testing;

TEST(ConcurrentRuns, OneDnnKernelsGiveEachRunItsOwnResult) {
  for (int level : {1, 3}) {
    SessionOptions o;
    o.optimization_level = level;
    o.threads = 1;
    Session s = Session::from_bytes(convolutional_model(), o);
    std::vector<std::map<std::string, Datum>> feeds;
    std::vector<std::vector<std::pair<std::string, Datum>>> want;
    for (uint32_t seed = 0; seed < 4; ++seed) {
      feeds.push_back(random_feeds(s, seed, 1));
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
