"""ModelDiff: the result of comparing two models, with the questions views ask of it."""

from __future__ import annotations

import html
import math
import os
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..model import Model
from ..stats import Dequantizer, Histogram, histogram
from ..tensors import Tensor
from ._results import NodeChange, NodeRef, RemovedNode, TensorChange
from ._values import difference_stream

_LISTED = 20  # entries per section in repr / HTML before "… N more"
#: Characters that could hide or move text (controls, lone surrogates, bidi controls):
#: shown as U+FFFD, as the views do (views/quoting.py is above this layer).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\n\r\u2028\u2029]"
)  # line breaks too: one entry is one line


def _safe(value: Any) -> str:
    return _UNSAFE.sub("\ufffd", str(value))


TensorType = tuple[str, tuple[int, ...]]  # dtype name, shape
#: nodes_renamed, nodes_matched and the node statuses per graph path, made together.
NodeLists = tuple[
    list[tuple[NodeRef, NodeRef]], list[tuple[NodeRef, NodeRef]], dict[str, dict[str, str]]
]


class TensorPair:
    """Two matched tensors and how each is turned into real values (None: as stored).

    The tensors are looked up by name in their side's mapping when first read (a reader
    makes them on first lookup): a structure diff of 30,000 initializers compares only
    their dtypes and shapes (``type_a``, ``type_b``)."""

    __slots__ = (
        "_side_a", "_side_b", "compared", "dq_a", "dq_b", "layout_a", "layout_b", "name_a",
        "name_b", "type_a", "type_b",
    )  # fmt: skip

    def __init__(
        self,
        side_a: Mapping[str, Tensor],
        name_a: str,
        side_b: Mapping[str, Tensor],
        name_b: str,
        type_a: TensorType,
        type_b: TensorType,
        dq_a: Dequantizer | None = None,
        dq_b: Dequantizer | None = None,
        compared: str = "",  # TensorChange.compared: how a quantized side is read
        layout_a: tuple[int, ...] | None = None,  # transposed to line up with the other side
        layout_b: tuple[int, ...] | None = None,
    ) -> None:
        self._side_a, self._side_b = side_a, side_b
        self.name_a, self.name_b = name_a, name_b
        self.type_a, self.type_b = type_a, type_b
        self.dq_a, self.dq_b = dq_a, dq_b
        self.compared = compared
        self.layout_a, self.layout_b = layout_a, layout_b

    @property
    def a(self) -> Tensor:
        return self._side_a[self.name_a]

    @property
    def b(self) -> Tensor:
        return self._side_b[self.name_b]

    @property
    def as_stored(self) -> bool:
        """Both sides compared as stored: no dequantization, no transposition."""
        return (
            self.dq_a is None and self.dq_b is None and self.layout_a is None
            and self.layout_b is None
        )  # fmt: skip


