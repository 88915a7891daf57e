"""Models converted by onyx.convert_float_to_float16 run in ONNX Runtime (onnxruntime-node, from npm) with the
float32 model's outputs within float16 accuracy. Run by the ctest entry ort_interop, which CMake adds only where
`node` and onnxruntime-node are installed (it says so when they are not)."""
import json
import pathlib
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import onyx
from onyx._float16 import convert_float_to_float16
from test_float16 import LIGHT, light_feed, rel_err, small_cnn, transformer_block, transformer_input

ROOT = pathlib.Path(__file__).resolve().parents[3]
ORT_NODE = ROOT / "node_modules" / "onnxruntime-node"


def run_in_ort(model_path, feeds, tmp_path):
    """Runs a model in onnxruntime-node; feeds are numpy arrays (float32 or float16). Returns the outputs."""
    node = shutil.which("node")
    if node is None or not ORT_NODE.exists():
        pytest.fail("ONNX Runtime comparison needs `node` on PATH and onnxruntime-node in "
                    f"{ORT_NODE} (npm install at the checkout root)")
    spec = []
    for k, (name, arr) in enumerate(feeds.items()):
        f = tmp_path / f"in{k}.bin"
        f.write_bytes(np.ascontiguousarray(arr).tobytes())
        dtype = {np.float32: "float32", np.float16: "float16", np.int64: "int64"}[arr.dtype.type]
        spec.append({"name": name, "file": str(f), "dtype": dtype, "dims": list(arr.shape)})
    script = tmp_path / "ort_run.mjs"
    script.write_text("""
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(process.argv[2] + '/');
const ort = require('onnxruntime-node');
const spec = JSON.parse(fs.readFileSync(process.argv[4], 'utf8'));
const sess = await ort.InferenceSession.create(process.argv[3]);
const feeds = {};
for (const s of spec) {
  const b = fs.readFileSync(s.file);
  const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  const arrays = {float16: Uint16Array, float32: Float32Array, int64: BigInt64Array};
  feeds[s.name] = new ort.Tensor(s.dtype, new arrays[s.dtype](ab), s.dims);
}
const out = await sess.run(feeds);
const meta = [];
sess.outputNames.forEach((name, k) => {
  const t = out[name];
  const file = process.argv[5] + '/out' + k + '.bin';
  fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  meta.push({name, file, dtype: t.type, dims: t.dims});
});
fs.writeFileSync(process.argv[5] + '/out.json', JSON.stringify(meta));
""")
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    r = subprocess.run([node, str(script), str(ORT_NODE.parent), str(model_path), str(tmp_path / "spec.json"),
                        str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"onnxruntime-node failed: {r.stderr}"
    outs = []
    for m in json.loads((tmp_path / "out.json").read_text()):
        dt = {"float32": np.float32, "float16": np.float16, "int64": np.int64}[m["dtype"]]
        outs.append(np.frombuffer(pathlib.Path(m["file"]).read_bytes(), dtype=dt).reshape(m["dims"]))
    return outs


def test_converted_models_run_in_onnxruntime(tmp_path, write_model):
    # The transformer block with float16 inputs and outputs.
    fp32 = transformer_block()
    x = transformer_input()
    want = onyx.InferenceSession(fp32).run(None, {"X": x})[0]
    path = write_model(convert_float_to_float16(fp32), "block_fp16.onnx")
    got = run_in_ort(path, {"X": x.astype(np.float16)}, tmp_path)[0]
    assert got.dtype == np.float16
    assert rel_err(want, got) < 1e-2
    # A CNN (SqueezeNet with the shared conformance data, else one of random weights) with float32 inputs and
    # outputs (Casts inside).
    sq = LIGHT / "light_squeezenet.onnx"
    if not sq.exists():
        sq = tmp_path / "cnn.onnx"
        sq.write_bytes(small_cnn())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = write_model(convert_float_to_float16(str(sq), keep_io_types=True), "squeezenet_fp16.onnx")
    s32 = onyx.InferenceSession(str(sq))
    feeds = light_feed(s32, np.float32)
    want = s32.run(None, feeds)[0]
    got = run_in_ort(path, feeds, tmp_path)[0]
    assert got.dtype == np.float32
    assert rel_err(want, got) < 2e-2
