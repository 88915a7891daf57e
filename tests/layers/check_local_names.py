#!/usr/bin/python3
"""Names defined at the top level of two library files in one namespace: the library compiles in batches of files
(CMake's unity build, CMakeLists.txt), where two files' file-local helpers of one name collide or, worse, become
overloads that a call may pick between. Type and namespace aliases to the same thing may repeat.

The scan reads definitions that start a line (the project's style: namespace contents are not indented): functions,
types, constants and aliases. It prints each shared name with its files and exits 1 if there is one.

usage: check_local_names.py SOURCE_ROOT
"""
import collections
import glob
import os
import re
import sys

KEYWORDS = {"if", "for", "while", "switch", "return", "__attribute__", "sizeof", "static_assert"}
ALIAS = re.compile(r"^(?:using|namespace)\s+(\w+)\s*=\s*(.+?);")
TYPE = re.compile(r"^(?:enum\s+class|enum|struct|class)\s+(\w+)\s*(?:final\s*)?[:{]")
CONSTANT = re.compile(r"^(?:static\s+)?(?:inline\s+)?(?:constexpr\s+|const\s+)+[\w:<>,\*\s]+?\s\*?\s*(\w+)\s*(?:=|\{|\[)")
FUNCTION = re.compile(r"^(?:static\s+|inline\s+|constexpr\s+|template\s*<[^>]*>\s*)*(?:const\s+)?[\w:<>,\*&\s]+?[\s\*&](\w+)\s*\(")
NAMESPACE = re.compile(r"^namespace ([\w:]+) \{")


def scan(path):
    """(namespace, name, alias target or None) of each top-level definition in one file."""
    found = []
    namespace = "?"
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = NAMESPACE.match(line)
            if m:
                namespace = m.group(1)
                continue
            if line.startswith((" ", "\t", "#", "/", "}", "{")):
                continue
            m = ALIAS.match(line)
            if m:
                found.append((namespace, m.group(1), m.group(2)))
                continue
            for pattern in (TYPE, CONSTANT, FUNCTION):
                m = pattern.match(line)
                if m and m.group(1) not in KEYWORDS:
                    found.append((namespace, m.group(1), None))
                    break
    return found


def main():
    root = sys.argv[1]
    where = collections.defaultdict(set)
    targets = collections.defaultdict(set)
    for path in sorted(glob.glob(os.path.join(root, "src", "**", "*.cpp"), recursive=True)):
        rel = os.path.relpath(path, root)
        for namespace, name, target in scan(path):
            where[(namespace, name)].add(rel)
            targets[(namespace, name)].add(target)
    shared = [(k, sorted(v)) for k, v in sorted(where.items())
              if len(v) > 1 and not (None not in targets[k] and len(targets[k]) == 1)]
    for (namespace, name), files in shared:
        print(f"{namespace}::{name} is defined in {len(files)} files: {', '.join(files)}")
    print(f"{len(shared)} name(s) defined in more than one library file")
    return 1 if shared else 0


if __name__ == "__main__":
    sys.exit(main())
