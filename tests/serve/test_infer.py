# Inference over REST (JSON, flat and nested data; the binary-tensor extension) and gRPC (raw and typed contents,
# ModelStreamInfer), for every datatype of the protocol, checked against numpy.
import json
import subprocess

import numpy as np
import pytest

import grpc_service_pb2 as pb

from conftest import DTYPES, binary_request, from_wire, parse_binary_response, to_wire


def sample(dt):
    """Six values of `dt` with the type's edge cases (BF16: bit patterns, as uint16)."""
    v = {
        "BOOL": [True, False, True, True, False, False],
        "UINT8": [0, 1, 127, 128, 254, 255],
        "UINT16": [0, 1, 300, 32768, 65534, 65535],
        "UINT32": [0, 1, 2**31, 2**32 - 1, 7, 65536],
        "UINT64": [0, 1, 2**63, 2**64 - 1, 2**53 + 1, 12345],
        "INT8": [-128, -1, 0, 1, 100, 127],
        "INT16": [-32768, -1, 0, 1, 1000, 32767],
        "INT32": [-2**31, -1, 0, 1, 123456, 2**31 - 1],
        "INT64": [-2**63, -1, 0, 1, 2**53 + 1, 2**63 - 1],
        "FP16": [0.0, -0.0, 1.5, -65504.0, np.inf, 6e-8],
        "FP32": [0.0, -1.5, 3.4e38, 1e-40, 0.1, 1 / 3],
        "FP64": [0.0, -1.5, 1e308, 5e-324, 0.1, 1 / 3],
        # 0, -0, 1.0, -2.5, +inf, 0.15625 (upper halves of their float32 patterns)
        "BF16": [0x0000, 0x8000, 0x3F80, 0xC020, 0x7F80, 0x3E20],
        "BYTES": [b"", b"a", b"hello world", b"\x00\x01\xff", "\u00fcn\u00ef".encode(), b"x" * 300],
    }[dt]
    return np.array(v, dtype=DTYPES[dt][0])


JSON_TYPES = [d for d in DTYPES if d not in ("FP16", "BF16")]  # Triton carries FP16/BF16 only as binary
ALL_TYPES = list(DTYPES)


def json_values(arr, dt):
    if dt == "BYTES":
        return [b.decode() for b in arr.ravel()]
    return arr.ravel().tolist()


def same(got, want, dt):
    if dt == "BYTES":
        assert [bytes(g) for g in got.ravel()] == [bytes(w) for w in want.ravel()]
    elif dt in ("FP16", "BF16"):
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))  # bit for bit
    else:
        np.testing.assert_array_equal(got, want)
    assert got.shape == want.shape


def json_sample(dt):
    x = sample(dt)
    if dt == "BYTES":  # JSON carries text only
        x = np.array([s.encode() for s in ["", "a", "hello world", "\u00fcn\u00ef", "x" * 300, 'tab\t"q"\\']],
                     dtype=np.object_)
    return x


# ---------------------------------------------------------------- REST JSON
@pytest.mark.parametrize("dt", JSON_TYPES)
def test_rest_json_identity(server, dt):
    x = json_sample(dt)
    r = server.post(f"/v2/models/id_{dt.lower()}/infer", json={"id": f"req-{dt}", "inputs": [
        {"name": "X", "shape": [6], "datatype": dt, "data": json_values(x, dt)}]})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["model_name"] == f"id_{dt.lower()}" and res["model_version"] == "1" and res["id"] == f"req-{dt}"
    (out,) = res["outputs"]
    assert out["name"] == "Y" and out["datatype"] == dt and out["shape"] == [6]
    if dt == "BYTES":
        assert out["data"] == json_values(x, dt)
    else:
        assert "parameters" not in out or "binary_data_size" not in out["parameters"]
        same(np.array(out["data"], dtype=DTYPES[dt][0]), x, dt)
        if dt == "BOOL":
            assert all(isinstance(v, bool) for v in out["data"])
        elif dt not in ("FP32", "FP64"):
            assert out["data"] == x.tolist()  # integers exact, no float detour


