"""float32 -> float16 model conversion (onyx.convert_float_to_float16)."""

import os
import warnings

from . import _onyx


def convert_float_to_float16(model, keep_io_types=False, op_block_list=None, node_block_list=None,
                             min_positive_val=1e-7, max_finite_val=1e4, report=None):
    """Converts a float32 model to float16 and returns the new model's bytes.

    As onnxconverter-common's ``convert_float_to_float16``: float32 initializers, Constant values, tensor types
    (graph inputs, outputs, value infos) and Cast ``to`` attributes become float16, in subgraphs too. Values are
    clamped into float16's range first: non-zero magnitudes below ``min_positive_val`` become
    ``±min_positive_val``, finite ones above ``max_finite_val`` become ``±max_finite_val`` (a warning says how
    many). Nodes whose op type is in ``op_block_list`` (None: :func:`float16_default_op_block_list`) or whose name
    is in ``node_block_list``, and nodes of ops onyx computes in float32 only, stay float32 with Casts around them.

    ``model``: a path (str or os.PathLike), the model's bytes, or an object with ``SerializeToString()`` (an
    ``onnx.ModelProto``). ``keep_io_types``: graph inputs and outputs stay float32, with Casts inside the graph.
    ``report``: a dict to fill with what the conversion did (``tensors_converted``, ``float32_bytes``,
    ``float16_bytes``, ``clamped_small``, ``clamped_large``, ``casts_inserted``, ``blocked_ops``).

    Raises ``onyx.InvalidGraph`` naming the node and value when the model cannot be converted.
    """
    if isinstance(model, (str, os.PathLike)):
        source, is_path = os.fspath(model), True
    elif isinstance(model, (bytes, bytearray, memoryview)):
        source, is_path = bytes(model), False
    elif hasattr(model, "SerializeToString"):
        source, is_path = model.SerializeToString(), False
    else:
        raise TypeError("model must be a path, bytes or an onnx.ModelProto, not %s" % type(model).__name__)
    if op_block_list is not None:
        op_block_list = list(op_block_list)
    out, info = _onyx._convert_float_to_float16(source, is_path, bool(keep_io_types), op_block_list,
                                                list(node_block_list or []), float(min_positive_val),
                                                float(max_finite_val))
    if info["clamped_small"] or info["clamped_large"]:
        warnings.warn("float16 conversion clamped %d values to %g and %d to %g" %
                      (info["clamped_small"], min_positive_val, info["clamped_large"], max_finite_val),
                      stacklevel=2)
    if report is not None:
        report.update(info)
    return out


def float16_default_op_block_list():
    """The op types :func:`convert_float_to_float16` keeps float32 unless told otherwise."""
    return list(_onyx._float16_default_op_block_list())
