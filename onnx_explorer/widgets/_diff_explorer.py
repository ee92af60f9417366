"""The notebook view of a model diff: model b drawn with what changed since a, and a list.

The graph view draws b with every node filled by its status (added, changed, renamed,
unchanged), a's removed nodes as dashed ghosts where they were, "N changes" on collapsed
scopes and a legend (:mod:`onnx_explorer.views._paint`). Beside it, the changes sorted
by size; picking one selects its node in the drawing and shows both sides: the changed
lines and each side's attributes, or both tensors' statistics and a histogram of the
element-wise difference. Everything from the models goes through :func:`html.esc`.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..errors import ExplorerError
from ..model import Graph, Model, Node
from ..readers import open_side
from ..tensors import Tensor
from ..views._paint import PALETTE, Ghost, Overlay, status_overlay
from ..views._text import (
    MISSING,
    as_text,
    attribute_text,
    model_name,
    number_text,
    shape_text,
    shorten,
)
from . import _html as h
from ._static import STATIC_DRAWING_WAIT, with_static_fallback

if TYPE_CHECKING:
    from ..model_diff import ModelDiff, TensorChange
    from ._compare_view import CompareView

#: Rows in the list of changes at most (the summary counts them all).
MAX_ROWS = 5000
NAME_CHARS = 80


@dataclass(frozen=True)
class ChangeRow:
    """One line of the list of changes: what it is about and how big it is."""

    kind: str  # "node" or "tensor"
    status: str  # added / removed / renamed / changed
    label: str  # the line shown (made printable)
    size: float
    item: Any  # NodeRef, (NodeRef, NodeRef), NodeChange, RemovedNode ref, name, TensorChange


def change_rows(diff: ModelDiff) -> list[ChangeRow]:
    """Node changes, then tensor changes, each sorted by size (largest first)."""
    nodes: list[ChangeRow] = []
    for change in diff.nodes_changed:
        first = change.changes[0] if change.changes else "changed"
        nodes.append(
            ChangeRow(
                "node",
                "changed",
                _line("changed", _ref_name(change.b), first),
                float(change.size),
                change,
            )
        )
    for ref in diff.nodes_added:
        nodes.append(
            ChangeRow("node", "added", _line("added", _ref_name(ref), ref.op_type), 1, ref)
        )
    for ref in diff.nodes_removed:
        line = _line("removed", _ref_name(ref), ref.op_type)
        nodes.append(ChangeRow("node", "removed", line, 1, ref))
    for a_ref, b_ref in diff.nodes_renamed:
        line = _line("renamed", f"{_ref_name(a_ref)} → {_ref_name(b_ref)}", "")
        nodes.append(ChangeRow("node", "renamed", line, 0.5, (a_ref, b_ref)))
    tensors: list[ChangeRow] = []
    for tc in diff.tensors_changed:
        name = tc.b if tc.b is not None else tc.a
        size = float("inf") if tc.error else float(tc.max_abs or 0.0)
        tensors.append(ChangeRow("tensor", "changed", _line("changed", name, _tensor_brief(tc)),
                                 size, tc))  # fmt: skip
    for name in diff.tensors_added:
        tensors.append(ChangeRow("tensor", "added", _line("added", name, "tensor"), 0, name))
    for name in diff.tensors_removed:
        tensors.append(ChangeRow("tensor", "removed", _line("removed", name, "tensor"), 0, name))
    for old, new in diff.tensors_renamed:
        line = _line("renamed", f"{as_text(old)} → {as_text(new)}", "tensor")
        tensors.append(ChangeRow("tensor", "renamed", line, 0, (old, new)))
    nodes.sort(key=lambda row: -row.size)
    tensors.sort(key=lambda row: -row.size)
    return nodes + tensors


def _ref_name(ref: Any) -> str:
    return as_text(ref.label)  # "#index" for a node without a name; bodies' graph path first


def _line(status: str, name: Any, detail: str) -> str:
    text = f"{status:<8} {shorten(as_text(name), NAME_CHARS)}"
    return f"{text}  {shorten(as_text(detail), NAME_CHARS)}" if detail else text


def _tensor_brief(tc: TensorChange) -> str:
    if tc.error:
        return tc.error
    parts = []
    if tc.dtype_a != tc.dtype_b:
        parts.append(f"{tc.dtype_a} → {tc.dtype_b}")
    if tc.dequantized:
        parts.append("compared dequantized")
    if tc.max_abs is not None:
        parts.append(f"max |Δ| {tc.max_abs:.3g}")
    return ", ".join(parts) or "differs"


def ghost_key(ref: Any) -> str:
    """The key of a removed node's ghost: its graph and position on side a."""
    return f"{ref.graph}#{ref.index}"


