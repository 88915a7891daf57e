# onyx's model tools against onnx's own: shape inference written into the model (onnx.shape_inference), extraction
# (onnx.utils.extract_model) and composition (onnx.compose.merge_models), with Debian's onnx 1.12.
#
# Run as a script (`python3 tests/python/test_model_tools.py`) to print the shape inference tally over onnx's node
# test models, with every value where onnx knows more.
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import onnx.compose
import onnx.shape_inference
import onnx.utils
import pytest
from onnx import TensorProto, helper

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from testutil import DEBIAN_NODE_TESTS, F, make_model, tensor_type  # noqa: E402

import onyx  # noqa: E402
from onyx._model_tools import (check_inferred_shapes, extract_model, infer_shapes,  # noqa: E402
                               merge_models)

EXPECTED_DISAGREEMENTS = HERE / "model_tools_disagreements.txt"
I64 = TensorProto.INT64


def onyx_cli():
    # The command sits at the root of the build whose package is tested (<build>/python/onyx).
    return pathlib.Path(onyx._onyx.__file__).resolve().parents[2] / "onyx"


def chain_model():
    """X[N,3] -> Relu -> Transpose -> MatMul(W) -> Add(B) -> Y, plus Shape(X) -> S: symbolic dims and constants."""
    w = helper.make_tensor("W", F, [4, 2], np.arange(8, dtype=np.float32).tolist())
    b = helper.make_tensor("B", F, [2], [1.0, -1.0])
    nodes = [
        helper.make_node("Relu", ["X"], ["r"], name="relu"),
        helper.make_node("Transpose", ["r"], ["t"], name="tr", perm=[1, 0]),
        helper.make_node("MatMul", ["X2", "W"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "B"], ["Y"], name="add"),
        helper.make_node("Shape", ["X"], ["S"], name="shape"),
        helper.make_node("Unsqueeze", ["r", "axes"], ["u"], name="unsq"),
        helper.make_node("Neg", ["u"], ["Z"], name="neg"),
    ]
    axes = helper.make_tensor("axes", I64, [1], [0])
    return make_model(nodes, [("X", tensor_type(F, ["N", 3])), ("X2", tensor_type(F, ["N", 4]))],
                      [("Y", tensor_type(F, None)), ("S", tensor_type(I64, None)), ("t", tensor_type(F, None)),
                       ("Z", tensor_type(F, None))],
                      initializers=[w, b, axes], producer_name="test", doc_string="keep me", metadata={"k": "v"})


def types_by_name(model):
    g = model.graph
    return {v.name: v.type for v in list(g.value_info) + list(g.output)}


# ---- shape inference output ----

def test_infer_shapes_adds_value_info_and_changes_nothing_else():
    src = onnx.load_from_string(chain_model())
    out = onnx.load_from_string(infer_shapes(chain_model()))
    vi = {v.name: v for v in out.graph.value_info}
    assert set(vi) == {"r", "m", "u"}
    r = vi["r"].type.tensor_type
    assert r.elem_type == F and [d.dim_param or d.dim_value for d in r.shape.dim] == ["N", 3]
    assert [d.dim_param or d.dim_value for d in vi["u"].type.tensor_type.shape.dim] == [1, "N", 3]
    outs = {o.name: o.type.tensor_type for o in out.graph.output}
    assert [d.dim_param or d.dim_value for d in outs["Y"].shape.dim] == ["N", 2]
    assert [d.dim_value for d in outs["S"].shape.dim] == [2]
    assert [d.dim_param or d.dim_value for d in outs["t"].shape.dim] == [3, "N"]
    # Nothing else changes.
    assert out.graph.node == src.graph.node and out.graph.initializer == src.graph.initializer
    assert out.doc_string == "keep me" and out.metadata_props == src.metadata_props
    assert out.producer_name == "test" and out.opset_import == src.opset_import
    onnx.checker.check_model(out)
    # The same as onnx's, value by value.
    ref = onnx.shape_inference.infer_shapes(src)
    assert types_by_name(ref) == types_by_name(out)


