"""List the import cycles inside ``onnx_explorer``, lazy (function-level) imports included.

Usage: ``.venv/bin/python scripts/import_cycles.py [--type-checking]``

Every ``import`` statement counts, wherever it sits (module level, inside a function,
inside ``try``); imports under ``if TYPE_CHECKING:`` are left out unless
``--type-checking`` is given, because they never run. Prints each strongly connected
group of modules with one cycle through it and the line of each import on that
cycle; exits 1 when there is any. ``lint-imports`` (contracts in ``pyproject.toml``)
is what CI runs; this script is the quick answer to "where exactly is the cycle".
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import grimp

PACKAGE = "onnx_explorer"


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """Tarjan's algorithm over module → imported module edges (iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1 or node in edges[node]:
                        groups.append(sorted(group))
    return groups


def one_cycle(graph: grimp.ImportGraph, group: list[str]) -> list[str]:
    """A shortest cycle through the group's first module, staying inside the group."""
    members = set(group)
    start = group[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.find_modules_directly_imported_by(node)):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return [start]


def main(argv: list[str]) -> int:
    graph = grimp.build_graph(
        PACKAGE, exclude_type_checking_imports="--type-checking" not in argv, cache_dir=None
    )
    groups = strongly_connected(graph)
    for group in groups:
        print(f"cycle group ({len(group)} modules): {', '.join(group)}")
        cycle = one_cycle(graph, group)
        for importer, imported in zip(cycle, cycle[1:]):
            details = graph.get_import_details(importer=importer, imported=imported)
            where = ", ".join(f"line {d['line_number']}" for d in details)
            print(f"    {importer} -> {imported}   ({where})")
    if not groups:
        print(f"no import cycles in {PACKAGE}")
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