@pytest.mark.parametrize("model,dt,npt", [("add_fp32", "FP32", np.float32), ("add_int32", "INT32", np.int32),
                                          ("add_int64", "INT64", np.int64), ("add_fp64", "FP64", np.float64)])
def test_rest_json_add_nested(server, model, dt, npt):
    rng = np.random.default_rng(1)
    a = (rng.random((2, 3)) * 100 - 50).astype(npt)
    b = (rng.random((2, 3)) * 100 - 50).astype(npt)
    # "data" nested as the shape (A) and flat (B); outputs asked for in the order W, Z
    r = server.post(f"/v2/models/{model}/infer", json={
        "inputs": [{"name": "A", "shape": [2, 3], "datatype": dt, "data": a.tolist()},
                   {"name": "B", "shape": [2, 3], "datatype": dt, "data": b.ravel().tolist()}],
        "outputs": [{"name": "W"}, {"name": "Z"}]})
    assert r.status_code == 200, r.text
    outs = r.json()["outputs"]
    assert [o["name"] for o in outs] == ["W", "Z"]
    for o, want in zip(outs, (a - b, a + b)):
        assert o["datatype"] == dt and o["shape"] == [2, 3]
        np.testing.assert_array_equal(np.array(o["data"], dtype=npt).reshape(2, 3), want)


def test_rest_json_one_output(server):
    a = np.ones((2, 3), np.float32)
    r = server.post("/v2/models/add_fp32/infer", json={
        "inputs": [{"name": "A", "shape": [2, 3], "datatype": "FP32", "data": a.ravel().tolist()},
                   {"name": "B", "shape": [2, 3], "datatype": "FP32", "data": (2 * a).ravel().tolist()}],
        "outputs": [{"name": "Z"}]})
    assert r.status_code == 200, r.text
    outs = r.json()["outputs"]
    assert [o["name"] for o in outs] == ["Z"]
    assert outs[0]["data"] == [3.0] * 6


def test_rest_json_version_path(server):
    r = server.post("/v2/models/m/versions/1/infer", json={"inputs": [
        {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [0, 1, 2, 3]}]})
    assert r.status_code == 200, r.text
    assert r.json()["model_version"] == "1"
    assert r.json()["outputs"][0]["data"] == [1.0, 2.0, 3.0, 4.0]


def test_rest_curl_binary(server, tmp_path):
    # curl posting a binary-extension body from a file
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    body, headers = binary_request({"inputs": [{"name": "X", "shape": [2, 4], "datatype": "FP32",
                                                "parameters": {"binary_data_size": 32}}],
                                    "outputs": [{"name": "Y", "parameters": {"binary_data": False}}]}, [x.tobytes()])
    f = tmp_path / "body.bin"
    f.write_bytes(body)
    out = subprocess.run(["curl", "-s", "-f", "-X", "POST", "-H",
                          f"Inference-Header-Content-Length: {headers['Inference-Header-Content-Length']}",
                          "-H", "Content-Type: application/octet-stream", "--data-binary", f"@{f}",
                          server.http + "/v2/models/m/infer"], capture_output=True, timeout=20)
    assert out.returncode == 0, out
    res = json.loads(out.stdout)
    assert res["outputs"][0]["data"] == (x + 1).ravel().tolist()


# ---------------------------------------------------------------- REST binary extension
@pytest.mark.parametrize("dt", ALL_TYPES)
def test_rest_binary_identity(server, dt):
    x = sample(dt)
    raw = to_wire(x, dt)
    body, headers = binary_request({"inputs": [{"name": "X", "shape": [6], "datatype": dt,
                                                "parameters": {"binary_data_size": len(raw)}}],
                                    "outputs": [{"name": "Y", "parameters": {"binary_data": True}}]}, [raw])
    r = server.post(f"/v2/models/id_{dt.lower()}/infer", data=body, headers=headers)
    assert r.status_code == 200, r.text[:500]
    head, blobs = parse_binary_response(r)
    (out,) = head["outputs"]
    assert out["name"] == "Y" and out["datatype"] == dt and out["shape"] == [6]
    assert "data" not in out
    assert out["parameters"]["binary_data_size"] == len(raw)
    same(from_wire(blobs["Y"], dt, [6]), x, dt)


