#!/usr/bin/python3
"""Glue of scripts/bench_serve.sh (the serving benchmark): model inspection and the batch-dim rewrite (onnx),
free ports, reading the server's statistics and RSS, and the final report. Debian's /usr/bin/python3 with
python3-onnx and numpy; the standard library otherwise. The load itself comes from onyx-serve-load.

  bench_serve_util.py spec MODEL            one line: INPUT_SPECS OUTPUT_NAMES INPUT_CONFIG_DIMS (see cmd_spec)
  bench_serve_util.py batchify SRC DST      DST = SRC with dim 0 of every input and output symbolic ("batch")
  bench_serve_util.py ports N               N free TCP ports on 127.0.0.1, space-separated
  bench_serve_util.py success URL MODEL     the model's cumulative successful request count (statistics API)
  bench_serve_util.py say JSON_LINE         one load point, as progress
  bench_serve_util.py report RESULTS META   the tables and the targets, from the JSON lines the script gathered
  bench_serve_util.py soak-report RESULTS META
"""
import json
import socket
import sys
import urllib.request

# ONNX TensorProto element types -> KServe v2 datatype names (Triton's config names are "TYPE_" + these).
V2_NAMES = {1: "FP32", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64", 9: "BOOL",
            10: "FP16", 11: "FP64", 12: "UINT32", 13: "UINT64"}


