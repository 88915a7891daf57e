#!/usr/bin/python3
"""JSON written by the onyx command line, read back by Python's json module and checked against onnx's own reader:
`onyx profile -o` (a Chrome trace: Trace Event Format) and `onyx ops --json`.

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
print(f"ops --json: {ops['operator_count']} operators, {ops['version_count']} versions")

if failures:
    sys.exit(f"{len(failures)} checks failed")
print("all checks passed")
