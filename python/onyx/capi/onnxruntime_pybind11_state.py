"""The exception classes under the module name onnxruntime code imports them from
(`from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument`)."""
from .._errors import *  # noqa: F401,F403
from .._errors import __all__  # noqa: F401
