# ONNX backend node tests run through the Python package: inputs read from the test's .pb files into the package's
# Python forms (numpy arrays, lists, None, and integer arrays for the types numpy lacks), outputs compared with the
# expected ones by the ONNX rule (same dtype and shape; strings equal; numbers within rtol 1e-3, atol 1e-7).
import numpy as np
import onnx
import onyx
import pytest
from onnx import numpy_helper
from testutil import DEBIAN_NODE_TESTS, SHARED_NODE_TESTS

# Debian's libonnx-testdata (always installed by scripts/setup.sh): element types, strings, sequences, optionals.
# (Its test_cast_FLOAT_to_BFLOAT16 expects truncation, from before ONNX specified rounding to nearest even; the
# shared data has the current expectation.)
DEBIAN = [
    "test_add", "test_relu", "test_sigmoid", "test_matmul_2d", "test_where_example", "test_equal", "test_and2d",
    "test_not_2d", "test_argmax_default_axis_example", "test_nonzero_example", "test_reduce_sum_default_axes_keepdims_random",
    "test_cast_FLOAT_to_DOUBLE", "test_cast_DOUBLE_to_FLOAT", "test_cast_FLOAT_to_FLOAT16", "test_cast_FLOAT16_to_FLOAT",
    "test_cast_BFLOAT16_to_FLOAT", "test_cast_FLOAT_to_STRING", "test_cast_STRING_to_FLOAT",
    "test_mod_mixed_sign_int8", "test_mod_mixed_sign_int16", "test_mod_mixed_sign_int32", "test_mod_mixed_sign_int64",
    "test_mod_mixed_sign_float16", "test_mod_mixed_sign_float64", "test_mod_uint8", "test_mod_uint16", "test_mod_uint32",
    "test_mod_uint64", "test_bitshift_right_uint8", "test_bitshift_left_uint64", "test_clip_default_int8_min",
    "test_unique_sorted_with_axis", "test_strnormalizer_export_monday_casesensintive_lower",
    "test_strnormalizer_export_monday_empty_output", "test_tfidfvectorizer_tf_uniandbigrams_skip5",
    "test_identity_sequence", "test_sequence_insert_at_back", "test_sequence_insert_at_front",
    "test_sequence_map_add_2_sequences", "test_sequence_map_extract_shapes", "test_loop13_seq", "test_if_seq",
    "test_identity_opt", "test_if_opt", "test_loop16_seq_none", "test_optional_get_element",
    "test_optional_get_element_sequence", "test_optional_has_element", "test_optional_has_element_empty",
]
# ../shared/onnx-tests, when it is there (as for the conformance tests): the newer element types.
SHARED = [
    "test_cast_FLOAT_to_BFLOAT16", "test_cast_BFLOAT16_to_FLOAT", "test_cast_FLOAT_to_FLOAT8E4M3FN",
    "test_cast_FLOAT16_to_FLOAT8E4M3FN", "test_cast_FLOAT_to_FLOAT8E5M2", "test_cast_FLOAT8E4M3FN_to_FLOAT",
    "test_cast_FLOAT8E5M2FNUZ_to_FLOAT", "test_cast_e8m0_FLOAT_to_FLOAT8E8M0", "test_cast_e8m0_FLOAT8E8M0_to_FLOAT",
    "test_cast_FLOAT_to_INT4", "test_cast_INT4_to_INT8", "test_cast_FLOAT_to_UINT4", "test_cast_UINT4_to_UINT8",
    "test_cast_FLOAT_to_INT2", "test_cast_INT2_to_INT8", "test_cast_UINT2_to_UINT8", "test_cast_FLOAT4E2M1_to_FLOAT",
    "test_string_concat_utf8", "test_string_split_basic", "test_regex_full_match_basic",
    "test_ai_onnx_ml_label_encoder_string_int", "test_dft", "test_optional_get_element_optional_sequence",
    "test_optional_has_element_empty_optional_input",
]

CASES = [DEBIAN_NODE_TESTS / name for name in DEBIAN]
if SHARED_NODE_TESTS.is_dir():
    CASES += [SHARED_NODE_TESTS / name for name in SHARED]

BITS = {16: np.uint16, 17: np.uint8, 18: np.uint8, 19: np.uint8, 20: np.uint8, 24: np.uint8}
# Packed types: (bits per element, signed).
PACKED = {21: (4, False), 22: (4, True), 23: (4, False), 25: (2, False), 26: (2, True)}


