#!/usr/bin/env bash
# Installs what is missing, builds (build/, and the sanitized unit tests in build-sanitize/), and runs every test:
# the unit tests, the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, the C API programs, the
# conformance suites, the Python package's tests and the round trip of every test model through onnx's own
# reader. This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests of data that setup installs fail instead of skipping when it is missing (tests/test_data.hpp).
export CI="${CI:-1}"
scripts/setup.sh
scripts/build.sh
ninja -C build  # the tests
scripts/build_sanitized.sh
ctest --test-dir build --output-on-failure -j2
