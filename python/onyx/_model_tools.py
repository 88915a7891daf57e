"""onnx's model tools on onyx's engine: shape inference written into the model, sub-model extraction and model
composition (onnx.shape_inference.infer_shapes, onnx.utils.extract_model, onnx.compose.merge_models).

Models are given as a path, the model's bytes, or an object with SerializeToString() (an onnx.ModelProto); results
are the new model's bytes (onnx.load_from_string reads them)."""
import os

from . import _onyx


def _source(model):
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    return model


def _names(names, what):
    if isinstance(names, (str, bytes)):
        raise TypeError(f"{what} must be a list of names, not a single string")
    return [os.fsdecode(n) if isinstance(n, bytes) else str(n) for n in names]


def infer_shapes(model):
    """The model with the types and shapes onyx infers for every node output (symbolic dims as dim_param) added as
    graph value_info, in the main graph and its subgraphs; declared types are completed where inference knows more.
    Nothing else in the model changes. Returns the new model's bytes."""
    return _onyx._infer_shapes(_source(model))


def check_inferred_shapes(reference, outputs_too=False):
    """Compares the value_info `reference` declares (e.g. written by onnx.shape_inference.infer_shapes) with the
    types onyx infers for the same model stripped of it (with `outputs_too`, the main graph outputs' shapes are
    stripped and compared too). Returns a dict: counts 'agree', 'onyx_more', 'reference_more', 'mixed',
    'disagree', and the lists 'disagreements' and 'reference_extra' (one line per value)."""
    return _onyx._check_inferred_shapes(_source(reference), bool(outputs_too))


def extract_model(model, input_names, output_names, output_path=None):
    """The sub-model computing `output_names` from `input_names` (values of the main graph), as
    onnx.utils.extract_model: the nodes needed, the initializers and value_info they use, the new inputs and
    outputs typed by inference. Raises naming the value when an output needs a graph input not among
    `input_names`, or a name is not a value of the graph. Returns the bytes, and writes them to `output_path`
    when given."""
    data = _onyx._extract_model(_source(model), _names(input_names, "input_names"),
                                _names(output_names, "output_names"))
    if output_path is not None:
        with open(output_path, "wb") as f:
            f.write(data)
    return data


def merge_models(m1, m2, io_map, prefix1=None, prefix2=None):
    """One model computing `m2` on the outputs of `m1`, as onnx.compose.merge_models: `io_map` is a list of
    (output of m1, input of m2) pairs, named without the prefixes. `prefix1` / `prefix2` go before every name of
    m1 / m2 (values, nodes, local functions) so that names both use do not clash. Both models must import each
    domain at the same opset; the IR version is the higher one. Returns the merged model's bytes."""
    pairs = [(str(o), str(i)) for o, i in io_map]
    return _onyx._merge_models(_source(m1), _source(m2), pairs, prefix1 or "", prefix2 or "")
