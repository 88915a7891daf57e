# Dynamic batching: concurrent requests batched (execution_count < inference_count) with correct answers, requests
# of different shapes never mixed, a full queue refused (503 / UNAVAILABLE), a request timeout in the queue.
import threading
import time

import grpc
import numpy as np
import pytest
import requests
from onnx import TensorProto, helper

import grpc_service_pb2 as pb

from conftest import Repo, Server, add_const_model, save_model, slow_model, stats_of, stop_and_check, _vi


@pytest.fixture(scope="module")
def batch_server(tmp_path_factory):
    repo = Repo(tmp_path_factory.mktemp("batch_repo"))
    add_const_model(repo.model_path("db"), TensorProto.FLOAT, ["N", 4], 1.0)
    repo.config("db", """
name: "db"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { max_queue_delay_microseconds: 200000 }
""")
    # (a 200 ms queue delay: the test's threads send their requests within it even on a loaded machine)
    # two symbolic dims: Y = X * 3
    three = helper.make_tensor("three", TensorProto.FLOAT, [], [3.0])
    save_model(repo.model_path("dyn2"), [helper.make_node("Mul", ["X", "three"], ["Y"])],
               [_vi("X", TensorProto.FLOAT, ["N", "L"])], [_vi("Y", TensorProto.FLOAT, ["N", "L"])], [three])
    repo.config("dyn2", """
name: "dyn2"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]
dynamic_batching { max_queue_delay_microseconds: 200000 }
""")
    slow_model(repo.model_path("qfull"))
    repo.config("qfull", """
name: "qfull"
max_batch_size: 1
dynamic_batching { default_queue_policy { max_queue_size: 1 } }
parameters { key: "threads" value { string_value: "1" } }
""")
    # A run of several hundred ms (64 products of 1024x1024 matrices), far beyond the 100 ms timeout below
    slow_model(repo.model_path("qtimeout"), steps=64)
    repo.config("qtimeout", """
name: "qtimeout"
max_batch_size: 1
dynamic_batching { default_queue_policy { allow_timeout_override: true timeout_action: REJECT } }
parameters { key: "threads" value { string_value: "1" } }
""")
    s = Server(repo.root, tmp_path_factory.mktemp("batch_srv"), name="batch")
    yield s
    stop_and_check(s)


