"""Name scopes: the tree that lets a 100,000-node graph be drawn a few hundred boxes at a time.

Exporters name nodes by module path (``/encoder/layer.3/attn/MatMul``; GraphDef
``encoder/layer_3/attn/MatMul``), so the parts before the last ``/`` are the node's
scope: ``encoder`` ▸ ``layer.3`` ▸ ``attn``. Each scope counts the nodes and the
parameters (elements of the initializers and constants folded into its nodes,
from shapes alone, no IO) beneath it.

A scope that would draw more than :data:`SCOPE_ITEMS_MAX` boxes when expanded (a
model whose nodes are numbered ``node_123`` with no scopes at all, or 2,500 layers
side by side) has its items split into synthetic groups of consecutive items in
file order, named after their first and last item (``layers.0 … layers.199``).
File order is topological in any valid ONNX model and nearly so in GraphDef, so a
group is a stretch of the computation with few edges leaving it: expanding one
group after another walks the graph from inputs to outputs, and every part of the
graph stays reachable, which cutting the view to the first N nodes would not give.

PyTorch's dynamo exporter names nodes ``node_MatMul_12`` and writes the module path
into node metadata instead (``pkg.torch.onnx.name_scopes``, see :func:`metadata_scope`).
A graph where fewer than half the nodes have a ``/`` in their names and some node has
that metadata is grouped by it, so ``model.layers.3.self_attn`` becomes the scope
``model/layers.3/self_attn``, the path a TorchScript export writes into node names.
"""

from __future__ import annotations

import ast
import math
import re
import weakref
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from .._gc_pause import paused_gc
from ..model import SCOPE_DEPTH_MAX, Graph, scope_parts
from ..tensors import Tensor
from ._text import as_text, shorten
from ._wiring import GraphWiring, graph_wiring

#: Most items (drawn nodes + child scopes) a scope shows when expanded.
SCOPE_ITEMS_MAX = 200

#: Longest item name a synthetic group's label is made of (``first … last``).
GROUP_NAME_CHARS = 60

#: Node metadata key where PyTorch's exporter records the modules a node was made in.
NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
_METADATA_MAX_CHARS = 10_000  # longer name_scopes values are not parsed


@dataclass(eq=False)
class Scope:
    """One scope. ``path`` is its key: ``encoder/layer.3`` ("" for the graph itself)."""

    path: str
    label: str  # last component, or "first … last" for a synthetic group
    parent: Scope | None
    synthetic: bool = False
    children: list[Scope] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)  # direct members (node indices)
    items: int = 0  # drawn when expanded: drawable direct nodes + child scopes
    node_count: int = 0  # nodes in the whole subtree, constants included
    param_count: int = 0
    first: int = 0  # smallest node index in the subtree: orders siblings
    row: int = -1  # position in the tree's preorder (its subtree: the rows that follow)
    _ops: Counter[str] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"<Scope {self.path!r} {self.node_count} nodes>"

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def trivial(self) -> bool:
        """At most one item: drawn as that item itself, never as a box or cluster."""
        return self.items <= 1 and self.parent is not None

    def ancestors(self) -> Iterator[Scope]:
        """Parent, grandparent, … up to but excluding the root."""
        scope = self.parent
        while scope is not None and scope.parent is not None:
            yield scope
            scope = scope.parent

    def walk(self) -> Iterator[Scope]:
        """This scope and every scope below it."""
        stack = [self]
        while stack:
            scope = stack.pop()
            yield scope
            stack.extend(reversed(scope.children))

    def subtree_nodes(self) -> Iterator[int]:
        for scope in self.walk():
            yield from scope.nodes


