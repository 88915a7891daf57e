# ONNX Runtime's contrib attention ops (com.microsoft Attention, MultiHeadAttention, RotaryEmbedding), which onyx
# expands into standard and ai.onyx nodes at load: compared with numpy references of the documented semantics (as
# ORT's CPU kernels compute them), at ai.onnx opsets 13 and 21, for each mask form, causal, past and odd sizes.
import numpy as np
import onyx
import pytest
from onnx import TensorProto, helper, numpy_helper
from testutil import F, make_model, tensor_type

MS = [("com.microsoft", 1)]
I32 = TensorProto.INT32
I64 = TensorProto.INT64
LOWEST = np.finfo(np.float32).min


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def in_heads(t, heads):
    b, l, h = t.shape
    return t.reshape(b, l, heads, h // heads).transpose(0, 2, 1, 3)


def additive_mask(mask, b, s, t, past, causal, filt, starts_allowed=True):
    """ORT's CPU mask: [B, S, T] of 0 / filter value / lowest (causal) from an int32 mask input's forms."""
    m = np.zeros((b, s, t), np.float64)
    if mask is not None:
        if mask.ndim == 2:
            m[:] = np.where(mask > 0, 0, filt)[:, None, :]
        elif mask.ndim == 3:
            m[:] = np.where(mask > 0, 0, filt)
        else:
            j = np.arange(t)
            for bi in range(b):
                m[bi, :, j >= mask[bi]] = filt
                if starts_allowed and mask.shape[0] == 2 * b:
                    m[bi, :, j < mask[b + bi]] = filt
    if causal:
        for i in range(s):
            m[:, i, past + i + 1:] = LOWEST
    return m


def ref_core(q, k, v, mask, attn_bias, scale):
    """q [B,N,S,h], k/v [B,N,T,h]: output [B, S, N*hv]."""
    scale = scale or 1 / np.sqrt(q.shape[-1])
    scores = np.einsum("bnsh,bnth->bnst", q.astype(np.float64), k.astype(np.float64)) * scale
    scores = scores + mask[:, None]
    if attn_bias is not None:
        scores = scores + attn_bias
    y = np.einsum("bnst,bnth->bnsh", softmax(scores), v.astype(np.float64))
    b, n, s, hv = y.shape
    return y.transpose(0, 2, 1, 3).reshape(b, s, n * hv).astype(np.float32)


def ref_attention(x, w, bias, heads, sizes=None, mask=None, past=None, attn_bias=None, causal=False, scale=0.0,
                  filt=-10000.0):
    sizes = sizes or [w.shape[1] // 3] * 3
    proj = x.astype(np.float64) @ w + (0 if bias is None else bias)
    q, k, v = np.split(proj, [sizes[0], sizes[0] + sizes[1]], axis=-1)
    q, k, v = in_heads(q, heads), in_heads(k, heads), in_heads(v, heads)
    p = 0
    if past is not None:
        k, v = np.concatenate([past[0], k], axis=2), np.concatenate([past[1], v], axis=2)
        p = past.shape[3]
    b, s = x.shape[:2]
    m = additive_mask(mask, b, s, k.shape[2], p, causal, filt)
    present = np.stack([k, v]).astype(np.float32) if k.shape == v.shape else None
    return ref_core(q, k, v, m, attn_bias, scale), present


def attention_model(b, s, hin, w, bias, heads, opset, mask=None, past=None, attn_bias=None, **attrs):
    inputs = [("x", tensor_type(F, [b, s, hin]))]
    node_inputs = ["x", "W", "B" if bias is not None else ""]
    inits = [numpy_helper.from_array(w, "W")] + ([numpy_helper.from_array(bias, "B")] if bias is not None else [])
    for name, arr, elem in (("mask", mask, I32), ("past", past, F), ("attn_bias", attn_bias, F)):
        node_inputs.append(name if arr is not None else "")
        if arr is not None:
            inputs.append((name, tensor_type(elem, list(arr.shape))))
    while node_inputs[-1] == "":
        node_inputs.pop()
    outputs = ["y"] + (["present"] if past is not None else [])
    node = helper.make_node("Attention", node_inputs, outputs, domain="com.microsoft", num_heads=heads, **attrs)
    return make_model([node], inputs, [(o, tensor_type(F)) for o in outputs], initializers=inits, opset=opset,
                      extra_opsets=MS)


def run(model, feeds, optimize=True):
    options = onyx.SessionOptions()
    if not optimize:  # ops still expand, but nothing folds the shapes the masks are computed from
        options.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onyx.InferenceSession(model, options).run(None, feeds)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


rng = np.random.default_rng(7)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def right_padding_lengths(b, t):
    return np.array([t - 1 - i % 2 for i in range(b)], np.int32)


def lengths_3b2(b, t):
    """ORT's [3B + 2] form: key lengths, then cumulative query and key starts (read for the lengths only)."""
    lengths = right_padding_lengths(b, t)
    cumulative = np.arange(b + 1, dtype=np.int32) * t
    return np.concatenate([lengths, cumulative, cumulative])


def raw_mask_3d(b, s, t):
    """Random 0/1 [B, S, T], the diagonal kept: a row whose every key is masked is softmax over scores offset by
    the filter value, where float32 keeps only ~1e-3 of each score (in ORT too), so no test relies on it."""
    m = (rng.random((b, s, t)) > 0.3).astype(np.int32)
    for i in range(min(s, t)):
        m[:, i, i] = 1
    return m


def raw_mask(b, t):
    m = np.ones((b, t), np.int32)
    m[0, -2:] = 0
    m[-1, 0] = 0
    return m


@pytest.mark.parametrize("opset", [11, 13, 21])  # 11: Unsqueeze / Split with attributes
@pytest.mark.parametrize("mask_form", [None, "raw2d", "raw3d", "lengths", "ends_starts", "lengths_3b2"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_masks(opset, mask_form, causal):
    b, s, hin, heads = 2, 6, 7, 3
    w, bias, x = randn(hin, 3 * 15), randn(3 * 15), randn(b, s, hin)
    mask = {None: None, "raw2d": raw_mask(b, s), "raw3d": raw_mask_3d(b, s, s),
            "lengths": right_padding_lengths(b, s),
            "ends_starts": np.array([s, s - 2, 1, 0], np.int32), "lengths_3b2": lengths_3b2(b, s)}[mask_form]
    model = attention_model(b, s, hin, w, bias, heads, opset, mask=mask, unidirectional=int(causal))
    feeds = {"x": x} if mask is None else {"x": x, "mask": mask}
    (y,) = run(model, feeds)
    close(y, ref_attention(x, w, bias, heads, mask=mask, causal=causal)[0])


@pytest.mark.parametrize("opset", [13, 21])
def test_attention_bias_sizes_scale_and_filter(opset):
    b, s, hin, heads = 2, 5, 8, 3
    sizes = [9, 9, 15]  # head size 3 for Q/K, 5 for V
    w, bias, x = randn(hin, sum(sizes)), randn(sum(sizes)), randn(b, s, hin)
    attn_bias = randn(1, heads, s, s)
    mask = raw_mask(b, s)
    model = attention_model(b, s, hin, w, bias, heads, opset, mask=mask, attn_bias=attn_bias,
                            qkv_hidden_sizes=sizes, scale=0.3, mask_filter_value=-50.0)
    (y,) = run(model, {"x": x, "mask": mask, "attn_bias": attn_bias})
    assert y.shape == (b, s, 15)
    close(y, ref_attention(x, w, bias, heads, sizes, mask=mask, attn_bias=attn_bias, scale=0.3, filt=-50.0)[0])


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_past_and_present(opset, causal):
    b, s, hin, heads, h, p = 2, 3, 6, 3, 4, 5
    w, bias, x = randn(hin, 3 * heads * h), randn(3 * heads * h), randn(b, s, hin)
    past = randn(2, b, heads, p, h)
    mask = raw_mask(b, p + s)
    model = attention_model(b, s, hin, w, bias, heads, opset, mask=mask, past=past, unidirectional=int(causal))
    y, present = run(model, {"x": x, "mask": mask, "past": past})
    want_y, want_present = ref_attention(x, w, bias, heads, mask=mask, past=past, causal=causal)
    close(y, want_y)
    close(present, want_present)


@pytest.mark.parametrize("mask_form", ["lengths", "ends_starts", "raw2d"])
def test_attention_unoptimized_and_dynamic_shapes(mask_form):
    # Symbolic batch / sequence dims, no optimization: the masks are computed from shapes at run time, and one
    # session serves several sizes.
    hin, heads = 6, 2
    w, bias = randn(hin, 12), randn(12)
    mask_dims = {"lengths": ["n"], "ends_starts": ["n"], "raw2d": ["batch", "total"]}[mask_form]
    node = helper.make_node("Attention", ["x", "W", "B", "mask"], ["y"], domain="com.microsoft", num_heads=heads,
                            unidirectional=1)
    model = make_model([node], [("x", tensor_type(F, ["batch", "seq", hin])), ("mask", tensor_type(I32, mask_dims))],
                       [("y", tensor_type(F))], opset=14, extra_opsets=MS,
                       initializers=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(bias, "B")])
    for optimize in (False, True):
        for b, s in ((2, 5), (3, 4)):
            x = randn(b, s, hin)
            ends_starts = np.concatenate([np.full(b, s, np.int32), np.arange(b, dtype=np.int32) % 2])
            mask = {"lengths": right_padding_lengths(b, s), "raw2d": raw_mask(b, s),
                    "ends_starts": ends_starts}[mask_form]
            (y,) = run(model, {"x": x, "mask": mask}, optimize)
            close(y, ref_attention(x, w, bias, heads, mask=mask, causal=True)[0])
    if mask_form == "lengths":
        # Fewer key lengths than batch entries fail rather than broadcast.
        with pytest.raises(onyx.OnyxError, match="reshape"):
            run(model, {"x": randn(2, 4, hin), "mask": np.array([3], np.int32)})


def test_attention_without_bias_and_with_computed_weights():
    # Weights fed as an input (not a constant): split by Split nodes instead of at load.
    b, s, hin, heads = 1, 4, 5, 2
    w, bias, x = randn(hin, 12), randn(12), randn(b, s, hin)
    for opset in (11, 13, 18):
        for with_bias in (False, True):
            node = helper.make_node("Attention", ["x", "W"] + ["B"] * with_bias, ["y"], domain="com.microsoft",
                                    num_heads=heads)
            model = make_model([node], [("x", tensor_type(F, [b, s, hin])), ("W", tensor_type(F, [hin, 12]))],
                               [("y", tensor_type(F))], opset=opset, extra_opsets=MS,
                               initializers=[numpy_helper.from_array(bias, "B")] if with_bias else [])
            (y,) = run(model, {"x": x, "W": w})
            close(y, ref_attention(x, w, bias if with_bias else None, heads)[0])


def test_attention_takes_the_fast_path_and_packs_projections(tmp_path):
    # After optimization: the merged projection as one FusedMatMul (its result split into Q, K, V) and one
    # Attention on 4-D tensors with a float mask.
    b, s, hin, heads = 2, 6, 12, 3
    w, bias = randn(hin, 36), randn(36)
    path = tmp_path / "m.onnx"
    path.write_bytes(attention_model(b, s, hin, w, bias, heads, 17, mask=raw_mask(b, s), unidirectional=1))
    out = tmp_path / "opt.onnx"
    onyx.optimize(str(path), str(out))
    ops = [n.op_type for n in onyx.load(str(out)).graph.nodes]
    assert ops.count("FusedMatMul") == 1 and ops.count("Split") == 1 and ops.count("Attention") == 1, ops
    assert "MatMul" not in ops


def dynamic_quantize(x):
    """DynamicQuantizeLinear's uint8 quantization (range including 0, zero point rounded half to even)."""
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / 255)
    zp = np.uint8(np.clip(np.rint(-lo / scale), 0, 255))
    q = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8)
    return q, scale, zp


@pytest.mark.parametrize("opset", [11, 21])
@pytest.mark.parametrize("per_column", [False, True])
def test_qattention_after_dynamic_quantization(opset, per_column, tmp_path):
    # What ONNX Runtime's quantize_dynamic writes for an optimized BERT's Attention: DynamicQuantizeLinear of the
    # float input feeding QAttention with int8 weights (a per-tensor or per-column scale) and a float bias.
    b, s, hin, heads = 2, 5, 12, 3
    x, w, bias = randn(b, s, hin), randn(hin, 36), randn(36)
    w_scale = (np.abs(w).max(axis=0) / 127).astype(np.float32) if per_column else np.float32(np.abs(w).max() / 127)
    w_q = np.clip(np.rint(w / w_scale), -127, 127).astype(np.int8)
    mask = raw_mask(b, s)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("QAttention", ["xq", "Wq", "B", "xs", "Ws", "mask", "xz"], ["y"], domain="com.microsoft",
                              num_heads=heads, unidirectional=1)]
    inits = [numpy_helper.from_array(w_q, "Wq"), numpy_helper.from_array(bias, "B"),
             numpy_helper.from_array(np.asarray(w_scale, np.float32), "Ws")]
    model = make_model(nodes, [("x", tensor_type(F, [b, s, hin])), ("mask", tensor_type(I32, [b, s]))],
                       [("y", tensor_type(F))], initializers=inits, opset=opset, extra_opsets=MS)
    xq, xs, xz = dynamic_quantize(x)
    # The integer product scaled back: the same as the float attention of the dequantized operands.
    x_deq = (xq.astype(np.float64) - xz) * xs
    w_deq = w_q.astype(np.float64) * w_scale
    want = ref_attention(x_deq, w_deq, bias, heads, mask=mask, causal=True)[0]
    for optimize in (True, False):
        close(run(model, {"x": x, "mask": mask}, optimize)[0], want)
    # The projection becomes one MatMulIntegerToFloat (the VNNI kernel) and the attention the fast Attention.
    path, out = tmp_path / "q.onnx", tmp_path / "opt.onnx"
    path.write_bytes(model)
    onyx.optimize(str(path), str(out))
    ops = [n.op_type for n in onyx.load(str(out)).graph.nodes]
    assert ops.count("MatMulIntegerToFloat") == 1 and ops.count("Attention") == 1 and "MatMulInteger" not in ops, ops


