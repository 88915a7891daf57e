"""int8 quantization in ONNX Runtime's forms (onyx.quantize_dynamic, onyx.quantize_static)."""

import os
import tempfile

from . import _onyx


def _model_path(model, tmp):
    """A path for ``model``: a path as is; bytes or an onnx.ModelProto written to a file in ``tmp``."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    if isinstance(model, (bytes, bytearray, memoryview)):
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as f:
            f.write(bytes(model))
        return path
    raise TypeError("model_input must be a path, bytes or an onnx.ModelProto, not %s" % type(model).__name__)


def _list_or_none(v):
    return None if v is None else [str(x) for x in v]


def quantize_dynamic(model_input, model_output, op_types_to_quantize=None, per_channel=False):
    """Dynamically quantizes a float model to int8, as onnxruntime.quantization.quantize_dynamic writes it.

    Every MatMul and Gemm (``op_types_to_quantize``, default both) whose weight is a constant 2-D float32
    tensor becomes ``DynamicQuantizeLinear`` on its activation (uint8, one per activation tensor, shared by the
    products that read it) -> ``MatMulInteger`` with the weight stored as int8, symmetric (zero point 0: ORT's
    default ``weight_type=QuantType.QInt8``) -> ``Cast`` to float -> ``Mul`` by activation scale * weight scale
    (-> ``Add`` of the bias, for a Gemm: transB and alpha are folded into the weight, beta into the bias).
    ``per_channel``: one weight scale per output column. Constants are folded first; nodes that do not fit (a
    non-constant weight, a Gemm with transA) stay float and are listed in the report's ``skipped``.

    ``model_input``: a path, bytes or an ``onnx.ModelProto``; ``model_output``: the path to write. Returns a
    report dict (``nodes``: op type -> count, ``weights``, ``activations``, ``skipped``). Needs opset 11 or later.
    """
    with tempfile.TemporaryDirectory() as tmp:
        return _onyx._quantize_dynamic(_model_path(model_input, tmp), os.fspath(model_output), bool(per_channel),
                                       _list_or_none(op_types_to_quantize))


def quantize_static(model_input, model_output, calibration_data, op_types_to_quantize=None, per_channel=False,
                    activation_type="uint8", calibrate_method="minmax", percentile=99.999, threads=0):
    """Statically quantizes a float model to int8 in the QDQ form of onnxruntime.quantization.quantize_static.

    ``calibration_data``: a folder in the ONNX test-data layout (one sub-folder per sample holding
    ``input_K.pb`` TensorProtos of the K-th graph input, or ``NAME.pb`` / ``NAME.npy`` per input), or an iterable
    of dicts ``{input name: numpy array}`` (one per sample). The float model runs on each sample in an onyx
    session to find the range of every tensor to quantize: ``calibrate_method`` ``"minmax"`` (the whole range)
    or ``"percentile"`` (keeps ``percentile`` % of the values, cutting both tails equally).

    The activations that Conv, MatMul, Gemm and Add (``op_types_to_quantize``; Adds of two activations only) read
    and write get ``QuantizeLinear`` -> ``DequantizeLinear`` (``activation_type`` ``"uint8"``, the default here,
    or ``"int8"``; asymmetric); weights are stored int8 symmetric behind ``DequantizeLinear`` (per tensor, or with
    ``per_channel`` per output channel of Conv / column of MatMul), Conv and Gemm biases int32 at input scale *
    weight scale. A Relu, or a Clip from 0, after a quantized node is folded into its output's quantization (as
    ORT's QDQ quantizer removes it). BatchNormalization is folded into convolutions first. onyx runs the result on
    its integer kernels (QLinearConv, QLinearMatMul, QLinearAdd); ONNX Runtime runs it as its own QDQ models.

    Returns a report dict (``nodes``, ``weights``, ``activations``, ``activations_folded``, ``samples``,
    ``skipped``). Needs opset 10 or later (13 with ``per_channel``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = _model_path(model_input, tmp)
        if isinstance(calibration_data, os.PathLike):
            calibration_data = os.fspath(calibration_data)
        if not isinstance(calibration_data, str):
            calibration_data = list(calibration_data)
        return _onyx._quantize_static(path, os.fspath(model_output), calibration_data, bool(per_channel),
                                      str(activation_type), str(calibrate_method), float(percentile),
                                      _list_or_none(op_types_to_quantize), int(threads))
