#!/usr/bin/env bash
# Fuzzes the model reader, checker, IR builder, printer and writer with libFuzzer.
#
# usage: scripts/fuzz.sh [SECONDS]      (default 60)
#
#  1. builds build-fuzz/fuzz_model with clang (ONYX_SANITIZE=ON, ONYX_FUZZ=ON);
#  2. seeds fuzz/corpus/ (gitignored) with the test models and test data: every model.onnx, *.onnx
#     and *.pb of at most 1 MB under ../shared/onnx-tests and /usr/include/onnx/backend/test/data,
#     each named by the SHA-1 of its content so that duplicates collapse, plus synthetic seeds (made
#     with python3 when present) for what those lack: model-local functions, training info, sparse
#     tensors, every attribute, type and data field kind, and the onnx-data.proto values;
#  3. runs the fuzzer for SECONDS from a fresh temporary directory that holds only a made-up
#     weights.bin (external data locations in fuzzed models resolve against the current directory,
#     so the resolver is exercised and nothing real can be read), writing
#     crashes, leaks, timeouts and out-of-memory inputs to fuzz/findings/.
#
# Exits non-zero when the build fails or libFuzzer found something (an artifact was written).
# Environment: FUZZ_EXTRA_ARGS adds libFuzzer flags (e.g. FUZZ_EXTRA_ARGS="-fork=8");
# ONYX_FUZZ_STRICT=1 also reports models that the checker accepts but build_model rejects.
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

# Synthetic seeds for what the test models lack: model-local functions, training info, sparse
# initializers, every attribute and type kind, typed data fields, external and string tensors, and
# the onnx-data.proto values. Written with a tiny protobuf encoder (Python standard library only).
if command -v python3 >/dev/null; then
  synth="$(mktemp -d -t onyx-fuzz-seeds.XXXXXX)"
  python3 - "$synth" <<'PY'
import struct, sys

out = sys.argv[1]

def varint(v):
    v &= (1 << 64) - 1
    b = bytearray()
    while True:
        x = v & 0x7F
        v >>= 7
        if v:
            b.append(x | 0x80)
        else:
            b.append(x)
            return bytes(b)

def key(f, t): return varint(f << 3 | t)
def I(f, v): return key(f, 0) + varint(v)                      # varint field
def B(f, v):                                                    # length-delimited field
    if isinstance(v, str): v = v.encode()
    return key(f, 2) + varint(len(v)) + v
def F32(f, v): return key(f, 5) + struct.pack("<f", v)
def packed(f, vals): return B(f, b"".join(varint(v) for v in vals))
def cat(*parts): return b"".join(parts)

# TypeProto
def dim(v): return B(1, I(1, v) if isinstance(v, int) else cat(B(2, v), B(3, "DATA_BATCH")))
def shape(dims): return cat(*[dim(d) for d in dims])
def ttype(elem, dims=None, sparse=False):
    body = I(1, elem) + (B(2, shape(dims)) if dims is not None else b"")
    return B(8 if sparse else 1, body)
def seq_type(t): return B(4, B(1, t))
def map_type(k, t): return B(5, I(1, k) + B(2, t))
def opt_type(t): return B(9, B(1, t))
def opaque_type(d, n): return B(7, B(1, d) + B(2, n))
def vi(name, t): return B(1, name) + B(2, t)

# TensorProto
def tensor(name, dtype, dims, *data): return cat(packed(1, dims), I(2, dtype), *data, B(8, name))
def raw(dtype, dims, fmt, vals, name="t"): return tensor(name, dtype, dims, B(9, struct.pack("<" + fmt * len(vals), *vals)))

def node(op, ins, outs, *attrs, domain=None, name=None):
    return cat(*[B(1, i) for i in ins], *[B(2, o) for o in outs], B(3, name) if name else b"", B(4, op),
               *[B(5, a) for a in attrs], B(7, domain) if domain is not None else b"")
def attr(name, typ, *body): return cat(B(1, name), *body, I(20, typ))
def graph(name, nodes, inputs, outputs, inits=(), sparse=(), value_info=()):
    return cat(*[B(1, n) for n in nodes], B(2, name), *[B(5, t) for t in inits], *[B(11, v) for v in inputs],
               *[B(12, v) for v in outputs], *[B(13, v) for v in value_info], *[B(15, s) for s in sparse])
def opset(domain, version): return B(1, domain) + I(2, version)
def model(g, opsets=(("", 21),), functions=(), training=(), ir=10):
    return cat(I(1, ir), B(2, "onyx-fuzz"), B(3, "1"), I(5, 1), B(7, g), *[B(8, opset(d, v)) for d, v in opsets],
               B(14, B(1, "key") + B(2, "value")), *[B(20, t) for t in training], *[B(25, f) for f in functions])

F, I64 = 1, 7
x23 = vi("X", ttype(F, [2, 3]))
y23 = vi("Y", ttype(F, [2, 3]))
seeds = {}