def test_attention_refuses_unsupported_forms():
    b, s, hin, heads = 1, 4, 6, 2
    w = randn(hin, 12)
    model = attention_model(b, s, hin, w, None, heads, 17, mask=np.ones((b, 1, s, s), np.int32))
    with pytest.raises(onyx.Fail, match="4-D mask_index"):
        onyx.InferenceSession(model)
    with pytest.raises(onyx.Fail, match="do_rotary"):
        onyx.InferenceSession(attention_model(b, s, hin, w, None, heads, 17, do_rotary=1))
    # Masks are built with Range, which opset 10 lacks; without one the op expands at opset 10 too.
    with pytest.raises(onyx.Fail, match="needs ai.onnx opset 11"):
        onyx.InferenceSession(attention_model(b, s, hin, w, None, heads, 10, unidirectional=1))
    x = randn(b, s, hin)
    close(run(attention_model(b, s, hin, w, None, heads, 10), {"x": x})[0], ref_attention(x, w, None, heads)[0])


# ---------------------------------------------------------------------------------------------------------------
# MultiHeadAttention


def ref_mha(q, k, v, heads, bias=None, mask=None, attn_bias=None, past_k=None, past_v=None, causal=False,
            scale=0.0, filt=-10000.0):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    if bias is not None:
        d = q.shape[2]
        q, k, v = q + bias[:d], k + bias[d:2 * d], v + bias[2 * d:]
    q4 = in_heads(q, heads)
    k4, v4 = (k, v) if k.ndim == 4 else (in_heads(k, heads), in_heads(v, heads))
    p = 0
    if past_k is not None:
        k4, v4 = np.concatenate([past_k, k4], axis=2), np.concatenate([past_v, v4], axis=2)
        p = past_k.shape[2]
    b, s = q.shape[:2]
    m = additive_mask(mask, b, s, k4.shape[2], p, causal, filt, starts_allowed=False)
    return ref_core(q4, k4, v4, m, attn_bias, scale), k4.astype(np.float32), v4.astype(np.float32)


