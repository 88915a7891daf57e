#!/usr/bin/env bash
# Serving benchmark of `onyx serve` (KServe v2 / Triton protocol): latency and throughput per protocol and
# concurrency, against the in-process speed of the same model.
#
# usage: scripts/bench_serve.sh [--quick] [--soak SECONDS] [--no-sweep] [--out FILE] [--keep]
#   --quick        about one minute: shorter points (the default sweep takes three to four minutes)
#   --soak S       after the sweep, S seconds of mixed load on a server in explicit model-control mode, with an
#                  unload and a load of a second model in the middle: failed and lost requests (must be 0) and
#                  the server's RSS growth from after a warm-up (max(10, S/4) s of the same load) to the end
#                  (must be <= 5%)
#   --no-sweep     only the soak
#   --out FILE     also keep the raw results (JSON lines) in FILE
#   --keep         keep the work folder (model repository, server log) and say where it is
# Environment:
#   ONYX, LOAD     the onyx binary and the load generator (default build/onyx and build/serve/onyx-serve-load);
#                  the script builds nothing
#   THREADS        intra-op threads per model instance, in the server and in the in-process bench (default 1)
#   INSTANCES      instances per model (default: the server's CPUs / THREADS)
#   SERVER_CPUS, LOAD_CPUS  CPU lists for taskset. Default: with 4 or more CPUs, the first half for the server
#                  and the rest for the load generator (so the client does not steal the server's cores); with
#                  fewer, no pinning (both share every CPU: the numbers then include the client's own cost)
#   CONCURRENCY    the sweep's concurrency levels (default "1 2 4 8 16")
#
# Models (a model repository in a temporary folder, Triton's layout, one config.pbtxt each):
#   demo             `onyx demo`'s classifier, X[N,16] -> probabilities: the protocol's overhead dominates
#   mobilenet        MobileNetV2 from `onyx bench-models` (input[1,3,224,224]), no batching
#   mobilenet_batch  the same with a symbolic batch dim, max_batch_size 8 and dynamic batching (2 ms queue delay)
#   mobilenet_1i, mobilenet_batch_1i  the same two with the server's default instances (one, threads = cores):
#                    the batching gain's target is judged on these
#   demo2            a copy of demo, for the soak's unload/load
# Each point is onyx-serve-load with N threads (a connection or gRPC channel each, requests back to back), a
# request count and a time bound (whichever ends first), after a warm-up. The in-process baseline is
# `onyx bench --threads THREADS` on one of the server's CPUs; throughput at saturation is compared with
# INSTANCES x THREADS cores x 1e6 / median_us.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ONYX=${ONYX:-$ROOT/build/onyx}
LOAD=${LOAD:-$ROOT/build/serve/onyx-serve-load}
PY=/usr/bin/python3   # Debian's python3 with python3-onnx (the pyenv python3 on PATH lacks it)
UTIL=$ROOT/serve/load/bench_serve_util.py
THREADS=${THREADS:-1}
CONCURRENCY=${CONCURRENCY:-"1 2 4 8 16"}

die() { echo "bench_serve: $*" >&2; exit 1; }

