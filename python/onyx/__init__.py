"""onyx: ONNX models in Python, through onnxruntime's interface.

onyx's engine runs the model; the interface is onnxruntime's, so code written for onnxruntime runs with only
its import changed::

    import onyx as ort

    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    outputs = sess.run(None, {name: x})

Values
    Tensors are numpy arrays; sequences are lists; maps are dicts; an empty optional is None.
    An input array that is C-contiguous, aligned, in native byte order and of the input's element type is used
    in place (not copied) for the run. Outputs hand onyx's buffer to numpy when nothing else shares it (an
    output that is a model initializer, or that aliases an input, is copied), so outputs are always writable
    arrays of their own.

Element types
    float, double, float16 (numpy.float16), the int and uint types, bool, complex64/128: their numpy dtypes.
    string: numpy object arrays of str on output; str/bytes elements ('U', 'S' or object arrays) on input.
    Types numpy lacks come and go as integer arrays of the same shape:

    - bfloat16: uint16 holding the bit patterns;
    - float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0: uint8 holding the bit patterns;
    - int4, int2: int8, one element per byte (unpacked), values in [-8, 7] / [-2, 1];
    - uint4, uint2: uint8, one element per byte, values in [0, 15] / [0, 3];
    - float4e2m1: uint8, one 4-bit code per byte.

    An input of such a type accepts exactly that integer dtype (out-of-range values are an error).

Errors
    Every error is an OnyxError (a RuntimeError) carrying the engine's message; its subclasses have
    onnxruntime's names (InvalidArgument, Fail, NoSuchFile, InvalidGraph, ...), also importable from
    onyx.capi.onnxruntime_pybind11_state.

Threads
    The engine's OpenMP workers sleep while they wait (OMP_WAIT_POLICY=PASSIVE, set when onyx is imported): on
    a busy machine spinning workers slow every run badly. ONYX_SPIN_WAIT=1 keeps libgomp's own policy (spin
    about 3 ms, then sleep), faster for small models on an otherwise idle machine; an OMP_WAIT_POLICY or
    GOMP_SPINCOUNT already set is kept. libgomp reads the policy once, when it loads: with a module that loads it
    imported before onyx, set the variable before starting Python.

OrtValue, IOBinding, SparseTensor
    As onnxruntime's: OrtValue.ortvalue_from_numpy views the array (zero copy) where its layout allows;
    run_with_ort_values takes and returns OrtValues; an IOBinding binds inputs from numpy arrays, OrtValues or raw
    CPU pointers (read in place) and outputs to OrtValues or caller memory (the result is copied into it) or to
    onyx's own buffers. onyx has only the CPU device: other devices are an error. Inputs and outputs declared
    sparse_tensor(T) compute dense: a sparse OrtValue fed to one is expanded, and run_with_ort_values returns such
    an output as a COO SparseTensor of its nonzero elements (run() returns it dense).

Using onyx as onnxruntime
    onyx.install_onnxruntime_alias() makes `import onnxruntime` (and its submodules) load onyx in this process;
    `python3 -m onyx.onnxruntime_alias install` does it for every process of an environment, by writing a small
    `onnxruntime` package that says so (never done by default; `... uninstall` removes it).

Beyond onnxruntime
    onyx.load(path) inspects a model (inputs, outputs, nodes and their attributes, initializers as numpy;
    sparse initializers as onyx.ModelSparseTensor); onyx.check(path) raises with every checker message;
    onyx.optimize(path, out) saves an optimized model.

ONNX's toolkit (each also a command of the onyx CLI)
    onyx.parse(text) / onyx.to_text(model): the ONNX textual syntax to a model's bytes and back;
    onyx.convert_version(model, opset): the model at another opset of the default domain;
    onyx.infer_shapes(model), onyx.check_inferred_shapes(model): inferred types and shapes as value_info;
    onyx.extract_model(model, inputs, outputs), onyx.merge_models(a, b, io_map): sub-models and compositions;
    onyx.convert_float_to_float16(model): float32 weights and compute to float16;
    onyx.quantize_dynamic(in, out), onyx.quantize_static(in, out, calibration_data): int8 models.
    Models go in as a path, bytes or an onnx.ModelProto and come back as bytes (quantize writes `out`).
"""
import os

