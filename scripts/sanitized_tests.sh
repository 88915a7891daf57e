#!/usr/bin/env bash
# Runs one area of the unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer by
# scripts/build_sanitized.sh:  sanitized_tests.sh BUILD_DIR AREA
# AREA is a test folder (format, ir, check, exec, kernels, ops, opt) or capi (the C API programs). The ctest
# entries sanitized_AREA of the main build run this.
set -euo pipefail
dir=$1
area=$2
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
need() {
  if [ ! -x "$1" ]; then
    echo "sanitized_tests: $1 is not built; build it with scripts/build_sanitized.sh" >&2
    exit 1
  fi
}
if [ "$area" = capi ]; then
  need "$dir/tests/capi/onyx_capi_model"
  need "$dir/tests/capi/onyx_c_api_test"
  model=$(mktemp --suffix=.onnx)
  trap 'rm -f "$model"' EXIT
  "$dir/tests/capi/onyx_capi_model" "$model"
  "$dir/tests/capi/onyx_c_api_test" "$model"
else
  need "$dir/onyx_${area}_tests"
  "$dir/onyx_${area}_tests"
fi
