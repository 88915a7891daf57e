#!/usr/bin/env bash
# Builds the unit tests of each area and the C API programs with AddressSanitizer + UndefinedBehaviorSanitizer in
# build-sanitize/ (Debug, clang); the ctest entries sanitized_* of build/ run them. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# clang (scripts/setup.sh installs it) compiles this build in about half of gcc's time: its unoptimized front end
# and instrumentation are faster. gcc where clang is missing; a folder configured with the other compiler starts over.
cc=gcc cxx=g++
if command -v clang >/dev/null && command -v clang++ >/dev/null; then
  cc=clang cxx=clang++
fi
if [ -f build-sanitize/CMakeCache.txt ] &&
   ! grep -qx "CMAKE_CXX_COMPILER:FILEPATH=$(command -v $cxx)" build-sanitize/CMakeCache.txt; then
  rm -rf build-sanitize
fi
CC=$cc CXX=$cxx cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DONYX_SANITIZE=ON -DONYX_PYTHON=OFF \
  -DONYX_SERVE_SANITIZED=ON "$@" >/dev/null
ninja -C build-sanitize sanitized_tests