class ScopeTree:
    """The scope tree of one graph; see :func:`scope_tree` for the cached instance."""

    def __init__(self, graph: Graph, index: GraphWiring) -> None:
        self.root = Scope("", "", None)
        self.by_path: dict[str, Scope] = {"": self.root}
        self.node_scope: list[Scope] = []  # node index → the scope it sits in directly
        self.node_params: dict[int, int] = {}  # node index → parameters folded into it
        self._ops_table: _OpTable | None = None  # for ops(), made when first asked
        self._ops_table_made = False  # (None then means: too big, sum children instead)
        self._build(graph, index)
        self._count(graph, index)
        # A work list, not recursion: groups too big themselves are split in turn.
        pending = [scope for scope in self.root.walk() if scope.items > SCOPE_ITEMS_MAX]
        while pending:
            groups = self._split(graph, index, pending.pop())
            pending += [group for group in groups if group.items > SCOPE_ITEMS_MAX]
        #: Every scope, parents before children (``root.walk()``): the tree is final here.
        self.preorder: list[Scope] = list(self.root.walk())
        for row, scope in enumerate(self.preorder):
            scope.row = row

    # -- lookups ----------------------------------------------------------------
    def find(self, path: str) -> Scope | None:
        """The scope with this path; a leading or trailing ``/`` is ignored.

        A path deeper than SCOPE_DEPTH_MAX finds the scope its first components name,
        the scope a node of that name sits in.
        """
        # Raw first: keys are names as the file has them (control characters included).
        for candidate in (path, as_text(path)) if isinstance(path, str) else (as_text(path),):
            scope = self.by_path.get(candidate)
            if scope is None:
                scope = self.by_path.get("/".join(scope_parts(candidate)))
            if scope is not None:
                return scope
        return None

    def ops(self, graph: Graph, scope: Scope) -> Counter[str]:
        """Operator counts of a scope's subtree (computed when first asked for).

        One table serves every scope: node counts per (scope, operator) summed along the
        tree's preorder, where each subtree is a contiguous run of rows, so a scope's
        counts are one subtraction of two rows (100,000 nodes: 0.28 s → a few ms each).
        """
        if scope._ops is None:
            table = self._op_table(graph)
            if table is None:  # too many scopes × operators for a table: sum the children's
                self._sum_ops(graph, scope)
                assert scope._ops is not None
                return scope._ops
            start, end = scope.row, table.ends[scope.row]
            row = table.prefix[end] - table.prefix[start]
            names = table.op_names
            scope._ops = Counter({names[k]: int(row[k]) for k in np.flatnonzero(row)})
        return scope._ops

    @staticmethod
    def _sum_ops(graph: Graph, scope: Scope) -> None:
        """Operator counts of a subtree, children first: a loop, however deep the tree."""
        names = [as_text(node.op_type) for node in graph.nodes]
        order, stack = [], [scope]
        while stack:  # the scopes still to count, parents before children
            current = stack.pop()
            order.append(current)
            stack += [child for child in current.children if child._ops is None]
        for current in reversed(order):
            counts = Counter(map(names.__getitem__, current.nodes))
            for child in current.children:
                assert child._ops is not None
                counts.update(child._ops)
            current._ops = counts

    def _op_table(self, graph: Graph) -> _OpTable | None:
        if not self._ops_table_made:
            with paused_gc():  # tens of thousands of small tuples: no collection midway
                self._ops_table = self._make_op_table(graph)
            self._ops_table_made = True
        return self._ops_table

    def _make_op_table(self, graph: Graph) -> _OpTable | None:
        order = self.preorder  # a subtree is a run of rows
        # Maps at C speed: a Python expression per node costs ~0.1 s at 100,000 nodes.
        raw_ops = list(map(attrgetter("op_type"), graph.nodes))
        codes = {op: k for k, op in enumerate(dict.fromkeys(raw_ops))}
        if (len(order) + 1) * len(codes) > _OP_TABLE_CELLS:
            return None
        op_code = np.fromiter(map(codes.__getitem__, raw_ops), np.int64, len(raw_ops))
        rows = np.fromiter(map(_ROW, self.node_scope), np.int64, len(raw_ops))
        width = max(len(codes), 1)
        cells = np.bincount((rows + 1) * width + op_code, minlength=(len(order) + 1) * width)
        counts = cells.astype(np.int32).reshape(len(order) + 1, width)
        # Where each subtree's rows end: after its last child's (children come in order).
        ends = [0] * len(order)
        for scope in reversed(order):
            ends[scope.row] = ends[scope.children[-1].row] if scope.children else scope.row + 1
        names = [as_text(op) for op in codes]  # distinct ops only
        return _OpTable(names, np.cumsum(counts, axis=0), ends)

    # -- building ---------------------------------------------------------------
    def _scope_for(self, prefix: str) -> Scope:
        """The scope of a node name's prefix, made (with its missing parents) when new."""
        path = prefix[1:] if prefix[:1] == "/" else prefix
        scope = self.by_path.get(path)  # its keys are paths as scope_parts makes them
        if scope is not None:
            return scope
        if not (
            "//" not in path
            and path[-1] != "/"
            and path[0] != "/"
            and path.count("/") < SCOPE_DEPTH_MAX
        ):  # empty parts or too deep: the path its parts make (the usual name is its own)
            path = "/".join(scope_parts(prefix))
            scope = self.by_path.get(path)
            if scope is not None:
                return scope
        return self._new_scope(path)

    def _new_scope(self, path: str) -> Scope:
        """A scope at ``path`` (parts joined by single slashes), new parents made first:
        its parent exists already for all but the first node of a module."""
        head, _, part = path.rpartition("/")
        parent = self.by_path.get(head) or self._new_scope(head)
        scope = Scope(path, part, parent)
        parent.children.append(scope)
        self.by_path[path] = scope
        return scope

    def _build(self, graph: Graph, index: GraphWiring) -> None:
        by_prefix: dict[str, Scope] = {}  # raw name prefix → scope: one split per distinct prefix
        by_meta: dict[str, Scope] = {}  # raw name_scopes value → scope
        node_scope = self.node_scope
        append = node_scope.append
        use_metadata = _scopes_from_metadata(graph)
        for node in graph.nodes:
            if use_metadata:
                raw = node.metadata_props.get(NAME_SCOPES_KEY)
                if raw is not None:
                    # Nodes of one module differ only in their last entry, their own name:
                    # keyed without it, the list is parsed once per module, not per node.
                    head, comma, last = raw.rpartition(", ")
                    key = head if comma and _OWN_NAME.fullmatch(last) else raw
                    scope = by_meta.get(key)
                    if scope is None:
                        scope = by_meta[key] = self._scope_for(metadata_scope(raw))
                    append(scope)
                    continue
            name = node.name
            prefix = (name if isinstance(name, str) else as_text(name)).rpartition("/")[0]
            scope = by_prefix.get(prefix)
            if scope is None:
                scope = by_prefix[prefix] = self._scope_for(prefix)
            append(scope)
        for i, scope in enumerate(node_scope):  # members in file order, one pass
            scope.nodes.append(i)

    def _count(self, graph: Graph, index: GraphWiring) -> None:
        folded = index.folded_nodes
        params = self.node_params
        seen: set[int] = set()  # a tensor shared by several nodes counts once
        initializers = graph.initializers
        # Counts without making tensors, one C-level column for a reader's lazy mapping.
        column = getattr(initializers, "element_counts", None)
        counted = (column() if column is not None else {}).get
        producers = index.producers
        for value, node_index in index.first_consumer.items():
            count = counted(value)  # each name once: shared use counts once
            if count is not None:
                params[node_index] = params.get(node_index, 0) + count
                continue
            if value in producers and not (
                value in initializers or value in graph.sparse_initializers
            ):
                continue  # a folded constant's: counted below, where the node sits
            stored = index.stored_value(graph, value)
            if isinstance(stored, Tensor) and id(stored) not in seen:
                seen.add(id(stored))
                params[node_index] = params.get(node_index, 0) + stored.size
        # A constant's tensor counts where the Constant node sits (each node holds its own).
        for i, count in graph.constant_element_counts(sorted(folded)).items():
            params[i] = params.get(i, 0) + count
        # Direct parameters and folded members per scope from the (few) nodes that have them,
        # not from a pass over every member of every scope.
        direct_params: dict[int, int] = {}
        direct_folded: dict[int, int] = {}
        node_scope = self.node_scope
        for i, count in params.items():
            key = id(node_scope[i])
            direct_params[key] = direct_params.get(key, 0) + count
        for i in folded:
            key = id(node_scope[i])
            direct_folded[key] = direct_folded.get(key, 0) + 1
        # Children were created after their parents: a reversed walk sums bottom-up.
        order = list(self.root.walk())
        for scope in reversed(order):
            key = id(scope)
            scope.node_count = len(scope.nodes)
            scope.param_count = direct_params.get(key, 0)
            scope.items = len(scope.nodes) - direct_folded.get(key, 0) + len(scope.children)
            first = scope.nodes[0] if scope.nodes else None
            for child in scope.children:
                scope.node_count += child.node_count
                scope.param_count += child.param_count
                if first is None or child.first < first:
                    first = child.first
            scope.first = first or 0
            scope.children.sort(key=_first_index)

    def _split(self, graph: Graph, index: GraphWiring, scope: Scope) -> list[Scope]:
        """Regroup a scope's items into synthetic groups; returns the groups.

        At most SCOPE_ITEMS_MAX groups; a group may still hold more items than that when
        there are more than SCOPE_ITEMS_MAX² of them, and is split in its turn.
        """
        folded = index.folded_nodes
        members: list[tuple[int, int, Scope | int]] = [(i, i not in folded, i) for i in scope.nodes]
        members += [(child.first, 1, child) for child in scope.children]
        members.sort(key=lambda m: m[0])
        n = scope.items
        groups = math.ceil(n / SCOPE_ITEMS_MAX)
        if groups > SCOPE_ITEMS_MAX:  # more than fits in one level: split again below
            groups = SCOPE_ITEMS_MAX
        size = math.ceil(n / groups)
        chunks: list[list[Scope | int]] = [[]]
        weight = 0
        for _, w, member in members:
            if weight + w > size and weight:
                chunks.append([])
                weight = 0
            chunks[-1].append(member)
            weight += w
        scope.children, scope.nodes = [], []
        taken: set[str] = set()
        for chunk in chunks:
            label = self._group_label(graph, chunk, taken)
            path = f"{scope.path}/{label}" if scope.path else label
            while path in self.by_path:
                path += "'"
            group = Scope(path, label, scope, synthetic=True)
            self.by_path[path] = group
            for member in chunk:
                if isinstance(member, Scope):
                    member.parent = group
                    group.children.append(member)
                else:
                    group.nodes.append(member)
                    self.node_scope[member] = group
            group.items = sum(1 for i in group.nodes if i not in folded) + len(group.children)
            group.node_count = len(group.nodes) + sum(c.node_count for c in group.children)
            group.param_count = sum(c.param_count for c in group.children) + sum(
                self.node_params.get(i, 0) for i in group.nodes
            )
            group.first = min([*group.nodes, *(c.first for c in group.children)])
            scope.children.append(group)
        scope.items = len(scope.children)
        return scope.children

    def _group_label(self, graph: Graph, chunk: list[Scope | int], taken: set[str]) -> str:
        def name(member: Scope | int) -> str:
            # Shortened: a group's label is part of its path, and a name may be 1 MB long.
            if isinstance(member, Scope):
                return shorten(member.label, GROUP_NAME_CHARS)
            raw = graph.nodes[member].name
            last = (raw if isinstance(raw, str) else as_text(raw)).rpartition("/")[2]
            return as_text(shorten(last, GROUP_NAME_CHARS)) or "?"

        label = name(chunk[0]) if len(chunk) == 1 else f"{name(chunk[0])} … {name(chunk[-1])}"
        base, k = label, 2
        while label in taken:
            label = f"{base} ({k})"
            k += 1
        taken.add(label)
        return label


