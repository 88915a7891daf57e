#!/usr/bin/env bash
# Runs the many-threads stress test (tests/exec/threads_stress.cpp) under clang's ThreadSanitizer, in build-tsan/.
#
# usage: scripts/tsan_stress.sh [RUNS]      (runs per thread for the small models; default 100)
#
# What TSan sees: onyx's own code (sessions, plans, memory plans, caches, the executor, its kernels) run from the
# stress test's eight threads, each session with one intra-op thread. What it does not see: code built without
# it, the OpenMP runtime and Debian's oneDNN, so a race inside a oneDNN primitive or between OpenMP worker threads
# goes unreported; with one intra-op thread per session no OpenMP team starts, which also keeps the runtime's
# uninstrumented synchronization from showing as false reports; what those libraries call (the allocator, memset)
# is ignored (scripts/tsan.supp). Light models run when ../shared/onnx-tests/light is there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-100}"
build="$root/build-tsan"
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONYX_PYTHON=OFF \
    -DCMAKE_C_FLAGS="-fsanitize=thread" -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" >/dev/null
fi
ninja -C "$build" onyx_threads_stress
light="$root/../shared/onnx-tests/light"
filter=()
if [[ -d "$light" ]]; then
  export ONYX_LIGHT_MODELS="$light"
else
  filter=(--gtest_filter=-ThreadsStress.LightModels)
fi
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/scripts/tsan.supp" ONYX_STRESS_RUNS="$runs" ONYX_STRESS_SESSION_THREADS=1 \
  "$build/onyx_threads_stress" "${filter[@]}"