def mha_model(feeds, opset, outputs=("y",), **attrs):
    order = ["query", "key", "value", "bias", "mask", "attn_bias", "past_key", "past_value"]
    names = [n if n in feeds else "" for n in order]
    while names[-1] == "":
        names.pop()
    inputs = [(n, tensor_type(I32 if n == "mask" else F, list(feeds[n].shape))) for n in names if n]
    node = helper.make_node("MultiHeadAttention", names, list(outputs), domain="com.microsoft", **attrs)
    return make_model([node], inputs, [(o, tensor_type(F)) for o in outputs if o], opset=opset, extra_opsets=MS)


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("mask_form", [None, "lengths", "raw2d", "raw3d", "lengths_3b2"])
@pytest.mark.parametrize("causal", [False, True])
def test_mha_self_and_cross(opset, mask_form, causal):
    b, s, l, heads, h, hv = 2, 5, 7, 3, 5, 2
    feeds = {"query": randn(b, s, heads * h), "key": randn(b, l, heads * h), "value": randn(b, l, heads * hv),
             "bias": randn(2 * heads * h + heads * hv)}
    mask = {None: None, "lengths": right_padding_lengths(b, l), "raw2d": raw_mask(b, l),
            "raw3d": raw_mask_3d(b, s, l), "lengths_3b2": lengths_3b2(b, l)}[mask_form]
    if mask is not None:
        feeds["mask"] = mask
    (y,) = run(mha_model(feeds, opset, num_heads=heads, unidirectional=int(causal)), feeds)
    want = ref_mha(feeds["query"], feeds["key"], feeds["value"], heads, feeds["bias"], mask, causal=causal)[0]
    close(y, want)


