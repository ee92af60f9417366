"""Repeated blocks: sibling scopes that are the same computation, drawn once as a fold.

A 32-layer decoder is 32 scopes ``layers.0`` … ``layers.31`` that differ only in
names and weight values. A *fold* is a run of consecutive sibling scopes, numbered
alike (``layers.3``, ``h.3``, GGUF ``blk/3``, a checkpoint's ``layers/3``), that are
structurally identical: the same operators in the same order, equal attributes, the
same wiring inside (which node reads which, by position, not by name) and weights of
equal sizes. The drawing shows a fold as one box, ``layers.0–31 ×32``, and opens it on
one member at a time (``views/_drawing.py``); a member that differs (layer 5 with
another attribute) splits the run around it: ``layers.0–4 ×5``, ``layers.5``,
``layers.6–31 ×26``.

Detection is linear in the graph: every node gets one token (operator, output
count, input count, attribute digest, folded parameters, its scope's label without digits) from
C-speed maps, every edge one code relative to the member it ends in, and each run of
candidate members (equal node counts, parameters and children) is compared by a
position-weighted 64-bit hash of its members' node hashes, all in numpy. Nested runs
(experts inside layers) cost one more pass over their own nodes; :attr:`work` counts
node and edge visits, and detection stops at :data:`WORK_LIMIT` visits per node and edge.

:func:`compare_members` reads the weights of a fold's members (only when asked: that
is IO) and says which member is the outlier.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import Any

import numpy as np

from .._gc_pause import paused_gc
from ..model import Graph
from ..tensors import Tensor
from ._scopes import Scope, ScopeTree, scope_tree
from ._text import MISSING, as_text
from ._wiring import FROM_NODE, GraphWiring, graph_wiring

#: Fewest members a fold has.
FOLD_MIN = 2
#: Detection visits at most this many nodes and edges per node and edge of the graph.
WORK_LIMIT = 4
#: Label of a numbered scope: a prefix and a number (``layers.31``, ``h_3``, ``3``).
_NUMBERED = re.compile(r"^(.*?)(\d+)$", re.DOTALL)
_DIGITS = re.compile(r"\d+")
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass(eq=False)
class Fold:
    """A run of identical sibling scopes, drawn once."""

    parent: Scope
    members: tuple[Scope, ...]
    label: str  # "layers.0–31"

    def __repr__(self) -> str:
        return f"<Fold {self.label!r} ×{len(self.members)}>"

    @property
    def key(self) -> str:
        """What names the fold across drawings: its first member's path."""
        return self.members[0].path

    @property
    def count(self) -> int:
        return len(self.members)

    def index_of(self, scope: Scope) -> int | None:
        for k, member in enumerate(self.members):
            if member is scope:
                return k
        return None


@dataclass
class RepeatedBlocks:
    """The folds of one graph (see :func:`repeated_blocks` for the cached instance)."""

    folds: list[Fold] = field(default_factory=list)
    work: int = 0  # node and edge visits detection made: linear in the graph
    stopped: bool = False  # the work limit was reached: later runs were not compared
    _member: dict[int, tuple[Fold, int]] = field(default_factory=dict, repr=False)
    _by_key: dict[str, Fold] = field(default_factory=dict, repr=False)

    def add(self, fold: Fold) -> None:
        self.folds.append(fold)
        self._by_key[fold.key] = fold
        for k, member in enumerate(fold.members):
            self._member[id(member)] = (fold, k)

    def member(self, scope: Scope) -> tuple[Fold, int] | None:
        """The fold ``scope`` is a member of, and its position there."""
        return self._member.get(id(scope))

    def find(self, key: str) -> Fold | None:
        return self._by_key.get(key)

    def around(self, scope: Scope | None) -> Iterator[tuple[Fold, int]]:
        """Every fold holding ``scope`` (itself a member, or inside one), innermost first."""
        while scope is not None:
            found = self._member.get(id(scope))
            if found is not None:
                yield found
            scope = scope.parent


