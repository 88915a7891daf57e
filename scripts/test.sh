#!/usr/bin/env bash
# Installs what is missing, builds (build/, and the sanitized unit tests in build-sanitize/), and runs every test:
# the unit tests, the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, the C API programs, the
# conformance suites, the Python package's tests and the round trip of every test model through onnx's own
# reader. This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests of data that setup installs fail instead of skipping when it is missing (tests/test_data.hpp).
export CI="${CI:-1}"
# Each step's wall time is printed as it ends, so that CI's log shows where its time goes.
step() {
  local start=$SECONDS
  "$@"
  echo "test.sh: '$*' took $((SECONDS - start)) s"
}
step scripts/setup.sh
step scripts/build.sh
step ninja -C build  # the tests
step scripts/build_sanitized.sh
echo "test.sh: building took $SECONDS s"
ctest --test-dir build --output-on-failure -j2
