# Helpers of the onyx Python package tests: small models built with onnx.helper, and where the ONNX backend
# test data lies.
import pathlib

import numpy as np  # noqa: F401 (re-exported for the tests)
from onnx import TensorProto, TypeProto, helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
F = TensorProto.FLOAT
DEBIAN_NODE_TESTS = pathlib.Path("/usr/include/onnx/backend/test/data/node")
SHARED_NODE_TESTS = ROOT.parent / "shared" / "onnx-tests" / "node"


def tensor_type(elem, shape=None):
    """A TypeProto of a tensor; shape None leaves the rank unknown; a dim may be an int, a str or None."""
    return helper.make_tensor_type_proto(elem, shape)


def value(name, type_proto):
    return helper.make_value_info(name, type_proto)


def make_model(nodes, inputs, outputs, initializers=(), opset=17, ir_version=8, extra_opsets=(), metadata=None,
               **fields):
    """The bytes of a one-graph model; inputs/outputs are (name, TypeProto) pairs; other keywords are ModelProto
    fields (producer_name, doc_string, ...) or graph_name / graph_doc."""
    graph = helper.make_graph(nodes, fields.pop("graph_name", "g"), [value(n, t) for n, t in inputs],
                              [value(n, t) for n, t in outputs], initializer=list(initializers),
                              doc_string=fields.pop("graph_doc", None))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, **fields)
    model.ir_version = ir_version
    if metadata:
        helper.set_model_props(model, metadata)
    return model.SerializeToString()


def map_type(key, value_type):
    """A map TypeProto (onnx 1.12's helper has no make_map_type_proto)."""
    t = TypeProto()
    t.map_type.key_type = key
    t.map_type.value_type.CopyFrom(value_type)
    return t