@pytest.mark.parametrize("opset", [13, 21])
def test_mha_past_present_attention_bias(opset):
    # A decoder's self attention (Whisper / T5 style): past keys and values, relative position bias, presents.
    b, s, heads, h, p = 2, 1, 4, 3, 6
    feeds = {"query": randn(b, s, heads * h), "key": randn(b, s, heads * h), "value": randn(b, s, heads * h),
             "bias": randn(3 * heads * h), "mask": raw_mask(b, p + s), "attn_bias": randn(1, heads, s, p + s),
             "past_key": randn(b, heads, p, h), "past_value": randn(b, heads, p, h)}
    model = mha_model(feeds, opset, ("y", "present_key", "present_value"), num_heads=heads, unidirectional=1,
                      scale=0.25, mask_filter_value=-1e9)
    y, pk, pv = run(model, feeds)
    want = ref_mha(feeds["query"], feeds["key"], feeds["value"], heads, feeds["bias"], feeds["mask"],
                   feeds["attn_bias"], feeds["past_key"], feeds["past_value"], causal=True, scale=0.25, filt=-1e9)
    for got, w in zip((y, pk, pv), want):
        close(got, w)


def test_mha_prompt_with_past_causal():
    # Several new tokens after a past: query i sees the past and new tokens up to i.
    b, s, heads, h, p = 1, 4, 2, 4, 3
    feeds = {"query": randn(b, s, heads * h), "key": randn(b, s, heads * h), "value": randn(b, s, heads * h),
             "past_key": randn(b, heads, p, h), "past_value": randn(b, heads, p, h)}
    (y,) = run(mha_model(feeds, 17, num_heads=heads, unidirectional=1), feeds)
    close(y, ref_mha(feeds["query"], feeds["key"], feeds["value"], heads, past_k=feeds["past_key"],
                     past_v=feeds["past_value"], causal=True)[0])


