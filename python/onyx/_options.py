"""The plain-data objects of onnxruntime's C-level module that need no engine: session options, enums, provider
names, memory descriptions and build information. onyx.capi.onnxruntime_pybind11_state exports them beside the
engine's own classes (OrtValue, SessionIOBinding, ...)."""
import enum
import os
import warnings

from ._errors import Fail, InvalidArgument

__version__ = "0.1.0"

CPU_PROVIDER = "CPUExecutionProvider"

# onnxruntime's provider names, highest priority first and the CPU provider last, as its get_all_providers() lists
# them: a name here that onyx lacks is ignored with a warning; a name not here is an error.
ALL_PROVIDERS = [
    "TensorrtExecutionProvider", "CUDAExecutionProvider", "MIGraphXExecutionProvider", "ROCMExecutionProvider",
    "OpenVINOExecutionProvider", "DnnlExecutionProvider", "VitisAIExecutionProvider", "QNNExecutionProvider",
    "NnapiExecutionProvider", "VSINPUExecutionProvider", "JsExecutionProvider", "CoreMLExecutionProvider",
    "ArmNNExecutionProvider", "ACLExecutionProvider", "DmlExecutionProvider", "RknpuExecutionProvider",
    "WebNNExecutionProvider", "WebGpuExecutionProvider", "XnnpackExecutionProvider", "CANNExecutionProvider",
    "AzureExecutionProvider", CPU_PROVIDER,
]

# The session config keys (add_session_config_entry) that change what onyx does. Any other key is kept and
# readable with get_session_config_entry, and has no effect.
HONOURED_SESSION_CONFIG_KEYS = {
    "session.optimized_model_external_initializers_file_name":
        "with optimized_model_filepath: initializers go to this file, beside the optimized model",
    "session.optimized_model_external_initializers_min_size_in_bytes":
        "with the above: initializers smaller than this stay inline (default 1024)",
    "session.record_ep_graph_assignment_info":
        "'1': get_provider_graph_assignment_info() lists the nodes the session runs",
}


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels, onyx's 0 off, 1 basic, 2 extended (fusions) and 3 all (channels-last layout too)."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for compatibility: onyx runs the nodes of a graph one after another either way."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """Accepted for compatibility: onyx keeps its own topological order."""
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


class OrtDeviceMemoryType(enum.IntEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtMemoryInfoDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


def onyx_level(level):
    """The engine's optimization level (0-3) for a GraphOptimizationLevel."""
    try:
        level = GraphOptimizationLevel(level)
    except ValueError:
        raise InvalidArgument(f"graph_optimization_level {level!r} is not a GraphOptimizationLevel") from None
    return {GraphOptimizationLevel.ORT_DISABLE_ALL: 0, GraphOptimizationLevel.ORT_ENABLE_BASIC: 1,
            GraphOptimizationLevel.ORT_ENABLE_EXTENDED: 2}.get(level, 3)


class OrtMemoryInfo:
    """Where a value lives: onyx has one place, the CPU's memory; other devices are refused."""

    __slots__ = ("name", "allocator_type", "device_id", "mem_type", "device_mem_type", "device_vendor_id",
                 "alignment")

    def __init__(self, name, allocator_type, device_id, mem_type):
        self.name = str(name)
        self.allocator_type = OrtAllocatorType(allocator_type)
        self.device_id = int(device_id)
        self.mem_type = OrtMemType(mem_type)
        self.device_mem_type = OrtDeviceMemoryType.DEFAULT
        self.device_vendor_id = 0
        self.alignment = 0

    @staticmethod
    def create_v2(name, device_type, vendor_id, device_id, device_mem_type, alignment, allocator_type):
        if OrtMemoryInfoDeviceType(device_type) != OrtMemoryInfoDeviceType.CPU:
            raise Fail(f"OrtMemoryInfo '{name}': onyx has only the CPU device, not {OrtMemoryInfoDeviceType(device_type).name}")
        info = OrtMemoryInfo(name, allocator_type, device_id, OrtMemType.DEFAULT)
        info.device_mem_type = OrtDeviceMemoryType(device_mem_type)
        info.device_vendor_id = int(vendor_id)
        info.alignment = int(alignment)
        return info

    def __eq__(self, other):
        return isinstance(other, OrtMemoryInfo) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self):
        return (f"OrtMemoryInfo(name='{self.name}', device_id={self.device_id}, mem_type={self.mem_type.name}, "
                f"allocator_type={self.allocator_type.name})")


CPU_MEMORY_INFO = OrtMemoryInfo("Cpu", OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, OrtMemType.DEFAULT)


