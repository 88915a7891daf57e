# ONNX Runtime's contrib ops of activations, normalizations and fused products (com.microsoft, see
# src/ops/contrib/contrib_nn.cpp), each against a numpy reference of its documented meaning, at an ai.onnx opset
# without the standard forms (13: no Gelu, LayerNormalization, RMSNormalization) and one with them (23); and the
# ONNX-domain LayerNormalization / SimplifiedLayerNormalization that ONNX Runtime's optimizer writes.
import math

import numpy as np
import onyx
import pytest
from onnx import TensorProto, helper
from testutil import F, make_model, tensor_type

MS = [("com.microsoft", 1)]
LEVELS = {0: onyx.GraphOptimizationLevel.ORT_DISABLE_ALL, 3: onyx.GraphOptimizationLevel.ORT_ENABLE_ALL}
OPSETS = [13, 23]
rng = np.random.default_rng(7)
NP_TYPES = {np.float32: F, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}


def run(nodes, feeds, outputs, opset, initializers=(), level=None, out_types=None):
    inputs = [(name, tensor_type(NP_TYPES[a.dtype.type], list(a.shape))) for name, a in feeds.items()]
    outs = [(name, tensor_type(t, None)) for name, t in zip(outputs, out_types or [F] * len(outputs))]
    model = make_model(nodes, inputs, outs, initializers=initializers, opset=opset, ir_version=9, extra_opsets=MS)
    options = onyx.SessionOptions()
    if level is not None:
        options.graph_optimization_level = LEVELS[level]
    return onyx.InferenceSession(model, options).run(None, feeds)


def ms(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, domain="com.microsoft", **attrs)


