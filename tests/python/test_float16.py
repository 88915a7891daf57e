"""onyx.convert_float_to_float16: real CNNs (the ONNX light models, with the shared conformance data), a CNN of
random weights and a small transformer block, converted and run in onyx against their float32 originals. Running
the converted models in ONNX Runtime is in ort_interop/test_float16_ort.py."""
import pathlib
import subprocess
import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx._float16 import convert_float_to_float16, float16_default_op_block_list

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIGHT = ROOT.parent / "shared" / "onnx-tests" / "light"


def light_feed(sess, dtype):
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        n = int(np.prod(shape))
        feeds[i.name] = (np.arange(n, dtype=np.float64).reshape(shape) / n).astype(dtype)
    return feeds


def rel_err(want, got):
    want = want.astype(np.float64)
    got = got.astype(np.float64)
    return float(np.max(np.abs(want - got)) / max(np.max(np.abs(want)), 1e-12))


def light_model(name):
    path = LIGHT / f"light_{name}.onnx"
    assert path.exists(), f"{path} is missing: the light models come with ../shared/onnx-tests"
    return path


def small_cnn():
    """A CNN of random weights (the light models' weights are constants, which makes their outputs nearly
    uniform): Conv/BatchNormalization/Relu/MaxPool twice, GlobalAveragePool, Flatten, Gemm, Softmax."""
    rng = np.random.default_rng(1)

    def w(name, *shape, scale=0.3, shift=0.0):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale + shift).astype(np.float32), name)

    inits = [w("c1", 8, 3, 3, 3), w("c1b", 8, scale=0.1), w("s1", 8, shift=1.0, scale=0.1), w("b1", 8, scale=0.1),
             w("m1", 8, scale=0.1), numpy_helper.from_array(np.abs(rng.standard_normal(8)).astype(np.float32) + 0.5,
                                                            "v1"),
             w("c2", 16, 8, 3, 3, scale=0.2), w("c2b", 16, scale=0.1), w("fc", 10, 16), w("fcb", 10, scale=0.1)]
    nodes = [
        helper.make_node("Conv", ["X", "c1", "c1b"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["a", "s1", "b1", "m1", "v1"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2", "c2b"], ["b"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["b"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["l"], transB=1),
        helper.make_node("Softmax", ["l"], ["Y"], axis=1),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 10])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model.SerializeToString()


# The light models come with the shared conformance data next to the checkout (optional, as everywhere in the
# tests); the CNN of random weights is always there.
CNNS = [(n, k) for n, k in [("squeezenet", False), ("resnet50", True), ("shufflenet", False)]
        if (LIGHT / f"light_{n}.onnx").exists()] + [("small_cnn", False), ("small_cnn", True)]


@pytest.mark.parametrize("name,keep_io", CNNS)
def test_cnn_float16_matches_float32(name, keep_io, tmp_path):
    if name == "small_cnn":
        path = tmp_path / "cnn.onnx"
        path.write_bytes(small_cnn())
    else:
        path = light_model(name)
    report = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fp16 = convert_float_to_float16(str(path), keep_io_types=keep_io, report=report)
    assert onyx.check(fp16) is None
    s32 = onyx.InferenceSession(str(path))
    s16 = onyx.InferenceSession(fp16)
    want_dtype = np.float32 if keep_io else np.float16
    assert all(i.type == ("tensor(float)" if keep_io else "tensor(float16)") for i in s16.get_inputs())
    out32 = s32.run(None, light_feed(s32, np.float32))[0]
    out16 = s16.run(None, light_feed(s16, want_dtype))[0]
    assert out16.dtype == want_dtype
    assert out16.shape == out32.shape
    err = rel_err(out32, out16)
    assert err < 2e-2, f"{name}: relative error {err}"
    assert report["tensors_converted"] > 0
    assert report["float16_bytes"] * 2 == report["float32_bytes"]


def transformer_block(opset=20):
    """A pre-norm transformer block of onnx.helper nodes: LayerNormalization, single-head attention (MatMul,
    Softmax), a Gelu MLP and residual Adds; input X[1, 8, 32]."""
    rng = np.random.default_rng(0)
    d, f = 32, 64

    def w(name, *shape, scale=0.2):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("ln_s", d, scale=1.0), w("ln_b", d, scale=0.1), w("wq", d, d), w("wk", d, d), w("wv", d, d),
             w("wo", d, d), w("w1", d, f), w("b1", f, scale=0.1), w("w2", f, d), w("b2", d, scale=0.1),
             numpy_helper.from_array(np.array(1 / np.sqrt(d), np.float32), "scale"),
             numpy_helper.from_array(np.array([0, 2, 1], np.int64), "unused_perm")]
    nodes = [
        helper.make_node("LayerNormalization", ["X", "ln_s", "ln_b"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "wq"], ["q"]),
        helper.make_node("MatMul", ["ln", "wk"], ["k"]),
        helper.make_node("MatMul", ["ln", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Mul", ["qk", "scale"], ["qks"]),
        helper.make_node("Softmax", ["qks"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["att"]),
        helper.make_node("MatMul", ["att", "wo"], ["o"]),
        helper.make_node("Add", ["X", "o"], ["r1"]),
        helper.make_node("MatMul", ["r1", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["h1b"]),
        helper.make_node("Gelu", ["h1b"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["h2"]),
        helper.make_node("Add", ["h2", "b2"], ["h2b"]),
        helper.make_node("Add", ["r1", "h2b"], ["Y"]),
    ]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 8, d])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 8, d])],
                              initializer=inits[:-1])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model.SerializeToString()


