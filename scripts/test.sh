#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit tests, the sanitized unit tests, and the round-trip
# of every test model through onnx's own reader). This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j2
