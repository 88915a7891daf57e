#!/usr/bin/env python3
"""Fails on an #include that breaks onyx's layer order.

Layers, lowest first; a file may include its own layer and the layers below it:
  base, kernels          below everything (kernels: SIMD and oneDNN code over plain buffers)
  ir                     model, graph, value, tensor, types (knows no wire format)
  format                 the wire reader/writer and its conversion to and from the IR
  check, ops             the checker and the operators (neither includes the other)
  infer                  type and shape inference over a graph (one engine for opt and exec)
  opt                    the optimizer
  exec                   sessions, plans, the executor
  faces                  include/onyx, src/capi, python, tools, fuzz: anything

Includes that break the order today are listed, each with its reason, in allowed.txt next to this script; a
listed include that is gone fails too, so the list only shrinks. Usage: check_layers.py SOURCE_DIR, or
check_layers.py --self-test (the rules on a small made-up tree).
"""
import os
import re
import sys

# Faces (src/capi and the folders outside src/) are not checked: they may include anything.
RANK = {"base": 0, "kernels": 1, "ir": 2, "format": 3, "check": 4, "ops": 4, "infer": 5, "opt": 6, "exec": 7}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def violations(root):
    found = set()
    for dirpath, _, files in os.walk(os.path.join(root, "src")):
        for name in files:
            if not name.endswith((".cpp", ".hpp", ".h", ".inc", ".def")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            own = rel.split("/")[1] if rel.count("/") >= 2 else None
            if own not in RANK:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1).split("/")[0]
                    # A higher layer, or the other layer of the same rank (check and ops).
                    if target in RANK and target != own and RANK[target] >= RANK[own]:
                        found.add(f"{rel} -> {m.group(1)}")
    return found


def allowed(path):
    entries = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            edge, sep, reason = line.partition("  # ")
            if not sep or not reason.strip():
                sys.exit(f"{path}:{n}: an entry is 'FILE -> INCLUDE  # reason'")
            entries[edge.strip()] = reason.strip()
    return entries


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        files = {
            "src/ir/a.hpp": '#include "base/error.hpp"\n#include "kernels/x.hpp"\n#include "ir/b.hpp"\n',
            "src/ir/b.cpp": '#include "format/wire.hpp"\n',  # ir knows no wire format
            "src/ops/c.cpp": '#include "check/checker.hpp"\n#include "format/wire.hpp"\n',  # check and ops: peers
            "src/kernels/d.cpp": '#  include "ir/tensor.hpp"\n#include <vector>\n',  # kernels below ir
            "src/exec/e.cpp": '#include "opt/o.hpp"\n#include "ops/r.hpp"\n',
            "src/capi/f.cpp": '#include "exec/session.hpp"\n',  # a face
        }
        for rel, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        got = violations(root)
        want = {"src/ir/b.cpp -> format/wire.hpp", "src/ops/c.cpp -> check/checker.hpp",
                "src/kernels/d.cpp -> ir/tensor.hpp"}
        if got != want:
            sys.exit(f"self-test: found {sorted(got)}, expected {sorted(want)}")
    print("self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    found = violations(root)
    listed = allowed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "allowed.txt"))
    new = sorted(found - set(listed))
    gone = sorted(set(listed) - found)
    for edge in new:
        print(f"layer order broken: {edge}")
    for edge in gone:
        print(f"listed in allowed.txt but no longer there (remove the line): {edge}")
    print(f"{len(found)} include(s) against the layer order, {len(listed)} listed, {len(new)} new, {len(gone)} gone")
    sys.exit(1 if new or gone else 0)


if __name__ == "__main__":
    main()