def tensor_value(t):
    """A TensorProto in the package's form, decoded here independently of onyx (onnx 1.12 predates most of these
    element types)."""
    dims = tuple(t.dims)
    count = int(np.prod(dims)) if dims else 1
    if t.data_type in BITS:
        carrier = BITS[t.data_type]
        data = np.frombuffer(t.raw_data, carrier) if t.raw_data else np.array(t.int32_data).astype(carrier)
        return data[:count].reshape(dims)
    if t.data_type in PACKED:
        bits, signed = PACKED[t.data_type]
        raw = np.frombuffer(t.raw_data, np.uint8) if t.raw_data else np.array(t.int32_data).astype(np.uint8)
        per_byte = 8 // bits
        index = np.arange(count)
        codes = (raw[index // per_byte] >> ((index % per_byte) * bits)) & ((1 << bits) - 1)
        if signed:
            return np.where(codes >= 1 << (bits - 1), codes.astype(np.int16) - (1 << bits), codes).astype(np.int8).reshape(dims)
        return codes.astype(np.uint8).reshape(dims)
    return numpy_helper.to_array(t)


def read_value(path, type_proto):
    data = path.read_bytes()
    kind = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if kind == "sequence_type":
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return [tensor_value(t) for t in s.tensor_values]
    if kind == "optional_type":
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        if o.HasField("tensor_value"):
            return tensor_value(o.tensor_value)
        if o.HasField("sequence_value"):
            return [tensor_value(t) for t in o.sequence_value.tensor_values]
        return None
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return tensor_value(t)


# NaN of each float8 type: any payload (the bit pattern of a produced NaN is not specified).
FLOAT8_NAN = {17: lambda b: (b & 0x7F) == 0x7F, 18: lambda b: b == 0x80, 19: lambda b: (b & 0x7F) > 0x7C,
              20: lambda b: b == 0x80}


def assert_same_float8(expected, actual, elem, what):
    assert actual.dtype == np.uint8 and actual.shape == expected.shape, what
    nan = FLOAT8_NAN[elem]
    np.testing.assert_array_equal(nan(actual), nan(expected), err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(np.where(nan(actual), 0, actual), np.where(nan(expected), 0, expected), err_msg=what)


def assert_same(expected, actual, what):
    if expected is None:
        assert actual is None, f"{what}: expected None, got {actual!r}"
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{what}: {actual!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{what}[{i}]")
        return
    assert isinstance(actual, np.ndarray), f"{what}: got {type(actual).__name__}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    if expected.dtype == object:
        assert actual.dtype == object and actual.tolist() == expected.tolist(), what
    elif expected.dtype.kind in "fc":
        assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
        np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-7, equal_nan=True, err_msg=what)
    else:
        assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
        np.testing.assert_array_equal(actual, expected, err_msg=what)


@pytest.mark.parametrize("folder", CASES, ids=[f"{c.parent.parent.name}/{c.name}" for c in CASES])
def test_node(folder):
    assert folder.is_dir(), f"{folder} is missing"
    model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
    inputs = {i.name: i.type for i in model.graph.input}
    outputs = {o.name: o.type for o in model.graph.output}
    sess = onyx.InferenceSession(str(folder / "model.onnx"))
    data_sets = sorted(folder.glob("test_data_set_*"))
    assert data_sets
    for data_set in data_sets:
        feed_names = [i.name for i in model.graph.input][: len(list(data_set.glob("input_*.pb")))]
        feeds = {n: read_value(data_set / f"input_{k}.pb", inputs[n]) for k, n in enumerate(feed_names)}
        names = [o.name for o in model.graph.output]
        expected = [read_value(data_set / f"output_{k}.pb", outputs[n]) for k, n in enumerate(names)]
        actual = sess.run(None, feeds)
        assert len(actual) == len(expected)
        for name, e, a in zip(names, expected, actual):
            elem = outputs[name].tensor_type.elem_type if outputs[name].HasField("tensor_type") else 0
            if elem in FLOAT8_NAN:
                assert_same_float8(e, a, elem, f"{data_set.name} output '{name}'")
            else:
                assert_same(e, a, f"{data_set.name} output '{name}'")