if os.environ.get("ONYX_SPIN_WAIT") != "1" and not {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} & os.environ.keys():
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # before the engine's module loads libgomp: see "Threads" above

from . import _onyx
from ._errors import (EngineError, EPFail, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, ModelLoaded,
                      NoModel, NoSuchFile, NotImplemented, OnyxError, RuntimeException)
from ._model import AttributeRef, Function, Graph, Model, Node, SparseTensor as ModelSparseTensor, ValueInfo
from ._onyx import OrtSparseFormat, OrtValueVector, RunOptions
from ._options import (HONOURED_SESSION_CONFIG_KEYS, ExecutionMode, ExecutionOrder, GraphOptimizationLevel,
                       ModelMetadata, NodeArg, OrtAllocatorType, OrtArenaCfg, OrtDeviceMemoryType, OrtMemoryInfo,
                       OrtMemoryInfoDeviceType, OrtMemType, SessionOptions, __version__,
                       create_and_register_allocator, create_and_register_allocator_v2, disable_telemetry_events,
                       enable_telemetry_events, get_all_providers, get_available_providers, get_build_info,
                       get_device, get_version_string, set_default_logger_severity, set_default_logger_verbosity,
                       set_seed)
from .capi.onnxruntime_inference_collection import (IOBinding, InferenceSession, OrtDevice, OrtValue, SparseTensor,
                                                    check_and_normalize_provider_args)
from .onnxruntime_alias import install_onnxruntime_alias
from ._float16 import convert_float_to_float16, float16_default_op_block_list
from ._model_tools import check_inferred_shapes, extract_model, infer_shapes, merge_models
from ._parse import parse, to_text
from ._quantize import quantize_dynamic, quantize_static
from ._version_convert import convert_version

from . import _options  # noqa: E402


def load(path):
    """The model at `path` (or in these bytes), checked, as an onyx.Model: inputs, outputs, nodes with their
    op_type/inputs/outputs/attrs, initializers as read-only numpy arrays, functions and metadata."""
    return _onyx._load(path)


def check(path):
    """Checks the model at `path` (or in these bytes) as `onyx check` does: raises InvalidGraph with every
    checker message (one per line), or Fail when a session could not bind or infer it; returns None when valid."""
    _onyx._check(path)


def optimize(path, out, level=GraphOptimizationLevel.ORT_ENABLE_ALL):
    """Saves the model at `path` to `out` with onyx's graph optimizations of `level` (a GraphOptimizationLevel)
    applied."""
    _onyx._optimize(path, os.fspath(out), _options.onyx_level(level), "", 1024)


__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode", "ExecutionOrder",
    "NodeArg", "ModelMetadata", "IOBinding", "OrtValue", "OrtValueVector", "SparseTensor", "OrtSparseFormat",
    "OrtDevice", "OrtMemoryInfo", "OrtArenaCfg", "OrtAllocatorType", "OrtMemType", "OrtDeviceMemoryType",
    "OrtMemoryInfoDeviceType", "check_and_normalize_provider_args", "get_available_providers", "get_all_providers",
    "get_build_info", "get_device", "get_version_string", "set_default_logger_severity",
    "set_default_logger_verbosity", "set_seed", "create_and_register_allocator", "create_and_register_allocator_v2",
    "enable_telemetry_events", "disable_telemetry_events", "HONOURED_SESSION_CONFIG_KEYS",
    "install_onnxruntime_alias", "load", "check", "optimize", "parse", "to_text", "convert_version", "infer_shapes",
    "check_inferred_shapes", "extract_model", "merge_models", "convert_float_to_float16",
    "float16_default_op_block_list", "quantize_dynamic", "quantize_static", "Model", "Graph", "Node", "Function", "ValueInfo",
    "ModelSparseTensor", "AttributeRef", "OnyxError", "Fail", "InvalidArgument", "NoSuchFile", "InvalidProtobuf",
    "InvalidGraph", "NoModel", "EngineError", "RuntimeException", "ModelLoaded", "EPFail",
]  # not NotImplemented: `from onyx import *` must not shadow the builtin constant
