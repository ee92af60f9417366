"""Per-node parameters, memory and compute of a graph, and their totals per scope."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..model import Graph, Model, Node, scope_parts
from ..tensors import Tensor
from .rules import rule_for
from .shapes import GraphShapes, NodeView, checked_dims, inferred_types, needs_inference

Series = Literal["macs", "params", "activation_bytes", "param_bytes"]
SERIES: tuple[str, ...] = ("macs", "params", "activation_bytes", "param_bytes")
COLUMNS = ("name", "op_type", "domain", "scope", "params", "param_bytes", "activation_bytes",
           "macs")  # fmt: skip


def scope_of(name: str) -> str:
    """A node name's scope: the non-empty parts before its last ``/`` (at most 64), the
    scope the explorer groups the node under."""
    return "/".join(scope_parts(name.rpartition("/")[0]))


@dataclass
class Metrics:
    """Parameters, activation memory and MACs of every node of a graph.

    ``rows``: one dict per node of the main graph, in file order, with the keys of
    :data:`COLUMNS`; ``activation_bytes`` and ``macs`` are None (not 0) where a shape
    is unknown. ``assumed_dims``: symbolic dimensions not bound by ``dims=`` and taken
    as 1. ``unknown``: how many nodes' MACs / activation bytes could not be computed.
    ``notes``: what shape inference did, when there is something to say.
    """

    rows: list[dict[str, Any]]
    assumed_dims: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def unknown(self) -> dict[str, int]:
        return {
            key: sum(1 for row in self.rows if row[key] is None)
            for key in ("macs", "activation_bytes")
        }

    @property
    def totals(self) -> dict[str, int]:
        """Sums over the graph (unknown values left out; see :attr:`unknown`)."""
        return {"nodes": len(self.rows), **_sums(self.rows)}

    def by_scope(self, depth: int | None = None) -> list[dict[str, Any]]:
        """Totals per name scope, each including everything beneath it.

        ``depth=None``: every scope at every depth (nested scopes overlap their parents);
        ``depth=k``: scopes cut at ``k`` components, so the rows partition the graph
        (nodes outside any scope under ``""``). In order of first appearance.
        """
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)):
            raise TypeError(f"depth must be an int or None, not {depth!r}")
        if depth is not None and depth < 0:
            raise ValueError(f"depth must not be negative, not {depth}")
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows:
            parts = row["scope"].split("/") if row["scope"] else []
            if depth is not None:
                groups.setdefault("/".join(parts[:depth]), []).append(row)
                continue
            for k in range(1, len(parts) + 1):
                groups.setdefault("/".join(parts[:k]), []).append(row)
        return [
            {"scope": scope, "nodes": len(rows), **_sums(rows)} for scope, rows in groups.items()
        ]

    def series(self, name: str) -> dict[str, int]:
        """Node name → value of one column (``macs``, ``params``, ``activation_bytes``,
        ``param_bytes``), unknown values left out: what an overlay takes."""
        if name not in SERIES:
            raise ValueError(f"no series {name!r}; choose one of {', '.join(SERIES)}")
        return {row["name"]: row[name] for row in self.rows if row[name] is not None}

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "Metrics.to_pandas needs pandas: pip install onnx_explorer[pandas]"
            ) from exc
        frame = pd.DataFrame(self.rows, columns=list(COLUMNS))
        for column in ("activation_bytes", "macs"):  # None stays missing, not NaN floats
            frame[column] = frame[column].astype("Int64")
        return frame

    def to_dict(self) -> dict[str, Any]:
        return {
            "totals": self.totals,
            "unknown": self.unknown,
            "assumed_dims": list(self.assumed_dims),
            "notes": list(self.notes),
            "rows": self.rows,
        }


def _sums(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {key: sum(row[key] or 0 for row in rows) for key in SERIES}


def metrics(
    model_or_graph: Model | Graph,
    *,
    dims: Mapping[str, int] | None = None,
    infer: bool | None = None,
) -> Metrics:
    """Parameters, activation memory and multiply-accumulates of every node.

    One row per node of the main graph (or of the graph given). A node holding
    If/Loop/Scan bodies counts their parameters and MACs as its own (a Loop's body
    once: the trip count is not known). A weight (initializer, Constant output,
    sparse initializer) counts toward the first node reading it, in file order, so a
    shared weight is counted once; a Constant no node reads counts toward itself.

    Shapes come from the file, completed by the format's shape inference: ``infer``
    True runs it, False never, None on graphs of up to 50,000 nodes whose file lacks
    some shapes. Symbolic dimensions take their sizes from ``dims``
    (``{"batch": 1, "sequence": 128}``); unbound ones are taken as 1 and listed in
    :attr:`Metrics.assumed_dims`. MAC conventions: :mod:`onnx_explorer.metrics.rules`.
    """
    bound = checked_dims(dims)
    model: Model | None
    if isinstance(model_or_graph, Model):
        model, graph = model_or_graph, model_or_graph.graph
    elif isinstance(model_or_graph, Graph):
        model, graph = model_or_graph.model, model_or_graph
    else:
        raise TypeError(f"metrics takes a Model or a Graph, not {type(model_or_graph).__name__}")
    notes: list[str] = []
    inferred = None
    if needs_inference(graph):
        inferred = inferred_types(model, graph, infer)
        if inferred is None and model is not None and model.type_inference is not None:
            notes.append(f"shapes from the file only: inference skipped for {len(graph):,} "
                         "nodes (infer=True runs it)")  # fmt: skip
        elif inferred is not None and inferred.error:
            notes.append(f"shapes from the file only: {inferred.error}")
    assumed: set[str] = set()
    graph_format = model.format if model is not None else "onnx"
    walker = _Walker(graph_format, inferred, bound, assumed)
    rows = walker.rows(graph)
    return Metrics(rows, tuple(sorted(assumed)), notes)


class _Walker:
    """Computes rows graph by graph; shares the claimed weights across bodies."""

    def __init__(self, graph_format: str, inferred: Any, dims: dict[str, int], assumed: set[str]):
        self.graph_format = graph_format
        self.inferred = inferred
        self.dims = dims
        self.assumed = assumed
        self.claimed: set[int] = set()  # id() of weights already counted

    def rows(
        self, graph: Graph, outer: GraphShapes | None = None, outer_weights: Any = None
    ) -> list[dict[str, Any]]:
        shapes = GraphShapes(
            graph, self.inferred, self.dims, self.assumed, outer, self.graph_format
        )
        weights = _Weights(graph, outer_weights)
        rows = []
        producers: dict[str, dict[str, Any]] = {}
        with_bodies = graph.nodes_with_bodies()
        for node in graph.nodes:
            row = self._row(node, shapes, weights, node.index in with_bodies)
            rows.append(row)
            if node.op_type in ("Constant", "Const") and node.outputs:
                producers[node.outputs[0]] = row
        for name, row in producers.items():  # a Constant nobody reads counts toward itself
            tensor = weights.get(name)
            if tensor is not None and id(tensor) not in self.claimed:
                self.claimed.add(id(tensor))
                row["params"] += tensor.size
                row["param_bytes"] += tensor.nbytes
        return rows

    def _row(
        self, node: Node, shapes: GraphShapes, weights: _Weights, has_bodies: bool
    ) -> dict[str, Any]:
        params = param_bytes = 0
        for name in node.inputs:
            tensor = weights.get(name) if name else None
            if tensor is not None and id(tensor) not in self.claimed:
                self.claimed.add(id(tensor))
                params += tensor.size
                param_bytes += tensor.nbytes
        macs = rule_for(node, self.graph_format)(NodeView(node, shapes))
        if has_bodies:
            for _, body in node.subgraphs():
                for inner in self.rows(body, shapes, weights):
                    params += inner["params"]
                    param_bytes += inner["param_bytes"]
                    if macs is not None:
                        macs += inner["macs"] or 0
        activation: int | None = 0
        for name in node.outputs:
            size = shapes.nbytes(name) if name else 0
            activation = None if size is None or activation is None else activation + size
        return {
            "name": node.name,
            "op_type": node.op_type,
            "domain": node.domain,
            "scope": scope_of(node.name),
            "params": params,
            "param_bytes": param_bytes,
            "activation_bytes": activation,
            "macs": macs,
        }


class _Weights:
    """Name → weight tensor visible in a graph: its own, then the enclosing graphs'."""

    def __init__(self, graph: Graph, outer: _Weights | None) -> None:
        self._own: dict[str, Tensor] = dict(graph.initializers)
        for name, sparse in graph.sparse_initializers.items():
            self._own.setdefault(name, sparse.values)
        for name, tensor in graph.constants().items():
            self._own.setdefault(name, tensor)
        self._outer = outer

    def get(self, name: str) -> Tensor | None:
        found = self._own.get(name)
        if found is None and self._outer is not None:
            return self._outer.get(name)
        return found