def _scopes_from_metadata(graph: Graph) -> bool:
    """Group by node metadata: names mostly carry no ``/`` scopes and some node has name_scopes."""
    nodes = graph.nodes
    half = len(nodes) // 2
    scoped = 0
    for node in nodes:  # stops as soon as half the names are scoped (the usual case)
        name = node.name
        if "/" in (name if isinstance(name, str) else as_text(name)):
            scoped += 1
            if scoped > half:
                return False
    return any(NAME_SCOPES_KEY in node.metadata_props for node in nodes)


def metadata_scope(value: str) -> str:
    """The scope path a ``pkg.torch.onnx.name_scopes`` value names, "" for the graph itself.

    PyTorch writes the ``repr`` of a list: the root module ``''``, the module path of
    each enclosing module, then the FX node's own name, as in ``['', 'model',
    'model.layers.3', 'model.layers.3.self_attn', 'linear_8']``. The innermost module
    (here ``model.layers.3.self_attn``) is the scope; a last entry that extends the one
    before it (``…self_attn.q_proj``) is a module too, and kept. A plain string is taken
    as the module path itself. Dots separate modules, except that a number stays with
    the name before it, as TorchScript exports write it: ``model/layers.3/self_attn``.
    """
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        # torch's own bookkeeping entries (``_empty_nn_module_stack_from_metadata_hook``)
        # are no module of the model: they would become group labels
        entries = [e for e in _list_entries(text) if e and not _TORCH_INTERNAL.search(e)]
        if not entries:
            return ""
        last = entries[-1]
        before = entries[-2] if len(entries) > 1 else ""
        if "." not in last or (before and not last.startswith(before + ".")):
            entries.pop()  # the node's own name, not a module
        text = entries[-1] if entries else ""
    if "/" in text:
        return "/".join(p for p in text.split("/") if p)
    parts: list[str] = []
    for part in text.split("."):
        if part.isdigit() and parts:
            parts[-1] += "." + part
        elif part:
            parts.append(part)
    return "/".join(parts)


