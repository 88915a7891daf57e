#!/usr/bin/python3
"""Writes the big models that scripts/bench_load.sh loads.

usage: bench_load_make_model.py OUT_DIR [--gb 1.0] [--force]

OUT_DIR/big.onnx      a valid model (ir_version 8, opset 17) whose float32 initializers (64 MiB each,
                      as many as --gb asks for) are inline raw_data; a chain x -> MatMul(W_i) -> Add(B_i) -> ...
OUT_DIR/big_ext.onnx  the same model with its initializers in OUT_DIR/big_ext.onnx.data, written by
(+ .data)             `onyx convert big.onnx big_ext.onnx --external-data-threshold 1024`; the onyx binary is
                      $ONYX, or build/onyx under the repository root.

Needs python3-onnx and numpy: run it with Debian's /usr/bin/python3. The content is deterministic: every
weight matrix is arange-based, so two runs write the same bytes.
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

# One weight matrix is DIM x DIM float32 = 64 MiB.
DIM = 4096
MATRIX_BYTES = DIM * DIM * 4
# protobuf-python refuses to serialize a message of 2 GiB or more.
PROTOBUF_LIMIT = 2 ** 31


def weight(i):
    """Deterministic, cheap-to-make contents of matrix i: small values that vary with i and position."""
    w = np.arange(DIM * DIM, dtype=np.uint32)
    w += np.uint32(i * 7919)
    w %= np.uint32(1021)
    out = w.astype(np.float32)
    del w
    out *= np.float32(1.0 / 1021.0)
    out -= np.float32(0.5)
    return out.reshape(DIM, DIM)


def build_model(count):
    inits = []
    nodes = []
    cur = "x"
    for i in range(count):
        w = weight(i)
        # raw=True takes the bytes as they are; tobytes() is the one copy numpy makes.
        inits.append(helper.make_tensor(f"W{i}", TensorProto.FLOAT, [DIM, DIM], w.tobytes(), raw=True))
        del w
        bias = (np.arange(DIM, dtype=np.float32) * np.float32(1e-4)) - np.float32(i * 1e-3)
        inits.append(helper.make_tensor(f"B{i}", TensorProto.FLOAT, [DIM], bias.tobytes(), raw=True))
        mm = f"mm{i}"
        out = "y" if i == count - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [cur, f"W{i}"], [mm], name=f"matmul{i}"))
        nodes.append(helper.make_node("Add", [mm, f"B{i}"], [out], name=f"add{i}"))
        cur = out
    graph = helper.make_graph(
        nodes,
        "bench_load",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", DIM])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", DIM])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        producer_name="onyx-bench-load",
        producer_version="1",
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    return model


def default_onyx():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(root, "build", "onyx")


def main():
    ap = argparse.ArgumentParser(description="Write OUT_DIR/big.onnx and OUT_DIR/big_ext.onnx for bench_load.sh.")
    ap.add_argument("out_dir")
    ap.add_argument("--gb", type=float, default=1.0, help="GiB of initializers (default 1.0; must stay under 2)")
    ap.add_argument("--force", action="store_true", help="re-write the models even if they exist")
    args = ap.parse_args()

    count = max(1, int(round(args.gb * 2 ** 30 / MATRIX_BYTES)))
    # The biases add count * 16 KiB; keep well clear of the protobuf limit.
    if count * MATRIX_BYTES + (1 << 24) >= PROTOBUF_LIMIT:
        sys.exit(f"bench_load_make_model: --gb {args.gb} needs {count} matrices of 64 MiB, which protobuf-python "
                 "cannot serialize in one file (2 GiB limit); use less than 2")
    os.makedirs(args.out_dir, exist_ok=True)
    big = os.path.join(args.out_dir, "big.onnx")
    big_ext = os.path.join(args.out_dir, "big_ext.onnx")

    if args.force or not os.path.exists(big):
        t0 = time.monotonic()
        model = build_model(count)
        tmp = big + ".tmp"
        with open(tmp, "wb") as f:
            f.write(model.SerializeToString())
        del model
        os.replace(tmp, big)
        print(f"wrote {big}: {count} x 64 MiB float32 initializers, {os.path.getsize(big) / 2**30:.3f} GiB "
              f"in {time.monotonic() - t0:.1f} s", flush=True)
    else:
        print(f"kept {big}", flush=True)

    if args.force or not os.path.exists(big_ext) or not os.path.exists(big_ext + ".data"):
        onyx = os.environ.get("ONYX") or default_onyx()
        if not os.access(onyx, os.X_OK):
            sys.exit(f"bench_load_make_model: no onyx binary at {onyx} (set ONYX)")
        for p in (big_ext, big_ext + ".data"):
            if os.path.exists(p):
                os.remove(p)
        t0 = time.monotonic()
        subprocess.run([onyx, "convert", big, big_ext, "--external-data-threshold", "1024"], check=True)
        print(f"wrote {big_ext} ({os.path.getsize(big_ext)} bytes) + {big_ext}.data "
              f"({os.path.getsize(big_ext + '.data') / 2**30:.3f} GiB) in {time.monotonic() - t0:.1f} s", flush=True)
    else:
        print(f"kept {big_ext}", flush=True)


if __name__ == "__main__":
    main()