class OrtArenaCfg:
    """An arena configuration, kept as given: onyx sizes its own buffers (a static memory plan per input shape), so
    these settings do not change what it allocates. OrtArenaCfg(max_mem, arena_extend_strategy,
    initial_chunk_size_bytes, max_dead_bytes_per_chunk) or OrtArenaCfg({key: value})."""

    _KEYS = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
             "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes")

    def __init__(self, *args):
        values = dict.fromkeys(self._KEYS, -1)
        if len(args) == 1 and isinstance(args[0], dict):
            for key, value in args[0].items():
                if key not in values:
                    raise InvalidArgument(f"OrtArenaCfg: unknown key '{key}' (keys: {', '.join(self._KEYS)})")
                values[key] = int(value)
        elif len(args) == 4:
            values.update(zip(self._KEYS, (int(a) for a in args)))
        elif args:
            raise TypeError("OrtArenaCfg takes (max_mem, arena_extend_strategy, initial_chunk_size_bytes, "
                            "max_dead_bytes_per_chunk) or a dict")
        for key, value in values.items():
            setattr(self, key, value)


_registered_allocators = []


def create_and_register_allocator(memory_info, arena_cfg):
    """Accepted for compatibility with sessions using 'session.use_env_allocators': onyx's sessions plan their own
    memory, so the allocator is recorded and not used."""
    if not isinstance(memory_info, OrtMemoryInfo):
        raise TypeError("create_and_register_allocator: memory_info must be an OrtMemoryInfo")
    if arena_cfg is not None and not isinstance(arena_cfg, OrtArenaCfg):
        raise TypeError("create_and_register_allocator: arena_cfg must be an OrtArenaCfg or None")
    if memory_info.name.lower() != "cpu":
        raise Fail(f"create_and_register_allocator: onyx has only the CPU device, not '{memory_info.name}'")
    _registered_allocators.append((memory_info, arena_cfg))


def create_and_register_allocator_v2(provider_type, memory_info, provider_options, arena_cfg):
    if provider_type != CPU_PROVIDER:
        raise Fail(f"create_and_register_allocator_v2: onyx has only {CPU_PROVIDER}, not '{provider_type}'")
    create_and_register_allocator(memory_info, arena_cfg)


def get_available_providers():
    """onyx is a CPU engine: ['CPUExecutionProvider']."""
    return [CPU_PROVIDER]


def get_all_providers():
    """The provider names onnxruntime defines, the CPU provider last; onyx runs only the last."""
    return list(ALL_PROVIDERS)


def get_device():
    return "CPU"


def get_version_string():
    return __version__


def get_build_info():
    import platform
    return (f"Build Info: onyx {__version__}, C++20 engine for {platform.machine()} (CPU kernels chosen at run time "
            f"from the processor's features; oneDNN for convolutions and matrix products), CPU only")


def enable_telemetry_events():
    """onyx sends no telemetry; accepted for compatibility."""


def disable_telemetry_events():
    """onyx sends no telemetry; accepted for compatibility."""


_default_logger_severity = 2


def set_default_logger_severity(level):
    """Accepted for compatibility (0 verbose .. 4 fatal); onyx's engine prints only warnings below 3."""
    global _default_logger_severity
    if level not in (0, 1, 2, 3, 4):
        raise InvalidArgument(f"logger severity {level!r} is not in 0..4")
    _default_logger_severity = level


def set_default_logger_verbosity(level):
    """Accepted for compatibility."""
    int(level)


def set_seed(seed):
    """onyx's random ops take their seed from the node (its attribute), else from the run: accepted for
    compatibility."""
    int(seed)


def _ortvalue_tensor(value, what):
    """The C-level OrtValue of `value` (onyx.OrtValue or the C class), checked to be a tensor."""
    from . import _onyx
    c_value = getattr(value, "_ortvalue", value)
    if not isinstance(c_value, _onyx.OrtValue):
        raise TypeError(f"{what}: expected an OrtValue, got {type(value).__name__}")
    if not c_value.is_tensor():
        raise InvalidArgument(f"{what}: the OrtValue holds {c_value.data_type()}, not a tensor")
    return c_value


