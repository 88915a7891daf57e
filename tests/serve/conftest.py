# Fixtures for the `onyx serve` tests: model repositories built with onnx.helper in tmp dirs, servers started with
# --port-file on free ports, and the clients' helpers (REST with requests, gRPC with the generated stubs).
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
import requests
from onnx import TensorProto, helper, numpy_helper

STUBS = os.environ.get("ONYX_SERVE_STUBS", "")
if STUBS:
    sys.path.insert(0, STUBS)

OPSET = 17

# v2 name -> (numpy dtype, ONNX element type, Triton config type). BF16 travels as uint16 bit patterns.
DTYPES = {
    "BOOL": (np.bool_, TensorProto.BOOL, "TYPE_BOOL"),
    "UINT8": (np.uint8, TensorProto.UINT8, "TYPE_UINT8"),
    "UINT16": (np.uint16, TensorProto.UINT16, "TYPE_UINT16"),
    "UINT32": (np.uint32, TensorProto.UINT32, "TYPE_UINT32"),
    "UINT64": (np.uint64, TensorProto.UINT64, "TYPE_UINT64"),
    "INT8": (np.int8, TensorProto.INT8, "TYPE_INT8"),
    "INT16": (np.int16, TensorProto.INT16, "TYPE_INT16"),
    "INT32": (np.int32, TensorProto.INT32, "TYPE_INT32"),
    "INT64": (np.int64, TensorProto.INT64, "TYPE_INT64"),
    "FP16": (np.float16, TensorProto.FLOAT16, "TYPE_FP16"),
    "FP32": (np.float32, TensorProto.FLOAT, "TYPE_FP32"),
    "FP64": (np.float64, TensorProto.DOUBLE, "TYPE_FP64"),
    "BF16": (np.uint16, TensorProto.BFLOAT16, "TYPE_BF16"),
    "BYTES": (np.object_, TensorProto.STRING, "TYPE_STRING"),
}