#: name_scopes entries torch adds for itself, not modules of the model.
_TORCH_INTERNAL = re.compile(r"^_empty_nn_module_stack|^_\w*_hook$")

#: The last item of a name_scopes list when it is plainly a node's own name (``'linear_8']``):
#: one quoted string without dots, escapes or inner quotes, which :func:`metadata_scope` drops.
_OWN_NAME = re.compile(r"'[^'.\\]*'\]|\"[^\".\\]*\"\]")


def _list_entries(text: str) -> list[str]:
    """The strings of a Python list ``repr``: a fast split, ``ast`` when quoting gets tricky."""
    if "\\" not in text:
        entries: list[str] = []
        for item in text[1:-1].split(", "):
            item = item.strip()
            if len(item) >= 2 and item[0] == item[-1] and item[0] in "'\"":
                entries.append(item[1:-1])
            elif item:
                break  # a quote or comma inside an entry: parse properly
        else:
            return entries
    if len(text) > _METADATA_MAX_CHARS:
        return []
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    if isinstance(parsed, list | tuple):
        return [e for e in parsed if isinstance(e, str)]
    return []


#: Largest (scopes × operators) table for ops(): 16 M cells of int32 is 64 MB.
_OP_TABLE_CELLS = 16_000_000


@dataclass(frozen=True)
class _OpTable:
    op_names: list[str]  # column → operator
    prefix: np.ndarray  # row k: counts of the first k scopes in preorder (row 0: zeros)
    ends: list[int]  # row of a scope → the row its subtree ends before


