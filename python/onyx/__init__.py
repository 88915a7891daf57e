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

Beyond onnxruntime
    onyx.load(path) inspects a model (inputs, outputs, nodes and their attributes, initializers as numpy);
    onyx.check(path) raises with every checker message; onyx.optimize(path, out) saves an optimized model.
"""
import enum
import json
import os
import threading
import time
import warnings

if os.environ.get("ONYX_SPIN_WAIT") != "1" and not {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} & os.environ.keys():
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # before the engine's module loads libgomp: see "Threads" above

from . import _onyx
from ._errors import (EngineError, EPFail, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, ModelLoaded,
                      NoModel, NoSuchFile, NotImplemented, OnyxError, RuntimeException)
from ._model import AttributeRef, Function, Graph, Model, Node, SparseTensor, ValueInfo
from ._onyx import RunOptions

__version__ = "0.1.0"

_CPU = "CPUExecutionProvider"


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels, onyx's 0 off, 1 basic, 2 extended (fusions) and 3 all (channels-last layout too)."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for compatibility: onyx runs the nodes of a graph one after another either way."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


def _onyx_level(level):
    try:
        level = GraphOptimizationLevel(level)
    except ValueError:
        raise InvalidArgument(f"graph_optimization_level {level!r} is not a GraphOptimizationLevel") from None
    return {GraphOptimizationLevel.ORT_DISABLE_ALL: 0, GraphOptimizationLevel.ORT_ENABLE_BASIC: 1,
            GraphOptimizationLevel.ORT_ENABLE_EXTENDED: 2}.get(level, 3)


class SessionOptions:
    """Options of a session, as onnxruntime's SessionOptions. intra_op_num_threads, graph_optimization_level
    and log_severity_level go to onyx's engine; enable_profiling writes a Chrome-trace JSON file (its name is
    what end_profiling() returns); optimized_model_filepath saves the optimized model there;
    accept_newer_versions (onyx's own, default False) loads a model of a newer IR version or opset than onyx
    implements, which is refused otherwise; memory_limit_mb (onyx's own, default 0: none) is the most MiB the
    session's tensors may hold at once: a run that would pass it raises onyx.Fail naming the node. The other attributes are accepted and kept for compatibility."""

    __slots__ = ("intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level", "execution_mode",
                 "enable_profiling", "profile_file_prefix", "log_severity_level", "log_verbosity_level", "logid",
                 "optimized_model_filepath", "enable_cpu_mem_arena", "enable_mem_pattern", "enable_mem_reuse",
                 "use_deterministic_compute", "accept_newer_versions", "memory_limit_mb", "_config")

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling = False
        self.profile_file_prefix = "onyx_profile"
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self.accept_newer_versions = False
        self.memory_limit_mb = 0
        self._config = {}

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        return self._config[key]

    def _copy(self):
        other = SessionOptions()
        for name in self.__slots__:
            setattr(other, name, getattr(self, name))
        other._config = dict(self._config)
        return other


class NodeArg:
    """An input or output of a session: name, type ('tensor(float)', 'seq(tensor(int64))',
    'map(int64,tensor(float))', 'optional(tensor(float))', ...) and shape (ints for static dims, strings for
    symbolic ones, None for unknown ones; [] when the rank is unknown or the value is not a tensor)."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, name, type, shape):
        self.name, self.type, self.shape = name, type, shape

    def __str__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape!r})"

    __repr__ = __str__


class ModelMetadata:
    """get_modelmeta(): the model's producer_name, domain, description (its doc_string), version, custom metadata
    and its graph's name and description."""

    def __init__(self, producer_name, graph_name, domain, description, graph_description, version,
                 custom_metadata_map):
        self.producer_name = producer_name
        self.graph_name = graph_name
        self.domain = domain
        self.description = description
        self.graph_description = graph_description
        self.version = version
        self.custom_metadata_map = custom_metadata_map


def get_available_providers():
    """onyx is a CPU engine: ['CPUExecutionProvider']."""
    return [_CPU]


def get_device():
    return "CPU"


def get_version_string():
    return __version__


_default_logger_severity = 2


def set_default_logger_severity(level):
    """Accepted for compatibility (0 verbose .. 4 fatal); onyx's engine does not log."""
    global _default_logger_severity
    if level not in (0, 1, 2, 3, 4):
        raise InvalidArgument(f"logger severity {level!r} is not in 0..4")
    _default_logger_severity = level


def _normalize_providers(providers, provider_options):
    """onnxruntime's rules: names or (name, options) pairs; an unavailable provider is ignored with a warning, and
    the CPU provider is used when none is left."""
    if providers is None:
        return [_CPU], [{}]
    if isinstance(providers, str):
        raise ValueError("'providers' must be a list of provider names or (name, options) tuples, not a str")
    providers = list(providers)
    if provider_options is not None and len(provider_options) != len(providers):
        raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
    names, options = [], []
    for i, p in enumerate(providers):
        if isinstance(p, str):
            name, opts = p, (provider_options[i] if provider_options is not None else {})
        elif isinstance(p, (tuple, list)) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], dict):
            if provider_options is not None:
                raise ValueError("'provider_options' cannot be given when 'providers' holds (name, options) tuples")
            name, opts = p
        else:
            raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
        if name in names:
            raise ValueError(f"'providers' has duplicate values ('{name}').")
        if name != _CPU:
            warnings.warn(f"Specified provider '{name}' is not in available provider names. "
                          f"Available providers: '{_CPU}'", stacklevel=3)
            continue
        names.append(name)
        options.append({str(k): str(v) for k, v in dict(opts).items()})
    if not names:
        return [_CPU], [{}]
    return names, options


