# The repository extension: index, load and unload in explicit mode over REST and gRPC; an unloaded model is
# answered with one consistent error on both protocols; load/unload refused outside explicit mode.
import json
import threading

import grpc
import numpy as np
import pytest
import requests
from onnx import TensorProto

import grpc_service_pb2 as pb

from conftest import Repo, Server, add_const_model, assert_error, slow_model, stop_and_check


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    r = Repo(tmp_path_factory.mktemp("explicit_repo"))
    add_const_model(r.model_path("a"), TensorProto.FLOAT, ["N", 4], 1.0)
    add_const_model(r.model_path("b"), TensorProto.FLOAT, ["N", 4], 2.0)
    add_const_model(r.model_path("broken"), TensorProto.FLOAT, ["N", 4], 1.0)
    r.config("broken", 'name: "broken"\nnot_a_config_field: true\n')
    slow_model(r.model_path("slow"))
    r.config("slow", 'name: "slow"\nparameters { key: "threads" value { string_value: "1" } }\n')
    return r


@pytest.fixture(scope="module")
def explicit(repo, tmp_path_factory):
    s = Server(repo.root, tmp_path_factory.mktemp("explicit_srv"),
               ["--model-control-mode", "explicit", "--load-model", "a"], name="explicit")
    yield s
    stop_and_check(s)


def infer(server, model, value=0.0):
    return server.post(f"/v2/models/{model}/infer", json={"inputs": [
        {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [value] * 4}]})


def grpc_infer(server, model):
    req = pb.ModelInferRequest(model_name=model)
    t = req.inputs.add()
    t.name, t.datatype = "X", "FP32"
    t.shape.extend([1, 4])
    req.raw_input_contents.append(np.zeros(4, np.float32).tobytes())
    return server.stub().ModelInfer(req, timeout=20)


def index(server, ready=None):
    body = {} if ready is None else {"ready": ready}
    r = server.post("/v2/repository/index", json=body)
    assert r.status_code == 200, r.text
    return {e["name"]: e for e in r.json()}


# The pairs an unavailable model may be answered with; HTTP and gRPC must agree.
CONSISTENT = {404: grpc.StatusCode.NOT_FOUND, 503: grpc.StatusCode.UNAVAILABLE}


def check_not_served(server, model):
    r = infer(server, model)
    assert r.status_code in CONSISTENT, r.text
    assert_error(r, r.status_code)
    with pytest.raises(grpc.RpcError) as e:
        grpc_infer(server, model)
    assert e.value.code() == CONSISTENT[r.status_code], (r.status_code, e.value)
    assert server.get(f"/v2/models/{model}/ready").status_code != 200
    assert server.stub().ModelReady(pb.ModelReadyRequest(name=model)).ready is False


def test_startup_state(explicit):
    idx = index(explicit)
    assert set(idx) == {"a", "b", "broken", "slow"}
    assert idx["a"]["state"] == "READY" and idx["a"]["version"] == "1"
    assert idx["b"].get("state", "") != "READY"
    assert set(index(explicit, ready=True)) == {"a"}
    g = explicit.stub().RepositoryIndex(pb.RepositoryIndexRequest(ready=True))
    assert [(m.name, m.version, m.state) for m in g.models] == [("a", "1", "READY")]
    # server ready: every model loaded at startup is ready
    assert explicit.get("/v2/health/ready").status_code == 200
    check_not_served(explicit, "b")


def test_load_unload_rest(explicit):
    r = explicit.post("/v2/repository/models/b/load")
    assert r.status_code == 200, r.text
    assert index(explicit)["b"]["state"] == "READY"
    r = infer(explicit, "b", 1.0)
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [3.0] * 4
    r = explicit.post("/v2/repository/models/b/unload")
    assert r.status_code == 200, r.text
    e = index(explicit)["b"]
    assert e["state"] == "UNAVAILABLE", e
    check_not_served(explicit, "b")
    assert "b" not in index(explicit, ready=True)


