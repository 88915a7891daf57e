#!/usr/bin/python3
"""Write the hostile ONNX corpus: one folder per case under OUTDIR.

    /usr/bin/python3 tests/hostile/make_corpus.py OUTDIR

Each case folder holds model.onnx (built with onnx.helper, or raw bytes for the wire-format cases), the feeds
as input_<NAME>.pb / input_<NAME>.npy, any external-data files, and case.json:

    {"category": ..., "what": "<one line: what is hostile>", "expect": EXPECT, "feeds": [[NAME, FILE], ...]}

EXPECT is {"error": SUB} (exit non-zero, stderr contains SUB, or one of SUB when it is a list,
case-insensitively), {"ok": true, "outputs": [...]} (exit 0; each listed output, when not null, is compared
with output_K.pb), or {"error": SUB, "or_ok": true} where the spec leaves the result undefined (a clean error
or a clean exit both pass). "feeds" is only written when the feeds are not exactly the input_* files.

Every expectation comes from the ONNX spec (IR.md, Operators.md, ExternalData.md) or from the protobuf
encoding rules, never from what a runtime prints; the one-line "what" says which rule a case breaks.
The corpus is rebuilt deterministically (fixed seeds), so nothing but this script is kept in the tree.
"""
import json
import os
import pickle
import shutil
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, mapping, numpy_helper

MARKER = '.hostile-corpus'  # marks a folder this script may wipe and rewrite

I32_MIN, I32_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1
FLOAT = TensorProto.FLOAT
INT8, INT32, INT64 = TensorProto.INT8, TensorProto.INT32, TensorProto.INT64
UINT8, UINT64, BOOL, STRING = TensorProto.UINT8, TensorProto.UINT64, TensorProto.BOOL, TensorProto.STRING

# Words that any clear error about an unreadable protobuf file contains (the file, or what went wrong).
WIRE_ERR = ['model.onnx', 'protobuf', 'parse', 'malformed', 'truncat', 'wire', 'varint', 'invalid']
DEADLINE = ['deadline', 'timeout', 'timed out', 'time limit', 'time out']
DEPTH = ['depth', 'deep', 'nest', 'recurs']


# ---------------------------------------------------------------------------------------------------------
# The case record and its writer.

class Case:
    def __init__(self, name, category, what):
        self.name, self.category, self.what = name, category, what
        self.model_bytes = b''
        self.model_is_dir = False   # model.onnx is a folder (a path that cannot be read as a file)
        self.files = {}             # relative path -> bytes
        self.links = {}             # relative path -> symlink target
        self.fifos = []             # relative paths of named pipes
        self.dirs = []              # relative paths of (empty) folders
        self.feeds = None           # explicit [[NAME, FILE]] when not derived from input_* files
        self.expect = None

    def model(self, m):
        self.model_bytes = m if isinstance(m, bytes) else m.SerializeToString()

    def input(self, name, value, ext='pb'):
        """A feed: a numpy array (written as a TensorProto), a proto message, or raw bytes."""
        if isinstance(value, np.ndarray):
            value = numpy_helper.from_array(value, name)
        if not isinstance(value, bytes):
            value = value.SerializeToString()
        self.files[f'input_{name}.{ext}'] = value

    def error(self, *subs, or_ok=False, outputs=None):
        self.expect = {'error': subs[0] if len(subs) == 1 else list(subs)}
        if or_ok:
            self.expect['or_ok'] = True
        if outputs is not None:
            self.expect['outputs'] = [out_spec(a) for a in outputs]

    def ok(self, *outputs):
        self.expect = {'ok': True}
        if outputs:
            self.expect['outputs'] = [out_spec(a) for a in outputs]

    def write(self, outdir):
        d = os.path.join(outdir, self.name)
        os.makedirs(d)
        for rel in self.dirs:
            os.makedirs(os.path.join(d, rel), exist_ok=True)
        if self.model_is_dir:
            os.makedirs(os.path.join(d, 'model.onnx'))
        else:
            with open(os.path.join(d, 'model.onnx'), 'wb') as f:
                f.write(self.model_bytes)
        for rel, data in self.files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), 'wb') as f:
                f.write(data)
        for rel, target in self.links.items():
            os.symlink(target, os.path.join(d, rel))
        for rel in self.fifos:
            os.mkfifo(os.path.join(d, rel))
        meta = {'category': self.category, 'what': self.what, 'expect': self.expect}
        if self.feeds is not None:
            meta['feeds'] = self.feeds
        with open(os.path.join(d, 'case.json'), 'w') as f:
            json.dump(meta, f, indent=1)
            f.write('\n')


def out_spec(a):
    """An expected output: dtype, shape and flat values (None: the output is not compared)."""
    if a is None:
        return None
    a = np.asarray(a)
    return {'dtype': a.dtype.name, 'shape': list(a.shape), 'values': a.ravel().tolist()}


# ---------------------------------------------------------------------------------------------------------
# Building models with onnx.helper, without the checker (many of these models are invalid on purpose).

def elem(a):
    return mapping.NP_TYPE_TO_TENSOR_TYPE[np.asarray(a).dtype]


def vi(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def seq_vi(name, elem_type, shape):
    return helper.make_tensor_sequence_value_info(name, elem_type, shape)


def tensor(name, a, dtype=None):
    return numpy_helper.from_array(np.array(a, dtype=dtype), name)


def node(op, ins, outs, name=None, domain=None, **attrs):
    return helper.make_node(op, ins, outs, name=name, domain=domain, **attrs)


def graph(nodes, inputs, outputs, inits=(), name='hostile', value_info=()):
    return helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits), value_info=list(value_info))


def make(g, opset=17, ir=8, functions=(), domains=(), opsets=None):
    """A model around graph g; opsets=[] writes none at all."""
    if opsets is None:
        opsets = [helper.make_opsetid('', opset)] + [helper.make_opsetid(d, v) for d, v in domains]
    return helper.make_model(g, opset_imports=opsets, ir_version=ir, producer_name='hostile-corpus',
                             functions=list(functions))


class Feed:
    """A graph input fed from input_<name>.pb; shape overrides the declared shape (default: the array's)."""
    def __init__(self, name, a, shape=None):
        self.name, self.a = name, np.asarray(a)
        self.shape = list(self.a.shape) if shape is None else shape


class Init:
    """An initializer."""
    def __init__(self, name, a):
        self.name, self.a = name, np.asarray(a)


def op1(c, op, ins, outs, attrs=None, raw_attrs=()):
    """A model with the single node `op` named after the case.

    ins: Feed / Init / '' (an omitted optional input), in the node's input order.
    outs: (name, elem_type, shape) for each node output, all graph outputs.
    """
    inputs, inits, names = [], [], []
    for spec in ins:
        if spec == '':
            names.append('')
        elif isinstance(spec, Feed):
            c.input(spec.name, spec.a)
            inputs.append(vi(spec.name, elem(spec.a), spec.shape))
            names.append(spec.name)
        else:
            inits.append(numpy_helper.from_array(spec.a, spec.name))
            names.append(spec.name)
    n = node(op, names, [o[0] for o in outs], name=c.name, **(attrs or {}))
    n.attribute.extend(raw_attrs)
    c.model(make(graph([n], inputs, [vi(*o) for o in outs], inits)))


# ---------------------------------------------------------------------------------------------------------
# Protobuf wire encoding by hand, for the cases no protobuf library would write.

def varint(n):
    n &= (1 << 64) - 1   # negative numbers are written as their 64-bit two's complement (10 bytes)
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire_type):
    return varint((field << 3) | wire_type)


def fv(field, n):          # varint field
    return tag(field, 0) + varint(n)


def fb(field, data):       # length-delimited field
    if isinstance(data, str):
        data = data.encode()
    return tag(field, 2) + varint(len(data)) + data


def nest(core, layers):
    """Wrap core in messages, innermost layer first: each (head, field, tail) makes head + field(inner) + tail.

    Written with prefix and suffix lists so that 100,000 levels cost linear time and no recursion.
    """
    size, pre, post = len(core), [], []
    for head, field, tail in layers:
        p = head + tag(field, 2) + varint(size)
        pre.append(p)
        post.append(tail)
        size += len(p) + len(tail)
    return b''.join(reversed(pre)) + core + b''.join(post)


def vi_bytes(name, elem_type, dims):
    """ValueInfoProto{name, type: tensor(elem_type, dims)}; name may be bytes (invalid UTF-8)."""
    shape = b''.join(fb(1, fv(1, d)) for d in dims)
    return fb(1, name) + fb(2, fb(1, fv(1, elem_type) + fb(2, shape)))


def opset_bytes(version=17, domain=''):
    return helper.make_opsetid(domain, version).SerializeToString()


def model_bytes(graph_bytes, ir=8, opset=17):
    """ir_version, opset_import, then the graph last, so that a cut anywhere after byte ~8 lands in the graph."""
    return fv(1, ir) + fb(8, opset_bytes(opset)) + fb(7, graph_bytes)


def neg_graph_bytes(doc_pad=0):
    """y = Neg(x), x float[3]: the baseline of the wire cases (fed [1, 2, 3], gives [-1, -2, -3])."""
    g = graph([node('Neg', ['x'], ['y'])], [vi('x', FLOAT, [3])], [vi('y', FLOAT, [3])], name='wire')
    if doc_pad:
        g.doc_string = 'padding ' * doc_pad
    return g.SerializeToString()


X3 = np.array([1, 2, 3], np.float32)
NEG_X3 = -X3


def wire_case(name, what, data):
    c = Case(name, 'wire', what)
    c.model(data)
    c.input('x', X3)
    return c


