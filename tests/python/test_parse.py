"""onyx.parse against onnx's own parser (Debian's onnx 1.12: onnx.parser.parse_model) on the same texts, texts in
the newer syntax (onnx >= 1.13: node names, typed attributes, seq/map/optional types, ...) against models built with
onnx.helper, print -> parse round trips, and errors."""

import glob
import os

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper
import onnx.parser
import pytest

import onyx
from onyx._parse import parse, to_text  # exported as onyx.parse and onyx.to_text

HEADER = '<ir_version: 8, opset_import: ["" : 18]>\n'
SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "onnx-tests")


def strip_defaults(msg):
    """Clears optional scalar fields set to their default value (onnx's parser sets some, e.g. an empty node
    domain, that onyx leaves absent; neither changes the model), recursively; oneof members are kept, since
    there presence is meaning (dim_value 0 is not an unknown dimension)."""
    for field, value in list(msg.ListFields()):
        if field.type == field.TYPE_MESSAGE:
            if field.label == field.LABEL_REPEATED:
                for v in value:
                    strip_defaults(v)
            else:
                strip_defaults(value)
        elif field.label != field.LABEL_REPEATED and field.containing_oneof is None and value == field.default_value:
            msg.ClearField(field.name)
    return msg


def parse_both(text):
    ours = onnx.load_from_string(parse(text))
    theirs = onnx.parser.parse_model(text)
    return strip_defaults(ours), strip_defaults(theirs)


# Texts Debian's onnx 1.12 parser reads: graphs, initializers, value_info, attributes of the kinds it infers,
# subgraphs, functions with attribute references, model header keys and metadata. Left out: what onnx 1.12 reads
# wrongly and later versions of its parser.cc read as onyx does (test_fixed_in_later_onnx): `alpha: float = 1` (1.12
# gives an INT attribute), `tp = float[3, N]` (1.12: a tensor without values instead of a type), lists of graphs
# (1.12 drops them), and string escapes (1.12 has none).
ONNX_112_TEXTS = {
    "graph": HEADER + """agraph (float[N, 128] X, float[128, 10] W, float[10] B) => (float[N, 10] C) {
  T = MatMul(X, W)
  C = Add(T, B)
}""",
    "header": '<ir_version: 7, opset_import: ["" : 13, "ai.onnx.ml" : 2], producer_name: "p", producer_version: "1.0",'
    ' domain: "ai.test", model_version: 5, doc_string: "the doc", metadata_props: ["a": "b", "c": ""]>\n'
    "g (float[2] x) => (float[2] y) { y = Relu(x) }",
    "attributes": HEADER + """g (float[2,3] x) => (float[3,2] y) {
  y = Transpose <perm = [1, 0]> (x)
  s = Constant <value = int64[2] {3, 2}> ()
  a = LeakyRelu <alpha = 0.5> (x)
  c = Foo <s = "a string", ss = ["a", "b"], fs = [1.0, 2.5, -3e-5], i = -4> (x)
  d = Foo <i: int = 3, f: floats = [1.0, 2.0], named = float[2] w {1, 2}> (x)
  e = Foo (x) <after = 1>
}""",
    "initializers": HEADER + """g (float[2] x, float[2] w = {1, 2}) => (float[2] y)
<float[2] b = {0.5, -1}, float[2] t, int64[1] k = {5}, string[2] st = {"a", "b"}, double[1] d = {1.5},
 uint64[1] u = {18446744073709551615}, int8[2] i8 = {-1, 2}, int32[3] i32 = {-2147483648, 0, 2147483647}> {
  t = Add(x, w)
  y = Add(t, b)
}""",
    "value_info_and_shapes": HEADER + """g (float[] u, float sc, float[N,?] q, int64[0] e) => (float[2] y) <float[2] t> {
  t = Relu(u)
  y = Relu(t)
}""",
    "subgraphs": HEADER + """g (bool c, float[2] x) => (float[2] y) {
  y = If (c) <then_branch = then_g () => (float[2] z) { z = Neg(x) },
              else_branch = else_g () => (float[2] z) <float[1] k = {2}> { z = Mul(x, k) }>
}""",
    "function": """<ir_version: 8, opset_import: ["" : 18, "local" : 1]>
g (float[2] x) => (float[2] y) {
  y = local.Twice <k = 2.0> (x)
}
<domain: "local", opset_import: ["" : 18]>
Twice <k> (x) => (y) {
  c = Constant <value_float: float = @k> ()
  y = Mul(x, c)
}""",
    "domains": """<ir_version: 8, opset_import: ["" : 18, "ai.onnx.ml" : 3]>
g (float[2] x) => (float[2] y) {
  # a comment line
  y = ai.onnx.ml.Normalizer <norm = "L2"> (x)  # and a trailing one
}""",
}