def detect(graph: Graph, tree: ScopeTree, index: GraphWiring) -> RepeatedBlocks:
    """Find the folds of ``graph`` (see the module docstring)."""
    found = RepeatedBlocks()
    nodes = graph.nodes
    n = len(nodes)
    runs = list(_candidate_runs(tree))
    if n == 0 or not runs:
        return found
    # Preorder of the scope tree: every subtree is one contiguous stretch of positions.
    order = np.fromiter(tree.root.subtree_nodes(), np.int64, n)
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n, dtype=np.int64)
    node_hash = _node_hashes(graph, tree)[order]  # by position
    edges = index.edges
    limit = WORK_LIMIT * (n + len(edges))
    found.work = n + len(edges)
    # Every data edge as (source position or -1 from outside the nodes, target position).
    kinds = np.fromiter(map(attrgetter("kind"), edges), np.int64, len(edges))
    control = np.fromiter(map(attrgetter("control"), edges), bool, len(edges))
    from_node = (kinds == FROM_NODE) & ~control
    keys = compress(map(attrgetter("key"), edges), from_node.tolist())
    src = np.full(len(edges), -1, np.int64)
    src[from_node] = np.fromiter(keys, np.int64, int(from_node.sum()))
    dst = np.fromiter(map(attrgetter("dst"), edges), np.int64, len(edges))[~control]
    src = src[~control]
    dst_pos = pos[dst]
    src_pos = np.where(src >= 0, pos[np.maximum(src, 0)], -1)
    by_dst = np.argsort(dst_pos, kind="stable")  # a node's edges in input order
    dst_sorted, src_sorted = dst_pos[by_dst], src_pos[by_dst]
    rng = np.random.default_rng(0x5EED)
    weights = rng.integers(1, 2**63, size=max(n, 1), dtype=np.uint64) | np.uint64(1)
    mix = rng.integers(1, 2**63, size=4, dtype=np.uint64) | np.uint64(1)
    for parent, run in runs:
        size = run[0].node_count
        start = _first_position(run[0], pos)
        span = size * len(run)
        if found.work + 2 * span > limit:
            found.stopped = True
            break
        lo, hi = np.searchsorted(dst_sorted, [start, start + span])
        found.work += span + int(hi - lo)
        signatures = _signatures(
            node_hash[start : start + span], dst_sorted[lo:hi], src_sorted[lo:hi],
            start, size, len(run), weights, mix,
        )  # fmt: skip
        k = 0
        while k < len(run):
            j = k + 1
            while j < len(run) and signatures[j] == signatures[k]:
                j += 1
            if j - k >= FOLD_MIN:
                members = tuple(run[k:j])
                found.add(Fold(parent, members, _fold_label(parent, members)))
            k = j
    return found


def _first_position(scope: Scope, pos: np.ndarray) -> int:
    """The preorder position where ``scope``'s stretch starts (its first node in the walk)."""
    first = next(scope.subtree_nodes())
    return int(pos[first])


def _candidate_runs(tree: ScopeTree) -> Iterator[tuple[Scope, list[Scope]]]:
    """Runs of consecutive sibling scopes numbered alike, of equal node and parameter
    counts: the only scopes whose structure is compared."""
    for scope in tree.by_path.values():
        if len(scope.children) < FOLD_MIN:
            continue
        run: list[Scope] = []
        run_key: tuple[Any, ...] | None = None
        for child in [*scope.children, None]:
            key = _run_key(child) if child is not None else None
            if key is not None and key == run_key:
                run.append(child)  # type: ignore[arg-type]
                continue
            if len(run) >= FOLD_MIN:
                yield scope, run
            run, run_key = ([child], key) if child is not None and key is not None else ([], None)


def _run_key(scope: Scope) -> tuple[Any, ...] | None:
    label = scope.label
    if not label[-1:].isdigit() or scope.synthetic or scope.trivial or not scope.node_count:
        return None
    match = _NUMBERED.match(label)
    if match is None:
        return None
    return (match.group(1), scope.node_count, scope.param_count, len(scope.children), scope.items)


def _codes(column: Iterable[Hashable], n: int) -> np.ndarray:
    """Each value of a column as a small integer (equal values, equal codes)."""
    values = list(column)
    table = {value: k for k, value in enumerate(dict.fromkeys(values))}
    return np.fromiter(map(table.__getitem__, values), np.int64, n)


def _node_hashes(graph: Graph, tree: ScopeTree) -> np.ndarray:
    """One 64-bit code per node (file order): what a node is, apart from its wiring and
    its name: operator, domain, output and input counts, attributes, the parameters
    folded into it and its scope's label with the numbers taken out (the domain is left
    out: decoding that column costs more than the rare clash it would tell apart)."""
    nodes = graph.nodes
    n = len(nodes)
    label_of = {id(s): _DIGITS.sub("#", s.label) for s in tree.by_path.values()}
    columns = [
        _codes(map(attrgetter("op_type"), nodes), n),
        np.fromiter(map(len, map(attrgetter("outputs"), nodes)), np.int64, n),
        np.fromiter(map(len, map(attrgetter("inputs"), nodes)), np.int64, n),
        _codes(graph.attribute_digests(), n),
        _codes(map(tree.node_params.get, range(n)), n),
        _codes(map(label_of.__getitem__, map(id, tree.node_scope)), n),
    ]
    rng = np.random.default_rng(0x70CE)
    multipliers = rng.integers(1, 2**63, size=len(columns), dtype=np.uint64) | np.uint64(1)
    total = np.zeros(n, np.uint64)
    with np.errstate(over="ignore"):
        for column, multiplier in zip(columns, multipliers, strict=True):
            total = (
                total ^ (column.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15))
            ) * multiplier
            total ^= total >> np.uint64(29)
    return total


