"""The Python-level classes of onnxruntime's API over onyx's engine, under the module name onnxruntime code imports
them from: InferenceSession, IOBinding, OrtValue, SparseTensor, OrtDevice and check_and_normalize_provider_args.
Each wraps the engine's C-level object of the same role (InferenceSession._sess, IOBinding._iobinding,
OrtValue._ortvalue, SparseTensor._tensor, OrtDevice._ort_device), as onnxruntime's do."""
import collections.abc
import json
import os
import threading
import time
import warnings

import numpy as np

from .. import _onyx as C
from .._errors import Fail, InvalidArgument
from .._options import (ALL_PROVIDERS, CPU_MEMORY_INFO, CPU_PROVIDER, ExecutionMode, GraphOptimizationLevel,
                        ModelMetadata, NodeArg, SessionOptions, get_available_providers, onyx_level)


def check_and_normalize_provider_args(providers, provider_options, available_provider_names):
    """onnxruntime's rules for the providers argument: names or (name, options dict) pairs, or names with a
    parallel provider_options list. Returns (names, options) with options as {str: str} dicts. A name given twice
    is kept once, with a warning; a name not in available_provider_names is kept with a warning. Raises ValueError
    for malformed arguments."""
    if providers is None:
        return [], []
    provider_name_to_options = collections.OrderedDict()

    def set_provider_options(name, options):
        if name not in available_provider_names:
            warnings.warn(f"Specified provider '{name}' is not in available provider names. "
                          f"Available providers: '{', '.join(available_provider_names)}'", stacklevel=4)
        if name in provider_name_to_options:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.", stacklevel=4)
            return
        provider_name_to_options[name] = {str(k): str(v) for k, v in options.items()}

    if not isinstance(providers, collections.abc.Sequence) or isinstance(providers, str):
        raise ValueError("'providers' should be a sequence.")
    if provider_options is not None:
        if not isinstance(provider_options, collections.abc.Sequence):
            raise ValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise ValueError("Only string values for 'providers' are supported if 'provider_options' is given.")
        if not all(isinstance(o, dict) for o in provider_options):
            raise ValueError("'provider_options' values must be dicts.")
        for name, options in zip(providers, provider_options):
            set_provider_options(name, options)
    else:
        for provider in providers:
            if isinstance(provider, str):
                set_provider_options(provider, {})
            elif (isinstance(provider, tuple) and len(provider) == 2 and isinstance(provider[0], str)
                  and isinstance(provider[1], dict)):
                set_provider_options(provider[0], provider[1])
            else:
                raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
    return list(provider_name_to_options.keys()), list(provider_name_to_options.values())


def _session_providers(providers, provider_options):
    """The providers a session runs with: onnxruntime's normalization, then an unknown name is an error
    ("Unknown Provider Type"), a provider onyx lacks is dropped with a warning, and the CPU provider is used when
    none is left."""
    if isinstance(providers, str):
        raise ValueError("'providers' must be a list of provider names or (name, options) tuples, not a str")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warnings below say what happens to each name
        names, options = check_and_normalize_provider_args(providers, provider_options, get_available_providers())
    kept = []
    for name, opts in zip(names, options):
        if name not in ALL_PROVIDERS:
            raise Fail(f"Unknown Provider Type: {name}")
        if name != CPU_PROVIDER:
            warnings.warn(f"Specified provider '{name}' is not in available provider names. "
                          f"Available providers: '{CPU_PROVIDER}'", stacklevel=3)
            continue
        kept.append((name, opts))
    if not kept:
        return [CPU_PROVIDER], [{}]
    return [n for n, _ in kept], [o for _, o in kept]


class _Profile:
    """The events of a profiled session, written as onnxruntime writes them: a JSON array with one complete event
    ('ph': 'X', microsecond 'ts' since profiling began and 'dur') per line, readable by chrome://tracing and
    Perfetto."""

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
            args = {"op_name": op_type, "provider": CPU_PROVIDER}
            if not graph.startswith("main graph"):
                args["graph"] = graph
            events.append(self._event("Node", f"{name}_kernel_time", begin_ns + start, dur, args))
        with self.lock:
            self.events.extend(events)

    def write(self):
        path = f"{self.prefix}_{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        with self.lock, open(path, "w") as f:
            f.write("[\n")
            f.write(",\n".join(json.dumps(e) for e in self.events))
            f.write("\n]\n")
        return path