def test_infer_shapes_subgraph_values():
    then_g = helper.make_graph([helper.make_node("Relu", ["X"], ["a"]), helper.make_node("Neg", ["a"], ["o1"])],
                               "then", [], [helper.make_tensor_value_info("o1", F, None)])
    else_g = helper.make_graph([helper.make_node("Abs", ["X"], ["b"]), helper.make_node("Neg", ["b"], ["o2"])],
                               "else", [], [helper.make_tensor_value_info("o2", F, None)])
    nodes = [helper.make_node("If", ["C"], ["Y"], then_branch=then_g, else_branch=else_g)]
    data = make_model(nodes, [("C", tensor_type(TensorProto.BOOL, [])), ("X", tensor_type(F, [2, 5]))],
                      [("Y", tensor_type(F, None))])
    out = onnx.load_from_string(infer_shapes(data))
    branch = next(a.g for a in out.graph.node[0].attribute if a.name == "then_branch")
    assert {v.name for v in branch.value_info} == {"a"}
    assert [d.dim_value for d in branch.value_info[0].type.tensor_type.shape.dim] == [2, 5]
    assert [d.dim_value for d in out.graph.output[0].type.tensor_type.shape.dim] == [2, 5]


def test_infer_shapes_initializer_inputs():
    # IR 3 lists every initializer as an input: inference takes its value (as onnx does). From IR 4 such an input
    # is a default a feed may replace: its value, so Y's dims, stay unknown.
    def model(ir):
        nodes = [helper.make_node("ConstantOfShape", ["shape"], ["c"]), helper.make_node("Neg", ["c"], ["Y"])]
        return make_model(nodes, [("shape", tensor_type(I64, [2]))], [("Y", tensor_type(F, None))],
                          initializers=[helper.make_tensor("shape", I64, [2], [2, 3])], ir_version=ir, opset=9)
    dims = lambda data: [d.dim_value for d in onnx.load_from_string(infer_shapes(data)).graph.output[0]
                         .type.tensor_type.shape.dim]
    assert dims(model(3)) == [2, 3]
    assert dims(model(4)) == [0, 0]


def test_infer_shapes_errors_name_the_model():
    with pytest.raises(Exception, match="Relu"):
        infer_shapes(make_model([helper.make_node("Relu", ["X", "X", "X"], ["Y"])], [("X", tensor_type(F, [1]))],
                                [("Y", tensor_type(F, None))]))
    with pytest.raises(Exception):
        infer_shapes(b"not a model")


def conformance_models():
    """onnx 1.12's own node test models (their opsets are those onnx 1.12 infers)."""
    return sorted(DEBIAN_NODE_TESTS.glob("*/model.onnx"))


def tally_conformance():
    """Runs onnx's and onyx's inference on every node test model with the main graph outputs' shapes and all
    value_info removed; returns the summed tally and the disagreements by test."""
    total = dict(agree=0, onyx_more=0, reference_more=0, mixed=0, disagree=0, models=0, onnx_failed=0,
                 onyx_failed=0)
    disagreements, extra, failures = {}, [], {}
    for path in conformance_models():
        m = onnx.load(str(path))
        del m.graph.value_info[:]
        for o in m.graph.output:
            if o.type.HasField("tensor_type"):
                o.type.tensor_type.ClearField("shape")
        try:
            ref = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        except Exception:  # onnx itself cannot infer it: nothing to compare with
            total["onnx_failed"] += 1
            continue
        try:
            t = check_inferred_shapes(ref.SerializeToString(), outputs_too=True)
        except Exception as e:
            total["onyx_failed"] += 1
            failures[path.parent.name] = str(e).splitlines()[0]
            continue
        total["models"] += 1
        for k in ("agree", "onyx_more", "reference_more", "mixed", "disagree"):
            total[k] += t[k]
        if t["disagree"]:
            disagreements[path.parent.name] = t["disagreements"]
        extra += [f"{path.parent.name}: {line}" for line in t["reference_extra"]]
    return total, disagreements, extra, failures


