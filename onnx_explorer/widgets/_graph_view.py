"""The clickable graph: an anywidget showing the Graphviz SVG of one graph's view.

The browser reports which drawn item was clicked (its synthetic id and the drawing
version it was made on, never a model name); Python decides what that means —
select a node, expand or collapse a scope, open an If/Loop/Scan body or a function.

Layout never blocks the kernel: :meth:`GraphView.render` hands the request to a
worker thread that runs :func:`~onnx_explorer.views._layout.draw` (``dot`` in a
subprocess, cheaper plans when it is too slow) and returns at once. A newer request
supersedes the running one and kills its ``dot``; ``busy`` tells the browser what
is being laid out, and the browser's Cancel button stops it.
"""

from __future__ import annotations

import atexit
import dataclasses
import re
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from .. import _children
from ..errors import ExplorerError, LayoutCancelledError
from ..model import Graph, Model, Node
from ..views._drawing import (
    CONTROL_EDGES,
    DEFAULT_HOPS,
    DEFAULT_MAX_NODES,
    EDGE_LABELS,
    DotResult,
)
from ..views._layout import DEFAULT_BUDGET, Cancellation, Drawing, ViewRequest, draw
from ..views._paint import Overlay
from ..views._repaint import repaint_svg
from ..views._repeats import compare_members, repeated_blocks
from ..views._scopes import Scope, scope_tree
from ..views._text import model_name
from ..views._wiring import graph_wiring

_HERE = Path(__file__).resolve().parent
#: Search hits marked in the drawing at most (a filter may match 100,000 nodes).
MATCHES_MARKED = 2000

#: Marks the browser draws on nodes (class ``oxe-mark-<word>``, graph_view.css): no
#: counterpart on the other side of a compare view; linked with the selection (1↔N).
MARK_WORDS = frozenset({"unmatched", "related"})

#: What is painted over the drawing: one overlay, or one per graph (bodies differ).
OverlaySource = Overlay | Callable[[Graph], Overlay | None] | None


#: Layout threads still running; waited for at exit (see _finish_layouts_at_exit).
_LAYOUT_THREADS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
EXIT_WAIT = 3.0  # seconds at most that exit waits for layouts whose children were killed


@atexit.register
def _finish_layouts_at_exit() -> None:
    """Let layout threads end before Python finalizes.

    A daemon thread still running then is stopped where it stands, and one inside C++
    code (protobuf serializing a model for inference, a decoder) aborts the whole
    process: "terminate called without an active exception", exit status 134. So the
    `dot` and inference children they wait on are killed first (no new ones start), and
    each thread, its child gone, ends within moments. Registered after the registry of
    child processes (``_children``, which this module imports), so atexit runs it first.
    """
    _children.kill_all()
    deadline = time.monotonic() + EXIT_WAIT
    for thread in list(_LAYOUT_THREADS):
        thread.join(max(0.0, deadline - time.monotonic()))