# Keys of a model's "ort_config" metadata (read when ORT_LOAD_CONFIG_FROM_MODEL=1) and how each is read.
_MODEL_CONFIG_KEYS = {
    "intra_op_num_threads": int, "inter_op_num_threads": int, "log_severity_level": int,
    "log_verbosity_level": int, "enable_profiling": bool, "enable_mem_pattern": bool, "enable_cpu_mem_arena": bool,
    "use_deterministic_compute": bool, "optimized_model_filepath": str, "profile_file_prefix": str, "logid": str,
    "graph_optimization_level": GraphOptimizationLevel, "execution_mode": ExecutionMode,
}


def _apply_model_config(options, metadata, label):
    """Session options stored in the model (metadata key 'ort_config': {"session_options": {...}}) over `options`,
    as onnxruntime applies them when ORT_LOAD_CONFIG_FROM_MODEL is 1. Returns whether the model had any."""
    text = metadata.get("ort_config")
    if text is None:
        return False
    try:
        config = json.loads(text)
    except ValueError as e:
        raise InvalidArgument(f"{label}: metadata 'ort_config' is not JSON: {e}") from None
    if not isinstance(config, dict) or not isinstance(config.get("session_options", {}), dict):
        raise InvalidArgument(f"{label}: metadata 'ort_config' must be an object with a 'session_options' object")
    for key, value in config.get("session_options", {}).items():
        kind = _MODEL_CONFIG_KEYS.get(key)
        if kind is None:
            raise InvalidArgument(f"{label}: metadata 'ort_config': unknown session option '{key}' (known: "
                                  f"{', '.join(sorted(_MODEL_CONFIG_KEYS))})")
        try:
            setattr(options, key, kind(value))
        except (TypeError, ValueError):
            raise InvalidArgument(f"{label}: metadata 'ort_config': session option '{key}' has the bad value "
                                  f"{value!r}") from None
    return True


class EpAssignedNode:
    """A node of a session's graph: domain, op_type and name (as the session runs it, after optimization)."""

    __slots__ = ("domain", "op_type", "name")

    def __init__(self, domain, op_type, name):
        self.domain, self.op_type, self.name = domain, op_type, name

    def __repr__(self):
        return f"EpAssignedNode(domain='{self.domain}', op_type='{self.op_type}', name='{self.name}')"


class EpAssignedSubgraph:
    """Nodes an execution provider runs: onyx's CPU provider runs every node, each as its own subgraph."""

    def __init__(self, ep_name, nodes):
        self.ep_name = ep_name
        self._nodes = list(nodes)

    def get_nodes(self):
        return list(self._nodes)


def _c_value(value):
    """The engine's value for a feed: OrtValues as their C object; numpy void arrays (fixed-size bytes) as bytes
    objects, which string inputs take."""
    if isinstance(value, OrtValue):
        return value._ortvalue
    if isinstance(value, np.ndarray) and value.dtype.kind == "V":
        return np.array([bytes(e) for e in value.ravel()], dtype=object).reshape(value.shape)
    return value


