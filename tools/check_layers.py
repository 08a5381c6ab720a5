#!/usr/bin/env python3
"""Checks that the includes among the engine's and the block layer's files
form layers with no cycle (docs/table.md, "The engine's files").

A unit is a header with its source (engine/internal/bucket_table.{h,cc});
a class split over files for their length is one unit: Table::Impl's files
(roundtable/table.h, engine/table.cc, engine/table_recovery.cc,
engine/table_check.cc, engine/table_operations.cc,
engine/table_salvage.cc, engine/batch_writer.{h,cc} which its
copies share, engine/internal/table_impl.h) are the table, at the
top, and the
placement library's ring schemes (engine/mapping/ring_placement.{h,cc})
belong to engine/mapping/placement, whose factory makes them. Besides no cycle among units, the folders keep their
order: io/base includes nothing else of the project, the public headers
(engine/include/roundtable/, included as "roundtable/NAME.h") only each
other, io/ nothing of engine/ but the public io types, engine/mapping/
nothing of the table, and no part under engine/internal/ includes the
table's public header.

  tools/check_layers.py [ROOT]            exit 1 naming what breaks a rule
  tools/check_layers.py [ROOT] --print    also print the units by layer
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:engine|io|roundtable)/[^"]+)"',
                     re.M)
# The public headers are included as "roundtable/NAME.h" and live in
# engine/include/roundtable/.
PUBLIC = "engine/include/"
TABLE = PUBLIC + "roundtable/table"
# What io/ and engine/mapping/ may include of the public headers: the types
# they share with a user (IoStats, Backend), the export macro, and for the
# mapping folder its own two headers.
IO_PUBLIC = {PUBLIC + "roundtable/io.h", PUBLIC + "roundtable/export.h"}
MAPPING_PUBLIC = IO_PUBLIC | {PUBLIC + "roundtable/mapping.h",
                              PUBLIC + "roundtable/placement.h"}
GROUPS = {
    "engine/table": TABLE,
    "engine/internal/table_impl": TABLE,
    "engine/table_recovery": TABLE,
    "engine/table_check": TABLE,
    "engine/table_operations": TABLE,
    "engine/table_salvage": TABLE,
    "engine/batch_writer": TABLE,
    "engine/mapping/ring_placement": "engine/mapping/placement",
}


def unit_of(path):
    stem = os.path.splitext(path)[0]
    return GROUPS.get(stem, stem)


def read_graph(root):
    edges = {}
    files = {}
    for top in ("engine", "io"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(folder, name), root)
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    files[path] = [
                        PUBLIC + inc if inc.startswith("roundtable/") else inc
                        for inc in INCLUDE.findall(f.read())
                    ]
    for path, includes in files.items():
        unit = unit_of(path)
        edges.setdefault(unit, set())
        for inc in includes:
            if inc not in files:
                continue
            if unit_of(inc) != unit:
                edges[unit].add(unit_of(inc))
    return files, edges


def find_cycle(edges):
    state = {}
    stack = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state:
                cycle = visit(v)
                if cycle:
                    return cycle
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(edges):
        if u not in state:
            cycle = visit(u)
            if cycle:
                return cycle
    return None


def folder_faults(files):
    faults = []
    for path, includes in files.items():
        for inc in includes:
            rule = None
            if path.startswith("io/base/") and not inc.startswith("io/base/"):
                rule = "io/base includes nothing else of the project"
            elif path.startswith(PUBLIC) and not inc.startswith(PUBLIC):
                rule = "a public header includes only public headers"
            elif (path.startswith("io/") and inc.startswith("engine/") and
                  inc not in IO_PUBLIC):
                rule = "io/ includes nothing of engine/ but roundtable/io.h"
            elif (path.startswith("engine/mapping/") and
                  inc.startswith("engine/") and
                  not inc.startswith("engine/mapping/") and
                  inc not in MAPPING_PUBLIC):
                rule = "engine/mapping/ includes nothing of the table"
            elif (path.startswith("engine/internal/") and
                  unit_of(path) != TABLE and inc == TABLE + ".h"):
                rule = ("the parts include roundtable/options.h, "
                        "not the table")
            if rule:
                faults.append(f"{path} includes {inc}: {rule}")
    return faults


def layers(edges):
    level = {}

    def depth(u):
        if u not in level:
            level[u] = 1 + max((depth(v) for v in edges.get(u, ())),
                               default=-1)
        return level[u]

    for u in edges:
        depth(u)
    by_level = {}
    for u, d in level.items():
        by_level.setdefault(d, []).append(u)
    return by_level


def main(argv):
    args = [a for a in argv[1:] if a != "--print"]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    files, edges = read_graph(root)
    if not files:
        print(f"no engine/ or io/ sources under {root}")
        return 1
    faults = folder_faults(files)
    cycle = find_cycle(edges)
    if cycle:
        faults.append("cycle: " + " -> ".join(cycle))
    for fault in faults:
        print(fault)
    if faults:
        return 1
    if "--print" in argv:
        for d, units in sorted(layers(edges).items(), reverse=True):
            print(f"{d:2d}  " + "  ".join(sorted(units)))
    print(f"{len(edges)} units in layers, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