def transformer_input():
    x = np.arange(8 * 32, dtype=np.float64).reshape(1, 8, 32) / (8 * 32)
    return (np.sin(x * 40) * 2).astype(np.float32)


def test_transformer_block_float16_matches_float32():
    fp32 = transformer_block()
    report = {}
    fp16 = convert_float_to_float16(fp32, report=report)
    assert report["casts_inserted"] == 0 and report["blocked_ops"] == {}
    assert report["tensors_converted"] == 11
    x = transformer_input()
    want = onyx.InferenceSession(fp32).run(None, {"X": x})[0]
    s16 = onyx.InferenceSession(fp16)
    assert s16.get_inputs()[0].type == "tensor(float16)"
    got = s16.run(None, {"X": x.astype(np.float16)})[0]
    assert got.dtype == np.float16
    err = rel_err(want, got)
    assert err < 1e-2, f"relative error {err}"


def test_block_lists_keep_io_and_clamping():
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])
    w = numpy_helper.from_array(np.array([[1e-9, 2e5, 1.0], [-1e-9, -2e5, 0.5]], np.float32), "W")
    nodes = [helper.make_node("Add", ["X", "W"], ["a"], name="add"),
             helper.make_node("Max", ["a", "X"], ["m"], name="max"),
             helper.make_node("Relu", ["m"], ["Y"], name="relu")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], initializer=[w]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    report = {}
    with pytest.warns(UserWarning, match="clamped 2 values"):
        fp16 = convert_float_to_float16(model, keep_io_types=True, node_block_list=["relu"], report=report)
    assert report["clamped_small"] == 2 and report["clamped_large"] == 2
    assert report["blocked_ops"] == {"Max": 1, "Relu": 1}
    s = onyx.InferenceSession(fp16)
    assert s.get_inputs()[0].type == "tensor(float)" and s.get_outputs()[0].type == "tensor(float)"
    xv = np.array([[0.5, -1.0, 2.0], [1.5, 3.0, -0.25]], np.float32)
    got = s.run(None, {"X": xv})[0]
    wv = np.array([[1e-7, 1e4, 1.0], [-1e-7, -1e4, 0.5]], np.float32)
    np.testing.assert_allclose(got, np.maximum(np.maximum(xv + wv, xv), 0), rtol=2e-3, atol=1e-3)
    # X to float16; around Max: its two inputs to float32, its output to float16; Relu's input to float32 (Relu
    # makes the float32 output Y itself).
    assert report["casts_inserted"] == 5
    assert "Max" in float16_default_op_block_list() and "Resize" in float16_default_op_block_list()
    with pytest.raises(onyx.InvalidGraph, match="no_such_node"):
        convert_float_to_float16(model, node_block_list=["no_such_node"])
    with pytest.raises(TypeError):
        convert_float_to_float16(42)


def test_command_line(tmp_path):
    # The onyx command of the build whose package is tested: build/python/onyx/__init__.py -> build/onyx.
    cli = pathlib.Path(onyx.__file__).resolve().parents[2] / "onyx"
    if not cli.exists():
        cli = pathlib.Path(onyx.__file__).parents[2] / "onyx"
    assert cli.exists(), f"the onyx command is not built next to the package ({cli})"
    src = tmp_path / "cnn.onnx"
    src.write_bytes(small_cnn())
    out = tmp_path / "cnn16.onnx"
    r = subprocess.run([str(cli), "convert", str(src), str(out), "--float16", "--keep-io-types",
                        "--op-block-list", "Softmax,MaxPool"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "tensors converted" in r.stdout and "MaxPool x1" in r.stdout and "Softmax x1" in r.stdout, r.stdout
    r = subprocess.run([str(cli), "check", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(cli), "convert", str(src), str(out), "--keep-io-types"], capture_output=True, text=True)
    assert r.returncode != 0 and "--keep-io-types needs --float16" in r.stderr
    r = subprocess.run([str(cli), "convert", "--help"], capture_output=True, text=True)
    assert "--node-block-list" in r.stdout