class InferenceSession:
    """A loaded model, ready to run: onnxruntime's InferenceSession.

    path_or_bytes: a file path (str or os.PathLike) or the model's bytes. sess_options: SessionOptions.
    providers: onyx has only 'CPUExecutionProvider'; other provider names onnxruntime knows are ignored with a
    warning, as onnxruntime does with providers it was not built with, and unknown names are an error.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise TypeError(f"sess_options must be an onyx.SessionOptions, not {type(sess_options).__name__}")
        if isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path, self._model_bytes = os.fspath(path_or_bytes), None
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path, self._model_bytes = None, path_or_bytes
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        self._read_config_from_model = os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") == "1"
        self._providers, self._provider_options = _session_providers(providers, provider_options)
        self._sess_options = (sess_options or SessionOptions())._copy()
        self._create_session()

    def _model(self):
        return self._model_path if self._model_path is not None else self._model_bytes

    def _create_session(self):
        options = self._sess_options
        began = C._steady_ns()
        self._sess = self._make_engine_session(options)
        self._model_meta = ModelMetadata(**self._sess.metadata())
        if self._read_config_from_model:
            label = self._model_path or "model"
            if _apply_model_config(options, self._model_meta.custom_metadata_map, label):
                self._sess = self._make_engine_session(options)
        self._inputs_meta = [NodeArg(*t) for t in self._sess.inputs()]
        self._outputs_meta = [NodeArg(*t) for t in self._sess.outputs()]
        self._input_names = {i.name for i in self._inputs_meta}
        self._overridable_initializers = [NodeArg(*t) for t in self._sess.overridable_initializers()]
        self._profile = None
        self._profiling_start_ns = 0
        if options.enable_profiling:
            self._profiling_start_ns = began
            self._profile = _Profile(options.profile_file_prefix, began)
            self._profile.add_session("session_initialization", began, C._steady_ns())
        if options.optimized_model_filepath:
            config = options._config
            external = config.get("session.optimized_model_external_initializers_file_name", "")
            try:
                min_size = int(config.get("session.optimized_model_external_initializers_min_size_in_bytes", "1024"))
            except ValueError:
                raise InvalidArgument("session.optimized_model_external_initializers_min_size_in_bytes must be an "
                                      "integer") from None
            C._optimize(self._model(), os.fspath(options.optimized_model_filepath),
                        onyx_level(options.graph_optimization_level), external, min_size, True)

    def _make_engine_session(self, options):
        return C._Session(self._model(), int(options.intra_op_num_threads), onyx_level(options.graph_optimization_level),
                          int(options.log_severity_level), bool(options.accept_newer_versions),
                          int(options.memory_limit_mb), extra=options._engine_extra())

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
        """Re-creates the session with these providers (onyx runs the CPU provider whatever remains)."""
        self._providers, self._provider_options = _session_providers(providers, provider_options)
        self._create_session()

    def disable_fallback(self):
        """Accepted for compatibility: with only the CPU provider there is nothing to fall back to."""

    def enable_fallback(self):
        """Accepted for compatibility: with only the CPU provider there is nothing to fall back to."""

    def get_input_memory_infos(self):
        """Where each input is read from: the CPU's memory, for every input."""
        return [CPU_MEMORY_INFO for _ in self._inputs_meta]

    def get_output_memory_infos(self):
        return [CPU_MEMORY_INFO for _ in self._outputs_meta]

    def get_input_epdevices(self):
        """The plugin execution-provider device of each input: None (onyx has no plugin providers)."""
        return [None for _ in self._inputs_meta]

    def get_tuning_results(self):
        """onyx has no tunable kernels: an empty list."""
        return []

    def set_tuning_results(self, results, *, error_on_invalid=False):
        for entry in results:
            ep = entry.get("ep") if isinstance(entry, dict) else None
            if error_on_invalid:
                raise Fail(f"Cannot find execution provider {ep}: onyx has no tunable kernels")

    def get_provider_graph_assignment_info(self):
        """The nodes each provider runs, when the session was created with the config entry
        'session.record_ep_graph_assignment_info' set to '1': the CPU provider runs every node of the optimized
        graph, each listed as its own subgraph."""
        if self._sess_options._config.get("session.record_ep_graph_assignment_info") != "1":
            raise Fail("Session configuration entry 'session.record_ep_graph_assignment_info' must be set to \"1\" "
                       "to retrieve EP graph assignment information.")
        return [EpAssignedSubgraph(CPU_PROVIDER, [EpAssignedNode(*n)]) for n in self._sess.nodes()]

    def _check_feed(self, input_feed):
        if not isinstance(input_feed, dict):
            try:
                input_feed = dict(input_feed)
            except (TypeError, ValueError):
                raise TypeError(f"input_feed must be a dict of input name to value, not {type(input_feed).__name__}")
        missing = [i.name for i in self._inputs_meta if i.name not in input_feed]
        if missing:
            raise InvalidArgument(f"Required inputs ({missing}) are missing from input feed ({list(input_feed)}).")
        return input_feed

    @staticmethod
    def _check_output_names(output_names):
        names = [] if not output_names else list(output_names)
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"output names must be str, got {type(n).__name__}")
        return names

    @staticmethod
    def _check_run_options(run_options):
        if run_options is not None and not isinstance(run_options, C.RunOptions):
            raise TypeError(f"run_options must be an onyx.RunOptions, not {type(run_options).__name__}")

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model. output_names: the outputs to return (None or empty: all, in the model's order).
        input_feed: {input name: value}, values numpy arrays (or what converts to them), lists for sequences,
        dicts for maps, None for empty optionals, or OrtValues. Returns the outputs' values in a list (numpy arrays
        for tensors, dense for sparse ones, lists for sequences, dicts for maps, None for empty optionals). The GIL
        is released while the model runs."""
        names = self._check_output_names(output_names)
        input_feed = self._check_feed(input_feed)
        self._check_run_options(run_options)
        feeds = {k: _c_value(v) for k, v in input_feed.items()}
        profile = self._profile
        outputs, timings, began, ended = self._sess.run(names, feeds, run_options, profile is not None)
        if profile is not None:
            profile.add_run(timings, began, ended)
        return outputs

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """Runs the model on one of onyx's threads and returns at once; when the run ends, that thread calls
        callback(outputs, user_data, error): outputs as run() returns them (None on failure) and error '' or the
        failure's message."""
        names = self._check_output_names(output_names)
        input_feed = self._check_feed(input_feed)
        self._check_run_options(run_options)
        if not callable(callback):
            raise TypeError("run_async: callback must be callable")
        feeds = {k: _c_value(v) for k, v in input_feed.items()}
        self._sess.run_async(names, feeds, callback, user_data, run_options)

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """Runs the model on OrtValues ({name: OrtValue}) and returns the outputs as OrtValues, sparse outputs as
        sparse OrtValues."""
        names = self._check_output_names(output_names)
        self._check_run_options(run_options)
        feeds = {}
        for name, value in input_dict_ort_values.items():
            if not isinstance(value, OrtValue):
                raise TypeError(f"run_with_ort_values: '{name}' must be an OrtValue, not {type(value).__name__}")
            feeds[name] = value._ortvalue
        result = self._sess.run_with_ort_values(feeds, names, run_options)
        return [OrtValue(v) for v in result]

    def run_with_ortvaluevector(self, run_options, feed_names, feeds, fetch_names, fetches, fetch_devices):
        """run_with_ort_values over parallel lists: `feeds` an OrtValueVector of the values of `feed_names`; the
        outputs `fetch_names` are appended to `fetches` (an OrtValueVector)."""
        result = self._sess.run_with_ort_values(dict(zip(feed_names, feeds)), list(fetch_names), run_options)
        for v in result:
            fetches.push_back(v)

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        """Runs the model on the inputs and outputs bound in `iobinding` (see IOBinding)."""
        self._check_run_options(run_options)
        self._sess.run_with_iobinding(iobinding._iobinding, run_options)

    def end_profiling(self):
        """Writes the profile and stops profiling; returns the file's name ('' when profiling is off)."""
        if self._profile is None:
            return ""
        profile, self._profile = self._profile, None
        return profile.write()

    def get_profiling_start_time_ns(self):
        """When profiling began, in ns on the clock of time.monotonic_ns() (0 when profiling is off)."""
        return self._profiling_start_ns


