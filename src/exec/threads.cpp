#include "exec/threads.hpp"

#include <fstream>
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

}  // namespace onyx::threads
