#!/usr/bin/python3
"""Rewrites a conformance expectations file from a run of `onyx test-onnx`.

Every failing test is listed as `SUITE/TEST xfail REASON` (the reason is the failure message, shortened);
`shape-only` and `shape-type-only` lines (tests whose expected outputs come from a random source) and
`spec-differs` lines (expected data that contradicts the spec, with the evidence) are written by hand and kept as
they are. Run it when operators land: the conformance ctest fails on any unexpected pass, so the list only
shrinks.
Usage: update_expectations.py ONYX EXPECTATIONS_FILE TEST_DIR...
"""
import os
import re
import subprocess
import sys

onyx, path, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
keep = []
try:
    for line in open(path):
        if re.match(r"^\S+\s+(shape-only|shape-type-only|spec-differs)\s", line):
            keep.append(line.rstrip("\n"))
except FileNotFoundError:
    pass
tmp = path + ".tmp"
with open(tmp, "w") as f:
    f.write("\n".join(keep) + ("\n" if keep else ""))
run = subprocess.run([onyx, "test-onnx", *dirs, "--expectations", tmp], capture_output=True, text=True)
lines = []
for line in run.stdout.splitlines():
    m = re.match(r"^FAIL (\S+): (.*)$", line)
    if not m:
        continue
    test, reason = m.groups()
    # Drop the model path and graph prefix: keep what is wrong.
    reason = re.sub(r"^\S+\.onnx: ", "", reason)
    reason = re.sub(r"^main graph '[^']*': ", "", reason)
    lines.append(f"{test}  xfail  {reason[:200]}")
with open(path, "w") as f:
    f.write("# Conformance tests not expected to pass, with the reason (written by scripts/update_expectations.py;\n")
    f.write("# `shape-only` / `shape-type-only` lines (random expected outputs) and `spec-differs` lines (expected data\n")
    f.write("# contradicting the spec, with the evidence) are kept by hand).\n")
    for l in keep + sorted(lines):
        f.write(l + "\n")
os.remove(tmp)
print(f"{path}: {len(lines)} xfail, {len(keep)} kept by hand")
