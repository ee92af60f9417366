"""Series made from this project's results, for the two writers (duck-typed: the result
classes live above this package and call these from their ``to_*_json`` methods).

- metrics: one series per column (``macs``, ``params``, ``activation_bytes``,
  ``param_bytes``), keyed by node;
- a run: per node ``max abs activation`` (the largest |value| of its finite outputs) and
  ``non-finite`` (NaN + Inf in its outputs), and, for Netron, per value ``min``, ``max``,
  ``mean``, ``std``;
- a diff: per node of ``b``'s main graph ``status`` (added / changed / renamed /
  unchanged, filled as the diff view fills them) and ``weight change`` (the largest
  max |b − a| of the changed weights it reads).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ..model import Graph
from ._data import Entry, NodeSeries, Value, node_entries

#: The diff view's fills (views/_overlay.py PALETTE), as a status series' colours.
STATUS_FILLS = {"added": "#b2f2bb", "changed": "#ffe066", "renamed": "#a5d8ff",
                "unchanged": "#ffffff"}  # fmt: skip
RUN_NODE_SERIES = ("max abs activation", "non-finite")
RUN_VALUE_SERIES = ("min", "max", "mean", "std")
DIFF_SERIES = ("status", "weight change")
#: How a run names a node the file left unnamed: ``<op_type>#<index>`` (runs/_plan.py).
_MADE_UP = re.compile(r".*#\d+")


class _Record(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def op_type(self) -> str: ...
    @property
    def stats(self) -> Any: ...


def series_of(
    columns: Mapping[str, Mapping[str, Value | None]], graph: Graph | None = None
) -> list[NodeSeries]:
    """One series per column of node name → value (None left out)."""
    return [NodeSeries(name, node_entries(values, graph)) for name, values in columns.items()]


def run_series(records: Iterable[_Record], values_too: bool = False) -> list[NodeSeries]:
    """The series of a run's tensor records (see the module docstring)."""
    largest: dict[tuple[str, str], float] = {}
    nonfinite: dict[tuple[str, str], float] = {}
    first_of: dict[str, str] = {}  # an unnamed node → its first output (execution order)
    per_value: dict[str, list[Entry]] = {name: [] for name in RUN_VALUE_SERIES}
    for record in records:
        stats = record.stats
        if stats is None:
            continue
        key = (record.node, "node")
        if _MADE_UP.fullmatch(record.node) and record.node.startswith(record.op_type):
            # A node the file left unnamed is known to viewers by its first output.
            key = (first_of.setdefault(record.node, record.name), "value")
        if stats.abs_max is not None:
            largest[key] = max(largest.get(key, 0.0), float(stats.abs_max))
        nonfinite[key] = nonfinite.get(key, 0.0) + float(stats.nan + stats.inf)
        if values_too:
            for name in RUN_VALUE_SERIES:
                value = getattr(stats, name, None)
                if value is not None:
                    per_value[name].append(Entry(record.name, "value", float(value)))
    found = [
        NodeSeries("max abs activation", _entries(largest)),
        NodeSeries("non-finite", _entries(nonfinite)),
    ]
    if values_too:
        found += [NodeSeries(f"value {name}", tuple(e)) for name, e in per_value.items() if e]
    return found


def _entries(values: Mapping[tuple[str, str], float]) -> tuple[Entry, ...]:
    return tuple(Entry(key, kind, value) for (key, kind), value in values.items())  # type: ignore[arg-type]


def diff_series(
    status: Mapping[str, str],
    weight_change: Mapping[str, float],
    graph: Graph | None,
) -> list[NodeSeries]:
    """``status`` (text, filled as the diff view) and ``weight change`` (numbers)."""
    entries = tuple(
        Entry(e.key, e.kind, e.value, STATUS_FILLS.get(str(e.value)))
        for e in node_entries(dict(status), graph)
    )
    return [
        NodeSeries("status", entries),
        NodeSeries("weight change", node_entries(dict(weight_change), graph)),
    ]