def gelu_erf(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * gamma
    return y + beta if beta is not None else y, mean, 1 / np.sqrt(var + eps)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("level", [0, 3])
def test_gelu_family(opset, level):
    x, b = rand(2, 3, 8), rand(8)
    nodes = [ms("Gelu", ["x"], ["g"]), ms("FastGelu", ["x", "b"], ["f"]), ms("FastGelu", ["x"], ["f0"]),
             ms("BiasGelu", ["x", "b"], ["bg"]), ms("QuickGelu", ["x"], ["q"], alpha=1.5),
             ms("BiasAdd", ["x", "b", "x"], ["ba"])]
    g, f, f0, bg, q, ba = run(nodes, {"x": x, "b": b}, ["g", "f", "f0", "bg", "q", "ba"], opset, level=level)
    np.testing.assert_allclose(g, gelu_erf(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f, gelu_tanh(x + b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f0, gelu_tanh(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bg, gelu_erf(x + b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(q, x / (1 + np.exp(-1.5 * x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ba, x + b + x, rtol=1e-6)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("skip_shape", [(2, 5, 16), (1, 5, 16), (5, 16)])
def test_skip_layer_normalization(opset, skip_shape):
    x, skip, gamma, beta, bias = rand(2, 5, 16), rand(*skip_shape), rand(16), rand(16), rand(16)
    node = ms("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["y", "mean", "inv_std", "sum"],
              epsilon=1e-5)
    y, mean, inv_std, total = run([node], {"x": x, "skip": skip, "gamma": gamma, "beta": beta, "bias": bias},
                                  ["y", "mean", "inv_std", "sum"], opset)
    s = x + skip + bias
    want, want_mean, want_inv = layer_norm(s, gamma, beta, 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(total, s, rtol=1e-6)
    np.testing.assert_allclose(mean.reshape(2, 5), want_mean.reshape(2, 5), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(inv_std.reshape(2, 5), want_inv.reshape(2, 5), rtol=1e-4)


@pytest.mark.parametrize("opset", OPSETS)
def test_skip_layer_normalization_defaults(opset):
    # No beta, no bias, the default epsilon (1e-12), only the normalized output.
    x, skip, gamma = rand(1, 3, 8), rand(1, 3, 8), rand(8)
    (y,) = run([ms("SkipLayerNormalization", ["x", "skip", "gamma"], ["y"])], {"x": x, "skip": skip, "gamma": gamma},
               ["y"], opset)
    np.testing.assert_allclose(y, layer_norm(x + skip, gamma, None, 1e-12)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", OPSETS)
def test_skip_simplified_layer_normalization(opset):
    x, skip, gamma, bias = rand(2, 4, 8), rand(2, 4, 8), rand(8), rand(8)
    node = ms("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"], ["y", "", "", "sum"], epsilon=1e-6)
    y, total = run([node], {"x": x, "skip": skip, "gamma": gamma, "bias": bias}, ["y", "sum"], opset)
    s = x + skip + bias
    np.testing.assert_allclose(total, s, rtol=1e-6)
    np.testing.assert_allclose(y, s / np.sqrt((s * s).mean(-1, keepdims=True) + 1e-6) * gamma, rtol=1e-4, atol=1e-5)
    bad = ms("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["y", "mean"])
    with pytest.raises(onyx.OnyxError, match="mean and inv_std_var are not supported"):
        run([bad], {"x": x, "skip": skip, "gamma": gamma}, ["y", "mean"], opset)


@pytest.mark.parametrize("opset", OPSETS)
def test_embed_layer_normalization(opset):
    batch, seq, hidden, vocab = 2, 5, 8, 11
    ids = rng.integers(0, vocab, (batch, seq)).astype(np.int32)
    segs = rng.integers(0, 2, (batch, seq)).astype(np.int32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    word, pos, seg = rand(vocab, hidden), rand(7, hidden), rand(2, hidden)
    gamma, beta = rand(hidden), rand(hidden)
    feeds = {"ids": ids, "segs": segs, "word": word, "pos": pos, "seg": seg, "gamma": gamma, "beta": beta, "mask": mask}
    node = ms("EmbedLayerNormalization", ["ids", "segs", "word", "pos", "seg", "gamma", "beta", "mask"],
              ["y", "mask_index", "sum"], epsilon=1e-5)
    y, mask_index, total = run([node], feeds, ["y", "mask_index", "sum"], opset, out_types=[F, TensorProto.INT32, F])
    want_sum = word[ids] + pos[:seq][None] + seg[segs]
    np.testing.assert_allclose(total, want_sum, rtol=1e-6)
    np.testing.assert_allclose(y, layer_norm(want_sum, gamma, beta, 1e-5)[0], rtol=1e-4, atol=1e-5)
    assert mask_index.dtype == np.int32 and mask_index.tolist() == [3, 5]

    # Position ids given, no segments; mask_index read without a mask is refused.
    position_ids = np.array([[4, 3, 2, 1, 0]], np.int32)
    node = ms("EmbedLayerNormalization", ["ids", "", "word", "pos", "", "gamma", "beta", "", "position_ids"], ["y"])
    (y,) = run([node], {"ids": ids, "word": word, "pos": pos, "gamma": gamma, "beta": beta, "position_ids": position_ids},
               ["y"], opset)
    np.testing.assert_allclose(y, layer_norm(word[ids] + pos[position_ids], gamma, beta, 1e-12)[0], rtol=1e-4, atol=1e-5)
    node = ms("EmbedLayerNormalization", ["ids", "", "word", "pos", "", "gamma", "beta"], ["y", "mask_index"])
    with pytest.raises(onyx.OnyxError, match="no mask input"):
        run([node], {"ids": ids, "word": word, "pos": pos, "gamma": gamma, "beta": beta}, ["y", "mask_index"], opset,
            out_types=[F, TensorProto.INT32])


@pytest.mark.parametrize("opset", OPSETS)
def test_fused_matmul(opset):
    a, b = rand(3, 4, 5), rand(3, 6, 5)
    nodes = [ms("FusedMatMul", ["a", "b"], ["y"], transB=1, alpha=0.5),
             ms("TransposeMatMul", ["a", "c"], ["z"], transA=1, transB=1),
             ms("FusedMatMul", ["a", "bb"], ["w"], transBatchA=1, transBatchB=1)]
    bb = rand(5, 4, 7)  # transBatchB: [5, 4, 7] -> [4, 5, 7]; transBatchA: a [3, 4, 5] -> [4, 3, 5]
    c = rand(3, 7, 4)
    y, z, w = run(nodes, {"a": a, "b": b, "bb": bb, "c": c}, ["y", "z", "w"], opset)
    np.testing.assert_allclose(y, 0.5 * a @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z, a.transpose(0, 2, 1) @ c.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, a.transpose(1, 0, 2) @ bb.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("level", [0, 3])
def test_fused_conv(opset, level):
    x, w, b, z = rand(1, 3, 6, 6), rand(4, 3, 3, 3), rand(4), rand(1, 4, 6, 6)

    def conv(x, w, b):
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((1, 4, 6, 6), np.float64)
        for i in range(6):
            for j in range(6):
                out[0, :, i, j] = np.tensordot(w, xp[0, :, i:i + 3, j:j + 3], axes=([1, 2, 3], [0, 1, 2]))
        return out + b.reshape(1, 4, 1, 1)

    weights = [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.flatten()),
               helper.make_tensor("b", TensorProto.FLOAT, b.shape, b.flatten())]
    nodes = [ms("FusedConv", ["x", "w", "b"], ["relu"], activation="Relu", pads=[1, 1, 1, 1]),
             ms("FusedConv", ["x", "w", "b", "z"], ["leaky"], activation="LeakyRelu", activation_params=[0.2],
                pads=[1, 1, 1, 1]),
             ms("FusedConv", ["x", "w", "b"], ["clip"], activation="Clip", activation_params=[-0.5, 0.5],
                pads=[1, 1, 1, 1])]
    relu, leaky, clip = run(nodes, {"x": x, "z": z}, ["relu", "leaky", "clip"], opset, initializers=weights, level=level)
    c = conv(x, w, b)
    np.testing.assert_allclose(relu, np.maximum(c, 0), rtol=1e-4, atol=1e-5)
    s = c + z
    np.testing.assert_allclose(leaky, np.where(s > 0, s, 0.2 * s), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(clip, np.clip(c, -0.5, 0.5), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", OPSETS)
def test_fused_gemm_and_grid_sample(opset):
    a, b, c = rand(3, 4), rand(5, 4), rand(5)
    node = ms("FusedGemm", ["a", "b", "c"], ["y"], transB=1, alpha=2.0, activation="LeakyRelu", activation_alpha=0.1)
    (y,) = run([node], {"a": a, "b": b, "c": c}, ["y"], opset)
    g = 2.0 * a @ b.T + c
    np.testing.assert_allclose(y, np.where(g > 0, g, 0.1 * g), rtol=1e-5, atol=1e-6)

    x = rand(1, 1, 3, 3)
    grid = np.array([[[[-1, -1], [0, 0], [1, 1]]]], np.float32)  # corners and the centre
    (s,) = run([ms("GridSample", ["x", "grid"], ["s"], align_corners=1)], {"x": x, "grid": grid}, ["s"], opset)
    np.testing.assert_allclose(s.flatten(), [x[0, 0, 0, 0], x[0, 0, 1, 1], x[0, 0, 2, 2]], rtol=1e-6)


def test_unsupported_activation_is_refused():
    x, w = rand(1, 1, 3, 3), rand(1, 1, 1, 1)
    with pytest.raises(onyx.OnyxError, match="activation 'Swish' is not supported"):
        run([ms("FusedConv", ["x", "w"], ["y"], activation="Swish")], {"x": x, "w": w}, ["y"], 13)


def test_onnx_domain_layer_norm_below_opset_17_runs_with_a_warning(tmp_path, capfd):
    # ONNX Runtime's optimizer writes LayerNormalization and SimplifiedLayerNormalization into the ONNX domain at
    # any opset: a session runs them (as ai.onyx ops) and warns; the checker still reports the file.
    x, gamma, beta = rand(2, 3, 8), rand(8), rand(8)
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"], epsilon=1e-5),
             helper.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["r"], epsilon=1e-6)]
    model = make_model(nodes, [("x", tensor_type(F, [2, 3, 8])), ("gamma", tensor_type(F, [8])),
                               ("beta", tensor_type(F, [8]))],
                       [("y", tensor_type(F, None)), ("r", tensor_type(F, None))], opset=12, ir_version=7)
    y, r = onyx.InferenceSession(model).run(None, {"x": x, "gamma": gamma, "beta": beta})
    np.testing.assert_allclose(y, layer_norm(x, gamma, beta, 1e-5)[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * gamma, rtol=1e-4, atol=1e-5)
    err = capfd.readouterr().err
    assert "LayerNormalization" in err and "SimplifiedLayerNormalization" in err and "warning" in err
    path = tmp_path / "m.onnx"
    path.write_bytes(model)
    with pytest.raises(onyx.InvalidGraph, match="LayerNormalization"):
        onyx.check(str(path))
