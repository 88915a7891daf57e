# Health, server and model metadata, model readiness, configuration, statistics and metrics, over REST and gRPC.
import re
import subprocess

import grpc
import numpy as np
import pytest

import grpc_service_pb2 as pb
import health_pb2

from conftest import stats_of


def infer_m(server, n=1):
    x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    r = server.post("/v2/models/m/infer", json={"inputs": [
        {"name": "X", "shape": [n, 4], "datatype": "FP32", "data": x.ravel().tolist()}]})
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    np.testing.assert_array_equal(np.array(out["data"], np.float32).reshape(out["shape"]), x + 1)


def test_health_rest(server):
    assert server.get("/v2/health/live").status_code == 200
    assert server.get("/v2/health/ready").status_code == 200


def test_health_curl(server):
    # a real curl client: status codes only, then a JSON infer
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", server.http + "/v2/health/ready"],
                         capture_output=True, text=True, timeout=20)
    assert out.stdout == "200", out
    body = '{"inputs":[{"name":"X","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'
    out = subprocess.run(["curl", "-s", "-f", "-X", "POST", "-H", "Content-Type: application/json", "--data", body,
                          server.http + "/v2/models/m/infer"], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out
    import json
    res = json.loads(out.stdout)
    assert res["model_name"] == "m"
    assert res["outputs"][0]["data"] == [2.0, 3.0, 4.0, 5.0]


def test_health_grpc(server):
    stub = server.stub()
    assert stub.ServerLive(pb.ServerLiveRequest()).live is True
    assert stub.ServerReady(pb.ServerReadyRequest()).ready is True
    h = server.health_stub().Check(health_pb2.HealthCheckRequest(service=""))
    assert h.status == health_pb2.HealthCheckResponse.SERVING


def test_server_metadata(server):
    r = server.get("/v2")
    assert r.status_code == 200
    meta = r.json()
    assert meta["name"] == "onyx"
    assert isinstance(meta["version"], str) and meta["version"]
    assert isinstance(meta["extensions"], list)
    g = server.stub().ServerMetadata(pb.ServerMetadataRequest())
    assert g.name == "onyx" and g.version == meta["version"]
    assert list(g.extensions) == meta["extensions"]


def test_model_metadata(server):
    for path in ("/v2/models/m", "/v2/models/m/versions/1"):
        r = server.get(path)
        assert r.status_code == 200, r.text
        meta = r.json()
        assert meta["name"] == "m"
        assert meta["versions"] == ["1"]
        assert meta["platform"] == "onnxruntime_onnx"
        assert meta["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, 4]}]
        assert meta["outputs"] == [{"name": "Y", "datatype": "FP32", "shape": [-1, 4]}]
    g = server.stub().ModelMetadata(pb.ModelMetadataRequest(name="m", version="1"))
    assert g.name == "m" and list(g.versions) == ["1"] and g.platform == "onnxruntime_onnx"
    assert [(t.name, t.datatype, list(t.shape)) for t in g.inputs] == [("X", "FP32", [-1, 4])]
    assert [(t.name, t.datatype, list(t.shape)) for t in g.outputs] == [("Y", "FP32", [-1, 4])]


def test_model_metadata_batched(server):
    # max_batch_size > 0: the batch dim comes first as -1, then config dims
    meta = server.get("/v2/models/batched").json()
    assert meta["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, 3]}]
    assert meta["outputs"] == [{"name": "Y", "datatype": "FP32", "shape": [-1, 3]}]


def test_model_ready(server):
    assert server.get("/v2/models/m/ready").status_code == 200
    assert server.get("/v2/models/m/versions/1/ready").status_code == 200
    assert 400 <= server.get("/v2/models/m/versions/9/ready").status_code < 500
    assert 400 <= server.get("/v2/models/nope/ready").status_code < 500
    stub = server.stub()
    assert stub.ModelReady(pb.ModelReadyRequest(name="m", version="")).ready is True
    assert stub.ModelReady(pb.ModelReadyRequest(name="m", version="1")).ready is True
    # Triton answers ready=false (not an error) for a model it does not have
    try:
        assert stub.ModelReady(pb.ModelReadyRequest(name="nope")).ready is False
    except grpc.RpcError as e:
        assert e.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE), e


def test_model_config_rest(server):
    r = server.get("/v2/models/batched/config")
    assert r.status_code == 200, r.text
    c = r.json()
    assert c["name"] == "batched"
    assert c["max_batch_size"] == 4
    assert c["platform"] == "onnxruntime_onnx" or c.get("backend") == "onnxruntime"
    assert [(i["name"], i["data_type"], [int(d) for d in i["dims"]]) for i in c["input"]] == [("X", "TYPE_FP32", [3])]
    assert [(o["name"], o["data_type"], [int(d) for d in o["dims"]]) for o in c["output"]] == [("Y", "TYPE_FP32", [3])]
    # completed from the model when there is no config.pbtxt
    c = server.get("/v2/models/add_int64/config").json()
    assert c["name"] == "add_int64"
    assert c.get("max_batch_size", 0) == 0
    assert sorted(i["name"] for i in c["input"]) == ["A", "B"]
    assert {i["data_type"] for i in c["input"]} == {"TYPE_INT64"}
    assert [[int(d) for d in i["dims"]] for i in c["input"]] == [[2, 3], [2, 3]]
    assert sorted(o["name"] for o in c["output"]) == ["W", "Z"]


def test_model_config_grpc(server):
    g = server.stub().ModelConfig(pb.ModelConfigRequest(name="batched")).config
    assert g.name == "batched" and g.max_batch_size == 4
    assert [(i.name, list(i.dims)) for i in g.input] == [("X", [3])]
    assert [(o.name, list(o.dims)) for o in g.output] == [("Y", [3])]


def test_statistics_go_up(server):
    before = stats_of(server, "m", "1")
    for n in (1, 2, 3):
        infer_m(server, n)
    after = stats_of(server, "m", "1")
    assert after["name"] == "m" and after["version"] == "1"
    s0, s1 = before["inference_stats"], after["inference_stats"]
    assert s1["success"]["count"] - s0["success"]["count"] == 3
    assert s1["success"]["ns"] > s0["success"]["ns"]
    assert s1["compute_infer"]["count"] - s0["compute_infer"]["count"] >= 1
    assert after["execution_count"] - before["execution_count"] == 3
    # without batching each request counts once (Triton: inference_count is the batch items; here no batching)
    assert after["inference_count"] - before["inference_count"] >= 3
    assert after["last_inference"] >= before["last_inference"] and after["last_inference"] > 0
    # the model-wide form lists every version
    assert any(e["version"] == "1" for e in stats_of(server, "m"))
    # gRPC: the same counts
    g = server.stub().ModelStatistics(pb.ModelStatisticsRequest(name="m", version="1"))
    gs = g.model_stats[0]
    assert gs.name == "m" and gs.version == "1"
    assert gs.inference_stats.success.count == s1["success"]["count"]
    assert gs.execution_count == after["execution_count"]
    infer_m(server, 1)
    g2 = server.stub().ModelStatistics(pb.ModelStatisticsRequest(name="m", version="1")).model_stats[0]
    assert g2.inference_stats.success.count == gs.inference_stats.success.count + 1


def test_statistics_all_models(server):
    r = server.get("/v2/models/stats")
    assert r.status_code == 200
    names = {e["name"] for e in r.json()["model_stats"]}
    assert {"m", "batched", "id_fp32"} <= names
    g = server.stub().ModelStatistics(pb.ModelStatisticsRequest(name=""))
    assert {e.name for e in g.model_stats} == names


def _metric(text, name, model, version="1"):
    pat = re.compile(r"^" + re.escape(name) + r"\{([^}]*)\}\s+([0-9.eE+-]+)\s*$", re.M)
    for labels, value in pat.findall(text):
        lab = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if lab.get("model") == model and lab.get("version") == version:
            return float(value)
    return None


def test_metrics(server):
    text = server.metrics()
    before = _metric(text, "nv_inference_request_success", "m") or 0.0
    for _ in range(4):
        infer_m(server)
    text = server.metrics()
    assert "# TYPE nv_inference_request_success counter" in text
    assert _metric(text, "nv_inference_request_success", "m") == before + 4, text[:3000]
    assert _metric(text, "nv_inference_pending_request_count", "m") == 0.0, text[:3000]
    assert _metric(text, "nv_inference_request_failure", "m") is not None
    assert _metric(text, "nv_inference_count", "m") is not None
    assert _metric(text, "nv_inference_exec_count", "m") is not None
    # the count equals the statistics extension's
    st = stats_of(server, "m", "1")
    assert st["inference_stats"]["success"]["count"] == _metric(text, "nv_inference_request_success", "m")