@pytest.mark.parametrize("name", sorted(ONNX_112_TEXTS))
def test_same_model_as_onnx_parser(name):
    ours, theirs = parse_both(ONNX_112_TEXTS[name])
    assert ours == theirs


def test_fixed_in_later_onnx():
    m = onnx.load_from_string(parse(HEADER + """g (float[2] x) => (float[2] y) {
  y = Foo <alpha: float = 1, tp = float[3, N], gs = [a () => (float z) { z = Neg(x) }, b () => (float z) { z = Abs(x) }]> (x)
}"""))
    alpha, tp, gs = m.graph.node[0].attribute
    assert alpha.type == onnx.AttributeProto.FLOAT and alpha.f == 1.0
    assert tp.type == onnx.AttributeProto.TYPE_PROTO and tp.tp == tensor_type(onnx.TensorProto.FLOAT, [3, "N"])
    assert gs.type == onnx.AttributeProto.GRAPHS and [g.name for g in gs.graphs] == ["a", "b"]
    assert gs.graphs[1].node[0].op_type == "Abs"


def test_onnx_parser_models_check():
    for text in ONNX_112_TEXTS.values():
        model = onnx.load_from_string(parse(text))
        assert model.graph.node


def tensor_type(elem, shape):
    return oh.make_tensor_type_proto(elem, shape)


def test_newer_syntax_against_helper():
    text = """<ir_version: 9, opset_import: ["" : 18, "l" : 1]>
g (seq(float[N]) s, map(int64, optional(float[3])) m, sparse_tensor(float[2,2]) sp, float["a b"] q) => (float[N] y)
<float[4] w = {nan, inf, -inf, 1e-3}, float16[1] h = {15360}, bool[2] b = {1, 0}, float[2] ext = ["location": "w.bin"]> {
  [n1] y, = SequenceAt(s, "")
  [n2] z = l.F:ov <e: ints = [], ss: strings = [], t: tensors = [float[1] {1}], tps: type_protos = [float[2], seq(int64)],
                   r: int = @ref, g: graph = sub () => (float o) { o = Neg(q) }> (y)
}
<domain: "l", opset_import: ["" : 18], overload: "ov", doc_string: "fd">
F <a, b: float = 2.5> (float[2] x) => (y) { y = Neg(x) }"""
    m = onnx.load_from_string(parse(text))
    g = m.graph
    assert g.input[0].type == oh.make_sequence_type_proto(tensor_type(onnx.TensorProto.FLOAT, ["N"]))
    map_type = onnx.TypeProto()
    map_type.map_type.key_type = onnx.TensorProto.INT64
    map_type.map_type.value_type.CopyFrom(oh.make_optional_type_proto(tensor_type(onnx.TensorProto.FLOAT, [3])))
    assert g.input[1].type == map_type
    assert g.input[2].type == oh.make_sparse_tensor_type_proto(onnx.TensorProto.FLOAT, [2, 2])
    assert g.input[3].type.tensor_type.shape.dim[0].dim_param == "a b"
    w = g.initializer[0]
    assert np.isnan(w.float_data[0]) and list(w.float_data[1:3]) == [np.inf, -np.inf]
    assert list(g.initializer[1].int32_data) == [15360] and g.initializer[1].data_type == onnx.TensorProto.FLOAT16
    assert list(g.initializer[2].int32_data) == [1, 0]
    ext = g.initializer[3]
    assert ext.data_location == onnx.TensorProto.EXTERNAL and ext.external_data[0].value == "w.bin"
    n1, n2 = g.node
    assert n1.name == "n1" and list(n1.output) == ["y"] and list(n1.input) == ["s", ""]
    assert n2.domain == "l"  # onnx 1.12 has no overload field (the C++ test checks it)
    attrs = {a.name: a for a in n2.attribute}
    assert attrs["e"].type == onnx.AttributeProto.INTS and not attrs["e"].ints
    assert attrs["ss"].type == onnx.AttributeProto.STRINGS
    assert attrs["t"].tensors[0] == oh.make_tensor("", onnx.TensorProto.FLOAT, [1], [1.0]) or \
        list(attrs["t"].tensors[0].float_data) == [1.0]
    assert attrs["tps"].type_protos[1] == oh.make_sequence_type_proto(oh.make_tensor_type_proto(onnx.TensorProto.INT64, None)) \
        or attrs["tps"].type_protos[1].sequence_type.elem_type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert attrs["r"].ref_attr_name == "ref" and attrs["r"].type == onnx.AttributeProto.INT
    assert attrs["g"].g.node[0].op_type == "Neg"
    f = m.functions[0]
    assert (f.domain, f.doc_string) == ("l", "fd")
    # attribute_proto, value_info and overload are newer than onnx 1.12's FunctionProto: the C++ test checks them
    assert list(f.attribute) == ["a"] and list(f.input) == ["x"] and list(f.output) == ["y"]


