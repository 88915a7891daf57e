"""onnxruntime's C-level module under the name onnxruntime code imports from
(`from onnxruntime.capi.onnxruntime_pybind11_state import Fail, OrtValueVector, RunOptions`): the engine's classes
(OrtValue, OrtValueVector, SparseTensor, OrtDevice, SessionIOBinding, RunOptions), the options, enums and provider
functions, and the exception classes."""
from .._errors import *  # noqa: F401,F403
from .._onyx import (OrtDevice, OrtSparseFormat, OrtValue, OrtValueVector, RunOptions,  # noqa: F401
                     SessionIOBinding, SparseTensor, is_dlpack_uint8_tensor)
from .._options import (CPU_MEMORY_INFO, ExecutionMode, ExecutionOrder, GraphOptimizationLevel,  # noqa: F401
                        ModelMetadata, NodeArg, OrtAllocatorType, OrtArenaCfg, OrtDeviceMemoryType, OrtMemoryInfo,
                        OrtMemoryInfoDeviceType, OrtMemType, SessionOptions, create_and_register_allocator,
                        create_and_register_allocator_v2, disable_telemetry_events, enable_telemetry_events,
                        get_all_providers, get_available_providers, get_build_info, get_default_session_options,
                        get_device, get_version_string, set_default_logger_severity, set_default_logger_verbosity,
                        set_seed)