def test_load_unload_grpc(explicit):
    stub = explicit.stub()
    stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="a"))
    check_not_served(explicit, "a")
    stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="a"))
    assert stub.ModelReady(pb.ModelReadyRequest(name="a")).ready
    resp = grpc_infer(explicit, "a")
    np.testing.assert_array_equal(np.frombuffer(resp.raw_output_contents[0], np.float32), [1.0] * 4)
    # loading a loaded model again is fine (a reload)
    stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="a"))
    assert infer(explicit, "a").status_code == 200


def test_load_with_config_override(explicit):
    cfg = {"name": "b", "max_batch_size": 2,
           "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [4]}],
           "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [4]}]}
    r = explicit.post("/v2/repository/models/b/load", json={"parameters": {"config": json.dumps(cfg)}})
    assert r.status_code == 200, r.text
    c = explicit.get("/v2/models/b/config").json()
    assert c["max_batch_size"] == 2
    meta = explicit.get("/v2/models/b").json()
    assert meta["inputs"][0]["shape"] == [-1, 4]
    r = explicit.post("/v2/models/b/infer", json={"inputs": [
        {"name": "X", "shape": [3, 4], "datatype": "FP32", "data": [0.0] * 12}]})
    assert r.status_code == 400, r.text  # over max_batch_size 2
    assert explicit.post("/v2/repository/models/b/unload").status_code == 200


def test_load_broken(explicit):
    r = explicit.post("/v2/repository/models/broken/load")
    msg = assert_error(r, 400)
    assert "not_a_config_field" in msg
    e = index(explicit)["broken"]
    assert e["state"] == "UNAVAILABLE" and "not_a_config_field" in e["reason"], e
    with pytest.raises(grpc.RpcError) as err:
        explicit.stub().RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="broken"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value
    assert "not_a_config_field" in err.value.details()
    assert infer(explicit, "a").status_code == 200
    assert explicit.live()


def test_load_unknown_model(explicit):
    r = explicit.post("/v2/repository/models/zzz/load")
    assert r.status_code in (400, 404), r.text
    assert_error(r, r.status_code)
    with pytest.raises(grpc.RpcError) as err:
        explicit.stub().RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="zzz"))
    assert err.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)


def test_unload_with_requests_in_flight(explicit):
    assert explicit.post("/v2/repository/models/slow/load").status_code == 200
    results = [None] * 3

    def run(i):
        results[i] = requests.post(f"{explicit.http}/v2/models/slow/infer", timeout=60, json={"inputs": [
            {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [float(i)] * 4}]})

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    import time
    time.sleep(0.05)
    r = explicit.post("/v2/repository/models/slow/unload")
    assert r.status_code == 200, r.text
    for t in threads:
        t.join(60)
    for i, r in enumerate(results):
        # a request accepted before the unload finishes on the old version; one that came after is refused
        assert r.status_code in (200, 404, 503), r.text
        if r.status_code == 200:
            assert r.json()["outputs"][0]["data"] == [float(i) + 1] * 4
    assert any(r.status_code == 200 for r in results), [r.text for r in results]
    check_not_served(explicit, "slow")


@pytest.fixture(scope="module")
def none_mode(repo, tmp_path_factory):
    r = Repo(tmp_path_factory.mktemp("none_repo"))
    add_const_model(r.model_path("a"), TensorProto.FLOAT, ["N", 4], 1.0)
    s = Server(r.root, tmp_path_factory.mktemp("none_srv"), name="none")
    yield s
    stop_and_check(s)


def test_no_load_unload_outside_explicit(none_mode):
    idx = index(none_mode)
    assert idx["a"]["state"] == "READY"
    assert_error(none_mode.post("/v2/repository/models/a/unload"), 400)
    assert_error(none_mode.post("/v2/repository/models/a/load"), 400)
    with pytest.raises(grpc.RpcError) as err:
        none_mode.stub().RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="a"))
    assert err.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAVAILABLE)
    # still served
    assert infer(none_mode, "a").status_code == 200