def concurrently(n, fn):
    """Runs fn(i) in n threads released together; returns the results (or exceptions) by index."""
    barrier = threading.Barrier(n)
    out = [None] * n

    def run(i):
        barrier.wait()
        try:
            out[i] = fn(i)
        except Exception as e:  # reported by the caller
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def rest_infer(server, model, x, session=None, params=None):
    body = {"inputs": [{"name": "X", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]}
    if params:
        body["parameters"] = params
    return (session or requests).post(f"{server.http}/v2/models/{model}/infer", json=body, timeout=60)


def test_dynamic_batching_rest_threads(batch_server):
    before = stats_of(batch_server, "db", "1")
    sessions = [requests.Session() for _ in range(8)]
    for s in sessions:  # connected before the race
        assert s.get(batch_server.http + "/v2/health/live", timeout=10).status_code == 200
    xs = [np.full((1, 4), float(i), np.float32) + np.arange(4, dtype=np.float32) for i in range(8)]
    for _ in range(3):
        res = concurrently(8, lambda i: rest_infer(batch_server, "db", xs[i], sessions[i]))
        for i, r in enumerate(res):
            assert not isinstance(r, Exception), r
            assert r.status_code == 200, r.text
            out = r.json()["outputs"][0]
            assert out["shape"] == [1, 4]
            np.testing.assert_array_equal(np.array(out["data"], np.float32).reshape(1, 4), xs[i] + 1)
    after = stats_of(batch_server, "db", "1")
    inf = after["inference_count"] - before["inference_count"]
    exe = after["execution_count"] - before["execution_count"]
    assert inf == 24, after
    assert exe < inf, f"no batching: {exe} executions for {inf} inferences"
    assert after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"] == 24
    # batch_stats: some batch size above 1 was run
    assert any(b["batch_size"] > 1 for b in after.get("batch_stats", [])), after.get("batch_stats")


def test_dynamic_batching_grpc_futures(batch_server):
    before = stats_of(batch_server, "db", "1")
    stub = batch_server.stub()
    futs = []
    for i in range(8):
        req = pb.ModelInferRequest(model_name="db", id=str(i))
        t = req.inputs.add()
        t.name, t.datatype = "X", "FP32"
        t.shape.extend([2, 4])
        req.raw_input_contents.append(np.full((2, 4), i, np.float32).tobytes())
        futs.append(stub.ModelInfer.future(req, timeout=30))
    for i, f in enumerate(futs):
        resp = f.result()
        assert resp.id == str(i)
        assert list(resp.outputs[0].shape) == [2, 4]
        np.testing.assert_array_equal(np.frombuffer(resp.raw_output_contents[0], np.float32).reshape(2, 4),
                                      np.full((2, 4), i + 1, np.float32))
    after = stats_of(batch_server, "db", "1")
    # a request of batch 2 counts 2 inference items
    assert after["inference_count"] - before["inference_count"] == 16
    assert after["execution_count"] - before["execution_count"] < 8


def test_different_shapes_not_mixed(batch_server):
    shapes = [(1, 2), (1, 3), (2, 5), (1, 2), (3, 3), (1, 7), (2, 2), (1, 3)]
    xs = [np.arange(np.prod(s), dtype=np.float32).reshape(s) + 10 * i for i, s in enumerate(shapes)]
    for _ in range(2):
        res = concurrently(len(xs), lambda i: rest_infer(batch_server, "dyn2", xs[i]))
        for i, r in enumerate(res):
            assert not isinstance(r, Exception), r
            assert r.status_code == 200, r.text
            out = r.json()["outputs"][0]
            assert out["shape"] == list(shapes[i])
            np.testing.assert_array_equal(np.array(out["data"], np.float32).reshape(shapes[i]), xs[i] * 3)


def test_over_max_batch_size_refused(batch_server):
    r = rest_infer(batch_server, "db", np.zeros((9, 4), np.float32))
    assert r.status_code == 400 and "error" in r.json(), r.text


def test_queue_full(batch_server):
    n = 12
    x = np.ones((1, 4), np.float32)
    res = concurrently(n, lambda i: rest_infer(batch_server, "qfull", x))
    codes = []
    for r in res:
        assert not isinstance(r, Exception), r
        codes.append(r.status_code)
        if r.status_code == 200:
            np.testing.assert_array_equal(np.array(r.json()["outputs"][0]["data"], np.float32), [2.0] * 4)
        else:
            assert r.status_code == 503, r.text
            assert r.json()["error"]
    assert codes.count(200) >= 1, codes
    assert codes.count(503) >= 1, codes
    # gRPC: the same refusal is UNAVAILABLE
    stub = batch_server.stub()
    futs = []
    for i in range(n):
        req = pb.ModelInferRequest(model_name="qfull")
        t = req.inputs.add()
        t.name, t.datatype = "X", "FP32"
        t.shape.extend([1, 4])
        req.raw_input_contents.append(x.tobytes())
        futs.append(stub.ModelInfer.future(req, timeout=60))
    ok = unavailable = 0
    for f in futs:
        try:
            f.result()
            ok += 1
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNAVAILABLE, e
            unavailable += 1
    assert ok >= 1 and unavailable >= 1, (ok, unavailable)
    assert batch_server.live()


def test_request_timeout(batch_server):
    # one slow request runs; those queued behind it with a 100 ms timeout expire in the queue (100 ms, not less:
    # on a loaded machine the first request's own hand-off to an instance may take a few ms)
    x = np.ones((1, 4), np.float32)
    n = 6
    res = concurrently(n, lambda i: rest_infer(batch_server, "qtimeout", x, params={"timeout": 100000}))
    codes = [r.status_code for r in res]
    assert codes.count(200) >= 1, codes
    assert codes.count(503) >= 1, codes
    assert set(codes) <= {200, 503}, [r.text for r in res]
    for r in res:
        if r.status_code == 503:
            assert "timeout" in r.json()["error"].lower() or "timed out" in r.json()["error"].lower(), r.text
    # gRPC: the timeout parameter as int64_param
    stub = batch_server.stub()
    futs = []
    for _ in range(n):
        req = pb.ModelInferRequest(model_name="qtimeout")
        req.parameters["timeout"].int64_param = 100000
        t = req.inputs.add()
        t.name, t.datatype = "X", "FP32"
        t.shape.extend([1, 4])
        req.raw_input_contents.append(x.tobytes())
        futs.append(stub.ModelInfer.future(req, timeout=60))
    codes = []
    for f in futs:
        try:
            f.result()
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as e:
            codes.append(e.code())
    assert grpc.StatusCode.OK in codes and grpc.StatusCode.UNAVAILABLE in codes, codes
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, codes
    # without a timeout, all finish
    res = concurrently(3, lambda i: rest_infer(batch_server, "qtimeout", x))
    assert [r.status_code for r in res] == [200] * 3, [r.text for r in res]
    assert batch_server.live()


def test_pending_count_back_to_zero(batch_server):
    import re
    text = batch_server.metrics()
    for model in ("db", "dyn2", "qfull", "qtimeout"):
        m = re.search(r'^nv_inference_pending_request_count\{[^}]*model="' + model + r'"[^}]*\}\s+(\S+)', text, re.M)
        assert m and float(m.group(1)) == 0.0, (model, text[:2000])