def expected_disagreements():
    expected = {}
    for line in EXPECTED_DISAGREEMENTS.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(" # ")
            assert reason.strip(), f"{EXPECTED_DISAGREEMENTS.name}: '{line}' gives no reason"
            expected[name.strip()] = reason.strip()
    return expected


def test_infer_shapes_agrees_with_onnx_on_conformance_models():
    assert conformance_models(), f"no models under {DEBIAN_NODE_TESTS} (install libonnx-testdata)"
    total, disagreements, _, failures = tally_conformance()
    expected = expected_disagreements()
    unexpected = {k: v for k, v in disagreements.items() if k not in expected}
    assert not unexpected, f"onyx and onnx disagree on: {unexpected}"
    assert total["models"] > 800 and total["agree"] > 1000, total
    # onyx loads every model onnx 1.12 infers but those listed (with reasons) in the same file.
    unexpected_failures = {k: v for k, v in failures.items() if k not in expected}
    assert not unexpected_failures, unexpected_failures


def test_cli_infer_and_check(tmp_path):
    src = tmp_path / "m.onnx"
    src.write_bytes(chain_model())
    out = tmp_path / "typed.onnx"
    r = subprocess.run([str(onyx_cli()), "infer", str(src), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "3 added" in r.stdout
    assert {v.name for v in onnx.load(str(out)).graph.value_info} == {"r", "m", "u"}
    ref = tmp_path / "onnx.onnx"
    onnx.save(onnx.shape_inference.infer_shapes(onnx.load(str(src))), str(ref))
    r = subprocess.run([str(onyx_cli()), "infer", str(ref), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "agree 3, onyx more 0, reference more 0, mixed 0, disagree 0" in r.stdout
    # A value_info contradicting onyx's counts as a disagreement (exit status 1).
    bad = onnx.load(str(ref))
    bad.graph.value_info[0].type.tensor_type.shape.dim[1].dim_value = 7
    onnx.save(bad, str(ref))
    r = subprocess.run([str(onyx_cli()), "infer", str(ref), "--check"], capture_output=True, text=True)
    assert r.returncode == 1 and "disagree 1" in r.stdout and "disagree: " in r.stdout


# ---- extraction ----

def compare_with_onnx_extract(tmp_path, data, inputs, outputs):
    src = tmp_path / "src.onnx"
    src.write_bytes(data)
    ref_path = tmp_path / "ref.onnx"
    onnx.utils.extract_model(str(src), str(ref_path), inputs, outputs)
    ref = onnx.load(str(ref_path))
    got = onnx.load_from_string(extract_model(data, inputs, outputs))
    onnx.checker.check_model(got)
    assert [n.name for n in got.graph.node] == [n.name for n in ref.graph.node]
    assert [i.name for i in got.graph.input] == [i.name for i in ref.graph.input]
    assert [o.name for o in got.graph.output] == [o.name for o in ref.graph.output]
    assert [i.type for i in got.graph.input] == [i.type for i in ref.graph.input]
    assert [o.type for o in got.graph.output] == [o.type for o in ref.graph.output]
    assert sorted(t.name for t in got.graph.initializer) == sorted(t.name for t in ref.graph.initializer)
    return got


def test_extract_matches_onnx(tmp_path):
    # onnx's checker (which its extract_model runs) wants a shape for every graph output.
    data = onnx.shape_inference.infer_shapes(onnx.load_from_string(chain_model())).SerializeToString()
    got = compare_with_onnx_extract(tmp_path, data, ["X2"], ["Y"])
    assert [n.op_type for n in got.graph.node] == ["MatMul", "Add"]
    compare_with_onnx_extract(tmp_path, data, ["r"], ["Z", "t"])
    compare_with_onnx_extract(tmp_path, data, ["X", "X2"], ["m", "S"])
    # The sub-model runs and gives what the whole model gives.
    x2 = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    whole = onyx.InferenceSession(data).run(["Y"], {"X": np.ones((5, 3), np.float32), "X2": x2})[0]
    part = onyx.InferenceSession(extract_model(data, ["X2"], ["Y"])).run(None, {"X2": x2})[0]
    np.testing.assert_array_equal(whole, part)


def test_extract_conformance_model_matches_onnx(tmp_path):
    path = DEBIAN_NODE_TESTS / "test_layer_normalization_2d_axis0" / "model.onnx"
    m = onnx.load(str(path))
    data = m.SerializeToString()
    compare_with_onnx_extract(tmp_path, data, [i.name for i in m.graph.input], [m.graph.output[0].name])


def test_extract_errors_name_the_value(write_model):
    data = chain_model()
    with pytest.raises(Exception, match="cannot be computed from the inputs 'X2': it needs graph input 'X'"):
        extract_model(data, ["X2"], ["Y", "Z"])
    with pytest.raises(Exception, match="output 'nope' is not a value of the main graph"):
        extract_model(data, ["X"], ["nope"])
    with pytest.raises(Exception, match="input 'zzz' is not a value"):
        extract_model(write_model(data), ["zzz"], ["Z"])


def test_cli_extract(tmp_path):
    src = tmp_path / "m.onnx"
    src.write_bytes(chain_model())
    out = tmp_path / "part.onnx"
    r = subprocess.run([str(onyx_cli()), "extract", str(src), str(out), "--inputs", "r", "--outputs", "Z,t"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    g = onnx.load(str(out)).graph
    assert [n.op_type for n in g.node] == ["Transpose", "Unsqueeze", "Neg"]
    r = subprocess.run([str(onyx_cli()), "extract", str(src), str(out), "--inputs", "X2", "--outputs", "Z"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "needs graph input 'X'" in r.stderr


# ---- composition ----

def model_a():
    nodes = [helper.make_node("Mul", ["x", "two"], ["h"], name="mul"),
             helper.make_node("Relu", ["h"], ["feat"], name="relu"),
             helper.make_node("Neg", ["x"], ["side"], name="neg")]
    two = helper.make_tensor("two", F, [], [2.0])
    return make_model(nodes, [("x", tensor_type(F, ["N", 4]))],
                      [("feat", tensor_type(F, ["N", 4])), ("side", tensor_type(F, ["N", 4]))], initializers=[two],
                      graph_name="A", metadata={"author": "a"})


def model_b(name_clash=False):
    w = helper.make_tensor("h" if name_clash else "w", F, [4, 3], np.linspace(-1, 1, 12).tolist())
    nodes = [helper.make_node("MatMul", ["in", w.name], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "bias"], ["out"], name="add")]
    return make_model(nodes, [("in", tensor_type(F, ["N", 4])), ("bias", tensor_type(F, [3]))],
                      [("out", tensor_type(F, ["N", 3]))], initializers=[w], graph_name="B")


def run_a_then_b(x, bias, a=None, b=None):
    feat, side = onyx.InferenceSession(a or model_a()).run(["feat", "side"], {"x": x})
    (out,) = onyx.InferenceSession(b or model_b()).run(["out"], {"in": feat, "bias": bias})
    return side, out


def test_merge_matches_onnx_and_runs():
    io_map = [("feat", "in")]
    ref = onnx.compose.merge_models(onnx.load_from_string(model_a()), onnx.load_from_string(model_b()), io_map)
    got = onnx.load_from_string(merge_models(model_a(), model_b(), io_map))
    onnx.checker.check_model(got)
    for field in ("node", "input", "output", "initializer"):
        assert getattr(got.graph, field) == getattr(ref.graph, field), field
    # onnx 1.12 names the graph after B's last node input (merge_graphs' loop variable shadows its `name`
    # argument); the name meant, and onyx's, is "A_B".
    assert got.graph.name == "A_B"
    assert got.metadata_props == ref.metadata_props
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    bias = np.array([0.5, -0.5, 1.0], np.float32)
    side, out = run_a_then_b(x, bias)
    merged = onyx.InferenceSession(merge_models(model_a(), model_b(), io_map))
    assert [o.name for o in merged.get_outputs()] == ["side", "out"]
    m_side, m_out = merged.run(None, {"x": x, "bias": bias})
    np.testing.assert_array_equal(m_side, side)
    np.testing.assert_array_equal(m_out, out)


def test_merge_with_prefixes_matches_onnx():
    a, b = model_a(), model_b(name_clash=True)
    with pytest.raises(Exception, match="both use the names 'h'"):
        merge_models(a, b, [("feat", "in")])
    with pytest.raises(ValueError):
        onnx.compose.merge_models(onnx.load_from_string(a), onnx.load_from_string(b), [("feat", "in")])
    ref = onnx.compose.merge_models(onnx.load_from_string(a), onnx.load_from_string(b), [("feat", "in")],
                                    prefix1="a/", prefix2="b/")
    got = onnx.load_from_string(merge_models(a, b, [("feat", "in")], prefix1="a/", prefix2="b/"))
    onnx.checker.check_model(got)
    for field in ("node", "input", "output", "initializer"):
        assert getattr(got.graph, field) == getattr(ref.graph, field), field
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    bias = np.zeros(3, np.float32)
    side, out = run_a_then_b(x, bias, b=b)
    m_side, m_out = onyx.InferenceSession(got.SerializeToString()).run(["a/side", "b/out"],
                                                                       {"a/x": x, "b/bias": bias})
    np.testing.assert_array_equal(m_side, side)
    np.testing.assert_array_equal(m_out, out)


def test_merge_errors():
    a, b = model_a(), model_b()
    with pytest.raises(Exception, match="'nope' is not an output of the first model"):
        merge_models(a, b, [("nope", "in")])
    with pytest.raises(Exception, match="'nope' is not an input of the second model"):
        merge_models(a, b, [("feat", "nope")])
    b16 = make_model([helper.make_node("Neg", ["in"], ["out"])], [("in", tensor_type(F, ["N", 4]))],
                     [("out", tensor_type(F, None))], opset=16)
    with pytest.raises(Exception, match="imported at opset 17 by the first and 16 by the second"):
        merge_models(a, b16, [("feat", "in")])
    b_int = make_model([helper.make_node("Neg", ["in"], ["out"])], [("in", tensor_type(I64, ["N", 4]))],
                       [("out", tensor_type(I64, None))])
    with pytest.raises(Exception, match="cannot connect output 'feat'"):
        merge_models(a, b_int, [("feat", "in")])
    b_meta = make_model([helper.make_node("Neg", ["in"], ["o"])], [("in", tensor_type(F, None))],
                        [("o", tensor_type(F, None))], metadata={"author": "b"})
    with pytest.raises(Exception, match="metadata 'author'"):
        merge_models(a, b_meta, [("feat", "in")])


def test_cli_merge(tmp_path):
    pa, pb = tmp_path / "a.onnx", tmp_path / "b.onnx"
    pa.write_bytes(model_a())
    pb.write_bytes(model_b(name_clash=True))
    out = tmp_path / "ab.onnx"
    r = subprocess.run([str(onyx_cli()), "merge", str(pa), str(pb), str(out), "--io-map", "feat:in",
                        "--prefix1", "a_", "--prefix2", "b_"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    g = onnx.load(str(out)).graph
    assert [i.name for i in g.input] == ["a_x", "b_bias"] and [o.name for o in g.output] == ["a_side", "b_out"]
    r = subprocess.run([str(onyx_cli()), "merge", str(pa), str(pb), str(out), "--io-map", "feat:in"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "--prefix1" in r.stderr


if __name__ == "__main__":
    total, disagreements, extra, failures = tally_conformance()
    print(f"onnx 1.12 node test models: {total}")
    for name, lines in sorted(disagreements.items()):
        for line in lines:
            print(f"disagree  {line}")
    for name, msg in sorted(failures.items()):
        print(f"onyx failed  {name}: {msg}")
    if "-v" in sys.argv:
        for line in extra:
            print(f"onnx more  {line}")
