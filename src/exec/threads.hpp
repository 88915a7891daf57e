// Intra-op threads. Kernels and oneDNN share one OpenMP team (oneDNN in Debian is built on libgomp), so the two
// never oversubscribe the cores; a session sets the team size for the thread that runs it.
#pragma once
#include <algorithm>
#include <cstdint>

#include <omp.h>

namespace onyx::threads {

// Physical cores of this machine (hyper-threads of one core count once); at least 1.
int physical_cores();

// The team size for parallel regions started by the calling thread (session runs call it first).
inline void use_for_this_thread(int n) { omp_set_num_threads(std::max(1, n)); }
inline int available() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

// Calls f(begin, end) over [0, n) in contiguous chunks, one per thread; stays on the calling thread when the
// work is small (fewer than 2 * grain items), since waking threads costs more than it saves.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  int64_t teams = std::min<int64_t>(available(), grain > 0 ? n / grain : n);
  if (teams <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(teams))
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (begin < end) f(begin, end);
  }
}

}  // namespace onyx::threads