def _c_device(device_type, device_id, vendor_id=-1):
    """The engine's OrtDevice for onnxruntime's device names. Devices other than 'cpu' can be described (as
    onnxruntime allows without them); onyx refuses to place a value on one."""
    if not isinstance(device_type, str):
        raise TypeError(f"device type must be a str such as 'cpu', not {type(device_type).__name__}")
    kinds = {"cpu": C.OrtDevice.cpu, "cuda": C.OrtDevice.cuda, "gpu": C.OrtDevice.cuda, "dml": C.OrtDevice.dml,
             "npu": C.OrtDevice.npu, "fpga": C.OrtDevice.fpga}
    kind = kinds.get(device_type.lower())
    if kind is None:
        raise ValueError(f"Unsupported device type: {device_type}")
    return C.OrtDevice(kind(), C.OrtDevice.default_memory(), int(device_id), max(int(vendor_id), 0))


class OrtDevice:
    """A device: onyx's values all live on 'cpu'."""

    def __init__(self, c_ort_device):
        if not isinstance(c_ort_device, C.OrtDevice):
            raise ValueError("OrtDevice wraps the engine's OrtDevice; use OrtDevice.make('cpu', 0)")
        self._ort_device = c_ort_device

    @staticmethod
    def make(ort_device_name, device_id, vendor_id=-1):
        return OrtDevice(_c_device(ort_device_name, device_id, vendor_id))

    def _get_c_device(self):
        return self._ort_device

    def device_id(self):
        return self._ort_device.device_id()

    def device_type(self):
        return self._ort_device.device_type()

    def device_vendor_id(self):
        return self._ort_device.device_vendor_id()

    def device_mem_type(self):
        return self._ort_device.device_mem_type()


