#!/usr/bin/env bash
# Fuzzes the model reader, checker, IR builder, printer and writer with libFuzzer.
#
# usage: scripts/fuzz.sh [SECONDS]      (default 60)
#
#  1. builds build-fuzz/fuzz_model with clang (ONYX_SANITIZE=ON, ONYX_FUZZ=ON);
#  2. seeds fuzz/corpus/ (gitignored) with the test models and test data: every model.onnx, *.onnx
#     and *.pb of at most 1 MB under ../shared/onnx-tests and /usr/include/onnx/backend/test/data,
#     each named by the SHA-1 of its content so that duplicates collapse;
#  3. runs the fuzzer for SECONDS from an empty temporary directory (external data locations in
#     fuzzed models resolve against the current directory, so nothing real can be read), writing
#     crashes, leaks, timeouts and out-of-memory inputs to fuzz/findings/.
#
# Exits non-zero when the build fails or libFuzzer found something (an artifact was written).
# Environment: FUZZ_EXTRA_ARGS adds libFuzzer flags (e.g. FUZZ_EXTRA_ARGS="-fork=8").
set -euo pipefail

seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
corpus="$root/fuzz/corpus"
findings="$root/fuzz/findings"

# 1. Build.
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
    -DONYX_SANITIZE=ON -DONYX_FUZZ=ON -DONYX_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$build" fuzz_model

# 2. Seed corpus.
mkdir -p "$corpus" "$findings"
seed_dirs=()
for d in "$root/../shared/onnx-tests" /usr/include/onnx/backend/test/data; do
  [[ -d "$d" ]] && seed_dirs+=("$d")
done
added=0
if ((${#seed_dirs[@]})); then
  while IFS= read -r -d '' f; do
    sum="$(sha1sum "$f")"
    sum="${sum%% *}"
    if [[ ! -e "$corpus/$sum" ]]; then
      cp "$f" "$corpus/$sum"
      added=$((added + 1))
    fi
  done < <(find "${seed_dirs[@]}" -type f \( -name '*.onnx' -o -name '*.pb' \) -size -1025k -print0)
fi
echo "fuzz.sh: corpus $corpus: $(find "$corpus" -type f | wc -l) inputs ($added new seeds)"

# 3. Fuzz, from an empty directory.
work="$(mktemp -d -t onyx-fuzz.XXXXXX)"
trap 'rm -rf "$work"' EXIT

before="$(find "$findings" -type f | wc -l)"
args=(
  -max_total_time="$seconds"
  -rss_limit_mb=2048
  -max_len=1048576
  -timeout=10
  -print_final_stats=1
  -artifact_prefix="$findings/"
)
# shellcheck disable=SC2206
extra=(${FUZZ_EXTRA_ARGS:-})

set +e
(cd "$work" && "$build/fuzz_model" "${args[@]}" "${extra[@]}" "$corpus")
rc=$?
set -e
after="$(find "$findings" -type f | wc -l)"

if ((rc != 0 || after > before)); then
  echo "fuzz.sh: libFuzzer exited with status $rc; findings in $findings:" >&2
  find "$findings" -type f -newer "$work" -printf '  %p (%s bytes)\n' >&2 || true
  exit 1
fi
echo "fuzz.sh: no findings in ${seconds}s"