def wire_cases(outdir):
    g = neg_graph_bytes()
    base = model_bytes(g)
    head = fv(1, 8) + fb(8, opset_bytes())         # everything before the graph field
    rest = fb(8, opset_bytes()) + fb(7, g)          # everything after ir_version

    c = wire_case('wire_empty_file', 'a zero-byte model file (an empty ModelProto: no graph, no ir_version)', b'')
    c.error(*WIRE_ERR, 'graph', 'empty', 'ir_version', 'ir version')
    yield c

    c = wire_case('wire_single_tag', 'one byte: the tag of ir_version with no value after it', b'\x08')
    c.error(*WIRE_ERR)
    yield c

    c = wire_case('wire_truncated_half', 'the model cut in half (inside the graph message)', base[:len(base) // 2])
    c.error(*WIRE_ERR)
    yield c

    c = wire_case('wire_truncated_last_byte', 'the model without its last byte (graph length past the end)',
                  base[:-1])
    c.error(*WIRE_ERR)
    yield c

    g_long = neg_graph_bytes(doc_pad=40)            # a graph over 127 bytes has a two-byte length varint
    cut = head + tag(7, 2) + varint(len(g_long))[:1]
    c = wire_case('wire_truncated_in_length', 'the file ends inside the length varint of the graph field', cut)
    c.error(*WIRE_ERR)
    yield c

    c = wire_case('wire_varint_11_bytes', 'ir_version written as an 11-byte varint (at most 10 are allowed)',
                  tag(1, 0) + b'\xff' * 10 + b'\x01' + rest)
    c.error(*WIRE_ERR)
    yield c

    # Bits beyond 64 in the 10th byte: parsers either drop them (value 8) or refuse the varint.
    c = wire_case('wire_varint_10th_byte_overflow',
                  'ir_version as a 10-byte varint whose last byte sets bits above bit 63 (low 64 bits = 8)',
                  tag(1, 0) + b'\x88' + b'\x80' * 8 + b'\x7e' + rest)
    c.error(*WIRE_ERR, or_ok=True, outputs=[NEG_X3])
    yield c

    c = wire_case('wire_varint_noncanonical', 'ir_version 8 as a padded 5-byte varint (valid protobuf)',
                  tag(1, 0) + b'\x88\x80\x80\x80\x00' + rest)
    c.ok(NEG_X3)
    yield c

    c = wire_case('wire_graph_as_varint', 'the graph field (7) with wire type varint instead of a message',
                  head + fv(7, 5))
    c.error(*WIRE_ERR, 'graph')
    yield c

    c = wire_case('wire_ir_version_as_bytes', 'ir_version (field 1) with wire type length-delimited',
                  fb(1, b'abc') + rest)
    c.error(*WIRE_ERR, 'ir_version', 'ir version')
    yield c

    for wt in (6, 7):
        c = wire_case(f'wire_wire_type_{wt}', f'a tag with the undefined wire type {wt}',
                      tag(20, wt) + b'\x00' * 8 + base)
        c.error(*WIRE_ERR)
        yield c

    c = wire_case('wire_end_group_unmatched', 'an end-group tag with no group open', tag(20, 4) + base)
    c.error(*WIRE_ERR)
    yield c

    c = wire_case('wire_start_group_unterminated', 'a start-group tag that is never closed',
                  base + tag(20, 3) + fv(1, 5))
    c.error(*WIRE_ERR)
    yield c

    c = wire_case('wire_unknown_group_ok', 'a well-formed group in an unknown field (parsers must skip it)',
                  tag(20, 3) + fv(1, 5) + tag(20, 4) + base)
    c.ok(NEG_X3)
    yield c

    lengths = [('past_end', 'the graph length is 1000 bytes past the end of the file', len(g) + 1000),
               ('2_63', 'the graph length is 2^63', 1 << 63),
               ('2_32_plus', 'the graph length is 2^32 + its real length (right when cut to 32 bits)',
                (1 << 32) + len(g)),
               ('2_31', 'the graph length is 2^31 (negative as an int32)', 1 << 31),
               ('max_u64', 'the graph length is 2^64-1 (-1 as a signed 64-bit length)', (1 << 64) - 1)]
    for suffix, what, n in lengths:
        c = wire_case(f'wire_len_{suffix}', what, head + tag(7, 2) + varint(n) + g)
        c.error(*WIRE_ERR)
        yield c

    # A node whose length runs past the end of its graph, but not past the end of the file.
    n = node('Neg', ['x'], ['y']).SerializeToString()
    g_rest = fb(2, 'wire') + fb(11, vi_bytes('x', FLOAT, [3])) + fb(12, vi_bytes('y', FLOAT, [3]))
    g_bad = tag(1, 2) + varint(len(n) + len(g_rest) + 20) + n + g_rest
    data = fv(1, 8) + fb(7, g_bad) + fb(8, opset_bytes()) + fb(6, 'd' * 64)
    c = wire_case('wire_len_exceeds_parent', 'a node length that runs past the end of its graph message', data)
    c.error(*WIRE_ERR)
    yield c

    raw_huge = fb(5, fv(1, 4) + fv(2, FLOAT) + fb(8, 'w') + tag(9, 2) + varint(1 << 62))
    c = wire_case('wire_len_huge_raw_data', 'an initializer whose raw_data length is 2^62 (inside the graph)',
                  head + tag(7, 2) + varint(len(g) + len(raw_huge)) + g + raw_huge)
    c.error(*WIRE_ERR)
    yield c

    rng = np.random.default_rng(1234)
    c = wire_case('wire_garbage_random', '4096 random bytes', rng.integers(0, 256, 4096, np.uint8).tobytes())
    c.error(*WIRE_ERR)
    yield c

    c = wire_case('wire_garbage_text', 'a text file, not a protobuf', b'this is not an onnx model\n' * 20)
    c.error(*WIRE_ERR)
    yield c

    # 100,000 nested sequence types: sequence(sequence(...(tensor(float))...)) for an input.
    core = fb(1, fv(1, FLOAT) + fb(2, fb(1, fv(1, 3))))
    deep_type = nest(core, [(b'', 1, b''), (b'', 4, b'')] * 100000)
    deep_vi = fb(1, 'deep_seq_in') + fb(2, deep_type)
    g_deep = (fb(1, n) + fb(2, 'wire') + fb(11, vi_bytes('x', FLOAT, [3])) + fb(11, deep_vi)
              + fb(12, vi_bytes('y', FLOAT, [3])))
    c = wire_case('wire_deep_type_nesting', 'an input whose type nests 100,000 sequence types',
                  model_bytes(g_deep))
    c.error(*WIRE_ERR, *DEPTH, 'deep_seq_in', or_ok=True, outputs=[NEG_X3])
    yield c

    # 50,000 graphs nested through a graph attribute Relu does not have.
    relu = fb(1, 'x') + fb(2, 'r') + fb(4, 'Relu')
    inner = fb(1, relu) + fb(2, 'g') + fb(12, fb(1, 'r'))
    layers = [(fb(1, 'deep_attr') + fv(20, 5), 6, b''),          # AttributeProto{name, type GRAPH, g}
              (relu, 5, b''),                                     # NodeProto.attribute
              (b'', 1, fb(2, 'g') + fb(12, fb(1, 'r')))] * 50000  # GraphProto.node
    deep_g = nest(inner, layers)
    top_node = fb(1, 'x') + fb(2, 'y') + fb(4, 'Relu') + fb(5, fb(1, 'deep_attr') + fv(20, 5) + fb(6, deep_g))
    g_attr = fb(1, top_node) + fb(2, 'wire') + fb(11, vi_bytes('x', FLOAT, [3])) + fb(12, vi_bytes('y', FLOAT, [3]))
    c = wire_case('wire_deep_attr_nesting', 'graph attributes nested 50,000 deep on Relu (which has no graph '
                  'attribute)', model_bytes(g_attr))
    c.error(*WIRE_ERR, *DEPTH, 'deep_attr')
    yield c

    c = wire_case('wire_zero_length_node', 'a zero-length node in the graph (no op_type)',
                  model_bytes(fb(1, b'') + g))
    c.error('op_type', 'op type', 'empty', "''", '""')
    yield c

    c = wire_case('wire_zero_length_initializer', 'a zero-length initializer (no name, data_type UNDEFINED)',
                  model_bytes(g + fb(5, b'')))
    c.error('initializer', 'tensor', 'data type', 'data_type', 'undefined')
    yield c

    c = wire_case('wire_zero_length_graph_then_real', 'an empty graph field followed by the real one '
                  '(protobuf merges both: the model is valid)', head + fb(7, b'') + fb(7, g))
    c.ok(NEG_X3)
    yield c

    g1 = fb(1, n) + fb(2, 'wire')
    g2 = fb(11, vi_bytes('x', FLOAT, [3])) + fb(12, vi_bytes('y', FLOAT, [3]))
    c = wire_case('wire_duplicate_graph_merged', 'the graph split over two graph fields (nodes, then inputs and '
                  'outputs): protobuf merges them', head + fb(7, g1) + fb(7, g2))
    c.ok(NEG_X3)
    yield c

    c = wire_case('wire_duplicate_ir_version', 'ir_version 999 then 8: the last value wins (8)',
                  fv(1, 999) + fv(1, 8) + rest)
    c.ok(NEG_X3)
    yield c

    n2 = fb(1, 'x') + fb(2, 'y') + fb(4, 'Relu') + fb(4, 'Neg')
    c = wire_case('wire_duplicate_op_type', "op_type 'Relu' then 'Neg': the last value wins (Neg)",
                  model_bytes(fb(1, n2) + g2))
    c.ok(NEG_X3)
    yield c

    unk = fv(999, 7) + tag(998, 1) + b'\x01' * 8 + fb(997, b'\x08\x01junk') + tag(996, 5) + b'\x02' * 4
    n3 = unk + fb(1, 'x') + unk + fb(2, 'y') + fb(4, 'Neg') + unk
    g3 = unk + fb(1, n3) + fb(11, unk + vi_bytes('x', FLOAT, [3])) + fb(12, vi_bytes('y', FLOAT, [3]) + unk) + unk
    c = wire_case('wire_unknown_fields_everywhere', 'unknown fields of every wire type in model, graph, node and '
                  'value infos (must be skipped)', unk + fv(1, 8) + unk + fb(8, opset_bytes()) + fb(7, g3) + unk)
    c.ok(NEG_X3)
    yield c

    c = wire_case('wire_field_number_zero', 'a tag with field number 0', b'\x00' + base)
    c.error(*WIRE_ERR)
    yield c

    c = wire_case('wire_field_number_too_big', 'a tag with field number 2^29 (the largest is 2^29-1)',
                  tag(1 << 29, 0) + varint(1) + base)
    c.error(*WIRE_ERR)
    yield c

    # y = Add(x, w) with w = [10, 20, 30] written by hand: both packed and unpacked repeated fields are valid.
    def add_w(w_bytes, w_name='w'):
        nd = fb(1, 'x') + fb(1, w_name) + fb(2, 'y') + fb(4, 'Add')
        return model_bytes(fb(1, nd) + fb(2, 'wire') + fb(5, w_bytes) + g2)
    w_vals = [10.0, 20.0, 30.0]
    unpacked = fv(1, 3) + fv(2, FLOAT) + b''.join(tag(4, 5) + struct.pack('<f', v) for v in w_vals) + fb(8, 'w')
    packed = fb(1, varint(3)) + fv(2, FLOAT) + fb(4, struct.pack('<3f', *w_vals)) + fb(8, 'w')
    c = wire_case('wire_unpacked_repeated_ok', 'dims and float_data as unpacked repeated fields (valid)',
                  add_w(unpacked))
    c.ok(X3 + np.array(w_vals, np.float32))
    yield c
    c = wire_case('wire_packed_repeated_ok', 'dims and float_data as packed repeated fields (valid)',
                  add_w(packed))
    c.ok(X3 + np.array(w_vals, np.float32))
    yield c

    bad_pack = fb(1, varint(3)) + fv(2, FLOAT) + fb(4, b'\x00' * 5) + fb(8, 'w_bad_pack')
    c = wire_case('wire_packed_float_bad_length', 'packed float_data of 5 bytes (not a multiple of 4)',
                  add_w(bad_pack, 'w_bad_pack'))
    c.error(*WIRE_ERR, 'w_bad_pack')
    yield c

    neg_type = fv(1, 3) + fv(2, -1) + fb(4, struct.pack('<3f', *w_vals)) + fb(8, 'w_neg_type')
    c = wire_case('wire_negative_data_type', 'an initializer whose data_type is -1 (a 10-byte varint)',
                  add_w(neg_type, 'w_neg_type'))
    c.error(*WIRE_ERR, 'w_neg_type')
    yield c

    # Names must be C90 identifiers (IR.md), which invalid UTF-8 is not; runtimes commonly accept any bytes.
    bad = b'y\xff\xfe'
    n4 = fb(1, 'x') + fb(2, bad) + fb(4, 'Neg')
    c = wire_case('wire_invalid_utf8_name', 'a node and graph output named with invalid UTF-8 bytes',
                  model_bytes(fb(1, n4) + fb(11, vi_bytes('x', FLOAT, [3])) + fb(12, vi_bytes(bad, FLOAT, [3]))))
    c.error('utf', 'name', or_ok=True, outputs=[NEG_X3])
    yield c

    c = wire_case('wire_model_is_directory', 'model.onnx is a directory, not a file', b'')
    c.model_is_dir = True
    c.error('model.onnx', 'directory')
    yield c


# ---------------------------------------------------------------------------------------------------------
# External data (ExternalData.md): "location" is relative to the model's folder, ".." is disallowed,
# offset and length are integers stored as strings, and the data must match the tensor's dims.

W4 = np.array([1, 2, 3, 4], np.float32)
W4_BYTES = W4.tobytes()
CONTROL = 'ext_ok_control'   # the valid case whose w.bin the escaping cases point at


def ext_tensor(name, entries, dims=(4,), data_type=FLOAT):
    t = TensorProto(name=name, data_type=data_type, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def ext_model(c, init):
    """y = Identity(init): running it reads the external data."""
    c.model(make(graph([node('Identity', [init.name], ['y'], name=c.name)], [], [vi('y', FLOAT, list(init.dims))],
                       [init])))


def ext_case(name, what, entries, init_name=None, files=None, dims=(4,)):
    c = Case(name, 'external_data', what)
    init_name = init_name or name.replace('ext_', 'w_')
    ext_model(c, ext_tensor(init_name, entries, dims))
    if files:
        c.files.update(files)
    return c, init_name


def external_data_cases(outdir):
    c, _ = ext_case(CONTROL, 'valid external data (control: the file beside the model)', [('location', 'w.bin')],
                    files={'w.bin': W4_BYTES})
    c.ok(W4)
    yield c

    c, _ = ext_case('ext_ok_unaligned_offset', 'valid external data at offset 3 (offsets SHOULD, not MUST, be '
                    'page-aligned): a misaligned float read', [('location', 'w.bin'), ('offset', '3'),
                                                               ('length', '16')], files={'w.bin': b'abc' + W4_BYTES})
    c.ok(W4)
    yield c

    c = Case('ext_ok_shared_file', 'external_data', 'two initializers in one file at offsets 0 and 4096 (valid)')
    a = ext_tensor('w_first', [('location', 'w.bin'), ('offset', '0'), ('length', '16')])
    b = ext_tensor('w_second', [('location', 'w.bin'), ('offset', '4096'), ('length', '16')])
    c.files['w.bin'] = W4_BYTES + b'\0' * (4096 - 16) + (W4 * 10).tobytes()
    c.model(make(graph([node('Identity', ['w_first'], ['y']), node('Identity', ['w_second'], ['z'])], [],
                       [vi('y', FLOAT, [4]), vi('z', FLOAT, [4])], [a, b])))
    c.ok(W4, W4 * 10)
    yield c

    # ".." is disallowed; stripping it (the other reading of the spec) leaves a path that does not exist.
    c, w = ext_case('ext_dotdot', "location '../ext_ok_control/w.bin': leaves the model's folder for a real file",
                    [('location', f'../{CONTROL}/w.bin')])
    c.error(w, '..')
    yield c

    c, w = ext_case('ext_dotdot_deep', "location 'sub/../../ext_ok_control/w.bin' (escapes through a subfolder)",
                    [('location', f'sub/../../{CONTROL}/w.bin')])
    c.dirs.append('sub')
    c.error(w, '..')
    yield c

    c, w = ext_case('ext_dotdot_inside', "location 'sub/../w.bin': stays inside but uses the disallowed '..'",
                    [('location', 'sub/../w.bin')], files={'w.bin': W4_BYTES})
    c.dirs.append('sub')
    c.error(w, '..')
    yield c

    c, w = ext_case('ext_abs_etc_passwd', "absolute location '/etc/passwd'", [('location', '/etc/passwd')])
    c.error(w, '/etc/passwd')
    yield c

    here = os.path.abspath(os.path.join(outdir, 'ext_abs_inside', 'w.bin'))
    c, w = ext_case('ext_abs_inside', 'absolute location of the data file beside the model (must be relative)',
                    [('location', here)], files={'w.bin': W4_BYTES})
    c.error(w, 'absolute', 'relative')
    yield c

    # Symlinks: not named by the spec; a link that leaves the model's folder is refused for the same reason
    # as '..' (onnx's own loader refuses them since 1.16).
    c, w = ext_case('ext_symlink_out', 'w.bin is a symlink to ../ext_ok_control/w.bin (leaves the folder)',
                    [('location', 'w.bin')])
    c.links['w.bin'] = f'../{CONTROL}/w.bin'
    c.error(w, 'w.bin', 'symlink', 'link')
    yield c

    c, w = ext_case('ext_symlink_abs', 'w.bin is a symlink to /etc/passwd', [('location', 'w.bin')])
    c.links['w.bin'] = '/etc/passwd'
    c.error(w, 'w.bin', 'symlink', 'link')
    yield c

    c, w = ext_case('ext_symlink_dir', "location 'linkdir/w.bin' where linkdir links to ../ext_ok_control",
                    [('location', 'linkdir/w.bin')])
    c.links['linkdir'] = f'../{CONTROL}'
    c.error(w, 'linkdir', 'symlink', 'link')
    yield c

    c, w = ext_case('ext_missing_file', "location 'nonexistent.bin' does not exist", [('location', 'nonexistent.bin')])
    c.error(w, 'nonexistent.bin')
    yield c

    bounds = [('ext_offset_past_end', 'offset 4096 in a 16-byte file', [('offset', '4096')]),
              ('ext_offset_length_past_end', 'offset 8 + length 16 in a 16-byte file',
               [('offset', '8'), ('length', '16')]),
              ('ext_length_short', 'length 8 where the dims [4] need 16 bytes', [('length', '8')]),
              ('ext_length_long', 'length 20 where the dims [4] need 16 bytes (file has 32)', [('length', '20')]),
              ('ext_negative_offset', "offset '-16'", [('offset', '-16'), ('length', '16')]),
              ('ext_negative_length', "length '-1'", [('length', '-1')]),
              ('ext_huge_length', "length '18446744073709551615' (2^64-1)", [('length', '18446744073709551615')]),
              ('ext_offset_wraps', "offset 2^64-16 + length 16 wraps to 0 in 64 bits",
               [('offset', str(2**64 - 16)), ('length', '16')]),
              ('ext_offset_not_number', "offset '12abc' (not an integer)", [('offset', '12abc')]),
              ('ext_offset_too_many_digits', "offset with 26 digits (overflows int64)",
               [('offset', '9' * 26), ('length', '16')])]
    for name, what, extra in bounds:
        size = 32 if name == 'ext_length_long' else 16
        c, w = ext_case(name, what, [('location', 'w.bin')] + extra,
                        files={'w.bin': (W4_BYTES * 2)[:size]})
        c.error(w, 'w.bin')
        yield c

    c, w = ext_case('ext_file_too_short', 'no offset or length; the file has 8 bytes, the dims [4] need 16',
                    [('location', 'w.bin')], files={'w.bin': W4_BYTES[:8]})
    c.error(w, 'w.bin')
    yield c

    c, w = ext_case('ext_no_location', "external data with offset and length but no 'location' (required)",
                    [('offset', '0'), ('length', '16')], files={'w.bin': W4_BYTES})
    c.error(w, 'location')
    yield c

    c, w = ext_case('ext_empty_location', "location '' (the model's folder itself)", [('location', '')])
    c.error(w, 'location')
    yield c

    c, w = ext_case('ext_location_is_dir', "location 'subdir', a directory", [('location', 'subdir')])
    c.dirs.append('subdir')
    c.error(w, 'subdir')
    yield c

    c, w = ext_case('ext_location_nul', "location 'w.bin\\0/../../etc/passwd' (a NUL byte and '..')",
                    [('location', 'w.bin\0/../../etc/passwd')], files={'w.bin': W4_BYTES})
    c.error(w, 'location')
    yield c

    # Robustness rather than the letter of the spec: opening a FIFO for reading blocks without a writer.
    c, w = ext_case('ext_location_fifo', "location 'pipe.bin' is a named pipe (a naive open() blocks forever)",
                    [('location', 'pipe.bin'), ('length', '16')])
    c.fifos.append('pipe.bin')
    c.error(w, 'pipe.bin')
    yield c

    # "basepath" is what a loader may add after loading; one stored in the file must not redirect the read.
    c, w = ext_case('ext_basepath_key', "an external_data 'basepath' of '/etc' with location 'passwd'",
                    [('basepath', '/etc'), ('location', 'passwd'), ('length', '16')])
    c.error(w, 'passwd')
    yield c

    c = Case('ext_string_tensor', 'external_data', 'a STRING tensor stored as external data (raw bytes cannot '
             'hold strings)')
    t = ext_tensor('w_strings', [('location', 'w.bin')], dims=(2,), data_type=STRING)
    c.files['w.bin'] = b'abcdefgh'
    c.model(make(graph([node('Identity', ['w_strings'], ['y'])], [], [vi('y', STRING, [2])], [t])))
    c.error('w_strings')
    yield c

    c, w = ext_case('ext_and_raw_data', 'data_location EXTERNAL with raw_data also set (MUST NOT use the value '
                    'fields)', [('location', 'w.bin')], files={'w.bin': W4_BYTES})
    m = onnx.load_from_string(c.model_bytes)
    m.graph.initializer[0].raw_data = (W4 * 2).tobytes()
    c.model(m)
    c.error(w)
    yield c

    c, w = ext_case('ext_entries_without_location_flag', 'external_data entries but data_location left DEFAULT '
                    'and no data in the message', [('location', 'w.bin')], files={'w.bin': W4_BYTES})
    m = onnx.load_from_string(c.model_bytes)
    m.graph.initializer[0].data_location = TensorProto.DEFAULT
    c.model(m)
    c.error(w)
    yield c

    c = Case('ext_subgraph_dotdot', 'external_data', "an If branch's initializer at '../ext_ok_control/w.bin'")
    t = ext_tensor('w_branch', [('location', f'../{CONTROL}/w.bin')])
    then_g = graph([node('Identity', ['w_branch'], ['t'])], [], [vi('t', FLOAT, [4])], [t], name='then')
    else_g = graph([node('Identity', ['x'], ['e'])], [], [vi('e', FLOAT, [4])], name='else')
    c.model(make(graph([node('If', ['c'], ['y'], then_branch=then_g, else_branch=else_g)],
                       [vi('x', FLOAT, [4]), vi('c', BOOL, [])], [vi('y', FLOAT, [4])])))
    c.input('x', W4)
    c.input('c', np.array(True))
    c.error('w_branch', '..')
    yield c

    c = Case('ext_constant_dotdot', 'external_data', "a Constant node's value tensor at '../ext_ok_control/w.bin'")
    t = ext_tensor('w_const', [('location', f'../{CONTROL}/w.bin')])
    c.model(make(graph([node('Constant', [], ['y'], name='const_dotdot', value=t)], [], [vi('y', FLOAT, [4])])))
    c.error('w_const', 'const_dotdot', '..')
    yield c


# ---------------------------------------------------------------------------------------------------------
# Graph structure (IR.md "Graphs", "Nodes", "Names Within a Graph").

def ir_case(name, what, nodes, inputs, outputs, inits=(), feeds=(), **mk):
    c = Case(name, 'ir_structure', what)
    for n, a in feeds:
        c.input(n, a)
    c.model(make(graph(nodes, inputs, outputs, inits), **mk))
    return c


def ir_structure_cases(outdir):
    xin = [vi('x', FLOAT, [3])]
    xf = [('x', X3)]
    yout = [vi('y', FLOAT, [3])]

    c = ir_case('ir_cycle', 'two nodes feed each other (a cycle)',
                [node('Relu', ['cyc_val_b'], ['cyc_val_a'], name='cyc_node_a'),
                 node('Relu', ['cyc_val_a'], ['cyc_val_b'], name='cyc_node_b')],
                xin, [vi('cyc_val_b', FLOAT, [3])], feeds=xf)
    c.error('cycle', 'cyc_')
    yield c

    c = ir_case('ir_self_loop', 'a node whose output is its own input',
                [node('Add', ['x', 'self_loop_val'], ['self_loop_val'], name='self_loop_node')],
                xin, [vi('self_loop_val', FLOAT, [3])], feeds=xf)
    c.error('cycle', 'self_loop')
    yield c

    then_g = graph([node('Identity', ['late_val'], ['t'])], [], [vi('t', FLOAT, [3])], name='then')
    else_g = graph([node('Identity', ['x'], ['e'])], [], [vi('e', FLOAT, [3])], name='else')
    c = ir_case('ir_cycle_through_subgraph', "an If branch reads 'late_val', computed from the If's own output",
                [node('If', ['c'], ['if_out'], name='if_cyc', then_branch=then_g, else_branch=else_g),
                 node('Neg', ['if_out'], ['late_val'], name='late_node')],
                xin + [vi('c', BOOL, [])], [vi('late_val', FLOAT, [3])],
                feeds=xf + [('c', np.array(True))])
    c.error('cycle', 'late_val', 'if_cyc', 'late_node')
    yield c

    # The spec says MUST be topologically sorted; runtimes commonly sort such graphs (onnxruntime does).
    x2 = np.array([-1, 2, 3], np.float32)
    c = ir_case('ir_unsorted_acyclic', 'nodes listed in reverse order (acyclic, but not topologically sorted)',
                [node('Neg', ['unsorted_mid'], ['y']), node('Relu', ['x'], ['unsorted_mid'])],
                xin, yout, feeds=[('x', x2)])
    c.error('order', 'topolog', 'sort', 'unsorted_mid', or_ok=True, outputs=[-np.maximum(x2, 0)])
    yield c

    c = ir_case('ir_dup_output_two_nodes', "two nodes both produce 'dup_val' (breaks SSA)",
                [node('Relu', ['x'], ['dup_val']), node('Neg', ['x'], ['dup_val'])],
                xin, [vi('dup_val', FLOAT, [3])], feeds=xf)
    c.error('dup_val')
    yield c

    c = ir_case('ir_dup_output_same_node', "one Split node lists output 'twice_val' twice",
                [node('Split', ['x6', 'split_sizes'], ['twice_val', 'twice_val'], axis=0)],
                [vi('x6', FLOAT, [6])], [vi('twice_val', FLOAT, [3])],
                [tensor('split_sizes', [3, 3], np.int64)], feeds=[('x6', np.arange(6, dtype=np.float32))])
    c.error('twice_val')
    yield c

    c = ir_case('ir_undefined_input', "a node reads 'ghost_val', defined nowhere",
                [node('Relu', ['ghost_val'], ['y'])], xin, yout, feeds=xf)
    c.error('ghost_val')
    yield c

    c = ir_case('ir_output_not_produced', "graph output 'orphan_val' is produced by nothing",
                [node('Relu', ['x'], ['y'])], xin, yout + [vi('orphan_val', FLOAT, [3])], feeds=xf)
    c.error('orphan_val')
    yield c

    c = ir_case('ir_output_is_input_ok', 'a graph output that is directly a graph input (valid)',
                [], xin, [vi('x', FLOAT, [3])], feeds=xf)
    c.ok(X3)
    yield c

    c = ir_case('ir_output_is_initializer_ok', 'a graph output that is directly an initializer (valid)',
                [], [], [vi('const_out', FLOAT, [4])], [tensor('const_out', W4)])
    c.ok(W4)
    yield c

    c = ir_case('ir_empty_op_type', 'a node with an empty op_type',
                [node('', ['x'], ['y'], name='no_op_node')], xin, yout, feeds=xf)
    c.error('no_op_node', 'op_type', 'op type')
    yield c

    c = ir_case('ir_unknown_op', "an op 'NoSuchOpXyz' that no imported opset defines",
                [node('NoSuchOpXyz', ['x'], ['y'])], xin, yout, feeds=xf)
    c.error('nosuchopxyz')
    yield c

    c = ir_case('ir_unknown_domain', "a node in domain 'evil.domain' (imported, but unknown)",
                [node('Relu', ['x'], ['y'], domain='evil.domain')], xin, yout, feeds=xf,
                domains=[('evil.domain', 1)])
    c.error('evil.domain')
    yield c

    c = ir_case('ir_domain_not_imported', "a node in domain 'com.not.imported', which the model does not import",
                [node('Relu', ['x'], ['y'], domain='com.not.imported')], xin, yout, feeds=xf)
    c.error('com.not.imported')
    yield c

    c = ir_case('ir_no_opset_import', 'a model with no opset_import at all (each model MUST name its opsets)',
                [node('Relu', ['x'], ['y'])], xin, yout, feeds=xf, opsets=[])
    c.error('opset')
    yield c

    c = ir_case('ir_opset_version_zero', 'the default domain imported at version 0',
                [node('Relu', ['x'], ['y'])], xin, yout, feeds=xf, opsets=[helper.make_opsetid('', 0)])
    c.error('opset', 'version')
    yield c

    c = ir_case('ir_dup_initializer', "two initializers named 'dup_init'",
                [node('Add', ['x', 'dup_init'], ['y'])], xin, yout,
                [tensor('dup_init', X3), tensor('dup_init', X3 * 2)], feeds=xf)
    c.error('dup_init')
    yield c

    c = ir_case('ir_initializer_and_node_output', "'clash_val' is both an initializer and a node output",
                [node('Relu', ['x'], ['clash_val']), node('Neg', ['clash_val'], ['y'])], xin, yout,
                [tensor('clash_val', X3)], feeds=xf)
    c.error('clash_val')
    yield c

    c = ir_case('ir_node_output_shadows_input', "a node output named like the graph input 'shadowed_in'",
                [node('Relu', ['shadowed_in'], ['shadowed_in'])], [vi('shadowed_in', FLOAT, [3])],
                [vi('shadowed_in', FLOAT, [3])], feeds=[('shadowed_in', X3)])
    c.error('shadowed_in')
    yield c

    then_g = graph([node('Identity', ['x'], ['outer_val'])], [], [vi('outer_val', FLOAT, [3])], name='then')
    else_g = graph([node('Identity', ['x'], ['e'])], [], [vi('e', FLOAT, [3])], name='else')
    c = ir_case('ir_subgraph_shadows_outer', "an If branch's node output reuses the outer name 'outer_val'",
                [node('Relu', ['x'], ['outer_val']),
                 node('If', ['c'], ['r'], then_branch=then_g, else_branch=else_g),
                 node('Add', ['r', 'outer_val'], ['y'])],
                xin + [vi('c', BOOL, [])], yout, feeds=xf + [('c', np.array(True))])
    c.error('outer_val')
    yield c

    then_g = graph([node('Identity', ['x'], ['inner_only'])], [], [vi('inner_only', FLOAT, [3])], name='then')
    c = ir_case('ir_outer_reads_inner_value', "the outer graph reads 'inner_only', a value inside an If branch",
                [node('If', ['c'], ['r'], then_branch=then_g, else_branch=else_g),
                 node('Add', ['r', 'inner_only'], ['y'])],
                xin + [vi('c', BOOL, [])], yout, feeds=xf + [('c', np.array(True))])
    c.error('inner_only')
    yield c

    c = ir_case('ir_dup_graph_input', "graph input 'twin_in' listed twice",
                [node('Relu', ['twin_in'], ['y'])], [vi('twin_in', FLOAT, [3]), vi('twin_in', FLOAT, [3])], yout,
                feeds=[('twin_in', X3)])
    c.error('twin_in')
    yield c

    c = ir_case('ir_node_no_outputs', 'a Relu node with no outputs (a node has one or more)',
                [node('Relu', ['x'], [], name='mute_relu'), node('Neg', ['x'], ['y'])], xin, yout, feeds=xf)
    c.error('mute_relu')
    yield c

    c = ir_case('ir_too_many_inputs', 'Relu given two inputs',
                [node('Relu', ['x', 'x'], ['y'], name='greedy_relu')], xin, yout, feeds=xf)
    c.error('greedy_relu')
    yield c

    c = ir_case('ir_too_few_inputs', 'Add given one input',
                [node('Add', ['x'], ['y'], name='lonely_add')], xin, yout, feeds=xf)
    c.error('lonely_add')
    yield c

    c = ir_case('ir_required_input_empty', "Add's required second input given as '' (omitted)",
                [node('Add', ['x', ''], ['y'], name='hollow_add')], xin, yout, feeds=xf)
    c.error('hollow_add')
    yield c

    c = ir_case('ir_no_ir_version', 'ir_version 0 (the field is required)',
                [node('Relu', ['x'], ['y'])], xin, yout, feeds=xf, ir=0)
    c.error('ir_version', 'ir version')
    yield c

    untyped = onnx.ValueInfoProto(name='untyped_in')
    c = ir_case('ir_input_no_type', "main graph input 'untyped_in' without a type (MUST have name, type, shape)",
                [node('Relu', ['untyped_in'], ['y'])], [untyped], yout, feeds=[('untyped_in', X3)])
    c.error('untyped_in')
    yield c

    c = ir_case('ir_input_undefined_elem_type', "graph input 'undef_type_in' of element type UNDEFINED",
                [node('Relu', ['undef_type_in'], ['y'])], [vi('undef_type_in', TensorProto.UNDEFINED, [3])], yout,
                feeds=[('undef_type_in', X3)])
    c.error('undef_type_in')
    yield c

    c = ir_case('ir_output_type_mismatch', "graph output 'mismatch_out' declared int64, computed as float",
                [node('Neg', ['x'], ['mismatch_out'])], xin, [vi('mismatch_out', INT64, [3])], feeds=xf)
    c.error('mismatch_out')
    yield c

    c = Case('ir_value_info_conflict', 'ir_structure', "value_info declares 'vi_conflict' int64; Relu makes float")
    c.input('x', X3)
    c.model(make(graph([node('Relu', ['x'], ['vi_conflict']), node('Neg', ['vi_conflict'], ['y'])], xin, yout,
                       value_info=[vi('vi_conflict', INT64, [3])])))
    c.error('vi_conflict')
    yield c

    c = ir_case('ir_node_output_is_initializer_name_in_branch', "an If branch's initializer 'branch_init' also "
                'produced by a node in that branch', [], [], [])
    then_g = graph([node('Identity', ['x'], ['branch_init'])], [], [vi('branch_init', FLOAT, [3])],
                   [tensor('branch_init', X3)], name='then')
    c.model(make(graph([node('If', ['c'], ['y'], then_branch=then_g, else_branch=else_g)],
                       xin + [vi('c', BOOL, [])], yout)))
    c.input('x', X3)
    c.input('c', np.array(True))
    c.error('branch_init')
    yield c


# ---------------------------------------------------------------------------------------------------------
# Attributes: types, presence and values outside what each operator's signature allows (Operators.md).

X23 = np.arange(6, dtype=np.float32).reshape(2, 3)
IMG = np.ones((1, 1, 4, 4), np.float32)
W11 = np.ones((1, 1, 1, 1), np.float32)
ANY4 = ['n', 'c', 'h', 'w']


def attr_case(name, what):
    return Case(name, 'attributes', what)


def attributes_cases(outdir):
    A = helper.make_attribute

    c = attr_case('attr_perm_float', 'Transpose perm given as a FLOAT')
    op1(c, 'Transpose', [Feed('x', X23)], [('y', FLOAT, ['a', 'b'])], raw_attrs=[A('perm', 1.0)])
    c.error('perm', c.name)
    yield c

    c = attr_case('attr_axis_string', "Softmax axis given as the STRING '1'")
    op1(c, 'Softmax', [Feed('x', X23)], [('y', FLOAT, [2, 3])], raw_attrs=[A('axis', b'1')])
    c.error('axis', c.name)
    yield c

    c = attr_case('attr_cast_missing_to', "Cast without its required attribute 'to'")
    op1(c, 'Cast', [Feed('x', X23)], [('y', INT32, [2, 3])])
    c.error(c.name)
    yield c

    c = attr_case('attr_missing_type_field', "Softmax attribute 'axis' with i=1 but no type (type is required)")
    op1(c, 'Softmax', [Feed('x', X23)], [('y', FLOAT, [2, 3])], raw_attrs=[onnx.AttributeProto(name='axis', i=1)])
    c.error('axis', c.name)
    yield c

    c = attr_case('attr_two_values', "attribute 'axis' of type INT with both i and f set (only one is allowed)")
    op1(c, 'Softmax', [Feed('x', X23)], [('y', FLOAT, [2, 3])],
        raw_attrs=[onnx.AttributeProto(name='axis', type=onnx.AttributeProto.INT, i=1, f=2.0)])
    c.error('axis', c.name)
    yield c

    c = attr_case('attr_duplicate_name', "Softmax with two attributes named 'axis'")
    op1(c, 'Softmax', [Feed('x', X23)], [('y', FLOAT, [2, 3])], raw_attrs=[A('axis', 0), A('axis', 1)])
    c.error('axis', c.name)
    yield c

    c = attr_case('attr_unknown_name', "Relu with an attribute 'bogus_attr' its signature does not have")
    op1(c, 'Relu', [Feed('x', X23)], [('y', FLOAT, [2, 3])], raw_attrs=[A('bogus_attr', 1)])
    c.error('bogus_attr', c.name)
    yield c

    c = attr_case('attr_empty_name', 'Relu with an attribute whose name is empty')
    op1(c, 'Relu', [Feed('x', X23)], [('y', FLOAT, [2, 3])], raw_attrs=[A('', 1)])
    c.error(c.name)
    yield c

    axes = [('attr_gather_axis_5', 'Gather', 5), ('attr_gather_axis_minus_100', 'Gather', -100),
            ('attr_gather_axis_int64_min', 'Gather', I64_MIN), ('attr_softmax_axis_int64_max', 'Softmax', I64_MAX),
            ('attr_argmax_axis_int64_min', 'ArgMax', I64_MIN), ('attr_concat_axis_2_40', 'Concat', 2**40),
            ('attr_flatten_axis_3', 'Flatten', 3)]
    for name, op, axis in axes:
        c = attr_case(name, f'{op} axis={axis} on a rank-2 input')
        ins = [Feed('x', X23)] + ([Init('idx', np.array([0], np.int64))] if op == 'Gather' else [])
        out_type = INT64 if op == 'ArgMax' else FLOAT
        op1(c, op, ins, [('y', out_type, ['a', 'b'])], attrs={'axis': axis})
        c.error(c.name, 'axis')
        yield c

    c = attr_case('attr_flatten_axis_rank_ok', 'Flatten axis=2 on a rank-2 input (the range is [-r, r]: valid)')
    op1(c, 'Flatten', [Feed('x', X23)], [('y', FLOAT, [6, 1])], attrs={'axis': 2})
    c.ok(X23.reshape(6, 1))
    yield c

    c = attr_case('attr_maxpool_kernel_2_40', 'MaxPool kernel_shape [2^40, 2^40] on a 4x4 image')
    op1(c, 'MaxPool', [Feed('x', IMG)], [('y', FLOAT, ANY4)], attrs={'kernel_shape': [2**40, 2**40]})
    c.error(c.name, 'kernel')
    yield c

    c = attr_case('attr_maxpool_kernel_int64_max', 'MaxPool kernel_shape [INT64_MAX, 1] with dilations [2, 1] '
                  '(the dilated extent overflows int64)')
    op1(c, 'MaxPool', [Feed('x', IMG)], [('y', FLOAT, ANY4)],
        attrs={'kernel_shape': [I64_MAX, 1], 'dilations': [2, 1]})
    c.error(c.name, 'kernel')
    yield c

    c = attr_case('attr_conv_kernel_mismatch', 'Conv kernel_shape [3, 3] but W is 1x1')
    op1(c, 'Conv', [Feed('x', IMG), Init('w', W11)], [('y', FLOAT, ANY4)], attrs={'kernel_shape': [3, 3]})
    c.error(c.name, 'kernel')
    yield c

    c = attr_case('attr_conv_pads_negative', 'Conv pads [-5, -5, -5, -5] on a 4x4 image (output size -6)')
    op1(c, 'Conv', [Feed('x', IMG), Init('w', W11)], [('y', FLOAT, ANY4)], attrs={'pads': [-5, -5, -5, -5]})
    c.error(c.name, 'pad')
    yield c

    c = attr_case('attr_pad_negative_too_big', 'Pad with pads [-3, -3] on a length-4 input (output size -2)')
    op1(c, 'Pad', [Feed('x', W4), Init('pads', np.array([-3, -3], np.int64))], [('y', FLOAT, ['n'])])
    c.error(c.name, 'pad')
    yield c

    c = attr_case('attr_pad_negative_crop_ok', 'Pad with pads [-1, -1]: negative pads crop (valid)')
    op1(c, 'Pad', [Feed('x', W4), Init('pads', np.array([-1, -1], np.int64))], [('y', FLOAT, [2])])
    c.ok(W4[1:3])
    yield c

    convs = [('attr_conv_strides_zero', 'Conv strides [0, 0]', {'strides': [0, 0]}),
             ('attr_conv_dilations_zero', 'Conv dilations [0, 0]', {'dilations': [0, 0]}),
             ('attr_conv_dilations_negative', 'Conv dilations [-1, -1]', {'dilations': [-1, -1]}),
             ('attr_conv_group_zero', 'Conv group 0', {'group': 0}),
             ('attr_conv_group_2_62', 'Conv group 2^62', {'group': 2**62})]
    for name, what, attrs in convs:
        c = attr_case(name, what)
        op1(c, 'Conv', [Feed('x', IMG), Init('w', W11)], [('y', FLOAT, ANY4)], attrs=attrs)
        c.error(c.name, list(attrs)[0])
        yield c

    c = attr_case('attr_conv_group_not_dividing', 'Conv group 2 with 3 input channels')
    op1(c, 'Conv', [Feed('x', np.ones((1, 3, 4, 4), np.float32)), Init('w', np.ones((2, 1, 1, 1), np.float32))],
        [('y', FLOAT, ANY4)], attrs={'group': 2})
    c.error(c.name, 'group')
    yield c

    c = attr_case('attr_maxpool_strides_zero', 'MaxPool strides [0, 0]')
    op1(c, 'MaxPool', [Feed('x', IMG)], [('y', FLOAT, ANY4)], attrs={'kernel_shape': [2, 2], 'strides': [0, 0]})
    c.error(c.name, 'stride')
    yield c

    perms = [('attr_perm_duplicate', [0, 0]), ('attr_perm_out_of_range', [0, 5]), ('attr_perm_wrong_length', [0]),
             ('attr_perm_negative', [-1, 0])]
    for name, perm in perms:
        c = attr_case(name, f'Transpose perm {perm} on a rank-2 input (not a permutation of 0..1)')
        op1(c, 'Transpose', [Feed('x', X23)], [('y', FLOAT, ['a', 'b'])], attrs={'perm': perm})
        c.error(c.name, 'perm')
        yield c

    for name, to in [('attr_cast_to_999', 999), ('attr_cast_to_undefined', 0), ('attr_cast_to_negative', -1)]:
        c = attr_case(name, f'Cast to={to} (not a tensor data type)')
        op1(c, 'Cast', [Feed('x', X23)], [('y', FLOAT, [2, 3])], attrs={'to': to})
        c.error(c.name, "'to'", 'to=', 'type')
        yield c

    c = attr_case('attr_depth_to_space_blocksize_zero', 'DepthToSpace blocksize 0')
    op1(c, 'DepthToSpace', [Feed('x', IMG)], [('y', FLOAT, ANY4)], attrs={'blocksize': 0})
    c.error(c.name, 'blocksize')
    yield c

    c = attr_case('attr_space_to_depth_blocksize_2_40', 'SpaceToDepth blocksize 2^40 on a 4x4 image')
    op1(c, 'SpaceToDepth', [Feed('x', IMG)], [('y', FLOAT, ANY4)], attrs={'blocksize': 2**40})
    c.error(c.name, 'blocksize')
    yield c

    c = attr_case('attr_split_sizes_mismatch', "Split sizes [1, 1] for an axis of length 3")
    op1(c, 'Split', [Feed('x', X3), Init('split', np.array([1, 1], np.int64))],
        [('s0', FLOAT, [1]), ('s1', FLOAT, [1])])
    c.error(c.name, 'split')
    yield c

    c = attr_case('attr_constant_two_values', 'Constant with both value and value_float (exactly one is allowed)')
    c.model(make(graph([node('Constant', [], ['y'], name=c.name, value=tensor('v', W4), value_float=1.0)], [],
                       [vi('y', FLOAT, [4])])))
    c.error(c.name, 'value')
    yield c

    c = attr_case('attr_constant_no_value', 'Constant with no attribute at all')
    c.model(make(graph([node('Constant', [], ['y'], name=c.name)], [], [vi('y', FLOAT, [4])])))
    c.error(c.name, 'value')
    yield c

    c = attr_case('attr_constant_of_shape_two_values', 'ConstantOfShape value is a 2-element tensor (must be one '
                  'element)')
    op1(c, 'ConstantOfShape', [Init('shape', np.array([3], np.int64))], [('y', FLOAT, [3])],
        attrs={'value': tensor('v', [1.0, 2.0], np.float32)})
    c.error(c.name, 'value')
    yield c

    c = attr_case('attr_loop_body_int', "Loop's graph attribute 'body' given as an INT")
    op1(c, 'Loop', [Init('m', np.array(2, np.int64)), Init('cond', np.array(True)), Feed('v', W4)],
        [('y', FLOAT, [4])], attrs={'body': 5})
    c.error(c.name, 'body')
    yield c

    c = attr_case('attr_resize_mode_bogus', "Resize mode 'bogus'")
    op1(c, 'Resize', [Feed('x', IMG), '', Init('scales', np.array([1, 1, 2, 2], np.float32))],
        [('y', FLOAT, ANY4)], attrs={'mode': 'bogus'})
    c.error(c.name, 'mode', 'bogus')
    yield c

    c = attr_case('attr_topk_axis_out_of_range', 'TopK axis 3 on a rank-1 input')
    op1(c, 'TopK', [Feed('x', X3), Init('k', np.array([1], np.int64))], [('v', FLOAT, [1]), ('i', INT64, [1])],
        attrs={'axis': 3})
    c.error(c.name, 'axis')
    yield c

    for name, k in [('attr_eyelike_k_int64_max_ok', I64_MAX), ('attr_eyelike_k_int64_min_ok', I64_MIN)]:
        c = attr_case(name, f'EyeLike k={k} on 3x3: the diagonal is outside the matrix, all zeros (valid)')
        op1(c, 'EyeLike', [Feed('x', np.zeros((3, 3), np.float32))], [('y', FLOAT, [3, 3])], attrs={'k': k})
        c.ok(np.zeros((3, 3), np.float32))
        yield c

    c = attr_case('attr_reducesum_axes_out_of_range', 'ReduceSum axes [5] on a rank-2 input')
    op1(c, 'ReduceSum', [Feed('x', X23), Init('axes', np.array([5], np.int64))], [('y', FLOAT, ['a', 'b'])])
    c.error(c.name, 'axes', 'axis')
    yield c

    c = attr_case('attr_cumsum_axis_out_of_range', 'CumSum axis 3 on a rank-1 input')
    op1(c, 'CumSum', [Feed('x', X3), Init('axis', np.array(3, np.int64))], [('y', FLOAT, [3])])
    c.error(c.name, 'axis')
    yield c

    for name, eq, what in (('attr_einsum_unknown_output_label', 'ij->k', "output label 'k' is not an input label"),
                           ('attr_einsum_rank_mismatch', 'ijk->i', 'three labels for a rank-2 input'),
                           ('attr_einsum_two_terms_one_input', 'ij,jk->ik', 'two input terms for one input'),
                           ('attr_einsum_garbage', '!!->?', 'characters that are not letters')):
        c = attr_case(name, f"Einsum equation '{eq}': {what}")
        op1(c, 'Einsum', [Feed('x', X23)], [('y', FLOAT, ['a'])], attrs={'equation': eq})
        c.error(c.name, 'equation')
        yield c

    # Huge repeated attributes: a million entries where a handful are expected.
    c = attr_case('attr_conv_pads_million', 'Conv pads with 1,000,000 entries (needs 4)')
    op1(c, 'Conv', [Feed('x', IMG), Init('w', W11)], [('y', FLOAT, ANY4)], attrs={'pads': [0] * 1000000})
    c.error(c.name, 'pad')
    yield c

    c = attr_case('attr_maxpool_kernel_100k', 'MaxPool kernel_shape with 100,000 entries on a 2-D image')
    op1(c, 'MaxPool', [Feed('x', IMG)], [('y', FLOAT, ANY4)], attrs={'kernel_shape': [1] * 100000})
    c.error(c.name, 'kernel')
    yield c

    c = attr_case('attr_perm_million', 'Transpose perm = a permutation of 1,000,000 axes on a rank-2 input')
    op1(c, 'Transpose', [Feed('x', X23)], [('y', FLOAT, ['a', 'b'])], attrs={'perm': list(range(1000000))[::-1]})
    c.error(c.name, 'perm')
    yield c


# ---------------------------------------------------------------------------------------------------------
# Shapes and sizes: element counts that are negative, overflow int64, wrap to 0, or are merely enormous.
# A tensor has non-negative dims and exactly prod(dims) values (IR.md "Tensor Definition").

def shape_case(name, what):
    return Case(name, 'shapes_sizes', what)


def i64(*v):
    return np.array(v, np.int64)


def shapes_sizes_cases(outdir):
    x6 = np.arange(6, dtype=np.float32)
    reshapes = [('shape_reshape_2_40_squared', 'Reshape 6 elements to [2^40, 2^40]', x6, i64(2**40, 2**40)),
                ('shape_reshape_two_minus_one', 'Reshape to [-1, -1]', x6, i64(-1, -1)),
                ('shape_reshape_wraps_to_zero', 'Reshape an empty [0] tensor to [2^32, 2^32] (2^64 wraps to 0)',
                 np.zeros(0, np.float32), i64(2**32, 2**32)),
                ('shape_reshape_minus_one_overflow', 'Reshape 6 elements to [-1, 2^62, 4] (the known product '
                 'wraps to 0: a division by zero for -1)', x6, i64(-1, 2**62, 4)),
                ('shape_reshape_zero_beyond_rank', 'Reshape rank-1 input to [0, 0, 6] (0 copies a dim the input '
                 'does not have)', x6, i64(0, 0, 6)),
                ('shape_reshape_negative_dim', 'Reshape to [-2, 3]', x6, i64(-2, 3))]
    for name, what, x, shape in reshapes:
        c = shape_case(name, what)
        op1(c, 'Reshape', [Feed('x', x), Feed('shape', shape)], [('y', FLOAT, ['r'] * len(shape))])
        c.error(c.name)
        yield c

    expands = [('shape_expand_2_40', 'Expand a [1] tensor to [2^20, 2^20] (2^40 floats, 4 TiB)', i64(2**20, 2**20)),
               ('shape_expand_negative', 'Expand to [-1, 3]', i64(-1, 3)),
               ('shape_expand_overflow', 'Expand to [2^32, 2^32, 2^32] (the count overflows int64)',
                i64(2**32, 2**32, 2**32))]
    for name, what, shape in expands:
        c = shape_case(name, what)
        op1(c, 'Expand', [Feed('x', np.ones(1, np.float32)), Feed('shape', shape)], [('y', FLOAT, ['r'] * len(shape))])
        c.error(c.name, 'memory')
        yield c

    c = shape_case('shape_expand_huge_empty_ok', 'Expand [1] to [2^32, 2^32, 0]: zero elements, no overflow in '
                   'the true count (valid)')
    c.input('x', np.ones(1, np.float32))
    c.input('shape', i64(2**32, 2**32, 0))
    c.model(make(graph([node('Expand', ['x', 'shape'], ['e'], name=c.name), node('Shape', ['e'], ['y'])],
                       [vi('x', FLOAT, [1]), vi('shape', INT64, [3])], [vi('y', INT64, [3])])))
    c.ok(i64(2**32, 2**32, 0))
    yield c

    cos = [('shape_cos_2_40', 'ConstantOfShape [2^40] (4 TiB)', i64(2**40)),
           ('shape_cos_negative', 'ConstantOfShape [-1]', i64(-1)),
           ('shape_cos_wraps_to_zero', 'ConstantOfShape [2^32, 2^32] (2^64 wraps to 0)', i64(2**32, 2**32)),
           ('shape_cos_int64_max', 'ConstantOfShape [INT64_MAX]', i64(I64_MAX))]
    for name, what, shape in cos:
        c = shape_case(name, what)
        op1(c, 'ConstantOfShape', [Feed('shape', shape)], [('y', FLOAT, ['r'] * len(shape))])
        c.error(c.name, 'memory')
        yield c

    ranges = [('shape_range_2_62', 'Range(0, 2^62, 1) in int64', np.int64, 0, 2**62, 1),
              ('shape_range_delta_zero_int', 'Range(0, 10, 0) in int64 (count divides by zero)', np.int64, 0, 10, 0),
              ('shape_range_delta_zero_float', 'Range(0, 10, 0) in float (count is infinite)', np.float32, 0, 10, 0),
              ('shape_range_full_int64', 'Range(INT64_MIN, INT64_MAX, 1): 2^64-1 elements, limit-start overflows',
               np.int64, I64_MIN, I64_MAX, 1),
              ('shape_range_float_huge', 'Range(0, 1e30, 1) in float', np.float32, 0, 1e30, 1)]
    for name, what, dt, start, limit, delta in ranges:
        c = shape_case(name, what)
        op1(c, 'Range', [Feed('start', np.array(start, dt)), Feed('limit', np.array(limit, dt)),
                         Feed('delta', np.array(delta, dt))], [('y', elem(np.array(0, dt)), ['n'])])
        c.error(c.name, 'memory', 'delta')
        yield c

    c = shape_case('shape_range_nan_limit', 'Range(0, NaN, 1) in float: ceil(NaN) as a count')
    op1(c, 'Range', [Feed('start', np.array(0, np.float32)), Feed('limit', np.array(np.nan, np.float32)),
                     Feed('delta', np.array(1, np.float32))], [('y', FLOAT, ['n'])])
    c.error(c.name, 'nan', or_ok=True)
    yield c

    tiles = [('shape_tile_2_40', 'Tile a [2] tensor 2^40 times', np.ones(2, np.float32), i64(2**40)),
             ('shape_tile_negative', 'Tile with repeats [-1]', np.ones(2, np.float32), i64(-1)),
             ('shape_tile_wrong_length', 'Tile a rank-1 tensor with repeats [2, 2]', np.ones(2, np.float32), i64(2, 2)),
             ('shape_tile_overflow', 'Tile a [2, 2] tensor with repeats [2^62, 2^62]', np.ones((2, 2), np.float32),
              i64(2**62, 2**62))]
    for name, what, x, reps in tiles:
        c = shape_case(name, what)
        op1(c, 'Tile', [Feed('x', x), Feed('repeats', reps)], [('y', FLOAT, ['r'] * x.ndim)])
        c.error(c.name, 'memory', 'repeats')
        yield c

    c = shape_case('shape_tile_zero_ok', 'Tile with repeats [0]: an empty result (valid)')
    op1(c, 'Tile', [Feed('x', np.ones(2, np.float32)), Feed('repeats', i64(0))], [('y', FLOAT, [0])])
    c.ok(np.zeros(0, np.float32))
    yield c

    img = np.ones((1, 1, 2, 2), np.float32)
    resizes = [('shape_resize_huge_scales', 'Resize scales [1, 1, 1e10, 1e10]', [1, 1, 1e10, 1e10]),
               ('shape_resize_negative_scale', 'Resize scales [1, 1, -2, -2]', [1, 1, -2, -2]),
               ('shape_resize_nan_scale', 'Resize scales [1, 1, NaN, NaN]', [1, 1, np.nan, np.nan]),
               ('shape_resize_inf_scale', 'Resize scales [1, 1, inf, inf]', [1, 1, np.inf, np.inf])]
    for name, what, scales in resizes:
        c = shape_case(name, what)
        op1(c, 'Resize', [Feed('x', img), '', Feed('scales', np.array(scales, np.float32))],
            [('y', FLOAT, ANY4)], attrs={'mode': 'nearest'})
        c.error(c.name, 'memory', 'scale')
        yield c

    c = shape_case('shape_input_dims_mismatch', "input 'decl_in' declared [2, 3], fed [3, 2]")
    c.input('decl_in', X23.reshape(3, 2))
    c.model(make(graph([node('Relu', ['decl_in'], ['y'])], [vi('decl_in', FLOAT, [2, 3])], [vi('y', FLOAT, [2, 3])])))
    c.error('decl_in')
    yield c

    def init_case(name, what, t, out_shape=(4,)):
        c = shape_case(name, what)
        c.model(make(graph([node('Identity', [t.name], ['y'])], [], [vi('y', t.data_type, list(out_shape))], [t])))
        c.error(t.name)
        return c

    yield init_case('shape_init_raw_short', 'initializer dims [4] with 8 bytes of raw_data',
                    TensorProto(name='short_raw', data_type=FLOAT, dims=[4], raw_data=W4_BYTES[:8]))
    yield init_case('shape_init_raw_long', 'initializer dims [4] with 20 bytes of raw_data',
                    TensorProto(name='long_raw', data_type=FLOAT, dims=[4], raw_data=W4_BYTES + b'\0' * 4))
    yield init_case('shape_init_float_data_short', 'initializer dims [4] with 3 float_data values',
                    TensorProto(name='few_floats', data_type=FLOAT, dims=[4], float_data=[1, 2, 3]))
    yield init_case('shape_init_negative_dim', 'initializer dims [-1]',
                    TensorProto(name='neg_dim_init', data_type=FLOAT, dims=[-1], raw_data=b''), ['n'])
    yield init_case('shape_init_dims_wrap', 'initializer dims [2^32, 2^32] with no data (2^64 wraps to 0)',
                    TensorProto(name='wrap_init', data_type=FLOAT, dims=[2**32, 2**32], raw_data=b''), ['a', 'b'])
    yield init_case('shape_init_dims_wrap3', 'initializer dims [2^21, 2^21, 2^22] with no data (2^64 wraps to 0)',
                    TensorProto(name='wrap3_init', data_type=FLOAT, dims=[2**21, 2**21, 2**22], raw_data=b''),
                    ['a', 'b', 'c'])
    # 274177 * 67280421310721 = 2^64 + 1: the product wraps to 1, which 4 bytes of data would match.
    yield init_case('shape_init_dims_wrap_to_one', 'initializer dims [274177, 67280421310721] with 4 bytes (the '
                    'product is 2^64+1, which wraps to 1)',
                    TensorProto(name='one_wrap_init', data_type=FLOAT, dims=[274177, 67280421310721],
                                raw_data=W4_BYTES[:4]), ['a', 'b'])

    yield init_case('shape_init_float_data_16gib', 'initializer dims [2^32] float with 3 float_data values',
                    TensorProto(name='few_floats_huge', data_type=FLOAT, dims=[2**32], float_data=[1, 2, 3]), ['n'])
    yield init_case('shape_init_string_huge_dims', 'a string initializer with dims [2^32] and one string',
                    TensorProto(name='huge_strings', data_type=STRING, dims=[2**32], string_data=[b'a']), ['n'])

    c = shape_case('shape_init_huge_empty_ok', 'initializer dims [2^62, 2^62, 0] with no data: zero elements '
                   '(valid)')
    t = TensorProto(name='huge_empty', data_type=FLOAT, dims=[2**62, 2**62, 0], raw_data=b'')
    c.model(make(graph([node('Shape', ['huge_empty'], ['y'])], [], [vi('y', INT64, [3])], [t])))
    c.ok(i64(2**62, 2**62, 0))
    yield c

    pads = [('shape_pad_2_40', 'Pad a [2] tensor with pads [2^40, 0]', i64(2**40, 0)),
            ('shape_pad_int64_max', 'Pad with pads [INT64_MAX, INT64_MAX] (the size overflows)', i64(I64_MAX, I64_MAX))]
    for name, what, p in pads:
        c = shape_case(name, what)
        op1(c, 'Pad', [Feed('x', np.ones(2, np.float32)), Feed('pads', p)], [('y', FLOAT, ['n'])])
        c.error(c.name, 'memory', 'pad')
        yield c

    mismatched = [('shape_broadcast_mismatch', 'Add of [3] and [4] (not broadcastable)', 'Add',
                   [np.ones(3, np.float32), np.ones(4, np.float32)], {}),
                  ('shape_matmul_mismatch', 'MatMul of [2, 3] and [4, 5]', 'MatMul',
                   [np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)], {}),
                  ('shape_concat_mismatch', 'Concat on axis 0 of [2, 3] and [2, 4]', 'Concat',
                   [np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)], {'axis': 0})]
    for name, what, op, arrays, attrs in mismatched:
        c = shape_case(name, what)
        op1(c, op, [Feed(f'in{i}', a) for i, a in enumerate(arrays)], [('y', FLOAT, ['a', 'b'][:arrays[0].ndim])],
            attrs=attrs)
        c.error(c.name)
        yield c

    c = shape_case('shape_squeeze_not_one', 'Squeeze axis 0 of a [2, 3] tensor (the dim is not 1)')
    op1(c, 'Squeeze', [Feed('x', X23), Init('axes', i64(0))], [('y', FLOAT, ['a'])])
    c.error(c.name)
    yield c

    c = shape_case('shape_maxpool_huge_pads', 'MaxPool of a 1x1 image with pads 2^20 on every side (4.4e12 outputs)')
    op1(c, 'MaxPool', [Feed('x', np.ones((1, 1, 1, 1), np.float32))], [('y', FLOAT, ANY4)],
        attrs={'kernel_shape': [1, 1], 'pads': [2**20] * 4})
    c.error(c.name, 'memory', 'pad')
    yield c

    c = shape_case('shape_resize_huge_sizes', 'Resize to sizes [1, 1, 2^31, 2^31]')
    op1(c, 'Resize', [Feed('x', np.ones((1, 1, 2, 2), np.float32)), '', '', Feed('sizes', i64(1, 1, 2**31, 2**31))],
        [('y', FLOAT, ANY4)])
    c.error(c.name, 'memory', 'size')
    yield c

    # Sparse initializers stand for their dense form; indices must be in range, ascending, without duplicates.
    def sparse_case(name, what, values, indices, dims, ok=None):
        c = shape_case(name, what)
        sp = helper.make_sparse_tensor(tensor(name.replace('shape_', 'sp_'), values, np.float32),
                                       tensor('', indices, np.int64), dims)
        g = graph([node('Identity', [sp.values.name], ['y'])], [], [vi('y', FLOAT, ['d'] * len(dims))])
        g.sparse_initializer.append(sp)
        c.model(make(g))
        if ok is not None:
            c.ok(np.array(ok, np.float32))
        else:
            c.error(sp.values.name)
        return c

    yield sparse_case('shape_sparse_ok', 'a valid sparse initializer (control): dense [1, 0, 0, 2, 0]',
                      [1, 2], [0, 3], [5], ok=[1, 0, 0, 2, 0])
    yield sparse_case('shape_sparse_index_oob', 'a sparse initializer with index 5 in a dense [5]', [1, 2], [0, 5], [5])
    yield sparse_case('shape_sparse_index_negative', 'a sparse initializer with index -1', [1, 2], [-1, 2], [5])
    yield sparse_case('shape_sparse_index_repeated', 'a sparse initializer with index 1 twice', [1, 2], [1, 1], [5])
    yield sparse_case('shape_sparse_count_mismatch', 'a sparse initializer with 2 values and 3 indices',
                      [1, 2], [0, 1, 2], [5])
    yield sparse_case('shape_sparse_dense_huge', 'a sparse initializer whose dense form is [2^40] (4 TiB)',
                      [1], [0], [2**40])
    yield sparse_case('shape_sparse_dims_overflow', 'a sparse initializer with dims [2^32, 2^32] (2^64 wraps to 0)',
                      [1], [0], [2**32, 2**32])


# ---------------------------------------------------------------------------------------------------------
# Integer edge cases. Where the spec defines the result (index bounds, Slice clamping, Mod's sign rule, OneHot
# out of range, Cast to bool) the values are checked; where it does not (division by zero, INT_MIN / -1,
# casting NaN to an integer) a clean error or a clean result both pass, but never a crash.

def int_case(name, what):
    return Case(name, 'integers', what)


def a_(v, dt):
    return np.array(v, dtype=dt)


def integers_cases(outdir):
    for op in ('Div', 'Mod'):
        for dt in (np.int32, np.int64, np.uint8):
            tn = np.dtype(dt).name
            c = int_case(f'int_{op.lower()}_zero_{tn}', f'{op} by zero in {tn}')
            a = a_([7, 8, 0], dt)
            b = a_([2, 0, 0], dt)
            op1(c, op, [Feed('a', a), Feed('b', b)], [('y', elem(a), [3])])
            c.error('zero', c.name, or_ok=True)
            yield c

    for dt, lo in ((np.int32, I32_MIN), (np.int64, I64_MIN)):
        tn = np.dtype(dt).name
        c = int_case(f'int_div_{tn}_min_by_minus_one', f'{tn} MIN / -1 (the quotient overflows)')
        op1(c, 'Div', [Feed('a', a_([lo, 6], dt)), Feed('b', a_([-1, 3], dt))], [('y', elem(a_(0, dt)), [2])])
        c.error('overflow', c.name, or_ok=True)
        yield c
        for fmod in (0, 1):
            c = int_case(f'int_mod{fmod}_{tn}_min_by_minus_one', f'Mod(fmod={fmod}) {tn} MIN % -1: the remainder '
                         'is 0 (x86 idiv traps on it)')
            op1(c, 'Mod', [Feed('a', a_([lo, 5], dt)), Feed('b', a_([-1, 3], dt))], [('y', elem(a_(0, dt)), [2])],
                attrs={'fmod': fmod})
            c.ok(a_([0, 2], dt))
            yield c

    a, b = a_([-7, 7, -7, 7], np.int32), a_([3, -3, -3, 3], np.int32)
    c = int_case('int_mod_signs', 'Mod(fmod=0) takes the sign of the divisor')
    op1(c, 'Mod', [Feed('a', a), Feed('b', b)], [('y', INT32, [4])])
    c.ok(np.mod(a, b))
    yield c
    c = int_case('int_fmod_signs', 'Mod(fmod=1) takes the sign of the dividend')
    op1(c, 'Mod', [Feed('a', a), Feed('b', b)], [('y', INT32, [4])], attrs={'fmod': 1})
    c.ok(np.fmod(a, b))
    yield c

    big = a_([2**64 - 1, 10], np.uint64)
    c = int_case('int_mod_uint64_top_bit', 'Mod in uint64 with values above INT64_MAX')
    op1(c, 'Mod', [Feed('a', big), Feed('b', a_([2**63, 3], np.uint64))], [('y', UINT64, [2])])
    c.ok(a_([2**63 - 1, 1], np.uint64))
    yield c
    c = int_case('int_div_uint64_top_bit', 'Div in uint64 with values above INT64_MAX')
    op1(c, 'Div', [Feed('a', big), Feed('b', a_([2, 3], np.uint64))], [('y', UINT64, [2])])
    c.ok(a_([2**63 - 1, 3], np.uint64))
    yield c

    # Shifts by the width or more: onyx defines the result as 0 (C++ leaves it undefined).
    shifts = [('int_bitshift_u32_by_32', np.uint32, 'LEFT', [1, 1, 0xFFFFFFFF, 5], [32, 33, 255, 1], [0, 0, 0, 10]),
              ('int_bitshift_u8_by_8', np.uint8, 'RIGHT', [255, 128, 6], [8, 200, 1], [0, 0, 3]),
              ('int_bitshift_u16_by_16', np.uint16, 'RIGHT', [0xFFFF], [16], [0]),
              ('int_bitshift_u64_by_64', np.uint64, 'LEFT', [1, 1, 3], [64, 2**63, 1], [0, 0, 6])]
    for name, dt, direction, x, s, want in shifts:
        c = int_case(name, f'BitShift {direction} in {np.dtype(dt).name} by the bit width or more (defined as 0)')
        op1(c, 'BitShift', [Feed('x', a_(x, dt)), Feed('s', a_(s, dt))], [('y', elem(a_(0, dt)), [len(x)])],
            attrs={'direction': direction})
        c.ok(a_(want, dt))
        yield c

    special = [np.nan, np.inf, -np.inf, 1e20, -1e20, 3.7, -3.7]
    for dt, to in ((np.int32, INT32), (np.int64, INT64), (np.uint8, UINT8), (np.int8, INT8), (np.uint64, UINT64)):
        tn = np.dtype(dt).name
        c = int_case(f'int_cast_float_specials_to_{tn}', f'Cast NaN, +-inf and +-1e20 to {tn} (undefined values; '
                     'must not crash)')
        op1(c, 'Cast', [Feed('x', a_(special, np.float32))], [('y', to, [len(special)])], attrs={'to': to})
        c.ok()
        yield c
    c = int_case('int_cast_double_huge_to_int64', 'Cast double NaN and +-1e300 to int64 (must not crash)')
    op1(c, 'Cast', [Feed('x', a_([np.nan, 1e300, -1e300], np.float64))], [('y', INT64, [3])], attrs={'to': INT64})
    c.ok()
    yield c
    c = int_case('int_cast_nan_to_bool', 'Cast float to bool: +-0 is false, everything else (NaN, inf) is true')
    op1(c, 'Cast', [Feed('x', a_([np.nan, 0.0, -0.0, np.inf, -2.5], np.float32))], [('y', BOOL, [5])],
        attrs={'to': BOOL})
    c.ok(a_([True, False, False, True, True], bool))
    yield c

    for op, dt, lo in (('Abs', np.int32, I32_MIN), ('Neg', np.int32, I32_MIN), ('Neg', np.int64, I64_MIN),
                       ('Abs', np.int64, I64_MIN), ('Abs', np.int8, -128)):
        tn = np.dtype(dt).name
        c = int_case(f'int_{op.lower()}_{tn}_min', f'{op} of {tn} MIN (not representable; must not crash)')
        op1(c, op, [Feed('x', a_([lo, -5], dt))], [('y', elem(a_(0, dt)), [2])])
        c.ok()
        yield c

    data3 = a_([10, 20, 30], np.float32)
    gathers = [('int_gather_oob', [3]), ('int_gather_negative_oob', [-4]), ('int_gather_int64_min', [I64_MIN]),
               ('int_gather_int64_max', [I64_MAX])]
    for name, idx in gathers:
        c = int_case(name, f'Gather index {idx[0]} on an axis of 3 (bounds are [-3, 2])')
        op1(c, 'Gather', [Feed('data', data3), Feed('idx', a_(idx, np.int64))], [('y', FLOAT, [1])])
        c.error(c.name, 'index', 'indices', 'range', 'bound')
        yield c
    c = int_case('int_gather_int32_min', 'Gather int32 index INT32_MIN on an axis of 3')
    op1(c, 'Gather', [Feed('data', data3), Feed('idx', a_([I32_MIN], np.int32))], [('y', FLOAT, [1])])
    c.error(c.name, 'index', 'indices', 'range', 'bound')
    yield c
    c = int_case('int_gather_empty_axis', 'Gather index 0 on an axis of length 0')
    op1(c, 'Gather', [Feed('data', np.zeros((0, 2), np.float32)), Feed('idx', a_([0], np.int64))],
        [('y', FLOAT, [1, 2])])
    c.error(c.name, 'index', 'indices', 'range', 'bound')
    yield c
    c = int_case('int_gather_negative_ok', 'Gather indices [-3, -1] on an axis of 3 (negative indices are valid)')
    op1(c, 'Gather', [Feed('data', data3), Feed('idx', a_([-3, -1], np.int64))], [('y', FLOAT, [2])])
    c.ok(a_([10, 30], np.float32))
    yield c

    m22 = a_([[1, 2], [3, 4]], np.float32)
    c = int_case('int_gather_elements_oob', 'GatherElements index 2 on an axis of 2')
    op1(c, 'GatherElements', [Feed('data', m22), Feed('idx', a_([[0, 2]], np.int64))], [('y', FLOAT, [1, 2])],
        attrs={'axis': 1})
    c.error(c.name, 'index', 'indices', 'range', 'bound')
    yield c
    c = int_case('int_scatter_elements_oob', 'ScatterElements index 3 on an axis of 3')
    op1(c, 'ScatterElements', [Feed('data', np.zeros(3, np.float32)), Feed('idx', a_([3], np.int64)),
                               Feed('upd', a_([5], np.float32))], [('y', FLOAT, [3])])
    c.error(c.name, 'index', 'indices', 'range', 'bound')
    yield c
    c = int_case('int_scatter_elements_int64_min', 'ScatterElements index INT64_MIN on an axis of 3')
    op1(c, 'ScatterElements', [Feed('data', np.zeros(3, np.float32)), Feed('idx', a_([I64_MIN], np.int64)),
                               Feed('upd', a_([5], np.float32))], [('y', FLOAT, [3])])
    c.error(c.name, 'index', 'indices', 'range', 'bound')
    yield c
    c = int_case('int_scatter_elements_negative_ok', 'ScatterElements index -1 on an axis of 3 (valid)')
    op1(c, 'ScatterElements', [Feed('data', np.zeros(3, np.float32)), Feed('idx', a_([-1], np.int64)),
                               Feed('upd', a_([5], np.float32))], [('y', FLOAT, [3])])
    c.ok(a_([0, 0, 5], np.float32))
    yield c
    c = int_case('int_scatternd_oob', 'ScatterND index [5, 0] into a [2, 2] tensor')
    op1(c, 'ScatterND', [Feed('data', np.zeros((2, 2), np.float32)), Feed('idx', a_([[5, 0]], np.int64)),
                         Feed('upd', a_([1], np.float32))], [('y', FLOAT, [2, 2])])
    c.error(c.name, 'index', 'indices', 'range', 'bound')
    yield c
    for name, idx in (('int_gathernd_oob', [[2, 0]]), ('int_gathernd_negative_oob', [[-3, 0]]),
                      ('int_gathernd_int64_min', [[I64_MIN, 0]])):
        c = int_case(name, f'GatherND index {idx[0]} into a [2, 2] tensor')
        op1(c, 'GatherND', [Feed('data', m22), Feed('idx', a_(idx, np.int64))], [('y', FLOAT, [1])])
        c.error(c.name, 'index', 'indices', 'range', 'bound')
        yield c
    c = int_case('int_gathernd_negative_ok', 'GatherND index [-1, 0] into a [2, 2] tensor (valid)')
    op1(c, 'GatherND', [Feed('data', m22), Feed('idx', a_([[-1, 0]], np.int64))], [('y', FLOAT, [1])])
    c.ok(a_([3], np.float32))
    yield c

    # Slice clamps starts/ends to the axis (Operators.md); steps of INT64_MAX/MIN must not overflow a count.
    d10 = np.arange(10, dtype=np.int32)
    slices = [('int_slice_full_extremes', 'starts INT64_MIN, ends INT64_MAX', I64_MIN, I64_MAX, 1, d10),
              ('int_slice_reverse_extremes', 'starts INT64_MAX, ends INT64_MIN, steps -1', I64_MAX, I64_MIN, -1,
               d10[::-1]),
              ('int_slice_step_int64_max', 'starts 0, ends INT64_MAX, steps INT64_MAX', 0, I64_MAX, I64_MAX, d10[:1]),
              ('int_slice_step_int64_min', 'starts INT64_MAX, ends INT64_MIN, steps INT64_MIN', I64_MAX, I64_MIN,
               I64_MIN, d10[9:]),
              ('int_slice_empty_extremes', 'starts INT64_MAX, ends INT64_MAX (empty)', I64_MAX, I64_MAX, 1, d10[:0])]
    for name, what, start, end, step, want in slices:
        c = int_case(name, f'Slice of arange(10) with {what}')
        op1(c, 'Slice', [Feed('x', d10), Feed('starts', i64(start)), Feed('ends', i64(end)), Feed('axes', i64(0)),
                         Feed('steps', i64(step))], [('y', INT32, [len(want)])])
        c.ok(want)
        yield c
    c = int_case('int_slice_step_zero', 'Slice with steps 0 (not allowed)')
    op1(c, 'Slice', [Feed('x', d10), Feed('starts', i64(0)), Feed('ends', i64(5)), Feed('axes', i64(0)),
                     Feed('steps', i64(0))], [('y', INT32, ['n'])])
    c.error(c.name, 'step')
    yield c

    for name, k in (('int_topk_k_too_big', 5), ('int_topk_k_negative', -1), ('int_topk_k_int64_max', I64_MAX)):
        c = int_case(name, f'TopK k={k} on an axis of 3')
        op1(c, 'TopK', [Feed('x', data3), Feed('k', i64(k))], [('v', FLOAT, ['k']), ('i', INT64, ['k'])])
        c.error(c.name)
        yield c

    c = int_case('int_onehot_depth_negative', 'OneHot depth -3')
    op1(c, 'OneHot', [Feed('idx', i64(0, 1)), Feed('depth', np.array(-3, np.int64)),
                      Feed('values', a_([0, 1], np.float32))], [('y', FLOAT, [2, 'd'])])
    c.error(c.name, 'depth')
    yield c
    c = int_case('int_onehot_depth_2_40', 'OneHot depth 2^40 (4 TiB of output)')
    op1(c, 'OneHot', [Feed('idx', i64(0)), Feed('depth', np.array(2**40, np.int64)),
                      Feed('values', a_([0, 1], np.float32))], [('y', FLOAT, [1, 'd'])])
    c.error(c.name, 'depth', 'memory')
    yield c
    c = int_case('int_onehot_indices_out_of_range_ok', 'OneHot indices 5, -1, -10, INT64_MIN with depth 3: out of '
                 'range gives all off_value (defined)')
    op1(c, 'OneHot', [Feed('idx', i64(5, -1, -10, I64_MIN)), Feed('depth', np.array(3, np.int64)),
                      Feed('values', a_([0, 1], np.float32))], [('y', FLOAT, [4, 3])])
    c.ok(a_([[0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]], np.float32))
    yield c

    ranges = [('int_range_int32_extremes', np.int32, I32_MIN, I32_MAX, 2**30, [I32_MIN, -2**30, 0, 2**30]),
              ('int_range_int64_near_max', np.int64, I64_MAX - 2, I64_MAX, 1, [I64_MAX - 2, I64_MAX - 1]),
              ('int_range_int64_step_max', np.int64, I64_MAX - 1, I64_MAX, I64_MAX, [I64_MAX - 1]),
              ('int_range_int64_step_min', np.int64, I64_MIN + 1, I64_MIN, I64_MIN, [I64_MIN + 1])]
    for name, dt, start, limit, delta, want in ranges:
        c = int_case(name, f'Range({start}, {limit}, {delta}): limit-start or the next value overflows')
        op1(c, 'Range', [Feed('start', np.array(start, dt)), Feed('limit', np.array(limit, dt)),
                         Feed('delta', np.array(delta, dt))], [('y', elem(a_(0, dt)), [len(want)])])
        c.ok(a_(want, dt))
        yield c

    m23 = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    for name, k, upper, want in (('int_trilu_upper_k_int64_min', I64_MIN, 1, m23),
                                 ('int_trilu_lower_k_int64_max', I64_MAX, 0, m23),
                                 ('int_trilu_upper_k_int64_max', I64_MAX, 1, np.zeros_like(m23)),
                                 ('int_trilu_lower_k_int64_min', I64_MIN, 0, np.zeros_like(m23))):
        c = int_case(name, f'Trilu upper={upper} k={k} on 2x3 (j - i compared with k must not overflow)')
        op1(c, 'Trilu', [Feed('x', m23), Feed('k', np.array(k, np.int64))], [('y', FLOAT, [2, 3])],
            attrs={'upper': upper})
        c.ok(want)
        yield c


# ---------------------------------------------------------------------------------------------------------
# Control flow: loops that never end or grow without bound (they must stop at the run's deadline or memory
# budget), malformed subgraphs, recursive model-local functions, and very deep nesting.

def cf_case(name, what):
    return Case(name, 'control_flow', what)


def body(nodes, carried_in, outs, name='body', inits=()):
    """A Loop body: (iteration, cond) then the carried inputs; cond_out then the carried and scan outputs."""
    return graph(nodes, [vi('i', INT64, []), vi('cond_in', BOOL, [])] + carried_in, [vi('cond_out', BOOL, [])] + outs,
                 inits, name=name)


KEEP_GOING = node('Identity', ['cond_in'], ['cond_out'])


def loop_model(c, m, carried_init, out_vis, loop_body, cond=True):
    """Loop(M=m, cond, carried...) over loop_body; M and cond are initializers, m None leaves M out."""
    inits = [tensor('cond', np.array(cond))] + [tensor(n, a) for n, a in carried_init]
    ins = ['', 'cond'] if m is None else ['m', 'cond']
    if m is not None:
        inits.append(tensor('m', np.array(m, np.int64)))
    n = node('Loop', ins + [n for n, _ in carried_init], [o.name for o in out_vis], name=c.name, body=loop_body)
    c.model(make(graph([n], [], out_vis, inits)))


def deep_if_model(depth):
    """If nested `depth` deep through then_branch, written as bytes (no recursion): the result is input x."""
    def else_attr(k):
        e = fb(1, fb(1, 'x') + fb(2, f'e{k}') + fb(4, 'Identity')) + fb(2, f'else{k}') + fb(12, fb(1, f'e{k}'))
        return fb(5, fb(1, 'else_branch') + fv(20, 5) + fb(6, e))
    core = fb(1, fb(1, 'x') + fb(2, 'o0') + fb(4, 'Identity')) + fb(2, 'g0') + fb(12, fb(1, 'o0'))
    layers = []
    for k in range(1, depth + 1):
        if k < depth:
            tail = fb(2, f'g{k}') + fb(12, fb(1, f'o{k}'))
        else:
            cond_vi = fb(1, 'c') + fb(2, fb(1, fv(1, BOOL) + fb(2, b'')))   # c: a bool scalar
            tail = (fb(2, 'main') + fb(11, vi_bytes('x', FLOAT, [3])) + fb(11, cond_vi)
                    + fb(12, vi_bytes(f'o{k}', FLOAT, [3])))
        layers += [(fb(1, 'then_branch') + fv(20, 5), 6, b''),                                        # attribute
                   (fb(1, 'c') + fb(2, f'o{k}') + fb(4, 'If') + else_attr(k), 5, b''),                # node
                   (b'', 1, tail)]                                                                    # graph
    return model_bytes(nest(core, layers))


def control_flow_cases(outdir):
    v1 = [('v0', np.zeros(1, np.float32))]
    v_in, v_out = [vi('v_in', FLOAT, [1])], [vi('v_out', FLOAT, [1])]
    y1 = [vi('y', FLOAT, [1])]

    c = cf_case('cf_loop_2_62_identity', 'Loop with trip count 2^62, cond always true, an identity body')
    loop_model(c, 2**62, v1, y1, body([KEEP_GOING, node('Identity', ['v_in'], ['v_out'])], v_in, v_out))
    c.error(*DEADLINE)
    yield c

    c = cf_case('cf_loop_2_62_add', 'Loop with trip count 2^62 whose body adds 1 each time')
    loop_model(c, 2**62, v1, y1,
               body([KEEP_GOING, node('Add', ['v_in', 'one'], ['v_out'])], v_in, v_out,
                    inits=[tensor('one', np.ones(1, np.float32))]))
    c.error(*DEADLINE)
    yield c

    c = cf_case('cf_loop_no_trip_count', 'Loop with no trip count and a condition that stays true')
    loop_model(c, None, v1, y1, body([KEEP_GOING, node('Identity', ['v_in'], ['v_out'])], v_in, v_out))
    c.error(*DEADLINE)
    yield c

    c = cf_case('cf_loop_empty_body_int64_max', 'Loop with trip count INT64_MAX and a body of no nodes (outputs '
                'are its inputs)')
    g = graph([], [vi('i', INT64, []), vi('cond_in', BOOL, []), vi('v_in', FLOAT, [1])],
              [vi('cond_in', BOOL, []), vi('v_in', FLOAT, [1])], name='body')
    loop_model(c, I64_MAX, v1, y1, g)
    c.error(*DEADLINE)
    yield c

    c = cf_case('cf_loop_nested_forever', 'a Loop of 2^31 iterations inside a Loop of 2^31 iterations')
    # The inner body's names differ from the outer body's: a nested node output may not reuse a visible name.
    inner = graph([node('Identity', ['cond_in2'], ['cond_out2']), node('Add', ['v_in2', 'one'], ['v_out2'])],
                  [vi('i2', INT64, []), vi('cond_in2', BOOL, []), vi('v_in2', FLOAT, [1])],
                  [vi('cond_out2', BOOL, []), vi('v_out2', FLOAT, [1])], [tensor('one', np.ones(1, np.float32))],
                  name='inner_body')
    outer = body([KEEP_GOING, node('Loop', ['big', 'cond_in', 'v_in'], ['v_out'], body=inner)], v_in, v_out,
                 name='outer_body', inits=[tensor('big', np.array(2**31, np.int64))])
    loop_model(c, 2**31, v1, y1, outer)
    c.error(*DEADLINE)
    yield c

    # A fresh 4 MiB tensor per iteration (it depends on the iteration number, so it cannot be shared).
    fresh = [node('ConstantOfShape', ['mib4'], ['blk'], value=tensor('v', [1.0], np.float32)),
             node('Cast', ['i'], ['i_f'], to=FLOAT), node('Add', ['blk', 'i_f'], ['t'])]
    mib4 = tensor('mib4', [1 << 20], np.int64)

    c = cf_case('cf_loop_grow_sequence', 'a Loop of 2^40 iterations appends a fresh 4 MiB tensor to a sequence '
                'each time')
    g = graph([KEEP_GOING] + fresh + [node('SequenceInsert', ['s_in', 't'], ['s_out'])],
              [vi('i', INT64, []), vi('cond_in', BOOL, []), seq_vi('s_in', FLOAT, [1 << 20])],
              [vi('cond_out', BOOL, []), seq_vi('s_out', FLOAT, [1 << 20])], [mib4], name='body')
    c.model(make(graph([node('SequenceEmpty', [], ['s0'], dtype=FLOAT),
                        node('Loop', ['m', 'cond', 's0'], ['s_final'], name=c.name, body=g)], [],
                       [seq_vi('s_final', FLOAT, [1 << 20])],
                       [tensor('m', np.array(2**40, np.int64)), tensor('cond', np.array(True))])))
    c.error('memory')
    yield c

    c = cf_case('cf_loop_grow_scan_output', 'a Loop of 2^40 iterations emits a fresh 4 MiB scan output each time')
    g = graph([KEEP_GOING] + fresh, [vi('i', INT64, []), vi('cond_in', BOOL, [])],
              [vi('cond_out', BOOL, []), vi('t', FLOAT, [1 << 20])], [mib4], name='body')
    loop_model(c, 2**40, [], [vi('scan_out', FLOAT, ['n', 1 << 20])], g)
    c.error('memory')
    yield c

    c = cf_case('cf_loop_doubling', 'a Loop of 64 iterations doubles a carried tensor each time (2^74 bytes)')
    loop_model(c, 64, [('v0', np.ones(1024, np.float32))], [vi('y', FLOAT, ['n'])],
               body([KEEP_GOING, node('Concat', ['v_in', 'v_in'], ['v_out'], axis=0)], [vi('v_in', FLOAT, ['a'])],
                    [vi('v_out', FLOAT, ['b'])]))
    c.error('memory')
    yield c

    add_one = body([KEEP_GOING, node('Add', ['v_in', 'one'], ['v_out'])], v_in, v_out,
                   inits=[tensor('one', np.ones(1, np.float32))])
    c = cf_case('cf_loop_negative_trip_ok', 'Loop trip count -5: zero iterations (i < M is false at once)')
    loop_model(c, -5, [('v0', np.full(1, 7, np.float32))], y1, add_one)
    c.ok(np.full(1, 7, np.float32))
    yield c

    c = cf_case('cf_loop_cond_false_ok', 'Loop with trip count 2^62 but the initial cond false: zero iterations')
    loop_model(c, 2**62, [('v0', np.full(1, 7, np.float32))], y1, add_one, cond=False)
    c.ok(np.full(1, 7, np.float32))
    yield c

    c = cf_case('cf_loop_body_too_few_inputs', 'a Loop body with one input (needs iteration, cond and the carried)')
    g = graph([node('Identity', ['cond_in'], ['cond_out']), node('Identity', ['v0'], ['v_out'])],
              [vi('cond_in', BOOL, [])], [vi('cond_out', BOOL, []), vi('v_out', FLOAT, [1])], name='body')
    loop_model(c, 3, v1, y1, g)
    c.error(c.name, 'body', 'input')
    yield c

    c = cf_case('cf_loop_body_too_few_outputs', 'a Loop body with one carried input but no carried output')
    g = body([KEEP_GOING], v_in, [])
    loop_model(c, 3, v1, y1, g)
    c.error(c.name, 'body', 'output')
    yield c

    c = cf_case('cf_loop_cond_float', "a Loop whose 'cond' input is a float tensor (must be bool)")
    g = body([KEEP_GOING, node('Identity', ['v_in'], ['v_out'])], v_in, v_out)
    c.model(make(graph([node('Loop', ['m', 'condf', 'v0'], ['y'], name=c.name, body=g)], [], y1,
                       [tensor('m', np.array(3, np.int64)), tensor('condf', np.array(1.0, np.float32)),
                        tensor('v0', np.zeros(1, np.float32))])))
    c.error(c.name, 'cond')
    yield c

    c = cf_case('cf_loop_outer_name_missing', "a Loop body reads 'absent_outer', defined in no enclosing scope")
    loop_model(c, 3, v1, y1, body([KEEP_GOING, node('Add', ['v_in', 'absent_outer'], ['v_out'])], v_in, v_out))
    c.error('absent_outer')
    yield c

    x3in = [vi('x', FLOAT, [3]), vi('c', BOOL, [])]

    def if_case(name, what, then_outs, else_outs, node_outs):
        c = cf_case(name, what)
        then_g = graph([node('Identity', ['x'], [f't{k}']) for k in range(then_outs)], [],
                       [vi(f't{k}', FLOAT, [3]) for k in range(then_outs)], name='then')
        else_g = graph([node('Identity', ['x'], [f'e{k}']) for k in range(else_outs)], [],
                       [vi(f'e{k}', FLOAT, [3]) for k in range(else_outs)], name='else')
        c.model(make(graph([node('If', ['c'], [f'y{k}' for k in range(node_outs)], name=name, then_branch=then_g,
                                 else_branch=else_g)], x3in, [vi(f'y{k}', FLOAT, [3]) for k in range(node_outs)])))
        c.input('x', X3)
        c.input('c', np.array(True))
        c.error(name, 'branch')
        return c

    yield if_case('cf_if_then_two_outputs', 'If with one output whose then_branch yields two', 2, 1, 1)
    yield if_case('cf_if_branches_differ', 'If with two outputs, then_branch yields two, else_branch one', 2, 1, 2)

    c = cf_case('cf_if_missing_else', "If without its required else_branch")
    then_g = graph([node('Identity', ['x'], ['t'])], [], [vi('t', FLOAT, [3])], name='then')
    c.model(make(graph([node('If', ['c'], ['y'], name=c.name, then_branch=then_g)], x3in, [vi('y', FLOAT, [3])])))
    c.input('x', X3)
    c.input('c', np.array(True))
    c.error(c.name, 'else_branch')
    yield c

    c = cf_case('cf_if_cond_two_elements', 'If whose cond holds two elements (must be a single element)')
    else_g = graph([node('Identity', ['x'], ['e'])], [], [vi('e', FLOAT, [3])], name='else')
    c.model(make(graph([node('If', ['c'], ['y'], name=c.name, then_branch=then_g, else_branch=else_g)],
                       [vi('x', FLOAT, [3]), vi('c', BOOL, [2])], [vi('y', FLOAT, [3])])))
    c.input('x', X3)
    c.input('c', np.array([True, False]))
    c.error(c.name, 'cond')
    yield c

    c = cf_case('cf_if_branch_types_differ', 'If whose then_branch yields int64 and else_branch float')
    then_i = graph([node('Cast', ['x'], ['t'], to=INT64)], [], [vi('t', INT64, [3])], name='then')
    c.model(make(graph([node('If', ['c'], ['y'], name=c.name, then_branch=then_i, else_branch=else_g)], x3in,
                       [vi('y', FLOAT, [3])])))
    c.input('x', X3)
    c.input('c', np.array(True))
    c.error(c.name, 'type', 'branch')
    yield c

    def scan_case(name, what, inputs, attrs):
        c = cf_case(name, what)
        sb = graph([node('Add', ['s_in', 'e1'], ['t']), node('Add', ['t', 'e2'], ['s_out'])],
                   [vi('s_in', FLOAT, [2]), vi('e1', FLOAT, [2]), vi('e2', FLOAT, [2])], [vi('s_out', FLOAT, [2])],
                   name='scan_body')
        for n, a in inputs:
            c.input(n, a)
        c.model(make(graph([node('Scan', [n for n, _ in inputs], ['s_final'], name=name, body=sb, **attrs)],
                           [vi(n, FLOAT, list(a.shape)) for n, a in inputs], [vi('s_final', FLOAT, [2])])))
        return c

    s0 = ('s0', np.zeros(2, np.float32))
    c = scan_case('cf_scan_length_mismatch', 'Scan over two inputs of lengths 3 and 4 (must be equal)',
                  [s0, ('xs1', np.ones((3, 2), np.float32)), ('xs2', np.ones((4, 2), np.float32))],
                  {'num_scan_inputs': 2})
    c.error(c.name, 'length')
    yield c
    c = scan_case('cf_scan_num_inputs_too_many', 'Scan num_scan_inputs=5 with three inputs',
                  [s0, ('xs1', np.ones((3, 2), np.float32)), ('xs2', np.ones((3, 2), np.float32))],
                  {'num_scan_inputs': 5})
    c.error(c.name, 'num_scan_inputs', 'scan input')
    yield c
    c = scan_case('cf_scan_axis_out_of_range', 'Scan scan_input_axes [3, 0] on rank-2 inputs',
                  [s0, ('xs1', np.ones((3, 2), np.float32)), ('xs2', np.ones((3, 2), np.float32))],
                  {'num_scan_inputs': 2, 'scan_input_axes': [3, 0]})
    c.error(c.name, 'axis', 'axes')
    yield c

    c = cf_case('cf_sequence_at_oob', 'SequenceAt position 5 in a sequence of 2 (the range is [-2, 1])')
    c.input('x', X3)
    c.model(make(graph([node('SequenceConstruct', ['x', 'x'], ['s']),
                        node('SequenceAt', ['s', 'pos'], ['y'], name=c.name)],
                       [vi('x', FLOAT, [3])], [vi('y', FLOAT, [3])], [tensor('pos', np.array(5, np.int64))])))
    c.error(c.name, 'position', 'index', 'range', 'bound')
    yield c

    c = cf_case('cf_sequence_erase_empty', 'SequenceErase on an empty sequence')
    c.model(make(graph([node('SequenceEmpty', [], ['s'], dtype=FLOAT),
                        node('SequenceErase', ['s'], ['s2'], name=c.name), node('SequenceLength', ['s2'], ['y'])],
                       [], [vi('y', INT64, [])])))
    c.error(c.name, 'empty', 'position', 'range')
    yield c

    local = [('local', 1)]

    def fn(name, inputs, outputs, nodes):
        return helper.make_function('local', name, inputs, outputs, nodes,
                                    [helper.make_opsetid('', 17), helper.make_opsetid('local', 1)])

    def fn_model(c, functions, call, n_inputs=1):
        ins = [f'x{k}' if k else 'x' for k in range(n_inputs)]
        c.model(make(graph([node(call, ins, ['y'], domain='local')], [vi(n, FLOAT, [3]) for n in ins],
                           [vi('y', FLOAT, [3])]), functions=functions, domains=local))
        for n in ins:
            c.input(n, X3)

    c = cf_case('cf_func_self_recursive', "model-local function 'self_caller' calls itself")
    fn_model(c, [fn('self_caller', ['a'], ['b'], [node('self_caller', ['a'], ['b'], domain='local')])], 'self_caller')
    c.error('self_caller')
    yield c

    c = cf_case('cf_func_mutual_recursion', "functions 'fn_ping' and 'fn_pong' call each other")
    fn_model(c, [fn('fn_ping', ['a'], ['b'], [node('fn_pong', ['a'], ['b'], domain='local')]),
                 fn('fn_pong', ['a'], ['b'], [node('fn_ping', ['a'], ['b'], domain='local')])], 'fn_ping')
    c.error('fn_ping', 'fn_pong')
    yield c

    c = cf_case('cf_func_recursion_in_branch', "function 'fn_deep' calls itself inside the taken branch of an If")
    then_f = graph([node('fn_deep', ['a'], ['tb'], domain='local')], [], [vi('tb', FLOAT, [3])], name='then')
    else_f = graph([node('Identity', ['a'], ['eb'])], [], [vi('eb', FLOAT, [3])], name='else')
    fn_model(c, [fn('fn_deep', ['a'], ['b'], [
        node('Constant', [], ['yes'], value=tensor('yes', np.array(True))),
        node('If', ['yes'], ['b'], then_branch=then_f, else_branch=else_f)])], 'fn_deep')
    c.error('fn_deep', 'recurs', *DEADLINE, 'memory')
    yield c

    c = cf_case('cf_func_missing_body_output', "function 'fn_hollow' declares output 'fo_missing' that no node makes")
    fn_model(c, [fn('fn_hollow', ['a'], ['fo_missing'], [node('Relu', ['a'], ['r'])])], 'fn_hollow')
    c.error('fn_hollow', 'fo_missing')
    yield c

    c = cf_case('cf_func_wrong_arity', "function 'fn_arity' takes one input, called with three")
    fn_model(c, [fn('fn_arity', ['a'], ['b'], [node('Relu', ['a'], ['b'])])], 'fn_arity', n_inputs=3)
    c.error('fn_arity')
    yield c

    c = cf_case('cf_func_undefined', "a node calls 'fn_nowhere' in the imported domain 'local', which defines none")
    fn_model(c, [], 'fn_nowhere')
    c.error('fn_nowhere')
    yield c

    # The spec sets no depth limit. 30 levels (about 93 nested messages) is what protobuf's default recursion
    # limit of 100, and so onnx.load, still reads; deeper ones may be refused as too deep, but cleanly.
    # A function attribute referenced by ref_attr_name and not given at the call is omitted (IR.md), so the
    # op's default applies: LeakyRelu's alpha 0.01.
    leaky = fn('fn_leaky', ['a'], ['b'], [node('LeakyRelu', ['a'], ['b'])])
    leaky.node[0].attribute.append(onnx.AttributeProto(name='alpha', ref_attr_name='alpha',
                                                       type=onnx.AttributeProto.FLOAT))
    leaky.attribute.append('alpha')
    xm = np.array([-1, 2, -3], np.float32)
    c = cf_case('cf_func_ref_attr_omitted_ok', "function 'fn_leaky' refers to attribute 'alpha', which the call "
                'leaves out: LeakyRelu uses its default (valid)')
    fn_model(c, [leaky], 'fn_leaky')
    c.input('x', xm)
    c.ok(np.where(xm < 0, xm * np.float32(0.01), xm))
    yield c
    c = cf_case('cf_func_ref_attr_wrong_type', "function 'fn_leaky' called with alpha as a STRING (LeakyRelu needs "
                'a FLOAT)')
    fn_model(c, [leaky], 'fn_leaky')
    m = onnx.load_from_string(c.model_bytes)
    m.graph.node[0].attribute.append(helper.make_attribute('alpha', b'oops'))
    c.model(m)
    c.error('alpha', 'fn_leaky')
    yield c

    c = cf_case('cf_sequence_insert_oob', 'SequenceInsert at position 5 in a sequence of 1 (the range is [-1, 1])')
    c.input('x', X3)
    c.model(make(graph([node('SequenceConstruct', ['x'], ['s']),
                        node('SequenceInsert', ['s', 'x', 'pos'], ['s2'], name=c.name),
                        node('SequenceLength', ['s2'], ['y'])],
                       [vi('x', FLOAT, [3])], [vi('y', INT64, [])], [tensor('pos', np.array(5, np.int64))])))
    c.error(c.name, 'position', 'index', 'range', 'bound')
    yield c

    c = cf_case('cf_nested_if_30', 'If nested 30 deep through then_branch (valid, and onnx.load reads it: the '
                'result is x)')
    c.model(deep_if_model(30))
    c.input('x', X3)
    c.input('c', np.array(True))
    c.ok(X3)
    yield c

    c = cf_case('cf_nested_if_100', 'If nested 100 deep through then_branch (valid, but past protobuf\'s default '
                'recursion limit)')
    c.model(deep_if_model(100))
    c.input('x', X3)
    c.input('c', np.array(True))
    c.error(*DEPTH, or_ok=True, outputs=[X3])
    yield c

    c = cf_case('cf_nested_if_10000', 'If nested 10,000 deep through then_branch (valid, but may be refused as '
                'too deep)')
    c.model(deep_if_model(10000))
    c.input('x', X3)
    c.input('c', np.array(True))
    c.error(*DEPTH, or_ok=True, outputs=[X3])
    yield c


# ---------------------------------------------------------------------------------------------------------
# Feeds: what the caller passes must match the graph inputs' declared types and shapes.

def feed_case(name, what, shape=(2, 3), elem_type=FLOAT):
    """y = Neg(feed_in) with feed_in declared elem_type[shape] (strings are symbolic dims)."""
    c = Case(name, 'feeds', what)
    c.model(make(graph([node('Neg', ['feed_in'], ['y'])], [vi('feed_in', elem_type, list(shape))],
                       [vi('y', elem_type, list(shape))])))
    return c


def npy_bytes(descr, shape, data, fortran=False, header=None):
    """A .npy file (format 1.0), written by hand so that its header can lie."""
    if header is None:
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, tuple(shape))
    header = header.encode('latin1')
    pad = 64 - (10 + len(header) + 1) % 64
    header += b' ' * pad + b'\n'
    return b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header + data