def _number(value: Any) -> Any:
    """JSON has no NaN or infinity: null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class ModelDiff:
    """What changed from model ``a`` to model ``b`` (see :func:`compare_models`)."""

    def __init__(
        self,
        a: Model,
        b: Model,
        *,
        model_changes: list[tuple[str, Any, Any]],
        nodes_added: list[NodeRef],
        nodes_removed: list[NodeRef],
        nodes_changed: list[NodeChange],
        tensors_added: list[str],
        tensors_removed: list[str],
        tensors_renamed: list[tuple[str, str]],
        tensors_changed: list[TensorChange],
        tensor_pairs: dict[tuple[str, str], TensorPair],
        removed_where: dict[str, list[RemovedNode]],
        settle: Callable[[], NodeLists],
        atol: float = 0.0,
        rtol: float = 0.0,
    ) -> None:
        self.a, self.b = a, b
        self.model_changes = model_changes
        self.nodes_added = nodes_added
        self.nodes_removed = nodes_removed
        self.nodes_changed = nodes_changed
        # Renamed and matched pairs and the statuses are made when one of them is first
        # read (a renamed export has a pair per node: most callers ask for none of them).
        self._settle: Callable[[], NodeLists] | None = settle
        self._settled: NodeLists | None = None
        self._settling = threading.Lock()
        self.tensors_added = tensors_added
        self.tensors_removed = tensors_removed
        self.tensors_renamed = tensors_renamed
        self.tensors_changed = tensors_changed
        self.atol, self.rtol = atol, rtol
        self._pairs = tensor_pairs
        self._removed_where = removed_where
        self._changes = {(c.b.graph, c.b.name): c for c in nodes_changed}

    def _lists(self) -> NodeLists:
        found = self._settled
        if found is None:
            with self._settling:
                found = self._settled
                if found is None:
                    assert self._settle is not None
                    found = self._settled = self._settle()
                    self._settle = None
        return found

    @property
    def nodes_renamed(self) -> list[tuple[NodeRef, NodeRef]]:
        """(a, b) for each matched pair whose name changed, nothing else about it."""
        return self._lists()[0]

    @property
    def nodes_matched(self) -> list[tuple[NodeRef, NodeRef]]:
        """Every (a, b) node pair the match found, in every graph: renamed, changed or not."""
        return self._lists()[1]

    @property
    def equal(self) -> bool:
        """No change at all (renames aside), values within the tolerances."""
        return not (
            self.model_changes or self.nodes_added or self.nodes_removed or self.nodes_changed
            or self.tensors_added or self.tensors_removed or self.tensors_changed
        )  # fmt: skip

    # -- questions a view asks ----------------------------------------------------------
    def node_status(self, graph_path: str = "/") -> dict[str, str]:
        """b's node names in that graph → "added" | "changed" | "renamed" | "unchanged"."""
        return dict(self._lists()[2].get(graph_path, {}))

    def removed_in(self, graph_path: str = "/") -> list[RemovedNode]:
        """a's nodes removed from the graph b calls ``graph_path``, with their wiring."""
        return list(self._removed_where.get(graph_path, []))

    def node_change(self, b_name: str, graph_path: str = "/") -> NodeChange | None:
        return self._changes.get((graph_path, b_name))

    def tensor_change(self, name: str) -> TensorChange | None:
        """The change of the tensor b calls ``name`` (or a, for one b does not have)."""
        for change in self.tensors_changed:
            if change.b == name:
                return change
        for change in self.tensors_changed:
            if change.a == name:
                return change
        return None

    def dequantization(self, change: TensorChange, side: str) -> Dequantizer | None:
        """How side ``"a"`` or ``"b"`` of a compared pair was turned into real numbers
        (None: compared as stored); pass it to ``Tensor.stats(dequantize=...)``."""
        pair = self._pairs.get((change.a or "", change.b or ""))
        if pair is None:
            return None
        return pair.dq_a if side == "a" else pair.dq_b

    def difference_histogram(self, change: TensorChange, bins: int = 64) -> Histogram:
        """Histogram of ``b - a`` element-wise (dequantized / widened as compared), streamed."""
        pair = self._pairs.get((change.a or "", change.b or ""))
        if pair is None:
            raise KeyError(f"no compared tensor pair {change.a!r} / {change.b!r} in this diff")
        if change.error:
            raise ValueError(f"tensor {change.b!r}: {change.error}")
        try:
            stream = difference_stream(
                pair.a, pair.b, pair.dq_a, pair.dq_b, pair.layout_a, pair.layout_b
            )
            return histogram(stream, bins)
        finally:
            pair.a.release()
            pair.b.release()

    # -- output ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the schema of ``onnx-explorer diff --json`` (see the README)."""
        return {
            "equal": self.equal,
            "model": [{"field": f, "a": old, "b": new} for f, old, new in self.model_changes],
            "nodes": {
                "added": [r.label for r in self.nodes_added],
                "removed": [r.label for r in self.nodes_removed],
                "renamed": [[a.label, b.label] for a, b in self.nodes_renamed],
                "changed": [self._node_dict(c) for c in self.nodes_changed],
            },
            "tensors": {
                "added": list(self.tensors_added),
                "removed": list(self.tensors_removed),
                "renamed": [list(pair) for pair in self.tensors_renamed],
                "changed": [self._tensor_dict(c) for c in self.tensors_changed],
            },
        }

    def weight_change(self, graph_path: str = "/") -> dict[str, float]:
        """b's node names in that graph → the largest max |b − a| of the changed weights
        each reads (nodes reading none left out)."""
        changed = {c.b: c.max_abs for c in self.tensors_changed if c.b and c.max_abs is not None}
        found: dict[str, float] = {}
        for node in self.b.graph_at(graph_path).nodes:
            sizes = [changed[name] for name in node.inputs if name in changed]
            if sizes:
                found[node.name] = max(sizes)
        return found

    def to_model_explorer_json(
        self,
        series: str = "status",
        *,
        path: str | os.PathLike[str] | None = None,
        graph_id: str | None = None,
    ) -> dict[str, Any]:
        """Model ``b``'s main graph as Model Explorer node data: ``"status"`` (added /
        changed / renamed / unchanged, filled as the diff view fills them) or
        ``"weight change"`` (:meth:`weight_change`); written to ``path`` (a ``.json``) when
        given. See :mod:`onnx_explorer.node_data`."""
        from ..node_data import DIFF_SERIES, model_explorer_json, write_json

        if series not in DIFF_SERIES:
            raise ValueError(f"no series {series!r}; choose one of {', '.join(DIFF_SERIES)}")
        found = {s.name: s for s in self._node_series()}
        data = model_explorer_json(found[series], graph_id=graph_id)
        if path is not None:
            write_json(data, path)
        return data

    def to_netron_json(self, *, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Model ``b``'s main graph as a Netron attachment: per node ``status`` and
        ``weight change``; written to ``path`` (a ``.json``) when given."""
        from ..node_data import netron_json, write_json

        data = netron_json(self._node_series())
        if path is not None:
            write_json(data, path)
        return data

    def _node_series(self) -> list[Any]:
        from ..node_data import diff_series

        return diff_series(self.node_status("/"), self.weight_change("/"), self.b.graph)

    @staticmethod
    def _node_dict(c: NodeChange) -> dict[str, Any]:
        return {"a": c.a.label, "b": c.b.label, "op_type": c.b.op_type, "changes": list(c.changes)}

    @staticmethod
    def _tensor_dict(c: TensorChange) -> dict[str, Any]:
        return {
            "a": c.a, "b": c.b, "max_abs": _number(c.max_abs), "max_rel": _number(c.max_rel),
            "mean_abs": _number(c.mean_abs), "cosine": _number(c.cosine),
            "differing": c.differing, "dtype_a": c.dtype_a, "dtype_b": c.dtype_b,
            "shape_a": list(c.shape_a) if c.shape_a is not None else None,
            "shape_b": list(c.shape_b) if c.shape_b is not None else None,
            "bit_identical": c.bit_identical, "error": c.error, "compared": c.compared,
        }  # fmt: skip

    def _sections(self) -> list[tuple[str, list[str]]]:
        def tensor_line(c: TensorChange) -> str:
            name = c.b if c.a == c.b else f"{c.a} → {c.b}"
            head = f"~ {name}"
            if c.dtype_a != c.dtype_b:
                how = ", compared dequantized" if c.dequantized else ""
                head += f" ({c.dtype_a} → {c.dtype_b}{how})"
            if c.error:
                return f"{head}: {c.error}"
            if c.max_abs is None:
                return head
            return (
                f"{head}: max abs {c.max_abs:.4g}, max rel {c.max_rel:.4g}, "
                f"cosine {c.cosine:.6g}, {c.differing} differing"
            )

        return [
            ("model", [f"{f}: {old!r} → {new!r}" for f, old, new in self.model_changes]),
            ("nodes added", [f"+ {r.label} ({r.op_type})" for r in self.nodes_added]),
            ("nodes removed", [f"- {r.label} ({r.op_type})" for r in self.nodes_removed]),
            ("nodes changed", [f"~ {c.b.label} ({c.b.op_type}): " + "; ".join(c.changes)
                               for c in self.nodes_changed]),
            ("nodes renamed", [f"{a.label} → {b.label}" for a, b in self.nodes_renamed]),
            ("tensors added", [f"+ {n}" for n in self.tensors_added]),
            ("tensors removed", [f"- {n}" for n in self.tensors_removed]),
            ("tensors changed", [tensor_line(c) for c in self.tensors_changed]),
            ("tensors renamed", [f"{a} → {b}" for a, b in self.tensors_renamed]),
        ]  # fmt: skip

    def _title(self) -> str:
        def name(model: Model, side: str) -> str:
            return model.path.name if model.path is not None else side

        verdict = "equal" if self.equal else "different"
        tolerance = f" (atol {self.atol:g}, rtol {self.rtol:g})" if self.atol or self.rtol else ""
        return f"ModelDiff {name(self.a, 'a')} → {name(self.b, 'b')}: {verdict}{tolerance}"

    def __repr__(self) -> str:
        lines = [_safe(self._title())]
        for title, entries in self._sections():
            if not entries:
                continue
            lines.append(f"{title} ({len(entries)}):")
            lines.extend("  " + _safe(e) for e in entries[:_LISTED])
            if len(entries) > _LISTED:
                lines.append(f"  … {len(entries) - _LISTED} more")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = [f"<div><b>{html.escape(_safe(self._title()))}</b>"]
        for title, entries in self._sections():
            if not entries:
                continue
            items = "".join(f"<li>{html.escape(_safe(e))}</li>" for e in entries[:_LISTED])
            if len(entries) > _LISTED:
                items += f"<li>… {len(entries) - _LISTED} more</li>"
            parts.append(f"<div>{html.escape(title)} ({len(entries)}):<ul>{items}</ul></div>")
        parts.append("</div>")
        return "".join(parts)