class DiffExplorer(widgets.VBox):
    """Model ``b`` drawn with what changed since ``a``, a list of changes, and details.

    Build one with :func:`explore_diff`. ``diff`` is the
    :class:`~onnx_explorer.model_diff.ModelDiff`; ``graph_view`` the drawing (a
    :class:`~onnx_explorer.widgets._graph_view.GraphView`);
    ``pick(k)`` shows the k-th change as a click on the list does. The switch on top
    (``show_side_by_side()``) shows a and b in two panes in sync instead
    (``side_by_side``, a :class:`~onnx_explorer.widgets.CompareView`).
    """

    def __init__(self, diff: ModelDiff, *, max_nodes: int | None = None, **kwargs: Any) -> None:
        from ._graph_view import GraphView

        self.diff = diff
        self.rows = change_rows(diff)
        self._overlays: dict[str, Overlay | None] = {}
        self._tensors: dict[str, dict[str, Tensor]] = {}
        self._detail_generation = 0
        self._pending_ghost = ""
        options = {"max_nodes": max_nodes} if max_nodes else {}
        # No folds: a changed layer must not hide among identical-looking ones.
        self.graph_view = GraphView(
            diff.b.graph, model=diff.b, overlay=self.overlay_for, fold_repeats=False, **options
        )
        self.summary = widgets.HTML(self._summary_html())
        self.changes = widgets.Select(
            options=[(row.label, k) for k, row in enumerate(self.rows[:MAX_ROWS])],
            value=None,
            rows=14,
            # 100 % plus the widget's own 2 px margins overflowed the side panel
            layout=widgets.Layout(width="calc(100% - 4px)"),
        )
        self.detail = widgets.HTML(h.STYLE + h.muted("Pick a change, or a node in the drawing."))
        self.plot = widgets.Image(format="png", layout=widgets.Layout(display="none"))
        self.plot.add_class("oxe-histogram")
        side = widgets.VBox(
            [self.summary, self.changes, self.detail, self.plot],
            layout=widgets.Layout(flex="0 0 36%", min_width="340px", overflow="auto"),
        )
        self.graph_view.layout = widgets.Layout(flex="1 1 64%", min_width="0")
        main = widgets.HBox([self.graph_view, side], layout=widgets.Layout(width="100%"))
        self._main = main
        self._max_nodes = max_nodes
        self.side_by_side: CompareView | None = None  # made when first switched to
        self.layout_switch = widgets.ToggleButtons(
            options=[("one pane", "one"), ("side by side", "two")], value="one",
            tooltips=["b drawn with what changed since a, and the list of changes",
                      "a and b in two panes kept in sync (compare_view)"],
            style={"button_width": "auto"},
        )  # fmt: skip
        super().__init__([self.layout_switch, main], **kwargs)
        self.layout_switch.observe(self._on_layout_switch, "value")
        self.add_class("oxe-explorer")
        self.add_class("oxe-diff")
        main.add_class("oxe-main")
        self.changes.add_class("oxe-diff-changes")
        self.changes.observe(self._on_pick, "value")
        self.graph_view.observe(self._on_node, "selected")
        self.graph_view.observe(self._on_ghost, "picked_ghost")
        self.graph_view.observe(self._on_drawn, "version")

    # -- one pane, or both models side by side ---------------------------------------
    def show_side_by_side(self, on: bool = True) -> CompareView | None:
        """Switch to a and b in two panes in sync (see
        :func:`~onnx_explorer.widgets.compare_view`), or back; returns the side-by-side view."""
        self.layout_switch.value = "two" if on else "one"
        return self.side_by_side

    def _on_layout_switch(self, change: Any) -> None:
        if change["new"] == "two":
            if self.side_by_side is None:
                from ._compare_view import CompareView

                self.side_by_side = CompareView(self.diff, max_nodes=self._max_nodes)
            self.children = (self.layout_switch, self.side_by_side)
        else:
            self.children = (self.layout_switch, self._main)

    # -- what the drawing is painted with -----------------------------------------
    def overlay_for(self, graph: Graph) -> Overlay | None:
        """Statuses, ghosts and hover lines of one graph of b (made once per graph)."""
        path = graph.path
        if path not in self._overlays:
            self._overlays[path] = self._make_overlay(path)
        return self._overlays[path]

    def _make_overlay(self, path: str) -> Overlay | None:
        diff = self.diff
        try:
            status = diff.node_status(path)
            removed = diff.removed_in(path)
        except (KeyError, ValueError):
            return None  # a graph the diff does not cover (a function body, say)
        titles: dict[str, str] = {}
        for name, word in status.items():
            if word == "changed":
                change = diff.node_change(name, path)
                if change is not None:
                    titles[name] = "\n".join(change.changes[:12])
        for a_ref, b_ref in diff.nodes_renamed:
            if b_ref.graph == path:
                titles[b_ref.name] = f"was {a_ref.name}"
        ghosts = [
            Ghost(ghost_key(r.ref), r.ref.name, r.ref.op_type, tuple(r.inputs), tuple(r.outputs))
            for r in removed
        ]
        return status_overlay(status, ghosts, titles, legend_title="since a")

    # -- picking a change ----------------------------------------------------------
    def pick(self, k: int) -> None:
        """Show the ``k``-th change (0 is the largest), as picking it in the list does."""
        self.changes.value = k

    def _on_pick(self, change: Any) -> None:
        k = change["new"]
        if k is None:
            return
        row = self.rows[k]
        if row.kind == "tensor":
            self._show_tensor(row)
            return
        item = row.item
        if row.status == "removed":
            self._show_removed(item)
            self._reveal_ghost(item)
            return
        ref = item.b if row.status == "changed" else item[1] if row.status == "renamed" else item
        self._select_in_drawing(ref)
        self._show_node(ref.name, ref.graph)

    def _select_in_drawing(self, ref: Any) -> None:
        view = self.graph_view
        try:
            graph = self.diff.b.graph_at(ref.graph)
        except KeyError:
            return
        if view.graph is not graph:
            view.show_graph(graph)
        if graph.has_node(ref.name):
            view.selected = ref.name

    def _reveal_ghost(self, ref: Any) -> None:
        """Bring a removed node's ghost into the drawing and ring it."""
        view = self.graph_view
        try:
            graph = self.diff.b.graph_at(ref.graph)
        except KeyError:
            return
        if view.graph is not graph:
            view.show_graph(graph)
        view.selected = ""
        self._pending_ghost = ghost_key(ref)
        if not self._ring_ghost():
            neighbour = self._ghost_neighbour(graph, ref)
            if neighbour is not None:
                view.focus(neighbour, view.hops)
                view.selected = ""  # the ghost is rung when the drawing lands

    def _ghost_neighbour(self, graph: Graph, ref: Any) -> str | None:
        for removed in self.diff.removed_in(graph.path):
            if ghost_key(removed.ref) != ghost_key(ref):
                continue
            for value in removed.inputs:
                node = graph.producer(value)
                if node is not None:
                    return node.name
            for value in removed.outputs:
                readers = graph.consumers(value)
                if readers:
                    return readers[0].name
        return None

    def _ring_ghost(self) -> bool:
        key = self._pending_ghost
        if not key:
            return False
        for item_id, entry in self.graph_view.ids.items():
            if entry.get("kind") == "ghost" and entry.get("key") == key:
                self.graph_view.highlight_id = item_id
                return True
        return False

    def _on_drawn(self, _change: Any) -> None:
        if self._pending_ghost and self._ring_ghost():
            self._pending_ghost = ""

    def _on_node(self, change: Any) -> None:
        name = change["new"]
        if name:
            self._pending_ghost = ""
            self._show_node(name, self.graph_view.graph.path)

    def _on_ghost(self, change: Any) -> None:
        key = change["new"]
        if not key:
            return
        for ref in self.diff.nodes_removed:
            if ghost_key(ref) == key:
                self._show_removed(ref)
                return

    # -- details -------------------------------------------------------------------
    def _set_detail(self, html: str, png: bytes | None = None) -> None:
        self._detail_generation += 1
        self.detail.value = h.STYLE + html
        if png is None:
            self.plot.layout.display = "none"
        else:
            self.plot.value = png
            self.plot.layout.display = ""

    def _show_node(self, name: str, path: str) -> None:
        diff = self.diff
        status = diff.node_status(path).get(name, "unchanged")
        b_node = _node_at(diff.b, path, name)
        a_node: Node | None = None
        parts = [h.title(f"{status}: {name}")]
        change = diff.node_change(name, path)
        if change is not None:
            parts.append(h.pre("\n".join(change.changes)))
            a_node = _node_at(diff.a, change.a.graph, change.a.name, change.a.index)
        elif status == "renamed":
            for a_ref, b_ref in diff.nodes_renamed:
                if b_ref.graph == path and b_ref.name == name:
                    parts.append(h.muted(f"was {a_ref.name} in a"))
                    a_node = _node_at(diff.a, a_ref.graph, a_ref.name, a_ref.index)
        elif status == "unchanged":
            a_node = _node_at(diff.a, path, name)
        parts.append(_attributes_table(a_node, b_node))
        self._set_detail("".join(parts))

    def _show_removed(self, ref: Any) -> None:
        node = _node_at(self.diff.a, ref.graph, ref.name, ref.index)
        parts = [
            h.title(f"removed: {ref.name or '#' + str(ref.index)}"),
            h.muted(f"{ref.op_type} node of a, not in b"),
            _attributes_table(node, None),
        ]
        self._set_detail("".join(parts))

    def _show_tensor(self, row: ChangeRow) -> None:
        if row.status != "changed":
            what = row.item if isinstance(row.item, str) else " → ".join(map(str, row.item))
            self._set_detail(h.title(f"tensor {row.status}: {what}"))
            return
        tc: TensorChange = row.item
        name = tc.b if tc.b is not None else tc.a
        rows = [
            ("name", tc.a, tc.b),
            ("dtype", tc.dtype_a, tc.dtype_b),
            ("shape", _shape(tc.shape_a), _shape(tc.shape_b)),
        ]
        summary = [
            ("bit-identical", "yes" if tc.bit_identical else "no"),
            ("max |Δ|", number_text(tc.max_abs)),
            ("max relative Δ", number_text(tc.max_rel)),
            ("mean |Δ|", number_text(tc.mean_abs)),
            ("cosine similarity", number_text(tc.cosine)),
            ("elements differing", number_text(tc.differing)),
        ]
        head = h.title(f"tensor changed: {name}") + h.table(rows, ["", "a", "b"])
        if tc.compared:
            head += h.muted(f"compared {tc.compared}")
        if tc.error:
            head += h.error(tc.error)
        head += h.table(summary)
        self._set_detail(head + h.muted("statistics of both sides: computing…"))
        generation = self._detail_generation
        worker = threading.Thread(
            target=self._tensor_details, args=(generation, tc, head), daemon=True,
            name="oxe-diff-detail",
        )  # fmt: skip
        self._worker = worker
        worker.start()

    def _tensor_details(self, generation: int, tc: TensorChange, head: str) -> None:
        """Both sides' statistics and the difference histogram, off the kernel's thread."""
        from ..views._plots import PANEL_FIGSIZE, figure_png, histogram_figure, stats_lines

        parts = [head]
        png = None
        try:
            sides = []
            for side, name in (("a", tc.a), ("b", tc.b)):
                tensor = self._tensor(side, name)
                dq = self.diff.dequantization(tc, side)  # real units, as compared
                lines = (
                    stats_lines(tensor.stats(dequantize=dq)) if tensor is not None
                    else ["not found"]
                )  # fmt: skip
                sides.append(lines)
            width = max(len(sides[0]), len(sides[1]))
            pairs = [
                (sides[0][i] if i < len(sides[0]) else "", sides[1][i] if i < len(sides[1]) else "")
                for i in range(width)
            ]
            parts.append(h.title("statistics") + h.table(pairs, ["a", "b"]))
            if not tc.error:
                histogram = self.diff.difference_histogram(tc)
                figure = histogram_figure(
                    histogram, title="b − a, element-wise", figsize=PANEL_FIGSIZE, legend=False
                )
                png = figure_png(figure)
        except (ExplorerError, ValueError, OSError) as exc:
            parts.append(h.error(f"could not read the tensors: {exc}"))
        if generation == self._detail_generation:
            self._set_detail("".join(parts), png)

    def _tensor(self, side: str, name: str | None) -> Tensor | None:
        if name is None:
            return None
        if side not in self._tensors:
            model = self.diff.a if side == "a" else self.diff.b
            self._tensors[side] = {ref.tensor.name: ref.tensor for ref in model.weights()}
        return self._tensors[side].get(name)

    # -- summary and display ----------------------------------------------------------
    def _summary_html(self) -> str:
        d = self.diff
        counts = [
            ("a", model_name(d.a)),
            ("b", model_name(d.b)),
            ("nodes", f"{len(d.nodes_changed):,} changed, {len(d.nodes_added):,} added, "
                      f"{len(d.nodes_removed):,} removed, {len(d.nodes_renamed):,} renamed"),
            ("tensors", f"{len(d.tensors_changed):,} changed, {len(d.tensors_added):,} added, "
                        f"{len(d.tensors_removed):,} removed, {len(d.tensors_renamed):,} renamed"),
        ]  # fmt: skip
        swatches = "".join(
            f'<span style="display:inline-block;padding:0 6px;margin-right:4px;color:#212529;'
            f"background:{paint.fill};border:1px {'dashed' if paint.dashed else 'solid'} "
            f'{paint.border}">{h.esc(word)}</span>'
            for word, paint in PALETTE.items()
        )
        parts = [h.STYLE, h.title("equal" if d.equal else "what changed from a to b")]
        parts.append(h.table(counts))
        if d.model_changes:
            rows = [
                (f, shorten(as_text(a), 200), shorten(as_text(b), 200))
                for f, a, b in d.model_changes
            ]
            parts.append(h.table(rows, ["model", "a", "b"]))
        if len(self.rows) > MAX_ROWS:
            parts.append(h.muted(f"the {MAX_ROWS:,} largest of {len(self.rows):,} changes listed"))
        parts.append(f'<div class="oxe-diff-legend">{swatches}</div>')
        return "".join(parts)

    def static_html(self, wait: float = STATIC_DRAWING_WAIT) -> str:
        """The kernel-free copy: the diff's own summary and the current drawing (waiting
        up to ``wait`` seconds for a first one, as :meth:`Explorer.static_html` does)."""
        view = self.graph_view
        if not view.svg and not view.error:
            view.wait(wait)
        svg = view.svg or ""
        start = svg.find("<svg")
        picture = f'<div style="max-height:600px;overflow:auto">{svg[start:]}</div>'
        return self.diff._repr_html_() + (picture if start >= 0 else "")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        return with_static_fallback(bundle, self.static_html())

    def close(self) -> None:
        self.graph_view.close()
        if self.side_by_side is not None:
            self.side_by_side.close()
        super().close()


