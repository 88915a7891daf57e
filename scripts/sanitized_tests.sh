#!/usr/bin/env bash
# Builds the unit tests with AddressSanitizer + UndefinedBehaviorSanitizer in build-sanitize/ and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DONYX_SANITIZE=ON >/dev/null
ninja -C build-sanitize onyx_tests onyx_cli
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ONYX_CLI="$PWD/build-sanitize/onyx" build-sanitize/onyx_tests
