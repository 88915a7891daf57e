# onyx's extras: onyx.load (model inspection), onyx.check and onyx.optimize.
import numpy as np
import onyx
import pytest
from onnx import TensorProto, helper
from testutil import F, make_model, tensor_type


def inspected_model():
    w = helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0])
    then_branch = helper.make_graph([helper.make_node("Relu", ["h"], ["r"])], "then", [],
                                    [helper.make_tensor_value_info("r", F, [None, 2])])
    else_branch = helper.make_graph([helper.make_node("Neg", ["h"], ["n"])], "else", [],
                                    [helper.make_tensor_value_info("n", F, [None, 2])])
    nodes = [
        helper.make_node("Gemm", ["x", "W"], ["h"], name="gemm", alpha=0.5, transB=1),
        helper.make_node("Constant", [], ["flag"], name="const",
                         value=helper.make_tensor("flag", TensorProto.BOOL, [], [True])),
        helper.make_node("If", ["flag"], ["y"], name="branch", then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Split", ["y"], ["a", "b"], name="split", axis=1,
                         doc_string="halves"),
        helper.make_node("LabelEncoder", ["s"], ["codes"], domain="ai.onnx.ml", keys_strings=["yes", "no"],
                         values_int64s=[1, 0]),
    ]
    return make_model(nodes, [("x", tensor_type(F, ["N", 2])), ("s", tensor_type(TensorProto.STRING, [None]))],
                      [("a", tensor_type(F, ["N", 1])), ("b", tensor_type(F, ["N", 1])),
                       ("codes", tensor_type(TensorProto.INT64, [None]))],
                      initializers=[w], producer_name="tests", model_version=3, metadata={"k": "v"},
                      extra_opsets=[("ai.onnx.ml", 2)])


def test_load_shows_the_model(write_model):
    path = write_model(inspected_model())
    for source in (path, inspected_model()):
        m = onyx.load(source)
        assert isinstance(m, onyx.Model)
        assert m.opset_import == {"": 17, "ai.onnx.ml": 2}
        assert (m.producer_name, m.model_version, m.metadata) == ("tests", 3, {"k": "v"})
        g = m.graph
        assert [(i.name, i.type, i.shape) for i in g.inputs] == [("x", "tensor(float)", ["N", 2]),
                                                                 ("s", "tensor(string)", [None])]
        assert [o.name for o in g.outputs] == ["a", "b", "codes"]
        assert [n.op_type for n in g.nodes] == ["Gemm", "Constant", "If", "Split", "LabelEncoder"]
        gemm, const, branch, split, encoder = g.nodes
        assert (gemm.name, gemm.inputs, gemm.outputs, gemm.attrs) == ("gemm", ["x", "W"], ["h"],
                                                                      {"alpha": 0.5, "transB": 1})
        assert const.attrs["value"].dtype == np.bool_ and const.attrs["value"].shape == ()
        then_branch = branch.attrs["then_branch"]
        assert isinstance(then_branch, onyx.Graph) and then_branch.name == "then"
        assert [(n.op_type, n.inputs) for n in then_branch.nodes] == [("Relu", ["h"])]
        assert split.doc_string == "halves" and split.attrs == {"axis": 1}
        assert encoder.domain == "ai.onnx.ml" and encoder.attrs == {"keys_strings": ["yes", "no"],
                                                                    "values_int64s": [1, 0]}
        w = g.initializers["W"]
        assert w.dtype == np.float32 and w.tolist() == [[1, 2], [3, 4]]
        assert not w.flags.writeable  # a view of the model's memory


def test_load_keeps_initializer_views_valid_after_the_model_object_is_gone(write_model):
    w = onyx.load(write_model(inspected_model())).graph.initializers["W"]
    assert w.sum() == 10


def test_load_errors(tmp_path):
    with pytest.raises(onyx.NoSuchFile):
        onyx.load(str(tmp_path / "none.onnx"))
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.load(b"\x0a\xff\xff")


def test_check(write_model):
    assert onyx.check(write_model(inspected_model())) is None
    two_problems = make_model([helper.make_node("Relu", ["nowhere"], ["y"]), helper.make_node("Relu", ["elsewhere"], ["z"])],
                              [("x", tensor_type(F, [1]))], [("y", tensor_type(F, [1])), ("z", tensor_type(F, [1]))])
    with pytest.raises(onyx.InvalidGraph) as info:
        onyx.check(two_problems)
    lines = str(info.value).splitlines()
    assert len(lines) == 2 and "nowhere" in lines[0] and "elsewhere" in lines[1]
    # Structurally fine, but no kernel: reported as a session would report it.
    custom = make_model([helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")],
                        [("x", tensor_type(F, [1]))], [("y", tensor_type(F, [1]))], extra_opsets=[("com.example", 1)])
    with pytest.raises(onyx.Fail, match="Frobnicate"):
        onyx.check(custom)


def test_optimize(write_model, tmp_path):
    path = write_model(inspected_model())
    out = tmp_path / "optimized.onnx"
    onyx.optimize(path, out)
    feeds = {"x": np.array([[1, -2], [3, 4]], np.float32), "s": np.array(["yes", "no", "maybe"], dtype=object)}
    expected = onyx.InferenceSession(path).run(None, feeds)
    for got, want in zip(onyx.InferenceSession(str(out)).run(None, feeds), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6)
