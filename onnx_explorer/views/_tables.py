"""Rows for the explorer's lists and tables: node search, tensor listings and a tensor's
statistics (pure, no widgets).

Search must answer in well under 100 ms on 100,000 nodes, so the index keeps one
lower-cased haystack string per node and the filters are plain list scans.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..errors import ExplorerError
from ..model import Graph, Node, location_name
from ..stats import SAMPLE_SIZE, TensorStats
from ..tensors import Tensor
from ._text import number_text, share_text


class SearchError(ExplorerError, ValueError):
    """A search pattern that cannot be used (an invalid regular expression)."""


class NodeSearch:
    """Search a graph's nodes by name, op type or regular expression, filtered by op and domain."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        nodes = graph.nodes
        self._names = [n.name for n in nodes]
        self._ops = [n.op_type for n in nodes]
        self._domains = [n.domain or "ai.onnx" for n in nodes]
        # One string per node: "name\0op" lower-cased; \0 never occurs in a query we pass on.
        self._haystack = [f"{n.name}\0{n.op_type}".lower() for n in nodes]
        self.op_counts: dict[str, int] = dict(Counter(self._ops).most_common())
        self.domain_counts: dict[str, int] = dict(Counter(self._domains).most_common())

    def __len__(self) -> int:
        return len(self._names)

    def search(
        self,
        text: str = "",
        *,
        regex: bool = False,
        op_type: str | None = None,
        domain: str | None = None,
    ) -> list[int]:
        """Positions of matching nodes in file order.

        ``text`` matches the node name or op type, case-insensitively: as a substring, or
        as a regular expression (``re.search``) when ``regex`` is true.
        """
        candidates: range | list[int] = range(len(self._names))
        if op_type:
            ops = self._ops
            candidates = [i for i in candidates if ops[i] == op_type]
        if domain:
            domains = self._domains
            candidates = [i for i in candidates if domains[i] == domain]
        text = text.strip()
        if not text:
            return list(candidates)
        hay = self._haystack
        if regex:
            try:
                pattern = re.compile(text, re.IGNORECASE)
            except re.error as exc:
                raise SearchError(f"invalid regular expression {text!r}: {exc}") from None
            names, ops = self._names, self._ops
            return [i for i in candidates if pattern.search(names[i]) or pattern.search(ops[i])]
        needle = text.lower().replace("\0", "")
        return [i for i in candidates if needle in hay[i]]

    def node(self, position: int) -> Node:
        return self.graph.nodes[position]


@dataclass(frozen=True)
class TensorRow:
    """One stored tensor of a graph, as the tensor list shows it (no bytes read)."""

    name: str
    kind: str  # "initializer", "constant", "sparse_initializer"
    dtype: str
    shape: tuple[int, ...]
    size: int
    nbytes: int
    location: str
    tensor: Tensor


def tensor_rows(graph: Graph) -> list[TensorRow]:
    """Initializers, sparse initializers and Constant values of one graph."""
    rows: list[TensorRow] = []
    seen: set[int] = set()

    def add(name: str, tensor: Tensor, kind: str) -> None:
        if id(tensor) in seen:
            return
        seen.add(id(tensor))
        rows.append(
            TensorRow(
                name,
                kind,
                tensor.dtype_name,
                tensor.shape,
                tensor.size,
                tensor.nbytes,
                location_name(tensor.location.kind, kind),
                tensor,
            )
        )

    for name, tensor in graph.initializers.items():
        add(name, tensor, "initializer")
    for name, sparse in graph.sparse_initializers.items():
        add(name, sparse.values, "sparse_initializer")
    for name, tensor in graph.constants().items():
        add(name, tensor, "constant")
    return rows


SORT_KEYS = {
    "size": (lambda r: (r.nbytes, r.name), True),
    "name": (lambda r: r.name.lower(), False),
    "dtype": (lambda r: (r.dtype, -r.nbytes, r.name), False),
    "location": (lambda r: (r.location, -r.nbytes, r.name), False),
}


def sort_rows(rows: list[TensorRow], key: str = "size") -> list[TensorRow]:
    """Rows sorted by ``size`` (largest first), ``name``, ``dtype`` or ``location``."""
    try:
        func, descending = SORT_KEYS[key]
    except KeyError:
        raise ValueError(f"unknown sort key {key!r}; use one of {sorted(SORT_KEYS)}") from None
    return sorted(rows, key=func, reverse=descending)


# -- statistics as the tensor panel shows them ------------------------------------------
def stats_rows(stats: TensorStats, *, sample_size: int = SAMPLE_SIZE) -> list[tuple[str, str]]:
    """The user-facing statistics as (label, value) rows: no internal flags, zeros as a count
    and a percentage, NaN/Inf for float values, and a note when percentiles are sampled."""
    rows = [
        ("min", number_text(stats.min)),
        ("max", number_text(stats.max)),
        ("mean", number_text(stats.mean)),
        ("std", number_text(stats.std)),
        ("largest |value|", number_text(stats.abs_max)),
        ("1st percentile", number_text(stats.p1)),
        ("median", number_text(stats.p50)),
        ("99th percentile", number_text(stats.p99)),
        ("zeros", share_text(round(stats.zeros * stats.count), stats.count)),
    ]
    if stats.is_float or stats.nan or stats.inf:
        rows.append(("NaN", share_text(stats.nan, stats.count)))
        rows.append(("±infinity", share_text(stats.inf, stats.count)))
    if not stats.exact_percentiles:
        rows.append(("percentiles", f"estimated from a random sample of {sample_size:,} values"))
    return rows
