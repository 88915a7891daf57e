// Intra-op threads: oneDNN (built on libgomp in Debian) runs its kernels on the calling thread's OpenMP team, so
// onyx kernels that thread must use OpenMP too, never a pool of their own; a session sets the team size for the
// thread that runs it.
#pragma once
#include <algorithm>

#include <omp.h>

namespace onyx::threads {

// Physical cores of this machine (hyper-threads of one core count once); at least 1.
int physical_cores();

// The team size for parallel regions started by the calling thread (session runs call it first).
inline void use_for_this_thread(int n) { omp_set_num_threads(std::max(1, n)); }

}  // namespace onyx::threads
