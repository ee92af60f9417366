"""The notebook explorer: graph view, node list, attribute, tensor and model panels, wired together.

The panels know nothing of each other; the Explorer keeps the one shared state (the
current graph and the selected node) and tells every panel when it changes.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import numpy as np
import traitlets

from ..bindings import model_binding
from ..model import Graph, Model, Node
from ..readers import load, warm_up
from ..tensors import Tensor
from ..views._colour_scale import REDUCES, Reduce, checked_values, colour_scale_overlay
from ..views._paint import Overlay
from ..views._text import as_text, model_name
from . import _html as h
from ._attribute_panel import AttributePanel
from ._model_panel import ModelPanel
from ._node_list import NodeList
from ._static import STATIC_DRAWING_WAIT, static_html, with_static_fallback
from ._tensor_panel import TensorPanel

if TYPE_CHECKING:
    from ..metrics import Metrics, Profile
    from ..node_data import Matched
    from ..runs import Submodel

TAB_NODES, TAB_TENSORS, TAB_MODEL = 0, 1, 2
#: The per-node series :func:`onnx_explorer.metrics` computes, offered in the dropdown.
BUILT_IN_SERIES = ("macs", "params", "activation_bytes", "param_bytes")
_CUSTOM = "(custom)"
#: A series another panel offers: node → value (None: nothing to paint), log scale, reduce.
_ExtraSeries = tuple[Mapping[str, Any] | None, bool, Reduce]
#: What an overlay paints: values per node, the legend's label, a log scale, the scopes' reduce.
_OverlayArgs = tuple[dict[str, float | None], str, bool, Reduce]
#: Names of unmatched profile entries listed in the note at most.
UNMATCHED_LISTED = 12


class Explorer(widgets.VBox):
    """Interactive view of a model. Build one with :func:`explore`.

    ``selected_name`` (a trait) is the selected node's name in the current graph;
    ``graph_path`` the path of the graph shown (``"/"`` for the main graph).
    :meth:`overlay` colours the nodes by a number (MACs, parameters, bytes, any mapping
    node name → number); :meth:`overlay_profile` by an onnxruntime profile's latencies.
    """

    selected_name = traitlets.Unicode(None, allow_none=True)
    graph_path = traitlets.Unicode("/")

    def __init__(self, model: Model, *, max_nodes: int | None = None, **kwargs: Any) -> None:
        from ._graph_view import GraphView

        self.model = model
        graph = model.graph
        self._syncing = False
        view_options = {"max_nodes": max_nodes} if max_nodes else {}
        self.graph_view = GraphView(graph, model=model, **view_options)
        self.node_list = NodeList(graph)
        self.attribute_panel = AttributePanel(
            model, on_select=self.select, on_open_graph=self.show_graph,
            on_show_tensor=self.show_tensor,
        )  # fmt: skip
        self.tensor_panel = TensorPanel(graph, layout_note=self._layout_note, listed=False)
        self.model_panel = ModelPanel(model, on_open_graph=self.show_graph)
        self.breadcrumb = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self.overlay_picker = widgets.Dropdown(
            options=_picker_options(), value="", description="colour by",
            style={"description_width": "initial"}, layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        self.overlay_log = widgets.Checkbox(
            value=False, description="log scale", indent=False, layout=widgets.Layout(width="auto")
        )
        self.overlay_note = widgets.HTML()
        overlay_bar = widgets.HBox(
            [self.overlay_picker, self.overlay_log], layout=widgets.Layout(flex_flow="row wrap")
        )
        overlay_bar.add_class("oxe-overlay-bar")
        self.tabs = widgets.Tab(
            [widgets.VBox([overlay_bar, self.overlay_note, self.node_list, self.attribute_panel]),
             self.tensor_panel, self.model_panel],
        )  # fmt: skip
        for i, title in enumerate(("nodes", "tensors", "model")):
            self.tabs.set_title(i, title)
        # The graph takes most of the width; the panels sit beside it, as tall as the
        # graph pane, scrolling on their own (graph_view.css: .oxe-side).
        self.graph_view.layout = widgets.Layout(flex="1 1 64%", min_width="0")
        side = widgets.Box([self.tabs], layout=widgets.Layout(flex="0 0 36%", min_width="340px"))
        main = widgets.HBox([self.graph_view, side], layout=widgets.Layout(width="100%"))
        super().__init__([self.breadcrumb, main], **kwargs)
        self.add_class("oxe-explorer")
        side.add_class("oxe-side")
        main.add_class("oxe-main")
        self.tabs.add_class("oxe-tabs")
        self.breadcrumb.add_class("oxe-breadcrumb")
        self.graph_view.observe(self._on_view_selected, "selected")
        self.graph_view.observe(self._on_view_graph, "graph_path")
        self.node_list.observe(self._on_list_selected, "selected")
        self.node_list.observe(self._on_search, "revision")
        self.tabs.observe(self._on_tab, "selected_index")
        self._metrics: dict[tuple[tuple[str, int], ...], Metrics] = {}
        self._metrics_lock = threading.Lock()  # one computation, whichever thread asks first
        self._overlay_pick = 0  # overlays asked for: a pick still computing loses to later ones
        self._overlay_lock = threading.RLock()  # a pick's worker paints, or a cell's overlay()
        self._overlay_args: _OverlayArgs | None = None
        # Set while this thread moves the dropdown to follow an overlay (not a user's pick).
        # Per thread: traitlets observers run in the thread that sets the value, and a
        # pick's worker following the dropdown must not make the kernel ignore a real pick.
        self._following = threading.local()
        # Series other panels offer in the one "colour by" dropdown (a run's activations):
        # name → (values, log scale, reduce of collapsed scopes).
        self._extra_series: dict[str, Callable[[], _ExtraSeries]] = {}
        self.overlay_picker.observe(self._on_overlay_picked, "value")
        self.overlay_log.observe(self._on_overlay_log, "value")
        # The roots of the graphs opened on the way here: "/" then every function called
        # into, in order (a body's own chain comes from its parents).
        self._trail: list[str] = ["/"]
        self._update_breadcrumb()
        self.network_note = ""  # says when the explorer opened on a function, and why
        network = network_path(model)
        if network:
            for path in network:
                self.show_graph(path)
            wrappers = len(network) - 1
            through = f", through {wrappers} wrapper function" if wrappers else ""
            self.network_note = (
                f"opened on the network, {self.graph.name or network[-1]}{through}"
                f"{'s' if wrappers > 1 else ''}: the main graph only packages it "
                "(the breadcrumb goes back)"
            )
            self.overlay_note.value = h.STYLE + h.muted(self.network_note)

    # -- the Python side of the two-way link ---------------------------------------
    @property
    def graph(self) -> Graph:
        """The graph currently shown."""
        return self.model.graph_at(self.graph_path)

    @property
    def selected(self) -> Node | None:
        """The selected node (None when nothing is selected)."""
        name = self.selected_name
        if name is None or not self.graph.has_node(name):
            return None
        return self.graph.node(name)

    def select(self, name: str | None) -> None:
        """Select a node by name, everywhere at once: in the current graph, else in the one
        other graph (an If/Loop/Scan body, a function) that has a node of that name, which
        is then shown. A name found in several other graphs needs :meth:`show_graph` first."""
        if name is not None and not self.graph.has_node(name):
            found = [g.path for g in self.model.graphs() if g.has_node(name)]
            if not found:
                raise KeyError(f"no node named {name!r} in any graph of the model")
            if len(found) > 1:
                shown = ", ".join(map(repr, found[:5])) + (" ..." if len(found) > 5 else "")
                raise KeyError(
                    f"{len(found)} graphs have a node named {name!r} ({shown}): "
                    "show one with show_graph(path), then select"
                )
            self.show_graph(found[0])
        self.selected_name = name

    def tensor(self, name: str) -> np.ndarray:
        """The values of a stored tensor (initializer or Constant) as a numpy array."""
        try:
            return self.tensor_panel.tensor(name).numpy()
        except KeyError:
            pass
        for ref in self.model.weights():
            if ref.tensor.name == name:
                return ref.tensor.numpy()
        raise KeyError(f"no stored tensor named {name!r}")

    def show_tensor(self, tensor: Tensor | str) -> None:
        """Open the tensor panel on a tensor (object or name of the current graph)."""
        if isinstance(tensor, str):
            tensor = self.tensor_panel.tensor(tensor)
        self.tabs.selected_index = TAB_TENSORS
        self.tensor_panel.show_tensor(tensor)

    def show_graph(self, path: str) -> None:
        """Show another graph: a subgraph (``/If_0/then_branch``), a function body, or ``/``."""
        graph = self.model.graph_at(path)  # KeyError for an unknown path
        self._trail = _next_trail(self._trail, graph, self.model.graph)
        self.selected_name = None
        self.graph_path = path
        if self.graph_view.graph is not graph:
            self.graph_view.show_graph(graph)
        self.node_list.set_graph(graph)
        self.tensor_panel.set_graph(graph)
        self.attribute_panel.show(None, None)
        self.model_panel.follow(path)  # the graph selector shows the graph that is drawn
        self._update_breadcrumb()

    # -- colouring nodes by a number -------------------------------------------------
    def overlay(
        self,
        series_or_values: str | Mapping[str, Any] | Any = None,
        *,
        name: str | None = None,
        log: bool = False,
        reduce: Reduce = "sum",
        dims: Mapping[str, int] | None = None,
    ) -> Matched | None:
        """Colour the nodes by a number; ``None`` takes the colours away.

        ``series_or_values``: ``"macs"``, ``"params"``, ``"activation_bytes"`` or
        ``"param_bytes"`` (computed once per model by :func:`onnx_explorer.metrics`, with
        ``dims`` binding symbolic dimensions), or any mapping node name → number (a dict,
        a pandas Series) with ``name`` for the legend. ``log``: a log scale (zeros drawn
        plain). Collapsed scopes show the ``reduce`` (``"sum"`` or ``"max"``) of their
        nodes. The drawing is repainted without a new layout; the node list shows the
        values (and sorts by them), the attribute panel the selected node's.
        A value that is not a number raises ValueError naming its node.

        A node-data file written for another viewer (a ``.json`` path, its text, or the
        parsed dict: Model Explorer node data or a Netron attachment, told apart by
        content) is painted with the file's own colours; ``name`` picks the series (a
        Netron metric name; default: the first). Returns the match
        (:class:`~onnx_explorer.node_data.Matched`): keys matching no node are listed
        there and in the note under the dropdown, never an error.
        """
        if _is_node_data(series_or_values):
            return self._overlay_node_data(series_or_values, name)
        if reduce not in REDUCES:
            raise ValueError(f"reduce must be 'sum' or 'max', not {reduce!r}")
        # The values first: one that is refused must not cancel a pick still computing.
        args, picked, note = self._overlay_request(series_or_values, name, log, reduce, dims)
        with self._overlay_lock:
            self._overlay_pick += 1  # a dropdown pick still computing must not paint over this
            self._show_overlay(args, picked, log, note)
        return None

    def _overlay_node_data(self, source: Any, series: str | None) -> Matched:
        """Paint a Model Explorer / Netron node-data file (see :meth:`overlay`)."""
        from ..node_data import read_node_data
        from ..views._node_data_paint import node_data_overlay

        data = read_node_data(source)
        matched = data.on_graph(self.graph, series)  # KeyError naming the series there are
        made: weakref.WeakKeyDictionary[Graph, Overlay] = weakref.WeakKeyDictionary()

        def overlay_for(graph: Graph) -> Overlay:
            if graph not in made:
                made[graph] = node_data_overlay(data.on_graph(graph, matched.series), graph)
            return made[graph]

        numbers: dict[str, float | None] | None = dict(matched.numbers()) or None
        with self._overlay_lock:
            self._overlay_pick += 1  # a dropdown pick still computing must not paint over this
            self._overlay_args = None
            self.graph_view.set_overlay(overlay_for)
            self.node_list.set_values(numbers, matched.series)
            self.attribute_panel.set_values(numbers, matched.series)
            self._follow_picker("", False)
            text = f"{data.format} node data · {matched.report()}"
            if data.ignored:
                text += f" · {len(data.ignored):,} entries skipped ({data.ignored[0]})"
            self.overlay_note.value = h.STYLE + h.muted(text)
        return matched

    def _overlay_request(
        self,
        series_or_values: str | Mapping[str, Any] | Any,
        name: str | None,
        log: bool,
        reduce: Reduce,
        dims: Mapping[str, int] | None = None,
    ) -> tuple[_OverlayArgs | None, str, str]:
        """What to paint (None: no colours), what the dropdown then shows, and the note
        under it (for a metrics series: the input sizes assumed, the nodes unknown)."""
        if isinstance(series_or_values, str) and series_or_values in self._extra_series:
            found, extra_log, extra_reduce = self._extra_series[series_or_values]()
            if found is None:
                return None, "", ""
            args = (checked_values(found), name or series_or_values, extra_log, extra_reduce)
            return args, series_or_values if not name else _CUSTOM, ""
        if isinstance(series_or_values, str):
            values = self._series(series_or_values, dims)
            picked = series_or_values if not name else _CUSTOM
            note = metrics_note(self.metrics(dims), series_or_values)
            return (values, name or series_or_values, bool(log), reduce), picked, note
        if series_or_values is not None:
            values = checked_values(series_or_values)
            return (values, name or "value", bool(log), reduce), _CUSTOM, ""
        return None, "", ""

    def _show_overlay(
        self, args: _OverlayArgs | None, picked: str, log: bool, note: str = ""
    ) -> None:
        self._overlay_args = args
        self._paint(args)
        if note:
            self.overlay_note.value = h.STYLE + "<br>".join(map(h.muted, note.splitlines()))
        if args is not None:
            self._follow_picker(picked, bool(log))

    def overlay_profile(
        self, path: str | os.PathLike[str], *, log: bool = False, reduce: Reduce = "sum"
    ) -> Profile:
        """Colour the nodes by an onnxruntime profile's mean latency (ms per run).

        Reads the JSON ``SessionOptions.enable_profiling`` writes
        (:func:`onnx_explorer.read_ort_profile`); the note under the dropdown says how many
        timed names are nodes of this model and lists those onnxruntime made by fusing
        or inserting nodes. Returns the profile.
        """
        from ..metrics import read_ort_profile

        profile = read_ort_profile(path, self.model)
        self.overlay(profile.series(), name="latency ms", log=log, reduce=reduce)
        timed = len(profile.latency_ms)
        text = (
            f"profile {Path(path).name}: {len(profile.matched):,} of {timed:,} timed nodes "
            f"match this model's nodes; {len(profile.missing):,} model nodes have no time"
        )
        unmatched = profile.unmatched
        if unmatched:
            listed = ", ".join(unmatched[:UNMATCHED_LISTED])
            more = (
                f" … and {len(unmatched) - UNMATCHED_LISTED:,} more"
                if len(unmatched) > UNMATCHED_LISTED
                else ""
            )
            text += f". Renamed by onnxruntime (fused or inserted), not shown: {listed}{more}"
        self.overlay_note.value = h.STYLE + h.muted(text)
        return profile

    def metrics(self, dims: Mapping[str, int] | None = None) -> Metrics:
        """This model's :func:`onnx_explorer.metrics` (computed once per ``dims``)."""
        from ..metrics import metrics

        key = tuple(sorted((dims or {}).items()))
        with self._metrics_lock:
            if key not in self._metrics:
                self._metrics[key] = metrics(self.model, dims=dims)
            return self._metrics[key]

    def offer_series(self, series: Mapping[str, Callable[[], _ExtraSeries]]) -> None:
        """Offer these series in the "colour by" dropdown beside the model's own (the run
        panel's: max |activation|, NaN/Inf, error vs other), replacing those offered before;
        each gives (node → value, log scale, reduce)."""
        self._extra_series = dict(series)
        current = self.overlay_picker.value
        kept = current if current in self._picker_values() else ""
        self._follow_picker(kept, self.overlay_log.value)

    def _picker_values(self) -> set[str]:
        return {value for _, value in self._picker_options()}

    def _picker_options(self) -> list[tuple[str, str]]:
        return [*_picker_options(), *((name, name) for name in self._extra_series)]

    def _series(self, series: str, dims: Mapping[str, int] | None) -> dict[str, float | None]:
        if series not in BUILT_IN_SERIES:
            raise ValueError(
                f"no series {series!r}: choose one of {', '.join(BUILT_IN_SERIES)}, "
                "or pass a mapping node name → number"
            )
        return checked_values(self.metrics(dims).series(series))

    def _paint(self, args: tuple[dict[str, float | None], str, bool, Reduce] | None) -> None:
        """Hand the overlay to the drawing (one per graph shown), the list and the panel."""
        self.overlay_note.value = ""
        if args is None:
            self.graph_view.set_overlay(None)
            self.node_list.set_values(None)
            self.attribute_panel.set_values(None)
            self._follow_picker("", self.overlay_log.value)
            return
        values, label, log, reduce = args
        made: weakref.WeakKeyDictionary[Graph, Overlay] = weakref.WeakKeyDictionary()

        def overlay_for(graph: Graph) -> Overlay:
            if graph not in made:
                made[graph] = colour_scale_overlay(
                    values, graph, name=label, log=log, reduce=reduce
                )
            return made[graph]

        self.graph_view.set_overlay(overlay_for)
        self.node_list.set_values(values, label)
        self.attribute_panel.set_values(values, label)

    @property
    def _picking_overlay(self) -> bool:
        return bool(getattr(self._following, "active", False))

    @_picking_overlay.setter
    def _picking_overlay(self, active: bool) -> None:
        self._following.active = active

    def _follow_picker(self, value: str, log: bool) -> None:
        self._picking_overlay = True
        try:
            options = self._picker_options()
            if value == _CUSTOM:
                label = self._overlay_args[1] if self._overlay_args else "custom"
                options.append((as_text(label)[:40], _CUSTOM))
            self.overlay_picker.options = options
            self.overlay_picker.value = value
            self.overlay_log.value = log
        finally:
            self._picking_overlay = False

    def _on_overlay_picked(self, change: Any) -> None:
        """A pick in the dropdown. Metrics not computed yet (shape inference and a walk of
        every node: ~0.6 s at 100,000 nodes) are computed off the kernel's thread."""
        if self._picking_overlay or change["new"] == _CUSTOM:
            return
        series = change["new"] or None
        with self._overlay_lock:
            self._overlay_pick += 1
            pick = self._overlay_pick
        if series in BUILT_IN_SERIES and () not in self._metrics:
            self.overlay_note.value = h.STYLE + h.muted(f"computing {series} …")
            worker = threading.Thread(
                target=self._apply_pick, args=(series, pick), name="oxe-metrics"
            )  # not a daemon: the interpreter never stops it midway at exit
            worker.start()
        else:
            self._apply_pick(series, pick)

    def _apply_pick(self, series: str | None, pick: int) -> None:
        """Paint pick number ``pick`` unless a later pick or overlay() came since: the
        check and the paint in one step under the lock (values computed before it)."""
        try:
            if series in BUILT_IN_SERIES:
                self.metrics()  # the slow part, cached
            log = self.overlay_log.value
            args, picked, note = self._overlay_request(series, None, log, "sum")
            with self._overlay_lock:
                if pick == self._overlay_pick:
                    self._show_overlay(args, picked, log, note)
        except Exception as exc:  # a dropdown pick must not raise into the front end
            self.overlay_note.value = h.STYLE + h.muted(f"cannot colour by {series}: {exc}")

    def _on_overlay_log(self, change: Any) -> None:
        if self._picking_overlay or self._overlay_args is None:
            return
        values, label, _log, reduce = self._overlay_args
        self._overlay_args = (values, label, bool(change["new"]), reduce)
        self._paint(self._overlay_args)

    def run(self, feeds: Any = None, **options: Any) -> Any:
        """Run the model with onnxruntime and show each node's activations; see
        :func:`onnx_explorer.widgets._activations.attach_run`."""
        from ._activations import attach_run

        return attach_run(self, feeds, **options)

    def compare(self, other: Any, feeds: Any = None, **options: Any) -> Any:
        """Run this model and ``other`` on the same feeds and show where they differ."""
        from ._activations import attach_compare

        return attach_compare(self, other, feeds, **options)

    def extract(
        self,
        what: str | Sequence[str] | tuple[Sequence[str], Sequence[str]] | None = None,
        *,
        inputs: Sequence[str] | None = None,
        outputs: Sequence[str] | None = None,
        copy_weights: bool = False,
    ) -> Submodel:
        """Cut a part of the main graph out as a runnable model: the selected node (no
        argument), a node name or a scope (``"/encoder/layer.3"``), a list of node names,
        or ``(inputs, outputs)``; typed at the sizes bound with ``model.bind``. See
        :func:`onnx_explorer.extract`; ``.save(path)`` writes a new file."""
        from ..runs import extract

        if self.graph is not self.model.graph:
            raise ValueError(
                f"extract() cuts the main graph; the graph shown is {self.graph_path!r} "
                "(go back with ex.show_graph('/'))"
            )
        nodes: list[str] | None = None
        scope: str | None = None
        if outputs is None and inputs is None:
            if what is None:
                node = self.selected
                if node is None:
                    raise ValueError("no node is selected: select one, or name nodes or a scope")
                nodes = [node.name]
            elif isinstance(what, tuple) and len(what) == 2 and not isinstance(what[0], str):
                inputs, outputs = list(what[0]), list(what[1])
            elif isinstance(what, str):
                if self.model.graph.has_node(what):
                    nodes = [what]
                else:
                    scope = what
            else:
                nodes = [str(name) for name in what]
        return extract(
            self.model, inputs=inputs, outputs=outputs, nodes=nodes, scope=scope,
            copy_weights=copy_weights,
        )  # fmt: skip

    def jump_to_problem(self) -> str | None:
        """Select the node the last :meth:`run` or :meth:`compare` found first: the first
        with a NaN or Inf (or the node that failed), or the first beyond tolerance, as the
        activations panel's button does. Returns its name, or None when there is none."""
        panel = getattr(self, "_activation_panel", None)
        return None if panel is None else panel.jump_to_problem()

    def save(self, path: str | os.PathLike[str], timeout: float = 60.0) -> Path:
        """Save the graph view shown now as ``.svg``, ``.png`` or ``.dot`` (by the suffix)."""
        return self.graph_view.save(Path(path), timeout)

    def close(self) -> None:
        """Close the explorer; a layout still running is cancelled (its ``dot`` killed)."""
        self.graph_view.close()
        super().close()

    # -- keeping every panel on the same selection ---------------------------------
    @traitlets.observe("selected_name")
    def _on_selected_name(self, change: Any) -> None:
        name = change["new"]
        self._syncing = True
        try:
            self.graph_view.selected = name or ""
            self.node_list.selected = name
        finally:
            self._syncing = False
        node = self.selected
        self.attribute_panel.show(node, self.graph if node else None)
        if node is not None and self.tabs.selected_index != TAB_NODES:
            self.tabs.selected_index = TAB_NODES

    def _on_view_selected(self, change: Any) -> None:
        if not self._syncing:
            name = change["new"] or None
            if name is None or self.graph.has_node(name):
                self.selected_name = name

    def _on_view_graph(self, change: Any) -> None:
        # A double click in the drawing opened an If/Loop/Scan body or a function.
        if change["new"] != self.graph_path:
            self.show_graph(change["new"])

    def _on_tab(self, change: Any) -> None:
        # Tensors and model summary are made when their tab is first opened.
        if change["new"] == TAB_TENSORS:
            self.tensor_panel.activate()
        elif change["new"] == TAB_MODEL:
            self.model_panel.activate()

    def _on_search(self, _change: Any) -> None:
        # Search and filter hits are marked in the drawing, with next/previous buttons.
        self.graph_view.set_matches(self.node_list.matches if self.node_list.filtering else [])

    def _on_list_selected(self, change: Any) -> None:
        if not self._syncing and change["new"] is not None:
            self.selected_name = change["new"]

    def _update_breadcrumb(self) -> None:
        """``model › main graph › function f › node If_1 › then_branch``: always from the
        main graph, through every function called into, to the graph shown; each a
        button but the last."""
        chain: list[tuple[str, str]] = [("main graph", "/")]
        for path in self._trail[1:]:
            function = self.model.graph_at(path)
            chain.append((f"function {function.name or path}", path))
        body: list[tuple[str, str]] = []
        graph: Graph | None = self.graph
        while graph is not None and graph.parent is not None:
            body.append((graph.path.rsplit("/", 1)[-1], graph.path))
            body.append((graph.parent.name, ""))
            graph = graph.parent.graph
        chain.extend(reversed(body))
        crumbs: list[widgets.Widget] = [
            widgets.HTML(h.STYLE + f"<b>{h.esc(model_name(self.model))}</b>&nbsp;›")
        ]
        for raw_label, path in chain:
            label = as_text(raw_label)  # node names: no bidi overrides or controls on buttons
            if path and path != self.graph_path:
                button = widgets.Button(
                    description=label[:60],
                    tooltip=as_text(path[:300]),
                    layout=widgets.Layout(width="auto"),
                )
                button.on_click(lambda _b, p=path: self.show_graph(p))
                crumbs.append(button)
            else:
                crumbs.append(widgets.Label(label[:60]))
            crumbs.append(widgets.Label("›"))
        self.breadcrumb.children = crumbs[:-1]

    def _layout_note(self, tensor: Tensor) -> str | None:
        return self.model.support.weight_note(self.model, tensor.name)

    # -- display without a kernel ---------------------------------------------------
    def static_html(self, wait: float = STATIC_DRAWING_WAIT) -> str:
        """The kernel-free copy: summary tables and the current drawing.

        When no drawing has been shown yet (layout runs in the background), waits up to
        ``wait`` seconds for the first one, so that a saved notebook keeps a picture.
        """
        view = self.graph_view
        waiter = getattr(view, "wait", None)
        if not view.svg and not view.error and waiter is not None:
            waiter(wait)
        svg = view.svg or ""
        start = svg.find("<svg")
        drawing = svg[start:] if start >= 0 else None
        note = None
        if drawing is None and not view.error:
            note = "The drawing was not ready when this output was made."
        return static_html(self.model, drawing, note=note)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        # The widget view, its static copy (text/html) and onnx_explorer's own view type,
        # which the bundled JupyterLab / Notebook 7 extension renders: live widget while
        # the kernel has it, the static copy when a saved notebook is reopened.
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        return with_static_fallback(bundle, self.static_html())


