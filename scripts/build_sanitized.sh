#!/usr/bin/env bash
# Builds the unit tests of each area and the C API programs with AddressSanitizer + UndefinedBehaviorSanitizer in
# build-sanitize/ (Debug); the ctest entries sanitized_* of build/ run them. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DONYX_SANITIZE=ON -DONYX_PYTHON=OFF "$@" >/dev/null
ninja -C build-sanitize sanitized_tests