@pytest.mark.parametrize("dt", ["FP32", "INT64", "BYTES", "BOOL"])
def test_rest_json_in_binary_out(server, dt):
    # binary_data_output: every output binary unless an output says otherwise
    x = json_sample(dt)
    r = server.post(f"/v2/models/id_{dt.lower()}/infer", json={
        "parameters": {"binary_data_output": True},
        "inputs": [{"name": "X", "shape": [6], "datatype": dt, "data": json_values(x, dt)}]})
    assert r.status_code == 200, r.text[:500]
    assert "Inference-Header-Content-Length" in r.headers
    head, blobs = parse_binary_response(r)
    same(from_wire(blobs["Y"], dt, [6]), x, dt)


def test_rest_binary_in_json_out_mixed(server):
    # A binary, B JSON; Z binary, W JSON
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, np.float32)
    body, headers = binary_request({
        "inputs": [{"name": "A", "shape": [2, 3], "datatype": "FP32", "parameters": {"binary_data_size": 24}},
                   {"name": "B", "shape": [2, 3], "datatype": "FP32", "data": b.ravel().tolist()}],
        "outputs": [{"name": "Z", "parameters": {"binary_data": True}}, {"name": "W"}]}, [a.tobytes()])
    r = server.post("/v2/models/add_fp32/infer", data=body, headers=headers)
    assert r.status_code == 200, r.text[:500]
    head, blobs = parse_binary_response(r)
    outs = {o["name"]: o for o in head["outputs"]}
    np.testing.assert_array_equal(from_wire(blobs["Z"], "FP32", [2, 3]), a + b)
    assert "Z" in blobs and "W" not in blobs
    np.testing.assert_array_equal(np.array(outs["W"]["data"], np.float32).reshape(2, 3), a - b)


def test_rest_binary_two_inputs(server):
    a = np.arange(6, dtype=np.int64).reshape(2, 3) - 3
    b = np.arange(6, dtype=np.int64).reshape(2, 3) * 1000
    body, headers = binary_request({
        "inputs": [{"name": "A", "shape": [2, 3], "datatype": "INT64", "parameters": {"binary_data_size": 48}},
                   {"name": "B", "shape": [2, 3], "datatype": "INT64", "parameters": {"binary_data_size": 48}}],
        "outputs": [{"name": "Z", "parameters": {"binary_data": True}},
                    {"name": "W", "parameters": {"binary_data": True}}]}, [a.tobytes(), b.tobytes()])
    r = server.post("/v2/models/add_int64/infer", data=body, headers=headers)
    assert r.status_code == 200, r.text[:500]
    head, blobs = parse_binary_response(r)
    assert [o["name"] for o in head["outputs"]] == ["Z", "W"]
    np.testing.assert_array_equal(from_wire(blobs["Z"], "INT64", [2, 3]), a + b)
    np.testing.assert_array_equal(from_wire(blobs["W"], "INT64", [2, 3]), a - b)


# ---------------------------------------------------------------- gRPC
TYPED_FIELD = {"BOOL": "bool_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
               "UINT32": "uint_contents", "UINT64": "uint64_contents", "INT8": "int_contents",
               "INT16": "int_contents", "INT32": "int_contents", "INT64": "int64_contents",
               "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents"}