def _signatures(
    hashes: np.ndarray,
    dst: np.ndarray,
    src: np.ndarray,
    start: int,
    size: int,
    members: int,
    weights: np.ndarray,
    mix: np.ndarray,
) -> list[int]:
    """A hash per member of a run of ``members`` adjacent stretches of ``size`` positions:
    its nodes' codes and its edges (source by position in the member, or "outside"), each
    weighted by where it sits."""
    with np.errstate(over="ignore"):
        member = (dst - start) // size
        base = start + member * size
        rel_dst = dst - base
        rel_src = src - base
        inside = (src >= 0) & (rel_src >= 0) & (rel_src < size)
        code = np.where(inside, rel_src + 2, 1).astype(np.uint64)
        # The k-th edge into a node: edges of a node are adjacent and in input order.
        first = np.searchsorted(dst, dst, side="left")
        slot = (np.arange(len(dst)) - first).astype(np.uint64)
        edge_value = (code * mix[0] + slot * mix[1] + np.uint64(1)) * mix[2]
        edge_value *= weights[rel_dst.astype(np.int64)]
        totals = np.zeros(members, np.uint64)
        np.add.at(totals, member, edge_value)
        grid = hashes.reshape(members, size) * weights[:size]
        node_totals = grid.sum(axis=1, dtype=np.uint64)
        return [int(v) for v in (node_totals * mix[3] + totals)]


def _fold_label(parent: Scope, members: tuple[Scope, ...]) -> str:
    """``layers.0–31``; numbers alone take their parent's name: ``layers/0–31``."""
    first = _NUMBERED.match(as_text(members[0].label))
    last = _NUMBERED.match(as_text(members[-1].label))
    assert first is not None and last is not None
    prefix = first.group(1)
    if not prefix and parent.label:
        prefix = f"{as_text(parent.label)}/"
    return f"{prefix}{first.group(2)}–{last.group(2)}"


_CACHE: weakref.WeakKeyDictionary[Graph, RepeatedBlocks] = weakref.WeakKeyDictionary()


def repeated_blocks(graph: Graph) -> RepeatedBlocks:
    """The cached folds of ``graph``."""
    found = _CACHE.get(graph)
    if found is None:
        tree = scope_tree(graph)
        index = graph_wiring(graph)
        with paused_gc():
            found = _CACHE[graph] = detect(graph, tree, index)
    return found


# -- which member is the outlier ---------------------------------------------------------
@dataclass(frozen=True)
class MemberWeights:
    """One member's weights summed up: per weight slot (position in the member) its std
    and mean, and how far they stand from the other members' (robust z-scores)."""

    label: str
    path: str
    stds: tuple[float, ...]
    means: tuple[float, ...]
    score: float  # largest |z| over its slots: how unlike the others it is
    worst_slot: str  # the weight (relative name) of that largest |z|


@dataclass(frozen=True)
class FoldComparison:
    """The weights of a fold's members compared: which one is the outlier, and the
    difference of two chosen members."""

    fold_label: str
    slots: tuple[str, ...]  # weight names relative to the member (``self_attn.q_proj.weight``)
    members: tuple[MemberWeights, ...]
    outlier: str  # label of the member most unlike the others
    pair: tuple[str, str] | None = None
    pair_rows: tuple[tuple[str, float, float], ...] = ()  # (slot, max |a-b|, rel. L2)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fold": self.fold_label,
            "outlier": self.outlier,
            "members": [
                {"label": m.label, "score": m.score, "worst": m.worst_slot} for m in self.members
            ],
            "pair": list(self.pair) if self.pair else None,
            "pair_rows": [list(row) for row in self.pair_rows],
        }

    def text(self) -> str:
        """A few lines for people: the outlier first, then the pair's biggest differences."""
        ranked = sorted(self.members, key=lambda m: -m.score)
        lines = [
            f"{self.fold_label}: the most different member is {self.outlier} "
            f"(weight statistics {ranked[0].score:.1f} robust std from the others' "
            f"median, in {ranked[0].worst_slot})"
        ]
        lines += [f"  {m.label}: {m.score:.1f} ({m.worst_slot})" for m in ranked[1:4]]
        if self.pair is not None:
            lines.append(f"{self.pair[0]} vs {self.pair[1]}:")
            rows = sorted(self.pair_rows, key=lambda r: -r[2])[:5]
            lines += [f"  {slot}: max |a-b| {d:.4g}, relative L2 {r:.3g}" for slot, d, r in rows]
        return "\n".join(lines)


