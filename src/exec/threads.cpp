#include "exec/threads.hpp"

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace onyx::threads {

int physical_cores() {
  static const int cores = [] {
    // Distinct (package, core) pairs among the online CPUs; sysfs may be missing in containers.
    std::set<std::pair<int, int>> seen;
    for (int cpu = 0; cpu < 4096; ++cpu) {
      std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      std::ifstream core(base + "core_id"), package(base + "physical_package_id");
      int c = 0, p = 0;
      if (!(core >> c) || !(package >> p)) break;
      seen.emplace(p, c);
    }
    int logical = static_cast<int>(std::thread::hardware_concurrency());
    int n = seen.empty() ? logical : static_cast<int>(seen.size());
    // The process may be confined to fewer CPUs than the machine has (cgroups, taskset).
    int allowed = omp_get_num_procs();
    if (allowed > 0) n = std::min(n, allowed);
    return std::max(1, n);
  }();
  return cores;
}

namespace {

struct FreeCores {
  std::mutex mutex;
  std::condition_variable freed;
  int count = physical_cores();
};

FreeCores& free_cores() {
  static FreeCores* cores = new FreeCores;  // never destroyed: runs may end on threads that outlive main
  return *cores;
}

thread_local bool holds_lease = false;

}  // namespace

CoreLease::CoreLease(int wanted, const RunLimits* limits) {
  if (holds_lease) {
    team_ = omp_get_max_threads();
    return;
  }
  FreeCores& cores = free_cores();
  std::unique_lock<std::mutex> lock(cores.mutex);
  while (cores.count == 0) {
    if (limits && limits->due()) {
      lock.unlock();
      limits->check("while waiting for a free core");
      lock.lock();
      continue;  // the caller cleared its terminate flag meanwhile
    }
    // Short waits, so that a deadline or a terminate flag is seen within milliseconds.
    cores.freed.wait_for(lock, std::chrono::milliseconds(2));
  }
  taken_ = std::min(std::max(1, wanted), cores.count);
  cores.count -= taken_;
  team_ = taken_;
  holds_lease = true;
}

CoreLease::~CoreLease() {
  if (taken_ == 0) return;
  holds_lease = false;
  FreeCores& cores = free_cores();
  {
    std::lock_guard<std::mutex> lock(cores.mutex);
    cores.count += taken_;
  }
  cores.freed.notify_all();
}

}  // namespace onyx::threads