def grpc_output(resp, index, dt):
    """Output `index` of a ModelInferResponse as numpy: raw_output_contents, else the typed contents."""
    o = resp.outputs[index]
    shape = list(o.shape)
    if len(resp.raw_output_contents) > index:
        return from_wire(resp.raw_output_contents[index], dt, shape)
    vals = list(getattr(o.contents, TYPED_FIELD[dt]))
    return np.array(vals, dtype=DTYPES[dt][0]).reshape(shape)


@pytest.mark.parametrize("dt", ALL_TYPES)
def test_grpc_raw_identity(server, dt):
    x = sample(dt)
    req = pb.ModelInferRequest(model_name=f"id_{dt.lower()}", model_version="1", id="g1")
    t = req.inputs.add()
    t.name, t.datatype = "X", dt
    t.shape.extend([6])
    req.raw_input_contents.append(to_wire(x, dt))
    req.outputs.add().name = "Y"
    resp = server.stub().ModelInfer(req, timeout=20)
    assert resp.model_name == f"id_{dt.lower()}" and resp.model_version == "1" and resp.id == "g1"
    assert len(resp.outputs) == 1
    o = resp.outputs[0]
    assert o.name == "Y" and o.datatype == dt and list(o.shape) == [6]
    same(grpc_output(resp, 0, dt), x, dt)


@pytest.mark.parametrize("dt", JSON_TYPES)
def test_grpc_typed_identity(server, dt):
    x = sample(dt)
    req = pb.ModelInferRequest(model_name=f"id_{dt.lower()}")
    t = req.inputs.add()
    t.name, t.datatype = "X", dt
    t.shape.extend([6])
    getattr(t.contents, TYPED_FIELD[dt]).extend(x.tolist())
    resp = server.stub().ModelInfer(req, timeout=20)
    assert resp.outputs[0].datatype == dt and list(resp.outputs[0].shape) == [6]
    same(grpc_output(resp, 0, dt), x, dt)


def test_grpc_add_all_outputs(server):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 1.25, np.float32)
    req = pb.ModelInferRequest(model_name="add_fp32")
    for name in ("A", "B"):
        t = req.inputs.add()
        t.name, t.datatype = name, "FP32"
        t.shape.extend([2, 3])
    req.raw_input_contents.extend([a.tobytes(), b.tobytes()])
    resp = server.stub().ModelInfer(req, timeout=20)
    got = {o.name: grpc_output(resp, i, "FP32") for i, o in enumerate(resp.outputs)}
    assert sorted(got) == ["W", "Z"]
    np.testing.assert_array_equal(got["Z"], a + b)
    np.testing.assert_array_equal(got["W"], a - b)


def test_grpc_stream(server):
    def reqs():
        for i in range(5):
            x = np.full((i % 4 + 1, 4), float(i), np.float32)
            r = pb.ModelInferRequest(model_name="m", id=f"s{i}")
            t = r.inputs.add()
            t.name, t.datatype = "X", "FP32"
            t.shape.extend(x.shape)
            r.raw_input_contents.append(x.tobytes())
            yield r

    got = {}
    for resp in server.stub().ModelStreamInfer(reqs(), timeout=30):
        assert resp.error_message == ""
        ir = resp.infer_response
        got[ir.id] = grpc_output(ir, 0, "FP32")
    assert sorted(got) == [f"s{i}" for i in range(5)]
    for i in range(5):
        np.testing.assert_array_equal(got[f"s{i}"], np.full((i % 4 + 1, 4), float(i) + 1, np.float32))


def test_grpc_stream_error_keeps_stream(server):
    # a bad request on a stream answers with error_message; the next one on the same stream still works
    def reqs():
        bad = pb.ModelInferRequest(model_name="m", id="bad")
        t = bad.inputs.add()
        t.name, t.datatype = "X", "FP32"
        t.shape.extend([1, 4])
        bad.raw_input_contents.append(b"\0" * 12)
        yield bad
        good = pb.ModelInferRequest(model_name="m", id="good")
        t = good.inputs.add()
        t.name, t.datatype = "X", "FP32"
        t.shape.extend([1, 4])
        good.raw_input_contents.append(np.zeros(4, np.float32).tobytes())
        yield good

    out = list(server.stub().ModelStreamInfer(reqs(), timeout=30))
    assert len(out) == 2
    errs = [r for r in out if r.error_message]
    oks = [r for r in out if not r.error_message]
    assert len(errs) == 1 and len(oks) == 1
    assert oks[0].infer_response.id == "good"
    np.testing.assert_array_equal(grpc_output(oks[0].infer_response, 0, "FP32"), np.ones((1, 4), np.float32))