def _picker_options() -> list[tuple[str, str]]:
    return [("none", ""), *((series, series) for series in BUILT_IN_SERIES)]


#: Ops a main graph may hold and still be only the packaging of a network that lives in
#: a function (a TensorFlow SavedModel: placeholders, variables, one call per signature).
_PACKAGING_OPS = (
    "Placeholder PlaceholderWithDefault VarHandleOp VariableV2 Const Identity NoOp "
    "ReadVariableOp Constant"
)
_PACKAGING = frozenset(_PACKAGING_OPS.split())
_SAVER_INPUTS = ("saver_filename",)  # TensorFlow's checkpoint-path placeholder


def network_path(model: Model, max_depth: int = 8) -> list[str]:
    """The function paths from the main graph to the model's network, when the main graph
    only packages it (every node a call or :data:`_PACKAGING`), through the serving
    call and the wrappers that only call on (a SavedModel's signature wrapper); [] when
    the main graph is the network."""
    if not model.functions:  # the common case: no walk over every node at start-up
        return []
    graph = model.graph
    calls = [n for n in graph.nodes if model.function_for(n) is not None]
    if not calls or any(
        n.op_type not in _PACKAGING and model.function_for(n) is None for n in graph.nodes
    ):
        return []
    inputs = [v.name for v in graph.inputs if v.name not in _SAVER_INPUTS]
    serving = [n for n in calls if any(i in inputs for i in n.inputs)]
    serving.sort(key=lambda n: not any(i.startswith("serving_default") for i in n.inputs))
    if not serving:
        return []
    trail: list[str] = []
    node: Node | None = serving[0]
    while node is not None and len(trail) < max_depth:
        function = model.function_for(node)
        if function is None or function.graph.path in trail:
            break
        trail.append(function.graph.path)
        body = function.graph.nodes
        inner = [n for n in body if model.function_for(n) is not None]
        wrapper = len(inner) == 1 and all(n is inner[0] or n.op_type in _PACKAGING for n in body)
        node = inner[0] if wrapper else None
    return trail


