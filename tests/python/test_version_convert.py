# onyx.convert_version against onnx.version_converter.convert_version (Debian's onnx 1.12, opsets up to 17): on
# ONNX backend node models, both converters take each model to the opsets 7 to 17; each model onyx converts must
# compute the test's expected outputs in onyx, and where onnx's converter handles the pair too, both converted
# models give the same outputs.

import numpy as np
import onnx
import pytest
from onnx import numpy_helper, version_converter

import onyx
from onyx._version_convert import convert_version
from onnx import helper
from testutil import DEBIAN_NODE_TESTS, F, make_model, tensor_type

# Node tests of the ops whose schemas changed in ways the converters must rewrite.
CASES = [
    "test_softmax_axis_0", "test_softmax_default_axis", "test_logsoftmax_axis_1", "test_hardmax_axis_0",
    "test_reduce_mean_do_not_keepdims_example", "test_reduce_sum_keepdims_example",
    "test_reduce_max_default_axes_keepdim_example",
    "test_reduce_log_sum_exp_keepdims_example", "test_reduce_prod_do_not_keepdims_example",
    "test_squeeze", "test_squeeze_negative_axes", "test_unsqueeze_axis_1", "test_unsqueeze_two_axes",
    "test_split_equal_parts_1d", "test_split_variable_parts_2d", "test_split_equal_parts_default_axis",
    "test_reshape_reordered_all_dims", "test_reshape_negative_dim", "test_constant_pad", "test_edge_pad",
    "test_slice", "test_slice_default_axes", "test_clip", "test_clip_default_min", "test_top_k",
    "test_dropout_default", "test_batchnorm_example", "test_gemm_default_scalar_bias", "test_add_bcast",
    "test_mul_bcast", "test_concat_2d_axis_0", "test_flatten_axis1", "test_argmax_keepdims_example",
    "test_resize_upsample_scales_nearest", "test_upsample_nearest", "test_transpose_default", "test_relu",
    "test_conv_with_strides_padding", "test_maxpool_2d_default", "test_averagepool_2d_default",
]

# onnx 1.12's Split 13 -> 12 adapter crashes the process (SIGSEGV) on a Split without its split input: these pairs
# only check onyx's conversion against the expected outputs.
ONNX_CRASHES = {"test_split_equal_parts_1d", "test_split_equal_parts_default_axis"}


def load_case(name):
    d = DEBIAN_NODE_TESTS / name
    model = onnx.load(str(d / "model.onnx"))
    inputs = []
    for k in range(len(model.graph.input)):
        p = d / "test_data_set_0" / ("input_%d.pb" % k)
        if not p.exists():
            break
        t = onnx.TensorProto()
        t.ParseFromString(p.read_bytes())
        inputs.append(numpy_helper.to_array(t))
    outputs = []
    for k in range(len(model.graph.output)):
        t = onnx.TensorProto()
        t.ParseFromString((d / "test_data_set_0" / ("output_%d.pb" % k)).read_bytes())
        outputs.append(numpy_helper.to_array(t))
    return model, inputs, outputs


def run(model_bytes, model, inputs):
    s = onyx.InferenceSession(model_bytes)
    return s.run(None, {i.name: x for i, x in zip(model.graph.input, inputs)})


def default_opset(model):
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def test_cases_exist():
    missing = [c for c in CASES if not (DEBIAN_NODE_TESTS / c / "model.onnx").exists()]
    assert not missing, missing


def test_same_outputs_as_onnx_version_converter():
    compared, onyx_only, onnx_refused, onnx_differs, onyx_refused = 0, 0, 0, [], []
    for name in CASES:
        model, inputs, expected = load_case(name)
        source = default_opset(model)
        for target in sorted(set(range(7, 18)) - {source}):
            where = "%s %d -> %d" % (name, source, target)
            try:
                ours = convert_version(model, target)
            except onyx.InvalidGraph as e:
                ours = None
                refusal = str(e)
            if ours is not None:
                assert default_opset(onnx.load_from_string(ours)) == target
                ours_out = run(ours, model, inputs)
                assert len(ours_out) == len(expected)
                for a, want in zip(ours_out, expected):
                    np.testing.assert_allclose(a, want, rtol=1e-3, atol=1e-6, err_msg=where)
            try:
                if name in ONNX_CRASHES and target < 13:
                    raise RuntimeError("not run: crashes onnx 1.12")
                theirs = version_converter.convert_version(model, target)
                onnx.checker.check_model(theirs)
                theirs_out = run(theirs.SerializeToString(), model, inputs)
            except Exception:  # onnx's converter lacks that pair (or writes a model onyx refuses)
                onnx_refused += 1
                onyx_only += ours is not None
                continue
            if ours is None:
                onyx_refused.append("%s: %s" % (where, refusal))
                continue
            # Where onnx's conversion computes the expected outputs too, both models compute the same.
            if all(np.allclose(b, want, rtol=1e-3, atol=1e-6) for b, want in zip(theirs_out, expected)):
                for a, b in zip(ours_out, theirs_out):
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=where)
                compared += 1
            else:
                onnx_differs.append(where)
    print("compared with onnx.version_converter: %d conversions agree; onnx refused %d (onyx converted %d of them, "
          "with the expected outputs); onnx's result differs from the expected outputs (onyx's does not) in %d: %s; "
          "onyx refused %d where onnx converted"
          % (compared, onnx_refused, onyx_only, len(onnx_differs), ", ".join(onnx_differs), len(onyx_refused)))
    for line in onyx_refused:
        print("  onyx refused:", line)
    assert compared >= 150
    # onyx refuses only what it cannot convert faithfully; where onnx converts, onyx should too in most cases.
    assert len(onyx_refused) <= compared // 10, onyx_refused


def test_report_and_refusal_message():
    node = helper.make_node("GridSample", ["x", "g"], ["y"], name="gs")
    m = make_model([node], [("x", tensor_type(F, [1, 1, 2, 2])), ("g", tensor_type(F, [1, 2, 2, 2]))],
                   [("y", tensor_type(F))], opset=16)
    with pytest.raises(onyx.InvalidGraph, match=r"node 'gs' \(GridSample\).*does not exist before opset 16"):
        convert_version(m, 15)
    sm = make_model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=0)],
                    [("x", tensor_type(F, [2, 3]))], [("y", tensor_type(F))], opset=11)
    report = {}
    out = convert_version(sm, 13, report=report)
    assert report["from"] == 11 and report["to"] == 13 and report["nodes_adapted"] == 1
    assert any("Softmax" in n for n in report["notes"])
    x = np.random.RandomState(0).rand(2, 3).astype(np.float32)
    a = onyx.InferenceSession(sm).run(None, {"x": x})[0]
    b = onyx.InferenceSession(out).run(None, {"x": x})[0]
    np.testing.assert_allclose(a, b, rtol=1e-6)
    # A path works as well as bytes or a ModelProto.
    with pytest.raises(TypeError):
        convert_version(3.5, 13)