_ROW = attrgetter("row")


def _first_index(scope: Scope) -> int:
    return scope.first


_CACHE: weakref.WeakKeyDictionary[Graph, ScopeTree] = weakref.WeakKeyDictionary()


def scope_tree(graph: Graph) -> ScopeTree:
    """The cached scope tree of ``graph``."""
    tree = _CACHE.get(graph)
    if tree is None:
        index = graph_wiring(graph)
        with paused_gc():
            tree = _CACHE[graph] = ScopeTree(graph, index)
    return tree


# -- which scopes to open -----------------------------------------------------------------
def first_view(tree: ScopeTree, budget: int, reserved: int = 0) -> list[str]:
    """Scope paths to expand for a first look, drawing at most ``budget`` boxes.

    Everything when it fits. Otherwise level by level from the top: a whole level
    opens when it fits (an even overview), else only its first scope that fits does
    and the search goes on inside it, so the view shows the overall structure with
    one worked example in detail (the first layer of a transformer fully open beside
    the collapsed others) rather than an arbitrary patchwork.
    """
    count = reserved + tree.root.items
    everything = [s for s in tree.preorder if not s.is_root and not s.trivial]
    if count + sum(s.items - 1 for s in everything) <= budget:
        return [s.path for s in everything]
    opened: list[Scope] = []
    level = _visible(tree.root.children)
    while level:
        cost = sum(s.items - 1 for s in level)
        if count + cost <= budget:
            opened += level
            count += cost
            level = _visible([c for s in level for c in s.children])
            continue
        for scope in level:
            if count + scope.items - 1 <= budget:
                opened.append(scope)
                count += scope.items - 1
                level = _visible(scope.children)
                break
        else:
            break
    return [s.path for s in opened]


def _visible(scopes: list[Scope]) -> list[Scope]:
    """Scopes that show as boxes: trivial ones (one item) are replaced by what they hold."""
    out: list[Scope] = []
    stack = list(reversed(scopes))
    while stack:
        scope = stack.pop()
        if scope.trivial:
            stack.extend(reversed(scope.children))
        else:
            out.append(scope)
    return out


def open_scopes(
    tree: ScopeTree, requested: list[str], budget: int, reserved: int = 0
) -> tuple[set[Scope], list[str], list[str]]:
    """Scopes to open for ``requested`` paths, within ``budget`` drawn boxes.

    Opening a scope opens its ancestors. Requests are honoured newest first, so a
    scope just clicked opens even if an older expansion has to stay shut for it.
    Returns the open scopes, the accepted paths (in request order) and notes.
    """
    count = reserved + tree.root.items
    opened: set[Scope] = set()
    accepted: list[str] = []
    notes: list[str] = []
    for path in reversed(requested):
        scope = tree.find(path)
        if scope is None:
            notes.append(f"no scope {as_text(path)[:200]!r} in this graph")
            continue
        if scope.is_root or scope in opened:
            continue
        chain = [s for s in (scope, *scope.ancestors()) if s not in opened and not s.trivial]
        cost = sum(s.items - 1 for s in chain)
        if count + cost > budget:
            notes.append(
                f"{as_text(scope.path)[:200]!r} not expanded: it would make {count + cost:,} "
                f"nodes (max_nodes={budget})"
            )
            continue
        opened.update(chain)
        count += cost
        accepted.append(path)
    accepted.reverse()
    return opened, accepted, notes
