#!/usr/bin/python3
"""Runs the onyx-vs-ONNX Runtime benchmark for scripts/bench.sh and prints its tables.

For every model and thread count it runs `onyx bench --json` and `node bench_ort.mjs --json` alternately, one
process each per round (onyx, ORT, onyx, ORT, ...), so that slow phases of a busy machine hit both; the figures
reported are the medians over the rounds. The outputs of both engines on the same generated inputs (arange(n)/n)
are compared once per model. Nothing here asserts a timing: it measures and prints.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_json(cmd, timeout):
    """Runs cmd; returns (the JSON object on its last stdout line, None) or (None, error text)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        return None, f"exit {p.returncode}: {lines[-1] if lines else '(no output)'}"
    try:
        return json.loads(p.stdout.strip().splitlines()[-1]), None
    except (json.JSONDecodeError, IndexError):
        return None, f"no JSON in output: {p.stdout[-200:]!r}"


def run_plain(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout} s"
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        return f"exit {p.returncode}: {lines[-1] if lines else '(no output)'}"
    return None


def compare_outputs(onyx_dir, ort_dir):
    """Worst errors over the outputs: max-abs; max-rel, each difference over max(|ORT value|, 1e-6); and scaled,
    the largest difference over the largest |ORT value| of that output (max-rel overstates errors on values near
    zero)."""
    onyx_files = sorted(f for f in os.listdir(onyx_dir) if f.startswith("output_") and f.endswith(".pb"))
    ort_files = sorted(f for f in os.listdir(ort_dir) if f.startswith("output_") and f.endswith(".npy"))
    if len(onyx_files) != len(ort_files) or not onyx_files:
        return {"error": f"{len(onyx_files)} onyx outputs, {len(ort_files)} ORT outputs"}
    worst_abs = worst_rel = worst_scaled = 0.0
    constant = True  # every output a single repeated value: equal outputs then prove little
    for k in range(len(onyx_files)):
        a = numpy_helper.to_array(onnx.load_tensor(os.path.join(onyx_dir, f"output_{k}.pb")))
        b = np.load(os.path.join(ort_dir, f"output_{k}.npy"))
        if a.shape != b.shape:
            return {"error": f"output {k}: onyx shape {list(a.shape)}, ORT shape {list(b.shape)}"}
        if a.size == 0:
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        constant = constant and bool((b64 == b64.flat[0]).all())
        diff = np.abs(a64 - b64)
        if np.isnan(diff).any():
            nan_a, nan_b = np.isnan(a64), np.isnan(b64)
            if (nan_a != nan_b).any():
                return {"error": f"output {k}: NaN in one engine's output only"}
            diff = np.where(nan_a, 0.0, diff)
        worst_abs = max(worst_abs, float(diff.max()))
        worst_rel = max(worst_rel, float((diff / np.maximum(np.abs(b64), 1e-6)).max()))
        worst_scaled = max(worst_scaled, float(diff.max() / max(float(np.nanmax(np.abs(b64))), 1e-30)))
    return {"max_abs": worst_abs, "max_rel": worst_rel, "max_scaled": worst_scaled, "outputs": len(onyx_files),
            "constant": constant}


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--runner", required=True, help="bench_ort.mjs")
    ap.add_argument("--node", default="node")
    ap.add_argument("--out", required=True, help="folder for outputs and results.json")
    ap.add_argument("--model", action="append", default=[], help="NAME=PATH, in table order")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=3600, help="seconds one process may take")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",") if t]
    models = [m.split("=", 1) for m in args.model]

    results = []  # one entry per (model, threads)
    checks = {}
    started = time.monotonic()
    for name, path in models:
        for t in threads:
            entry = {"model": name, "threads": t, "onyx": [], "ort": [], "errors": []}
            for r in range(args.rounds):
                common = ["--threads", str(t), "--runs", str(args.runs), "--warmup", str(args.warmup), "--json"]
                for engine, cmd in (("onyx", [args.onyx, "bench", path] + common),
                                    ("ort", [args.node, args.runner, path] + common)):
                    if any(e.startswith(engine + ":") for e in entry["errors"]):
                        continue  # it failed in an earlier round: the same error again tells nothing
                    log(f"[{time.monotonic() - started:7.0f} s] {name} threads {t} round {r + 1}/{args.rounds}: {engine}")
                    res, err = run_json(cmd, args.timeout)
                    if err:
                        entry["errors"].append(f"{engine}: {err}")
                        log(f"    {engine} failed: {err}")
                    else:
                        entry[engine].append(res)
            results.append(entry)
        # Outputs on the same inputs: onyx run --dummy, and one more ORT process writing its first run's outputs.
        onyx_dir = os.path.join(args.out, "outputs", name, "onyx")
        ort_dir = os.path.join(args.out, "outputs", name, "ort")
        for d in (onyx_dir, ort_dir):
            os.makedirs(d, exist_ok=True)
            for f in os.listdir(d):
                os.remove(os.path.join(d, f))
        log(f"[{time.monotonic() - started:7.0f} s] {name}: outputs of both engines")
        err = run_plain([args.onyx, "run", path, "--dummy", "--output-dir", onyx_dir], args.timeout)
        err_ort = run_plain([args.node, args.runner, path, "--threads", str(threads[0]), "--runs", "1", "--warmup", "0",
                             "--output-dir", ort_dir], args.timeout)
        if err or err_ort:
            checks[name] = {"error": "; ".join(x for x in (err and f"onyx: {err}", err_ort and f"ORT: {err_ort}") if x)}
        else:
            checks[name] = compare_outputs(onyx_dir, ort_dir)

    def med(runs, key):
        return statistics.median(r[key] for r in runs) if runs else None

    rows = []
    for e in results:
        o, n = e["onyx"], e["ort"]
        row = {
            "model": e["model"], "threads": e["threads"],
            "onyx_median_ms": med(o, "median_ms"), "ort_median_ms": med(n, "median_ms"),
            "onyx_cpu_ms": med(o, "cpu_median_ms"), "ort_cpu_ms": med(n, "cpu_median_ms"),
            "onyx_create_ms": med(o, "create_ms"), "ort_create_ms": med(n, "create_ms"),
            "onyx_first_run_ms": med(o, "first_run_ms"), "ort_first_run_ms": med(n, "first_run_ms"),
            "onyx_rss_mb": max((r["peak_rss_mb"] for r in o), default=None),
            "ort_rss_mb": max((r["peak_rss_mb"] for r in n), default=None),
            "ort_base_rss_mb": min((r["base_rss_mb"] for r in n), default=None),
            "rounds": args.rounds, "errors": e["errors"], "raw": {"onyx": o, "ort": n},
        }
        rows.append(row)

    ort_version = next((r["raw"]["ort"][0]["ort_version"] for r in rows if r["raw"]["ort"]), "?")
    print()
    print(f"onyx: {args.onyx}    ONNX Runtime: onnxruntime-node {ort_version} (graphOptimizationLevel all, "
          "sequential, interOp 1)")
    print(f"{args.rounds} round(s) of onyx, ORT alternately; each process: first run, {args.warmup} warm-up, "
          f"{args.runs} timed runs; figures are medians over the rounds")
    print("median: wall time of a run; cpu: CPU time of a run (user + system, all threads; steadier on a busy "
          "machine, but with more than one thread it counts ORT's spinning pool threads too); ratio: onyx / ORT")
    print("RSS: peak resident set of the process (ORT's includes node itself: "
          f"{fmt(min((r['ort_base_rss_mb'] for r in rows if r['ort_base_rss_mb']), default=None))} MB before "
          "the session is created)")
    print()
    hdr = (f"{'model':<22} {'thr':>3} {'onyx med ms':>12} {'ORT med ms':>11} {'ratio':>7} {'onyx cpu':>10} "
           f"{'ORT cpu':>9} {'ratio':>7} {'onyx create':>12} {'ORT create':>11} {'onyx RSS':>9} {'ORT RSS':>8}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        ratio = (r["onyx_median_ms"] / r["ort_median_ms"]) if r["onyx_median_ms"] and r["ort_median_ms"] else None
        cpu_ratio = (r["onyx_cpu_ms"] / r["ort_cpu_ms"]) if r["onyx_cpu_ms"] and r["ort_cpu_ms"] else None
        print(f"{r['model']:<22} {r['threads']:>3} {fmt(r['onyx_median_ms']):>12} {fmt(r['ort_median_ms']):>11} "
              f"{fmt(ratio, 2):>7} {fmt(r['onyx_cpu_ms']):>10} {fmt(r['ort_cpu_ms']):>9} {fmt(cpu_ratio, 2):>7} "
              f"{fmt(r['onyx_create_ms']):>12} {fmt(r['ort_create_ms']):>11} {fmt(r['onyx_rss_mb']):>9} "
              f"{fmt(r['ort_rss_mb']):>8}")
    failures = [(r["model"], r["threads"], e) for r in rows for e in r["errors"]]
    if failures:
        print()
        for model, t, e in failures:
            print(f"FAILED {model} threads {t}: {e}")

    print()
    print("outputs, onyx vs ORT on the same inputs (rel: |onyx - ORT| / max(|ORT|, 1e-6); "
          "scaled: max |onyx - ORT| / max |ORT|):")
    print(f"{'model':<22} {'outputs':>7} {'max abs':>11} {'max rel':>11} {'scaled':>11}")
    for name, c in checks.items():
        if "error" in c:
            print(f"{name:<22} {'':>7} {'FAILED: ' + c['error']}")
        else:
            note = "  (ORT's output is one repeated value: a weak check)" if c["constant"] else ""
            print(f"{name:<22} {c['outputs']:>7} {c['max_abs']:>11.3g} {c['max_rel']:>11.3g} "
                  f"{c['max_scaled']:>11.3g}{note}")

    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"rows": rows, "outputs": checks, "ort_version": ort_version, "runs": args.runs,
                   "warmup": args.warmup, "rounds": args.rounds}, f, indent=1)
    print()
    print(f"all figures: {os.path.join(args.out, 'results.json')}")
    return 1 if failures or any("error" in c for c in checks.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
