"""From a view request to a picture that always arrives: plans, a time budget, cancellation.

``dot`` can take minutes or crash on an unlucky graph (control edges fanning into
one node, some cluster shapes). :func:`draw` tries the view as asked within a time
budget and, when Graphviz runs out of time or fails, falls back to cheaper plans —
no control edges, a smaller overview, no clusters and no edge labels, then the
neighbourhood of the graph inputs — and says in one line what it simplified. It is
synchronous; the widget runs it in a worker thread and cancels it through a
:class:`Cancellation` when a newer request supersedes it.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from ..errors import GraphvizNotFoundError, LayoutCancelledError, LayoutTimeoutError, RenderError
from ..model import Graph, Model
from ._drawing import (
    DEFAULT_FIRST_VIEW,
    DEFAULT_HOPS,
    DEFAULT_MAX_NODES,
    ControlEdges,
    DotResult,
    EdgeLabels,
    build_dot,
)
from ._paint import Overlay
from ._render import Layout, finish_svg, layout_variants
from ._wiring import FROM_INPUT, graph_wiring

#: Seconds one plan may take before a cheaper one is tried.
DEFAULT_BUDGET = 5.0
#: The last resort gets more time: after it there is nothing smaller to show.
LAST_PLAN_FACTOR = 4.0
_SMALL_OVERVIEW = 120
_INPUTS_HOPS = 3
_INPUTS_MAX_NODES = 80


@dataclass(frozen=True)
class ViewRequest:
    """What to draw. ``expanded``: scope paths, or None for the automatic first view."""

    expanded: tuple[str, ...] | None = None
    focus: str | None = None
    hops: int = DEFAULT_HOPS
    max_nodes: int = DEFAULT_MAX_NODES
    edge_labels: EdgeLabels = "both"
    control_edges: ControlEdges = "auto"
    first_view_nodes: int = DEFAULT_FIRST_VIEW
    #: Fold repeated blocks, each showing the member at its position (fold key, position);
    #: None: no folds (see :func:`~onnx_explorer.views._drawing.build_dot`).
    fold_steps: tuple[tuple[str, int], ...] | None = None

    def build(self, graph: Graph, model: Model | None, overlay: Overlay | None = None) -> DotResult:
        return build_dot(
            graph,
            model,
            expanded=None if self.expanded is None else list(self.expanded),
            focus=self.focus,
            hops=self.hops,
            max_nodes=self.max_nodes,
            edge_labels=self.edge_labels,
            control_edges=self.control_edges,
            first_view_nodes=min(self.first_view_nodes, self.max_nodes),
            overlay=overlay,
            fold_steps=None if self.fold_steps is None else dict(self.fold_steps),
        )


@dataclass(frozen=True)
class Drawing:
    """A finished picture: the SVG, what it shows, and what was simplified to get it."""

    svg: str
    result: DotResult
    request: ViewRequest  # the plan that was drawn (differs from the asked one if simplified)
    simplified: str | None  # one line for people; None when drawn as asked
    seconds: float


class Cancellation:
    """Shared between the thread that draws and whoever may cancel it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._layout: Layout | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            layout = self._layout
        if layout is not None:
            layout.cancel()

    def attach(self, layout: Layout | None) -> None:
        with self._lock:
            self._layout = layout
            cancelled = self._cancelled
        if cancelled and layout is not None:
            layout.cancel()

    def check(self) -> None:
        if self._cancelled:
            raise LayoutCancelledError("the layout was cancelled")


def plans(graph: Graph, request: ViewRequest) -> Iterator[tuple[str | None, ViewRequest]]:
    """The request, then ever cheaper ones, each with a note saying what it leaves out."""
    seen = {request}

    def fresh(plan: ViewRequest) -> bool:
        if plan in seen:
            return False
        seen.add(plan)
        return True

    yield None, request
    index = graph_wiring(graph)
    current = request
    if request.control_edges != "hide" and any(e.control for e in index.edges):
        current = replace(current, control_edges="hide")
        if fresh(current):
            yield "control-dependency edges hidden", current
    if request.focus is None:
        smaller = replace(current, expanded=None, first_view_nodes=_SMALL_OVERVIEW)
        if fresh(smaller):
            yield "a smaller overview", smaller
        flat = replace(current, expanded=(), edge_labels="none")
        if fresh(flat):
            yield "top-level scopes only, no edge labels", flat
    start = _first_reader_of_inputs(graph)
    if start is not None:
        around = ViewRequest(
            focus=start,
            hops=_INPUTS_HOPS,
            max_nodes=min(_INPUTS_MAX_NODES, request.max_nodes),
            edge_labels="none",
            control_edges="hide",
        )
        if fresh(around):
            yield "only the neighbourhood of the graph inputs", around