@pytest.mark.parametrize("opset", [13, 21])
def test_mha_cross_attention_with_4d_key_value(opset):
    b, s, l, heads, h = 2, 3, 8, 3, 5
    feeds = {"query": randn(b, s, heads * h), "key": randn(b, heads, l, h), "value": randn(b, heads, l, h),
             "mask": right_padding_lengths(b, l)}
    (y,) = run(mha_model(feeds, opset, num_heads=heads), feeds)
    close(y, ref_mha(feeds["query"], feeds["key"], feeds["value"], heads, mask=feeds["mask"])[0])


def test_mha_refuses_unsupported_forms():
    b, s, heads, h = 1, 3, 2, 4
    packed = {"query": randn(b, s, heads, 3, h)}
    with pytest.raises(onyx.Fail, match="packed QKV"):
        onyx.InferenceSession(mha_model(packed, 17, num_heads=heads))
    packed_kv = {"query": randn(b, s, heads * h), "key": randn(b, s, heads, 2, h)}
    with pytest.raises(onyx.Fail, match="packed KV"):
        onyx.InferenceSession(mha_model(packed_kv, 17, num_heads=heads))
    qk = {"query": randn(b, s, heads * h), "key": randn(b, s, heads * h), "value": randn(b, s, heads * h)}
    with pytest.raises(onyx.Fail, match="output qk"):
        onyx.InferenceSession(mha_model(qk, 17, ("y", "", "", "qk"), num_heads=heads))


# ---------------------------------------------------------------------------------------------------------------
# RotaryEmbedding


