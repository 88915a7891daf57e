#!/usr/bin/env bash
# Load-time benchmark: `onyx info` against python onnx.load on a model with >= 1 GiB of initializers.
#
# usage: scripts/bench_load.sh [BUILD_DIR] [WORK_DIR]
#   BUILD_DIR  where the onyx binary is (default: build, under the repository root). When BUILD_DIR/onyx is
#              missing it is built there (Release, Ninja) - unless BUILD_DIR is already configured, i.e. in use
#              by someone else, in which case the script builds its own copy in $ONYX_BENCH_BUILD
#              (default /tmp/onyx-bench-build). $ONYX, if set, names the binary and skips all of this.
#   WORK_DIR   where the models go (default /tmp/onyx-bench-load; needs about 3 GB free the first time):
#              big.onnx (inline raw_data) and big_ext.onnx + big_ext.onnx.data (external data).
# Environment: REPS (default 5) runs of every measurement, of which the median is reported; GB (default 1.0)
#              GiB of initializers when the models are made.
#
# Each command runs REPS times after one untimed warm-up; nothing privileged is done (no dropping of
# caches), so the page cache is WARM and the times are those of loading from memory, not from disk.
# Elapsed time and peak RSS (ru_maxrss from wait4 of that one child) are measured by a small python wrapper,
# so GNU time is not needed. Peak RSS counts the pages of a mapped file only once they are touched.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
WORK_DIR=${2:-/tmp/onyx-bench-load}
REPS=${REPS:-5}
GB=${GB:-1.0}
PY=/usr/bin/python3   # Debian's python3 with python3-onnx and numpy (the pyenv python3 on PATH lacks them)
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac

die() { echo "bench_load: $*" >&2; exit 1; }

[[ -x $PY ]] || die "$PY is missing"
$PY -c 'import onnx, numpy' 2>/dev/null || die "$PY cannot import onnx and numpy (apt-get install python3-onnx)"

# --- the onyx binary ---------------------------------------------------------------------------------------
build_onyx() {  # build_onyx DIR
  echo "building onyx (Release) in $1 ..." >&2
  cmake -S "$ROOT" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  ninja -C "$1" onyx_cli >&2
}
if [[ -n ${ONYX:-} ]]; then
  [[ -x $ONYX ]] || die "ONYX=$ONYX is not an executable"
elif [[ -x $BUILD_DIR/onyx ]]; then
  ONYX=$BUILD_DIR/onyx
elif [[ -f $BUILD_DIR/CMakeCache.txt ]]; then
  # Configured but not built: someone else's build folder; leave it alone and use our own.
  OWN=${ONYX_BENCH_BUILD:-/tmp/onyx-bench-build}
  [[ -x $OWN/onyx ]] || build_onyx "$OWN"
  ONYX=$OWN/onyx
else
  build_onyx "$BUILD_DIR"
  ONYX=$BUILD_DIR/onyx
fi
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$(dirname "$ONYX")/CMakeCache.txt" 2>/dev/null || true)
[[ -n $BUILD_TYPE ]] || BUILD_TYPE="default (RelWithDebInfo)"

# --- the models --------------------------------------------------------------------------------------------
mkdir -p "$WORK_DIR"
BIG=$WORK_DIR/big.onnx
EXT=$WORK_DIR/big_ext.onnx
if [[ ! -f $BIG || ! -f $EXT || ! -f $EXT.data ]]; then
  avail_kb=$(df -Pk "$WORK_DIR" | awk 'NR == 2 { print $4 }')
  need_kb=$(awk -v gb="$GB" 'BEGIN { printf "%d", (2 * gb + 0.5) * 1048576 }')
  echo "disk: $((avail_kb / 1048576)) GiB free in $WORK_DIR, the models need about $((need_kb / 1048576)) GiB" >&2
  ((avail_kb > need_kb)) || die "not enough disk space in $WORK_DIR"
  ONYX=$ONYX $PY "$ROOT/scripts/bench_load_make_model.py" "$WORK_DIR" --gb "$GB" >&2
fi
"$ONYX" check "$BIG" >/dev/null || die "onyx check $BIG failed"
"$ONYX" check "$EXT" >/dev/null || die "onyx check $EXT failed"

# Warm the page cache once (with cat, so that the measuring script's own memory stays small).
cat "$BIG" "$EXT" "$EXT.data" >/dev/null

# --- measure -----------------------------------------------------------------------------------------------
REPS=$REPS ONYX=$ONYX BIG=$BIG EXT=$EXT BUILD_TYPE=$BUILD_TYPE $PY - <<'EOF'
import os, statistics, sys, time

reps = int(os.environ["REPS"])
onyx, big, ext = os.environ["ONYX"], os.environ["BIG"], os.environ["EXT"]
py = sys.executable

