#!/usr/bin/python3
"""The element types each registered op version accepts on each input (`onyx ops --json`) against the type
constraints of the same version's schema in Debian's python3-onnx.

For every op version the installed onnx knows (its own opsets; newer ones are counted and left out), each input the
schema constrains to tensor types must accept exactly those types in onyx: a type the spec allows and onyx refuses,
a type onyx accepts beyond the spec, and an input onyx leaves unconstrained are differences. The differences known
and meant are listed, with their reasons, in type_lists_vs_onnx.expect; any other difference fails, and so does a
listed one that is gone (the list only shrinks).

usage: type_lists_vs_onnx.py ONYX_BINARY
"""
import json
import os
import re
import subprocess
import sys

import onnx
import onnx.defs

HERE = os.path.dirname(os.path.abspath(__file__))


def tensor_type(type_str):
    m = re.fullmatch(r"tensor\((\w+)\)", type_str)
    return m.group(1) if m else None


def schema_of(domain, op_type, since):
    try:
        s = onnx.defs.get_schema(op_type, since, "" if domain == "ai.onnx" else domain)
    except Exception:  # onnx raises SchemaError for unknown ops and versions
        return None
    return s if s.since_version == since and not s.deprecated else None


def differences(operators):
    """(key, text) of every input whose types differ, the number of inputs compared and of versions left out."""
    found, compared, unknown = [], 0, 0
    for op in operators:
        for v in op["versions"]:
            since = v["since_version"]
            s = schema_of(op["domain"], op["op_type"], since)
            if s is None:
                unknown += 1
                continue
            allowed = {c.type_param_str: c.allowed_type_strs for c in s.type_constraints}
            for i, formal in enumerate(s.inputs):
                spec = {t for t in map(tensor_type, allowed.get(formal.typeStr, [formal.typeStr])) if t}
                if not spec:  # sequences, maps, optionals: not element types of a tensor
                    continue
                compared += 1
                key = f"{op['domain']} {op['op_type']} {since} {i}"
                applying = [set(c["types"]) for c in v["type_constraints"] if c["inputs"] == "all" or i in c["inputs"]]
                if not applying:
                    found.append((key, "unconstrained in onyx"))
                    continue
                have = set.intersection(*applying)
                if have != spec:
                    parts = []
                    if spec - have:
                        parts.append("refuses " + ",".join(sorted(spec - have)))
                    if have - spec:
                        parts.append("also accepts " + ",".join(sorted(have - spec)))
                    found.append((key, "; ".join(parts)))
    return found, compared, unknown


def expected():
    keys = set()
    with open(os.path.join(HERE, "type_lists_vs_onnx.expect")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                keys.add(" ".join(line.split()))
    return keys


def main():
    r = subprocess.run([sys.argv[1], "ops", "--json"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"onyx ops --json failed ({r.returncode}): {r.stderr}")
    found, compared, unknown = differences(json.loads(r.stdout)["operators"])
    known = expected()
    unexpected = [(k, t) for k, t in found if k not in known]
    gone = sorted(known - {k for k, _ in found})
    print(f"onnx {onnx.__version__} (opsets to {onnx.defs.onnx_opset_version()}): {compared} inputs compared, "
          f"{len(found)} differ ({len(found) - len(unexpected)} listed), {unknown} op versions it does not know")
    for k, t in unexpected:
        print(f"FAIL: {k}: {t}")
    for k in gone:
        print(f"FAIL: {k} is listed in type_lists_vs_onnx.expect but no longer differs: remove it")
    if compared < 500:
        print(f"FAIL: only {compared} inputs compared")
        return 1
    return 1 if unexpected or gone else 0


if __name__ == "__main__":
    sys.exit(main())
