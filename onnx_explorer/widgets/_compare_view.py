"""Two models side by side, in sync: two full explorers linked by the diff's node matching.

Each side is a whole :class:`~onnx_explorer.widgets._explorer.Explorer` of its model
(graph, node list, attributes, tensors, model tab), laid out as a column: graph on top,
its panels under it. The columns sit side by side while each gets 600 px, else stack
(``graph_view.css``: ``.oxe-compare-columns``).

What links them is :func:`~onnx_explorer.model_diff.node_links`: the diff's 1↔1 matches,
and fused or split nodes grouped with what stands in their place (1↔N). Selecting a node
on one side selects its partner on the other (the first of several, the rest outlined as
related) and the other pane centres it; opening a body or a function, going back on the
breadcrumb, and opening or closing a scope does the same on the other side; nodes with no
counterpart are outlined on their side. A change made to follow the other side is never
sent back: one guard per view (``_syncing``) drops every event that a sync itself causes,
and an event from another thread (a layout landing) while a sync runs is dropped rather
than waited for — the kernel never waits on a layout.

Pan and zoom are linked in the browser (``GraphView.view_move`` joined by an ipywidgets
``jslink``, no kernel round trip): a drag or a zoom on one pane moves the other by the same
screen map; the checkbox unlinks them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import ipywidgets as widgets

from ..model import Graph
from ..model_diff import ModelDiff, NodeLinks, node_links
from ..readers import open_side
from ..views._paint import Overlay, status_overlay
from ..views._scopes import Scope, scope_tree
from ..views._text import as_text, shorten
from . import _html as h
from ._explorer import Explorer

if TYPE_CHECKING:
    from ..runs import CompareResult, RunResult

Side = Literal["a", "b"]
SIDES: tuple[Side, Side] = ("a", "b")
#: Partner nodes looked at to find where a scope went on the other side.
SCOPE_SAMPLE = 400


def _other(side: Side) -> Side:
    return "b" if side == "a" else "a"


class CompareView(widgets.VBox):
    """Models ``a`` and ``b`` side by side, selection, graphs and scopes kept in step.

    Build one with :func:`compare_view` (or the "side by side" switch of
    :func:`~onnx_explorer.explore_diff`). ``a`` and ``b`` are the two
    :class:`~onnx_explorer.widgets.Explorer` objects; ``diff`` the
    :class:`~onnx_explorer.ModelDiff`; ``links`` the
    :class:`~onnx_explorer.model_diff.NodeLinks` between them. :meth:`select` selects on
    one side (the other follows); :attr:`link_pan_zoom` links or unlinks pan and zoom.
    :meth:`compare` runs both models on the same inputs and paints each side with its
    error against the other; :meth:`run` runs each and paints its activations.
    """

    def __init__(
        self, diff: ModelDiff, *, max_nodes: int | None = None, link_pan_zoom: bool = True
    ) -> None:
        self.diff = diff
        self.links: NodeLinks = node_links(diff)
        self.a = Explorer(diff.a, max_nodes=max_nodes)
        self.b = Explorer(diff.b, max_nodes=max_nodes)
        self._lock = threading.RLock()
        self._syncing = False
        self._related: dict[Side, tuple[str, ...]] = {"a": (), "b": ()}
        self._overlays: dict[tuple[Side, str], Overlay | None] = {}
        self._pan_link: Any = None
        self._moves = 0
        self.pan_zoom = widgets.Checkbox(
            value=False, description="link pan/zoom", indent=False,
            layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        self.note = widgets.HTML()
        self.summary = widgets.HTML(h.STYLE + h.muted(self._summary_text()))
        bar = widgets.HBox(
            [self.pan_zoom, self.summary],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        # Both graphs first, both panels under them: stacked, the two graphs still meet.
        graphs = widgets.Box([self._graph_column(side) for side in SIDES])
        panels = widgets.Box([self._panel_column(side) for side in SIDES])
        graphs.add_class("oxe-compare-columns")
        panels.add_class("oxe-compare-columns")
        super().__init__([bar, self.note, graphs, panels])
        self.add_class("oxe-compare")
        for side in SIDES:
            explorer = self.explorer(side)
            explorer.observe(self._selection_handler(side), "selected_name")
            explorer.observe(self._graph_handler(side), "graph_path")
            explorer.graph_view.observe(self._scope_handler(side), "expanded")
            explorer.graph_view.observe(self._fold_handler(side), "fold_steps")
            explorer.graph_view.set_overlay(self._overlay_source(side))
            self._update_marks(side)
        self.pan_zoom.observe(self._on_pan_zoom, "value")
        self.pan_zoom.value = link_pan_zoom

    # -- layout ------------------------------------------------------------------------
    def explorer(self, side: Side) -> Explorer:
        """The explorer of side ``"a"`` or ``"b"``."""
        if side not in SIDES:
            raise ValueError(f"side must be 'a' or 'b', not {side!r}")
        return self.a if side == "a" else self.b

    def _graph_column(self, side: Side) -> widgets.Widget:
        explorer = self.explorer(side)
        # "a ·" before the breadcrumb (which starts with the model's name): one line.
        title = widgets.HTML(
            h.STYLE + f'<span class="oxe-compare-title" title="model {side}">{side} ·</span>'
        )
        view = explorer.graph_view
        view.layout = widgets.Layout(width="100%", min_width="0")
        # The pane's height comes from graph_view.css (.oxe-compare-column): lower when
        # the columns stack, so that both graphs fit one screen.
        view.height = ""
        heading = widgets.HBox([title, explorer.breadcrumb], layout=widgets.Layout(width="100%"))
        heading.add_class("oxe-compare-heading")
        column = widgets.VBox([heading, view])
        return _column(column, side)

    def _panel_column(self, side: Side) -> widgets.Widget:
        panels = widgets.Box([self.explorer(side).tabs])
        panels.add_class("oxe-side")
        return _column(widgets.VBox([panels]), side)

    # -- selection -----------------------------------------------------------------------
    def select(self, name: str | None, side: Side = "a") -> None:
        """Select node ``name`` of the graph shown on ``side``; the other side follows."""
        self.explorer(side).select(name)

    def partners(self, side: Side, name: str | None = None) -> tuple[str, ...]:
        """The other side's nodes standing for ``name`` (default: the one selected on
        ``side``) in the graph shown on ``side``; () when it has none."""
        explorer = self.explorer(side)
        name = explorer.selected_name if name is None else name
        if not name:
            return ()
        return self.links.partners(side, explorer.graph_path, name)

    def related(self, side: Side) -> tuple[str, ...]:
        """The nodes outlined as linked with the selection on ``side`` (1↔N groups)."""
        return self._related[side]

    def selected_names(self, side: Side) -> tuple[str, ...]:
        """Every node selected on ``side``: the selected one and those outlined with it."""
        name = self.explorer(side).selected_name
        return ((name,) if name else ()) + self._related[side]

    def unmatched(self, side: Side) -> list[str]:
        """Nodes of the graph shown on ``side`` with no counterpart on the other side."""
        return self.links.unmatched(side, self.explorer(side).graph_path)

    def _begin(self) -> bool:
        """Enter a sync; False when one is running (in this thread: an echo; in another:
        dropped rather than waited for)."""
        if not self._lock.acquire(blocking=False):
            return False
        if self._syncing:
            self._lock.release()
            return False
        self._syncing = True
        return True

    def _end(self) -> None:
        self._syncing = False
        self._lock.release()

    def _selection_handler(self, side: Side) -> Callable[[Any], None]:
        return lambda change: self._on_selected(side, change["new"])

    def _on_selected(self, side: Side, name: str | None) -> None:
        if not self._begin():
            return
        try:
            self._follow_selection(side, name)
        finally:
            self._end()

    def _follow_selection(self, side: Side, name: str | None) -> None:
        other = _other(side)
        source, target = self.explorer(side), self.explorer(other)
        self._related = {"a": (), "b": ()}
        self.note.value = ""
        group = self.links.group(side, source.graph_path, name) if name else None
        if name is None:
            target.select(None)
        elif group is None or not group.side(other):
            self.note.value = h.STYLE + h.muted(
                f"{shorten(as_text(name), 120)} has no counterpart in {other} "
                "(nodes without one are outlined dashed)"
            )
            target.select(None)
        else:
            path = group.graph(other)
            if target.graph_path != path:
                target.show_graph(path)
            partners = group.side(other)
            target.select(partners[0])
            # The pane centres it at a readable zoom (graph_view.js: onCentre), now or
            # when a drawing has it; a message, not a trait: nothing to replay later.
            target.graph_view.send({"centre": target.graph.node(partners[0]).index, "path": path})
            self._related[side] = tuple(n for n in group.side(side) if n != name)
            self._related[other] = partners[1:]
            if len(partners) > 1 or len(group.side(side)) > 1:
                self.note.value = h.STYLE + h.muted(
                    f"{len(group.side('a'))} node(s) of a ↔ {len(group.side('b'))} of b "
                    "(fused or split): the group is outlined in pink on both sides"
                )
        for each in SIDES:
            self._update_marks(each)

    # -- graphs and scopes -----------------------------------------------------------------
    def _graph_handler(self, side: Side) -> Callable[[Any], None]:
        return lambda change: self._on_graph(side, change["new"])

    def _on_graph(self, side: Side, path: str) -> None:
        if not self._begin():
            self._update_marks(side)
            return
        try:
            other = self.links.other_graph(side, path)
            target = self.explorer(_other(side))
            if other is not None and target.graph_path != other:
                target.show_graph(other)
            self._related = {"a": (), "b": ()}
            for each in SIDES:
                self._update_marks(each)
        finally:
            self._end()

    def _scope_handler(self, side: Side) -> Callable[[Any], None]:
        return lambda change: self._on_expanded(side, change["old"], change["new"])

    def _on_expanded(self, side: Side, old: list[str], new: list[str]) -> None:
        source = self.explorer(side).graph_view
        if source.result is None:
            return  # another graph is being shown: its own scopes, restored, not opened
        before = set(source.drawn_expanded()) | set(old)
        opened = [s for s in new if s not in before and s != "/"]
        closed = [s for s in before if s not in new and s != "/"] if new else []
        if not opened and not closed and new:
            return
        if not self._begin():
            return
        try:
            target = self.explorer(_other(side)).graph_view
            if self.links.other_graph(side, source.graph.path) != target.graph.path:
                return  # the other side shows an unrelated graph
            if not new:  # back to the first view
                target.reset()
                return
            drawn = set(target.drawn_expanded())
            for path in opened:
                mapped = self.other_scope(side, path)
                if mapped and mapped not in drawn:
                    target.expand(mapped)
                    drawn.add(mapped)
            for path in closed:
                mapped = self.other_scope(side, path)
                if mapped and mapped in drawn:
                    target.collapse(mapped)
                    drawn.discard(mapped)
        finally:
            self._end()

    def _fold_handler(self, side: Side) -> Callable[[Any], None]:
        return lambda change: self._on_fold_steps(side, change["old"], change["new"])

    def _on_fold_steps(self, side: Side, old: dict[str, int], new: dict[str, int]) -> None:
        """A fold's stepper moved (layers.0–31 ×32 showing 17): the other side's fold of
        the same blocks shows the same member."""
        moved = {key: k for key, k in new.items() if old.get(key) != k}
        if not moved or not self._begin():
            return
        try:
            from ..views._repeats import repeated_blocks

            source = self.explorer(side).graph_view
            target = self.explorer(_other(side)).graph_view
            if self.links.other_graph(side, source.graph.path) != target.graph.path:
                return
            folds = repeated_blocks(target.graph)
            for key, k in moved.items():
                mapped = self.other_scope(side, key)
                fold = folds.find(mapped) if mapped else None
                if (
                    fold is not None
                    and 0 <= k < fold.count
                    and target.fold_steps.get(fold.key) != k
                ):
                    target.step_fold(fold.key, k)
        finally:
            self._end()

    def other_scope(self, side: Side, path: str) -> str | None:
        """The scope of the other side's shown graph that stands for scope ``path`` of the
        graph shown on ``side``: the same path when it has one, else the innermost scope
        holding the partners of the nodes in it (None: none, or the whole graph)."""
        source = self.explorer(side).graph
        target = self.explorer(_other(side)).graph
        tree_target = scope_tree(target)
        if tree_target.find(path) is not None:
            return path
        scope = scope_tree(source).find(path)
        if scope is None:
            return None
        found: Scope | None = None
        seen = 0
        for index in scope.subtree_nodes():
            if seen >= SCOPE_SAMPLE:
                break
            seen += 1
            for name in self.links.partners(side, source.path, source.nodes[index].name):
                if not target.has_node(name):
                    continue
                inner = tree_target.node_scope[target.node(name).index]
                found = inner if found is None else _common(found, inner)
        while found is not None and found.trivial and not found.is_root:
            found = found.parent
        return None if found is None or found.is_root else found.path

    # -- marks and fills ---------------------------------------------------------------
    def _update_marks(self, side: Side) -> None:
        explorer = self.explorer(side)
        marks = dict.fromkeys(self.links.unmatched(side, explorer.graph_path), "unmatched")
        marks.update(dict.fromkeys(self._related[side], "related"))
        explorer.graph_view.set_marks(marks)

    def _overlay_source(self, side: Side) -> Callable[[Graph], Overlay | None]:
        def overlay_for(graph: Graph) -> Overlay | None:
            key = (side, graph.path)
            if key not in self._overlays:
                self._overlays[key] = self._status_overlay(side, graph)
            return self._overlays[key]

        return overlay_for

    def _status_overlay(self, side: Side, graph: Graph) -> Overlay | None:
        """The same words on both sides: a node with no counterpart is "added" (b) or
        "removed" (a), one of a fused or split group "changed", a 1↔1 match b's word
        from the diff (changed, renamed, unchanged)."""
        links, path = self.links, graph.path
        other = links.other_graph(side, path)
        if other is None:
            return None
        status_b = self.diff.node_status(path if side == "b" else other)
        status: dict[str, str] = {}
        titles: dict[str, str] = {}
        for node in graph.nodes:
            group = links.group(side, path, node.name)
            if group is None or group.kind == "unmatched":
                status[node.name] = "added" if side == "b" else "removed"
            elif group.kind == "fused":
                status[node.name] = "changed"
                titles[node.name] = (
                    f"fused or split: {len(group.a)} node(s) of a ↔ {len(group.b)} of b"
                )
            else:
                word = status_b.get(group.b[0], "unchanged")
                status[node.name] = word if word != "added" else "changed"
        legend = "since a" if side == "b" else "in b"
        return status_overlay(status, [], titles, legend_title=legend)

    # -- pan and zoom ------------------------------------------------------------------------
    @property
    def link_pan_zoom(self) -> bool:
        """Whether a pan or zoom on one pane moves the other too."""
        return bool(self.pan_zoom.value)

    @link_pan_zoom.setter
    def link_pan_zoom(self, value: bool) -> None:
        self.pan_zoom.value = bool(value)

    def _on_pan_zoom(self, change: Any) -> None:
        if self._pan_link is not None:
            self._pan_link.unlink()
            self._pan_link = None
        if change["new"]:
            # A move made before the link must not be replayed on the other side by the
            # link's first copy: both start from a value that is no move.
            self._moves += 1
            for side in SIDES:
                self.explorer(side).graph_view.view_move = {"reset": self._moves}
            self._pan_link = widgets.jslink(
                (self.a.graph_view, "view_move"), (self.b.graph_view, "view_move")
            )

    # -- runs ------------------------------------------------------------------------------
    def compare(self, feeds: Any = None, **options: Any) -> CompareResult:
        """Run a and b on the same inputs (:func:`onnx_explorer.compare`) and paint each
        side with its error against the other (max |b − a| of each node's outputs, log
        scale); a's panel shows the selected node's statistics on both sides."""
        result: CompareResult = self.a.compare(self.diff.b, feeds, **options)
        errors_b = b_node_errors(result, self.b.model.graph)
        self.b.offer_series({ERROR_SERIES: lambda: (errors_b, True, "max")})
        self.b.overlay(ERROR_SERIES)
        return result

    def run(self, feeds: Any = None, **options: Any) -> tuple[RunResult, RunResult]:
        """Run each model (:func:`onnx_explorer.run`) and paint its activations."""
        return self.a.run(feeds, **options), self.b.run(feeds, **options)

    # -- summary and display -------------------------------------------------------------
    def _summary_text(self) -> str:
        groups = self.links.groups()
        ones = sum(1 for g in groups if g.kind == "match")
        fused = len(groups) - ones
        only_a = len(self.links.unmatched("a", "/"))
        only_b = len(self.links.unmatched("b", "/"))
        return (
            f"main graphs: {ones:,} nodes matched 1↔1, {fused:,} fused/split groups, "
            f"{only_a:,} only in a, {only_b:,} only in b (outlined dashed)"
        )

    def static_html(self) -> str:
        """The kernel-free copy: the diff's summary and whatever both panes have drawn
        (no layout is waited for)."""
        parts = [self.diff._repr_html_()]
        for side in SIDES:
            svg = self.explorer(side).graph_view.svg or ""
            start = svg.find("<svg")
            if start >= 0:
                picture = svg[start:]
                parts.append(
                    f'<div style="max-height:600px;overflow:auto">{h.title(side)}{picture}</div>'
                )
        return "".join(parts)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        from ._static import with_static_fallback

        bundle = super()._repr_mimebundle_(**kwargs) or {}
        return with_static_fallback(bundle, self.static_html())

    def close(self) -> None:
        if self._pan_link is not None:
            self._pan_link.unlink()
            self._pan_link = None
        self.a.close()
        self.b.close()
        super().close()


#: The series a comparison paints (the same words as the explorer's own).
ERROR_SERIES = "error vs other"


def b_node_errors(result: CompareResult, graph: Graph) -> dict[str, float]:
    """b's node name → the largest max |b − a| of its outputs compared."""
    found: dict[str, float] = {}
    for t in result.tensors:
        node = graph.producer(t.b)
        if node is not None:
            found[node.name] = max(found.get(node.name, 0.0), t.max_abs)
    return found


