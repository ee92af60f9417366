"""The clickable graph: an anywidget showing the Graphviz SVG of one graph's view.

The browser reports which drawn item was clicked (its synthetic id, never a model
name); Python decides what that means — select a node, expand or collapse a scope,
open an If/Loop/Scan body or a function — re-renders, and sets ``selected`` and
``highlight_id``, which the browser follows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..errors import ExplorerError
from ..model import Graph, Model
from ..views.dot import DEFAULT_HOPS, DEFAULT_MAX_NODES, DotResult, build_dot
from ..views.render import svg_from_result
from ..views.scopes import Scope, scope_tree

_HERE = Path(__file__).resolve().parent


class GraphView(anywidget.AnyWidget):
    """Graphviz drawing of a graph with pan, zoom, fit and click-to-select.

    ``selected`` is the selected node's name (set by a click, or from Python to highlight
    a node and bring it into view). ``expand(scope)``, ``collapse(scope)``,
    ``focus(node, hops)`` and ``show_graph(graph)`` change what is drawn; ``notes`` says
    what was collapsed or cut; ``error`` holds a drawing failure (e.g. Graphviz missing).
    """

    _esm = _HERE / "graph_view.js"
    _css = _HERE / "graph_view.css"

    svg = traitlets.Unicode("").tag(sync=True)
    ids = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    highlight_id = traitlets.Unicode("").tag(sync=True)
    clicked = traitlets.Unicode("").tag(sync=True)
    notes = traitlets.List(traitlets.Unicode()).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Unicode("560px").tag(sync=True)
    graph_path = traitlets.Unicode("/").tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    focus_node = traitlets.Unicode("").tag(sync=True)
    hops = traitlets.Int(DEFAULT_HOPS).tag(sync=True)
    max_nodes = traitlets.Int(DEFAULT_MAX_NODES).tag(sync=True)
    edge_labels = traitlets.Unicode("both").tag(sync=True)

    def __init__(self, graph: Graph, model: Model | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.graph = graph
        self.model = model if model is not None else graph.model
        self.result: DotResult | None = None
        self._rendering = False
        self.render()

    # -- what is drawn -----------------------------------------------------------
    def show_graph(self, graph: Graph) -> None:
        """Draw another graph (a subgraph or function body), from its first view."""
        self.graph = graph
        with self.hold_trait_notifications():
            self.expanded = []
            self.focus_node = ""
            self.selected = ""
            self.graph_path = graph.path
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
            self.selected = node

    def reset(self) -> None:
        """Back to the automatic first view."""
        self.expanded = []
        self.focus_node = ""
        self.render()

    def drawn_expanded(self) -> list[str]:
        return list(self.result.expanded) if self.result is not None else list(self.expanded)

    def render(self) -> None:
        """Rebuild the DOT, lay it out, and send the SVG (errors go to ``error``)."""
        expanded: Any = None
        if self.expanded:
            expanded = [s for s in self.expanded if s != "/"]
        try:
            self.result = build_dot(
                self.graph,
                self.model,
                expanded=expanded,
                focus=self.focus_node or None,
                hops=self.hops,
                max_nodes=self.max_nodes,
                edge_labels=self.edge_labels,
            )
        except Exception as exc:  # the drawing must never take the rest of the explorer down
            self._show_error(f"cannot build the view: {type(exc).__name__}: {exc}")
            return
        try:
            svg = svg_from_result(self.result)
        except ExplorerError as exc:
            self._show_error(str(exc), notes=list(self.result.notes))
            return
        with self.hold_trait_notifications():
            self.error = ""
            self.ids = {k: dict(v) for k, v in self.result.ids.items()}
            self.notes = list(self.result.notes)
            self.svg = svg
        self._update_highlight()

    def _show_error(self, message: str, notes: list[str] | None = None) -> None:
        with self.hold_trait_notifications():
            self.svg = ""
            self.ids = {}
            self.notes = notes or []
            self.error = message

    # -- clicks and selection ------------------------------------------------------
    @traitlets.observe("clicked")
    def _on_clicked(self, change: Any) -> None:
        if not change["new"]:
            return
        item_id, _, rest = change["new"].partition("\0")
        double = rest.startswith("double")
        self.click(item_id, double=double)

    def click(self, item_id: str, double: bool = False) -> None:
        """What a click on the drawn item ``item_id`` does (also used by tests)."""
        entry = self.ids.get(item_id)
        if entry is None or self.result is None:
            return
        kind = entry.get("kind")
        if kind == "node":
            node = self.graph.nodes[int(entry["index"])]
            graphs = entry.get("graphs") or []
            if double and graphs:
                self.open_body(graphs[0]["path"])
            else:
                self.selected = node.name
        elif kind == "scope":
            if not entry.get("open"):
                self.expand(entry["path"])
            elif double:
                self.collapse(entry["path"])

    def open_body(self, path: str) -> None:
        """Draw an If/Loop/Scan body or a function's graph (by its path)."""
        if self.model is None:
            return
        self.show_graph(self.model.graph_at(path))

    @traitlets.observe("selected")
    def _on_selected(self, change: Any) -> None:
        self._update_highlight(reveal=True)

    def _update_highlight(self, reveal: bool = False) -> None:
        name = self.selected
        if not name or self.result is None or not self.graph.has_node(name):
            self.highlight_id = ""
            return
        node = self.graph.node(name)
        location = self.result.locate(node)
        entry = self.ids.get(location or "", {})
        if reveal and entry.get("kind") == "scope" and not self._rendering:
            # The node is hidden in a collapsed scope: open it (and its parents) to show it.
            self._rendering = True
            try:
                for _ in range(8):
                    if entry.get("kind") != "scope":
                        break
                    self.expanded = [*self.drawn_expanded(), entry["path"]]
                    self.render()
                    location = self.result.locate(node)
                    entry = self.ids.get(location or "", {})
            finally:
                self._rendering = False
        self.highlight_id = location or ""


def _inside(scope: Scope | None, ancestor: Scope | None) -> bool:
    return scope is not None and ancestor is not None and ancestor in scope.ancestors()
