#!/usr/bin/env bash
# Inference benchmark: onyx against ONNX Runtime (onnxruntime-node) on the light models of ../shared/onnx-tests
# and on the models `onyx bench-models` generates; prints a timing table and an output comparison.
#
# usage: scripts/bench.sh [--models LIST] [--threads LIST] [--runs R] [--warmup W] [--rounds K] [--quick]
#   --models LIST    comma-separated model names (default: all): light_bvlc_alexnet, light_densenet121,
#                    light_inception_v1, light_inception_v2, light_resnet50, light_shufflenet, light_squeezenet,
#                    light_vgg19, light_zfnet512, bert_base, mobilenet_v2, gpt2_stack, lstm; or `light`, `generated`
#   --threads LIST   intra-op thread counts (default 1,2)
#   --runs R         timed runs per process (default 10); --warmup W untimed runs before them (default 2)
#   --rounds K       processes per engine, alternating onyx / ORT (default 2)
#   --quick          --runs 2 --warmup 0 --rounds 1
# Environment: ONYX (the onyx binary; default build/onyx, built with ninja when missing), ORT_VERSION
# (onnxruntime-node version installed into node_modules when missing; default 1.30.0), BENCH_TIMEOUT (seconds
# one process may take; default 3600).
#
# Nothing is asserted about timings: the script measures and prints. It exits non-zero when a model fails to
# run in either engine or the outputs cannot be compared. Models are written to build/bench-models (again when the
# onyx binary is newer), outputs and results.json to build/bench-results.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=/usr/bin/python3  # Debian's python3 with python3-onnx and numpy (the pyenv python3 on PATH lacks them)
ORT_VERSION=${ORT_VERSION:-1.30.0}
LIGHT=(light_bvlc_alexnet light_densenet121 light_inception_v1 light_inception_v2 light_resnet50 light_shufflenet
       light_squeezenet light_vgg19 light_zfnet512)
GENERATED=(bert_base mobilenet_v2 gpt2_stack lstm)

die() { echo "bench: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

models_arg="" threads="1,2" runs=10 warmup=2 rounds=2
while (($#)); do
  case $1 in
    --models) models_arg=${2:?--models needs a value}; shift 2 ;;
    --threads) threads=${2:?--threads needs a value}; shift 2 ;;
    --runs) runs=${2:?--runs needs a value}; shift 2 ;;
    --warmup) warmup=${2:?--warmup needs a value}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a value}; shift 2 ;;
    --quick) runs=2 warmup=0 rounds=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs expects a positive integer, got '$runs'"
[[ $warmup =~ ^[0-9]+$ ]] || die "--warmup expects an integer, got '$warmup'"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds expects a positive integer, got '$rounds'"
[[ $threads =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--threads expects a list like 1,2, got '$threads'"

# --- which models ------------------------------------------------------------------------------------------
selected=()
if [[ -z $models_arg ]]; then
  selected=("${LIGHT[@]}" "${GENERATED[@]}")
else
  IFS=, read -ra wanted <<<"$models_arg"
  for m in "${wanted[@]}"; do
    case " light generated ${LIGHT[*]} ${GENERATED[*]} " in
      *" $m "*) ;;
      *) die "unknown model '$m' (see --help)" ;;
    esac
    if [[ $m == light ]]; then selected+=("${LIGHT[@]}")
    elif [[ $m == generated ]]; then selected+=("${GENERATED[@]}")
    else selected+=("$m"); fi
  done
fi

# --- tools ---------------------------------------------------------------------------------------------------
command -v node >/dev/null || die "node is missing (apt-get install nodejs npm)"
command -v npm >/dev/null || die "npm is missing (apt-get install npm)"
[[ -x $PY ]] && $PY -c 'import onnx, numpy' 2>/dev/null || die "$PY cannot import onnx and numpy (scripts/setup.sh)"
if [[ ! -f $ROOT/node_modules/onnxruntime-node/package.json ]]; then
  echo "bench: installing onnxruntime-node@$ORT_VERSION into $ROOT/node_modules" >&2
  # --ignore-scripts: the CPU binaries come in the package; its install script only fetches GPU builds.
  npm install --prefix "$ROOT" --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
    "onnxruntime-node@$ORT_VERSION" >&2
fi
if [[ -z ${ONYX:-} ]]; then
  ONYX=$ROOT/build/onyx
  if [[ ! -x $ONYX ]]; then
    [[ -f $ROOT/build/CMakeCache.txt ]] || cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
    ninja -C "$ROOT/build" onyx_cli >&2
  fi
fi
[[ -x $ONYX ]] || die "ONYX=$ONYX is not an executable"

# --- generated models ----------------------------------------------------------------------------------------
MODELS_DIR=$ROOT/build/bench-models
OUT_DIR=$ROOT/build/bench-results
LIGHT_DIR=$ROOT/../shared/onnx-tests/light
stale=()
for m in "${selected[@]}"; do
  case " ${GENERATED[*]} " in
    *" $m "*) [[ -f $MODELS_DIR/$m.onnx && $MODELS_DIR/$m.onnx -nt $ONYX ]] || stale+=("$m") ;;
  esac
done
if ((${#stale[@]})); then
  echo "bench: writing ${stale[*]} into $MODELS_DIR" >&2
  (IFS=,; "$ONYX" bench-models "$MODELS_DIR" --models "${stale[*]}" >&2)
fi

model_args=()
for m in "${selected[@]}"; do
  case $m in
    light_*) path=$LIGHT_DIR/$m.onnx; [[ -f $path ]] || die "$path is missing (the light models come with ../shared/onnx-tests)" ;;
    *) path=$MODELS_DIR/$m.onnx ;;
  esac
  model_args+=(--model "$m=$path")
done

mkdir -p "$OUT_DIR"
exec "$PY" "$ROOT/scripts/bench_driver.py" --onyx "$ONYX" --runner "$ROOT/scripts/bench_ort.mjs" --out "$OUT_DIR" \
  --threads "$threads" --runs "$runs" --warmup "$warmup" --rounds "$rounds" --timeout "${BENCH_TIMEOUT:-3600}" \
  "${model_args[@]}"