def test_rest_and_grpc_agree(server):
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    r = server.post("/v2/models/m/infer", json={"inputs": [
        {"name": "X", "shape": [3, 4], "datatype": "FP32", "data": x.ravel().tolist()}]})
    rest = np.array(r.json()["outputs"][0]["data"], np.float32).reshape(3, 4)
    req = pb.ModelInferRequest(model_name="m")
    t = req.inputs.add()
    t.name, t.datatype = "X", "FP32"
    t.shape.extend([3, 4])
    req.raw_input_contents.append(x.tobytes())
    g = grpc_output(server.stub().ModelInfer(req, timeout=20), 0, "FP32")
    np.testing.assert_array_equal(rest, x + 1)
    np.testing.assert_array_equal(g, x + 1)


def test_json_content_type(server):
    # Triton labels every JSON body application/json (answers, errors, metadata)
    r = server.post("/v2/models/m/infer", json={"inputs": [
        {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]})
    assert r.status_code == 200
    assert r.headers.get("Content-Type", "").startswith("application/json"), r.headers
    r = server.post("/v2/models/m/infer", json={"inputs": []})
    assert r.status_code == 400
    assert r.headers.get("Content-Type", "").startswith("application/json"), r.headers
    r = server.get("/v2/models/m")
    assert r.headers.get("Content-Type", "").startswith("application/json"), r.headers
    r = requests_get_metrics(server)
    assert r.headers.get("Content-Type", "").startswith("text/plain"), r.headers


def requests_get_metrics(server):
    import requests
    return requests.get(server.metrics_url, timeout=10)


def test_curl_chunked_expect_continue(server, tmp_path):
    # a large body sent chunked, after an Expect: 100-continue handshake
    x = np.arange(4 * 4, dtype=np.float32).reshape(4, 4)
    body = json.dumps({"id": "c" * 20000, "inputs": [
        {"name": "X", "shape": [4, 4], "datatype": "FP32", "data": x.ravel().tolist()}]})
    f = tmp_path / "big.json"
    f.write_text(body)
    out = subprocess.run(["curl", "-s", "-f", "-X", "POST", "-H", "Transfer-Encoding: chunked", "-H",
                          "Expect: 100-continue", "-H", "Content-Type: application/json", "--data-binary", f"@{f}",
                          server.http + "/v2/models/m/infer"], capture_output=True, timeout=20)
    assert out.returncode == 0, out
    res = json.loads(out.stdout)
    assert res["id"] == "c" * 20000
    assert res["outputs"][0]["data"] == (x + 1).ravel().tolist()


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_rest_compressed_request(server, encoding):
    # Triton's HTTP endpoint takes gzip- and deflate-compressed request bodies (Content-Encoding)
    import zlib
    body = json.dumps({"inputs": [{"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]})
    if encoding == "gzip":
        import gzip
        data = gzip.compress(body.encode())
    else:
        data = zlib.compress(body.encode())
    r = server.post("/v2/models/m/infer", data=data,
                    headers={"Content-Type": "application/json", "Content-Encoding": encoding})
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [2.0, 3.0, 4.0, 5.0]


def test_classification_refused(server):
    r = server.post("/v2/models/m/infer", json={"inputs": [
        {"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}],
        "outputs": [{"name": "Y", "parameters": {"classification": 2}}]})
    assert r.status_code == 400 and r.json()["error"], r.text