def ref_rotary(x, pos, cos, sin, interleaved=False, heads=0, rot=0):
    x = x.astype(np.float64)
    four_d = x.ndim == 4
    if not four_d:
        b, s, hidden = x.shape
        head = 2 * cos.shape[1] if rot == 0 else hidden // heads
        x = x.reshape(b, s, hidden // head, head).transpose(0, 2, 1, 3)
    b, n, s, head = x.shape
    rot = rot or head
    if pos.size == 1:
        pos = np.broadcast_to(pos.reshape(-1)[0] + np.arange(s), (b, s))
    c, si = cos[pos][:, None], sin[pos][:, None]  # [B, 1, S, rot/2]
    y = x.copy()
    if interleaved:
        x1, x2 = x[..., 0:rot:2], x[..., 1:rot:2]
        y[..., 0:rot:2], y[..., 1:rot:2] = x1 * c - x2 * si, x2 * c + x1 * si
    else:
        x1, x2 = x[..., :rot // 2], x[..., rot // 2:rot]
        y[..., :rot // 2], y[..., rot // 2:rot] = x1 * c - x2 * si, x2 * c + x1 * si
    if not four_d:
        y = y.transpose(0, 2, 1, 3).reshape(b, s, n * head)
    return y.astype(np.float32)


def rotary_model(x, pos, cos, opset, **attrs):
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft", **attrs)
    inputs = [("x", tensor_type(F, list(x.shape))), ("pos", tensor_type(I64, list(pos.shape))),
              ("cos", tensor_type(F, list(cos.shape))), ("sin", tensor_type(F, list(cos.shape)))]
    return make_model([node], inputs, [("y", tensor_type(F))], opset=opset, extra_opsets=MS)


@pytest.mark.parametrize("opset", [13, 21])
@pytest.mark.parametrize("layout", ["bsd", "bnsh", "bsd_no_heads"])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("pos_form", ["offset", "full"])
def test_rotary(opset, layout, interleaved, pos_form):
    b, s, heads, head, max_pos = 2, 5, 3, 6, 16
    x = randn(b, heads, s, head) if layout == "bnsh" else randn(b, s, heads * head)
    pos = np.array([4], np.int64) if pos_form == "offset" else rng.integers(0, max_pos, (b, s)).astype(np.int64)
    cos, sin = randn(max_pos, head // 2), randn(max_pos, head // 2)
    attrs = {"interleaved": interleaved}
    if layout == "bsd":
        attrs["num_heads"] = heads
    (y,) = run(rotary_model(x, pos, cos, opset, **attrs), {"x": x, "pos": pos, "cos": cos, "sin": sin})
    close(y, ref_rotary(x, pos, cos, sin, bool(interleaved)))


def test_rotary_partial_dim():
    b, s, heads, head, rot, max_pos = 2, 4, 2, 8, 4, 10
    x = randn(b, s, heads * head)
    pos = rng.integers(0, max_pos, (b, s)).astype(np.int64)
    cos, sin = randn(max_pos, rot // 2), randn(max_pos, rot // 2)
    model = rotary_model(x, pos, cos, 17, num_heads=heads, rotary_embedding_dim=rot)
    (y,) = run(model, {"x": x, "pos": pos, "cos": cos, "sin": sin})
    close(y, ref_rotary(x, pos, cos, sin, heads=heads, rot=rot))


def test_rotary_refuses_packed_batching():
    x, pos, cos = randn(1, 2, 4), np.zeros(1, np.int64), randn(4, 2)
    with pytest.raises(onyx.Fail, match="is_packed_batching"):
        onyx.InferenceSession(rotary_model(x, pos, cos, 17, is_packed_batching=1))


# ---------------------------------------------------------------------------------------------------------------
# GroupQueryAttention


def ref_gqa(feeds, heads, kv_heads, interleaved=False, window=-1, scale=0.0, softcap=0.0):
    """ORT's CPU semantics: per entry b, T_b = seqlens_k[b] + 1 and past P_b = T_b - S (0 in a first prompt, where
    S == total_sequence_length); present = past rows [0, P_b), the new rows at [P_b, P_b + S), zeros up to
    max(total, past length); query i sees keys j <= P_b + i (and > P_b + i - window); query head q reads kv head
    q // (heads / kv_heads)."""
    q = feeds["query"].astype(np.float64)
    b, s, _ = q.shape
    if "key" in feeds:
        q4, k4, v4 = in_heads(q, heads), in_heads(feeds["key"], kv_heads), in_heads(feeds["value"], kv_heads)
    else:
        h = q.shape[2] // (heads + 2 * kv_heads)
        x = q.reshape(b, s, heads + 2 * kv_heads, h).transpose(0, 2, 1, 3)
        q4, k4, v4 = x[:, :heads], x[:, heads:heads + kv_heads], x[:, heads + kv_heads:]
    total = int(feeds["total"].reshape(-1)[0])
    lengths = feeds["seqlens_k"].astype(np.int64) + 1
    past_b = np.zeros(b, np.int64) if s == total else lengths - s
    at = past_b[:, None] + np.arange(s)[None, :]
    if "cos" in feeds:
        pos = feeds.get("pos", at)
        rot = 2 * feeds["cos"].shape[1]
        q4 = ref_rotary(q4, pos, feeds["cos"], feeds["sin"], interleaved, rot=rot).astype(np.float64)
        k4 = ref_rotary(k4, pos, feeds["cos"], feeds["sin"], interleaved, rot=rot).astype(np.float64)
    h = q4.shape[-1]
    past_len = feeds["past_key"].shape[2] if "past_key" in feeds else 0
    rows = max(total, past_len)
    presents = []
    for new, name in ((k4, "past_key"), (v4, "past_value")):
        p = np.zeros((b, kv_heads, rows, h))
        for bi in range(b):
            if name in feeds:
                p[bi, :, :past_b[bi]] = feeds[name][bi, :, :past_b[bi]]
            p[bi, :, at[bi]] = new[bi].transpose(1, 0, 2)
        presents.append(p)
    j = np.arange(rows)
    hidden = j[None, None, :] > at[:, :, None]
    if window > 0:
        hidden |= j[None, None, :] <= at[:, :, None] - window
    mask = np.where(hidden, LOWEST, 0.0)[:, None]
    if "bias" in feeds:
        mask = mask + feeds["bias"]
    group = heads // kv_heads
    kr, vr = np.repeat(presents[0], group, axis=1), np.repeat(presents[1], group, axis=1)
    scores = np.einsum("bnsh,bnth->bnst", q4, kr) * (scale or 1 / np.sqrt(h))
    if softcap:
        scores = softcap * np.tanh(scores / softcap)
    y = np.einsum("bnst,bnth->bnsh", softmax(scores + mask), vr)
    y = y.transpose(0, 2, 1, 3).reshape(b, s, heads * h).astype(np.float32)
    return y, presents[0].astype(np.float32), presents[1].astype(np.float32)


def gqa_model(feeds, heads, kv_heads, opset, **attrs):
    order = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total", "cos", "sin", "pos", "bias"]
    names = [n if n in feeds else "" for n in order]
    while names[-1] == "":
        names.pop()
    elems = {"seqlens_k": I32, "total": I32, "pos": I64}
    inputs = [(n, tensor_type(elems.get(n, F), list(feeds[n].shape))) for n in names if n]
    node = helper.make_node("GroupQueryAttention", names, ["y", "present_key", "present_value"],
                            domain="com.microsoft", num_heads=heads, kv_num_heads=kv_heads, **attrs)
    return make_model([node], inputs, [(o, tensor_type(F)) for o in ("y", "present_key", "present_value")],
                      opset=opset, extra_opsets=MS)


def gqa_feeds(b, s, heads, kv_heads, h, seqlens, total, past=None, packed=False, rot=0):
    f = {}
    if packed:
        f["query"] = randn(b, s, (heads + 2 * kv_heads) * h)
    else:
        f["query"], f["key"], f["value"] = randn(b, s, heads * h), randn(b, s, kv_heads * h), randn(b, s, kv_heads * h)
    if past is not None:
        f["past_key"], f["past_value"] = randn(b, kv_heads, past, h), randn(b, kv_heads, past, h)
    f["seqlens_k"], f["total"] = np.array(seqlens, np.int32), np.array(total, np.int32)
    if rot:
        f["cos"], f["sin"] = randn(32, rot // 2), randn(32, rot // 2)
    return f


GQA_CASES = {
    # name: (batch, S, seqlens_k, total_sequence_length, past length)
    "prompt": (2, 5, [4, 4], 5, None),
    "prompt_right_padding": (2, 5, [4, 2], 5, 0),
    "decode": (2, 1, [5, 5], 6, 5),
    "decode_ragged_in_a_buffer": (2, 1, [5, 3], 6, 8),
    "subsequent_prompt": (1, 3, [6], 7, 4),
    "subsequent_prompt_in_a_buffer": (1, 3, [6], 7, 10),
}


@pytest.mark.parametrize("opset", [13, 21])
@pytest.mark.parametrize("case", list(GQA_CASES))
@pytest.mark.parametrize("rot", [0, 8])
def test_gqa(opset, case, rot):
    b, s, seqlens, total, past = GQA_CASES[case]
    heads, kv_heads, h = 6, 2, 8
    feeds = gqa_feeds(b, s, heads, kv_heads, h, seqlens, total, past, rot=rot)
    attrs = {"do_rotary": 1, "rotary_interleaved": 1} if rot else {}
    got = run(gqa_model(feeds, heads, kv_heads, opset, **attrs), feeds)
    want = ref_gqa(feeds, heads, kv_heads, interleaved=bool(rot))
    if case == "prompt_right_padding":  # ORT leaves the padding's rows of the output undefined
        got[0], want = got[0][1, :3], (want[0][1, :3],) + want[1:]
    for g, w in zip(got, want):
        close(g, w)


@pytest.mark.parametrize("opset", [13, 21])
def test_gqa_packed_window_softcap_bias_positions(opset):
    heads, kv_heads, h = 4, 2, 8
    feeds = gqa_feeds(2, 1, heads, kv_heads, h, [5, 3], 6, past=8, packed=True, rot=8)
    got = run(gqa_model(feeds, heads, kv_heads, opset, do_rotary=1), feeds)
    for g, w in zip(got, ref_gqa(feeds, heads, kv_heads)):
        close(g, w)
    for window in (1, 2):
        feeds = gqa_feeds(2, 6, heads, kv_heads, h, [5, 5], 6)
        got = run(gqa_model(feeds, heads, kv_heads, opset, local_window_size=window), feeds)
        close(got[0], ref_gqa(feeds, heads, kv_heads, window=window)[0])
    feeds = gqa_feeds(2, 5, heads, kv_heads, h, [4, 4], 5)
    feeds["bias"] = randn(1, heads, 5, 5)
    got = run(gqa_model(feeds, heads, kv_heads, opset, softcap=2.0, scale=0.5), feeds)
    close(got[0], ref_gqa(feeds, heads, kv_heads, scale=0.5, softcap=2.0)[0])
    feeds = gqa_feeds(2, 1, heads, kv_heads, h, [5, 5], 6, past=5, rot=8)
    feeds["pos"] = np.array([[3], [9]], np.int64)
    got = run(gqa_model(feeds, heads, kv_heads, opset, do_rotary=1), feeds)
    for g, w in zip(got, ref_gqa(feeds, heads, kv_heads)):
        close(g, w)


def test_gqa_constant_caches_and_partial_rotation():
    # Caches as initializers: the rotated width becomes RotaryEmbedding's attribute instead of a slice.
    heads, kv_heads, h = 4, 2, 16
    feeds = gqa_feeds(1, 3, heads, kv_heads, h, [6], 7, past=4, rot=8)
    cos, sin = feeds.pop("cos"), feeds.pop("sin")
    names = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total", "cos", "sin"]
    node = helper.make_node("GroupQueryAttention", names, ["y", "pk", "pv"], domain="com.microsoft",
                            num_heads=heads, kv_num_heads=kv_heads, do_rotary=1)
    inputs = [(n, tensor_type(I32 if n in ("seqlens_k", "total") else F, list(feeds[n].shape))) for n in names[:7]]
    model = make_model([node], inputs, [(o, tensor_type(F)) for o in ("y", "pk", "pv")], extra_opsets=MS,
                       initializers=[numpy_helper.from_array(cos, "cos"), numpy_helper.from_array(sin, "sin")])
    got = run(model, feeds)
    for g, w in zip(got, ref_gqa(dict(feeds, cos=cos, sin=sin), heads, kv_heads)):
        close(g, w)


def test_gqa_refuses_unsupported_forms():
    feeds = gqa_feeds(1, 2, 2, 1, 8, [1], 2)
    with pytest.raises(onyx.Fail, match="smooth_softmax"):
        onyx.InferenceSession(gqa_model(feeds, 2, 1, 17, smooth_softmax=1))
    with pytest.raises(onyx.Fail, match="multiple of kv_num_heads"):
        onyx.InferenceSession(gqa_model(feeds, 3, 2, 17))