def _is_node_data(value: Any) -> bool:
    """A node-data file for another viewer: a ``.json`` path, JSON text, or its dict."""
    if isinstance(value, os.PathLike) or (
        isinstance(value, str) and value.lower().endswith(".json")
    ):
        return True
    if isinstance(value, str | bytes):
        return value.lstrip()[:1] in ("{", b"{")
    if isinstance(value, Mapping):
        from ..node_data import is_model_explorer, is_netron

        return is_netron(value) or is_model_explorer(value)
    return False


def _next_trail(trail: list[str], graph: Graph, main: Graph) -> list[str]:
    """The trail after opening ``graph``: back to "/" for the main graph and its bodies,
    cut back to a function already on it, else the function appended (a nested call)."""
    root = graph
    while root.parent is not None and root.parent.graph is not None:
        root = root.parent.graph
    if root is main:
        return ["/"]
    if root.path in trail:
        return trail[: trail.index(root.path) + 1]
    return [*trail, root.path]


def metrics_note(result: Metrics, series: str) -> str:
    """One or two lines under a metrics overlay: the input sizes assumed and what is
    not counted (the same words as ``onnx-explorer metrics``)."""
    lines = [result.assumed_line] if result.assumed_line else []
    unknown = result.unknown["macs" if series == "macs" else "activation_bytes"]
    if series in ("macs", "activation_bytes") and unknown:
        ops = ", ".join(f"{op} ×{n}" for op, n in list(result.unknown_ops.items())[:4])
        why = f" (no MAC rule: {ops})" if ops and series == "macs" else ""
        lines.append(f"{series} unknown for {unknown:,} nodes, drawn uncoloured{why}")
    return "\n".join(lines)


def explore(
    source: str | os.PathLike[str] | bytes | Any,
    *,
    external_data_dir: str | os.PathLike[str] | None = None,
    max_nodes: int | None = None,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Explorer:
    """Open a model (path, bytes, ``onnx.ModelProto`` or a loaded Model) in the explorer.

    ``dims`` (symbol → size) and ``input_shapes`` (input → whole shape) choose the input
    sizes that edge labels, metrics overlays and runs use (:meth:`Model.bind`); sizes
    not given are assumed as :mod:`onnx_explorer.bindings` says, and said in the view.
    """
    warm_up()  # helper processes (ONNX shape inference) start while the model loads
    model = (
        source if isinstance(source, Model) else load(source, external_data_dir=external_data_dir)
    )
    if dims or input_shapes:
        model_binding(model, dims=dims, input_shapes=input_shapes)  # refused here, by name
        model.bind(dims=dims, input_shapes=input_shapes)
    return Explorer(model, max_nodes=max_nodes)