def _first_reader_of_inputs(graph: Graph) -> str | None:
    """The first node reading the first graph input (else the first drawable node).

    From the drawing's own edge index: asking ``graph.consumers`` would build the graph's
    consumer index (0.2 s at 100,000 nodes) on every layout, for a plan rarely drawn.
    """
    index = graph_wiring(graph)
    readers = ((e.key, e.dst) for e in index.edges if e.kind == FROM_INPUT)
    first = min(readers, default=None)
    if first is not None:
        return graph.nodes[first[1]].name
    for node in graph.nodes:
        if index.is_drawable(node.index):
            return node.name
    return None


#: The ranking variant whose drawing arrived first the last time each graph was laid out.
#: Which ranking suits a graph is a property of its shape, so the next layout of the same
#: graph (a scope opened, a hidden node selected) starts with that one and the other
#: joins after the stagger: opening a scope of a real QDQ transformer takes 2.9-4.8 s
#: under the plain ranking and 0.13-0.3 s under newrank, which used to win only after
#: its 0.35 s stagger; a DenseNet-like graph where newrank is the slow one keeps plain.
_WINNERS: weakref.WeakKeyDictionary[Graph, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _ranked_variants(
    graph: Graph, variants: tuple[tuple[str, ...], ...]
) -> tuple[tuple[str, ...], ...]:
    """``variants`` with the one that won this graph's last layout first."""
    winner = _WINNERS.get(graph)
    if winner is None or winner not in variants or variants[0] == winner:
        return variants
    return (winner, *(v for v in variants if v != winner))


def draw(
    graph: Graph,
    model: Model | None,
    request: ViewRequest,
    *,
    budget: float = DEFAULT_BUDGET,
    cancellation: Cancellation | None = None,
    on_attempt: Callable[[DotResult], None] | None = None,
    overlay: Overlay | None = None,
) -> Drawing:
    """Lay out ``request``, falling back to cheaper plans until one draws.

    ``on_attempt(result)`` is called before each ``dot`` run (for a busy indicator).
    ``overlay`` (fills, ghosts, legend) is painted on every plan, the cheaper ones too.
    Raises GraphvizNotFoundError, LayoutCancelledError, or RenderError when even the
    cheapest plan failed (its message says what each plan hit).
    """
    cancellation = cancellation or Cancellation()
    started = time.monotonic()
    failures: list[str] = []
    candidates = plans(graph, request)  # the cheaper plans are made only when needed
    upcoming = next(candidates, None)
    while upcoming is not None:
        what, plan = upcoming
        upcoming = next(candidates, None)
        cancellation.check()
        result = plan.build(graph, model, overlay)
        cancellation.check()
        if on_attempt is not None:
            on_attempt(result)
        limit = budget * (LAST_PLAN_FACTOR if upcoming is None else 1.0)
        variants = _ranked_variants(graph, layout_variants(result.source))
        layout = Layout(result.source, "svg", variants)
        cancellation.attach(layout)
        try:
            variant, output = layout.wait(limit)
        except LayoutTimeoutError:
            failures.append(f"took more than {limit:g} s")
            continue
        except (GraphvizNotFoundError, LayoutCancelledError):
            raise
        except RenderError as exc:
            failures.append(str(exc))
            continue
        finally:
            cancellation.attach(None)
            layout.cancel(mark=False)
        if len(variants) > 1:
            _WINNERS[graph] = variants[variant]
        simplified = None
        if what is not None:
            simplified = f"Simplified to {what}: the full view {failures[0]}."
        return Drawing(
            finish_svg(output, result), result, plan, simplified, time.monotonic() - started
        )
    raise RenderError(
        "Graphviz could not draw this graph, even simplified: " + "; ".join(dict.fromkeys(failures))
    )


__all__ = ["DEFAULT_BUDGET", "Cancellation", "Drawing", "ViewRequest", "draw", "plans"]