def member_weights(graph: Graph, member: Scope) -> list[tuple[str, Tensor]]:
    """The stored tensors a member's nodes read, in the order its nodes read them, named
    relative to the member (the same list, slot for slot, for every member of a fold)."""
    index = graph_wiring(graph)
    seen: set[str] = set()
    found: list[tuple[str, Tensor]] = []
    for i in member.subtree_nodes():
        for _slot, value in index.folded_inputs.get(i, ()):
            if value in seen:
                continue
            seen.add(value)
            stored = index.stored_value(graph, value)
            if isinstance(stored, Tensor):
                found.append((_relative(value, member), stored))
            elif stored is not None:
                held = stored.tensors()
                if held:
                    found.append((_relative(value, member), held[0][1]))
    return found


def _relative(name: str, member: Scope) -> str:
    """A weight's name with its member's part taken out: ``self_attn.q_proj.weight``."""
    text = as_text(name)
    for marker in (member.path.replace("/", "."), member.label):
        at = text.find(marker)
        if marker and at >= 0:
            return text[at + len(marker) :].lstrip("./_") or text
    return text


def compare_members(
    graph: Graph, fold: Fold, pair: tuple[int, int] | None = None
) -> FoldComparison:
    """Read every member's weights (statistics streamed, one tensor at a time) and name
    the outlier: per weight slot, each member's std and mean as robust z-scores against
    all members (median and MAD); a member's score is its largest |z|. ``pair``: two
    member positions whose weights are also differenced slot by slot."""
    per_member = [member_weights(graph, member) for member in fold.members]
    slots = tuple(name for name, _ in per_member[0])
    stds = np.full((fold.count, len(slots)), np.nan)
    means = np.full((fold.count, len(slots)), np.nan)
    for m, weights in enumerate(per_member):
        for s, (_name, tensor) in enumerate(weights[: len(slots)]):
            try:
                stats = tensor.stats()
            except Exception:  # a tensor that cannot be read scores as missing, not as an error
                continue
            stds[m, s], means[m, s] = stats.std, stats.mean
    scores = np.zeros(fold.count)
    worst = [""] * fold.count
    for column in (stds, means):
        z = _robust_z(column)
        for m in range(fold.count):
            row = np.nan_to_num(np.abs(z[m]), nan=0.0)
            if row.size and row.max() > scores[m]:
                scores[m] = float(row.max())
                worst[m] = slots[int(row.argmax())]
    members = tuple(
        MemberWeights(
            as_text(member.label),
            member.path,
            tuple(map(float, stds[m])),
            tuple(map(float, means[m])),
            float(scores[m]),
            worst[m] or MISSING,
        )
        for m, member in enumerate(fold.members)
    )
    outlier = members[int(np.argmax(scores))].label if fold.count else ""
    pair_labels: tuple[str, str] | None = None
    rows: tuple[tuple[str, float, float], ...] = ()
    if pair is not None:
        a, b = pair
        pair_labels = (members[a].label, members[b].label)
        rows = tuple(_difference(name, per_member[a], per_member[b]) for name in slots)
    return FoldComparison(fold.label, slots, members, outlier, pair_labels, rows)


def _robust_z(column: np.ndarray) -> np.ndarray:
    """(x − median) / (1.4826 · MAD) per slot (column), over the members (rows)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        median = np.nanmedian(column, axis=0)
        mad = np.nanmedian(np.abs(column - median), axis=0) * 1.4826
        spread = np.where(mad > 0, mad, np.nanstd(column, axis=0))
        spread = np.where(spread > 0, spread, 1.0)
        return (column - median) / spread  # type: ignore[no-any-return]


def _difference(
    slot: str, a: list[tuple[str, Tensor]], b: list[tuple[str, Tensor]]
) -> tuple[str, float, float]:
    """(slot, max |a − b|, ‖a − b‖ / ‖a‖) of two members' weight in one slot."""
    left = next((t for n, t in a if n == slot), None)
    right = next((t for n, t in b if n == slot), None)
    if left is None or right is None or left.shape != right.shape:
        return slot, math.nan, math.nan
    try:
        x = np.asarray(left.numpy(), dtype=np.float64)
        y = np.asarray(right.numpy(), dtype=np.float64)
    except Exception:  # unreadable weights: no difference to tell
        return slot, math.nan, math.nan
    d = x - y
    norm = float(np.linalg.norm(x))
    return slot, float(np.abs(d).max()) if d.size else 0.0, float(np.linalg.norm(d)) / (norm or 1.0)


__all__ = [
    "FOLD_MIN",
    "Fold",
    "FoldComparison",
    "RepeatedBlocks",
    "compare_members",
    "detect",
    "repeated_blocks",
]
