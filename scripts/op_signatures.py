#!/usr/bin/python3
"""Adds each op version's signature to spec/op_versions.tsv, from the operator schemas of Debian's python3-onnx.

    /usr/bin/python3 scripts/op_signatures.py [spec/op_versions.tsv]

Columns after domain, op_type and since_version: min_inputs, max_inputs, min_outputs, max_outputs ('*' for
variadic: no maximum) and attributes (comma-separated names, '-' for none). A version the installed onnx does not
know (newer than its newest opset, or deprecated) keeps what the file has, '?' in those columns if nothing: the
checker then checks nothing of it. So runs with newer onnx releases add to the table (Debian bookworm's onnx knows
opset 17; a sid chroot's onnx 1.20 filled opsets 18 to 25). Rewrites the file in place; rows and their order stay
as they are.
"""
import sys

import onnx.defs

UNBOUNDED = 2 ** 31 - 1


def signature(domain, op, since):
    """The five signature columns of one op version, or None when onnx has no schema of exactly that version."""
    try:
        s = onnx.defs.get_schema(op, since, "" if domain == "ai.onnx" else domain)
    except Exception:  # onnx raises SchemaError for unknown ops and versions
        return None
    if s.since_version != since or s.deprecated:
        return None
    top = lambda n: "*" if n >= UNBOUNDED else str(n)
    attrs = ",".join(sorted(s.attributes)) or "-"
    return [str(s.min_input), top(s.max_input), str(s.min_output), top(s.max_output), attrs]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "spec/op_versions.tsv"
    with open(path) as f:
        lines = f.read().splitlines()
    out = ["domain\top_type\tsince_version\tmin_inputs\tmax_inputs\tmin_outputs\tmax_outputs\tattributes"]
    known = 0
    for line in lines[1:]:
        if not line.strip():
            continue
        fields = line.split("\t")
        domain, op, since = fields[:3]
        sig = signature(domain, op, int(since))
        if sig is None and len(fields) == 8 and fields[3] != "?":
            sig = fields[3:]  # from an earlier run with another onnx release
        known += sig is not None
        out.append("\t".join([domain, op, since] + (sig or ["?"] * 5)))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"{path}: {known} of {len(out) - 1} op versions have a signature (onnx {onnx.__version__})")


if __name__ == "__main__":
    main()
