#!/usr/bin/python3
"""Checks `onyx convert` against onnx's own protobuf reader (Debian python3-onnx).

1. Every test model re-written by `onyx convert IN OUT` loads in onnx equal (==) to IN.
2. Moving initializers to an external data file and back keeps every tensor's values, and the inlined model is
   equal to what onnx.load makes of the external one.
3. A model that onnx saved with external data is read and inlined by onyx as onnx would.
Usage: roundtrip_onnx.py ONYX_BINARY
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ONYX = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOTS = [os.path.join(HERE, "..", "..", "..", "shared", "onnx-tests"), "/usr/include/onnx/backend/test/data"]


def models():
    found = []
    for root in ROOTS:
        for dirpath, _, files in os.walk(root):
            found += [os.path.join(dirpath, f) for f in files if f.endswith(".onnx")]
    return sorted(found)


def convert(*args):
    r = subprocess.run([ONYX, "convert", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"onyx convert {' '.join(args)} failed: {r.stderr.strip()}")


def same(a, b, path_a, path_b):
    # A model holding NaN attribute values never compares equal, not even to itself: fall back to the bytes.
    if a == b:
        return True
    return a != a and open(path_a, "rb").read() == open(path_b, "rb").read()


def arrays(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def main():
    paths = models()
    if not paths:
        print("no test models found (scripts/setup.sh installs libonnx-testdata)")
        return 1
    failures = []
    tmp = tempfile.mkdtemp(prefix="onyx-roundtrip-")
    out = os.path.join(tmp, "out.onnx")
    externals = 0
    for path in paths:
        try:
            convert(path, out)
            a = onnx.load(path, load_external_data=False)
            b = onnx.load(out, load_external_data=False)
            if not same(a, b, path, out):
                failures.append(f"{path}: re-written model differs")
                continue
            if not a.graph.initializer:
                continue
            # Out to an external file and back inline.
            ext_dir = tempfile.mkdtemp(dir=tmp)
            ext = os.path.join(ext_dir, "ext.onnx")
            convert(path, ext, "--external-data-threshold", "0")
            e = onnx.load(ext)  # onnx reads the external data itself
            want, got = arrays(a), arrays(e)
            if want.keys() != got.keys() or any(not np.array_equal(want[k], got[k], equal_nan=True) for k in want):
                failures.append(f"{path}: values changed through external data")
                continue
            back = os.path.join(ext_dir, "back.onnx")
            convert(ext, back, "--inline")
            if not same(onnx.load(back), e, back, back):
                failures.append(f"{path}: --inline differs from onnx.load of the external model")
            externals += 1
        except Exception as ex:  # report every model, not just the first failure
            failures.append(f"{path}: {ex}")

    # A model saved by onnx itself with external data.
    light = [p for p in paths if "light_squeezenet" in p]
    src = light[0] if light else next(p for p in paths if onnx.load(p).graph.initializer)
    m = onnx.load(src)
    d = tempfile.mkdtemp(dir=tmp)
    saved = os.path.join(d, "py_ext.onnx")
    onnx.save_model(m, saved, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)
    convert(saved, os.path.join(d, "inline.onnx"), "--inline")
    if not same(onnx.load(os.path.join(d, "inline.onnx")), onnx.load(saved), saved, saved):
        failures.append(f"{src}: onnx-written external data inlined by onyx differs from onnx.load")

    for f in failures:
        print("FAIL", f)
    print(f"{len(paths)} models re-written, {externals} through external data; {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
