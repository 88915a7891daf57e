#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/: model, session, run, image, print) under AddressSanitizer + UBSan.
#
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]        fuzz each TARGET (default: all) for SECONDS (default 60)
#        scripts/fuzz.sh --minimize [TARGET...]       rewrite fuzz/corpora/TARGET (the corpus CI replays) from the
#                                                     working corpus: its smallest inputs that add coverage, at
#                                                     most FUZZ_CORPUS_MAX (150), and the fixed findings
#
#  1. builds build-fuzz/fuzz_TARGET with clang (ONYX_SANITIZE=ON, ONYX_FUZZ=ON);
#  2. fills the working corpus fuzz/corpus/TARGET (gitignored) with the committed corpus fuzz/corpora/TARGET and
#     the seeds fuzz/make_seeds.py makes from the test models and data (../shared/onnx-tests and Debian's
#     libonnx-testdata);
#  3. fuzzes from a fresh temporary folder holding only a made-up weights.bin (external data locations in fuzzed
#     models resolve against the current folder, so the resolver is exercised and nothing real can be read),
#     writing crashes, leaks, timeouts and out-of-memory inputs to fuzz/findings/TARGET.
#
# Exits non-zero when the build fails or libFuzzer found something. Environment: FUZZ_EXTRA_ARGS adds libFuzzer
# flags (e.g. "-fork=2"); ONYX_FUZZ_STRICT=1 makes fuzz_model also report models that the checker accepts and
# build_model rejects. A finding is reproduced by running the target on its file from an empty folder:
#   cd "$(mktemp -d)" && /path/to/build-fuzz/fuzz_session /path/to/fuzz/findings/session/crash-...
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
all_targets=(model session run image print)

minimize=0
seconds=60
if [[ "${1:-}" == --minimize ]]; then
  minimize=1
  shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t (${all_targets[*]})" >&2; exit 2; }
done

# 1. Build.
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
    -DONYX_SANITIZE=ON -DONYX_FUZZ=ON -DONYX_TESTS=OFF -DONYX_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$build" "${targets[@]/#/fuzz_}"

work="$(mktemp -d -t onyx-fuzz.XXXXXX)"
trap 'rm -rf "$work"' EXIT
head -c 4096 /dev/zero | tr '\0' '\101' >"$work/weights.bin"

status=0
for t in "${targets[@]}"; do
  corpus="$root/fuzz/corpus/$t"
  committed="$root/fuzz/corpora/$t"
  findings="$root/fuzz/findings/$t"
  mkdir -p "$corpus" "$committed" "$findings"

  # 2. Seeds.
  cp -n "$committed"/* "$corpus"/ 2>/dev/null || true
  if command -v python3 >/dev/null; then
    python3 "$root/fuzz/make_seeds.py" "$t" "$corpus" "$root/../shared/onnx-tests" /usr/include/onnx/backend/test/data
  fi
  echo "fuzz.sh: $t: corpus of $(find "$corpus" -type f | wc -l) inputs"

  if ((minimize)); then
    # libFuzzer's merge keeps the inputs that add coverage, smallest first; of those, the FUZZ_CORPUS_MAX
    # smallest (default 150) stay, so that CI replays each target in about a minute. Fixed findings stay too.
    fresh="$(mktemp -d -t onyx-fuzz-min.XXXXXX)"
    (cd "$work" && "$build/fuzz_$t" -merge=1 -rss_limit_mb=2048 -timeout=10 "$fresh" "$corpus")
    find "$committed" -type f ! -name 'regression-*' -delete
    find "$fresh" -type f -printf '%s %p\n' | sort -n >"$fresh.sizes"
    head -n "${FUZZ_CORPUS_MAX:-150}" "$fresh.sizes" | cut -d' ' -f2- | while IFS= read -r f; do cp "$f" "$committed/"; done
    rm -rf "$fresh" "$fresh.sizes"
    echo "fuzz.sh: fuzz/corpora/$t: $(find "$committed" -type f | wc -l) inputs, $(du -sk "$committed" | cut -f1) KB"
    continue
  fi

  # 3. Fuzz.
  before="$(find "$findings" -type f | wc -l)"
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1048576 -timeout=10 -print_final_stats=1
        -artifact_prefix="$findings/")
  # shellcheck disable=SC2206
  extra=(${FUZZ_EXTRA_ARGS:-})
  set +e
  (cd "$work" && "$build/fuzz_$t" "${args[@]}" "${extra[@]}" "$corpus")
  rc=$?
  set -e
  after="$(find "$findings" -type f | wc -l)"
  if ((rc != 0 || after > before)); then
    echo "fuzz.sh: $t: libFuzzer exited with status $rc; findings in $findings:" >&2
    find "$findings" -type f -newer "$work/weights.bin" -printf '  %p (%s bytes)\n' >&2 || true
    status=1
  else
    echo "fuzz.sh: $t: no findings in ${seconds}s"
  fi
done
exit $status
