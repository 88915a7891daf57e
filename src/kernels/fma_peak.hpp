// The machine's measured float32 multiply-add peak: what benchmarks compare the achieved rate of matrix products
// with. Independent chains of fused multiply-adds at the widest vector width the CPU has (AVX-512, AVX2 + FMA or
// SSE), timed on `threads` OpenMP threads at once.
#pragma once

namespace onyx::kernels {

// Floating-point operations per second (2 per multiply-add) over all threads, measured for about `seconds`.
double measure_fma_peak(int threads, double seconds = 0.2);

// The loops, one per instruction set (fma_peak_avx512.cpp, fma_peak_avx2.cpp): `iterations` rounds of 12
// independent multiply-adds of a full vector; returns a value that depends on every result.
float fma_chains_avx512(long iterations);
float fma_chains_avx2(long iterations);

}  // namespace onyx::kernels
