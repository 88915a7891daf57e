#!/usr/bin/env bash
# Builds the unit tests and the C API test with AddressSanitizer + UndefinedBehaviorSanitizer in build-sanitize/
# and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DONYX_SANITIZE=ON >/dev/null
ninja -C build-sanitize onyx_tests onyx_cli onyx_c_api_test onyx_capi_model
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ONYX_CLI="$PWD/build-sanitize/onyx" build-sanitize/onyx_tests
build-sanitize/tests/capi/onyx_capi_model build-sanitize/tests/capi/capi_test.onnx
build-sanitize/tests/capi/onyx_c_api_test build-sanitize/tests/capi/capi_test.onnx
