"""Import cycles inside ``onnx_explorer``, lazy (function-level) imports included.

Every ``import`` statement counts, wherever it sits (module level, inside a function,
inside ``try``). Two ways to use it:

- ``.venv/bin/python scripts/import_cycles.py [--no-type-checking]`` prints each
  strongly connected group of modules, one cycle through it and the line of each
  import on that cycle; exits 1 when there is any. Imports under
  ``if TYPE_CHECKING:`` count unless ``--no-type-checking`` is given.
- ``lint-imports`` runs it as the ``acyclic_modules`` contract (registered in
  ``pyproject.toml``; ``lint-imports`` puts the repository root on ``sys.path``).
  import-linter's own ``acyclic_siblings`` compares sibling packages, so it misses a
  cycle through a package's ``__init__`` (``readers`` → ``readers.graphdef`` →
  ``readers``); this contract looks at every module.

A few imports are allowed to close a cycle: those listed in the contract's
``ignore_imports`` in ``pyproject.toml`` (the model's convenience methods, e.g.
``graph.to_dot()`` importing ``views`` inside the method). The list is explicit and
short, each line with its reason there; an import on it that no longer exists is an
error, so the list cannot silently outgrow the code. The command line reads the same
list.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path

import grimp
from importlinter import Contract, ContractCheck, fields, output
from importlinter.application import contract_utils
from importlinter.application.contract_utils import AlertLevel

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PACKAGE = "onnx_explorer"


def strongly_connected(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """Groups of ``package``'s modules that import each other (Tarjan, iterative)."""
    prefix = package + "."
    modules = sorted(m for m in graph.modules if m == package or m.startswith(prefix))
    inside = set(modules)
    edges = {
        m: sorted(d for d in graph.find_modules_directly_imported_by(m) if d in inside)
        for m in modules
    }
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


def describe(graph: grimp.ImportGraph, groups: list[list[str]]) -> list[str]:
    """Lines naming each group, one cycle through it, and the import lines on it."""
    lines = []
    for group in groups:
        lines.append(f"cycle group ({len(group)} modules): {', '.join(group)}")
        cycle = one_cycle(graph, group)
        for importer, imported in pairwise(cycle):
            details = graph.get_import_details(importer=importer, imported=imported)
            where = ", ".join(f"line {d['line_number']}" for d in details)
            lines.append(f"    {importer} -> {imported}   ({where})")
    return lines


class AcyclicModulesContract(Contract):
    """import-linter contract: no module of ``packages`` takes part in an import cycle."""

    packages = fields.ListField(subfield=fields.StringField())
    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=AlertLevel.ERROR,
        )
        groups = [g for p in self.packages for g in strongly_connected(graph, p)]  # type: ignore[attr-defined]
        return ContractCheck(
            kept=not groups,
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
            metadata={"lines": describe(graph, groups)},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["lines"]:
            output.print_error(line, bold=not line.startswith(" "))
        output.new_line()


def allowed_imports(pyproject: Path = Path(__file__).parent.parent / "pyproject.toml") -> list[str]:
    """The ``ignore_imports`` of the ``acyclic_modules`` contract in ``pyproject.toml``."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "acyclic_modules":
            return list(contract.get("ignore_imports", []))
    return []


def main(argv: list[str]) -> int:
    graph = grimp.build_graph(
        PACKAGE, exclude_type_checking_imports="--no-type-checking" in argv, cache_dir=None
    )
    for line in allowed_imports():
        importer, imported = (part.strip() for part in line.split("->"))
        if not graph.direct_import_exists(importer=importer, imported=imported):
            print(f"allowed import {line!r} does not exist: remove it from pyproject.toml")
            return 1
        graph.remove_import(importer=importer, imported=imported)
    groups = strongly_connected(graph, PACKAGE)
    print("\n".join(describe(graph, groups)) or f"no import cycles in {PACKAGE}")
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