class _Profile:
    """The events of a profiled session, written as a Chrome trace (chrome://tracing, Perfetto) in onnxruntime's
    layout: complete events ('ph': 'X') with microsecond 'ts' (since profiling began) and 'dur'."""

    def __init__(self, prefix, start_ns):
        self.prefix = prefix
        self.start_ns = start_ns
        self.events = []
        self.lock = threading.Lock()

    def _event(self, cat, name, begin_ns, dur_ns, args):
        return {"cat": cat, "pid": os.getpid(), "tid": threading.get_native_id(), "dur": dur_ns // 1000,
                "ts": (begin_ns - self.start_ns) // 1000, "ph": "X", "name": name, "args": args}

    def add_session(self, name, begin_ns, end_ns):
        with self.lock:
            self.events.append(self._event("Session", name, begin_ns, end_ns - begin_ns, {}))

    def add_run(self, timings, begin_ns, end_ns):
        events = [self._event("Session", "model_run", begin_ns, end_ns - begin_ns, {})]
        for graph, node, op_type, start, dur in timings:
            # The engine labels nodes "'name' (OpType)", or "#index (OpType)" when they have no name.
            suffix = f" ({op_type})"
            name = node[:-len(suffix)] if node.endswith(suffix) else node
            if len(name) >= 2 and name[0] == name[-1] == "'":
                name = name[1:-1]
            args = {"op_name": op_type, "provider": _CPU}
            if not graph.startswith("main graph"):
                args["graph"] = graph
            events.append(self._event("Node", f"{name}_kernel_time", begin_ns + start, dur, args))
        with self.lock:
            self.events.extend(events)

    def write(self):
        path = f"{self.prefix}_{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        with self.lock, open(path, "w") as f:
            json.dump(self.events, f, indent=0)
        return path


class InferenceSession:
    """A loaded model, ready to run: onnxruntime's InferenceSession.

    path_or_bytes: a file path (str or os.PathLike) or the model's bytes. sess_options: SessionOptions.
    providers: onyx has only 'CPUExecutionProvider'; other names are ignored with a warning, as onnxruntime
    does with providers it was not built with.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise TypeError(f"sess_options must be an onyx.SessionOptions, not {type(sess_options).__name__}")
        options = (sess_options or SessionOptions())._copy()
        self._providers, self._provider_options = _normalize_providers(providers, provider_options)
        level = _onyx_level(options.graph_optimization_level)
        if isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path, self._model_bytes = os.fspath(path_or_bytes), None
        else:
            self._model_path, self._model_bytes = None, path_or_bytes
        began = _onyx._steady_ns()
        self._sess = _onyx._Session(path_or_bytes, int(options.intra_op_num_threads), level,
                                    int(options.log_severity_level), bool(options.accept_newer_versions),
                                    int(options.memory_limit_mb))
        self._sess_options = options
        self._inputs_meta = [NodeArg(*t) for t in self._sess.inputs()]
        self._outputs_meta = [NodeArg(*t) for t in self._sess.outputs()]
        self._overridable_initializers = [NodeArg(*t) for t in self._sess.overridable_initializers()]
        self._model_meta = ModelMetadata(**self._sess.metadata())
        self._profile = None
        self._profiling_start_ns = 0
        if options.enable_profiling:
            self._profiling_start_ns = began
            self._profile = _Profile(options.profile_file_prefix, began)
            self._profile.add_session("session_initialization", began, _onyx._steady_ns())
        if options.optimized_model_filepath:
            optimize(path_or_bytes, options.optimized_model_filepath, options.graph_optimization_level)

    def get_inputs(self):
        """The inputs to feed (graph inputs without an initializer), as NodeArgs."""
        return list(self._inputs_meta)

    def get_outputs(self):
        return list(self._outputs_meta)

    def get_overridable_initializers(self):
        """Graph inputs that have an initializer: they may be fed, or left to their initializer."""
        return list(self._overridable_initializers)

    def get_modelmeta(self):
        return self._model_meta

    def get_session_options(self):
        """The options the session was created with (a copy: changing it does not change the session)."""
        return self._sess_options

    def get_providers(self):
        return list(self._providers)

    def get_provider_options(self):
        return {name: dict(opts) for name, opts in zip(self._providers, self._provider_options)}

    def set_providers(self, providers=None, provider_options=None):
        self._providers, self._provider_options = _normalize_providers(providers, provider_options)

    def disable_fallback(self):
        """Accepted for compatibility: with only the CPU provider there is nothing to fall back to."""

    def enable_fallback(self):
        """Accepted for compatibility: with only the CPU provider there is nothing to fall back to."""

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model. output_names: the outputs to return (None or empty: all, in the model's order).
        input_feed: {input name: value}. Returns the outputs' values in a list (numpy arrays for tensors, lists
        for sequences, dicts for maps, None for empty optionals). The GIL is released while the model runs."""
        names = [] if not output_names else list(output_names)
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"output names must be str, got {type(n).__name__}")
        if not isinstance(input_feed, dict):
            try:
                input_feed = dict(input_feed)
            except (TypeError, ValueError):
                raise TypeError(f"input_feed must be a dict of input name to value, not {type(input_feed).__name__}")
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise TypeError(f"run_options must be an onyx.RunOptions, not {type(run_options).__name__}")
        profile = self._profile
        outputs, timings, began, ended = self._sess.run(names, input_feed, run_options, profile is not None)
        if profile is not None:
            profile.add_run(timings, began, ended)
        return outputs

    def end_profiling(self):
        """Writes the profile and stops profiling; returns the file's name ('' when profiling is off)."""
        if self._profile is None:
            return ""
        profile, self._profile = self._profile, None
        return profile.write()

    def get_profiling_start_time_ns(self):
        """When profiling began, in ns on the clock of time.monotonic_ns() (0 when profiling is off)."""
        return self._profiling_start_ns


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
    _onyx._optimize(path, os.fspath(out), _onyx_level(level))


__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode", "NodeArg",
    "ModelMetadata", "get_available_providers", "get_device", "get_version_string", "set_default_logger_severity",
    "load", "check", "optimize", "Model", "Graph", "Node", "Function", "ValueInfo", "SparseTensor", "AttributeRef",
    "OnyxError", "Fail", "InvalidArgument", "NoSuchFile", "InvalidProtobuf", "InvalidGraph", "NoModel",
    "EngineError", "RuntimeException", "ModelLoaded", "EPFail",
]  # not NotImplemented: `from onyx import *` must not shadow the builtin constant
