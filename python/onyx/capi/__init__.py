"""onnxruntime's `capi` package layout, for code that imports its exceptions from there."""