def _node_at(model: Model, path: str, name: str, index: int | None = None) -> Node | None:
    try:
        graph = model.graph_at(path)
    except KeyError:
        return None
    if name and graph.has_node(name):
        return graph.node(name)
    if index is not None and 0 <= index < len(graph.nodes):
        return graph.nodes[index]
    return None


def _attributes_table(a: Node | None, b: Node | None) -> str:
    """Each side's op and attributes, one row per attribute name; differing rows marked."""
    names = list(dict.fromkeys([*(a.attributes if a else {}), *(b.attributes if b else {})]))
    rows = [("op", _op(a), _op(b), "" if _op(a) == _op(b) or a is None or b is None else "≠")]
    for name in names:
        left = attribute_text(a.attributes[name]) if a and name in a.attributes else MISSING
        right = attribute_text(b.attributes[name]) if b and name in b.attributes else MISSING
        rows.append((name, left, right, "≠" if left != right and a and b else ""))
    return h.title("attributes") + h.table(rows, ["", "a", "b", ""])


def _op(node: Node | None) -> str:
    return as_text(node.qualified_op) if node is not None else MISSING


def _shape(shape: tuple[int, ...] | None) -> str:
    return MISSING if shape is None else shape_text(shape)  # the tensor is not on that side


def explore_diff(
    a: str | os.PathLike[str] | bytes | Any,
    b: str | os.PathLike[str] | bytes | Any,
    *,
    weights: bool = True,
    atol: float = 0.0,
    rtol: float = 0.0,
    external_data_dir: str | os.PathLike[str] | None = None,
    max_nodes: int | None = None,
) -> DiffExplorer:
    """Compare two models (paths, bytes, ``onnx.ModelProto`` or Models) and show the diff:
    b drawn with what changed since a, the changes sorted by size, details on click."""
    model_a = open_side(a, "a", external_data_dir=external_data_dir)
    model_b = open_side(b, "b", external_data_dir=external_data_dir)
    from ..model_diff import compare_models  # the analysis, imported once there is work for it

    diff = compare_models(model_a, model_b, weights=weights, atol=atol, rtol=rtol)
    return DiffExplorer(diff, max_nodes=max_nodes)


__all__ = ["ChangeRow", "DiffExplorer", "change_rows", "explore_diff"]