def run(cmd):
    """Runs cmd once; returns (elapsed seconds, peak RSS in KiB) of that child alone.

    fork + exec rather than subprocess: subprocess uses vfork, and a vforked child inherits the parent's
    *peak* RSS as its own ru_maxrss at exec; after fork it starts from this script's current anonymous
    memory only (about 9 MB of python - see the `onyx --help` row for this floor)."""
    err_r, err_w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(err_r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(err_w, 2)
            os.execvp(cmd[0], cmd)
        except OSError as e:
            os.write(2, f"cannot run {cmd[0]}: {e}\n".encode())
        finally:
            os._exit(127)
    os.close(err_w)
    err = b""
    while chunk := os.read(err_r, 65536):
        err += chunk
    _, status, ru = os.wait4(pid, 0)
    elapsed = time.monotonic() - t0
    os.close(err_r)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"bench_load: {' '.join(cmd)} exited {code}:\n{err.decode(errors='replace')}")
    return elapsed, ru.ru_maxrss  # Linux reports ru_maxrss in KiB

def measure(cmd):
    run(cmd)  # warm-up, not counted
    samples = [run(cmd) for _ in range(reps)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples) / 1024

def load(path, *extra):
    args = ", ".join([repr(path)] + list(extra))
    return [py, "-c", f"import onnx; onnx.load({args})"]

size_big = os.path.getsize(big)
size_ext = os.path.getsize(ext) + os.path.getsize(ext + ".data")
rows = [  # (key, model, tool, cmd)
    ("onyx_base", "-", "onyx --help (process baseline)", [onyx, "--help"]),
    ("py_base", "-", "python3 -c 'import onnx' (import cost)", [py, "-c", "import onnx"]),
    ("onyx_big", "big.onnx", "onyx info", [onyx, "info", big]),
    ("py_big", "big.onnx", "onnx.load", load(big)),
    ("onyx_ext", "big_ext.onnx", "onyx info", [onyx, "info", ext]),
    ("py_ext", "big_ext.onnx", "onnx.load (loads external data)", load(ext)),
    ("py_ext_noload", "big_ext.onnx", "onnx.load(load_external_data=False)", load(ext, "load_external_data=False")),
]
res = {}
for key, model, tool, cmd in rows:
    print(f"measuring {model:>12}  {tool} ...", file=sys.stderr, flush=True)
    res[key] = measure(cmd)

import onnx
print()
print(f"onyx:   {onyx} (CMAKE_BUILD_TYPE {os.environ['BUILD_TYPE']})")
print(f"onnx:   python3-onnx {onnx.__version__} ({py})")
print(f"models: big.onnx {size_big / 1e9:.3f} GB ({size_big / 2**30:.3f} GiB), inline raw_data;")
print(f"        big_ext.onnx + .data {size_ext / 1e9:.3f} GB ({os.path.getsize(ext)} + {os.path.getsize(ext + '.data')} bytes), external data")
print(f"median of {reps} runs each, after one warm-up run; page cache WARM (nothing dropped)")
print("peak RSS: ru_maxrss of the command; it includes the pages of a mapped model file the command touched")
print("(a touched byte may map a whole 2 MiB page-cache folio), and never reads below the floor of the")
print("`onyx --help` row, the measuring script's own memory inherited through fork")
print()
imp = res["py_base"][0]
hdr = f"{'model':<13} {'tool':<40} {'median s':>9} {'peak RSS MB':>12} {'onyx/onnx.load time':>20} {'onyx/(load-import)':>19}"
print(hdr)
print("-" * len(hdr))
for key, model, tool, _ in rows:
    t, rss = res[key]
    ratio = ratio_net = ""
    if key in ("onyx_big", "onyx_ext"):
        ref = res["py_big" if key == "onyx_big" else "py_ext"][0]
        ratio = f"{t / ref:.4f}"
        ratio_net = f"{t / (ref - imp):.4f}" if ref > imp else "n/a"
    print(f"{model:<13} {tool:<40} {t:>9.3f} {rss:>12.1f} {ratio:>20} {ratio_net:>19}")
print()
print(f"onnx.load's own time (minus import): big.onnx {res['py_big'][0] - imp:.3f} s, "
      f"big_ext.onnx {res['py_ext'][0] - imp:.3f} s")

# The target: loading the 1 GB model with onyx keeps RSS small (the mapping is not touched; < 64 MB) and takes
# less than a tenth of onnx.load's time.
print()
ok_all = True
for key, ref_key, name in (("onyx_big", "py_big", "big.onnx"), ("onyx_ext", "py_ext", "big_ext.onnx")):
    t, rss = res[key]
    ref = res[ref_key][0]
    ok_rss = rss < 64
    ok_t = t < ref / 10
    ok_all &= ok_rss and ok_t
    print(f"target {name:<13} RSS {rss:7.1f} MB < 64 MB: {'yes' if ok_rss else 'NO '}   "
          f"time {t:.3f} s < onnx.load/10 = {ref / 10:.3f} s: {'yes' if ok_t else 'NO'}")
print("target met" if ok_all else "target NOT met")
EOF
