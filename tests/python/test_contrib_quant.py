# ONNX Runtime's quantization contrib ops (com.microsoft, src/ops/contrib/contrib_quant.cpp), which a session
# expands into standard nodes, against numpy references of their documented semantics.
#
# The references round half to even and saturate as ONNX Runtime does. Where onyx computes in another order than
# the reference (a fused int8 kernel, float32 steps where the reference uses float64), a value may land on the other
# side of a rounding boundary: quantized outputs may then differ by one step, which the checks allow.
import numpy as np
import onyx
import pytest
from onnx import TensorProto, helper, numpy_helper
from testutil import make_model, tensor_type

MS = [("com.microsoft", 1)]
NP2TP = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8,
         np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int16): TensorProto.INT16,
         np.dtype(np.uint16): TensorProto.UINT16, np.dtype(np.int32): TensorProto.INT32,
         np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.bool_): TensorProto.BOOL}
OPSETS = [13, 21]
DEFAULT, DISABLED, EXTENDED = (onyx.GraphOptimizationLevel.ORT_ENABLE_ALL, onyx.GraphOptimizationLevel.ORT_DISABLE_ALL,
                               onyx.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
rng = np.random.default_rng(7)


def model(node, feeds, inits, opset=13):
    """One com.microsoft node reading `feeds` (graph inputs) and `inits` (initializers), writing `y`."""
    return make_model([node], [(k, tensor_type(NP2TP[v.dtype], list(v.shape))) for k, v in feeds.items()],
                      [("y", tensor_type(TensorProto.UNDEFINED))],
                      [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()], opset=opset,
                      ir_version=10 if opset >= 21 else 8, extra_opsets=MS)


def run(model_bytes, feeds, level=DEFAULT):
    options = onyx.SessionOptions()
    options.graph_optimization_level = level
    (y,) = onyx.InferenceSession(model_bytes, options).run(None, feeds)
    return y


def ms_node(op, inputs, **attrs):
    return helper.make_node(op, inputs, ["y"], domain="com.microsoft", **attrs)


def q8(shape, t):
    info = np.iinfo(t)
    return rng.integers(info.min, info.max + 1, shape).astype(t)


# ---- references ----

def quantize(x, scale, zero, t):
    info = np.iinfo(t)
    q = np.rint(np.asarray(x, np.float32) / np.float32(scale)) + np.int64(zero)
    return np.clip(q, info.min, info.max).astype(t)


def dequantize(q, scale, zero=0):
    return ((np.asarray(q).astype(np.int64) - np.int64(zero)) * np.float32(scale)).astype(np.float32)


def assert_within_one_step(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert diff.max(initial=0) <= 1, f"{int(diff.max())} steps off at {np.argwhere(diff > 1)[:5].tolist()}"


def avg_pool_2d(x, k, stride, pad, count_include_pad):
    """NCHW average pool with symmetric pads."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ones = np.pad(np.ones((h, w), np.float32), pad)
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    y = np.zeros((n, c, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride:i * stride + k, j * stride:j * stride + k]
            count = k * k if count_include_pad else ones[i * stride:i * stride + k, j * stride:j * stride + k].sum()
            y[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return y


# ---- elementwise ----

@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("t", [np.uint8, np.int8])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_binary_broadcasting(opset, t, op):
    a, b = q8((2, 3, 4), t), q8((3, 1), t)
    zero = 128 if t == np.uint8 else 0
    cs = 0.05 if op == "QLinearAdd" else 0.3
    inits = {"as": np.float32(0.02), "az": np.array(zero - 5, t), "bs": np.float32(0.03), "bz": np.array(zero + 7, t),
             "cs": np.float32(cs), "cz": np.array(zero + 1, t)}
    m = model(ms_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"]), {"a": a, "b": b}, inits, opset)
    fa, fb = dequantize(a, 0.02, zero - 5), dequantize(b, 0.03, zero + 7)
    want = quantize(fa + fb if op == "QLinearAdd" else fa * fb, cs, zero + 1, t)
    for level in (DEFAULT, DISABLED):
        assert_within_one_step(run(m, {"a": a, "b": b}, level), want)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_add_without_zero_points_keeps_the_input_type(opset, t):
    # Omitted zero points are 0 of T; the output is T even without C_zero_point (QuantizeLinear alone would give
    # uint8). Same shapes: the optimizer makes it ai.onyx QLinearAdd, checked against the unfused nodes too.
    a, b = q8((4, 8), t), q8((4, 8), t)
    inits = {"as": np.float32(0.05), "bs": np.float32(0.04), "cs": np.float32(0.07)}
    m = model(ms_node("QLinearAdd", ["a", "as", "", "b", "bs", "", "cs"]), {"a": a, "b": b}, inits, opset)
    want = quantize(dequantize(a, 0.05) + dequantize(b, 0.04), 0.07, 0, t)
    fused, plain = run(m, {"a": a, "b": b}), run(m, {"a": a, "b": b}, DISABLED)
    assert fused.dtype == t
    assert_within_one_step(fused, want)
    np.testing.assert_array_equal(fused, plain)  # ai.onyx QLinearAdd rounds as the nodes do


@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_sigmoid_and_leaky_relu(t):
    x = np.arange(np.iinfo(t).min, np.iinfo(t).max + 1).astype(t).reshape(4, 64)  # every input value
    zx, zy = (100, 20) if t == np.uint8 else (-20, -100)
    inits = {"xs": np.float32(0.05), "xz": np.array(zx, t), "ys": np.float32(1 / 256), "yz": np.array(zy, t)}
    f = dequantize(x, 0.05, zx)
    y = run(model(ms_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"]), {"x": x}, inits), {"x": x})
    assert_within_one_step(y, quantize(1 / (1 + np.exp(-f)), 1 / 256, zy, t))
    inits["ys"] = np.float32(0.04)
    y = run(model(ms_node("QLinearLeakyRelu", ["x", "xs", "xz", "ys", "yz"], alpha=0.2), {"x": x}, inits), {"x": x})
    assert_within_one_step(y, quantize(np.where(f < 0, np.float32(0.2) * f, f), 0.04, zy, t))
    # alpha's default is 0.01
    y = run(model(ms_node("QLinearLeakyRelu", ["x", "xs", "xz", "ys", "yz"]), {"x": x}, inits), {"x": x})
    assert_within_one_step(y, quantize(np.where(f < 0, np.float32(0.01) * f, f), 0.04, zy, t))


@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_where(t):
    c = rng.integers(0, 2, (3, 4)).astype(bool)
    x, y2 = q8((3, 4), t), q8((4,), t)
    inits = {"xs": np.float32(0.06), "xz": np.array(3, t), "ys": np.float32(0.02), "yz": np.array(-1 if t == np.int8 else 9, t),
             "zs": np.float32(0.07), "zz": np.array(5, t)}
    m = model(ms_node("QLinearWhere", ["c", "x", "xs", "xz", "x2", "ys", "yz", "zs", "zz"]), {"c": c, "x": x, "x2": y2}, inits)
    want = quantize(np.where(c, dequantize(x, 0.06, 3), dequantize(y2, 0.02, inits["yz"])), 0.07, 5, t)
    assert_within_one_step(run(m, {"c": c, "x": x, "x2": y2}), want)


# ---- pools, reductions, concatenation, softmax ----

@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("t", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last", [0, 1])
def test_global_average_pool(opset, t, channels_last):
    x = q8((2, 5, 7, 3) if channels_last else (2, 3, 5, 7), t)
    inits = {"xs": np.float32(0.05), "xz": np.array(10, t), "ys": np.float32(0.02), "yz": np.array(-4, t) if t == np.int8 else np.array(4, t)}
    m = model(ms_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], channels_last=channels_last), {"x": x}, inits, opset)
    axes = (1, 2) if channels_last else (2, 3)
    want = quantize(dequantize(x, 0.05, 10).mean(axis=axes, keepdims=True), 0.02, inits["yz"], t)
    assert_within_one_step(run(m, {"x": x}), want)


@pytest.mark.parametrize("t", [np.uint8, np.int8])
@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("channels_last", [0, 1])
def test_average_pool(t, count_include_pad, channels_last):
    x = q8((2, 3, 6, 7), t)
    inits = {"xs": np.float32(0.05), "xz": np.array(7, t), "ys": np.float32(0.03), "yz": np.array(2, t)}
    want = quantize(avg_pool_2d(dequantize(x, 0.05, 7), 3, 2, 1, count_include_pad), 0.03, 2, t)
    feed = x.transpose(0, 2, 3, 1).copy() if channels_last else x
    m = model(ms_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                      strides=[2, 2], count_include_pad=count_include_pad, channels_last=channels_last), {"x": feed}, inits)
    # Channels-last alone at level 3: the layout pass turns it into ai.onyx NhwcAveragePool without importing that
    # domain (src/opt/channels_last.cpp); level 2 has no layout pass.
    y = run(m, {"x": feed}, EXTENDED if channels_last else DEFAULT)
    assert_within_one_step(y.transpose(0, 3, 1, 2) if channels_last else y, want)


@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_reduce_mean(t):
    x = q8((2, 5, 6, 3), t)
    inits = {"xs": np.float32(0.05), "xz": np.array(7, t), "ys": np.float32(0.01), "yz": np.array(2, t)}
    for opset in OPSETS:  # axes an attribute of ReduceMean before 18, an input from 18
        for keepdims in (0, 1):
            m = model(ms_node("QLinearReduceMean", ["x", "xs", "xz", "ys", "yz"], axes=[1, -2], keepdims=keepdims),
                      {"x": x}, inits, opset)
            want = quantize(dequantize(x, 0.05, 7).mean(axis=(1, 2), keepdims=bool(keepdims)), 0.01, 2, t)
            assert_within_one_step(run(m, {"x": x}), want)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_concat(opset, t):
    xs = [q8((2, 3, 4), t), q8((2, 1, 4), t), q8((2, 2, 4), t)]
    params = [(0.03, 5), (0.05, 2), (0.11, -6 if t == np.int8 else 6)]  # the second one has Y's parameters
    inits = {"ys": np.float32(0.05), "yz": np.array(2, t)}
    names = ["ys", "yz"]
    for i, (s, z) in enumerate(params):
        inits[f"s{i}"], inits[f"z{i}"] = np.float32(s), np.array(z, t)
        names += [f"x{i}", f"s{i}", f"z{i}"]
    feeds = {f"x{i}": x for i, x in enumerate(xs)}
    y = run(model(ms_node("QLinearConcat", names, axis=-2), feeds, inits, opset), feeds)
    want = np.concatenate([quantize(dequantize(x, s, z), 0.05, 2, t) for x, (s, z) in zip(xs, params)], axis=1)
    assert_within_one_step(y, want)
    np.testing.assert_array_equal(y[:, 3:4], xs[1])  # taken as it is


def softmax_reference(x, scale, zero, y_scale, y_zero, t, axis, coerced):
    f = dequantize(x, scale, zero).astype(np.float64)
    if coerced:  # softmax over the dims from axis on, as one
        shape = f.shape
        f = f.reshape(int(np.prod(shape[:axis])), -1)
        e = np.exp(f - f.max(axis=1, keepdims=True))
        p = (e / e.sum(axis=1, keepdims=True)).reshape(shape)
    else:
        e = np.exp(f - f.max(axis=axis, keepdims=True))
        p = e / e.sum(axis=axis, keepdims=True)
    # ONNX Runtime's kernel scales the probabilities by floor(1 / y_scale), not 1 / y_scale.
    step = np.floor(np.float32(1) / np.float32(y_scale))
    return quantize(p.astype(np.float32) * step, 1.0, y_zero, t)


@pytest.mark.parametrize("t", [np.uint8, np.int8])
@pytest.mark.parametrize("semantics,axis", [(13, None), (13, 1), (12, None), (12, 2), (12, -1)])
@pytest.mark.parametrize("opset", [12, 13])
@pytest.mark.parametrize("y_scale", [1 / 256, 1 / 255])
def test_softmax(t, semantics, axis, opset, y_scale):
    # The `opset` attribute gives the meaning of axis (coerced to 2-D before 13; default axis 1 before 13, -1
    # from 13); the model's own opset decides which Softmax form the expansion can use.
    x = q8((2, 3, 5), t)
    zero = 0 if t == np.uint8 else -128
    inits = {"xs": np.float32(0.08), "xz": np.array(3, t), "ys": np.float32(y_scale), "yz": np.array(zero, t)}
    attrs = {"opset": semantics} if axis is None else {"opset": semantics, "axis": axis}
    y = run(model(ms_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], **attrs), {"x": x}, inits, opset), {"x": x})
    a = axis if axis is not None else (1 if semantics < 13 else -1)
    assert_within_one_step(y, softmax_reference(x, 0.08, 3, y_scale, zero, t, a % 3, semantics < 13))


# ---- matrix products ----

@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("ta,tb", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("trans", [(0, 0), (1, 1), (0, 1)])
@pytest.mark.parametrize("per_column", [0, 1])
@pytest.mark.parametrize("quantized", [0, 1])
def test_qgemm(opset, ta, tb, trans, per_column, quantized):
    M, K, N = 3, 20, 6
    a, b = q8((K, M) if trans[0] else (M, K), ta), q8((N, K) if trans[1] else (K, N), tb)
    bzero = 128 if tb == np.uint8 else 0
    bs = rng.uniform(0.01, 0.03, N).astype(np.float32) if per_column else np.float32(0.02)
    bz = (rng.integers(-3, 4, N) + bzero).astype(tb) if per_column else np.array(bzero + 1, tb)
    c = rng.integers(-2000, 2000, N).astype(np.int32)
    az = np.array(120 if ta == np.uint8 else 2, ta)
    inits = {"as": np.float32(0.015), "az": az, "b": b, "bs": bs, "bz": bz, "c": c}
    names = ["a", "as", "az", "b", "bs", "bz", "c"]
    if quantized:
        inits.update({"ys": np.float32(0.3), "yz": np.array(128 if ta == np.uint8 else -3, ta)})
        names += ["ys", "yz"]
    m = model(ms_node("QGemm", names, transA=trans[0], transB=trans[1], alpha=0.75), {"a": a}, inits, opset)
    A = (a.T if trans[0] else a).astype(np.int64) - int(az)
    B = (b.T if trans[1] else b).astype(np.int64) - bz.astype(np.int64)
    acc = A @ B + c
    want = (np.float64(0.75) * np.float32(0.015) * bs.astype(np.float64) * acc).astype(np.float32)
    for level in (DEFAULT, DISABLED):
        y = run(m, {"a": a}, level)
        if quantized:
            assert_within_one_step(y, quantize(want, 0.3, inits["yz"], ta))
        else:
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_qgemm_without_c_and_broadcast_c():
    a, b = q8((4, 8), np.uint8), q8((8, 5), np.int8)
    inits = {"as": np.float32(0.01), "az": np.array(128, np.uint8), "b": b, "bs": np.float32(0.02), "bz": np.array(0, np.int8)}
    acc = (a.astype(np.int64) - 128) @ b.astype(np.int64)
    y = run(model(ms_node("QGemm", ["a", "as", "az", "b", "bs", "bz"]), {"a": a}, inits), {"a": a})
    np.testing.assert_allclose(y, (acc * np.float32(0.01) * np.float32(0.02)).astype(np.float32), rtol=1e-6)
    # C of shape [M, 1] (not along N): added to the int32 sum.
    inits["c"] = rng.integers(-100, 100, (4, 1)).astype(np.int32)
    y = run(model(ms_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c"]), {"a": a}, inits), {"a": a})
    np.testing.assert_allclose(y, ((acc + inits["c"]) * np.float32(0.01) * np.float32(0.02)).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("ta,tb", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_column", [0, 1])
def test_matmul_integer_to_float(ta, tb, per_column):
    N = 5
    a = q8((2, 3, 16), ta)
    inits = {"b": q8((16, N), tb), "as": np.float32(0.02),
             "bs": rng.uniform(0.01, 0.05, N).astype(np.float32) if per_column else np.float32(0.03),
             "az": np.array(7, ta), "bz": rng.integers(0, 5, N).astype(tb) if per_column else np.array(3, tb),
             "bias": rng.uniform(-1, 1, N).astype(np.float32)}
    m = model(ms_node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz", "bias"]), {"a": a}, inits)
    acc = (a.astype(np.int64) - 7) @ (inits["b"].astype(np.int64) - inits["bz"].astype(np.int64))
    want = acc * (np.float32(0.02) * inits["bs"]) + inits["bias"]
    np.testing.assert_allclose(run(m, {"a": a}), want.astype(np.float32), rtol=1e-5, atol=1e-6)
    # Without zero points and bias.
    m = model(ms_node("MatMulIntegerToFloat", ["a", "b", "as", "bs"]), {"a": a}, inits)
    want = (a.astype(np.int64) @ inits["b"].astype(np.int64)) * (np.float32(0.02) * inits["bs"])
    np.testing.assert_allclose(run(m, {"a": a}), want.astype(np.float32), rtol=1e-5, atol=1e-6)


def dynamic_quantize(x):
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = np.float32((hi - lo) / 255)
    zero = int(np.clip(np.rint(np.float32(-lo) / scale), 0, 255))
    return quantize(x, scale, zero, np.uint8), scale, zero


@pytest.mark.parametrize("tb", [np.int8, np.uint8])
def test_dynamic_quantize_matmul(tb):
    a = rng.normal(0, 1, (2, 3, 16)).astype(np.float32)
    inits = {"b": q8((16, 5), tb), "bs": rng.uniform(0.01, 0.05, 5).astype(np.float32),
             "bz": rng.integers(0, 5, 5).astype(tb), "bias": rng.uniform(-1, 1, 5).astype(np.float32)}
    y = run(model(ms_node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz", "bias"]), {"a": a}, inits), {"a": a})
    aq, scale, zero = dynamic_quantize(a)
    acc = (aq.astype(np.int64) - zero) @ (inits["b"].astype(np.int64) - inits["bz"].astype(np.int64))
    np.testing.assert_allclose(y, (acc * (scale * inits["bs"]) + inits["bias"]).astype(np.float32), rtol=1e-5, atol=1e-5)


def pack(values, bits):
    """Packs rows of `bits`-bit values low bits first (as MatMulNBits' B and zero points)."""
    per = 8 // bits
    v = values.astype(np.uint32)
    if v.shape[-1] % per:
        v = np.concatenate([v, np.zeros(v.shape[:-1] + (per - v.shape[-1] % per,), np.uint32)], axis=-1)
    v = v.reshape(v.shape[:-1] + (-1, per))
    return sum(v[..., i] << (bits * i) for i in range(per)).astype(np.uint8)


@pytest.mark.parametrize("bits,K,block,zero_points,bias", [
    (4, 64, 32, "packed", True), (4, 40, 16, "none", False), (4, 48, 16, "float", True), (8, 64, 32, "packed", False),
    (2, 64, 16, "packed", True), (4, 33, 16, "packed", False)])
def test_matmul_nbits(bits, K, block, zero_points, bias):
    N = 6
    blocks = -(-K // block)
    q = rng.integers(0, 2 ** bits, (N, blocks, block))
    scales = rng.uniform(0.01, 0.1, (N, blocks)).astype(np.float32)
    inits = {"B": pack(q, bits), "scales": scales}
    names = ["a", "B", "scales"]
    zero = np.full((N, blocks), 2.0 ** (bits - 1), np.float32)
    if zero_points == "packed":
        z = rng.integers(0, 2 ** bits, (N, blocks))
        inits["zp"], zero = pack(z, bits), z.astype(np.float32)
        names.append("zp")
    elif zero_points == "float":
        zero = rng.uniform(0, 2 ** bits - 1, (N, blocks)).astype(np.float32)
        inits["zp"] = zero
        names.append("zp")
    if bias:
        inits["bias"] = rng.uniform(-1, 1, N).astype(np.float32)
        names += [""] * (4 - len(names)) + ["", "bias"]
    a = rng.normal(0, 1, (2, 3, K)).astype(np.float32)
    m = model(ms_node("MatMulNBits", names, K=K, N=N, bits=bits, block_size=block), {"a": a}, inits, 21)
    w = ((q - zero[..., None]) * scales[..., None]).reshape(N, -1)[:, :K].T.astype(np.float32)
    want = a @ w + (inits["bias"] if bias else 0)
    np.testing.assert_allclose(run(m, {"a": a}), want, rtol=1e-5, atol=1e-5)


def test_scales_known_only_at_run_time():
    # Scales fed as inputs: the expansion computes products and the softmax step with nodes instead of constants.
    a, b = q8((3, 8), np.uint8), q8((5, 8), np.int8)
    feeds = {"a": a, "as": np.float32(0.02), "bs": np.float32(0.03), "ys": np.float32(0.2)}
    inits = {"az": np.array(128, np.uint8), "b": b, "bz": np.array(0, np.int8), "c": np.arange(-2, 3, dtype=np.int32) * 100,
             "yz": np.array(120, np.uint8)}
    m = model(ms_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"], alpha=0.5, transB=1), feeds, inits)
    acc = (a.astype(np.int64) - 128) @ b.T.astype(np.int64) + inits["c"]
    assert_within_one_step(run(m, feeds), quantize((0.5 * 0.02 * 0.03 * acc).astype(np.float32), 0.2, 120, np.uint8))
    m = model(ms_node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az"]), {"a": a, "b": b.T.copy(), "as": feeds["as"],
              "bs": feeds["bs"]}, {"az": inits["az"]})
    y = run(m, {"a": a, "b": b.T.copy(), "as": feeds["as"], "bs": feeds["bs"]})
    np.testing.assert_allclose(y, ((a.astype(np.int64) - 128) @ b.T.astype(np.int64)) * np.float32(0.02 * 0.03), rtol=1e-6)
    x = q8((2, 7), np.uint8)
    feeds = {"x": x, "xs": np.float32(0.07), "ys": np.float32(1 / 255)}
    m = model(ms_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], opset=13), feeds,
              {"xz": np.array(3, np.uint8), "yz": np.array(0, np.uint8)})
    assert_within_one_step(run(m, feeds), softmax_reference(x, 0.07, 3, 1 / 255, 0, np.uint8, 1, False))


# ---- QuantizeLinear / DequantizeLinear of com.microsoft ----

@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("t", [np.uint8, np.int8, np.int16, np.uint16])
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_dequantize_linear(opset, t, per_axis):
    # 16-bit types before opset 21 go through the arithmetic (the standard ops take them from 21).
    info = np.iinfo(t)
    zero = (info.min + info.max + 1) // 2 + 3
    step = 0.01 if np.dtype(t).itemsize == 1 else 0.0002
    x = rng.normal(0, 1.5, (3, 4, 5)).astype(np.float32)
    x[0, 0, :3] = [1e9, -1e9, 0.5 * step]  # saturation both ways; a tie rounds to even
    if per_axis:
        scale = (rng.uniform(0.5, 1.5, 4) * step).astype(np.float32)
        zp = (rng.integers(-3, 4, 4) + zero).astype(t)
        attrs, s, z = {"axis": 1}, scale[None, :, None], zp.astype(np.int64)[None, :, None]
    else:
        scale, zp = np.float32(step), np.array(zero, t)
        attrs, s, z = {}, scale, int(zp)
    inits = {"s": scale, "z": zp}
    y = run(model(ms_node("QuantizeLinear", ["x", "s", "z"], **attrs), {"x": x}, inits, opset), {"x": x})
    want = np.clip(np.rint(x / s) + z, info.min, info.max).astype(t)
    np.testing.assert_array_equal(y, want)
    xq = rng.integers(info.min, info.max + 1, (3, 4, 5), dtype=np.int64).astype(t)
    y = run(model(ms_node("DequantizeLinear", ["x", "s", "z"], **attrs), {"x": xq}, inits, opset), {"x": xq})
    np.testing.assert_array_equal(y, ((xq.astype(np.int64) - z) * s).astype(np.float32))


@pytest.mark.parametrize("opset", OPSETS)
def test_quantize_linear_defaults_and_float16(opset):
    x = rng.normal(0, 1, (10,)).astype(np.float32)
    y = run(model(ms_node("QuantizeLinear", ["x", "s"]), {"x": x}, {"s": np.float32(0.01)}, opset), {"x": x})
    np.testing.assert_array_equal(y, quantize(x, 0.01, 0, np.uint8))  # no zero point: uint8
    # float16 x and scale (the standard ops take them from opset 19; before, through float).
    h = rng.normal(0, 1, (10,)).astype(np.float16)
    inits = {"s": np.array(0.01, np.float16), "z": np.array(3, np.int8)}
    y = run(model(ms_node("QuantizeLinear", ["x", "s", "z"]), {"x": h}, inits, opset), {"x": h})
    assert_within_one_step(y, quantize(h.astype(np.float32), np.float16(0.01), 3, np.int8))
    q = q8((10,), np.int8)
    y = run(model(ms_node("DequantizeLinear", ["x", "s", "z"]), {"x": q}, inits, opset), {"x": q})
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, ((q.astype(np.float32) - 3) * np.float32(np.float16(0.01))).astype(np.float16), rtol=1e-3)


# ---- QLinearConv ----

def test_qlinear_conv_channels_last():
    x = q8((1, 3, 6, 7), np.uint8)
    inits = {"xs": np.float32(0.02), "xz": np.array(128, np.uint8), "w": q8((4, 3, 3, 3), np.int8),
             "ws": rng.uniform(0.01, 0.02, 4).astype(np.float32), "wz": np.zeros(4, np.int8), "ys": np.float32(0.1),
             "yz": np.array(100, np.uint8), "B": rng.integers(-500, 500, 4).astype(np.int32)}
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"]
    attrs = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    first = run(model(ms_node("QLinearConv", names, **attrs), {"x": x}, inits), {"x": x})
    nhwc = x.transpose(0, 2, 3, 1).copy()
    last = run(model(ms_node("QLinearConv", names, channels_last=1, **attrs), {"x": nhwc}, inits), {"x": nhwc})
    np.testing.assert_array_equal(last, first.transpose(0, 2, 3, 1))
    # the same as the standard op
    std = make_model([helper.make_node("QLinearConv", names, ["y"], **attrs)], [("x", tensor_type(TensorProto.UINT8, [1, 3, 6, 7]))],
                     [("y", tensor_type(TensorProto.UINT8))], [numpy_helper.from_array(v, k) for k, v in inits.items()], opset=13)
    np.testing.assert_array_equal(first, run(std, {"x": x}))


# ---- what the optimizer makes of them ----

def optimized_ops(tmp_path, m):
    src, out = tmp_path / "m.onnx", tmp_path / "opt.onnx"
    src.write_bytes(m)
    onyx.optimize(str(src), out)
    return [(n.domain + "." if n.domain else "") + n.op_type for n in onyx.load(str(out)).graph.nodes]


def test_fusions_at_the_default_level(tmp_path):
    t = np.uint8
    inits = {"as": np.float32(0.05), "az": np.array(3, t), "bs": np.float32(0.04), "bz": np.array(9, t), "cs": np.float32(0.07)}
    feeds = {"a": q8((4, 8), t), "b": q8((4, 8), t)}
    assert optimized_ops(tmp_path, model(ms_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs"]), feeds, inits)) == \
        ["ai.onyx.QLinearAdd"]
    inits = {"as": np.float32(0.015), "az": np.array(120, t), "b": q8((8, 6), np.int8), "bs": np.float32(0.02),
             "bz": np.array(0, np.int8), "c": np.arange(6, dtype=np.int32), "ys": np.float32(0.3), "yz": np.array(128, t)}
    m = model(ms_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"]), {"a": q8((3, 8), t)}, inits)
    assert optimized_ops(tmp_path, m) == ["ai.onyx.MatMulIntegerToFloat", "QuantizeLinear"]
    inits = {"b": q8((16, 5), np.int8), "bs": np.full(5, 0.02, np.float32), "bias": np.ones(5, np.float32)}
    m = model(ms_node("DynamicQuantizeMatMul", ["a", "b", "bs", "", "bias"]), {"a": np.ones((2, 16), np.float32)}, inits)
    assert optimized_ops(tmp_path, m) == ["DynamicQuantizeLinear", "Mul", "ai.onyx.MatMulIntegerToFloat"]
    inits = {"b": q8((16, 5), np.int8), "as": np.float32(0.1), "bs": np.full(5, 0.02, np.float32), "az": np.array(1, t)}
    m = model(ms_node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az"]), {"a": q8((2, 16), t)}, inits)
    assert optimized_ops(tmp_path, m) == ["ai.onyx.MatMulIntegerToFloat"]


# ---- what is refused ----

def expect_error(m, feeds, match):
    with pytest.raises(onyx.OnyxError, match=match):
        run(m, feeds)


def test_refusals():
    t = np.uint8
    x = q8((1, 2, 3, 3), t)
    pool = {"xs": np.float32(0.1), "xz": np.array(0, t), "ys": np.float32(0.1), "yz": np.array(0, t)}
    expect_error(model(ms_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], channels_last=2), {"x": x}, pool),
                 {"x": x}, "channels_last must be 0 or 1, got 2")
    expect_error(model(ms_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"]), {"x": x}, pool), {"x": x},
                 "required attribute 'opset' is missing")
    per_channel = dict(pool, xs=np.full(2, 0.1, np.float32))
    expect_error(model(ms_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"]), {"x": x}, per_channel), {"x": x},
                 "per-tensor")
    add = {"as": np.float32(0.1), "bs": np.float32(0.1), "cs": np.float32(0.1)}
    expect_error(model(ms_node("QLinearAdd", ["x", "as", "", "x", "bs", "", "cs"]), {"x": x}, add, opset=9), {"x": x},
                 r"needs ai.onnx opset >= 10")
    a = np.ones((2, 32), np.float32)
    nbits = {"B": np.zeros((4, 1, 16), np.uint8), "scales": np.ones((4, 1), np.float32)}
    expect_error(model(ms_node("MatMulNBits", ["a", "B", "scales"], K=32, N=4, bits=3, block_size=32), {"a": a}, nbits),
                 {"a": a}, "bits=3 is not supported")
    expect_error(model(ms_node("MatMulNBits", ["a", "B", "scales", "", "g"], K=32, N=4, bits=4, block_size=32), {"a": a},
                       dict(nbits, g=np.zeros(32, np.int32))), {"a": a}, "g_idx")
    feeds = {"a": a, "B": nbits["B"]}
    expect_error(model(ms_node("MatMulNBits", ["a", "B", "scales"], K=32, N=4, bits=4, block_size=32), feeds,
                       {"scales": nbits["scales"]}), feeds, "must be constants")
    gemm = {"as": np.float32(0.1), "az": np.array(0, t), "b": q8((3, 2), t), "bs": np.float32(0.1), "bz": np.array(0, t),
            "ys": np.float32(0.1)}
    a8 = q8((2, 3), t)
    expect_error(model(ms_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "", "ys"]), {"a": a8}, gemm), {"a": a8},
                 "y_scale and y_zero_point must be given together")
    i4 = {"s": np.float32(0.1), "z": np.array(0, np.int16)}
    f = np.ones((2, 3), np.float32)
    expect_error(model(ms_node("QuantizeLinear", ["x", "s", "z"], axis=1), {"x": f}, dict(i4, s=np.ones(3, np.float32),
                       z=np.zeros(3, np.int16)), opset=12), {"x": f}, r"per-axis quantization needs ai.onnx opset >= 13")