# ---------------------------------------------------------------- models
def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def save_model(path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="onyx-serve-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def identity_model(path, elem, shape, in_name="X", out_name="Y"):
    save_model(path, [helper.make_node("Identity", [in_name], [out_name])],
               [_vi(in_name, elem, shape)], [_vi(out_name, elem, shape)])


def add_const_model(path, elem, shape, const, np_dtype=np.float32):
    """Y = X + const (const a scalar)."""
    c = helper.make_tensor("C", elem, [], [np_dtype(const).item()])
    save_model(path, [helper.make_node("Add", ["X", "C"], ["Y"])],
               [_vi("X", elem, shape)], [_vi("Y", elem, shape)], [c])


def add_model(path, elem, shape):
    """Z = A + B, W = A - B."""
    save_model(path, [helper.make_node("Add", ["A", "B"], ["Z"]), helper.make_node("Sub", ["A", "B"], ["W"])],
               [_vi("A", elem, shape), _vi("B", elem, shape)], [_vi("Z", elem, shape), _vi("W", elem, shape)])


def slow_model(path, size=1024, steps=16, shape=("N", 4)):
    """Y = X + 1 after `steps` MatMuls of size x size that depend on X (nothing folds them away)."""
    rng = np.random.default_rng(0)
    w = (rng.random((size, size), dtype=np.float32) / size).astype(np.float32)
    nodes = [helper.make_node("ReduceMax", ["X"], ["s"], keepdims=0),
             helper.make_node("Mul", ["W", "s"], ["m0"])]
    for i in range(steps):
        nodes.append(helper.make_node("MatMul", [f"m{i}", "W"], [f"m{i + 1}"]))
    nodes += [helper.make_node("ReduceSum", [f"m{steps}"], ["r"], keepdims=0),
              helper.make_node("Mul", ["r", "zero"], ["rz"]),
              helper.make_node("Add", ["X", "one"], ["x1"]),
              helper.make_node("Add", ["x1", "rz"], ["Y"])]
    inits = [numpy_helper.from_array(w, "W"),
             helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    save_model(path, nodes, [_vi("X", TensorProto.FLOAT, list(shape))], [_vi("Y", TensorProto.FLOAT, list(shape))],
               inits)


class Repo:
    """A Triton-layout model repository: ROOT/<model>/<version>/model.onnx and ROOT/<model>/config.pbtxt."""

    def __init__(self, root):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def model_path(self, name, version=1):
        return self.root / name / str(version) / "model.onnx"

    def config(self, name, text):
        (self.root / name).mkdir(parents=True, exist_ok=True)
        (self.root / name / "config.pbtxt").write_text(text)


def fill_main_repo(repo):
    """The models most tests share."""
    for dt, (_, elem, _) in DTYPES.items():
        identity_model(repo.model_path(f"id_{dt.lower()}"), elem, [6])
    add_model(repo.model_path("add_fp32"), TensorProto.FLOAT, [2, 3])
    add_model(repo.model_path("add_int32"), TensorProto.INT32, [2, 3])
    add_model(repo.model_path("add_int64"), TensorProto.INT64, [2, 3])
    add_model(repo.model_path("add_fp64"), TensorProto.DOUBLE, [2, 3])
    # "m": Y = X + 1 over FP32 [N, 4], used by metadata, statistics and metrics
    add_const_model(repo.model_path("m"), TensorProto.FLOAT, ["N", 4], 1.0)
    # batched: max_batch_size with dims without the batch dim
    add_const_model(repo.model_path("batched"), TensorProto.FLOAT, ["N", 3], 2.0)
    repo.config("batched", """
name: "batched"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 3 ] } ]
""")


# ---------------------------------------------------------------- servers
def onyx_cli():
    cli = os.environ.get("ONYX_CLI")
    assert cli and Path(cli).exists(), "set ONYX_CLI to the onyx program (ctest does)"
    return cli


class Server:
    def __init__(self, repo_root, workdir, extra=(), http_max=None, name="server"):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port_file = self.workdir / f"{name}.ports.json"
        self.log_path = self.workdir / f"{name}.log"
        args = [onyx_cli(), "serve", "--model-repository", str(repo_root), "--http-port", "0", "--grpc-port", "0",
                "--metrics-port", "0", "--port-file", str(self.port_file)]
        if http_max is not None:
            args += ["--http-max-input-size", str(http_max)]
        args += list(extra)
        self.args = args
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.ports = self._wait_ports(30.0)
        self.http = f"http://127.0.0.1:{self.ports['http']}"
        self.grpc_target = f"127.0.0.1:{self.ports['grpc']}"
        self.metrics_url = f"http://127.0.0.1:{self.ports['metrics']}/metrics"
        self.session = requests.Session()
        self._channel = None

    def _wait_ports(self, limit):
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode} before listening:\n{self.log_text()}")
            if self.port_file.exists():
                try:
                    ports = json.loads(self.port_file.read_text())
                    if all(isinstance(ports.get(k), int) and ports[k] > 0 for k in ("http", "grpc", "metrics")):
                        return ports
                except ValueError:
                    pass  # being written
            time.sleep(0.02)
        self.proc.kill()
        raise AssertionError(f"no port file within {limit} s:\n{self.log_text()}")

    def log_text(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-6000:]

    @property
    def pid(self):
        return self.proc.pid

    # REST
    def get(self, path, **kw):
        kw.setdefault("timeout", 20)
        return self.session.get(self.http + path, **kw)

    def post(self, path, **kw):
        kw.setdefault("timeout", 20)
        return self.session.post(self.http + path, **kw)

    def live(self):
        try:
            return requests.get(self.http + "/v2/health/live", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def metrics(self):
        r = requests.get(self.metrics_url, timeout=10)
        assert r.status_code == 200, r.text
        return r.text

    # gRPC
    def channel(self):
        import grpc
        if self._channel is None:
            self._channel = grpc.insecure_channel(self.grpc_target)
            grpc.channel_ready_future(self._channel).result(timeout=10)
        return self._channel

    def stub(self):
        import grpc_service_pb2_grpc
        return grpc_service_pb2_grpc.GRPCInferenceServiceStub(self.channel())

    def health_stub(self):
        import health_pb2_grpc
        return health_pb2_grpc.HealthStub(self.channel())

    def terminate(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, limit=10.0):
        """SIGTERM, then the exit status (killed after `limit` seconds: None)."""
        self.session.close()
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        self.terminate()
        try:
            rc = self.proc.wait(limit)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.log.close()
        return rc


def stop_and_check(server, limit=10.0):
    if server.proc.poll() is not None and server.proc.returncode != 0:
        raise AssertionError(f"server died with {server.proc.returncode}:\n{server.log_text()}")
    rc = server.stop(limit)
    assert rc == 0, f"server did not exit 0 within {limit} s after SIGTERM (rc={rc}):\n{server.log_text()}"


@pytest.fixture
def make_server(tmp_path_factory):
    """Starts servers for one test; each is stopped with SIGTERM at teardown and must exit 0."""
    started = []

    def start(repo_root, *extra, http_max=None):
        s = Server(repo_root, tmp_path_factory.mktemp("srv"), extra, http_max)
        started.append(s)
        return s

    yield start
    for s in started:
        if not getattr(s, "stopped_by_test", False):
            stop_and_check(s)


@pytest.fixture(scope="session")
def main_repo(tmp_path_factory):
    repo = Repo(tmp_path_factory.mktemp("main_repo"))
    fill_main_repo(repo)
    return repo


@pytest.fixture(scope="session")
def server(main_repo, tmp_path_factory):
    """One server over the main repository for the tests that only read and infer."""
    s = Server(main_repo.root, tmp_path_factory.mktemp("main_srv"), name="main")
    yield s
    stop_and_check(s)


# ---------------------------------------------------------------- protocol helpers
def to_wire(arr, dt):
    """The raw bytes of a tensor in the binary extension / raw_*_contents."""
    if dt == "BYTES":
        out = b""
        for v in arr.ravel():
            v = v if isinstance(v, bytes) else str(v).encode()
            out += len(v).to_bytes(4, "little") + v
        return out
    return np.ascontiguousarray(arr).tobytes()


def from_wire(raw, dt, shape):
    if dt == "BYTES":
        vals, i = [], 0
        while i < len(raw):
            n = int.from_bytes(raw[i:i + 4], "little")
            vals.append(raw[i + 4:i + 4 + n])
            i += 4 + n
        return np.array(vals, dtype=np.object_).reshape(shape)
    return np.frombuffer(raw, dtype=DTYPES[dt][0]).reshape(shape)


def binary_request(json_obj, blobs):
    """Body and headers of a binary-extension request."""
    head = json.dumps(json_obj).encode()
    return head + b"".join(blobs), {"Inference-Header-Content-Length": str(len(head)),
                                    "Content-Type": "application/octet-stream"}


def parse_binary_response(resp):
    """(JSON header, {output name: raw bytes}) of a response that may carry binary outputs."""
    body = resp.content
    hlen = resp.headers.get("Inference-Header-Content-Length")
    if hlen is None:
        return json.loads(body), {}
    hlen = int(hlen)
    head = json.loads(body[:hlen])
    raw, pos = {}, hlen
    for o in head["outputs"]:
        size = (o.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            raw[o["name"]] = body[pos:pos + size]
            pos += size
    assert pos == len(body), f"binary section: {len(body) - hlen} bytes, outputs name {pos - hlen}"
    return head, raw


def assert_error(resp, status):
    """A REST error: the status, and a JSON object with a non-empty "error" string."""
    assert resp.status_code == status, f"expected {status}, got {resp.status_code}: {resp.text[:500]}"
    body = resp.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"], resp.text
    return body["error"]


def stats_of(server, model, version=""):
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/stats"
    r = server.get(path)
    assert r.status_code == 200, r.text
    st = r.json()["model_stats"]
    assert len(st) >= 1
    return st[0] if version else st


def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")
