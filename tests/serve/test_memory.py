# A leak check: RSS after 2000 requests (REST JSON, REST binary, gRPC, errors) within 5% of RSS after 200.
import numpy as np
import requests
from onnx import TensorProto

import grpc_service_pb2 as pb

from conftest import Repo, add_const_model, binary_request, identity_model, rss_kb


def test_rss_steady(tmp_path, make_server):
    repo = Repo(tmp_path / "repo")
    add_const_model(repo.model_path("m"), TensorProto.FLOAT, ["N", 16], 1.0)
    identity_model(repo.model_path("s"), TensorProto.STRING, ["N"])
    s = make_server(repo.root)
    sess = requests.Session()
    stub = s.stub()
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    json_body = {"inputs": [{"name": "X", "shape": [4, 16], "datatype": "FP32", "data": x.ravel().tolist()}]}
    bin_body, bin_headers = binary_request({"inputs": [{"name": "X", "shape": [4, 16], "datatype": "FP32",
                                                        "parameters": {"binary_data_size": x.nbytes}}],
                                            "outputs": [{"name": "Y", "parameters": {"binary_data": True}}]},
                                           [x.tobytes()])
    greq = pb.ModelInferRequest(model_name="m")
    t = greq.inputs.add()
    t.name, t.datatype = "X", "FP32"
    t.shape.extend([4, 16])
    greq.raw_input_contents.append(x.tobytes())
    sreq = {"inputs": [{"name": "X", "shape": [3], "datatype": "BYTES", "data": ["a", "bb" * 50, "ccc"]}]}
    bad = {"inputs": [{"name": "X", "shape": [4, 16], "datatype": "FP32", "data": [1.0]}]}

    def one(i):
        k = i % 5
        if k == 0:
            r = sess.post(s.http + "/v2/models/m/infer", json=json_body, timeout=20)
            assert r.status_code == 200
        elif k == 1:
            r = sess.post(s.http + "/v2/models/m/infer", data=bin_body, headers=bin_headers, timeout=20)
            assert r.status_code == 200
        elif k == 2:
            resp = stub.ModelInfer(greq, timeout=20)
            assert len(resp.raw_output_contents[0]) == x.nbytes
        elif k == 3:
            r = sess.post(s.http + "/v2/models/s/infer", json=sreq, timeout=20)
            assert r.status_code == 200
        else:
            r = sess.post(s.http + "/v2/models/m/infer", json=bad, timeout=20)
            assert r.status_code == 400

    for i in range(200):
        one(i)
    base = rss_kb(s.pid)
    for i in range(200, 2000):
        one(i)
    end = rss_kb(s.pid)
    assert end < base * 1.05, f"RSS grew from {base} kB after 200 requests to {end} kB after 2000"
    st = sess.get(s.http + "/v2/models/m/stats", timeout=10).json()["model_stats"][0]
    assert st["inference_stats"]["success"]["count"] == 1200
