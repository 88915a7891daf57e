"""onnxruntime's `capi._pybind_state`, the module its Python code imports the C-level objects from."""
from .onnxruntime_pybind11_state import *  # noqa: F401,F403
from .onnxruntime_pybind11_state import (OrtDevice, OrtSparseFormat, OrtValue, OrtValueVector,  # noqa: F401
                                         RunOptions, SessionIOBinding, SparseTensor, is_dlpack_uint8_tensor)