class SparseTensor:
    """A sparse tensor in COO, CSR or block-sparse form, on the CPU. The arrays it returns are read-only views of
    its buffers."""

    def __init__(self, sparse_tensor):
        if not isinstance(sparse_tensor, C.SparseTensor):
            raise TypeError("SparseTensor wraps the engine's SparseTensor; use sparse_coo_from_numpy or "
                            "sparse_csr_from_numpy")
        self._tensor = sparse_tensor

    def _get_c_tensor(self):
        return self._tensor

    @staticmethod
    def sparse_coo_from_numpy(dense_shape, values, coo_indices, ort_device):
        """COO: `values` [NNZ] at `coo_indices`, int64, either linear [NNZ] or coordinates [NNZ, rank]."""
        return SparseTensor(C.SparseTensor.sparse_coo_from_numpy(dense_shape, values, coo_indices,
                                                                 ort_device._get_c_device()))

    @staticmethod
    def sparse_csr_from_numpy(dense_shape, values, inner_indices, outer_indices, ort_device):
        """CSR of a 2-D tensor: `values` [NNZ], their columns `inner_indices` [NNZ] and the row starts
        `outer_indices` [rows + 1], all int64."""
        return SparseTensor(C.SparseTensor.sparse_csr_from_numpy(dense_shape, values, inner_indices, outer_indices,
                                                                 ort_device._get_c_device()))

    @staticmethod
    def sparse_block_sparse_from_numpy(dense_shape, values, indices, ort_device):
        """Block-sparse (onyx's addition to the Python API): `values` [blocks, block rows, block cols] and their
        block coordinates `indices` int32 [2, blocks]."""
        return SparseTensor(C.SparseTensor.sparse_block_sparse_from_numpy(dense_shape, values, indices,
                                                                          ort_device._get_c_device()))

    def values(self):
        return self._tensor.values()

    def as_coo_view(self):
        return self._tensor.as_coo_view()

    def as_csrc_view(self):
        return self._tensor.as_csrc_view()

    def as_blocksparse_view(self):
        return self._tensor.as_blocksparse_view()

    def to_cuda(self, ort_device):
        return SparseTensor(self._tensor.to_cuda(ort_device._get_c_device()))

    def to_dense(self):
        """The dense numpy array it stands for (onyx's addition)."""
        return self._tensor.to_dense()

    def format(self):
        return self._tensor.format()

    def dense_shape(self):
        return self._tensor.dense_shape()

    def data_type(self):
        return self._tensor.data_type()

    def device_name(self):
        return self._tensor.device_name()


