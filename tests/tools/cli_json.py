#!/usr/bin/python3
"""JSON written by the onyx command line, read back by Python's json module and checked against onnx's own reader:
`onyx profile -o` (a Chrome trace: Trace Event Format), `onyx ops --json` and `onyx bench --flops --json` (the
arithmetic it counts for a model of known products).

usage: cli_json.py ONYX_BINARY [LIGHT_MODELS_DIR]
"""
import json
import os
import subprocess
import sys
import tempfile

import onnx

onyx = sys.argv[1]
light_dir = sys.argv[2] if len(sys.argv) > 2 else None
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    r = subprocess.run([onyx, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"onyx {' '.join(args)} failed ({r.returncode}): {r.stdout}{r.stderr}")
    return r.stdout


def check_trace(model, runs, extra_args):
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = os.path.join(tmp, "trace.json")
        run("profile", model, "--runs", str(runs), "-o", trace_path, *extra_args)
        with open(trace_path, encoding="utf-8") as f:
            trace = json.load(f)
    nodes = len(onnx.load(model).graph.node)
    name = os.path.basename(model)
    events = trace["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    check({e["name"] for e in meta} == {"process_name", "thread_name"}, f"{name}: metadata events {meta}")
    run_events = [e for e in events if e["ph"] == "X" and e["cat"] == "run"]
    node_events = [e for e in events if e["ph"] == "X" and e["cat"] != "run"]
    check(len(events) == len(meta) + len(run_events) + len(node_events), f"{name}: unexpected event kinds")
    check(len(run_events) == runs, f"{name}: {len(run_events)} run events, expected {runs}")
    check(len(node_events) == nodes * runs, f"{name}: {len(node_events)} node events, expected {nodes} x {runs}")
    for e in run_events + node_events:
        ok = (isinstance(e["name"], str) and isinstance(e["cat"], str) and e["pid"] == 1 and e["tid"] == 1
              and isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["ts"] >= 0
              and e["dur"] >= 0)
        check(ok, f"{name}: malformed complete event {e}")
    for e in node_events:
        check(e["args"]["op_type"] == e["cat"], f"{name}: args.op_type differs from cat in {e}")
        # Each node event lies inside the event of its run (microseconds, printed to the nanosecond).
        r = run_events[e["args"]["run"]]
        check(r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"] + 1e-3, f"{name}: {e} outside {r}")
    # Per run, every node of the model once, by name.
    names = sorted(n.name for n in onnx.load(model).graph.node if n.name)
    for k in range(runs):
        got = sorted(e["name"] for e in node_events if e["args"]["run"] == k and not e["name"].startswith("#"))
        check(got == names, f"{name}: run {k} node names differ")
    print(f"{name}: {len(node_events)} node events over {runs} runs, {len(events)} events in all")


with tempfile.TemporaryDirectory() as tmp:
    demo = os.path.join(tmp, "demo.onnx")
    run("demo", demo)
    check_trace(demo, 3, ["--dummy", "--dim", "N=2", "--level", "basic"])
if light_dir:
    check_trace(os.path.join(light_dir, "light_squeezenet.onnx"), 2, ["--dummy", "--level", "0"])

# bench --flops: a MatMul [2, 3, 8] x [8, 5], a Conv [1, 4, 6, 6] with W [6, 2, 3, 3] (group 2, pads 1) and a
# Gemm [3, 8] x [8, 7]: 2 * (30 * 8 + 216 * 18 + 21 * 8) operations.
with tempfile.TemporaryDirectory() as tmp:
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w", (8, 5)), ("k", (6, 2, 3, 3)), ("g", (8, 7)))]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["y1"]),
         helper.make_node("Conv", ["x", "k"], ["y2"], group=2, pads=[1, 1, 1, 1]),
         helper.make_node("Gemm", ["c", "g"], ["y3"])],
        "flops",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3, 8]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6]),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y1", "y2", "y3")], inits)
    path = os.path.join(tmp, "flops.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    for level in ("0", "all"):
        b = json.loads(run("bench", path, "--runs", "1", "--warmup", "0", "--threads", "1", "--level", level,
                           "--flops", "--json"))
        want = 2 * (30 * 8 + 216 * 18 + 21 * 8) / 1e9
        check(abs(b["gflop"] - want) < 1e-9, f"bench --flops at level {level}: gflop {b['gflop']}, expected {want}")
        check(b["peak_gflops"] > 0 and b["gflops"] > 0, f"bench --flops: {b}")
    print(f"bench --flops: {b['gflop']} GFLOP per run, peak {b['peak_gflops']} GFLOP/s")

ops = json.loads(run("ops", "--json"))
add = [o for o in ops["operators"] if o["domain"] == "ai.onnx" and o["op_type"] == "Add"]
check(len(add) == 1 and 14 in add[0]["since_versions"], f"ops --json: Add entry {add}")
check(ops["operator_count"] == len(ops["operators"]), "ops --json: operator_count")
check(ops["version_count"] == sum(len(o["since_versions"]) for o in ops["operators"]), "ops --json: version_count")
keys = [(o["domain"], o["op_type"]) for o in ops["operators"]]
check(keys == sorted(keys), "ops --json: not sorted")
for o in ops["operators"]:
    check([v["since_version"] for v in o["versions"]] == o["since_versions"], f"ops --json: {o['op_type']} versions")
    for v in o["versions"]:
        for c in v["type_constraints"]:
            check(c["inputs"] == "all" or all(isinstance(i, int) for i in c["inputs"]), f"ops --json: {c}")
            check(all(isinstance(t, str) for t in c["types"]), f"ops --json: {c}")
by_key = {(o["domain"], o["op_type"]): o for o in ops["operators"]}
check(any("oneDNN convolution" in f for f in by_key[("ai.onnx", "Conv")]["fast_kernels"]), "ops --json: Conv's fast kernels")
check(by_key[("ai.onnx", "Det")]["fast_kernels"] == [], "ops --json: Det has no fast kernel")
check(ops["fast_operator_count"] == sum(1 for o in ops["operators"] if o["fast_kernels"]), "ops --json: fast_operator_count")
check(by_key[("ai.onnx", "Add")]["gradient"] and not by_key[("ai.onnx", "Det")]["gradient"], "ops --json: gradient")
check(not by_key[("ai.onnx", "RandomNormal")]["deterministic"] and by_key[("ai.onnx", "Add")]["deterministic"],
      "ops --json: deterministic")
print(f"ops --json: {ops['operator_count']} operators, {ops['version_count']} versions, "
      f"{ops['fast_operator_count']} with fast kernels")

if failures:
    sys.exit(f"{len(failures)} checks failed")
print("all checks passed")
