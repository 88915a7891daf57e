# onyx.quantize_dynamic / onyx.quantize_static: small MatMul and Conv models quantized both ways, their outputs
# against the float model's, and the graph forms ONNX Runtime's quantization tools write (the node types, and the
# weights' element types), read back with the onnx package.
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx import _quantize

from testutil import F, make_model, tensor_type

quantize_dynamic = getattr(onyx, "quantize_dynamic", _quantize.quantize_dynamic)
quantize_static = getattr(onyx, "quantize_static", _quantize.quantize_static)

RNG = np.random.default_rng(0)


def init(name, shape, lo=-1.0, hi=1.0):
    return numpy_helper.from_array(RNG.uniform(lo, hi, shape).astype(np.float32), name)


def matmul_model():
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)]
    return make_model(nodes, [("x", tensor_type(F, [4, 32]))], [("y", tensor_type(F, [4, 8]))],
                      [init("w1", [32, 16]), init("w2", [8, 16]), init("b2", [8])], opset=13)


def conv_model():
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["a"]),
             helper.make_node("Conv", ["a", "w2", "b2"], ["c2"]),
             helper.make_node("Add", ["a", "c2"], ["s"]),
             helper.make_node("GlobalAveragePool", ["s"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("MatMul", ["f", "w3"], ["y"])]
    return make_model(nodes, [("x", tensor_type(F, [1, 3, 12, 12]))], [("y", tensor_type(F, [1, 5]))],
                      [init("w1", [8, 3, 3, 3], -0.5, 0.5), init("b1", [8]), init("w2", [8, 8, 1, 1], -0.5, 0.5),
                       init("b2", [8]), init("w3", [8, 5])], opset=13)


def run(path, x):
    s = onyx.InferenceSession(str(path))
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def op_types(path):
    return [n.op_type for n in onnx.load(str(path)).graph.node]


def close(ref, got, rel):
    assert got.shape == ref.shape
    assert np.max(np.abs(got - ref)) <= rel * np.max(np.abs(ref)), (np.max(np.abs(got - ref)), np.max(np.abs(ref)))


def test_dynamic_matmul_gemm(tmp_path, write_model):
    src = write_model(matmul_model())
    out = tmp_path / "q.onnx"
    report = quantize_dynamic(src, out)
    assert report["nodes"] == {"Gemm": 1, "MatMul": 1} and report["skipped"] == []
    m = onnx.load(str(out))
    onnx.checker.check_model(m)
    ops = op_types(out)
    # ORT's form: one DynamicQuantizeLinear per activation, MatMulInteger, Cast, Mul of the scales (+ Add bias).
    assert ops.count("DynamicQuantizeLinear") == 2 and ops.count("MatMulInteger") == 2 and ops.count("Cast") == 2
    assert "MatMul" not in ops and "Gemm" not in ops and ops[-1] == "Add"
    weights = {i.name: i for i in m.graph.initializer}
    assert weights["w1_quantized"].data_type == TensorProto.INT8
    assert weights["w1_zero_point"].data_type == TensorProto.INT8
    assert "w1" not in weights
    x = RNG.uniform(-1, 1, (4, 32)).astype(np.float32)
    close(run(src, x), run(out, x), 0.03)
    report = quantize_dynamic(onnx.load(src), out, per_channel=True, op_types_to_quantize=["MatMul"])  # a ModelProto
    assert report["nodes"] == {"MatMul": 1}
    assert "Gemm" in op_types(out)
    close(run(src, x), run(out, x), 0.03)


def test_static_conv_qdq(tmp_path, write_model):
    src = write_model(conv_model())
    samples = [{"x": RNG.uniform(0, 1, (1, 3, 12, 12)).astype(np.float32)} for _ in range(4)]
    x = samples[0]["x"]
    ref = run(src, x)
    for per_channel in (False, True):
        out = tmp_path / ("q%d.onnx" % per_channel)
        report = quantize_static(src, out, samples, per_channel=per_channel)
        assert report["nodes"] == {"Add": 1, "Conv": 2, "MatMul": 1} and report["samples"] == 4
        assert report["activations_folded"] == 1
        m = onnx.load(str(out))
        onnx.checker.check_model(m)
        ops = op_types(out)
        # ORT's QDQ form: float ops between DequantizeLinear and QuantizeLinear, int8 weights, int32 biases.
        assert ops.count("Conv") == 2 and ops.count("Add") == 1 and "Relu" not in ops
        assert ops.count("QuantizeLinear") >= 5 and ops.count("DequantizeLinear") >= 5 + 5
        weights = {i.name: i for i in m.graph.initializer}
        assert weights["w1_quantized"].data_type == TensorProto.INT8
        assert weights["b1_quantized"].data_type == TensorProto.INT32
        assert weights["x_zero_point"].data_type == TensorProto.UINT8
        if per_channel:
            assert list(weights["w1_scale"].dims) == [8] and list(weights["w3_scale"].dims) == [5]
        close(ref, run(out, x), 0.05)


def test_static_calibration_folder_int8_percentile(tmp_path, write_model):
    src = write_model(conv_model())
    for k in range(3):
        d = tmp_path / "calib" / ("test_data_set_%d" % k)
        d.mkdir(parents=True)
        x = RNG.uniform(0, 1, (1, 3, 12, 12)).astype(np.float32)
        (d / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    out = tmp_path / "q.onnx"
    report = quantize_static(src, out, str(tmp_path / "calib"), activation_type="int8", calibrate_method="percentile",
                             percentile=99.9)
    assert report["samples"] == 3
    weights = {i.name: i for i in onnx.load(str(out)).graph.initializer}
    assert weights["x_zero_point"].data_type == TensorProto.INT8
    close(run(src, x), run(out, x), 0.08)


def test_errors(tmp_path, write_model):
    src = write_model(conv_model())
    for bad in (dict(calibrate_method="entropy"), dict(activation_type="int16"), dict(percentile=0)):
        try:
            quantize_static(src, tmp_path / "q.onnx", [{"x": np.zeros((1, 3, 12, 12), np.float32)}], **bad)
            assert False, bad
        except onyx.InvalidArgument:
            pass
    try:
        quantize_static(src, tmp_path / "q.onnx", str(tmp_path / "missing"))
        assert False
    except onyx.OnyxError as e:
        assert "is not a folder" in str(e)
    try:
        quantize_static(src, tmp_path / "q.onnx", [{"x": np.zeros((1, 3), np.float32)}])
        assert False
    except onyx.OnyxError as e:
        assert "calibration sample 0" in str(e)
