"""The exceptions onyx raises: OnyxError (a RuntimeError) and, under it, the classes onnxruntime raises (the names
of onnxruntime.capi.onnxruntime_pybind11_state), so code written for onnxruntime catches them unchanged.

onyx raises NoSuchFile (a model path that does not exist), InvalidProtobuf (bytes that are not a model),
InvalidGraph (a model the checker rejects), InvalidArgument (a bad feed or output name; also a ValueError, as
onnxruntime raises ValueError for missing inputs), Fail (any other failure to load or run, a terminated run
included) and NotImplemented (a feature onyx lacks). The other names exist for onnxruntime code that catches them.
"""


class OnyxError(RuntimeError):
    """Every error of the onyx engine; the message names the model, graph, node and value involved."""


class Fail(OnyxError):
    """Loading or running failed (an unsupported operator, an inference or kernel error, a terminated run)."""


class InvalidArgument(OnyxError, ValueError):
    """A feed, an output name or an option is wrong (unknown or missing input, wrong element type or shape)."""


class NoSuchFile(OnyxError):
    """The model file does not exist."""


class InvalidProtobuf(OnyxError):
    """The bytes are not a readable ONNX model."""


class InvalidGraph(OnyxError):
    """The model breaks the ONNX rules the checker enforces."""


class NotImplemented(OnyxError):  # noqa: A001 - onnxruntime's name, shadowing the builtin constant on purpose
    """The feature is not available in onyx."""


class NoModel(OnyxError):
    """onnxruntime's name; onyx does not raise it."""


class EngineError(OnyxError):
    """onnxruntime's name; onyx does not raise it."""


class RuntimeException(OnyxError):
    """onnxruntime's name; onyx does not raise it."""


class ModelLoaded(OnyxError):
    """onnxruntime's name; onyx does not raise it."""


class EPFail(OnyxError):
    """onnxruntime's name; onyx does not raise it (it has only the CPU execution provider)."""


__all__ = [
    "OnyxError", "Fail", "InvalidArgument", "NoSuchFile", "InvalidProtobuf", "InvalidGraph", "NotImplemented",
    "NoModel", "EngineError", "RuntimeException", "ModelLoaded", "EPFail",
]
