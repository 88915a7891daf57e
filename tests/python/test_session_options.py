# onnxruntime's session options that change the model a session runs (free dims, initializers, in-memory external
# data, custom-op libraries, options stored in the model), providers, config entries and the profile file.
import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from testutil import F, make_model, tensor_type


def abs_model(dims=("batch", "chan", 5)):
    x = helper.make_tensor_value_info("x", F, list(dims))
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    y = helper.make_tensor_value_info("y", F, None)
    graph = helper.make_graph([helper.make_node("Abs", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def scaled_model(external_location=None):
    """y = x * w, w an initializer of 3 floats (inline, or external at `external_location`)."""
    w = numpy_helper.from_array(np.array([1, 2, 3], np.float32), "w")
    if external_location:
        w.ClearField("raw_data")
        w.data_location = TensorProto.EXTERNAL
        entry = w.external_data.add()
        entry.key, entry.value = "location", external_location
    return make_model([helper.make_node("Mul", ["x", "w"], ["y"])], [("x", tensor_type(F, [3]))],
                      [("y", tensor_type(F, [3]))], initializers=[w])


def test_free_dimension_overrides_fix_input_shapes():
    so = onyx.SessionOptions()
    so.add_free_dimension_override_by_denotation("DATA_BATCH", 2)
    so.add_free_dimension_override_by_name("chan", 4)
    sess = onyx.InferenceSession(abs_model(), so)
    assert sess.get_inputs()[0].shape == [2, 4, 5]
    (y,) = sess.run(None, {"x": -np.ones((2, 4, 5), np.float32)})
    assert (y == 1).all()
    with pytest.raises(onyx.InvalidArgument):
        sess.run(None, {"x": np.ones((3, 4, 5), np.float32)})  # the fixed dims are the input's now
    with pytest.raises(onyx.InvalidArgument, match="negative"):
        so.add_free_dimension_override_by_name("chan", -1)


def test_add_initializer_replaces_the_models_and_is_checked(write_model):
    so = onyx.SessionOptions()
    so.add_initializer("w", onyx.OrtValue.ortvalue_from_numpy(np.array([10, 20, 30], np.float32)))
    sess = onyx.InferenceSession(scaled_model(), so)
    (y,) = sess.run(None, {"x": np.ones(3, np.float32)})
    assert y.tolist() == [10, 20, 30]
    bad = onyx.SessionOptions()
    bad.add_initializer("nope", onyx.OrtValue.ortvalue_from_numpy(np.zeros(3, np.float32)))
    with pytest.raises(onyx.OnyxError, match="'nope'.*not an initializer"):
        onyx.InferenceSession(scaled_model(), bad)
    wrong_type = onyx.SessionOptions()
    wrong_type.add_initializer("w", onyx.OrtValue.ortvalue_from_numpy(np.zeros(3, np.int64)))
    with pytest.raises(onyx.OnyxError, match="'w' is int64"):
        onyx.InferenceSession(scaled_model(), wrong_type)
    with pytest.raises(TypeError):
        so.add_initializer("w", np.zeros(3, np.float32))  # onnxruntime takes OrtValues only


def test_external_initializers_from_values_and_from_memory(write_model):
    path = write_model(scaled_model("w_not_on_disk.bin"))
    with pytest.raises(onyx.OnyxError, match="w_not_on_disk.bin"):
        onyx.InferenceSession(path)
    so = onyx.SessionOptions()
    so.add_external_initializers(["w"], [onyx.OrtValue.ortvalue_from_numpy(np.array([4, 5, 6], np.float32))])
    (y,) = onyx.InferenceSession(path, so).run(None, {"x": np.ones(3, np.float32)})
    assert y.tolist() == [4, 5, 6]
    so = onyx.SessionOptions()
    data = np.array([7, 8, 9], np.float32).tobytes()
    so.add_external_initializers_from_files_in_memory(["w_not_on_disk.bin"], [data], [len(data)])
    (y,) = onyx.InferenceSession(path, so).run(None, {"x": np.ones(3, np.float32)})
    assert y.tolist() == [7, 8, 9]
    short = onyx.SessionOptions()
    short.add_external_initializers_from_files_in_memory(["w_not_on_disk.bin"], [data], [8])
    with pytest.raises(onyx.OnyxError, match="w_not_on_disk.bin"):
        onyx.InferenceSession(path, short)  # 8 bytes hold 2 of the 3 floats
    with pytest.raises(onyx.InvalidArgument, match="outside its buffer"):
        short.add_external_initializers_from_files_in_memory(["a"], [data], [13])


def test_custom_ops_library():
    library = os.environ.get("ONYX_CUSTOM_OP_LIBRARY")
    if not library:
        pytest.fail("ONYX_CUSTOM_OP_LIBRARY must name the test library (ctest sets it)")
    model = make_model([helper.make_node("CustomOpOne", ["a", "b"], ["s"], domain="test.customop"),
                        helper.make_node("CustomOpTwo", ["s"], ["y"], domain="test.customop")],
                       [("a", tensor_type(F, [2])), ("b", tensor_type(F, [2]))],
                       [("y", tensor_type(TensorProto.INT32, [2]))], extra_opsets=[("test.customop", 1)])
    with pytest.raises(onyx.OnyxError, match="CustomOpOne"):
        onyx.InferenceSession(model)
    so = onyx.SessionOptions()
    so.register_custom_ops_library(library)
    (y,) = onyx.InferenceSession(model, so).run(None, {"a": np.array([1.2, 2.0], np.float32),
                                                        "b": np.array([0.5, 0.7], np.float32)})
    assert y.dtype == np.int32 and y.tolist() == [2, 3]
    with pytest.raises(onyx.Fail, match="does not exist"):
        so.register_custom_ops_library("/no/such/library.so")


def test_options_stored_in_the_model(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    config = {"session_options": {"intra_op_num_threads": 1, "enable_profiling": True,
                                  "graph_optimization_level": 1}}
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", tensor_type(F, [2]))],
                       [("y", tensor_type(F, [2]))], metadata={"ort_config": json.dumps(config)})
    sess = onyx.InferenceSession(model)
    assert sess.get_session_options().intra_op_num_threads == 0  # not read unless asked
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")
    sess = onyx.InferenceSession(model)
    options = sess.get_session_options()
    assert options.intra_op_num_threads == 1 and options.enable_profiling
    assert options.graph_optimization_level == onyx.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess.run(None, {"x": np.ones(2, np.float32)})
    with open(sess.end_profiling()) as f:
        lines = f.read().splitlines()
    # As onnxruntime writes it: a JSON array, one event per line.
    assert lines[0] == "[" and lines[-1] == "]"
    assert all(json.loads(line.rstrip(",")) for line in lines[1:-1])
    bad = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", tensor_type(F, [2]))],
                     [("y", tensor_type(F, [2]))],
                     metadata={"ort_config": json.dumps({"session_options": {"no_such_option": 1}})})
    with pytest.raises(onyx.InvalidArgument, match="unknown session option 'no_such_option'"):
        onyx.InferenceSession(bad)


def test_providers_config_entries_and_assignment_info():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [("x", tensor_type(F, [2]))],
                       [("y", tensor_type(F, [2]))])
    sess = onyx.InferenceSession(model)
    with pytest.raises(onyx.Fail, match="Unknown Provider Type: NoSuchProvider"):
        sess.set_providers(["NoSuchProvider"])
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        sess.set_providers(["CUDAExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    so = onyx.SessionOptions()
    with pytest.raises(onyx.Fail, match="SessionOptions does not have configuration with key: k"):
        so.get_session_config_entry("k")
    with pytest.raises(onyx.Fail, match="record_ep_graph_assignment_info"):
        sess.get_provider_graph_assignment_info()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    (subgraph,) = onyx.InferenceSession(model, so).get_provider_graph_assignment_info()
    (node,) = subgraph.get_nodes()
    assert (subgraph.ep_name, node.domain, node.op_type, node.name) == ("CPUExecutionProvider", "", "Relu", "relu")


def test_string_inputs_from_void_and_bytes_arrays():
    S = TensorProto.STRING
    sess = onyx.InferenceSession(make_model([helper.make_node("Identity", ["x"], ["y"])],
                                            [("x", tensor_type(S, [2]))], [("y", tensor_type(S, [2]))]))
    for x in (np.array([b"ab", b"cd"], dtype=np.void), np.array([b"ab", b"cd"])):
        (y,) = sess.run(None, {"x": x})
        assert y.tolist() == ["ab", "cd"]