class GraphView(anywidget.AnyWidget):
    """Graphviz drawing of a graph with pan, zoom, fit and click-to-select.

    ``selected`` is the selected node's name (set by a click, or from Python to highlight
    a node and bring it into view). ``expand(scope)``, ``collapse(scope)``,
    ``focus(node, hops)`` and ``show_graph(graph)`` change what is drawn; they return at
    once and the drawing follows (:meth:`wait` waits for it). ``notes`` says what was
    collapsed, cut or simplified; ``error`` holds a drawing failure (e.g. Graphviz
    missing); ``busy`` what is being laid out right now. ``budget`` is the seconds one
    layout may take before a cheaper view is drawn instead. ``overlay`` (an
    :class:`~onnx_explorer.views._paint.Overlay`, or a function of the graph shown that
    returns one) paints fills, ghosts and a legend on every drawing; a click on a ghost
    sets ``picked_ghost`` to its key.
    """

    _esm = _HERE / "graph_view.js"
    _css = _HERE / "graph_view.css"

    svg = traitlets.Unicode("").tag(sync=True)
    ids = traitlets.Dict().tag(sync=True)
    version = traitlets.Int(0).tag(sync=True)  # of the drawing; clicks carry it
    selected = traitlets.Unicode("").tag(sync=True)
    highlight_id = traitlets.Unicode("").tag(sync=True)
    notes = traitlets.List(traitlets.Unicode()).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    busy = traitlets.Unicode("").tag(sync=True)  # what is being laid out; "" when idle
    busy_since = traitlets.Float(0.0).tag(sync=True)  # epoch ms: a new layout restarts the clock
    height = traitlets.Unicode("").tag(sync=True)  # CSS height of the pane; "": follows the page
    graph_path = traitlets.Unicode("/").tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    focus_node = traitlets.Unicode("").tag(sync=True)
    hops = traitlets.Int(DEFAULT_HOPS).tag(sync=True)
    max_nodes = traitlets.Int(DEFAULT_MAX_NODES).tag(sync=True)
    edge_labels = traitlets.Enum(EDGE_LABELS, "both").tag(sync=True)
    control_edges = traitlets.Enum(CONTROL_EDGES, "auto").tag(sync=True)
    control_hidden = traitlets.Int(0).tag(sync=True)  # control edges left out of the drawing
    matches = traitlets.List(traitlets.Unicode()).tag(sync=True)  # drawn ids of search hits
    match_total = traitlets.Int(0).tag(sync=True)  # search hits in the graph, drawn or not
    legend = traitlets.Dict().tag(sync=True)  # a numeric overlay's colour bar ({}: none)
    export_name = traitlets.Unicode("graph").tag(sync=True)  # file name stem of exports
    # Repeated blocks drawn once (views/_repeats.py): on or off, the member each fold
    # shows (fold key → position: the stepper), the folds drawn now, and the last
    # comparison of a fold's weights (text for the browser).
    fold_repeats = traitlets.Bool(True).tag(sync=True)
    fold_steps = traitlets.Dict().tag(sync=True)
    folds = traitlets.List(traitlets.Dict()).tag(sync=True)
    fold_report = traitlets.Unicode("").tag(sync=True)
    budget = traitlets.Float(DEFAULT_BUDGET)
    picked_ghost = traitlets.Unicode("")  # key of the ghost clicked last ("" otherwise)
    # Two panes side by side (widgets/_compare_view.py): drawn id → a mark word (see
    # set_marks), and the last pan/zoom made here by hand, which the browser links to
    # the other pane's (graph_view.js: linkView).
    marks = traitlets.Dict().tag(sync=True)
    view_move = traitlets.Dict().tag(sync=True)

    def __init__(self, graph: Graph, model: Model | None = None, **kwargs: Any) -> None:
        # ``overlay`` is taken out before the traits are: it is Python-side only.
        self._overlay: OverlaySource = kwargs.pop("overlay", None)
        super().__init__(**kwargs)
        self.graph = graph
        self.model = model if model is not None else graph.model
        self.result: DotResult | None = None
        self.drawing: Drawing | None = None
        self._drawn_graph: Graph | None = None  # the graph ``result``/``ids`` describe
        self._laid_out: tuple[str, Overlay | None] | None = None  # (svg, overlay) from dot
        self.layouts = 0  # layouts started (a repaint starts none)
        # One lock around every change of drawing state, from the main thread (clicks,
        # selection) or a layout thread (publishing): they never interleave.
        self._lock = threading.RLock()
        self._reveal_tried: tuple[str, str] | None = None  # (node, scope) asked to open
        self._closed = False
        self._generation = 0
        self._cancellation: Cancellation | None = None
        self._worker: threading.Thread | None = None
        self._match_names: list[str] = []
        # What was open in each graph shown before: expanded scopes, focus node.
        self._views: weakref.WeakKeyDictionary[Graph, tuple[list[str], str]] = (
            weakref.WeakKeyDictionary()
        )
        self.export_name = export_name(self.model, graph)
        self.on_msg(self._on_message)
        self.render()

    # -- what is drawn -----------------------------------------------------------
    def show_graph(self, graph: Graph) -> None:
        """Draw another graph (a subgraph or function body); coming back to a graph shown
        before restores what was open in it (the browser restores where you were)."""
        with self._lock:
            if graph is self.graph:
                return
            # A drawing of the old graph still on its way must not land after the swap.
            self._supersede()
            self._views[self.graph] = (self.drawn_expanded(), self.focus_node)
            expanded, focus = self._views.get(graph, ([], ""))
            self.graph = graph
            self.result = None
            self._match_names = []
            with self.hold_trait_notifications():
                self.expanded = expanded
                self.focus_node = focus
                self.fold_steps = {}
                self.fold_report = ""
                self.selected = ""
                self.matches = []
                self.match_total = 0
                self.graph_path = graph.path
                self.export_name = export_name(self.model, graph)
            self.render()

    def expand(self, scope: str) -> None:
        """Open a collapsed scope (``"model/layers.3"``) in place."""
        if scope not in self.expanded:
            self.expanded = [*self.drawn_expanded(), scope]
            self.focus_node = ""
            self.render()

    def collapse(self, scope: str) -> None:
        """Close an expanded scope and everything under it."""
        # By the tree, not by path prefix: a synthetic group ("layers.0 … layers.199") holds
        # scopes under their own paths ("model/layers.5"), and any of them left expanded
        # would open the group again.
        tree = scope_tree(self.graph)
        target = tree.find(scope)
        keep = [
            path
            for path in self.drawn_expanded()
            if path != scope and not _inside(tree.find(path), target)
        ]
        self.expanded = keep or ["/"]  # "/": nothing expanded, as opposed to the first view
        self.focus_node = ""
        self.render()

    def focus(self, node: str | None, hops: int = DEFAULT_HOPS) -> None:
        """Draw only the neighbourhood of ``node`` (``hops`` edges up and down); None: all."""
        self.hops = hops
        self.focus_node = node or ""
        self.render()
        if node:
            self.selected = node  # highlighted when the new drawing lands

    def reset(self) -> None:
        """Back to the automatic first view."""
        self.expanded = []
        self.focus_node = ""
        self.render()

    def show_control_edges(self, show: bool = True) -> None:
        """Draw the ordering-only (control-dependency) edges, or hide them."""
        self.control_edges = "show" if show else "hide"
        self.render()

    def set_overlay(self, overlay: OverlaySource) -> None:
        """Paint another overlay (None: none).

        A drawing of the graph shown is repainted in place (fills and hover lines, no
        layout); otherwise, or while a layout runs, the view is drawn again with it.
        """
        with self._lock:
            self._overlay = overlay
            if self._repaint():
                return
        self.render()

    def _repaint(self) -> bool:
        """Repaint the current drawing with the current overlay; False when it cannot."""
        drawing, result, laid_out = self.drawing, self.result, self._laid_out
        if (
            drawing is None
            or result is None
            or laid_out is None
            or self._drawn_graph is not self.graph
            or self.busy
        ):
            return False
        base_svg, drawn_with = laid_out
        overlay = self.overlay_for(self.graph)
        svg = repaint_svg(base_svg, result, self.graph, drawn_with, overlay)
        self.drawing = dataclasses.replace(drawing, svg=svg)
        with self.hold_sync():
            self.legend = _legend(overlay)
            self.svg = svg
            self.version += 1
            self._update_highlight()
            self._refresh_matches()
        return True

    def overlay_for(self, graph: Graph) -> Overlay | None:
        """The overlay painted on ``graph``'s drawings."""
        source = self._overlay
        if source is None or isinstance(source, Overlay):
            return source
        return source(graph)

    def drawn_expanded(self) -> list[str]:
        return list(self.result.expanded) if self.result is not None else list(self.expanded)

    def request(self) -> ViewRequest:
        """The view the traits describe now."""
        expanded: tuple[str, ...] | None = None
        if self.expanded:
            expanded = tuple(s for s in self.expanded if s != "/")
        return ViewRequest(
            expanded=expanded,
            focus=self.focus_node or None,
            hops=self.hops,
            max_nodes=self.max_nodes,
            edge_labels=self.edge_labels,
            control_edges=self.control_edges,
            fold_steps=tuple(sorted(self.fold_steps.items())) if self.fold_repeats else None,
        )

    # -- folds of repeated blocks ---------------------------------------------------------
    def step_fold(self, key: str, index: int) -> None:
        """Show member ``index`` of the fold ``key`` (its first member's path); scopes open
        inside the member shown before open in the new one."""
        with self._lock:
            fold = repeated_blocks(self.graph).find(key)
            if fold is None or not 0 <= index < fold.count:
                return
            before = fold.members[min(self.fold_steps.get(key, 0), fold.count - 1)]
            after = fold.members[index]
            # Scopes open inside the member shown before open in the new one, which opens.
            expanded = [_moved(path, before.path, after.path) for path in self.drawn_expanded()]
            if not any(p == after.path or p.startswith(after.path + "/") for p in expanded):
                expanded.append(after.path)
            with self.hold_trait_notifications():
                self.fold_steps = {**self.fold_steps, key: index}
                self.expanded = list(dict.fromkeys(expanded)) or ["/"]
                self.focus_node = ""
            self.render()

    def compare_fold(self, key: str, pair: tuple[int, int] | None = None) -> Any:
        """Compare the weights of the fold ``key``'s members (reads every one of them):
        which member is the outlier, and how two members differ (``pair``: positions).
        Returns the :class:`~onnx_explorer.views._repeats.FoldComparison`; its text also
        goes to ``fold_report``."""
        fold = repeated_blocks(self.graph).find(key)
        if fold is None:
            raise KeyError(f"no fold {key!r} in this graph")
        comparison = compare_members(self.graph, fold, pair)
        self.fold_report = comparison.text()
        return comparison

    def _compare_fold_in_background(self, key: str, pair: tuple[int, int] | None) -> None:
        self.fold_report = "reading the weights of every member…"

        def work() -> None:
            try:
                self.compare_fold(key, pair)
            except Exception as exc:  # a report must not raise into the front end
                self.fold_report = f"cannot compare the weights: {type(exc).__name__}: {exc}"

        threading.Thread(target=work, name="oxe-fold-weights", daemon=True).start()

    def _step_to_node(self, node: Node) -> bool:
        """Point every fold holding ``node`` at the member it sits in; True if one moved."""
        tree = scope_tree(self.graph)
        steps = dict(self.fold_steps)
        for fold, k in repeated_blocks(self.graph).around(tree.node_scope[node.index]):
            steps[fold.key] = k
        if steps == self.fold_steps:
            return False
        self.fold_steps = steps
        return True

    @traitlets.observe("fold_repeats")
    def _on_fold_repeats(self, _change: Any) -> None:
        if getattr(self, "_lock", None) is not None:  # not while __init__ sets the traits
            self.render()

    # -- layout in the background ---------------------------------------------------
    def render(self) -> None:
        """Redraw in the background; returns at once (errors go to ``error``)."""
        with self._lock:
            if self._closed:
                return
            request, graph, model = self.request(), self.graph, self.model
            overlay = self.overlay_for(graph)
            generation = self._supersede()
            cancellation = self._cancellation = Cancellation()
            with self.hold_sync():
                self.busy = "building the view"
                self.busy_since = time.time() * 1000
            self.layouts += 1
            worker = threading.Thread(
                target=self._draw,
                args=(generation, graph, model, request, cancellation, overlay),
                name="oxe-layout",
                daemon=True,
            )
            self._worker = worker
            _LAYOUT_THREADS.add(worker)
            worker.start()

    def _supersede(self) -> int:
        """A new generation: the running layout is cancelled (its dot killed now)."""
        with self._lock:
            self._generation += 1
            previous, self._cancellation = self._cancellation, None
        if previous is not None:
            previous.cancel()
        return self._generation

    def _draw(
        self,
        generation: int,
        graph: Graph,
        model: Model | None,
        request: ViewRequest,
        cancellation: Cancellation,
        overlay: Overlay | None = None,
    ) -> None:
        def attempt(result: DotResult) -> None:
            with self._lock:
                if self._current(generation):
                    self.busy = f"laying out {result.drawn:,} boxes"

        try:
            drawing = draw(
                graph, model, request, budget=self.budget,
                cancellation=cancellation, on_attempt=attempt, overlay=overlay,
            )  # fmt: skip
        except LayoutCancelledError:
            with self._lock:
                if self._current(generation):
                    with self.hold_sync():
                        self.busy = ""
                        self.error = "Layout cancelled." + (
                            " The previous drawing is kept." if self.svg else ""
                        )
                    self._update_highlight()  # a selection made meanwhile, on the kept drawing
            return
        except ExplorerError as exc:
            self._publish_error(generation, str(exc))
            return
        except Exception as exc:  # the drawing must never take the rest of the explorer down
            self._publish_error(generation, f"cannot build the view: {type(exc).__name__}: {exc}")
            return
        self._publish(generation, drawing, overlay)

    def _current(self, generation: int) -> bool:
        return generation == self._generation

    def _publish(self, generation: int, drawing: Drawing, overlay: Overlay | None = None) -> None:
        with self._lock:
            if not self._current(generation):
                return  # superseded while dot ran: a newer drawing is on its way
            result = drawing.result
            self.result, self.drawing, self._drawn_graph = result, drawing, self.graph
            self._laid_out = (drawing.svg, overlay)
            notes = list(result.notes)
            if drawing.simplified:
                notes.insert(0, drawing.simplified)
            with self.hold_sync():  # one message: the browser sees a consistent drawing
                self.error = ""
                self.ids = {k: dict(v) for k, v in result.ids.items()}
                self.notes = notes
                self.control_hidden = result.control_hidden
                self.folds = [dict(fold) for fold in result.folds]
                self.legend = _legend(overlay)
                self.svg = drawing.svg
                self.version += 1
                self.busy = ""
                self._update_highlight(reveal=True)
                self._refresh_matches()

    def _publish_error(self, generation: int, message: str) -> None:
        with self._lock:
            if not self._current(generation):
                return
            self.result = None
            self._drawn_graph = None
            self._laid_out = None
            with self.hold_sync():
                self.legend = {}
                self.svg = ""
                self.ids = {}
                self.folds = []
                self.version += 1
                self.error = message
                self.busy = ""

    def cancel(self) -> None:
        """Stop the layout in progress (its ``dot`` is killed); the last drawing stays."""
        with self._lock:
            cancellation = self._cancellation
        if cancellation is not None:
            cancellation.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the latest requested layout has ended (drawn, failed with ``error``
        set, or cancelled); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            worker = self._worker
            if worker is None:
                return True
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            worker.join(left)
            if worker.is_alive():
                return False
            if worker is self._worker:
                return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._supersede()
        super().close()

    # -- clicks and selection ------------------------------------------------------
    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        try:
            self._handle(content)
        finally:  # the browser says "the kernel did not answer" after 5 s without this
            seq = content.get("seq")
            if isinstance(seq, int) and not isinstance(seq, bool):
                self.send({"ack": seq})

    def _handle(self, content: dict[str, Any]) -> None:
        event = content.get("event")
        if event == "cancel":
            self.cancel()
        elif event == "deselect":
            self.selected = ""
        elif event == "match":
            self.step_match(1 if content.get("step", 1) >= 0 else -1)
        elif event == "click":
            with self._lock:
                if content.get("version") != self.version:
                    return  # made on a drawing that has since been replaced: ids differ
                self.click(str(content.get("id", "")), double=bool(content.get("double")))
        elif event == "control_edges":
            self.show_control_edges(bool(content.get("show")))
        elif event == "fold_step":
            index = content.get("index")
            if isinstance(index, int) and not isinstance(index, bool):
                self.step_fold(str(content.get("fold", "")), index)
        elif event == "fold_compare":
            pair = content.get("pair")
            chosen = None
            if isinstance(pair, list) and len(pair) == 2 and all(type(k) is int for k in pair):
                chosen = (pair[0], pair[1])
            self._compare_fold_in_background(str(content.get("fold", "")), chosen)

    def click(self, item_id: str, double: bool = False) -> None:
        """What a click on the drawn item ``item_id`` does (also used by tests)."""
        with self._lock:
            self._click(item_id, double)

    def _click(self, item_id: str, double: bool) -> None:
        entry = self.ids.get(item_id)
        graph = self._drawn_graph
        if entry is None or self.result is None or graph is not self.graph:
            return  # the drawing clicked on is being replaced by another graph's
        kind = entry.get("kind")
        if kind == "body":
            if double:
                self.open_body(entry["path"])
            else:
                node_entry = self.ids.get(entry["node"], {})
                if "index" in node_entry:
                    self.selected = graph.nodes[int(node_entry["index"])].name
        elif kind == "node":
            node = graph.nodes[int(entry["index"])]
            graphs = entry.get("graphs") or []
            if double and graphs:
                self.open_body(graphs[0]["path"])
            else:
                self.selected = node.name
        elif kind == "ghost":  # a node the graph does not hold (a diff's removed node)
            self.selected = ""
            self.picked_ghost = ""  # a second click on the same ghost is news too
            self.picked_ghost = str(entry.get("key", ""))
            self.highlight_id = item_id
        elif kind == "fold" and double:
            if entry.get("open"):
                self.collapse(entry["path"])
            elif entry.get("part") in ("before", "after"):
                self.step_fold(str(entry["fold"]), int(entry["index"]))
            else:
                self.expand(entry["path"])
        elif kind == "scope" and double:  # one click only picks it (in the browser)
            if entry.get("open"):
                self.collapse(entry["path"])
            else:
                self.expand(entry["path"])

    def open_body(self, path: str) -> None:
        """Draw an If/Loop/Scan body or a function's graph (by its path)."""
        if self.model is None:
            return
        self.show_graph(self.model.graph_at(path))

    # -- search hits ---------------------------------------------------------------
    def set_matches(self, names: list[str]) -> None:
        """Mark these nodes (search or filter hits) in the drawing; [] clears."""
        self._match_names = [n for n in names if self.graph.has_node(n)]
        self._refresh_matches()

    def step_match(self, step: int = 1) -> str | None:
        """Select the next (``step`` 1) or previous (-1) search hit after the selection."""
        names = self._match_names
        if not names:
            return None
        current = names.index(self.selected) if self.selected in names else -1
        if current < 0 and step < 0:
            current = 0
        name = names[(current + step) % len(names)]
        self.selected = name
        return name

    def _refresh_matches(self) -> None:
        result, names = self.result, self._match_names
        if self._drawn_graph is not self.graph:
            result = None
        drawn: dict[str, None] = {}
        if result is not None:
            for name in names[:MATCHES_MARKED]:
                location = result.locate(self.graph.node(name))
                if location:
                    drawn[location] = None
        with self.hold_sync():
            self.match_total = len(names)
            self.matches = list(drawn)

    # -- marks (two panes side by side) --------------------------------------------------
    def set_marks(self, marks: dict[str, str]) -> None:
        """Mark nodes by name with a word of :data:`MARK_WORDS` (``{}`` clears): the
        browser outlines each drawn one (``oxe-mark-<word>``); nodes hidden in a collapsed
        scope mark nothing. Kept for every later drawing of the same graph."""
        self._marks = {name: word for name, word in marks.items() if word in MARK_WORDS}
        self._refresh_marks()

    @traitlets.observe("version")
    def _on_version_marks(self, _change: Any) -> None:
        self._refresh_marks()

    def _refresh_marks(self) -> None:
        marks: dict[str, str] = getattr(self, "_marks", {})
        result, graph = self.result, self.graph
        drawn: dict[str, str] = {}
        if result is not None and self._drawn_graph is graph:
            for name, word in marks.items():
                if not graph.has_node(name):
                    continue
                location = result.locate(graph.node(name))
                entry = self.ids.get(location or "", {})
                if location and entry.get("kind") == "node":
                    drawn[location] = word
        if drawn != self.marks:
            self.marks = drawn

    # -- export ------------------------------------------------------------------------
    def save(self, path: str | Path, timeout: float = 60.0) -> Path:
        """Save the view shown now as ``.svg``, ``.png`` or ``.dot`` (by the suffix)."""
        from ..views._render import save_result

        if not self.wait(timeout):
            raise ExplorerError(f"the drawing did not finish within {timeout:g} s")
        drawing = self.drawing
        if drawing is None or self.result is None:
            raise ExplorerError(f"nothing is drawn yet: {self.error or 'no drawing'}")
        path = Path(path)
        if path.suffix.lower() == ".svg":
            path.write_text(drawing.svg, encoding="utf-8")  # exactly what is on screen
            return path
        return save_result(drawing.result, path, timeout)

    @traitlets.observe("selected")
    def _on_selected(self, change: Any) -> None:
        self._update_highlight(reveal=True)

    def _update_highlight(self, reveal: bool = False) -> None:
        """Point ``highlight_id`` at the selected node; open its scopes if it is hidden.

        A node already drawn costs no layout; a hidden one costs exactly one.
        """
        with self._lock:
            name, result, graph = self.selected, self.result, self.graph
            if not name or not graph.has_node(name):
                self.highlight_id = ""
                return
            if result is None or self._drawn_graph is not graph:
                return  # the drawing in progress highlights (and reveals) it when it lands
            node = graph.node(name)
            location = result.locate(node)
            self.highlight_id = location or ""
            if not reveal or self.busy:
                return  # a layout is running: it reveals the node when it lands
            entry = self.ids.get(location or "", {})
            if entry.get("kind") == "node":
                self._reveal_tried = None
            elif entry.get("kind") in ("scope", "fold"):
                self._step_to_node(node)  # a node inside a fold: show its member
                scope = _scope_showing(graph, node)
                if scope is None:
                    return
                if self._reveal_tried != (name, scope.path):
                    self._reveal_tried = (name, scope.path)
                    self.expanded = [*self.drawn_expanded(), scope.path]
                    self.focus_node = ""
                    self.render()
                else:
                    # Its scope would not open (too big for max_nodes): draw its
                    # neighbourhood instead, once, rather than asking again forever.
                    self.focus(name, self.hops)
            elif location is None and self.focus_node and self.focus_node != name:
                self.focus(name, self.hops)  # outside the drawn neighbourhood: move it