def cmd_spec(path):
    """Prints three fields: onyx-serve-load's --inputs list (symbolic dims as 1), the output names, and for the
    batching config each input as NAME:TYPE:DIMS without dim 0 (';'-separated), likewise the outputs."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    specs, cfg_in, cfg_out = [], [], []
    for v in m.graph.input:
        if v.name in inits:
            continue
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in t.shape.dim]
        specs.append(f"{v.name}:{V2_NAMES[t.elem_type]}:{'x'.join(map(str, dims))}")
        cfg_in.append(f"{v.name}:{V2_NAMES[t.elem_type]}:{','.join(map(str, dims[1:]))}")
    for v in m.graph.output:
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
        cfg_out.append(f"{v.name}:{V2_NAMES[t.elem_type]}:{','.join(map(str, dims[1:]))}")
    print(",".join(specs), ",".join(o.name for o in m.graph.output), ";".join(cfg_in), ";".join(cfg_out))


def cmd_batchify(src, dst):
    import onnx
    m = onnx.load(src)
    for v in list(m.graph.input) + list(m.graph.output):
        if any(v.name == i.name for i in m.graph.initializer):
            continue
        dim = v.type.tensor_type.shape.dim[0]
        dim.Clear()
        dim.dim_param = "batch"
    # Intermediate shapes recorded for batch 1 would contradict batch N: drop them (onyx infers its own).
    del m.graph.value_info[:]
    onnx.checker.check_model(m)
    onnx.save(m, dst)


def cmd_ports(n):
    # Bound all at once so they differ; closed before the server binds them (a small race, fine for a benchmark).
    socks = []
    for _ in range(int(n)):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    print(" ".join(str(s.getsockname()[1]) for s in socks))
    for s in socks:
        s.close()


def cmd_success(url, model):
    with urllib.request.urlopen(f"{url}/v2/models/{model}/stats", timeout=10) as r:
        stats = json.load(r)
    print(sum(int(s["inference_stats"]["success"]["count"]) for s in stats.get("model_stats", [])))


def cmd_say(line):
    r = json.loads(line)
    print(f"bench_serve: {r['model']:<16} {r['protocol']:<12} c={r['concurrency']:<3} {r['throughput_rps']:>9.1f} req/s"
          f"  p50 {r['p50_us']:>9.1f} us  p99 {r['p99_us']:>9.1f} us  errors {r['errors']}")


def load_results(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def verdict(ok):
    # None: the numbers contradict themselves (a baseline slower than the server), so the machine was too noisy.
    return "NOISY" if ok is None else "PASS" if ok else "FAIL"


def cmd_report(results_path, meta_path):
    rows = load_results(results_path)
    meta = json.load(open(meta_path))
    instances, threads = meta["instances"], meta["threads"]
    cores = instances * threads
    targets = []
    print(f"\nonyx serve benchmark: {meta['device']}; server: {instances} instance(s) x {threads} thread(s) "
          f"per model on CPUs {meta['server_cpus']}; load generator on CPUs {meta['load_cpus']}")
    for model in meta["models"]:
        # The baseline is measured before and after the sweep; the faster one counts (the engine's speed on a
        # quiet machine: on a shared one the other can be slowed by a neighbour, which would flatter the server).
        medians = [r["median_us"] for r in rows if r.get("kind") == "inprocess" and r["model"] == model]
        points = [r for r in rows if r.get("kind") == "load" and r["model"] == model]
        if not points:
            continue
        median_us = min(medians) if medians else None
        print(f"\n== {model}: in-process median "
              + (f"{median_us:.1f} us at {threads} thread(s) (runs: {', '.join(f'{m:.1f}' for m in medians)}) -> "
                 f"{cores * 1e6 / median_us:.0f} req/s on {cores} core(s)" if median_us else "n/a") + " ==")
        print(f"{'protocol':<12} {'conc':>4} {'requests':>9} {'errors':>6} {'p50_us':>10} {'p90_us':>10} "
              f"{'p99_us':>10} {'req/s':>10}")
        for r in points:
            print(f"{r['protocol']:<12} {r['concurrency']:>4} {r['requests']:>9} {r['errors']:>6} "
                  f"{r['p50_us']:>10.1f} {r['p90_us']:>10.1f} {r['p99_us']:>10.1f} {r['throughput_rps']:>10.1f}")
        if not median_us:
            continue
        inproc_rps = cores * 1e6 / median_us
        for proto in ("grpc", "http-binary", "http-json"):
            mine = [r for r in points if r["protocol"] == proto]
            if not mine:
                continue
            c1 = next((r for r in mine if r["concurrency"] == 1), None)
            best = max(mine, key=lambda r: r["throughput_rps"])
            checked = proto != "http-json"  # JSON's cost grows with the tensor: reported, no target
            if c1:
                overhead = c1["p50_us"] - median_us
                line = f"  {proto:<12} overhead p50 @1 = {c1['p50_us']:.1f} - {median_us:.1f} = {overhead:.1f} us"
                if checked:
                    # Below zero the baseline was slowed by something else: no verdict from such a run.
                    targets.append((f"{model} {proto} overhead p50 <= 50 us", f"{overhead:.1f} us",
                                    None if overhead < 0 else overhead <= 50))
                print(line)
            share = best["throughput_rps"] / inproc_rps
            print(f"  {proto:<12} saturation {best['throughput_rps']:.0f} req/s (conc {best['concurrency']}) = "
                  f"{100 * share:.1f}% of in-process {inproc_rps:.0f} req/s")
            if checked:
                targets.append((f"{model} {proto} saturation >= 90% of in-process", f"{100 * share:.1f}%",
                                None if share > 1.1 else share >= 0.9))
    for key, judged in (("batching", True), ("batching_instances", False)):
        batch = meta.get(key)
        if not batch:
            continue
        print(f"\n== dynamic batching: {batch['batched']} vs {batch['plain']} at concurrency {batch['concurrency']}"
              f"{'' if judged else ' (informative: the sweep instances)'} ==")
        for proto in ("grpc", "http-binary"):
            def rps(model):
                return next((r["throughput_rps"] for r in rows if r.get("kind") == "load" and r["model"] == model
                             and r["protocol"] == proto and r["concurrency"] == batch["concurrency"]), None)
            b, p = rps(batch["batched"]), rps(batch["plain"])
            if b is None or p is None or p == 0:
                continue
            gain = b / p
            print(f"  {proto:<12} {b:.1f} / {p:.1f} req/s = {gain:.2f}x")
            if judged:
                targets.append((f"batching gain ({proto}) >= 1.5x", f"{gain:.2f}x", gain >= 1.5))
    errors = sum(r["errors"] for r in rows if r.get("kind") == "load")
    targets.append(("no failed requests in the sweep", str(errors), errors == 0))
    print("\n== targets ==")
    for name, value, ok in targets:
        print(f"  {verdict(ok):<5}  {name:<56} {value}")
    if meta.get("errors_file"):
        with open(meta["errors_file"]) as f:
            lines = f.read().splitlines()
        if lines:
            print(f"\nfirst errors of the load generator ({len(lines)} line(s)):")
            for line in lines[:10]:
                print("  " + line)


def cmd_soak_report(results_path, meta_path):
    rows = load_results(results_path)
    meta = json.load(open(meta_path))
    print(f"\n== soak: {meta['seconds']} s of mixed load; {meta['model_swapped']} unloaded and loaded again at "
          f"~{meta['seconds'] // 2} s ==")
    print(f"{'model':<18} {'protocol':<12} {'conc':>4} {'requests':>9} {'errors':>6} {'p50_us':>10} "
          f"{'p99_us':>10} {'req/s':>10}")
    ok_by_model = {}
    errors = 0
    for r in rows:
        print(f"{r['model']:<18} {r['protocol']:<12} {r['concurrency']:>4} {r['requests']:>9} {r['errors']:>6} "
              f"{r['p50_us']:>10.1f} {r['p99_us']:>10.1f} {r['throughput_rps']:>10.1f}")
        ok_by_model[r["model"]] = ok_by_model.get(r["model"], 0) + r["requests"]
        errors += r["errors"]
    # Lost: answered as a success by the server (its statistics) but not by the client, or the reverse. The
    # client's count includes nothing untimed (the soak runs with --warmup 0).
    lost = 0
    for model, ok in ok_by_model.items():
        served = meta["success_after"][model] - meta["success_before"][model]
        lost += abs(served - ok)
        print(f"  {model}: client successes {ok}, server successes {served}")
    growth = (meta["rss_after_kb"] - meta["rss_before_kb"]) / meta["rss_before_kb"]
    print(f"  RSS {meta['rss_before_kb'] / 1024:.1f} MiB after warm-up -> {meta['rss_after_kb'] / 1024:.1f} MiB "
          f"after the soak ({100 * growth:+.2f}%)")
    print(f"  model control: {meta['control']}")
    checks = [("failed requests == 0", str(errors), errors == 0),
              ("lost requests == 0", str(lost), lost == 0),
              ("RSS growth <= 5%", f"{100 * growth:+.2f}%", growth <= 0.05),
              ("unload + load of the second model succeeded", meta["control"], meta["control_ok"])]
    print("\n== soak targets ==")
    for name, value, ok in checks:
        print(f"  {verdict(ok):<5}  {name:<56} {value}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"spec": cmd_spec, "batchify": cmd_batchify, "ports": cmd_ports, "success": cmd_success,
     "say": cmd_say, "report": cmd_report, "soak-report": cmd_soak_report}[cmd](*args)


if __name__ == "__main__":
    main()
