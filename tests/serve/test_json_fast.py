# Large JSON "data" arrays take the HTTP front's fast path (numbers read with from_chars; arrays of 4 KiB of text
# and more); small ones go through nlohmann alone. Both must give the same tensors and the same refusals.
import json

import numpy as np
import pytest
import requests
from onnx import TensorProto

from conftest import Repo, assert_error, identity_model


@pytest.fixture(scope="module")
def fast_server(tmp_path_factory):
    from conftest import Server, stop_and_check
    repo = Repo(tmp_path_factory.mktemp("fast_repo"))
    # fixed first dims: a free one would make the server batch these models (and cap the batch at 4)
    identity_model(repo.model_path("f32"), TensorProto.FLOAT, [2, "L"])
    identity_model(repo.model_path("f64"), TensorProto.DOUBLE, [1, "L"])
    identity_model(repo.model_path("i64"), TensorProto.INT64, [1, "L"])
    identity_model(repo.model_path("u64"), TensorProto.UINT64, [1, "L"])
    identity_model(repo.model_path("b"), TensorProto.BOOL, [1, "L"])
    identity_model(repo.model_path("s"), TensorProto.STRING, [1, "L"])
    s = Server(repo.root, tmp_path_factory.mktemp("fast_srv"), name="fast")
    yield s
    stop_and_check(s)


def infer_text(server, model, text):
    return requests.post(f"{server.http}/v2/models/{model}/infer", data=text,
                         headers={"Content-Type": "application/json"}, timeout=30)


def body(datatype, shape, data_text):
    if len(shape) == 1:
        shape = [1] + shape  # the 1-D models' inputs are [1, L]
    return ('{"inputs": [{"name": "X", "datatype": "%s", "shape": %s, "data": %s}]}'
            % (datatype, json.dumps(shape), data_text))


def output(resp):
    assert resp.status_code == 200, resp.text[:500]
    out = resp.json()["outputs"][0]
    return out["shape"], out["data"]


def test_fp32_nested_and_flat(fast_server):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((2, 1500)) * 1e3).astype(np.float32)
    # every float form JSON allows: exponents, negative zero, integers among floats
    texts = [repr(float(v)) for v in x.ravel()]
    texts[0], texts[1], texts[2], texts[3] = "1E+2", "-0.0", "7", "2.5e-3"
    vals = np.array([float(t) for t in texts], np.float32).reshape(2, 1500)
    nested = "[[" + ",".join(texts[:1500]) + "],\n [" + ", ".join(texts[1500:]) + "]]"
    flat = "[" + " , ".join(texts) + "]"
    for data in (nested, flat):
        shape, got = output(infer_text(fast_server, "f32", body("FP32", [2, 1500], data)))
        assert shape == [2, 1500]
        np.testing.assert_array_equal(np.array(got, np.float32).reshape(2, 1500), vals)


def test_fast_equals_plain_parse(fast_server):
    # the same values, once in a small request (nlohmann alone) and once padded out to take the fast path
    small = ["1.5", "-2", "3e1", "18446744073709551615", "-9223372036854775808", "1e-400", "0.1", "12345678901234567890123"]
    pad = ["0"] * 2000
    _, a = output(infer_text(fast_server, "f64", body("FP64", [len(small)], "[" + ",".join(small) + "]")))
    _, b = output(infer_text(fast_server, "f64", body("FP64", [len(small) + len(pad)], "[" + ",".join(small + pad) + "]")))
    assert a == b[:len(small)]


def test_integers_and_bools(fast_server):
    n = 3000
    ints = np.arange(-n // 2, n - n // 2, dtype=np.int64) * 3_000_000_007
    _, got = output(infer_text(fast_server, "i64", body("INT64", [n], json.dumps(ints.tolist()))))
    np.testing.assert_array_equal(np.array(got, np.int64), ints)
    big = np.full(n, 2**64 - 1, dtype=np.uint64)
    _, got = output(infer_text(fast_server, "u64", body("UINT64", [n], json.dumps([int(v) for v in big]))))
    assert got == [2**64 - 1] * n
    bools = [bool(i % 3) for i in range(n)]
    _, got = output(infer_text(fast_server, "b", body("BOOL", [n], json.dumps(bools))))
    assert got == bools


@pytest.mark.parametrize("bad,status", [
    ("[" + ",".join(["1"] * 2000) + ",]", 400),             # trailing comma: malformed, nlohmann says where
    ("[" + ",".join(["01"] * 2000) + "]", 400),             # leading zeros
    ("[" + ",".join(["1"] * 2000) + ", 1e999]", 400),       # overflow
    ("[" + ",".join(["1"] * 2000) + ", NaN]", 400),         # not JSON
    ("[" + ",".join(["1"] * 1999) + ", null]", 400),        # null where a number must be
    ("[" + ",".join(["1"] * 1999) + ', "1"]', 400),         # a string in a number tensor
    ("[" + ",".join(["1.5"] * 2000) + "]", 400),            # a fraction for INT64
    ("[[" + ",".join(["1"] * 1000) + "],[" + ",".join(["1"] * 999) + "]]", 400),  # ragged
])
def test_bad_large_arrays(fast_server, bad, status):
    assert_error(infer_text(fast_server, "i64", body("INT64", [2000], bad)), status)
    assert fast_server.live()


def test_strings_stay_on_the_plain_path(fast_server):
    words = ["w%d" % i for i in range(1500)] + ["\u00e9t\u00e9", "a\"b", "c\\d"]
    _, got = output(infer_text(fast_server, "s", body("BYTES", [len(words)], json.dumps(words))))
    assert got == words


def test_escaped_keys_take_the_plain_path(fast_server):
    # "d\u0061ta" is "data": the scan leaves requests with escaped keys to nlohmann
    x = list(range(2000))
    text = '{"inputs": [{"name": "X", "datatype": "INT64", "shape": [1, 2000], "d\\u0061ta": %s}]}' % json.dumps(x)
    _, got = output(infer_text(fast_server, "i64", text))
    assert got == x


def test_text_ending_inside_an_escape(fast_server):
    # a large request cut off after a backslash in a string: the scan stops at the end, the parse reports it
    x = list(range(2000))
    text = '{"inputs": [{"name": "X", "datatype": "INT64", "shape": [1, 2000], "data": %s}], "id": "a\\' % json.dumps(x)
    assert text.endswith("\\")
    assert_error(infer_text(fast_server, "i64", text), 400)
    assert fast_server.live()