# A model-local function with an attribute default and a call.
fn = cat(B(1, "MyRelu"), B(4, "X"), B(5, "Y"), B(6, "alpha"),
         B(7, node("LeakyRelu", ["X"], ["Y"], attr("alpha", 1, B(21, "alpha")))),
         B(9, opset("", 21)), B(10, "local"), B(11, attr("beta", 1, F32(2, 0.5))), B(12, vi("Y", ttype(F))))
seeds["function"] = model(graph("g", [node("MyRelu", ["X"], ["Y"], attr("alpha", 1, F32(2, 2.0)), domain="local")],
                                [x23], [y23]), opsets=(("", 21), ("local", 1)), functions=[fn])

# Training info: initialization and algorithm graphs with bindings.
w = raw(F, [2, 3], "f", [1, 2, 3, 4, 5, 6], name="W")
init_g = graph("init", [node("RandomNormal", [], ["W_init"], attr("shape", 7, packed(8, [2, 3])))], [], [vi("W_init", ttype(F, [2, 3]))])
algo_g = graph("algo", [node("Add", ["X", "W"], ["W_new"])], [x23], [vi("W_new", ttype(F, [2, 3]))])
train = cat(B(1, init_g), B(2, algo_g), B(3, B(1, "W") + B(2, "W_init")), B(4, B(1, "W") + B(2, "W_new")))
seeds["training"] = model(graph("g", [node("Add", ["X", "W"], ["Y"])], [x23], [y23], inits=[w]), training=[train])

# A sparse initializer and a sparse Constant.
sp = cat(B(1, raw(F, [2], "f", [1.5, -2], name="S")), B(2, raw(I64, [2], "q", [1, 3], name="S_idx")), packed(3, [4]))
sp2 = cat(B(1, raw(F, [2], "f", [7, 8], name="C")), B(2, raw(I64, [2, 1], "q", [0, 2], name="C_idx")), packed(3, [3]))
seeds["sparse"] = model(graph("g", [node("Identity", ["S"], ["Y"]), node("Constant", [], ["Z"], attr("sparse_value", 11, B(22, sp2)))],
                              [], [vi("Y", ttype(F, [4])), vi("Z", ttype(F, [3]))], sparse=[sp]))

# Control flow: If with subgraphs using the outer scope, Loop, Scan; attributes of every kind.
then_g = graph("then", [node("Identity", ["X"], ["T"])], [], [vi("T", ttype(F))])
else_g = graph("else", [node("Neg", ["X"], ["E"])], [], [vi("E", ttype(F))])
loop_g = graph("body", [node("Identity", ["cond_in"], ["cond_out"]), node("Add", ["v_in", "X"], ["v_out"])],
               [vi("i", ttype(I64, [])), vi("cond_in", ttype(9, [])), vi("v_in", ttype(F))],
               [vi("cond_out", ttype(9, [])), vi("v_out", ttype(F))])
ctrl_nodes = [
    node("Constant", [], ["C"], attr("value", 4, B(5, raw(9, [], "?", [True], name="c")))),
    node("If", ["C"], ["Y"], attr("then_branch", 5, B(6, then_g)), attr("else_branch", 5, B(6, else_g)), name="if0"),
    node("Constant", [], ["N"], attr("value_int", 2, I(3, 3))),
    node("Loop", ["N", "C", "X"], ["L"], attr("body", 5, B(6, loop_g))),
    node("Constant", [], ["Fs"], attr("value_floats", 6, key(7, 2) + varint(8) + struct.pack("<ff", 1, 2))),
    node("Constant", [], ["Ss"], attr("value_strings", 8, B(9, "a"), B(9, "b"))),
    node("Constant", [], ["St"], attr("value_string", 3, B(4, "text"))),
    node("Cast", ["X"], ["Xd"], attr("to", 2, I(3, 11)), attr("saturate", 2, I(3, 1))),
    node("MyOp", ["X"], ["M"], attr("tensors", 9, B(10, raw(F, [1], "f", [1])), B(10, raw(I64, [1], "q", [2]))),
         attr("graphs", 10, B(11, then_g)), attr("sparse_tensors", 12, B(23, sp2)), attr("tp", 13, B(14, seq_type(ttype(F)))),
         attr("tps", 14, B(15, map_type(8, ttype(F))), B(15, opt_type(ttype(7)))), domain="custom"),
]
seeds["control"] = model(graph("g", ctrl_nodes, [x23], [vi("Y", ttype(F)), vi("L", ttype(F))]),
                         opsets=(("", 21), ("custom", 1)))

# Every type kind on graph inputs and outputs, symbolic dims with denotations.
typed_inputs = [vi("A", ttype(F, ["N", 3])), vi("B", seq_type(ttype(F, [2]))), vi("Cm", map_type(7, ttype(F))),
                vi("D", opt_type(ttype(F, []))), vi("E", ttype(F, [4], sparse=True)), vi("G", opaque_type("dom", "name")),
                vi("H", opt_type(seq_type(ttype(I64))))]
