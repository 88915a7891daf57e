#!/usr/bin/env python3
"""Seed inputs for the fuzz targets (fuzz/*.cpp), written to a folder, each named by the SHA-1 of its content.

usage: make_seeds.py TARGET OUT_DIR [TEST_DATA_DIR...]

  model    every .onnx and .pb file of at most 1 MB under the test data folders, and synthetic models and
           onnx-data.proto values for what those lack (model-local functions, training info, sparse tensors,
           every attribute, type and data field kind);
  session, print
           the models among those;
  run      each test's model (node tests: model.onnx of at most 256 KB) joined with the raw bytes of its first
           data set's inputs (fuzz/model_mutator.hpp's RunInput), and the synthetic models with no feed bytes;
  image    the encoded images of the ImageDecoder tests, and small BMP, PNM and PNG images made here.

Only Python's standard library is needed, except for reading the test inputs' TensorProtos (run, image), which
uses onnx's numpy_helper (Debian's python3-onnx) when it is there.
"""
import hashlib
import os
import struct
import sys
import zlib


def synthetic():
    """Models and onnx-data.proto values built with a tiny protobuf encoder: {name: (is_model, bytes)}."""
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

    values = {"sequence", "sequence_nested", "map_int", "map_str", "optional_tensor", "optional_seq",
              "optional_sparse", "tensor"}
    return {name: (name not in values, data) for name, data in seeds.items()}


def test_files(dirs, suffixes, limit):
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                p = os.path.join(root, f)
                if f.endswith(suffixes) and os.path.getsize(p) <= limit:
                    yield p


def read(p):
    with open(p, "rb") as f:
        return f.read()


def tensor_bytes(path):
    """The raw bytes of a TensorProto file's elements, or None when onnx is missing or it is not a plain tensor."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        return None
    t = onnx.TensorProto()
    try:
        t.ParseFromString(read(path))
        a = numpy_helper.to_array(t)
    except Exception:
        return None
    if a.dtype.kind in "OSU":
        return b"".join(bytes(str(x), "utf-8")[:7] for x in a.flat)
    return a.tobytes()


def run_input(model, feeds):
    return struct.pack("<I", len(model)) + model + feeds


def run_seeds(dirs):
    for d in dirs:
        for root, _, files in os.walk(d):
            if "model.onnx" not in files:
                continue
            model_path = os.path.join(root, "model.onnx")
            if os.path.getsize(model_path) > 256 * 1024:
                continue
            data_set = os.path.join(root, "test_data_set_0")
            feeds = b""
            if os.path.isdir(data_set):
                for f in sorted(os.listdir(data_set)):
                    if f.startswith("input_"):
                        raw = tensor_bytes(os.path.join(data_set, f))
                        feeds += raw[:65536] if raw else b""
            yield run_input(read(model_path), feeds)


def png(width, height, rows, color_type, bits=8):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, bits, color_type, 0, 0, 0)
    raw = b"".join(b"\x00" + r for r in rows)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def made_images():
    w, h = 3, 2
    rgb = bytes(range(w * h * 3))
    yield b"P6\n%d %d\n255\n" % (w, h) + rgb
    yield b"P5\n%d %d\n255\n" % (w, h) + bytes(range(w * h))
    yield b"P3\n2 1\n255\n0 10 20 30 40 50\n"
    yield b"P1\n3 1\n1 0 1\n"
    row = ((w * 3 + 3) // 4) * 4
    pixels = b"".join(rgb[y * w * 3:(y + 1) * w * 3] + b"\0" * (row - w * 3) for y in range(h))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(pixels), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    yield header + info + pixels
    yield png(w, h, [rgb[y * w * 3:(y + 1) * w * 3] for y in range(h)], 2)
    yield png(w, h, [bytes(range(y * w, y * w + w)) for y in range(h)], 0)
    yield png(2, 2, [b"\x00\x10\x20\xff\x30\x40\x50\x80", b"\x60\x70\x80\x00\x90\xa0\xb0\x40"], 6)
    yield png(8, 1, [b"\xa5"], 0, bits=1)


def seeds_for(target, dirs):
    synth = synthetic()
    if target == "model":
        for p in test_files(dirs, (".onnx", ".pb"), 1 << 20):
            yield read(p)
        for _, data in synth.values():
            yield data
    elif target in ("session", "print"):
        for p in test_files(dirs, (".onnx",), 1 << 20):
            yield read(p)
        for is_model, data in synth.values():
            if is_model:
                yield data
    elif target == "run":
        yield from run_seeds(dirs)
        for is_model, data in synth.values():
            if is_model:
                yield run_input(data, b"")
    elif target == "image":
        for d in dirs:
            for root, _, files in os.walk(d):
                if "image_decoder" in root and "input_0.pb" in files:
                    raw = tensor_bytes(os.path.join(root, "input_0.pb"))
                    if raw:
                        yield raw
        yield from made_images()
    else:
        raise SystemExit(f"make_seeds.py: unknown target {target!r} (model, session, run, image, print)")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    target, out, dirs = sys.argv[1], sys.argv[2], [d for d in sys.argv[3:] if os.path.isdir(d)]
    os.makedirs(out, exist_ok=True)
    added = 0
    for data in seeds_for(target, dirs):
        path = os.path.join(out, hashlib.sha1(data).hexdigest())
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(data)
            added += 1
    print(f"make_seeds.py: {added} new seeds for {target} in {out}")


if __name__ == "__main__":
    main()
