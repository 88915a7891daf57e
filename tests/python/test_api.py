# The onnxruntime-compatible surface of the onyx package: sessions, inputs/outputs, values of every kind, options,
# errors, providers, metadata.
import pathlib
import warnings

import numpy as np
import onyx
import pytest
from onnx import TensorProto, helper
from onnx.mapping import NP_TYPE_TO_TENSOR_TYPE
from testutil import F, make_model, map_type, tensor_type


def identity_model(elem=F, shape=None, opset=17):
    return make_model([helper.make_node("Identity", ["x"], ["y"])], [("x", tensor_type(elem, shape))],
                      [("y", tensor_type(elem, shape))], opset=opset)


def add_model():
    return make_model([helper.make_node("Add", ["x", "y"], ["sum"], name="add"),
                       helper.make_node("Mul", ["x", "y"], ["product"], name="mul")],
                      [("x", tensor_type(F, ["N", 3])), ("y", tensor_type(F, ["N", 3]))],
                      [("sum", tensor_type(F, ["N", 3])), ("product", tensor_type(F, ["N", 3]))])


def test_session_from_path_pathlike_and_bytes(write_model):
    data = add_model()
    path = write_model(data)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 2, np.float32)
    for source in (path, pathlib.Path(path), data, bytearray(data)):
        sess = onyx.InferenceSession(source)
        total, product = sess.run(None, {"x": x, "y": y})
        np.testing.assert_array_equal(total, x + y)
        np.testing.assert_array_equal(product, x * y)
        assert total.dtype == np.float32 and total.shape == (2, 3)


def test_output_selection_and_order():
    sess = onyx.InferenceSession(add_model())
    x = np.ones((1, 3), np.float32)
    feeds = {"x": x, "y": 3 * x}
    assert len(sess.run(None, feeds)) == 2
    assert len(sess.run([], feeds)) == 2
    (product,) = sess.run(["product"], feeds)
    np.testing.assert_array_equal(product, 3 * x)
    product, total = sess.run(["product", "sum"], feeds)
    np.testing.assert_array_equal(total, 4 * x)
    np.testing.assert_array_equal(product, 3 * x)


def test_types_and_shapes_are_spelled_like_onnxruntime():
    seq = helper.make_sequence_type_proto(tensor_type(F, None))
    opt = helper.make_optional_type_proto(tensor_type(F, [2]))
    mp = map_type(TensorProto.INT64, tensor_type(F, None))
    inputs = [("a", tensor_type(F, ["N", 3, None])), ("b", tensor_type(TensorProto.INT64, [])),
              ("c", tensor_type(TensorProto.STRING, [2])), ("d", tensor_type(TensorProto.FLOAT16, None)),
              ("e", seq), ("f", opt), ("g", mp), ("h", tensor_type(TensorProto.BOOL, [1]))]
    nodes = [helper.make_node("Identity", [n], [n + "_out"]) for n, _ in inputs if n != "g"]
    outputs = [(n + "_out", t) for n, t in inputs if n != "g"] + [("g", mp)]
    sess = onyx.InferenceSession(make_model(nodes, inputs, outputs, opset=17,
                                            extra_opsets=[("ai.onnx.ml", 3)]))
    got = [(i.name, i.type, i.shape) for i in sess.get_inputs()]
    assert got == [("a", "tensor(float)", ["N", 3, None]), ("b", "tensor(int64)", []),
                   ("c", "tensor(string)", [2]), ("d", "tensor(float16)", []),
                   ("e", "seq(tensor(float))", []), ("f", "optional(tensor(float))", []),
                   ("g", "map(int64,tensor(float))", []), ("h", "tensor(bool)", [1])]
    assert [o.type for o in sess.get_outputs()] == [
        "tensor(float)", "tensor(int64)", "tensor(string)", "tensor(float16)", "seq(tensor(float))",
        "optional(tensor(float))", "tensor(bool)", "map(int64,tensor(float))"]
    assert str(sess.get_inputs()[0]) == "NodeArg(name='a', type='tensor(float)', shape=['N', 3, None])"

    feeds = {"a": np.zeros((4, 3, 1), np.float32), "b": np.array(7, np.int64),
             "c": np.array(["x", "yz"], dtype=object), "d": np.array([1.5, -2], np.float16),
             "e": [np.ones(2, np.float32), np.zeros((1, 2), np.float32)], "f": None, "g": {3: 0.5, -1: 2.0},
             "h": np.array([True])}
    a, b, c, d, e, f, h, g = sess.run(None, feeds)
    assert a.shape == (4, 3, 1) and b.shape == () and int(b) == 7
    assert c.dtype == object and c.tolist() == ["x", "yz"]
    assert d.dtype == np.float16 and d.tolist() == [1.5, -2.0]
    assert isinstance(e, list) and [x.shape for x in e] == [(2,), (1, 2)]
    assert f is None
    assert isinstance(g, dict) and g == {3: 0.5, -1: 2.0}
    assert h.dtype == np.bool_ and h.tolist() == [True]
    (f,) = sess.run(["f_out"], dict(feeds, f=np.array([1, 2], np.float32)))
    np.testing.assert_array_equal(f, [1, 2])