seeds["types"] = model(graph("g", [node("Identity", ["A"], ["Y"]), node("SequenceLength", ["B"], ["L"])], typed_inputs,
                             [vi("Y", ttype(F, ["N", 3])), vi("L", ttype(I64, []))],
                             value_info=[vi("Y", B(6, "IMAGE") + ttype(F, ["N", 3]))]))

# Initializers in each data field and element type, strings, external data, segments.
inits = [
    tensor("f", 1, [2], key(4, 2) + varint(8) + struct.pack("<ff", 1, 2)),
    tensor("u8", 2, [3], packed(5, [1, 2, 255])),
    tensor("i8", 3, [2], packed(5, [-1 & 0xFFFFFFFFFFFFFFFF, 127])),
    tensor("h", 10, [2], packed(5, [0x3C00, 0xC000])),
    tensor("bf", 16, [1], packed(5, [0x3F80])),
    tensor("b", 9, [2], packed(5, [1, 0])),
    tensor("i4", 22, [3], packed(5, [0x21, 0x03])),
    tensor("u2", 25, [5], packed(5, [0xE4, 0x01])),
    tensor("f8", 17, [2], packed(5, [0x38, 0x40])),
    tensor("i64", 7, [2], packed(7, [5, -7 & 0xFFFFFFFFFFFFFFFF])),
    tensor("d", 11, [1], key(10, 2) + varint(8) + struct.pack("<d", 3.25)),
    tensor("u32", 12, [2], packed(11, [1, 4294967295])),
    tensor("u64", 13, [1], packed(11, [18446744073709551615])),
    tensor("c64", 14, [1], key(4, 2) + varint(8) + struct.pack("<ff", 1, -1)),
    tensor("c128", 15, [1], key(10, 2) + varint(16) + struct.pack("<dd", 1, -1)),
    tensor("s", 8, [2], B(6, "hello"), B(6, b"\xff\x00bytes")),
    tensor("r16", 5, [2, 0], b""),
    tensor("seg", 1, [1], B(3, I(1, 0) + I(2, 1)), B(9, struct.pack("<f", 1)),
           B(12, "doc"), B(16, B(1, "k") + B(2, "v"))),
]
seeds["initializers"] = model(graph("g", [node("Identity", ["f"], ["Y"])], [], [vi("Y", ttype(F, [2]))], inits=inits))
ext = tensor("ext", 1, [4], I(14, 1), B(13, B(1, "location") + B(2, "weights.bin")), B(13, B(1, "offset") + B(2, "0")),
             B(13, B(1, "length") + B(2, "16")), B(13, B(1, "checksum") + B(2, "x")))
seeds["external"] = model(graph("g", [node("Identity", ["ext"], ["Y"])], [], [vi("Y", ttype(F, [4]))], inits=[ext]))
seeds["ir3"] = model(graph("g", [node("LeakyRelu", ["X"], ["Y"], attr("alpha", 0, F32(2, 0.1)))], [x23], [y23]),
                     opsets=(("", 7),), ir=3)

# onnx-data.proto values: SequenceProto, MapProto, OptionalProto, TensorProto.
t1 = raw(F, [2], "f", [1, 2], name="t1")
seq = cat(B(1, "seq"), I(2, 1), B(3, t1), B(3, t1))
seeds["sequence"] = seq
seeds["sequence_nested"] = cat(B(1, "ss"), I(2, 3), B(5, seq), B(6, cat(B(1, "m"), I(2, 7), packed(3, [1, 2]), B(5, seq))))
seeds["map_int"] = cat(B(1, "map"), I(2, 7), packed(3, [1, 2]), B(5, seq))
seeds["map_str"] = cat(B(1, "map"), I(2, 8), B(4, "a"), B(4, "b"), B(5, seq))
seeds["optional_tensor"] = cat(B(1, "opt"), I(2, 1), B(3, t1))
seeds["optional_seq"] = cat(B(1, "opt"), I(2, 3), B(5, seq), B(7, cat(I(2, 4), B(6, seeds["map_int"]))))
seeds["optional_sparse"] = cat(B(1, "opt"), I(2, 2), B(4, sp))
seeds["tensor"] = t1

for name, data in seeds.items():
    with open(f"{out}/{name}", "wb") as f:
        f.write(data)
PY
  for f in "$synth"/*; do
    sum="$(sha1sum "$f")"
    sum="${sum%% *}"
    if [[ ! -e "$corpus/$sum" ]]; then
      cp "$f" "$corpus/$sum"
      added=$((added + 1))
    fi
  done
  rm -rf "$synth"
fi
echo "fuzz.sh: corpus $corpus: $(find "$corpus" -type f | wc -l) inputs ($added new seeds)"

# 3. Fuzz, from an empty directory holding only a made-up external data file, weights.bin (4 KiB),
#    so that the external data resolver is exercised without anything real being readable.
work="$(mktemp -d -t onyx-fuzz.XXXXXX)"
trap 'rm -rf "$work"' EXIT
head -c 4096 /dev/zero | tr '\0' '\101' >"$work/weights.bin"

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