def _column(box: widgets.Box, side: Side) -> widgets.Box:
    # The graph view looks for its explorer (search box, key suppression) by this class.
    box.add_class("oxe-explorer")
    box.add_class("oxe-compare-column")
    box.add_class(f"oxe-compare-{side}")
    return box


def _common(x: Scope, y: Scope) -> Scope:
    """The innermost scope holding both."""
    chain = {id(s) for s in (x, *x.ancestors())}
    for scope in (y, *y.ancestors()):
        if id(scope) in chain:
            return scope
    return y


def compare_view(
    a: str | os.PathLike[str] | bytes | Any,
    b: str | os.PathLike[str] | bytes | Any,
    *,
    weights: bool = True,
    atol: float = 0.0,
    rtol: float = 0.0,
    external_data_dir: str | os.PathLike[str] | None = None,
    max_nodes: int | None = None,
    link_pan_zoom: bool = True,
    dims: Mapping[str, int] | None = None,
) -> CompareView:
    """Two models (paths, bytes, ``onnx.ModelProto`` or Models) side by side, in sync,
    linked by their diff's node matching (see :class:`CompareView`)."""
    model_a = open_side(a, "a", external_data_dir=external_data_dir)
    model_b = open_side(b, "b", external_data_dir=external_data_dir)
    if dims:
        model_a.bind(dims=dims)
        model_b.bind(dims=dims)
    from ..model_diff import compare_models

    diff = compare_models(model_a, model_b, weights=weights, atol=atol, rtol=rtol)
    return CompareView(diff, max_nodes=max_nodes, link_pan_zoom=link_pan_zoom)


__all__ = ["CompareView", "b_node_errors", "compare_view"]
