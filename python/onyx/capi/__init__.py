"""onnxruntime's `capi` package layout: _pybind_state and onnxruntime_pybind11_state (the C-level objects) and
onnxruntime_inference_collection (InferenceSession, IOBinding, OrtValue, SparseTensor, OrtDevice)."""