def test_sequence_of_maps_output_and_map_input():
    zipmap = helper.make_node("ZipMap", ["x"], ["maps"], domain="ai.onnx.ml", classlabels_int64s=[10, 20])
    castmap = helper.make_node("CastMap", ["m"], ["dense"], domain="ai.onnx.ml", cast_to="TO_FLOAT")
    int_to_float = map_type(TensorProto.INT64, tensor_type(F, None))
    seq_of_maps = helper.make_sequence_type_proto(int_to_float)
    model = make_model([zipmap, castmap], [("x", tensor_type(F, [2, 2])), ("m", int_to_float)],
                       [("maps", seq_of_maps), ("dense", tensor_type(F, [1, None]))],
                       extra_opsets=[("ai.onnx.ml", 1)])
    sess = onyx.InferenceSession(model)
    assert sess.get_outputs()[0].type == "seq(map(int64,tensor(float)))"
    maps, dense = sess.run(None, {"x": np.array([[1, 2], [3, 4]], np.float32), "m": {2: 5.0, 0: 1.5, 1: -1.0}})
    assert maps == [{10: 1.0, 20: 2.0}, {10: 3.0, 20: 4.0}]
    assert all(type(v) is float for m in maps for v in m.values())
    np.testing.assert_array_equal(dense, [[1.5, -1.0, 5.0]])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64,
                                   np.complex128])
def test_numeric_element_types_round_trip(dtype):
    elem = NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]
    sess = onyx.InferenceSession(identity_model(elem, [2, 3]))
    x = (np.arange(6).reshape(2, 3) % 2 == 1) if dtype is np.bool_ else (np.arange(6) - 2).reshape(2, 3).astype(dtype)
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == np.dtype(dtype) and y.shape == (2, 3)
    np.testing.assert_array_equal(y, x)


def test_strings_in_every_numpy_form():
    sess = onyx.InferenceSession(identity_model(TensorProto.STRING, [None]))
    for feed in (np.array(["a", "bé", ""]), np.array([b"a", "bé".encode(), b""]), np.array(["a", "bé", ""], dtype=object),
                 ["a", "bé", ""]):
        (y,) = sess.run(None, {"x": feed})
        assert y.dtype == object and y.tolist() == ["a", "bé", ""]
    (y,) = sess.run(None, {"x": np.array([b"\xff\x00"], dtype=object)})
    assert y.tolist() == [b"\xff\x00"]  # not UTF-8: bytes, as given
    with pytest.raises(onyx.InvalidArgument, match="element 1 of the string tensor is a int"):
        sess.run(None, {"x": np.array(["a", 3], dtype=object)})


def test_python_lists_and_scalars_convert_to_the_input_type():
    sess = onyx.InferenceSession(identity_model(F, [2]))
    (y,) = sess.run(None, {"x": [1, 2]})
    assert y.dtype == np.float32 and y.tolist() == [1.0, 2.0]
    sess = onyx.InferenceSession(identity_model(TensorProto.INT64, []))
    (y,) = sess.run(None, {"x": 5})
    assert y.dtype == np.int64 and y.shape == () and int(y) == 5


def cast_model(src, dst, shape, opset=21):
    return make_model([helper.make_node("Cast", ["x"], ["y"], to=dst)], [("x", tensor_type(src, shape))],
                      [("y", tensor_type(dst, shape))], opset=opset, ir_version=10)


# onnx 1.12 predates these element types: their TensorProto numbers.
FLOAT8E4M3FN, FLOAT8E5M2, UINT4, INT4, FLOAT4E2M1, UINT2, INT2 = 17, 19, 21, 22, 23, 25, 26


