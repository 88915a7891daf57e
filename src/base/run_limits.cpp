#include "base/run_limits.hpp"

#include <omp.h>

#include "base/error.hpp"

namespace onyx {

namespace {
thread_local const RunLimits* current = nullptr;
}

const RunLimits* run_limits() { return current; }

const RunLimits* set_run_limits(const RunLimits* limits) {
  const RunLimits* was = current;
  current = limits;
  return was;
}

void check_run_limits_outside_parallel(const char* where) {
  if (const RunLimits* l = current; l && !omp_in_parallel()) l->check(where);
}

void RunLimits::check(const char* where) const {
  const char* space = where ? " " : "";
  if (!where) where = "";
  if (terminate && terminate->load(std::memory_order_relaxed))
    throw Error(cat("run terminated by the caller", space, where), ErrorKind::Terminated);
  if (deadline != Clock::time_point::max() && Clock::now() >= deadline)
    throw Error(cat("run stopped at its deadline (timeout of ", timeout_ms, " ms)", space, where), ErrorKind::Deadline);
}

}  // namespace onyx
