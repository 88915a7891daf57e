#!/usr/bin/python3
"""Writes the inputs of corpus models (scripts/models.tsv) as .npy files, for scripts/bench.sh.

usage: scripts/bench_inputs.py --out DIR [--manifest FILE] [--models-dir DIR] NAME...

For each NAME (a manifest row) it writes DIR/NAME/input_K.npy, one per entry of the row's `inputs` column, and
DIR/NAME/feeds.txt with one `INPUT_NAME=FILE` line per input (the form `onyx bench --input` and
scripts/bench_ort.mjs --input take), then prints `NAME=DIR/NAME/feeds.txt` per model on stdout. Values follow the
formulas of the manifest's header exactly (computed in float64 over the flat index i, then cast to the dtype).
With --models-dir the row's inputs are checked against MODELS_DIR/NAME.onnx (names, element types, ranks and
fixed dims). Files whose row has not changed since they were written are kept.
"""
import argparse
import math
import os
import sys

import numpy as np

DTYPES = {"float32": np.float32, "int64": np.int64, "bool": np.bool_}
# TensorProto element types of the dtypes above (onnx.TensorProto.FLOAT, INT64, BOOL).
ONNX_TYPES = {"float32": 1, "int64": 7, "bool": 9}
FORMAT = "bench_inputs 1"  # bumped when a formula changes, so that older files are written again


def die(msg):
    print(f"bench_inputs: {msg}", file=sys.stderr)
    sys.exit(1)


def read_manifest(path):
    """name -> inputs column, in file order."""
    rows = {}
    header_seen = False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if not header_seen:
                header_seen = True
                if cols[0] == "name":
                    continue
            if len(cols) < 8:
                die(f"{path}: row '{cols[0]}' has {len(cols)} columns, expected 8")
            rows[cols[0]] = cols[7]
    return rows


def values(kind, n):
    """The manifest's formula KIND over i = 0 .. n-1, as float64 (or int64 for tokens)."""
    i = np.arange(n, dtype=np.float64)
    if kind == "image":
        return 0.5 + 0.25 * np.sin(0.013 * i) + 0.25 * np.cos(0.00071 * i)
    if kind == "image255":
        return 255.0 * (0.5 + 0.25 * np.sin(0.013 * i) + 0.25 * np.cos(0.00071 * i))
    if kind == "audio":
        t = i / 16000.0
        return (0.5 * np.sin(2 * np.pi * 440 * t) + 0.3 * np.sin(2 * np.pi * 1250 * t)
                + 0.15 * np.sin(2 * np.pi * 3100 * t))
    if kind == "zeros":
        return np.zeros(n)
    if kind in ("ones", "mask"):
        return np.ones(n)
    if kind == "tokens":
        return 101 + (np.arange(n, dtype=np.int64) * 7919) % 1900
    if kind.startswith("const="):
        try:
            v = float(kind[len("const="):])
        except ValueError:
            raise ValueError(f"bad constant in '{kind}'")
        return np.full(n, v)
    raise ValueError(f"unknown kind '{kind}'")


def parse_inputs(spec):
    """[(input name, dtype, shape tuple, kind)] from `NAME=DTYPE:SHAPE:KIND;...`."""
    out = []
    for item in spec.split(";"):
        name, eq, rest = item.partition("=")
        parts = rest.split(":")
        if not eq or not name or len(parts) != 3:
            raise ValueError(f"'{item}' is not NAME=DTYPE:SHAPE:KIND")
        dtype, shape_text, kind = parts
        if dtype not in DTYPES:
            raise ValueError(f"'{item}': dtype '{dtype}' is not one of {', '.join(DTYPES)}")
        if shape_text == "scalar":
            shape = ()
        else:
            try:
                shape = tuple(int(d) for d in shape_text.split("x"))
            except ValueError:
                raise ValueError(f"'{item}': shape '{shape_text}' is not AxBxC or scalar")
            if any(d < 0 for d in shape):
                raise ValueError(f"'{item}': negative dim")
        out.append((name, dtype, shape, kind))
    return out


def make(dtype, shape, kind):
    n = math.prod(shape)
    v = values(kind, n)
    if dtype == "bool":
        a = v != 0
    elif dtype == "int64":
        a = np.rint(v).astype(np.int64) if v.dtype != np.int64 else v
    else:
        a = v.astype(np.float32)
    return a.reshape(shape).copy()  # np.ascontiguousarray would make a scalar 1-D


def check_model(path, inputs):
    """Error text when the row's inputs do not match the graph inputs of the model at path, else None."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    graph = {i.name: i for i in model.graph.input if i.name not in inits}
    given = [name for name, _, _, _ in inputs]
    missing = [n for n in graph if n not in given]
    extra = [n for n in given if n not in graph]
    if missing or extra:
        return (f"graph inputs not in the manifest: {missing or 'none'}; manifest inputs not in the graph: "
                f"{extra or 'none'}")
    for name, dtype, shape, _ in inputs:
        t = graph[name].type.tensor_type
        if t.elem_type != ONNX_TYPES[dtype]:
            return f"input '{name}': the graph's element type is {t.elem_type}, the manifest says {dtype}"
        if t.HasField("shape"):
            dims = t.shape.dim
            if len(dims) != len(shape):
                return f"input '{name}': the graph's rank is {len(dims)}, the manifest's shape {shape}"
            for k, d in enumerate(dims):
                if d.HasField("dim_value") and d.dim_value != shape[k]:
                    return f"input '{name}': dim {k} is {d.dim_value} in the graph, {shape[k]} in the manifest"
    return None


def main():
    ap = argparse.ArgumentParser(description="Writes the inputs of corpus models as .npy files.")
    ap.add_argument("--out", required=True, help="folder; the inputs go to OUT/NAME/")
    ap.add_argument("--manifest", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models.tsv"))
    ap.add_argument("--models-dir", help="check the inputs against MODELS_DIR/NAME.onnx")
    ap.add_argument("names", nargs="+")
    args = ap.parse_args()
    rows = read_manifest(args.manifest)
    for name in args.names:
        if name not in rows:
            die(f"'{name}' is not a row of {args.manifest}")
        spec = rows[name]
        try:
            inputs = parse_inputs(spec)
        except ValueError as e:
            die(f"{name}: inputs column: {e}")
        folder = os.path.join(args.out, name)
        feeds = os.path.join(folder, "feeds.txt")
        stamp = os.path.join(folder, "spec.txt")
        files = [os.path.join(folder, f"input_{k}.npy") for k in range(len(inputs))]
        stamp_text = f"{FORMAT}\n{spec}\n"
        fresh = (os.path.isfile(stamp) and open(stamp).read() == stamp_text and os.path.isfile(feeds)
                 and all(os.path.isfile(f) for f in files))
        if not fresh:
            if args.models_dir:
                err = check_model(os.path.join(args.models_dir, name + ".onnx"), inputs)
                if err:
                    die(f"{name}: the manifest's inputs do not fit the model: {err}")
            os.makedirs(folder, exist_ok=True)
            for f in os.listdir(folder):
                os.remove(os.path.join(folder, f))
            for (iname, dtype, shape, kind), f in zip(inputs, files):
                try:
                    np.save(f, make(dtype, shape, kind))
                except ValueError as e:
                    die(f"{name}: input '{iname}': {e}")
            with open(feeds, "w") as out:
                for (iname, _, _, _), f in zip(inputs, files):
                    out.write(f"{iname}={os.path.abspath(f)}\n")
            with open(stamp, "w") as out:
                out.write(stamp_text)
        print(f"{name}={os.path.abspath(feeds)}")


if __name__ == "__main__":
    main()
