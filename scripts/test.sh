#!/usr/bin/env bash
# Installs what is missing, builds (build/, and the sanitized unit tests in build-sanitize/), and runs every test:
# the unit tests, the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, the C API programs, the
# conformance suites, the Python package's tests and the round trip of every test model through onnx's own
# reader. This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
scripts/build_sanitized.sh
ctest --test-dir build --output-on-failure -j2
