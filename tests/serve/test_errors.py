# Bad requests: each answered with a clear error (REST: the status and {"error": "..."}; gRPC: the status code and
# a message), and the server still alive afterwards.
import socket
import time

import grpc
import numpy as np
import pytest

import grpc_service_pb2 as pb

from conftest import Repo, add_const_model, assert_error, binary_request

from onnx import TensorProto


@pytest.fixture(autouse=True)
def still_alive(server):
    yield
    assert server.proc.poll() is None, f"server died ({server.proc.returncode}):\n{server.log_text()}"
    assert server.live(), "server not live after the bad request"
    # and still answers a good request
    r = server.post("/v2/models/m/infer", json={"inputs": [
        {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]})
    assert r.status_code == 200, r.text


def good_input():
    return {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}


def post_raw(server, body, model="m", headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return server.post(f"/v2/models/{model}/infer", data=body, headers=h)


def test_malformed_json(server):
    msg = assert_error(post_raw(server, b'{"inputs": [ {"name": "X", '), 400)
    assert len(msg) > 5


def test_json_not_object(server):
    assert_error(post_raw(server, b'[1, 2, 3]'), 400)
    assert_error(post_raw(server, b'"inputs"'), 400)


def test_empty_body(server):
    assert_error(post_raw(server, b''), 400)


def test_missing_inputs(server):
    assert_error(server.post("/v2/models/m/infer", json={"id": "x"}), 400)
    assert_error(server.post("/v2/models/m/infer", json={"inputs": []}), 400)


def test_inputs_not_array(server):
    assert_error(server.post("/v2/models/m/infer", json={"inputs": {"name": "X"}}), 400)


def test_input_missing_fields(server):
    for drop in ("name", "shape", "datatype", "data"):
        inp = good_input()
        del inp[drop]
        assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)


def test_unknown_input_name(server):
    inp = good_input()
    inp["name"] = "NOPE"
    msg = assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)
    assert "NOPE" in msg


def test_duplicate_input(server):
    assert_error(server.post("/v2/models/m/infer", json={"inputs": [good_input(), good_input()]}), 400)


def test_unknown_output_name(server):
    msg = assert_error(server.post("/v2/models/m/infer", json={"inputs": [good_input()],
                                                               "outputs": [{"name": "NOPE"}]}), 400)
    assert "NOPE" in msg


def test_wrong_datatype(server):
    inp = good_input()
    inp["datatype"] = "FP64"
    msg = assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)
    assert "FP64" in msg or "FP32" in msg


def test_unknown_datatype(server):
    inp = good_input()
    inp["datatype"] = "FP128"
    assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)


def test_data_of_wrong_json_type(server):
    inp = good_input()
    inp["data"] = ["a", "b", "c", "d"]
    assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)
    inp = {"name": "X", "shape": [4], "datatype": "INT32", "data": [1.5, 2, 3, 4]}
    assert_error(server.post("/v2/models/id_int32/infer", json={"inputs": [inp]}), 400)


def test_shape_data_mismatch(server):
    inp = good_input()
    inp["data"] = [1, 2, 3]
    msg = assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)
    assert "X" in msg
    inp["data"] = [1, 2, 3, 4, 5]
    assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)


