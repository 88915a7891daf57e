#!/usr/bin/env bash
# Runs one area of the unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer by
# scripts/build_sanitized.sh:  sanitized_tests.sh BUILD_DIR AREA
# AREA is a test folder (format, ir, check, exec, kernels, ops, opt), capi (the C API programs), serve (tests/serve
# against the sanitized `onyx serve`) or fuzz_TARGET (a fuzz target's replay program, fuzz/replay_main.cpp). The ctest
# entries sanitized_AREA of the main build run this.
set -euo pipefail
dir=$(realpath -m "$1")  # absolute: the fuzz replays run from a folder of their own
area=$2
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
need() {
  if [ ! -x "$1" ]; then
    echo "sanitized_tests: $1 is not built; build it with scripts/build_sanitized.sh" >&2
    exit 1
  fi
}
if [[ "$area" == fuzz_* ]]; then
  # A fuzz target's committed corpus and MUTATIONS mutants of each input (default 32), run by its replay program
  # from an empty folder holding only a made-up external data file, as scripts/fuzz.sh runs the fuzzers.
  target=${area#fuzz_}
  root=$(cd "$(dirname "$0")/.." && pwd)
  need "$dir/fuzz_${target}_replay"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  head -c 4096 /dev/zero | tr '\0' '\101' >"$work/weights.bin"
  cd "$work"
  "$dir/fuzz_${target}_replay" -mutations="${MUTATIONS:-32}" "$root/fuzz/corpora/$target"
elif [ "$area" = serve ]; then
  # The protocol tests against the sanitized server (built with ONYX_SERVE_SANITIZED); a server that an error
  # aborts, or whose exit finds a leak, fails the test that stops it. RSS growth means nothing under ASan.
  need "$dir/onyx"
  root=$(cd "$(dirname "$0")/.." && pwd)
  ONYX_CLI="$dir/onyx" ONYX_SERVE_STUBS="$dir/serve/python" /usr/bin/python3 -m pytest -p no:cacheprovider -q -rfEsxX \
    "$root/tests/serve" -k "not test_rss_steady"
elif [ "$area" = capi ]; then
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