def messages(msg):
    """msg and every message inside it."""
    yield msg
    for field, value in msg.ListFields():
        if field.type == field.TYPE_MESSAGE:
            for v in (value if field.label == field.LABEL_REPEATED else [value]):
                yield from messages(v)


def without_docs(model):
    """The model without the doc strings the text does not carry (the model's own is carried)."""
    for m in messages(model):
        if m is not model and "doc_string" in m.DESCRIPTOR.fields_by_name:
            m.ClearField("doc_string")
    return model


def values_typed(model):
    """Every tensor's values re-encoded by numpy_helper, so that raw_data and the typed fields compare equal."""
    for m in list(messages(model)):
        if isinstance(m, onnx.TensorProto) and m.data_location != onnx.TensorProto.EXTERNAL:
            name = m.name if m.HasField("name") else None
            m.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(m), name))
    return model


def test_round_trip_of_onyx_print():
    """print -> parse -> onnx: equal to the original model for conformance models the text carries fully."""
    # The shared conformance data when present, else Debian's libonnx-testdata (installed by scripts/setup.sh).
    root = SHARED if os.path.isdir(os.path.join(SHARED, "node")) else "/usr/include/onnx/backend/test/data"
    models = sorted(glob.glob(os.path.join(root, "node", "test_*", "model.onnx")))
    assert models, f"no conformance models under {root} (install libonnx-testdata)"
    picked = [m for m in models if os.path.basename(os.path.dirname(m)) in (
        "test_if", "test_loop11", "test_scan9_sum", "test_constant", "test_lstm_defaults", "test_cast_FLOAT_to_STRING",
        "test_sequence_map_add_2_sequences", "test_optional_get_element_sequence", "test_gridsample")]
    assert len(picked) >= 5
    for path in picked:
        text = to_text(path)
        assert text == to_text(open(path, "rb").read())
        parsed = onnx.load_from_string(parse(text))
        original = onnx.load(path)
        assert strip_defaults(values_typed(parsed)) == strip_defaults(values_typed(without_docs(original))), path


def test_errors_name_line_and_column():
    with pytest.raises(onyx.InvalidArgument) as e:
        parse(HEADER + "g (float x) => (float y) {\n  y = Relu(x\n}", "m.txt")
    assert str(e.value).startswith("m.txt:4:1: expected ')' after the inputs of node 'Relu'")
    assert isinstance(e.value, ValueError)
    with pytest.raises(onyx.InvalidArgument, match=r"<text>:1:1: expected a graph name"):
        parse("")
    with pytest.raises(onyx.InvalidArgument, match="nesting deeper than"):
        parse("g (" + "seq(" * 100000)
    with pytest.raises(TypeError):
        parse(42)


def test_escapes():
    m = onnx.load_from_string(parse(HEADER + 'g (float[2] x) => (float[2] y) { y = Foo <s = "a \\"q\\" \\\\ b"> (x) }'))
    assert m.graph.node[0].attribute[0].s == b'a "q" \\ b'


def test_bytes_and_unicode_text():
    text = HEADER + 'g (float[2] "x\u00e9") => (float[2] y) { y = Relu("x\u00e9") }'
    a = parse(text)
    assert a == parse(text.encode("utf-8"))
    assert onnx.load_from_string(a).graph.input[0].name == "x\u00e9"