def test_bfloat16_is_uint16_bit_patterns():
    to_bf16 = onyx.InferenceSession(cast_model(F, TensorProto.BFLOAT16, [4]))
    assert to_bf16.get_outputs()[0].type == "tensor(bfloat16)"
    (bits,) = to_bf16.run(None, {"x": np.array([1.0, -2.0, 0.5, 3.0], np.float32)})
    assert bits.dtype == np.uint16 and bits.tolist() == [0x3F80, 0xC000, 0x3F00, 0x4040]
    from_bf16 = onyx.InferenceSession(cast_model(TensorProto.BFLOAT16, F, [4]))
    (back,) = from_bf16.run(None, {"x": bits})
    assert back.tolist() == [1.0, -2.0, 0.5, 3.0]
    with pytest.raises(onyx.InvalidArgument, match=r"expected tensor\(bfloat16\), got an array of float32 "
                                                   r"\(bfloat16 values are passed as their bit patterns in uint16\)"):
        from_bf16.run(None, {"x": np.ones(4, np.float32)})


def test_float8_is_uint8_bit_patterns():
    (bits,) = onyx.InferenceSession(cast_model(F, FLOAT8E4M3FN, [4])).run(
        None, {"x": np.array([1.0, -2.0, 0.5, 448.0], np.float32)})
    assert bits.dtype == np.uint8 and bits.tolist() == [0x38, 0xC0, 0x30, 0x7E]
    (bits,) = onyx.InferenceSession(cast_model(F, FLOAT8E5M2, [2])).run(None, {"x": np.array([1, 2], np.float32)})
    assert bits.tolist() == [0x3C, 0x40]
    (back,) = onyx.InferenceSession(cast_model(FLOAT8E4M3FN, F, [3])).run(
        None, {"x": np.array([0x38, 0xC0, 0x30], np.uint8)})
    assert back.tolist() == [1.0, -2.0, 0.5]


def test_sub_byte_types_are_unpacked_one_per_byte():
    values = np.array([-8, -1, 0, 7, 3], np.float32)  # an odd count: the last byte is half used
    (packed,) = onyx.InferenceSession(cast_model(F, INT4, [5])).run(None, {"x": values})
    assert packed.dtype == np.int8 and packed.tolist() == [-8, -1, 0, 7, 3]
    sess = onyx.InferenceSession(cast_model(INT4, TensorProto.INT32, [5]))
    (back,) = sess.run(None, {"x": packed})
    assert back.tolist() == [-8, -1, 0, 7, 3]
    with pytest.raises(onyx.InvalidArgument, match=r"element 1 is 8, outside int4's range \[-8, 7\]"):
        sess.run(None, {"x": np.array([0, 8, 0, 0, 0], np.int8)})
    (u,) = onyx.InferenceSession(cast_model(F, UINT4, [2, 2])).run(None, {"x": np.array([[0, 15], [9, 1]], np.float32)})
    assert u.dtype == np.uint8 and u.shape == (2, 2) and u.tolist() == [[0, 15], [9, 1]]
    (i2,) = onyx.InferenceSession(cast_model(F, INT2, [4], opset=25)).run(None, {"x": np.array([-2, -1, 0, 1], np.float32)})
    assert i2.dtype == np.int8 and i2.tolist() == [-2, -1, 0, 1]
    (u2,) = onyx.InferenceSession(cast_model(UINT2, TensorProto.INT32, [3], opset=25)).run(
        None, {"x": np.array([3, 0, 2], np.uint8)})
    assert u2.tolist() == [3, 0, 2]
    (f4,) = onyx.InferenceSession(cast_model(F, FLOAT4E2M1, [3], opset=23)).run(
        None, {"x": np.array([1.0, 6.0, -0.5], np.float32)})
    assert f4.dtype == np.uint8 and f4.tolist() == [0x2, 0x7, 0x9]


def test_metadata():
    model = make_model([helper.make_node("Identity", ["x"], ["y"])], [("x", tensor_type(F, [1]))],
                       [("y", tensor_type(F, [1]))], producer_name="maker", domain="ai.example", model_version=7,
                       doc_string="the model", graph_name="main", graph_doc="the graph",
                       metadata={"author": "me", "license": "none"})
    meta = onyx.InferenceSession(model).get_modelmeta()
    assert (meta.producer_name, meta.graph_name, meta.domain, meta.description, meta.graph_description,
            meta.version) == ("maker", "main", "ai.example", "the model", "the graph", 7)
    assert meta.custom_metadata_map == {"author": "me", "license": "none"}


