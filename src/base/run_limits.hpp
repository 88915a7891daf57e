// The limits of the run on the calling thread: its deadline and its caller's terminate flag. The executor checks
// them before every node and every subgraph run (each Loop or Scan iteration); kernels that can run long on one
// node (a huge trip count, a reference loop over a large space) check them at their block boundaries, so a run
// past its deadline ends within milliseconds, with an error, wherever it is.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace onyx {

struct RunLimits {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline = Clock::time_point::max();
  int64_t timeout_ms = 0;                        // what the deadline came from, for the error; 0: none
  const std::atomic<bool>* terminate = nullptr;  // the caller's flag; once it reads true the run stops

  // Whether the run must stop now (no throw: for code inside parallel regions, which cannot throw).
  bool due() const {
    if (terminate && terminate->load(std::memory_order_relaxed)) return true;
    return deadline != Clock::time_point::max() && Clock::now() >= deadline;
  }
  // Throws the error that says why the run stopped, if it must; `where` says where it stopped.
  void check(const char* where = nullptr) const;
};

// The calling thread's limits (null: none), set by the executor for the run it does on that thread.
const RunLimits* run_limits();
// Sets them and returns the ones they replace.
const RunLimits* set_run_limits(const RunLimits* limits);

// Throws when the calling thread's run must stop; free when the thread has no limits. For kernels' loops.
inline void check_run_limits(const char* where = nullptr) {
  if (const RunLimits* l = run_limits()) l->check(where);
}

// The same for code that may run inside an OpenMP parallel region (a reference kernel called per batch from a
// parallel loop): there it does nothing, as an exception must not leave the region; the check after the region, or
// the next node's, stops the run.
void check_run_limits_outside_parallel(const char* where = nullptr);

// Sets a thread's limits for a scope.
class RunLimitsScope {
 public:
  explicit RunLimitsScope(const RunLimits* limits) : saved_(set_run_limits(limits)) {}
  ~RunLimitsScope() { set_run_limits(saved_); }
  RunLimitsScope(const RunLimitsScope&) = delete;
  RunLimitsScope& operator=(const RunLimitsScope&) = delete;

 private:
  const RunLimits* saved_;
};

}  // namespace onyx