class OrtValue:
    """A value (tensor, sparse tensor, sequence, map or optional) held by onyx's engine, on the CPU. One made from
    a numpy array views the array's memory where its layout allows (and keeps the array alive)."""

    def __init__(self, ortvalue, numpy_obj=None):
        if not isinstance(ortvalue, C.OrtValue):
            raise ValueError("`Provided ortvalue` needs to be of type `onyx._onyx.OrtValue`")
        self._ortvalue = ortvalue
        self._numpy_obj = numpy_obj  # the array an OrtValue views stays alive with it

    def _get_c_value(self):
        return self._ortvalue

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        return OrtValue(C.OrtValue.ortvalue_from_numpy(numpy_obj, _c_device(device_type, device_id, vendor_id)),
                        numpy_obj)

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data, onnx_element_type):
        """A tensor of ONNX element type `onnx_element_type` (an int of TensorProto.DataType) over the bytes of
        `data`, for types numpy lacks (bfloat16 from uint16, float8 from uint8)."""
        return OrtValue(C.OrtValue.ortvalue_from_numpy_with_onnx_type(data, int(onnx_element_type)), data)

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0, vendor_id=-1):
        """A zero-filled tensor; element_type a numpy type or an ONNX element type (int)."""
        return OrtValue(C.OrtValue.ortvalue_from_shape_and_type(list(shape), element_type,
                                                                _c_device(device_type, device_id, vendor_id)))

    @staticmethod
    def ort_value_from_sparse_tensor(sparse_tensor):
        return OrtValue(C.OrtValue.ort_value_from_sparse_tensor(sparse_tensor._get_c_tensor()))

    def as_sparse_tensor(self):
        return SparseTensor(self._ortvalue.as_sparse_tensor())

    def data_ptr(self):
        return self._ortvalue.data_ptr()

    def device_name(self):
        return self._ortvalue.device_name()

    def shape(self):
        return self._ortvalue.shape()

    def data_type(self):
        return self._ortvalue.data_type()

    def element_type(self):
        return self._ortvalue.element_type()

    def has_value(self):
        return self._ortvalue.has_value()

    def is_tensor(self):
        return self._ortvalue.is_tensor()

    def is_sparse_tensor(self):
        return self._ortvalue.is_sparse_tensor()

    def is_tensor_sequence(self):
        return self._ortvalue.is_tensor_sequence()

    def tensor_size_in_bytes(self):
        return self._ortvalue.tensor_size_in_bytes()

    def numpy(self):
        return self._ortvalue.numpy()

    def update_inplace(self, np_arr):
        self._ortvalue.update_inplace(np_arr)

    def to_dlpack(self):
        return self._ortvalue.to_dlpack()

    def __dlpack__(self, stream=None):
        return self._ortvalue.__dlpack__(stream)

    def __dlpack_device__(self):
        return self._ortvalue.__dlpack_device__()


class IOBinding:
    """Inputs and outputs bound to a session ahead of its runs (onnxruntime's IOBinding): inputs from numpy arrays,
    OrtValues or raw CPU memory, read in place where their layout allows; outputs into OrtValues or memory the
    caller gives, or left to onyx to allocate."""

    def __init__(self, session):
        self._iobinding = C.SessionIOBinding(session._sess)
        self._numpy_obj_references = {}

    def bind_cpu_input(self, name, arr_on_cpu):
        self._numpy_obj_references[name] = arr_on_cpu
        self._iobinding.bind_input(name, arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        self._iobinding.bind_input(name, _c_device(device_type, device_id), element_type, list(shape), buffer_ptr)

    def bind_ortvalue_input(self, name, ortvalue):
        self._iobinding.bind_ortvalue_input(name, ortvalue._ortvalue)

    def synchronize_inputs(self):
        self._iobinding.synchronize_inputs()

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        device = _c_device(device_type, device_id)
        if buffer_ptr is None:
            if element_type is not None or shape is not None:
                raise InvalidArgument(f"bind_output('{name}'): element_type and shape come with buffer_ptr")
            self._iobinding.bind_output(name, device)
        else:
            if element_type is None or shape is None:
                raise InvalidArgument(f"bind_output('{name}'): a buffer_ptr needs element_type and shape")
            self._iobinding.bind_output(name, device, element_type, list(shape), buffer_ptr)

    def bind_ortvalue_output(self, name, ortvalue):
        self._iobinding.bind_ortvalue_output(name, ortvalue._ortvalue)

    def synchronize_outputs(self):
        self._iobinding.synchronize_outputs()

    def get_outputs(self):
        return [OrtValue(v) for v in self._iobinding.get_outputs()]

    def get_outputs_as_ortvaluevector(self):
        return self._iobinding.get_outputs()

    def copy_outputs_to_cpu(self):
        return self._iobinding.copy_outputs_to_cpu()

    def clear_binding_inputs(self):
        self._iobinding.clear_binding_inputs()
        self._numpy_obj_references.clear()

    def clear_binding_outputs(self):
        self._iobinding.clear_binding_outputs()