def test_shape_against_model(server):
    # the model's X is [N, 4]
    inp = {"name": "X", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]}
    assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)
    inp = {"name": "X", "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4]}
    assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)
    inp = {"name": "X", "shape": [-1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}
    assert_error(server.post("/v2/models/m/infer", json={"inputs": [inp]}), 400)


def test_batch_over_max_batch_size(server):
    # "batched" has max_batch_size 4
    x = np.zeros((5, 3), np.float32)
    inp = {"name": "X", "shape": [5, 3], "datatype": "FP32", "data": x.ravel().tolist()}
    assert_error(server.post("/v2/models/batched/infer", json={"inputs": [inp]}), 400)


def test_wrong_binary_data_size(server):
    x = np.zeros(4, np.float32).tobytes()
    for size in (12, 20):  # the shape needs 16 bytes
        body, h = binary_request({"inputs": [{"name": "X", "shape": [1, 4], "datatype": "FP32",
                                              "parameters": {"binary_data_size": size}}]}, [x[:size].ljust(size, b"\0")])
        assert_error(server.post("/v2/models/m/infer", data=body, headers=h), 400)


def test_binary_header_length_over_body(server):
    body, h = binary_request({"inputs": [good_input()]}, [])
    h["Inference-Header-Content-Length"] = str(len(body) + 100)
    assert_error(server.post("/v2/models/m/infer", data=body, headers=h), 400)


def test_binary_header_length_not_a_number(server):
    body, h = binary_request({"inputs": [good_input()]}, [])
    for bad in ("abc", "-5", ""):
        h["Inference-Header-Content-Length"] = bad
        r = server.post("/v2/models/m/infer", data=body, headers=h)
        assert_error(r, 400)


def test_binary_section_short(server):
    # binary_data_size says 16 bytes, only 8 follow
    body, h = binary_request({"inputs": [{"name": "X", "shape": [1, 4], "datatype": "FP32",
                                          "parameters": {"binary_data_size": 16}}]}, [b"\0" * 8])
    assert_error(server.post("/v2/models/m/infer", data=body, headers=h), 400)


def test_binary_bytes_element_overlong(server):
    # a BYTES element whose length prefix runs past its tensor's data
    raw = (100).to_bytes(4, "little") + b"abc"
    body, h = binary_request({"inputs": [{"name": "X", "shape": [1], "datatype": "BYTES",
                                          "parameters": {"binary_data_size": len(raw)}}]}, [raw])
    assert_error(server.post("/v2/models/id_bytes/infer", data=body, headers=h), 400)


def test_fp16_binary_wrong_size(server):
    body, h = binary_request({"inputs": [{"name": "X", "shape": [3], "datatype": "FP16",
                                          "parameters": {"binary_data_size": 5}}]}, [b"\0" * 5])
    assert_error(server.post("/v2/models/id_fp16/infer", data=body, headers=h), 400)


def test_unknown_model(server):
    assert_error(server.post("/v2/models/nope/infer", json={"inputs": [good_input()]}), 404)
    assert_error(server.get("/v2/models/nope"), 404)
    assert_error(server.get("/v2/models/nope/config"), 404)
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(pb.ModelInferRequest(model_name="nope"), timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value
    assert "nope" in e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelMetadata(pb.ModelMetadataRequest(name="nope"), timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_unknown_version(server):
    assert_error(server.post("/v2/models/m/versions/7/infer", json={"inputs": [good_input()]}), 404)
    assert_error(server.get("/v2/models/m/versions/7"), 404)
    r = server.post("/v2/models/m/versions/abc/infer", json={"inputs": [good_input()]})
    assert r.status_code in (400, 404), r.text
    req = pb.ModelInferRequest(model_name="m", model_version="7")
    t = req.inputs.add()
    t.name, t.datatype = "X", "FP32"
    t.shape.extend([1, 4])
    req.raw_input_contents.append(np.zeros(4, np.float32).tobytes())
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(req, timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND, e.value


def test_unknown_path(server):
    assert server.get("/v2/nothing/here").status_code in (400, 404)
    assert server.get("/").status_code in (400, 404)


def test_wrong_method(server):
    r = server.session.delete(server.http + "/v2/models/m/infer", timeout=10)
    assert r.status_code in (400, 404, 405)
    r = server.get("/v2/models/m/infer")
    assert r.status_code in (400, 404, 405)


def _grpc_req(shape, raw=None, dt="FP32", model="m"):
    req = pb.ModelInferRequest(model_name=model)
    t = req.inputs.add()
    t.name, t.datatype = "X", dt
    t.shape.extend(shape)
    if raw is not None:
        req.raw_input_contents.append(raw)
    return req


def _grpc_invalid(server, req):
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(req, timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value
    assert e.value.details()
    return e.value.details()


def test_grpc_malformed_raw_size(server):
    _grpc_invalid(server, _grpc_req([1, 4], b"\0" * 12))
    _grpc_invalid(server, _grpc_req([1, 4], b"\0" * 17))


def test_grpc_raw_count_mismatch(server):
    req = _grpc_req([1, 4], b"\0" * 16)
    req.raw_input_contents.append(b"\0" * 16)  # two raw buffers, one input
    _grpc_invalid(server, req)


def test_grpc_raw_and_typed(server):
    req = _grpc_req([1, 4], b"\0" * 16)
    req.inputs[0].contents.fp32_contents.extend([1, 2, 3, 4])
    _grpc_invalid(server, req)


def test_grpc_typed_count_mismatch(server):
    req = _grpc_req([1, 4])
    req.inputs[0].contents.fp32_contents.extend([1, 2, 3])
    _grpc_invalid(server, req)


def test_grpc_typed_wrong_field(server):
    req = _grpc_req([1, 4])
    req.inputs[0].contents.int_contents.extend([1, 2, 3, 4])
    _grpc_invalid(server, req)


def test_grpc_no_data(server):
    _grpc_invalid(server, _grpc_req([1, 4]))


def test_grpc_wrong_datatype(server):
    _grpc_invalid(server, _grpc_req([1, 4], b"\0" * 32, dt="FP64"))


def test_grpc_unknown_input(server):
    req = _grpc_req([1, 4], b"\0" * 16)
    req.inputs[0].name = "NOPE"
    assert "NOPE" in _grpc_invalid(server, req)


def test_grpc_bytes_malformed(server):
    raw = (50).to_bytes(4, "little") + b"ab"
    _grpc_invalid(server, _grpc_req([1], raw, dt="BYTES", model="id_bytes"))


def test_disconnect_mid_body(server):
    # headers promise 1000 bytes, 100 arrive, the client goes away
    port = server.ports["http"]
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\n\r\n" + b'{"inputs": [' + b" " * 88)
        s.close()
    # half the headers, then gone
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Le")
    s.close()
    time.sleep(0.2)


def test_disconnect_before_response(server):
    # a whole slow-ish request, the client closes without reading the answer
    port = server.ports["http"]
    body = b'{"inputs":[{"name":"X","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.close()
    time.sleep(0.2)


def test_garbage_http(server):
    s = socket.create_connection(("127.0.0.1", server.ports["http"]), timeout=5)
    s.sendall(b"\x00\x01\x02 this is not http\r\n\r\n")
    try:
        s.recv(1000)  # a 400 or a close: either is fine
    except OSError:
        pass
    s.close()


def test_grpc_port_garbage(server):
    s = socket.create_connection(("127.0.0.1", server.ports["grpc"]), timeout=5)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    s.close()
    assert server.stub().ServerLive(pb.ServerLiveRequest(), timeout=10).live


def test_body_over_limit(tmp_path, make_server):
    repo = Repo(tmp_path / "repo")
    add_const_model(repo.model_path("m"), TensorProto.FLOAT, ["N", 4], 1.0)
    s = make_server(repo.root, http_max=4096)
    x = np.zeros((512, 4), np.float32)  # 8 KiB binary, more as JSON
    r = s.post("/v2/models/m/infer", json={"inputs": [
        {"name": "X", "shape": [512, 4], "datatype": "FP32", "data": x.ravel().tolist()}]})
    assert r.status_code == 413, r.text[:300]
    body, h = binary_request({"inputs": [{"name": "X", "shape": [512, 4], "datatype": "FP32",
                                          "parameters": {"binary_data_size": x.nbytes}}]}, [x.tobytes()])
    r = s.post("/v2/models/m/infer", data=body, headers=h)
    assert r.status_code == 413, r.text[:300]
    # a body under the limit still works, and the server is alive
    assert s.live()
    r = s.post("/v2/models/m/infer", json={"inputs": [
        {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [0, 0, 0, 0]}]})
    assert r.status_code == 200, r.text
    # a raw socket announcing a huge body is refused without sending it
    sock = socket.create_connection(("127.0.0.1", s.ports["http"]), timeout=5)
    sock.sendall(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
    reply = sock.recv(200)
    sock.close()
    assert reply.startswith(b"HTTP/1.1 413"), reply


def test_unknown_model_other_endpoints(server):
    assert_error(server.get("/v2/models/nope/stats"), 404)
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelConfig(pb.ModelConfigRequest(name="nope"), timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelStatistics(pb.ModelStatisticsRequest(name="nope"), timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