def test_overridable_initializers():
    init = helper.make_tensor("bias", F, [2], [1.0, 2.0])
    graph = helper.make_graph([helper.make_node("Add", ["x", "bias"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", F, [2]), helper.make_tensor_value_info("bias", F, [2])],
                              [helper.make_tensor_value_info("y", F, [2])], initializer=[init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = onyx.InferenceSession(model.SerializeToString())
    assert [i.name for i in sess.get_inputs()] == ["x"]
    assert [i.name for i in sess.get_overridable_initializers()] == ["bias"]
    x = np.zeros(2, np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], [1, 2])
    np.testing.assert_array_equal(sess.run(None, {"x": x, "bias": np.array([5, 6], np.float32)})[0], [5, 6])


def test_providers_follow_onnxruntime():
    data = identity_model(F, [1])
    assert onyx.get_available_providers() == ["CPUExecutionProvider"]
    sess = onyx.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
    with pytest.warns(UserWarning, match="'CUDAExecutionProvider' is not in available provider names"):
        sess = onyx.InferenceSession(data, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    with pytest.warns(UserWarning):
        sess = onyx.InferenceSession(data, providers=[("CUDAExecutionProvider", {"device_id": 0})])
    assert sess.get_providers() == ["CPUExecutionProvider"]  # nothing left: the CPU provider, as onnxruntime does
    np.testing.assert_array_equal(sess.run(None, {"x": np.ones(1, np.float32)})[0], [1])
    sess = onyx.InferenceSession(data, providers=[("CPUExecutionProvider", {"arena_extend_strategy": 1})])
    assert sess.get_provider_options() == {"CPUExecutionProvider": {"arena_extend_strategy": "1"}}
    with pytest.raises(ValueError, match="strings or \\(string, dict\\) tuples"):
        onyx.InferenceSession(data, providers=[3])
    with pytest.raises(ValueError, match="same length"):
        onyx.InferenceSession(data, providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        onyx.InferenceSession(data)  # no providers: no warning


def test_session_options():
    so = onyx.SessionOptions()
    assert so.graph_optimization_level == onyx.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert so.intra_op_num_threads == 0 and so.log_severity_level == 2 and not so.enable_profiling
    with pytest.raises(AttributeError):
        so.enable_profilling = True  # a typo is an error, as with onnxruntime's options
    data = identity_model(F, [1])
    for level in onyx.GraphOptimizationLevel:
        so.graph_optimization_level = level
        so.intra_op_num_threads = 1
        sess = onyx.InferenceSession(data, so)
        assert sess.get_session_options().graph_optimization_level == level
        np.testing.assert_array_equal(sess.run(None, {"x": np.ones(1, np.float32)})[0], [1])
    kept = sess.get_session_options()
    so.intra_op_num_threads = 4
    assert kept.intra_op_num_threads == 1  # the session keeps its own copy
    so.graph_optimization_level = 5
    with pytest.raises(onyx.InvalidArgument, match="graph_optimization_level 5"):
        onyx.InferenceSession(data, so)
    with pytest.raises(TypeError, match="sess_options"):
        onyx.InferenceSession(data, {"intra_op_num_threads": 1})
    so = onyx.SessionOptions()
    so.add_session_config_entry("session.x", "1")
    assert so.get_session_config_entry("session.x") == "1"


def test_run_options_attributes():
    ro = onyx.RunOptions()
    assert ro.terminate is False and ro.log_severity_level == 2
    ro.logid = "run-1"
    ro.add_run_config_entry("k", "v")
    assert ro.logid == "run-1" and ro.get_run_config_entry("k") == "v"
    sess = onyx.InferenceSession(identity_model(F, [1]))
    np.testing.assert_array_equal(sess.run(None, {"x": np.ones(1, np.float32)}, ro)[0], [1])


def test_errors_are_onyx_errors_with_onnxruntime_names(write_model, tmp_path):
    from onyx.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidGraph, NoSuchFile
    assert InvalidArgument is onyx.InvalidArgument and issubclass(onyx.OnyxError, RuntimeError)
    for cls in (Fail, InvalidArgument, InvalidGraph, NoSuchFile, onyx.InvalidProtobuf, onyx.NotImplemented):
        assert issubclass(cls, onyx.OnyxError)

    with pytest.raises(NoSuchFile, match="missing.onnx: no such file"):
        onyx.InferenceSession(str(tmp_path / "missing.onnx"))
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.InferenceSession(b"\x0a\xff\xff\xff\xff\xff\xff")
    with pytest.raises(TypeError, match="Unable to load from type"):
        onyx.InferenceSession(3.5)
    undefined_input = make_model([helper.make_node("Relu", ["nowhere"], ["y"])], [("x", tensor_type(F, [1]))],
                                 [("y", tensor_type(F, [1]))])
    with pytest.raises(InvalidGraph, match="nowhere"):
        onyx.InferenceSession(write_model(undefined_input))
    unknown_op = make_model([helper.make_node("NoSuchOp", ["x"], ["y"])], [("x", tensor_type(F, [1]))],
                            [("y", tensor_type(F, [1]))])
    with pytest.raises(onyx.OnyxError, match="NoSuchOp"):
        onyx.InferenceSession(unknown_op)

    sess = onyx.InferenceSession(add_model())
    x = np.ones((2, 3), np.float32)
    with pytest.raises(InvalidArgument, match=r"Required inputs \(\['y'\]\) are missing from input feed \(\['x'\]\)") as info:
        sess.run(None, {"x": x})
    assert isinstance(info.value, ValueError)  # onnxruntime raises ValueError for missing inputs
    with pytest.raises(InvalidArgument, match="'z' is not an input of the model \\(inputs: 'x', 'y'\\)"):
        sess.run(None, {"x": x, "y": x, "z": x})
    with pytest.raises(InvalidArgument, match="'nope' is not an output of the model"):
        sess.run(["nope"], {"x": x, "y": x})
    with pytest.raises(InvalidArgument, match=r"input 'y': expected tensor\(float\), got an array of float64"):
        sess.run(None, {"x": x, "y": x.astype(np.float64)})
    with pytest.raises(InvalidArgument, match=r"input 'y': expected rank 2 \[N,3\], got an array of shape \(6,\)"):
        sess.run(None, {"x": x, "y": x.reshape(6)})
    with pytest.raises(InvalidArgument, match=r"input 'y': dimension 1 must be 3"):
        sess.run(None, {"x": x, "y": np.ones((2, 4), np.float32)})
    with pytest.raises(onyx.OnyxError, match="'N'"):  # the engine checks symbolic dims across inputs
        sess.run(None, {"x": x, "y": np.ones((5, 3), np.float32)})

    reshape = make_model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_node")],
                         [("x", tensor_type(F, [None])), ("shape", tensor_type(TensorProto.INT64, [1]))],
                         [("y", tensor_type(F, None))])
    sess = onyx.InferenceSession(reshape)
    with pytest.raises(Fail, match="reshape_node"):
        sess.run(None, {"x": np.ones(4, np.float32), "shape": np.array([3], np.int64)})


def test_readme_example(tmp_path, monkeypatch):
    """The Python example of README.md, run as written, on onnx's test_sigmoid model."""
    from testutil import DEBIAN_NODE_TESTS, ROOT
    text = (ROOT / "README.md").read_text()
    start = text.index("```python\n", text.index("## Python")) + len("```python\n")
    code = text[start:text.index("```", start)]
    assert "import onyx as rt" in code
    model = DEBIAN_NODE_TESTS / "test_sigmoid" / "model.onnx"
    (tmp_path / "model.onnx").write_bytes(model.read_bytes())
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    X, pred = scope["X"], scope["pred_onnx"]
    assert isinstance(pred, list) and len(pred) == 1
    np.testing.assert_allclose(pred[0], 1 / (1 + np.exp(-X)), rtol=1e-6)


def test_newer_opsets_and_ir_versions_are_refused_unless_accepted():
    x = np.arange(3, dtype=np.float32)
    for model, text in ((identity_model(opset=29), "opset 29 of domain 'ai.onnx'; onyx supports that domain up to opset 28"),
                        (make_model([helper.make_node("Identity", ["x"], ["y"])], [("x", tensor_type(F))],
                                    [("y", tensor_type(F))], ir_version=14), "onyx supports IR versions up to 13")):
        with pytest.raises(Exception, match=text.replace("(", r"\(").replace(")", r"\)")):
            onyx.InferenceSession(model)
        options = onyx.SessionOptions()
        assert options.accept_newer_versions is False
        options.accept_newer_versions = True
        (y,) = onyx.InferenceSession(model, options).run(None, {"x": x})
        np.testing.assert_array_equal(y, x)