QUICK=0 SOAK=0 SWEEP=1 OUT="" KEEP=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) QUICK=1 ;;
    --soak) [[ $# -ge 2 ]] || die "--soak wants seconds"; SOAK=$2; shift ;;
    --no-sweep) SWEEP=0 ;;
    --out) [[ $# -ge 2 ]] || die "--out wants a file"; OUT=$2; shift ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
[[ $SOAK =~ ^[0-9]+$ ]] || die "--soak wants whole seconds"
[[ $SWEEP == 1 || $SOAK -gt 0 ]] || die "--no-sweep without --soak leaves nothing to do"

[[ -x $ONYX ]] || die "$ONYX is missing (build it: ninja -C build onyx_cli; or set ONYX=)"
[[ -x $LOAD ]] || die "$LOAD is missing (build it: ninja -C build onyx_serve_load; or set LOAD=)"
[[ -x $PY ]] || die "$PY is missing"
"$PY" -c "import onnx" 2>/dev/null || die "$PY lacks onnx (apt-get install python3-onnx)"
command -v curl >/dev/null || die "curl is missing"
"$ONYX" serve --help >/dev/null 2>&1 || die "$ONYX has no 'serve' command"

# Per point: time bound (s) and request cap, small model and MobileNetV2.
if [[ $QUICK == 1 ]]; then
  DUR_SMALL=0.5 REQ_SMALL=20000 DUR_BIG=1.2 REQ_BIG=2000 RUNS_SMALL=2000 RUNS_BIG=20
else
  DUR_SMALL=3 REQ_SMALL=200000 DUR_BIG=5 REQ_BIG=20000 RUNS_SMALL=20000 RUNS_BIG=100
fi

# ---- CPUs: pin server and client apart when there are enough ----
cpu_count() {  # the number of CPUs in a taskset list such as 0-3,6
  local n=0 part a b
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then a=${part%-*} b=${part#*-}; n=$((n + b - a + 1)); else n=$((n + 1)); fi
  done
  echo $n
}
NCPU=$(nproc)
if [[ -z ${SERVER_CPUS:-} && $NCPU -ge 4 ]]; then
  SERVER_CPUS="0-$((NCPU / 2 - 1))" LOAD_CPUS="$((NCPU / 2))-$((NCPU - 1))"
fi
SERVER_PIN=() LOAD_PIN=() BENCH_PIN=()
if [[ -n ${SERVER_CPUS:-} ]]; then
  SERVER_PIN=(taskset -c "$SERVER_CPUS")
  first=${SERVER_CPUS%%[,-]*}
  BENCH_PIN=(taskset -c "$first")   # the in-process baseline runs on one of the server's CPUs
  SERVER_NCPU=$(cpu_count "$SERVER_CPUS")
else
  SERVER_NCPU=$NCPU
fi
[[ -n ${LOAD_CPUS:-} ]] && LOAD_PIN=(taskset -c "$LOAD_CPUS")
INSTANCES=${INSTANCES:-$(( SERVER_NCPU / THREADS > 0 ? SERVER_NCPU / THREADS : 1 ))}

WORK=$(mktemp -d /tmp/onyx-bench-serve.XXXXXX)
SERVER_PID=""
cleanup() {
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [[ $KEEP == 1 ]]; then echo "bench_serve: work folder kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
RESULTS=$WORK/results.jsonl
: > "$RESULTS"
log() { echo "bench_serve: $*" >&2; }

# ---- The model repository ----
REPO=$WORK/repo
mkdir -p "$WORK/src"
"$ONYX" demo "$WORK/src/demo.onnx" > /dev/null
"$ONYX" bench-models "$WORK/src" --models mobilenet_v2 > /dev/null
read -r DEMO_INPUTS DEMO_OUTPUTS _ _ < <("$PY" "$UTIL" spec "$WORK/src/demo.onnx")
read -r MB_INPUTS MB_OUTPUTS _ _ < <("$PY" "$UTIL" spec "$WORK/src/mobilenet_v2.onnx")
# Dynamic batching needs dim 0 to be the batch: bench-models writes batch 1, so the batching model is a copy
# with that dim symbolic, and its config lists the dims without it (Triton's rule with max_batch_size > 0).
"$PY" "$UTIL" batchify "$WORK/src/mobilenet_v2.onnx" "$WORK/src/mobilenet_dyn.onnx"
read -r _ _ MB_CFG_IN MB_CFG_OUT < <("$PY" "$UTIL" spec "$WORK/src/mobilenet_dyn.onnx")

tensor_config() {  # KIND "NAME:TYPE:D1,D2;..." -> config.pbtxt input/output entries
  local kind=$1 entry name type dims
  IFS=';' read -ra entries <<< "$2"
  for entry in "${entries[@]}"; do
    IFS=':' read -r name type dims <<< "$entry"
    echo "$kind { name: \"$name\" data_type: TYPE_$type dims: [ $dims ] }"
  done
}
add_model() {  # NAME SOURCE_FILE [EXTRA CONFIG TEXT]
  local name=$1 file=$2 extra=${3:-}
  mkdir -p "$REPO/$name/1"
  cp "$file" "$REPO/$name/1/model.onnx"
  # Explicit instances and threads, so the in-process baseline runs the model as each instance does.
  cat > "$REPO/$name/config.pbtxt" <<EOF
name: "$name"
platform: "onnxruntime_onnx"
instance_group [ { count: $INSTANCES kind: KIND_CPU } ]
parameters { key: "threads" value: { string_value: "$THREADS" } }
$extra
EOF
}
add_model demo "$WORK/src/demo.onnx"
add_model demo2 "$WORK/src/demo.onnx"
add_model mobilenet "$WORK/src/mobilenet_v2.onnx"
add_model mobilenet_batch "$WORK/src/mobilenet_dyn.onnx" "max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 2000 }
$(tensor_config input "$MB_CFG_IN")
$(tensor_config output "$MB_CFG_OUT")"
# The batching comparison runs both models as the server does by default (one instance, as many threads as
# cores), with and without dynamic batching: batching is what lets that instance use its cores on small requests.
add_default_model() {  # NAME SOURCE_FILE [EXTRA CONFIG TEXT]
  mkdir -p "$REPO/$1/1"
  cp "$2" "$REPO/$1/1/model.onnx"
  printf 'name: "%s"\nplatform: "onnxruntime_onnx"\n%s\n' "$1" "${3:-}" > "$REPO/$1/config.pbtxt"
}
add_default_model mobilenet_1i "$WORK/src/mobilenet_v2.onnx"
add_default_model mobilenet_batch_1i "$WORK/src/mobilenet_dyn.onnx" "max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 2000 }
$(tensor_config input "$MB_CFG_IN")
$(tensor_config output "$MB_CFG_OUT")"

# ---- The server ----
HTTP_PORT="" GRPC_PORT="" METRICS_PORT=""
start_server() {  # extra `onyx serve` arguments
  read -r HTTP_PORT GRPC_PORT METRICS_PORT < <("$PY" "$UTIL" ports 3)
  local port_file=$WORK/ports.json pf=()
  rm -f "$port_file"
  if "$ONYX" serve --help 2>&1 | grep -q -- --port-file; then pf=(--port-file "$port_file"); fi
  "${SERVER_PIN[@]}" "$ONYX" serve --model-repository "$REPO" --http-port "$HTTP_PORT" --grpc-port "$GRPC_PORT" \
    --metrics-port "$METRICS_PORT" "${pf[@]}" "$@" > "$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  local deadline=$((SECONDS + 180))
  # The port file appears once the fronts listen; then readiness (every model loaded and warmed up).
  while :; do
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -20 "$WORK/server.log" >&2; die "the server exited"; }
    [[ $SECONDS -lt $deadline ]] || { tail -20 "$WORK/server.log" >&2; die "the server is not ready after 180 s"; }
    if [[ ${#pf[@]} -gt 0 && -s $port_file ]]; then
      read -r HTTP_PORT GRPC_PORT METRICS_PORT < <("$PY" -c \
        'import json,sys; p=json.load(open(sys.argv[1])); print(p["http"], p["grpc"], p["metrics"])' "$port_file" \
        2>/dev/null || echo "$HTTP_PORT $GRPC_PORT $METRICS_PORT")
    fi
    curl -sf -o /dev/null "http://127.0.0.1:$HTTP_PORT/v2/health/ready" && break
    sleep 0.2
  done
  log "server pid $SERVER_PID ready: http $HTTP_PORT grpc $GRPC_PORT metrics $METRICS_PORT"
}
stop_server() {
  [[ -n $SERVER_PID ]] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  local i
  for i in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

# One load point: MODEL PROTOCOL CONCURRENCY DURATION REQUESTS WARMUP INPUTS OUTPUTS [TAG] -> a JSON line on stdout
load_point() {
  local model=$1 proto=$2 conc=$3 dur=$4 req=$5 warm=$6 inputs=$7 outputs=$8 port line
  if [[ $proto == grpc ]]; then port=$GRPC_PORT; else port=$HTTP_PORT; fi
  line=$("${LOAD_PIN[@]}" "$LOAD" --url "127.0.0.1:$port" --protocol "$proto" --model "$model" --inputs "$inputs" \
           --outputs "$outputs" --concurrency "$conc" --requests "$req" --duration-s "$dur" --warmup "$warm" \
           2>> "$WORK/load.err") || die "onyx-serve-load failed: $(tail -3 "$WORK/load.err")"
  echo "{\"kind\":\"load\",\"model\":\"$model\",${line#\{}"
}
record_point() {  # as load_point, appending to the results and saying it on stderr
  local line
  line=$(load_point "$@")
  echo "$line" >> "$RESULTS"
  "$PY" "$UTIL" say "$line" >&2
}

inprocess() {  # MODEL FILE RUNS: the in-process median, as the server's instances run it
  local json
  json=$("${BENCH_PIN[@]}" "$ONYX" bench "$2" --threads "$THREADS" --runs "$3" --warmup 5 --json)
  "$PY" -c 'import json,sys; b=json.loads(sys.argv[2]); print(json.dumps({"kind":"inprocess","model":sys.argv[1],
"median_us":b["median_ms"]*1000,"p90_us":b["p90_ms"]*1000,"threads":b["threads"]}))' "$1" "$json" >> "$RESULTS"
  log "$1 in-process: median $("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["median_ms"]*1000)' \
      "$json") us at $THREADS thread(s)"
}

describe_device() {
  local cpu
  cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
  echo "$NCPU CPU(s), ${cpu:-unknown CPU}"
}

# ---- The sweep ----
if [[ $SWEEP == 1 ]]; then
  # Baselines first, on an idle machine.
  inprocess demo "$WORK/src/demo.onnx" "$RUNS_SMALL"
  inprocess mobilenet "$WORK/src/mobilenet_v2.onnx" "$RUNS_BIG"
  start_server
  for proto in http-binary http-json grpc; do
    for c in $CONCURRENCY; do
      record_point demo "$proto" "$c" "$DUR_SMALL" "$REQ_SMALL" $((20 * c)) "$DEMO_INPUTS" "$DEMO_OUTPUTS"
    done
  done
  for proto in http-binary http-json grpc; do
    for c in $CONCURRENCY; do
      record_point mobilenet "$proto" "$c" "$DUR_BIG" "$REQ_BIG" $((2 * c)) "$MB_INPUTS" "$MB_OUTPUTS"
    done
  done
  # Dynamic batching at concurrency 8 (batch 1 requests that the server groups up to 8), against the plain model
  # at the same concurrency (measured here when the sweep's levels lack 8).
  for proto in grpc http-binary; do
    record_point mobilenet_1i "$proto" 8 "$DUR_BIG" "$REQ_BIG" 16 "$MB_INPUTS" "$MB_OUTPUTS"
    record_point mobilenet_batch_1i "$proto" 8 "$DUR_BIG" "$REQ_BIG" 16 "$MB_INPUTS" "$MB_OUTPUTS"
    # The same with the sweep's instances and threads (INSTANCES x THREADS): with as many instances as cores,
    # batch-1 runs already use every core, and batching can only match them.
    [[ " $CONCURRENCY " == *" 8 "* ]] ||
      record_point mobilenet "$proto" 8 "$DUR_BIG" "$REQ_BIG" 16 "$MB_INPUTS" "$MB_OUTPUTS"
    record_point mobilenet_batch "$proto" 8 "$DUR_BIG" "$REQ_BIG" 16 "$MB_INPUTS" "$MB_OUTPUTS"
  done
  stop_server
  # The baseline again, after the sweep: on a shared machine a neighbour may have slowed the first one.
  inprocess demo "$WORK/src/demo.onnx" "$RUNS_SMALL"
  inprocess mobilenet "$WORK/src/mobilenet_v2.onnx" "$RUNS_BIG"
  cat > "$WORK/meta.json" <<EOF
{"device": "$(describe_device)", "instances": $INSTANCES, "threads": $THREADS,
 "server_cpus": "${SERVER_CPUS:-all}", "load_cpus": "${LOAD_CPUS:-all}", "models": ["demo", "mobilenet"],
 "batching": {"batched": "mobilenet_batch_1i", "plain": "mobilenet_1i", "concurrency": 8},
 "batching_instances": {"batched": "mobilenet_batch", "plain": "mobilenet", "concurrency": 8},
 "errors_file": "$WORK/load.err"}
EOF
  "$PY" "$UTIL" report "$RESULTS" "$WORK/meta.json"
fi

# ---- The soak ----
http_code() {  # METHOD PATH -> the HTTP status of the server's answer (000 when none came)
  local body=()
  [[ $1 == POST ]] && body=(-H 'Content-Type: application/json' --data-binary '{}')
  curl -s -o /dev/null -w '%{http_code}' -X "$1" "${body[@]}" --max-time 60 "http://127.0.0.1:$HTTP_PORT$2" || true
}
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status"; }
success_count() { "$PY" "$UTIL" success "http://127.0.0.1:$HTTP_PORT" "$1" || die "no statistics of $1 from the server"; }
if [[ $SOAK -gt 0 ]]; then
  start_server --model-control-mode explicit --load-model demo --load-model demo2 --load-model mobilenet \
    --load-model mobilenet_batch
  SOAK_RESULTS=$WORK/soak.jsonl
  : > "$SOAK_RESULTS"
  # The mix: every protocol on the small model, gRPC on MobileNetV2, HTTP binary on the batching one.
  MIX=("demo http-binary 2 $DEMO_INPUTS $DEMO_OUTPUTS" "demo http-json 1 $DEMO_INPUTS $DEMO_OUTPUTS"
       "demo grpc 2 $DEMO_INPUTS $DEMO_OUTPUTS" "mobilenet grpc 1 $MB_INPUTS $MB_OUTPUTS"
       "mobilenet_batch http-binary 3 $MB_INPUTS $MB_OUTPUTS")
  # Warm-up: the same mix for a quarter of the soak (at least 10 s), so the allocator's pools, the connections and
  # the batching model's plans for each batch size it meets reach their steady size before RSS is first read
  # (RSS grows for some 20-30 s of such load, then stays flat).
  WARM_S=$(( SOAK / 4 > 10 ? SOAK / 4 : 10 ))
  pids=()
  for m in "${MIX[@]}"; do
    read -r model proto conc inputs outputs <<< "$m"
    load_point "$model" "$proto" "$conc" "$WARM_S" 0 "$conc" "$inputs" "$outputs" > /dev/null & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  RSS_BEFORE=$(rss_kb)
  declare -A BEFORE AFTER
  for model in demo mobilenet mobilenet_batch; do BEFORE[$model]=$(success_count "$model"); done
  log "soak: RSS after warm-up ${RSS_BEFORE} kB; $SOAK s of mixed load"
  pids=() i=0
  for m in "${MIX[@]}"; do
    read -r model proto conc inputs outputs <<< "$m"
    load_point "$model" "$proto" "$conc" "$SOAK" 0 0 "$inputs" "$outputs" > "$WORK/soak.$i" & pids+=($!)
    i=$((i + 1))
  done
  sleep $((SOAK / 2))
  # Unload and load the second model under load: the others must not notice. (HTTP status codes; 000: no answer.)
  control="unload $(http_code POST /v2/repository/models/demo2/unload)"
  sleep 1
  control+=", ready after unload $(http_code GET /v2/models/demo2/ready)"
  control+=", load $(http_code POST /v2/repository/models/demo2/load)"
  control+=", ready after load $(http_code GET /v2/models/demo2/ready)"
  control_ok=false
  [[ $control == "unload 200, ready after unload "[0-9][0-9][0-9]", load 200, ready after load 200" &&
     $control != *"after unload 200"* && $control != *"after unload 000"* ]] && control_ok=true
  log "soak: $control"
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$WORK"/soak.[0-9]* > "$SOAK_RESULTS"
  for model in demo mobilenet mobilenet_batch; do AFTER[$model]=$(success_count "$model"); done
  RSS_AFTER=$(rss_kb)
  metrics=$(curl -sf --max-time 10 "http://127.0.0.1:$METRICS_PORT/metrics" || true)
  [[ $metrics == *$'\n'nv_inference_request_success* ]] || log "soak: warning: no nv_inference_request_success on /metrics"
  stop_server
  cat > "$WORK/soak_meta.json" <<EOF
{"seconds": $SOAK, "model_swapped": "demo2", "rss_before_kb": $RSS_BEFORE, "rss_after_kb": $RSS_AFTER,
 "control": "$control", "control_ok": $control_ok,
 "success_before": {"demo": ${BEFORE[demo]}, "mobilenet": ${BEFORE[mobilenet]},
                    "mobilenet_batch": ${BEFORE[mobilenet_batch]}},
 "success_after": {"demo": ${AFTER[demo]}, "mobilenet": ${AFTER[mobilenet]},
                   "mobilenet_batch": ${AFTER[mobilenet_batch]}}}
EOF
  "$PY" "$UTIL" soak-report "$SOAK_RESULTS" "$WORK/soak_meta.json"
  cat "$SOAK_RESULTS" >> "$RESULTS"
fi

[[ -z $OUT ]] || cp "$RESULTS" "$OUT"
