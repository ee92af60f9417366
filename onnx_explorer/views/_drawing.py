"""Graph → DOT source: what is drawn, under which synthetic ids, and what was left out.

Pure: no IO, no subprocess (``render.py`` runs ``dot``). Three ways to draw a graph:

* everything, when it fits in the first-view budget;
* by name scope (the default for large graphs): collapsed scopes are boxes that
  show their node and parameter counts, expanded ones are clusters; a first view
  is chosen automatically (:func:`~onnx_explorer.views._scopes.first_view`);
* around one node (``focus`` + ``hops``): the nodes up to k edges up and down.

No layout ever holds more than ``max_nodes`` drawn nodes (hard limit
:data:`MAX_NODES_LIMIT`), since ``dot`` time grows much faster than linearly
(2,000 nodes 1.5 s, 5,000 nodes 32 s here). DOT identifiers are synthetic
(``n0`` nodes, ``s0`` collapsed scopes, ``c0`` clusters, ``i0``/``o0`` graph inputs
and outputs, ``x0`` values from outside, ``e0`` edges) and also set as the ``id``
attribute, so the SVG element of each carries it; model text appears only inside
escaped labels, and in the hover ``titles`` that ``render.py`` writes into the SVG.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .._gc_pause import paused_gc
from ..model import Graph, Model, Node, ValueInfo
from ..tensors import Tensor
from . import _statements as dot
from ._edge_types import ValueTypes, value_types
from ._labels import constant_attribute_label, tensor_label
from ._paint import PALETTE, Ghost, Overlay, paint_for
from ._quoting import one_line
from ._repeats import Fold, RepeatedBlocks, repeated_blocks
from ._scopes import Scope, ScopeTree, first_view, open_scopes, scope_tree
from ._text import TypeTextMode, as_text, human_count, plural, shorten, type_text
from ._wiring import (
    FROM_INPUT,
    FROM_NODE,
    FROM_OUTER,
    FROM_STORED,
    Edge,
    GraphWiring,
    constant_tensor,
    graph_wiring,
)

#: What each edge's label says: nothing, the element type, the shape, or both (the
#: vocabulary of :func:`~onnx_explorer.views._text.type_text`, which writes the labels).
EdgeLabels = TypeTextMode
#: What becomes of edges that only order execution (GraphDef ``^name``): see :func:`build_dot`.
ControlEdges = Literal["auto", "show", "hide"]
EDGE_LABELS: tuple[EdgeLabels, ...] = get_args(EdgeLabels)
CONTROL_EDGES: tuple[ControlEdges, ...] = get_args(ControlEdges)
#: ``control_edges="auto"`` draws ordering-only edges when at most this many remain after
#: bundling. A TF1 frozen graph sends one from every scope into a single NoOp: 84 of them
#: made one 145-box layout take 50 s here, against 0.04 s without them.
CONTROL_EDGES_AUTO_MAX = 16
#: Drawn items from which edge labels float beside their edges (``xlabel``) instead of
#: shaping the layout: 4× faster on the larger views, the small ones keep the tidier look.
FLOATING_LABELS_FROM = 150
#: Drawn edges from which labels float too, however few the boxes: each label is a node
#: dot must rank, and a DenseNet block open (89 boxes, 623 edges, every layer reading all
#: the ones before it) took 4.5-5 s with them against 0.6 s floating. Such views are
#: also laid out with fewer optimisation passes (``_statements.QUICK_LAYOUT``).
FLOATING_EDGES_FROM = 200
DEFAULT_MAX_NODES = 800
#: No layout is ever handed more drawn nodes than this, whatever the caller asks.
MAX_NODES_LIMIT = 1200
#: Boxes the automatic first view of a large graph aims for.
DEFAULT_FIRST_VIEW = 300
DEFAULT_HOPS = 2
FOLDED_LINES_MAX = 6
LABEL_CHARS = 48
#: Longest model name in a hover title or a note (the attribute panel shows it whole):
#: a 1 MB node name would otherwise be written into the SVG once per title.
TITLE_NAME_CHARS = 2000
#: Most ghost boxes (removed nodes) in one drawing; the rest are counted in a note.
MAX_GHOSTS = 200

_BODY_ORDER = {"then_branch": 0, "else_branch": 1, "body": 2}


@dataclass(frozen=True)
class DotResult:
    """DOT source plus what its synthetic ids stand for and what was left out."""

    source: str
    ids: Mapping[str, Mapping[str, Any]]  # "n3" → {"kind": "node", "name": ..., "index": 3}
    titles: Mapping[str, str]  # synthetic id → hover text
    drawn: int  # nodes handed to dot (operators, scope boxes, inputs, outputs)
    notes: tuple[str, ...]  # what was collapsed, cut or skipped, for people
    expanded: tuple[str, ...]  # scope paths actually expanded, in request order
    focus: str | None  # name of the node the view is centred on (focus mode)
    graph_path: str
    _locate: Callable[[Node], str | None] = field(repr=False, compare=False)
    control_hidden: int = 0  # bundled control-dependency edges left out
    # Folds of repeated blocks drawn: {"key", "label", "count", "index", "shown", "open",
    # "labels"} each (see views/_repeats.py); the widget's stepper is made of them.
    folds: tuple[Mapping[str, Any], ...] = ()

    def locate(self, node: Node) -> str | None:
        """The id of the drawn item that shows ``node`` (its box, its scope, its consumer)."""
        return self._locate(node)


def build_dot(
    graph: Graph,
    model: Model | None = None,
    *,
    expanded: Iterable[str] | str | None = None,
    focus: str | None = None,
    hops: int = DEFAULT_HOPS,
    max_nodes: int = DEFAULT_MAX_NODES,
    edge_labels: EdgeLabels = "both",
    first_view_nodes: int = DEFAULT_FIRST_VIEW,
    infer_shapes: bool | None = None,
    control_edges: ControlEdges = "auto",
    overlay: Overlay | None = None,
    fold_steps: Mapping[str, int] | None = None,
) -> DotResult:
    """Describe ``graph`` in DOT.

    ``expanded``: scope paths to expand (``"encoder/layer.3"``; ancestors open with
    them, the latest requests win when they do not all fit), ``"all"``, or None for
    the automatic first view. ``focus``: draw only the nodes within ``hops`` edges of
    this node. ``max_nodes``: most nodes in one layout (at most MAX_NODES_LIMIT).
    ``edge_labels``: ``none``, ``dtype``, ``shape`` or ``both``. ``model`` lets calls of
    model-local functions be opened and enables ONNX shape inference (``infer_shapes``:
    True, False, or None for graphs up to 50,000 nodes). ``control_edges``: edges that
    only order execution (GraphDef ``^name``), bundled to one per pair of drawn boxes:
    ``show``, ``hide``, or ``auto`` (shown when there are few, else hidden with a note).
    ``overlay``: fills per node name, ghost boxes and a legend painted over the drawing
    (a model diff's statuses, a numeric scale); collapsed scopes say how many changes
    they hold. ``fold_steps``: fold repeated sibling scopes (``layers.0–31 ×32``,
    :mod:`~onnx_explorer.views._repeats`), each showing the member at its position here
    (fold key → position, 0 when absent) when that member is expanded; None: no folds.
    """
    if edge_labels not in EDGE_LABELS:
        raise ValueError(
            f"edge_labels must be one of {', '.join(EDGE_LABELS)}, not {edge_labels!r}"
        )
    if not 1 <= int(max_nodes) <= MAX_NODES_LIMIT:
        raise ValueError(f"max_nodes must be between 1 and {MAX_NODES_LIMIT}, not {max_nodes}")
    if int(hops) < 0:
        raise ValueError(f"hops must be 0 or more, not {hops}")
    if control_edges not in CONTROL_EDGES:
        raise ValueError(
            f"control_edges must be one of {', '.join(CONTROL_EDGES)}, not {control_edges!r}"
        )
    with paused_gc():  # one pause for all: each collection walks every object of the model
        return _build(
            graph, model, expanded, focus, hops, max_nodes, edge_labels, first_view_nodes,
            infer_shapes, control_edges, overlay, fold_steps,
        )  # fmt: skip


def _build(
    graph: Graph,
    model: Model | None,
    expanded: Iterable[str] | str | None,
    focus: str | None,
    hops: int,
    max_nodes: int,
    edge_labels: EdgeLabels,
    first_view_nodes: int,
    infer_shapes: bool | None,
    control_edges: ControlEdges,
    overlay: Overlay | None,
    fold_steps: Mapping[str, int] | None,
) -> DotResult:
    index = graph_wiring(graph)
    tree = scope_tree(graph)
    types, types_note = (None, None)
    if edge_labels != "none":
        types, types_note = value_types(graph, model, infer_shapes)
    builder = _Builder(graph, model, index, tree, types, edge_labels, int(max_nodes))
    builder.control_edges = control_edges
    if overlay is not None:
        builder.set_overlay(overlay)
    if fold_steps is not None and not (focus is not None and focus != ""):
        builder.set_folds(repeated_blocks(graph), fold_steps)
    if types_note:
        builder.notes.append(types_note)
    if focus is not None and focus != "":
        builder.draw_focus(graph.node(focus), int(hops))
    else:
        builder.draw_scopes(expanded, min(int(first_view_nodes), int(max_nodes)))
    builder.draw_overlay_extras(focus is not None and focus != "")
    return builder.result()


class _Builder:
    def __init__(
        self,
        graph: Graph,
        model: Model | None,
        index: GraphWiring,
        tree: ScopeTree,
        types: ValueTypes | None,
        edge_labels: EdgeLabels,
        max_nodes: int,
    ) -> None:
        self.graph, self.model, self.index, self.tree = graph, model, index, tree
        self.types, self.edge_labels, self.max_nodes = types, edge_labels, max_nodes
        # Slot names the format gives its operators' inputs (ONNX: the schemas').
        owner = model if model is not None else graph.model
        self.slot_names = owner.support.input_slot_names if owner is not None else None
        self.lines: list[str] = [dot.HEADER]
        self.ids: dict[str, dict[str, Any]] = {}
        self.titles: dict[str, str] = {}
        self.notes: list[str] = []
        self.node_ids: dict[int, str] = {}
        self.input_ids: dict[int, str] = {}
        self.output_ids: dict[int, str] = {}
        self.outer_ids: dict[str, str] = {}
        self.boxes: list[Scope] = []  # collapsed scopes drawn as boxes
        self.counters: dict[str, int] = {}
        self.drawn = 0
        self.in_order: list[str] = []  # ids of drawn nodes and scope boxes, file order
        self.expanded: tuple[str, ...] = ()
        self.focus: str | None = None
        self.rep: Callable[[int], str | None] = self.node_ids.get
        self.reps: list[str | None] | None = None  # rep() by node index (scope views)
        self.control_edges: ControlEdges = "auto"
        self.control_hidden = 0  # bundled control edges left out
        self.overlay: Overlay | None = None
        self.changes: dict[int, int] = {}  # id(scope) → overlay changes inside it
        self.box_of: dict[int, str | None] = {}  # id(scope) → collapsed box showing it
        self.ghost_scope: dict[int, Scope] = {}  # ghost position → scope holding its wires
        self.cluster_of: dict[int, str] = {}  # id(opened scope) → its frame's cluster id
        self.repeats: RepeatedBlocks | None = None  # folds of repeated blocks, if drawn
        self.fold_steps: Mapping[str, int] = {}
        self.fold_info: list[dict[str, Any]] = []
        self._ends: tuple[dict[str, Edge], dict[str, list[int]]] | None = None

    # -- ids ---------------------------------------------------------------------
    def new_id(self, prefix: str) -> str:
        k = self.counters.get(prefix, 0)
        self.counters[prefix] = k + 1
        return f"{prefix}{k}"

    # -- drawing modes --------------------------------------------------------------
    def draw_scopes(self, expanded: Iterable[str] | str | None, first_budget: int) -> None:
        graph, tree = self.graph, self.tree
        n_io = self._io_budget()
        reserved = n_io + self._outer_count()
        drawable = self.index.drawable_count
        if expanded is None or expanded == "all":
            budget = first_budget if expanded is None else self.max_nodes
            requested = first_view(tree, budget, reserved)
            if expanded == "all" and drawable + reserved > self.max_nodes:
                self.notes.append(
                    f"expanding everything would draw {drawable + reserved:,} nodes "
                    f"(max_nodes={self.max_nodes}); showing an overview instead"
                )
        elif isinstance(expanded, str):
            requested = [expanded]
        else:
            requested = list(expanded)
        opened, accepted, plan_notes = open_scopes(tree, requested, self.max_nodes, reserved)
        self.notes.extend(plan_notes)
        self.expanded = tuple(accepted)

        memo: dict[int, str | None] = {}  # id(scope) → collapsed box id, None when open
        self._emit_scopes(tree.root, opened, memo)
        # Every scope shows as its own box, as the box of a collapsed ancestor, or (open) as
        # its nodes: one pass, parents before children, so rep() is two lookups per edge.
        box_of: dict[int, str | None] = {}
        for scope in tree.preorder:
            key = id(scope)
            if key in memo:
                box_of[key] = memo[key]
            else:
                assert scope.parent is not None
                box_of[key] = box_of[id(scope.parent)]
        self.box_of = box_of
        node_scope, node_ids = tree.node_scope, self.node_ids

        def rep(i: int) -> str | None:
            return node_ids.get(i) or box_of[id(node_scope[i])]

        self.rep = rep
        # The same, as a list by node index for _emit_edges: two list reads per edge.
        boxes_by_scope = [box_of[id(scope)] for scope in node_scope]
        for i, nid in node_ids.items():
            boxes_by_scope[i] = nid
        self.reps = boxes_by_scope
        boxes = self.boxes
        if boxes:
            inside = sum(scope.node_count for scope in boxes)
            self.notes.insert(
                0,
                f"{inside:,} of {len(graph.nodes):,} nodes collapsed into "
                f"{len(boxes):,} scope box{'es' if len(boxes) != 1 else ''} "
                "(expand one to see inside)",
            )
        self._emit_io(n_io)
        self._emit_edges()
        if not self.index.edges and not self.index.output_edges:
            self._emit_file_order()
        if self.drawn == 0 and not graph.inputs and not graph.outputs:
            self._emit_empty_note()
        folded = len(self.index.folded_nodes)
        if folded:
            self.notes.append(f"{folded:,} constant nodes drawn inside the nodes that use them")

    def draw_focus(self, node: Node, hops: int) -> None:
        index = self.index
        name = as_text(node.name)
        start = node.index
        if start in index.folded_nodes:  # a folded constant: centre on its first reader
            consumers = self.graph.consumers(node.outputs[0])
            start = consumers[0].index
            self.notes.append(
                f"{shorten(name, 200)!r} is a constant drawn inside "
                f"{shorten(as_text(consumers[0].name), 200)!r}"
            )
        self.focus = as_text(self.graph.nodes[start].name)
        preds, succs = index.adjacency()
        budget = max(1, self.max_nodes - min(self._io_budget(), self.max_nodes // 4))
        dist = {start: 0}
        frontier = [start]
        cut = False
        for level in range(1, hops + 1):
            nxt: list[int] = []
            for i in frontier:
                for j in (*preds[i], *succs[i]):
                    if j not in dist:
                        if len(dist) >= budget:
                            cut = True
                            break
                        dist[j] = level
                        nxt.append(j)
            frontier = nxt
            if cut or not frontier:
                break
        for i in sorted(dist):
            self._emit_node(i, highlight=(i == start))
        total = index.drawable_count
        self.notes.insert(
            0,
            f"{len(dist):,} of {total:,} nodes within {hops} hop{'s' if hops != 1 else ''} "
            f"of {shorten(self.focus, 80)!r}"
            + (f" (cut at max_nodes={self.max_nodes})" if cut else ""),
        )
        self._emit_edges(focus=True)

    # -- pieces -------------------------------------------------------------------------
    def _io_budget(self) -> int:
        n = len(self.graph.inputs) + len(self.graph.outputs)
        return min(n, self.max_nodes // 2)

    def _outer_count(self) -> int:
        return len({e.key for e in self.index.edges if e.kind == FROM_OUTER})

    def _emit_scopes(self, root: Scope, opened: set[Scope], memo: dict[int, str | None]) -> None:
        """Nodes, clusters (open scopes) and boxes (collapsed ones) below ``root``.

        A loop over a stack of scopes being emitted, not recursion: a name's depth is the
        file's to choose (scopes are capped at SCOPE_DEPTH_MAX, synthetic groups add more).
        """
        frames = [(self._members(root, memo), False)]  # (items left, closes a cluster?)
        while frames:
            members, in_cluster = frames[-1]
            member = next(members, None)
            if member is None:
                frames.pop()
                if in_cluster:
                    self.lines.append(dot.FOOTER)
            elif isinstance(member, int):
                self._emit_node(member)
            elif isinstance(member, _FoldPart):
                self._emit_fold(member, opened, memo, frames)
            elif member.trivial:  # drawn as what it holds, in the enclosing frame
                frames.append((self._members(member, memo), False))
            elif member in opened:
                cluster = self.new_id("c")
                self.cluster_of[id(member)] = cluster
                self.lines.append(dot.cluster_open(cluster, self._scope_heading(member)))
                self._register_scope(cluster, member, opened=True)
                frames.append((self._members(member, memo), True))
            else:
                box = self.new_id("s")
                memo[id(member)] = box
                self.boxes.append(member)
                self._register_scope(box, member, opened=False)
                changes = self.changes.get(id(member), 0)
                lines = self._scope_lines(member)
                fill = self._scope_fill(member)
                self.lines.append(dot.scope_box(box, lines, member.synthetic, changes, fill))
                self.in_order.append(box)
                self.drawn += 1

    def _members(
        self, scope: Scope, memo: dict[int, str | None]
    ) -> Iterator[Scope | int | _FoldPart]:
        """A scope's drawn items in file order: nodes and child scopes interleaved."""
        memo[id(scope)] = None  # drawn as its contents (open, trivial, or the root)
        folded = self.index.folded_nodes
        members: list[tuple[int, Scope | int | _FoldPart]] = [
            (i, i) for i in scope.nodes if i not in folded
        ]
        repeats = self.repeats
        for child in scope.children:
            found = repeats.member(child) if repeats is not None else None
            if found is None:
                members.append((child.first, child))
            elif found[1] == 0:  # a fold stands where its first member would
                members.append((child.first, _FoldPart(found[0], "fold")))
        members.sort(key=lambda m: m[0])
        return (member for _, member in members)

    # -- folds of repeated blocks ------------------------------------------------------
    def set_folds(self, repeats: RepeatedBlocks, steps: Mapping[str, int]) -> None:
        self.repeats = repeats if repeats.folds else None
        self.fold_steps = steps

    def _shown(self, fold: Fold) -> int:
        step = self.fold_steps.get(fold.key, 0)
        return min(max(int(step), 0), fold.count - 1)

    def _emit_fold(
        self,
        part: _FoldPart,
        opened: set[Scope],
        memo: dict[int, str | None],
        frames: list[tuple[Iterator[Any], bool]],
    ) -> None:
        """A fold: one box while its shown member is shut; open, a frame holding the
        members before it as one box, the shown member's contents, the members after it
        as one box (the data still flows through the frame from top to bottom)."""
        fold, k = part.fold, self._shown(part.fold)
        shown = fold.members[k]
        if part.kind in ("before", "after"):
            chosen = fold.members[:k] if part.kind == "before" else fold.members[k + 1 :]
            box = self.new_id("f")
            for member in chosen:
                memo[id(member)] = box
            target = k - 1 if part.kind == "before" else k + 1
            self.ids[box] = {
                "kind": "fold", "fold": fold.key, "part": part.kind, "open": False,
                "index": target, "path": fold.members[target].path,
                "label": _titled(_members_label(fold, chosen)), "nodes": _nodes_in(chosen),
            }  # fmt: skip
            self.titles[box] = (
                f"{len(chosen)} of the {fold.count} identical blocks {_titled(fold.label)}\n"
                f"double-click to show {_titled(fold.members[target].label)}"
            )
            self.lines.append(
                dot.fold_box(box, [one_line(_members_label(fold, chosen), LABEL_CHARS),
                                   f"×{len(chosen)} identical"], small=True)
            )  # fmt: skip
            self.in_order.append(box)
            self.drawn += 1
            return
        info = {
            "key": fold.key, "label": fold.label, "count": fold.count, "index": k,
            "shown": as_text(shown.label), "open": shown in opened,
            "labels": [as_text(m.label) for m in fold.members],
        }  # fmt: skip
        self.fold_info.append(info)
        entry = {
            "kind": "fold", "fold": fold.key, "part": "fold", "open": shown in opened,
            "index": k, "path": shown.path, "label": _titled(fold.label),
            "count": fold.count, "nodes": shown.node_count * fold.count,
        }  # fmt: skip
        if shown not in opened:
            box = self.new_id("f")
            for member in fold.members:
                memo[id(member)] = box
            self.boxes.extend(fold.members)
            self.ids[box] = entry
            self.titles[box] = self._fold_title(fold, k, opened=False)
            self.lines.append(dot.fold_box(box, self._fold_lines(fold, k)))
            self.in_order.append(box)
            self.drawn += 1
            return
        cluster = self.new_id("c")
        self.cluster_of[id(shown)] = cluster
        self.ids[cluster] = entry
        self.titles[cluster] = self._fold_title(fold, k, opened=True)
        heading = f"{fold.label} ×{fold.count} · showing {as_text(shown.label)}"
        self.lines.append(dot.cluster_open(cluster, one_line(heading, LABEL_CHARS), fold=True))
        parts: list[Any] = []
        if k > 0:
            parts.append(_FoldPart(fold, "before"))
        parts.append(self._members(shown, memo))
        if k < fold.count - 1:
            parts.append(_FoldPart(fold, "after"))
        frames.append((_chain_parts(parts), True))

    def _fold_lines(self, fold: Fold, k: int) -> list[str]:
        shown = fold.members[k]
        counts = f"{shown.node_count:,} nodes"
        if shown.param_count:
            counts += f" · {human_count(shown.param_count)} params"
        lines = [one_line(f"{fold.label} ×{fold.count}", LABEL_CHARS), counts + " each"]
        ops = self.tree.ops(self.graph, shown).most_common(3)
        if ops:
            lines.append(one_line(" ".join(f"{op}×{n}" for op, n in ops), LABEL_CHARS))
        return lines

    def _fold_title(self, fold: Fold, k: int, opened: bool) -> str:
        shown = fold.members[k]
        return "\n".join([
            f"{fold.count} identical blocks {_titled(fold.label)} (same operators, attributes, "
            "wiring and weight sizes)",
            f"{shown.node_count:,} nodes and {shown.param_count:,} parameters each",
            f"showing {_titled(shown.label)}; the stepper shows another",
            "double-click to close" if opened else f"double-click to open {_titled(shown.label)}",
        ])  # fmt: skip

    def _scope_heading(self, scope: Scope) -> str:
        changes = self.changes.get(id(scope), 0)
        extra = f" · {plural(changes, 'change')}" if changes else ""
        return one_line(f"{scope.label} · {scope.node_count:,} nodes{extra}", LABEL_CHARS)

    def _scope_lines(self, scope: Scope) -> list[str]:
        counts = f"{scope.node_count:,} nodes"
        if scope.param_count:
            counts += f" · {human_count(scope.param_count)} params"
        lines = [one_line(scope.label, LABEL_CHARS), counts]
        ops = self.tree.ops(self.graph, scope).most_common(3)
        if ops:
            lines.append(one_line(" ".join(f"{op}×{n}" for op, n in ops), LABEL_CHARS))
        changes = self.changes.get(id(scope), 0)
        if changes:
            lines.append(plural(changes, "change"))
        extra = self.overlay.scope_titles.get(scope.path) if self.overlay is not None else None
        if extra:
            lines.append(one_line(extra, LABEL_CHARS))
        return lines

    def _scope_fill(self, scope: Scope) -> str | None:
        """A collapsed scope's fill from the overlay (a numeric scale's sum), if any."""
        style = self.overlay.scope_styles.get(scope.path) if self.overlay is not None else None
        paint = paint_for(style) if style is not None else None
        return paint.fill if paint is not None else None

    def _register_scope(self, sid: str, scope: Scope, opened: bool) -> None:
        self.ids[sid] = {
            "kind": "scope",
            "path": scope.path,
            "label": _titled(scope.label),
            "open": opened,
            "synthetic": scope.synthetic,
            "nodes": scope.node_count,
        }
        changes = self.changes.get(id(scope), 0)
        if changes:
            self.ids[sid]["changes"] = changes
        ops = self.tree.ops(self.graph, scope).most_common(8)
        title = [
            ("group " if scope.synthetic else "scope ") + _titled(scope.path),
            f"{scope.node_count:,} nodes, {scope.param_count:,} parameters",
            ", ".join(f"{op} {n:,}" for op, n in ops),
            "double-click to close" if opened else "double-click to open",
        ]
        changes = self.changes.get(id(scope), 0)
        if changes:
            title.insert(2, plural(changes, "change"))
        extra = self.overlay.scope_titles.get(scope.path) if self.overlay is not None else None
        if extra:
            title.append(_titled(extra))
        self.titles[sid] = "\n".join(title)

    def _emit_node(self, i: int, highlight: bool = False) -> None:
        node = self.graph.nodes[i]
        nid = self.new_id("n")
        self.node_ids[i] = nid
        self.in_order.append(nid)
        self.drawn += 1
        op = as_text(node.qualified_op)
        lines = [one_line(op, LABEL_CHARS)]
        title = [_titled(node.name), f"{op} node"]
        entry: dict[str, Any] = {"kind": "node", "name": as_text(node.name), "index": i, "op": op}
        openable = self._openable(node)
        if openable:
            entry["graphs"] = openable
            lines.append(one_line("▸ " + " · ".join(g["label"] for g in openable), LABEL_CHARS))
            title.append("double-click to open: " + ", ".join(g["label"] for g in openable))
        folded = self.index.folded_inputs.get(i, ())
        for k, (slot, value) in enumerate(folded):
            line, full = self._folded_line(node, slot, value)
            if k < FOLDED_LINES_MAX:
                lines.append(line)
            title.append(full)
        if len(folded) > FOLDED_LINES_MAX:
            lines.append(f"+{len(folded) - FOLDED_LINES_MAX} more")
        paint = None
        if self.overlay is not None:
            style = self.overlay.styles.get(entry["name"])
            paint = paint_for(style) if style is not None else None
            if paint is not None:
                assert style is not None
                entry["status"] = style
                if paint.legend:  # a status word; a scale's value comes as a title line
                    title.insert(1, paint.legend)
            extra = self.overlay.titles.get(entry["name"])
            if extra:
                title.append(_titled(extra))
        self.ids[nid] = entry
        self.titles[nid] = "\n".join(title)
        bodies = []
        for k, body in enumerate(openable):
            cid = f"{nid}_b{k}"
            self.ids[cid] = {"kind": "body", "node": nid, "path": body["path"],
                             "label": body["label"]}  # fmt: skip
            bodies.append((cid, body["label"]))
        self.lines.append(
            dot.node(
                nid,
                lines[:1] + lines[2:] if bodies else lines,  # the cells replace the ▸ line
                node.op_type if isinstance(node.op_type, str) else "",
                bodies=bodies,
                calls_function=any(g["kind"] == "function" for g in openable),
                highlight=highlight,
                paint=paint,
            )
        )

    def _openable(self, node: Node) -> list[dict[str, str]]:
        # Files list attributes in any order (onnx.helper sorts them): put "then" first.
        subgraphs = sorted(node.subgraphs(), key=lambda item: _BODY_ORDER.get(item[0], 9))
        found = [
            {"kind": "subgraph", "label": as_text(attr), "path": g.path} for attr, g in subgraphs
        ]
        if self.model is not None:
            function = self.model.function_for(node)
            if function is not None:
                label = "function " + as_text(function.name)
                found.append({"kind": "function", "label": label, "path": function.graph.path})
        return found

    def _folded_line(self, node: Node, slot: int, value: str) -> tuple[str, str]:
        stored = self.index.stored_value(self.graph, value)
        name = self._slot_name(node, slot, value)
        if isinstance(stored, Tensor):
            desc = tensor_label(stored)
        elif isinstance(stored, Node):
            tensor = constant_tensor(stored)
            desc = tensor_label(tensor) if tensor is not None else constant_attribute_label(stored)
        else:
            desc = "?"
        return one_line(f"{name} {desc}", LABEL_CHARS), f"{name}: {_titled(value)} {desc}"

    def _slot_name(self, node: Node, slot: int, value: str) -> str:
        if self.slot_names and isinstance(node.op_type, str) and isinstance(node.domain, str):
            names = self.slot_names(node.domain, node.op_type)
            if names:
                return shorten(names[min(slot, len(names) - 1)], 20)
        text = as_text(value)
        own = as_text(node.name).replace("/", ".") + "."
        if text.startswith(own) and len(text) > len(own):  # named after its node: a.b.weight
            return shorten(text[len(own) :], 20)
        base = text.rstrip("/").rpartition("/")[2]
        return shorten(base.rpartition(":")[0] if base.endswith(":0") else base, 20) or "?"

    def _emit_io(self, limit: int) -> None:
        graph = self.graph
        n_in = min(len(graph.inputs), max(limit - min(len(graph.outputs), limit // 2), 0))
        n_out = min(len(graph.outputs), limit - n_in)
        for k, info in enumerate(graph.inputs[:n_in]):
            self._emit_value_box(info, k, "input")
        for k, info in enumerate(graph.outputs[:n_out]):
            self._emit_value_box(info, k, "output")
        left = len(graph.inputs) - n_in + len(graph.outputs) - n_out
        if left:
            self.notes.append(
                f"{left:,} graph inputs/outputs not drawn (max_nodes={self.max_nodes})"
            )

    def _emit_value_box(self, info: ValueInfo, k: int, kind: str) -> str:
        prefix = "i" if kind == "input" else "o"
        vid = self.new_id(prefix)
        (self.input_ids if kind == "input" else self.output_ids)[k] = vid
        name = as_text(info.name)
        self.ids[vid] = {"kind": kind, "name": name}
        type_line = type_text(info)
        # type_text holds the whole type (dtype and shape), so it is not repeated
        self.titles[vid] = f"graph {kind} {_titled(name)}\n{type_line}".rstrip()
        bound = self.types.get(info.name) if self.types is not None else None
        if bound is not None and bound.shape is not None and bound.shape != info.shape:
            # the sizes every edge shows (symbols bound), the declared ones on hover
            declared = type_line
            type_line = type_text(bound)
            self.titles[vid] = f"graph {kind} {_titled(name)}\n{type_line}\ndeclared {declared}"
        lines = [one_line(name, LABEL_CHARS)]
        if type_line:
            lines.append(one_line(type_line, LABEL_CHARS))
        # Under an overlay a green input would read as "added" or as a colour-scale value.
        self.lines.append(dot.value_box(vid, lines, kind, plain=self.overlay is not None))
        self.drawn += 1
        return vid

    def _outer_box(self, name: str) -> str | None:
        vid = self.outer_ids.get(name)
        if vid is None:
            if self.drawn >= self.max_nodes:
                return None
            vid = self.outer_ids[name] = self.new_id("x")
            text = as_text(name)
            self.ids[vid] = {"kind": "outer", "name": text}
            self.titles[vid] = f"{_titled(text)}\nvalue from outside this graph"
            self.lines.append(dot.outer_box(vid, one_line(text, LABEL_CHARS)))
            self.drawn += 1
        return vid

    def _source_id(self, edge: Edge, focus: bool) -> str | None:
        if edge.kind == FROM_NODE:
            assert isinstance(edge.key, int)
            return self.rep(edge.key)
        if edge.kind == FROM_INPUT:
            assert isinstance(edge.key, int)
            vid = self.input_ids.get(edge.key)
            if vid is None and focus and self.drawn < self.max_nodes:
                vid = self._emit_value_box(self.graph.inputs[edge.key], edge.key, "input")
            return vid
        if edge.kind == FROM_OUTER:
            return self._outer_box(str(edge.key))  # None once max_nodes are drawn
        return None

    def _emit_edges(self, focus: bool = False) -> None:
        merged: dict[tuple[str, str], list[Any]] = {}  # (src, dst) → [values, all control?]
        rep = self.rep
        reps = self.reps
        hidden = 0
        for edge in self.index.edges:
            if reps is not None and edge[0] == FROM_NODE:
                # The common case, inlined: most edges of a large graph run inside one
                # collapsed box (src == dst) and are dropped after two list reads.
                dst, src = reps[edge[2]], reps[edge[1]]  # type: ignore[index]
                if dst is None or src == dst:
                    continue
                if src is None:
                    hidden += 1
                    continue
                self._merge(merged, src, dst, edge)
                continue
            dst = rep(edge.dst)
            if dst is None:
                continue
            src = self._source_id(edge, focus)
            if src is None:
                hidden += 1
                continue
            if src == dst:
                continue
            self._merge(merged, src, dst, edge)
        for edge in self.index.output_edges:
            if edge.kind == FROM_NODE:
                assert isinstance(edge.key, int)
                src = rep(edge.key)
                if src is None:
                    continue
            elif edge.kind == FROM_INPUT:
                assert isinstance(edge.key, int)
                src = self.input_ids.get(edge.key)
            elif edge.kind in (FROM_OUTER, FROM_STORED):
                src = self._outer_box(str(edge.key)) if edge.kind == FROM_OUTER else None
            if src is None:
                continue
            dst = self.output_ids.get(edge.dst)
            if dst is None and focus and self.drawn < self.max_nodes:
                dst = self._emit_value_box(self.graph.outputs[edge.dst], edge.dst, "output")
            if dst is not None:
                self._merge(merged, src, dst, edge)
        if focus and hidden:
            self.notes.append(f"{hidden:,} edges lead to nodes not drawn")
        controls = [key for key, slot in merged.items() if slot[1]]
        mode = self.control_edges
        if mode == "hide" or (mode == "auto" and len(controls) > CONTROL_EDGES_AUTO_MAX):
            for key in controls:
                del merged[key]
            self.control_hidden = len(controls)
            if controls:
                self.notes.append(
                    f"{len(controls):,} control-dependency edges hidden (ordering only)"
                )
        many_edges = len(merged) > FLOATING_EDGES_FROM
        floating = self.drawn > FLOATING_LABELS_FROM or many_edges
        if many_edges:
            self.lines.append(dot.QUICK_LAYOUT)
        for (src, dst), (values, control, implicit, count) in merged.items():
            eid = self.new_id("e")
            if control:
                self.titles[eid] = f"{count:,} control dependenc{'ies' if count > 1 else 'y'}"
                self.lines.append(dot.control_edge(eid, src, dst, count))
                continue
            label, title = self._edge_text(values)
            self.titles[eid] = ("read inside the body: " + title) if implicit else title
            self.lines.append(dot.edge(eid, src, dst, label, implicit=implicit, floating=floating))

    def _emit_empty_note(self) -> None:
        owner = self.model if self.model is not None else self.graph.model
        lines = ["this graph has no nodes"]
        if self.graph.initializers:
            lines.append(f"{plural(len(self.graph.initializers), 'tensor')} without a node")
        if owner is not None and owner.metadata_props:
            lines.append(f"the file holds {plural(len(owner.metadata_props), 'metadata key')}")
        self.lines.append(dot.empty_note(self.new_id("empty"), lines))

    def _emit_file_order(self) -> None:
        """A graph without data edges (a checkpoint's modules) stacks its boxes in file
        order with invisible edges; without them ``dot`` puts every box in one row."""
        for src, dst in itertools.pairwise(self.in_order):
            self.lines.append(dot.order_edge(src, dst))

    @staticmethod
    def _merge(merged: dict[tuple[str, str], list[Any]], src: str, dst: str, edge: Edge) -> None:
        # slot: [values, all control?, all implicit?, edges merged]
        slot = merged.get((src, dst))
        if slot is None:
            merged[(src, dst)] = [
                [edge.value] if edge.value else [],
                edge.control,
                edge.implicit,
                1,
            ]
        else:
            if edge.value and edge.value not in slot[0] and len(slot[0]) < 1000:
                slot[0].append(edge.value)
            slot[1] = slot[1] and edge.control
            slot[2] = slot[2] and edge.implicit
            slot[3] += 1

    def _edge_text(self, values: list[str]) -> tuple[str, str]:
        if not values:
            return "", "control dependency"
        if len(values) > 1:
            shown = "\n".join(_titled(v) for v in values[:12])
            more = f"\n… {len(values) - 12:,} more" if len(values) > 12 else ""
            label = f"{len(values):,} values" if self.edge_labels != "none" else ""
            return label, shown + more
        (value,) = values
        info = self.types.get(value) if self.types is not None else None
        text = type_text(info) if info is not None else ""
        label = type_text(info, self.edge_labels) if info is not None else ""
        # The file's note on the value (TFLite: its scale and zero point) in the tooltip.
        note = f"\n{_titled(info.doc_string)}" if info is not None and info.doc_string else ""
        return one_line(label, LABEL_CHARS), f"{_titled(value)}\n{text}".rstrip() + note

    # -- the overlay: counts, ghosts, legend ------------------------------------------
    def set_overlay(self, overlay: Overlay) -> None:
        """Count the overlay's changes per scope (before any box is labelled)."""
        self.overlay = overlay
        graph, node_scope = self.graph, self.tree.node_scope
        by_name = {as_text(node.name): node.index for node in graph.nodes}
        for name, style in overlay.styles.items():
            i = by_name.get(name)
            if i is not None and overlay.counts(style):
                self._count_change(node_scope[i])
        producers, consumers = self._value_ends()
        for k, ghost in enumerate(overlay.ghosts[:MAX_GHOSTS]):
            ends = [
                int(producers[v].key)
                for v in ghost.inputs
                if v in producers and producers[v].kind == FROM_NODE
            ]
            ends += [i for v in ghost.outputs for i in consumers.get(v, ())]
            scopes = [node_scope[i] for i in ends]
            scope = _common_scope(scopes) if scopes else self.tree.root
            self.ghost_scope[k] = scope
            if overlay.counts("removed"):
                self._count_change(scope)

    def _count_change(self, scope: Scope | None) -> None:
        while scope is not None:
            self.changes[id(scope)] = self.changes.get(id(scope), 0) + 1
            scope = scope.parent

    def _value_ends(self) -> tuple[dict[str, Edge], dict[str, list[int]]]:
        """Value name → the edge that brings it, and → the nodes that read it (made once)."""
        if self._ends is None:
            self._ends = self._find_value_ends()
        return self._ends

    def _find_value_ends(self) -> tuple[dict[str, Edge], dict[str, list[int]]]:
        producers: dict[str, Edge] = {}
        consumers: dict[str, list[int]] = {}
        for edge in self.index.edges:
            if edge.control or not edge.value:
                continue
            producers.setdefault(edge.value, edge)
            consumers.setdefault(edge.value, []).append(edge.dst)
        for edge in self.index.output_edges:
            if edge.value:
                producers.setdefault(edge.value, edge)
        return producers, consumers

    def draw_overlay_extras(self, focus: bool) -> None:
        overlay = self.overlay
        if overlay is None:
            return
        if overlay.ghosts:
            self._emit_ghosts(overlay.ghosts, focus)
        rows = overlay.legend_rows()
        if rows:
            lid = "legend"
            self.ids[lid] = {"kind": "legend"}
            self.titles[lid] = "legend"
            self.lines.append(dot.legend(lid, overlay.legend_title, rows))

    def _emit_ghosts(self, ghosts: tuple[Ghost, ...], focus: bool) -> None:
        producers, consumers = self._value_ends()
        output_of = {e.value: e.dst for e in self.index.output_edges if e.value}
        paint = PALETTE["removed"]
        hidden = 0
        for k, ghost in enumerate(ghosts[:MAX_GHOSTS]):
            scope = self.ghost_scope.get(k)
            if not focus and scope is not None and self.box_of.get(id(scope)):
                continue  # inside a collapsed scope: counted on its box
            wires: dict[tuple[str, str], None] = {}
            gid = f"g{k}"
            for value in ghost.inputs:
                edge = producers.get(value)
                src = self._source_id(edge, False) if edge is not None else None
                if src is not None:
                    wires[(src, gid)] = None
            for value in ghost.outputs:
                for i in consumers.get(value, ()):
                    dst = self.rep(i)
                    if dst is not None:
                        wires[(gid, dst)] = None
                out = self.output_ids.get(output_of[value]) if value in output_of else None
                if out is not None:
                    wires[(gid, out)] = None
            if focus and not wires:
                continue  # nowhere near the drawn neighbourhood
            if self.drawn >= self.max_nodes:
                hidden += 1
                continue
            name, op = as_text(ghost.name), as_text(ghost.op_type)
            self.ids[gid] = {"kind": "ghost", "key": ghost.key, "name": name, "op": op}
            title = [_titled(name) or "(unnamed node)", f"{op} node", paint.legend]
            if ghost.title:
                title.append(_titled(ghost.title))
            self.titles[gid] = "\n".join(title)
            lines = [one_line(op, LABEL_CHARS)]
            if name:
                lines.append(one_line(name, LABEL_CHARS))
            statement = dot.ghost(gid, lines, paint)
            own = self.tree.find(ghost.name.rpartition("/")[0]) if "/" in ghost.name else None
            frames = self._open_frames(own) or self._open_frames(scope)
            # In the frame of its own scope (else its neighbours'): drawn outside every
            # frame, a removed Conv landed far from the ConvInteger that replaced it.
            for frame in reversed(frames):
                statement = dot.in_cluster(frame, statement)
            self.lines.append(statement)
            self.drawn += 1
            for src, dst in wires:
                eid = self.new_id("e")
                self.titles[eid] = "wire of a removed node"
                self.lines.append(dot.ghost_edge(eid, src, dst))
        hidden += max(0, len(ghosts) - MAX_GHOSTS)
        if hidden:
            self.notes.append(f"{hidden:,} removed nodes not drawn (max_nodes={self.max_nodes})")

    def _open_frames(self, scope: Scope | None) -> list[str]:
        """The cluster ids of the frames drawn around ``scope``, outermost first (a frame
        is reopened through the ones around it, or Graphviz draws a new one)."""
        found: list[str] = []
        while scope is not None:
            cluster = self.cluster_of.get(id(scope))
            if cluster is not None:
                found.append(cluster)
            scope = scope.parent
        return found[::-1]

    def result(self) -> DotResult:
        self.lines.append(dot.FOOTER)
        rep, graph, index = self.rep, self.graph, self.index

        def locate(node: Node) -> str | None:
            i = node.index
            if node.graph is not graph:
                return None
            if i in index.folded_nodes:
                consumers = graph.consumers(node.outputs[0]) if node.outputs else ()
                return rep(consumers[0].index) if consumers else None
            return rep(i)

        return DotResult(
            source="\n".join(self.lines) + "\n",
            ids=self.ids,
            titles=self.titles,
            drawn=self.drawn,
            notes=tuple(self.notes),
            expanded=self.expanded,
            focus=self.focus,
            graph_path=as_text(graph.path),
            _locate=locate,
            control_hidden=self.control_hidden,
            folds=tuple(self.fold_info),
        )


@dataclass(frozen=True)
class _FoldPart:
    """An item of a scope's members: a fold, or the box of its members before (after)
    the one shown."""

    fold: Fold
    kind: Literal["fold", "before", "after"]


def _chain_parts(parts: list[Any]) -> Iterator[Any]:
    for part in parts:
        if isinstance(part, _FoldPart):
            yield part
        else:
            yield from part


def _members_label(fold: Fold, members: tuple[Scope, ...]) -> str:
    """``layers.18–31`` for some members of the fold ``layers.0–31``."""
    first, last = as_text(members[0].label), as_text(members[-1].label)
    if len(members) == 1:
        return first
    digits = len(last) - len(last.rstrip("0123456789"))
    return f"{first}–{last[len(last) - digits :]}" if digits else f"{first}–{last}"


def _nodes_in(members: tuple[Scope, ...]) -> int:
    return sum(member.node_count for member in members)


def _common_scope(scopes: list[Scope]) -> Scope:
    """The innermost scope holding all of ``scopes`` (the root at worst)."""

    def chain(scope: Scope) -> list[Scope]:
        path = [scope]
        while path[-1].parent is not None:
            path.append(path[-1].parent)
        return path[::-1]

    common = chain(scopes[0])
    for scope in scopes[1:]:
        other = chain(scope)
        k = 0
        while k < min(len(common), len(other)) and common[k] is other[k]:
            k += 1
        common = common[:k]
    return common[-1]


def _titled(value: Any) -> str:
    """Model text for a hover title or a note: printable, at most TITLE_NAME_CHARS long."""
    return shorten(as_text(value), TITLE_NAME_CHARS)


__all__ = [
    "DEFAULT_MAX_NODES",
    "EDGE_LABELS",
    "MAX_NODES_LIMIT",
    "DotResult",
    "build_dot",
]
