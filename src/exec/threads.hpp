// Intra-op threads: oneDNN (built on libgomp in Debian) runs its kernels on the calling thread's OpenMP team, so
// onyx kernels that thread must use OpenMP too, never a pool of their own; a session sets the team size for the
// thread that runs it.
#pragma once
#include <algorithm>

#include <omp.h>

#include "base/run_limits.hpp"

namespace onyx::threads {

// Physical cores of this machine (hyper-threads of one core count once); at least 1.
int physical_cores();

// The team size for parallel regions started by the calling thread (session runs call it first).
inline void use_for_this_thread(int n) { omp_set_num_threads(std::max(1, n)); }

// A share of the process's physical cores for one run, so that concurrent runs (of one session or of several)
// never start more threads than there are cores: the run takes as many of the free cores as it wants, at least
// one, waiting while none is free (until its deadline or terminate flag, when `limits` has them), and gives them
// back when the lease ends. A run inside a run on the same thread (a nested session) shares its caller's lease.
class CoreLease {
 public:
  CoreLease(int wanted, const RunLimits* limits);
  ~CoreLease();
  CoreLease(const CoreLease&) = delete;
  CoreLease& operator=(const CoreLease&) = delete;
  // The team size the run may use.
  int team() const { return team_; }

 private:
  int taken_ = 0;  // 0: nested in the lease the thread already holds
  int team_ = 1;
};

}  // namespace onyx::threads
