"""Default-domain opset conversion (onyx.convert_version)."""

import os

from . import _onyx


def convert_version(model, target_opset, report=None):
    """Converts a model's default domain (ai.onnx) to operator set ``target_opset`` and returns the new model's bytes.

    As ``onnx.version_converter.convert_version``: the model goes one opset at a time, up or down, and at each
    step the nodes whose op has a new version there are rewritten by that op/version's adapter (attributes that
    became inputs and back, changed defaults and semantics such as Softmax's axis at 13, Upsample -> Resize, ...).
    An input that must become an attribute has to be a constant. A node no adapter converts raises
    ``onyx.InvalidGraph`` naming the node, its op and the versions (e.g. an op going below the opset that
    introduced it). Tensor data is written inline.

    ``model``: a path (str or os.PathLike), the model's bytes, or an object with ``SerializeToString()`` (an
    ``onnx.ModelProto``). ``report``: a dict to fill with ``from``, ``to``, ``nodes_adapted`` and ``notes`` (one
    line per rewrite).
    """
    if isinstance(model, (str, os.PathLike)):
        source, is_path = os.fspath(model), True
    elif isinstance(model, (bytes, bytearray, memoryview)):
        source, is_path = bytes(model), False
    elif hasattr(model, "SerializeToString"):
        source, is_path = model.SerializeToString(), False
    else:
        raise TypeError("model must be a path, bytes or an onnx.ModelProto, not %s" % type(model).__name__)
    out, info = _onyx._convert_version(source, is_path, int(target_opset))
    if report is not None:
        report.update(info)
    return out