class SessionOptions:
    """Options of a session, as onnxruntime's SessionOptions.

    intra_op_num_threads, graph_optimization_level and log_severity_level go to onyx's engine; enable_profiling
    writes a Chrome-trace JSON file (its name is what end_profiling() returns); optimized_model_filepath saves the
    optimized model there; the free-dimension overrides, initializers (add_initializer,
    add_external_initializers, add_external_initializers_from_files_in_memory) and custom-op libraries
    (register_custom_ops_library) are used at the session's creation. accept_newer_versions (onyx's own, default
    False) loads a model of a newer IR version or opset than onyx implements, which is refused otherwise;
    memory_limit_mb (onyx's own, default 0: none) is the most MiB the session's tensors may hold at once: a run
    that would pass it raises onyx.Fail naming the node. The other attributes are accepted and kept for
    compatibility (onyx.HONOURED_SESSION_CONFIG_KEYS lists the config entries that change what onyx does)."""

    __slots__ = ("intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level", "execution_mode",
                 "execution_order", "enable_profiling", "profile_file_prefix", "log_severity_level",
                 "log_verbosity_level", "logid", "optimized_model_filepath", "enable_cpu_mem_arena",
                 "enable_mem_pattern", "enable_mem_reuse", "use_deterministic_compute", "accept_newer_versions",
                 "memory_limit_mb", "_config", "_free_dims_by_name", "_free_dims_by_denotation", "_initializers",
                 "_external_files", "_custom_op_libraries")

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
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
        self._free_dims_by_name = {}
        self._free_dims_by_denotation = {}
        self._initializers = {}
        self._external_files = {}
        self._custom_op_libraries = []

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        try:
            return self._config[key]
        except KeyError:
            raise Fail(f"SessionOptions does not have configuration with key: {key}") from None

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        """Fixes every free dim named `dim_name` (its dim_param) in the model's inputs to `dim_value`."""
        self._free_dims_by_name[str(dim_name)] = self._dim_value(dim_value, dim_name)

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        """Fixes every free dim whose denotation is `dim_denotation` (DATA_BATCH, ...) to `dim_value`."""
        self._free_dims_by_denotation[str(dim_denotation)] = self._dim_value(dim_value, dim_denotation)

    @staticmethod
    def _dim_value(value, key):
        value = int(value)
        if value < 0:
            raise InvalidArgument(f"free dimension override '{key}': {value} is negative")
        return value

    def add_initializer(self, name, ortvalue):
        """The session uses this tensor (an OrtValue) in place of the model's initializer `name`. The OrtValue is
        kept referenced by these options; its data is read when a session is created."""
        self._initializers[str(name)] = _ortvalue_tensor(ortvalue, f"add_initializer('{name}')")

    def add_external_initializers(self, names, ortvalues):
        """Initializers whose data the model keeps outside (external data), given as OrtValues instead."""
        names, ortvalues = list(names), list(ortvalues)
        if len(names) != len(ortvalues):
            raise InvalidArgument(f"add_external_initializers: {len(names)} names but {len(ortvalues)} values")
        for name, value in zip(names, ortvalues):
            self._initializers[str(name)] = _ortvalue_tensor(value, f"add_external_initializers('{name}')")

    def add_external_initializers_from_files_in_memory(self, file_names, buffers, lengths):
        """External data files given in memory: a tensor whose external data location is one of `file_names` reads
        it from the matching buffer (bytes-like; its first `lengths[i]` bytes) instead of the disk."""
        file_names, buffers, lengths = list(file_names), list(buffers), list(lengths)
        if not len(file_names) == len(buffers) == len(lengths):
            raise InvalidArgument("add_external_initializers_from_files_in_memory: file_names, buffers and lengths "
                                  f"differ in length ({len(file_names)}, {len(buffers)}, {len(lengths)})")
        for name, buf, length in zip(file_names, buffers, lengths):
            data = bytes(memoryview(buf).cast("B"))
            length = int(length)
            if length < 0 or length > len(data):
                raise InvalidArgument(f"add_external_initializers_from_files_in_memory: '{name}': length {length} "
                                      f"is outside its buffer of {len(data)} bytes")
            self._external_files[str(name)] = data[:length]

    def register_custom_ops_library(self, library_path):
        """A shared library of custom operators written against onyx's custom-op C API (include/onyx/custom_op.h);
        sessions made with these options can run its ops."""
        path = os.fspath(library_path)
        if not os.path.exists(path):
            raise Fail(f"register_custom_ops_library: '{path}' does not exist")
        if path not in self._custom_op_libraries:
            self._custom_op_libraries.append(path)

    def add_provider(self, provider_name, provider_options):
        if provider_name not in ALL_PROVIDERS:
            raise Fail(f"Unknown Provider Type: {provider_name}")
        if provider_name != CPU_PROVIDER:
            warnings.warn(f"add_provider: onyx has only {CPU_PROVIDER}; '{provider_name}' is ignored", stacklevel=2)

    def _engine_extra(self):
        """What the engine takes beyond its plain options (see onyx._onyx._Session)."""
        return {"free_dimension_overrides_by_name": dict(self._free_dims_by_name),
                "free_dimension_overrides_by_denotation": dict(self._free_dims_by_denotation),
                "initializers": dict(self._initializers),
                "external_data_files": dict(self._external_files),
                "custom_op_libraries": list(self._custom_op_libraries)}

    def _copy(self):
        other = SessionOptions()
        for name in self.__slots__:
            value = getattr(self, name)
            setattr(other, name, value.copy() if isinstance(value, (dict, list)) else value)
        return other


def get_default_session_options():
    return SessionOptions()


class NodeArg:
    """An input or output of a session: name, type ('tensor(float)', 'seq(tensor(int64))',
    'map(int64,tensor(float))', 'optional(tensor(float))', 'sparse_tensor(float)', ...) and shape (ints for static
    dims, strings for symbolic ones, None for unknown ones; [] when the rank is unknown or the value is not a
    tensor)."""

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
