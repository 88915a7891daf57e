#include "kernels/fma_peak.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "kernels/elementwise.hpp"

namespace onyx::kernels {

double measure_fma_peak(int threads, double seconds) {
  const Isa isa = best_isa();
  const bool avx512 = isa == Isa::Avx512, avx2 = isa == Isa::Avx2;
  if (!avx512 && !avx2) return 0;  // no FMA instructions: no peak to compare with
  const double flops_per_iteration = 12.0 * (avx512 ? 16 : 8) * 2;
  auto chains = [&](long n) { return avx512 ? fma_chains_avx512(n) : fma_chains_avx2(n); };
  // Size the loop on one thread (~10 ms), then time every thread running it together; the best of three rounds.
  using Clock = std::chrono::steady_clock;
  long iterations = 1 << 16;
  volatile float sink = 0;
  for (;;) {
    const auto t0 = Clock::now();
    sink = sink + chains(iterations);
    if (std::chrono::duration<double>(Clock::now() - t0).count() > 0.01 || iterations > (1L << 34)) break;
    iterations *= 2;
  }
  const int team = std::max(1, threads);
  const long per_round = std::max(1L, static_cast<long>(static_cast<double>(iterations) * seconds / 0.03 / 3));
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(team)
    {
      const float r = chains(per_round);
#pragma omp critical
      sink = sink + r;
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, flops_per_iteration * static_cast<double>(per_round) * team / s);
  }
  return best;
}

}  // namespace onyx::kernels
