"""The objects onyx.load returns: a checked model as plain Python data.

Tensors (initializers, tensor attributes) are read-only numpy arrays, viewing the model's memory where their
element type allows (see the package docstring for how types numpy lacks are shown).
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union


@dataclass
class ValueInfo:
    """A graph input or output: its name, its type string ('tensor(float)', 'seq(tensor(int64))', ...) and its
    shape (ints for static dims, strings for symbolic ones, None for unknown ones; empty when unknown or not a
    tensor), as onnxruntime's NodeArg shows them."""
    name: str
    type: str
    shape: List[Union[int, str, None]]


@dataclass
class AttributeRef:
    """An attribute of a node inside a function that takes the caller's attribute of this name."""
    name: str


@dataclass
class SparseTensor:
    values: Any
    indices: Any
    dims: List[int]


@dataclass
class Node:
    """A node: inputs and outputs are value names ('' where an optional one is omitted); attrs maps each
    attribute name to a Python value (float, int, str, numpy array, Graph, SparseTensor, a type string, or a
    list of those)."""
    name: str
    op_type: str
    domain: str
    inputs: List[str]
    outputs: List[str]
    attrs: Dict[str, Any] = field(default_factory=dict)
    doc_string: str = ""


@dataclass
class Graph:
    name: str
    doc_string: str
    inputs: List[ValueInfo]
    outputs: List[ValueInfo]
    nodes: List[Node]
    initializers: Dict[str, Any]
    sparse_initializers: Dict[str, SparseTensor]


@dataclass
class Function:
    """A model-local function."""
    domain: str
    name: str
    overload: str
    inputs: List[str]
    outputs: List[str]
    attributes: List[str]
    attribute_defaults: Dict[str, Any]
    nodes: List[Node]
    opset_import: Dict[str, int]
    doc_string: str = ""


@dataclass
class Model:
    """A model: opset_import maps each domain ('' is the default ONNX domain) to its version."""
    ir_version: int
    opset_import: Dict[str, int]
    producer_name: str
    producer_version: str
    domain: str
    model_version: int
    doc_string: str
    metadata: Dict[str, str]
    graph: Graph
    functions: List[Function]