def feeds_cases(outdir):
    def bad_feed(name, what, value, shape=(2, 3), ext='pb', subs=('feed_in',)):
        c = feed_case(name, what, shape)
        c.input('feed_in', value, ext)
        c.error(*subs)
        return c

    yield bad_feed('feed_wrong_dtype_int32', 'an int32 tensor fed to a float input', X23.astype(np.int32))
    yield bad_feed('feed_wrong_dtype_double', 'a double tensor fed to a float input', X23.astype(np.float64))
    yield bad_feed('feed_wrong_dtype_float16', 'a float16 tensor fed to a float input', X23.astype(np.float16))
    yield bad_feed('feed_wrong_rank', 'a [6] tensor fed to a [2, 3] input', X23.ravel())
    yield bad_feed('feed_wrong_dim', 'a [2, 4] tensor fed to a [2, 3] input', np.zeros((2, 4), np.float32))
    yield bad_feed('feed_string_to_float', 'a string tensor fed to a float input',
                   np.array([['a', 'b', 'c'], ['d', 'e', 'f']], dtype=object))
    seq = helper.make_sequence('feed_in', onnx.SequenceProto.TENSOR, [numpy_helper.from_array(X23)])
    yield bad_feed('feed_sequence_to_tensor', 'a SequenceProto file fed to a tensor input', seq)
    mp = helper.make_map('feed_in', INT64, [1, 2], helper.make_sequence(
        'v', onnx.SequenceProto.TENSOR, [numpy_helper.from_array(X3), numpy_helper.from_array(X3)]))
    yield bad_feed('feed_map_to_tensor', 'a MapProto file fed to a tensor input', mp)
    yield bad_feed('feed_optional_empty_to_tensor', 'an empty OptionalProto fed to a tensor input',
                   onnx.OptionalProto(name='feed_in', elem_type=onnx.OptionalProto.TENSOR))
    yield bad_feed('feed_raw_short', 'a [2, 3] float feed with 4 bytes of raw_data',
                   TensorProto(name='feed_in', data_type=FLOAT, dims=[2, 3], raw_data=b'\0' * 4))
    yield bad_feed('feed_raw_long', 'a [2, 3] float feed with 28 bytes of raw_data',
                   TensorProto(name='feed_in', data_type=FLOAT, dims=[2, 3], raw_data=b'\0' * 28))
    yield bad_feed('feed_data_type_999', 'a feed whose data_type is 999',
                   TensorProto(name='feed_in', data_type=999, dims=[2, 3], raw_data=b'\0' * 24))
    rng = np.random.default_rng(99)
    yield bad_feed('feed_garbage', 'a feed file of 512 random bytes', rng.integers(0, 256, 512, np.uint8).tobytes())
    yield bad_feed('feed_empty_file', 'a zero-byte feed file (a TensorProto of type UNDEFINED)', b'')

    sym = ('n', 'm')
    yield bad_feed('feed_dims_overflow', 'a feed with dims [2^40, 2^40] and no data (input dims symbolic)',
                   TensorProto(name='feed_in', data_type=FLOAT, dims=[2**40, 2**40]), sym)
    yield bad_feed('feed_dims_wrap_to_zero', 'a feed with dims [2^32, 2^32] and no data (2^64 wraps to 0)',
                   TensorProto(name='feed_in', data_type=FLOAT, dims=[2**32, 2**32], raw_data=b''), sym)
    yield bad_feed('feed_dims_negative', 'a feed with dims [-1, 3]',
                   TensorProto(name='feed_in', data_type=FLOAT, dims=[-1, 3], raw_data=b''), sym)

    for name, loc in (('feed_external_etc_passwd', '/etc/passwd'), ('feed_external_dotdot', f'../{CONTROL}/w.bin')):
        t = ext_tensor('feed_in', [('location', loc), ('length', '16')], dims=(4,))
        yield bad_feed(name, f"a feed TensorProto whose data is external at '{loc}'", t, ('n',),
                       subs=('feed_in', 'external'))

    yield bad_feed('feed_npy_huge_shape', 'a .npy claiming shape (2^31, 2^31) with 12 bytes of data',
                   npy_bytes('<f4', (2**31, 2**31), b'\0' * 12), sym, 'npy')
    # 16 GiB is small enough to allocate, so the length has to be checked before the tensor is made.
    yield bad_feed('feed_npy_16gib_shape', 'a .npy claiming shape (2^32,) float (16 GiB) with 12 bytes of data',
                   npy_bytes('<f4', (2**32,), b'\0' * 12), ('n',), 'npy')
    yield bad_feed('feed_raw_16gib_dims', 'a feed with dims [2^32] float (16 GiB) and 4 bytes of raw_data',
                   TensorProto(name='feed_in', data_type=FLOAT, dims=[2**32], raw_data=b'\0' * 4), ('n',))
    c = Case('feed_string_huge_dims', 'feeds', 'a string feed with dims [2^32] and one string')
    c.model(make(graph([node('Identity', ['feed_in'], ['y'])], [vi('feed_in', STRING, ['n'])],
                       [vi('y', STRING, ['n'])])))
    c.input('feed_in', TensorProto(name='feed_in', data_type=STRING, dims=[2**32], string_data=[b'a']))
    c.error('feed_in')
    yield c
    yield bad_feed('feed_npy_truncated', 'a .npy of shape (2, 3) with 8 bytes of data',
                   npy_bytes('<f4', (2, 3), b'\0' * 8), sym, 'npy')
    yield bad_feed('feed_npy_bad_header', 'a .npy whose header is not a dict literal',
                   npy_bytes('', (), b'\0' * 24, header="garbage{{{ 'descr':"), sym, 'npy')
    yield bad_feed('feed_npy_object_dtype', 'a .npy of dtype object (a pickle: must never be loaded)',
                   npy_bytes('|O', (2, 3), pickle.dumps([1.0] * 6)), sym, 'npy')
    yield bad_feed('feed_npy_negative_shape', 'a .npy claiming shape (-1, 3)',
                   npy_bytes('<f4', (-1, 3), b'\0' * 12), sym, 'npy')

    # Valid .npy variants: a clean error naming the unsupported layout would also be acceptable.
    c = feed_case('feed_npy_fortran_order', 'a valid column-major (fortran_order) .npy feed', sym)
    c.input('feed_in', npy_bytes('<f4', (2, 3), X23.tobytes(order='F'), fortran=True), 'npy')
    c.error('fortran', or_ok=True, outputs=[-X23])
    yield c
    c = feed_case('feed_npy_big_endian', "a valid big-endian ('>f4') .npy feed", sym)
    c.input('feed_in', npy_bytes('>f4', (2, 3), X23.astype('>f4').tobytes()), 'npy')
    c.error('endian', '>f4', or_ok=True, outputs=[-X23])
    yield c

    c = Case('feed_optional_empty_ok', 'feeds', 'an empty OptionalProto fed to an optional(tensor(float)) input '
             '(valid: OptionalHasElement is false)')
    opt = helper.make_value_info('opt_in', helper.make_optional_type_proto(helper.make_tensor_type_proto(FLOAT, [3])))
    c.model(make(graph([node('OptionalHasElement', ['opt_in'], ['y'])], [opt], [vi('y', BOOL, [])])))
    c.input('opt_in', onnx.OptionalProto(name='opt_in', elem_type=onnx.OptionalProto.TENSOR))
    c.ok(np.array(False))
    yield c

    c = feed_case('feed_missing_file', 'the feed file does not exist')
    c.feeds = [['feed_in', 'does_not_exist.pb']]
    c.error('does_not_exist')
    yield c

    c = feed_case('feed_extra_name', "a feed for 'ghost_feed', which is not a graph input")
    c.files['extra.pb'] = numpy_helper.from_array(X23).SerializeToString()
    c.feeds = [['feed_in', 'extra.pb'], ['ghost_feed', 'extra.pb']]
    c.error('ghost_feed')
    yield c

    c = Case('feed_empty_topk_k', 'feeds', "TopK's K fed as an empty tensor (must hold one value)")
    op1(c, 'TopK', [Feed('x', X3), Feed('k_feed', np.zeros(0, np.int64), ['kd'])],
        [('v', FLOAT, ['k']), ('i', INT64, ['k'])])
    c.error('k_feed', c.name)
    yield c

    c = Case('feed_empty_reshape_shape', 'feeds', "Reshape of 6 elements to a shape fed as an empty tensor (a scalar)")
    op1(c, 'Reshape', [Feed('x', np.arange(6, dtype=np.float32)), Feed('shape_feed', np.zeros(0, np.int64), ['sd'])],
        [('y', FLOAT, [])])
    c.error('shape_feed', c.name)
    yield c

    # (A TensorProto file fed to a sequence input is not a case: protobuf is not self-describing, and its bytes
    # also parse as a valid, empty SequenceProto.)
    c = Case('feed_sequence_wrong_elem_type', 'feeds', "a sequence of int32 tensors fed to the seq(float) input "
             "'seq_feed'")
    c.model(make(graph([node('SequenceLength', ['seq_feed'], ['y'])], [seq_vi('seq_feed', FLOAT, ['n'])],
                       [vi('y', INT64, [])])))
    c.input('seq_feed', helper.make_sequence('seq_feed', onnx.SequenceProto.TENSOR,
                                             [numpy_helper.from_array(X3.astype(np.int32))] * 2))
    c.error('seq_feed')
    yield c

    c = Case('feed_sequence_mixed_types', 'feeds', "a sequence of a float and an int32 tensor fed to seq(float)")
    c.model(make(graph([node('SequenceLength', ['seq_feed'], ['y'])], [seq_vi('seq_feed', FLOAT, ['n'])],
                       [vi('y', INT64, [])])))
    mixed = [numpy_helper.from_array(X3), numpy_helper.from_array(X3.astype(np.int32))]
    c.input('seq_feed', helper.make_sequence('seq_feed', onnx.SequenceProto.TENSOR, mixed))
    c.error('seq_feed')
    yield c


# ---------------------------------------------------------------------------------------------------------

CATEGORIES = [wire_cases, external_data_cases, ir_structure_cases, attributes_cases, shapes_sizes_cases,
              integers_cases, control_flow_cases, feeds_cases]


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: make_corpus.py OUTDIR')
    outdir = os.path.abspath(sys.argv[1])
    if os.path.exists(outdir):
        # Only a folder this script wrote is wiped; anything else is left alone.
        if os.listdir(outdir) and not os.path.exists(os.path.join(outdir, MARKER)):
            sys.exit(f'make_corpus.py: {outdir} exists and is not a hostile corpus; refusing to overwrite it')
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    open(os.path.join(outdir, MARKER), 'w').close()
    seen, counts = set(), {}
    for gen in CATEGORIES:
        for c in gen(outdir):
            assert c.name not in seen, f'duplicate case name {c.name}'
            assert c.expect is not None, f'case {c.name} has no expectation'
            seen.add(c.name)
            c.write(outdir)
            counts[c.category] = counts.get(c.category, 0) + 1
    print(f'make_corpus.py: {len(seen)} cases in {outdir}: '
          + ', '.join(f'{k} {v}' for k, v in counts.items()))


if __name__ == '__main__':
    main()
