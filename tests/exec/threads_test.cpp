// Core leases (exec/threads.hpp): concurrent runs share the physical cores instead of each starting a full team.
#include "exec/threads.hpp"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"

#include <gtest/gtest.h>

namespace onyx {
namespace {

TEST(CoreLease, ARunTakesAtMostTheFreeCores) {
  const int cores = threads::physical_cores();
  threads::CoreLease all(cores * 4, nullptr);
  EXPECT_EQ(all.team(), cores);
  // A run inside this run, on the same thread, shares the lease instead of waiting for itself.
  threads::CoreLease nested(2, nullptr);
  EXPECT_GE(nested.team(), 1);

  // Another thread waits for a core; with a deadline it gives up with the run's deadline error.
  std::string error;
  std::thread other([&] {
    RunLimits limits;
    limits.timeout_ms = 20;
    limits.deadline = RunLimits::Clock::now() + std::chrono::milliseconds(20);
    try {
      threads::CoreLease waiting(1, &limits);
      error = "(no error)";
    } catch (const Error& e) {
      error = e.what();
    }
  });
  other.join();
  EXPECT_NE(error.find("deadline (timeout of 20 ms) while waiting for a free core"), std::string::npos) << error;
}

TEST(CoreLease, ConcurrentRunsNeverHoldMoreThreadsThanCores) {
  const int cores = threads::physical_cores();
  std::atomic<int> in_use{0}, most{0}, leases{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3 * cores + 2; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        threads::CoreLease lease(1 + (t + i) % 3, nullptr);
        const int now = in_use.fetch_add(lease.team()) + lease.team();
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        in_use.fetch_sub(lease.team());
        leases.fetch_add(1);
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(leases.load(), 50 * (3 * cores + 2));  // every caller got its turn
  EXPECT_LE(most.load(), cores);
  EXPECT_GE(most.load(), 1);
  // All cores are free again.
  threads::CoreLease all(cores, nullptr);
  EXPECT_EQ(all.team(), cores);
}

}  // namespace
}  // namespace onyx
