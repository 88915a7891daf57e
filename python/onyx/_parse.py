"""The ONNX textual syntax back into a model (onyx.parse)."""

import os

from . import _onyx


def parse(text, source_name="<text>"):
    """Parses a model written in the ONNX textual syntax and returns the model's bytes (a serialized ModelProto).

    ``text`` is the text itself (str, or UTF-8 bytes), never a path: what ``onyx print`` writes, what
    ``onnx.printer.to_text`` writes, or what ``onnx.parser.parse_model`` reads (docs/Syntax.md of onnx): the
    ``<ir_version: ..., opset_import: [...], ...>`` header, the main graph and model-local functions.
    ``onnx.load_from_string(onyx.parse(text))`` gives the ``ModelProto``; ``onyx.InferenceSession`` takes the bytes.

    A syntax error raises ``onyx.InvalidArgument`` (a ValueError) whose message starts
    ``SOURCE_NAME:LINE:COLUMN:``. The text carries no doc strings other than the model's, no metadata other than
    the model's, no denotations and no sparse initializers; tensor values come back in the typed fields
    (float_data, int32_data, ...), not raw_data.
    """
    if isinstance(text, str):
        data = text.encode("utf-8", "surrogateescape")
    elif isinstance(text, (bytes, bytearray, memoryview)):
        data = bytes(text)
    else:
        raise TypeError("text must be str or bytes (the model's text, not a path), not %s" % type(text).__name__)
    return _onyx._parse(data, str(source_name))


def to_text(model):
    """The model in the ONNX textual syntax (a str), as ``onyx print`` writes it; ``parse`` reads it back.

    ``model``: a path (str or os.PathLike), the model's bytes, or an object with ``SerializeToString()`` (an
    ``onnx.ModelProto``). A model that cannot be read raises ``onyx.InvalidProtobuf``.
    """
    if isinstance(model, (str, os.PathLike)):
        source, is_path = os.fspath(model), True
    elif isinstance(model, (bytes, bytearray, memoryview)):
        source, is_path = bytes(model), False
    elif hasattr(model, "SerializeToString"):
        source, is_path = model.SerializeToString(), False
    else:
        raise TypeError("model must be a path, bytes or an onnx.ModelProto, not %s" % type(model).__name__)
    return _onyx._to_text(source, is_path).decode("utf-8", "surrogateescape")