def _legend(overlay: Overlay | None) -> dict[str, Any]:
    """The colour bar the browser draws for a numeric overlay ({}: none)."""
    scale = overlay.scale if overlay is not None else None
    return scale.to_dict() if scale is not None else {}


def _scope_showing(graph: Graph, node: Node) -> Scope | None:
    """The innermost non-trivial scope a node (or, for a folded constant, its reader) sits in."""
    tree = scope_tree(graph)
    index = node.index
    if index in graph_wiring(graph).folded_nodes:
        readers = graph.consumers(node.outputs[0]) if node.outputs else ()
        if not readers:
            return None
        index = readers[0].index
    scope: Scope | None = tree.node_scope[index]
    while scope is not None and (scope.trivial or scope.is_root):
        scope = scope.parent
    return scope


def _moved(path: str, old: str, new: str) -> str:
    """``path`` with the member ``old`` it lies in replaced by ``new``."""
    if path == old:
        return new
    if path.startswith(old + "/"):
        return new + path[len(old) :]
    return path


def _inside(scope: Scope | None, ancestor: Scope | None) -> bool:
    return scope is not None and ancestor is not None and ancestor in scope.ancestors()


_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def export_name(model: Model | None, graph: Graph) -> str:
    """``yolov8n_main``, ``vad_If_1_then_branch``: the model as the user named it and the
    view, made safe as a file name (what the SVG / PNG buttons save as)."""
    stem = "graph"
    if model is not None and model.path is not None:
        stem = Path(model_name(model)).stem
    view = "main" if graph.path in ("", "/") else graph.path.replace("function::", "")
    view = _UNSAFE_FILE_CHARS.sub("_", view).strip("._")
    name = _UNSAFE_FILE_CHARS.sub("_", f"{stem}_{view}").strip("._")
    return name[:120] or "graph"
