#!/usr/bin/python3
"""Checks onyx.client (HttpClient and GrpcClient) against a live `onyx serve`.

    check_client.py ONYX_CLI [STUBS_DIR]

Starts the server on free ports (explicit model control, everything loaded) over a repository holding the demo
model (`onyx demo`) twice and, when the onnx package is installed, identity models of several datatypes; then
calls every client method and compares the outputs with numpy's. STUBS_DIR (or ONYX_SERVE_STUBS) is where the
build put the gRPC stubs (<build>/serve/python). Needs onyx (the package) and numpy on the path; exits 1 on any
failure.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return bool(cond)


def expect_error(fn, status, what):
    from onyx.client import InferenceServerError
    try:
        fn()
    except InferenceServerError as e:
        allowed = status if isinstance(status, tuple) else (status,)
        ok = check(e.status in allowed, f"{what}: status {e.status!r}, expected {status!r} ({e.message})")
        check(e.message, f"{what}: the error has no message")
        return ok
    check(False, f"{what}: no InferenceServerError")
    return False


def demo_reference(model_path, x):
    """The demo model (MatMul+Add, Relu, MatMul+Add, Softmax) in numpy, with its initializers."""
    import onyx
    init = onyx.load(str(model_path)).graph.initializers
    h = np.maximum(x @ init["W1"] + init["B1"], 0)
    logits = h @ init["W2"] + init["B2"]
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


IDENTITY_TYPES = {  # v2 datatype -> (numpy dtype, onnx element type name)
    "BOOL": (np.bool_, "BOOL"), "UINT8": (np.uint8, "UINT8"), "INT32": (np.int32, "INT32"),
    "INT64": (np.int64, "INT64"), "FP16": (np.float16, "FLOAT16"), "FP64": (np.float64, "DOUBLE"),
    "BYTES": (np.object_, "STRING"),
}


def write_identity_models(repo):
    """Identity models of several datatypes, if the onnx package is here (else the dtype checks are local only)."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        print("note: no onnx package: datatypes other than FP32 are checked without the server")
        return []
    names = []
    for dt, (_, elem) in IDENTITY_TYPES.items():
        t = getattr(TensorProto, elem)
        g = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "g",
                              [helper.make_tensor_value_info("X", t, ["N", 3])],
                              [helper.make_tensor_value_info("Y", t, ["N", 3])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        path = repo / f"id_{dt.lower()}" / "1" / "model.onnx"
        path.parent.mkdir(parents=True)
        onnx.save(m, str(path))
        names.append(dt)
    return names


def sample(dt, rng):
    np_dtype = IDENTITY_TYPES[dt][0]
    if dt == "BYTES":
        a = np.empty((2, 3), dtype=np.object_)
        a[:] = [[b"a", b"", "\u00e9t\u00e9".encode()], [b"x" * 40, b"\x00\x01", b"last"]]
        return a
    if dt == "BOOL":
        return rng.random((2, 3)) > 0.5
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        return rng.integers(info.min, info.max, size=(2, 3), dtype=np_dtype, endpoint=True)
    return rng.standard_normal((2, 3)).astype(np_dtype)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and (
        list(a.ravel()) == list(b.ravel()) if a.dtype == np.object_ else np.array_equal(a, b))


def check_local_codec():
    """Raw encoding and decoding of every datatype, without a server."""
    from onyx.client import _array_from_raw, _raw_input, numpy_dtype, v2_datatype
    rng = np.random.default_rng(1)
    for dt in list(IDENTITY_TYPES) + ["UINT16", "UINT32", "UINT64", "INT8", "INT16", "FP32"]:
        if dt in IDENTITY_TYPES:
            a = sample(dt, rng)
        else:
            a = np.arange(6, dtype=numpy_dtype(dt)).reshape(2, 3)
        name, raw = _raw_input(a)
        check(name == dt and v2_datatype(a.dtype) == dt, f"codec: {a.dtype} maps to {name}, not {dt}")
        check(same(_array_from_raw(raw, dt, a.shape, "t"), a), f"codec: {dt} does not survive encoding")
    s = np.array(["ab", "c"])
    check(_raw_input(s) == ("BYTES", b"\x02\x00\x00\x00ab\x01\x00\x00\x00c"), "codec: str arrays are not BYTES")
    big = np.arange(3, dtype=">i4")
    check(_raw_input(big)[1] == np.arange(3, dtype="<i4").tobytes(), "codec: big-endian input not made little")


def start_server(cli, repo, work):
    port_file = work / "ports.json"
    log = open(work / "server.log", "wb")
    args = [cli, "serve", "--model-repository", str(repo), "--http-port", "0", "--grpc-port", "0",
            "--metrics-port", "0", "--port-file", str(port_file), "--model-control-mode", "explicit",
            "--load-model", "*"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONYX_") or k == "ONYX_SERVE_STUBS"}
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if port_file.exists():
            return proc, json.loads(port_file.read_text())
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    sys.exit(f"the server did not start:\n{(work / 'server.log').read_text()}")


def wait_ready(client, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if client.is_server_ready():
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def check_http(ports, repo, id_types):
    from onyx.client import HttpClient
    c = HttpClient(f"localhost:{ports['http']}")
    check(wait_ready(c), "http: the server never became ready")
    check(c.is_server_live(), "http: is_server_live is False")
    conn = c._conn
    meta = c.server_metadata()
    check(c._conn is conn, "http: the connection was not kept alive between calls")
    check(meta.get("name") == "onyx" and "binary_tensor_data" in meta.get("extensions", []),
          f"http: server_metadata {meta}")
    mm = c.model_metadata("demo")
    check(mm["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, 16]}] and
          mm["outputs"] == [{"name": "probabilities", "datatype": "FP32", "shape": [-1, 10]}] and
          mm["versions"] == ["1"], f"http: model_metadata {mm}")
    check(c.model_metadata("demo", "1")["name"] == "demo", "http: model_metadata with a version")
    cfg = c.model_config("demo")
    check(cfg.get("name") == "demo" and cfg.get("max_batch_size") == 4, f"http: model_config {cfg}")
    check(c.is_model_ready("demo") and c.is_model_ready("demo", "1"), "http: demo is not ready")
    check(not c.is_model_ready("nope") and not c.is_model_ready("demo", "7"), "http: unknown model ready")

    rng = np.random.default_rng(0)
    x = rng.random((3, 16), dtype=np.float32)
    ref = demo_reference(repo / "demo" / "1" / "model.onnx", x)
    for kwargs in ({}, {"binary": False}, {"outputs": ["probabilities"]}, {"version": "1", "binary": False},
                   {"request_id": "r1", "timeout_us": 10_000_000}):
        out = c.infer("demo", {"X": x}, **kwargs)
        y = out.get("probabilities")
        check(list(out) == ["probabilities"] and y is not None and y.dtype == np.float32 and y.shape == (3, 10)
              and np.allclose(y, ref, rtol=1e-5, atol=1e-6), f"http: infer {kwargs} gave {y!r}, numpy {ref!r}")
    y = c.infer("demo", {"X": x[:1]})["probabilities"]
    check(y.flags.writeable, "http: outputs are not writable arrays")

    expect_error(lambda: c.infer("nope", {"X": x}), 404, "http: infer on an unknown model")
    expect_error(lambda: c.infer("demo", {"X": x.astype(np.float64)}), 400, "http: infer with FP64 for FP32")
    expect_error(lambda: c.infer("demo", {"Y": x}), 400, "http: infer with an unknown input")
    expect_error(lambda: c.model_metadata("nope"), 404, "http: metadata of an unknown model")
    check(c.infer("demo", {"X": x[:2]})["probabilities"].shape == (2, 10), "http: the connection broke after errors")

    for dt in id_types:
        a = sample(dt, rng)
        for binary in (True, False):
            y = c.infer(f"id_{dt.lower()}", {"X": a}, binary=binary).get("Y")
            check(y is not None and same(y, a), f"http: identity {dt} binary={binary}: {y!r} != {a!r}")

    st = c.statistics("demo")
    s0 = st["model_stats"][0]
    check(s0["name"] == "demo" and s0["inference_stats"]["success"]["count"] >= 6, f"http: statistics {s0}")
    names = {s["name"] for s in c.statistics()["model_stats"]}
    check({"demo", "demo2"} <= names, f"http: statistics() of all models names {names}")

    index = {m["name"]: m for m in c.repository_index()}
    check(index.get("demo2", {}).get("state") == "READY", f"http: repository_index {index}")
    c.unload_model("demo2")
    check(not c.is_model_ready("demo2"), "http: demo2 is ready after unload_model")
    # (the protocol leaves the status open: onyx answers 404, as for an unknown model)
    expect_error(lambda: c.infer("demo2", {"X": x}), (404, 503), "http: infer on an unloaded model")
    c.load_model("demo2", {"max_batch_size": 2})
    check(c.is_model_ready("demo2"), "http: demo2 is not ready after load_model")
    check(c.model_config("demo2").get("max_batch_size") == 2, "http: load_model's config was not used")
    check(np.allclose(c.infer("demo2", {"X": x[:2]})["probabilities"], ref[:2], rtol=1e-5, atol=1e-6),
          "http: infer on the reloaded model")
    expect_error(lambda: c.infer("demo2", {"X": x}), 400, "http: a batch over max_batch_size")
    c.load_model("demo2")  # back to the model's own config
    c.close()
    with HttpClient(f"http://127.0.0.1:{ports['http']}") as c2:
        check(c2.is_server_ready(), "http: a client from an http:// url")
    print("ok: HttpClient")


def check_grpc(ports, repo, id_types):
    import grpc
    from onyx.client import GrpcClient
    c = GrpcClient(f"localhost:{ports['grpc']}")
    check(c.is_server_live() and c.is_server_ready(), "grpc: not live/ready")
    meta = c.server_metadata()
    check(meta["name"] == "onyx" and meta["extensions"], f"grpc: server_metadata {meta}")
    mm = c.model_metadata("demo")
    check(mm["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, 16]}] and mm["versions"] == ["1"],
          f"grpc: model_metadata {mm}")
    cfg = c.model_config("demo")
    check(cfg.get("name") == "demo" and cfg.get("max_batch_size") == 4, f"grpc: model_config {cfg}")
    check(c.is_model_ready("demo", "1") and not c.is_model_ready("nope"), "grpc: is_model_ready")

    rng = np.random.default_rng(2)
    x = rng.random((4, 16), dtype=np.float32)
    ref = demo_reference(repo / "demo" / "1" / "model.onnx", x)
    for kwargs in ({}, {"outputs": ["probabilities"], "version": "1"}, {"request_id": "g1"}):
        y = c.infer("demo", {"X": x}, **kwargs).get("probabilities")
        check(y is not None and y.shape == (4, 10) and np.allclose(y, ref, rtol=1e-5, atol=1e-6),
              f"grpc: infer {kwargs} gave {y!r}")
    expect_error(lambda: c.infer("nope", {"X": x}), grpc.StatusCode.NOT_FOUND, "grpc: infer on an unknown model")
    expect_error(lambda: c.infer("demo", {"X": x.astype(np.int32)}), grpc.StatusCode.INVALID_ARGUMENT,
                 "grpc: infer with INT32 for FP32")
    for dt in id_types:
        a = sample(dt, rng)
        y = c.infer(f"id_{dt.lower()}", {"X": a}).get("Y")
        check(y is not None and same(y, a), f"grpc: identity {dt}: {y!r} != {a!r}")
    st = c.statistics("demo")
    check(st["model_stats"][0]["name"] == "demo", f"grpc: statistics {st}")
    check(any(m.get("name") == "demo" for m in c.repository_index()), "grpc: repository_index")
    c.unload_model("demo2")
    check(not c.is_model_ready("demo2"), "grpc: demo2 ready after unload_model")
    c.load_model("demo2")
    check(c.is_model_ready("demo2"), "grpc: demo2 not ready after load_model")
    c.close()
    print("ok: GrpcClient")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    cli = os.path.abspath(sys.argv[1])
    if len(sys.argv) == 3:
        os.environ["ONYX_SERVE_STUBS"] = sys.argv[2]
    check_local_codec()
    with tempfile.TemporaryDirectory(prefix="onyx-client-") as tmp:
        work = Path(tmp)
        repo = work / "repo"
        model = repo / "demo" / "1" / "model.onnx"
        model.parent.mkdir(parents=True)
        subprocess.run([cli, "demo", str(model)], check=True, stdout=subprocess.DEVNULL, timeout=120)
        (repo / "demo2" / "1").mkdir(parents=True)
        shutil.copy(model, repo / "demo2" / "1" / "model.onnx")
        id_types = write_identity_models(repo)
        proc, ports = start_server(cli, repo, work)
        try:
            for part in (check_http, check_grpc):
                try:
                    part(ports, repo, id_types)
                except Exception:
                    check(False, f"{part.__name__} raised:\n{traceback.format_exc()}")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                check(proc.wait(timeout=40) == 0, f"the server exited {proc.returncode} on SIGTERM")
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                check(False, "the server did not exit on SIGTERM")
            if failures:
                print("---- server log\n" + (work / "server.log").read_text(errors="replace"))
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("onyx.client agrees with onyx serve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
