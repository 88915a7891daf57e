# config.pbtxt: version policies over several version folders, model_warmup, parameters, and configs that must
# fail to load (with their reason in the repository index) while the other models are served.
import grpc
import numpy as np
import pytest
from onnx import TensorProto

import grpc_service_pb2 as pb

from conftest import Repo, add_const_model, assert_error, stop_and_check, Server


@pytest.fixture(scope="module")
def cfg_server(tmp_path_factory):
    repo = Repo(tmp_path_factory.mktemp("cfg_repo"))
    # versions 1..3 of each: Y = X + version
    for name, policy in (("vl", "version_policy: { latest { num_versions: 2 } }"),
                         ("vs", "version_policy: { specific { versions: [1] } }"),
                         ("va", "version_policy: { all {} }"),
                         ("vd", None)):
        for v in (1, 2, 3):
            add_const_model(repo.model_path(name, v), TensorProto.FLOAT, [2], float(v))
        if policy:
            repo.config(name, f'name: "{name}"\nplatform: "onnxruntime_onnx"\n{policy}\n')
    add_const_model(repo.model_path("warm"), TensorProto.FLOAT, ["N", 4], 1.0)
    repo.config("warm", """
name: "warm"
max_batch_size: 2
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
model_warmup [
  { name: "zeros" batch_size: 1 inputs { key: "X" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } },
  { name: "random" batch_size: 2 count: 3
    inputs { key: "X" value { data_type: TYPE_FP32 dims: [ 4 ] random_data: true } } }
]
""")
    add_const_model(repo.model_path("thr"), TensorProto.FLOAT, ["N", 4], 1.0)
    repo.config("thr", """
name: "thr"
parameters { key: "threads" value { string_value: "1" } }
instance_group [ { count: 1 kind: KIND_CPU } ]
""")
    add_const_model(repo.model_path("bad_field"), TensorProto.FLOAT, ["N", 4], 1.0)
    repo.config("bad_field", 'name: "bad_field"\nbogus_setting_xyz: 3\n')
    add_const_model(repo.model_path("bad_input"), TensorProto.FLOAT, ["N", 4], 1.0)
    repo.config("bad_input", """
name: "bad_input"
input [ { name: "NOT_THERE" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
""")
    add_const_model(repo.model_path("bad_type"), TensorProto.FLOAT, ["N", 4], 1.0)
    repo.config("bad_type", """
name: "bad_type"
input [ { name: "X" data_type: TYPE_INT32 dims: [ -1, 4 ] } ]
""")
    add_const_model(repo.model_path("bad_warmup"), TensorProto.FLOAT, ["N", 4], 1.0)
    repo.config("bad_warmup", """
name: "bad_warmup"
model_warmup [ { name: "w" batch_size: 1 inputs { key: "NOPE" value { data_type: TYPE_FP32 dims: [ 1, 4 ] zero_data: true } } } ]
""")
    s = Server(repo.root, tmp_path_factory.mktemp("cfg_srv"), name="cfg")
    yield s
    stop_and_check(s)


def infer2(server, model, version=None):
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
    return server.post(path, json={"inputs": [{"name": "X", "shape": [2], "datatype": "FP32", "data": [10, 20]}]})


def answered_by(r):
    assert r.status_code == 200, r.text
    res = r.json()
    d = res["outputs"][0]["data"]
    return res["model_version"], d[0] - 10


@pytest.mark.parametrize("model,versions,default", [("vl", ["2", "3"], "3"), ("vs", ["1"], "1"),
                                                     ("va", ["1", "2", "3"], "3"), ("vd", ["3"], "3")])
def test_version_policy(cfg_server, model, versions, default):
    meta = cfg_server.get(f"/v2/models/{model}").json()
    assert sorted(meta["versions"]) == versions
    assert answered_by(infer2(cfg_server, model)) == (default, float(default))
    for v in ("1", "2", "3"):
        r = infer2(cfg_server, model, v)
        if v in versions:
            assert answered_by(r) == (v, float(v))
            assert cfg_server.get(f"/v2/models/{model}/versions/{v}/ready").status_code == 200
        else:
            assert r.status_code in (404, 503), r.text
            assert "error" in r.json()
            assert cfg_server.get(f"/v2/models/{model}/versions/{v}/ready").status_code != 200
    g = cfg_server.stub().ModelMetadata(pb.ModelMetadataRequest(name=model))
    assert sorted(g.versions) == versions


def test_index_lists_versions(cfg_server):
    r = cfg_server.post("/v2/repository/index", json={})
    assert r.status_code == 200, r.text
    ready = {(e["name"], e.get("version", "")) for e in r.json() if e.get("state") == "READY"}
    assert {("vl", "2"), ("vl", "3"), ("vs", "1"), ("va", "1"), ("va", "2"), ("va", "3"), ("vd", "3")} <= ready
    assert ("vl", "1") not in ready and ("vs", "3") not in ready


def test_warmup_model_ready(cfg_server):
    assert cfg_server.get("/v2/models/warm/ready").status_code == 200
    r = cfg_server.post("/v2/models/warm/infer", json={"inputs": [
        {"name": "X", "shape": [2, 4], "datatype": "FP32", "data": list(range(8))}]})
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [float(i + 1) for i in range(8)]


def test_threads_parameter(cfg_server):
    assert cfg_server.get("/v2/models/thr/ready").status_code == 200
    c = cfg_server.get("/v2/models/thr/config").json()
    assert c["parameters"]["threads"]["string_value"] == "1"
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    r = cfg_server.post("/v2/models/thr/infer", json={"inputs": [
        {"name": "X", "shape": [3, 4], "datatype": "FP32", "data": x.ravel().tolist()}]})
    assert r.status_code == 200, r.text
    np.testing.assert_array_equal(np.array(r.json()["outputs"][0]["data"], np.float32).reshape(3, 4), x + 1)


@pytest.mark.parametrize("model,word", [("bad_field", "bogus_setting_xyz"), ("bad_input", "NOT_THERE"),
                                        ("bad_type", "int32"), ("bad_warmup", "NOPE")])
def test_bad_config_fails_to_load(cfg_server, model, word):
    index = cfg_server.post("/v2/repository/index", json={}).json()
    entries = [e for e in index if e["name"] == model]
    assert entries, index
    for e in entries:
        assert e.get("state") != "READY"
        assert e.get("state") == "UNAVAILABLE", e
    assert any(word.lower() in e.get("reason", "").lower() for e in entries), entries
    assert cfg_server.get(f"/v2/models/{model}/ready").status_code != 200
    r = cfg_server.post(f"/v2/models/{model}/infer", json={"inputs": [
        {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]})
    assert r.status_code in (404, 503) and "error" in r.json(), r.text
    # gRPC index: the same reason
    g = cfg_server.stub().RepositoryIndex(pb.RepositoryIndexRequest())
    assert any(m.name == model and word.lower() in m.reason.lower() for m in g.models)
    # the others are served
    assert answered_by(infer2(cfg_server, "vd")) == ("3", 3.0)


def test_server_still_live_with_failed_models(cfg_server):
    assert cfg_server.get("/v2/health/live").status_code == 200
    assert cfg_server.stub().ServerLive(pb.ServerLiveRequest()).live
