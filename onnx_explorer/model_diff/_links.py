"""Which nodes of one side stand for which nodes of the other: the links of two panes.

Built from a :class:`~onnx_explorer.model_diff.ModelDiff`'s public answers only (its
``nodes_matched`` pairs and the two models), so a change in how nodes are matched
changes the links and nothing here. The match pairs nodes one to one; fused and split
nodes (Conv + BatchNormalization + Relu folded into one Conv, Gemm split into MatMul +
Add, a QuantizeLinear → DequantizeLinear pair inserted before a node) leave nodes on one
or both sides without a partner. They are grouped with what stands in their place:

- at every matched pair of nodes, input slot by input slot, the producers of the two
  values read there stand for each other: an unmatched producer on one side joins the
  producer on the other side (or, when that value is a weight or a graph input there, the
  matched reader itself: a weight's DequantizeLinear joins the node that reads it);
- the same at the graph outputs, position by position;
- unmatched nodes joined to one another on one side form one region.

A group is then every node of both sides that one union holds: one a node and one b
node is a plain match (1↔1); more on either side is a fused or split group (1↔N, N↔M).
A region with nodes on one side only is unmatched: added in b or removed from a. A group
larger than :data:`GROUP_LIMIT` nodes on a side (a whole block rewritten) is not a link
anyone can read: its matched pairs stay 1↔1 and the rest count as unmatched.

Linear in the number of nodes (one union-find over both graphs' nodes and edges).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from ..model import Graph, Model
from ._model_diff import ModelDiff

Side = Literal["a", "b"]
#: Nodes on one side of a group at most; larger unions fall back to their 1↔1 pairs.
GROUP_LIMIT = 48


@dataclass(frozen=True)
class LinkGroup:
    """Nodes of graph ``graph_a`` of side a that stand for nodes of ``graph_b`` of side b.

    ``a`` and ``b`` are node names in each graph's node order; either may be empty (the
    nodes of the other side have no counterpart). ``kind``: ``"match"`` (one node each),
    ``"fused"`` (several on at least one side), ``"unmatched"`` (one side empty).
    """

    graph_a: str
    graph_b: str
    a: tuple[str, ...]
    b: tuple[str, ...]

    @property
    def kind(self) -> str:
        if not self.a or not self.b:
            return "unmatched"
        return "match" if len(self.a) == 1 and len(self.b) == 1 else "fused"

    def side(self, side: Side) -> tuple[str, ...]:
        return self.a if side == "a" else self.b

    def graph(self, side: Side) -> str:
        return self.graph_a if side == "a" else self.graph_b


@dataclass
class NodeLinks:
    """The groups of every pair of graphs the diff compared, asked by node name.

    ``graphs_a2b`` / ``graphs_b2a``: which graph of one side the other side calls by
    which path (the main graphs, If/Loop/Scan bodies through their matched parents,
    functions). :meth:`group` gives a node's group, :meth:`partners` the other side's
    nodes of it, :meth:`unmatched` a graph's nodes without a counterpart.
    """

    graphs_a2b: dict[str, str] = field(default_factory=dict)
    graphs_b2a: dict[str, str] = field(default_factory=dict)
    _groups: dict[tuple[Side, str, str], LinkGroup] = field(default_factory=dict)
    _unmatched: dict[tuple[Side, str], list[str]] = field(default_factory=dict)

    def other_graph(self, side: Side, path: str) -> str | None:
        """The other side's path for the graph ``side`` calls ``path`` (None: no match)."""
        return (self.graphs_a2b if side == "a" else self.graphs_b2a).get(path)

    def group(self, side: Side, path: str, name: str) -> LinkGroup | None:
        """The group holding node ``name`` of graph ``path`` on ``side`` (None: not linked)."""
        return self._groups.get((side, path, name))

    def partners(self, side: Side, path: str, name: str) -> tuple[str, ...]:
        """The other side's nodes standing for this one (in their graph's order)."""
        found = self.group(side, path, name)
        if found is None:
            return ()
        return found.side(_other(side))

    def unmatched(self, side: Side, path: str) -> list[str]:
        """Nodes of this graph with no counterpart on the other side, in node order."""
        return list(self._unmatched.get((side, path), []))

    def groups(self) -> list[LinkGroup]:
        """Every group of two or more nodes once (1↔1 matches and fused groups)."""
        seen: dict[int, LinkGroup] = {}
        for group in self._groups.values():
            if group.a and group.b:
                seen.setdefault(id(group), group)
        return list(seen.values())


def _other(side: Side) -> Side:
    return "b" if side == "a" else "a"


class _Union:
    """Union-find over 0..n-1 with path halving."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(self, x: int, y: int) -> None:
        rx, ry = self.find(x), self.find(y)
        if rx != ry:
            self.parent[max(rx, ry)] = min(rx, ry)


def node_links(diff: ModelDiff) -> NodeLinks:
    """The links of every graph pair ``diff`` compared (see the module docstring)."""
    pairs: dict[tuple[str, str], list[tuple[int, int]]] = {}
    votes: dict[str, Counter[str]] = {}
    for ref_a, ref_b in diff.nodes_matched:
        pairs.setdefault((ref_a.graph, ref_b.graph), []).append((ref_a.index, ref_b.index))
        votes.setdefault(ref_a.graph, Counter())[ref_b.graph] += 1
    links = NodeLinks()
    # Each graph of a goes with the graph of b most of its matched nodes went to; a main
    # graph (or a body, a function) whose nodes all changed still pairs by its path.
    for path_a, counter in votes.items():
        path_b = counter.most_common(1)[0][0]
        if path_b not in links.graphs_b2a:
            links.graphs_a2b[path_a] = path_b
            links.graphs_b2a[path_b] = path_a
    paths_b = {g.path for g in diff.b.graphs()}
    for graph in diff.a.graphs():
        path = graph.path
        if path not in links.graphs_a2b and path in paths_b and path not in links.graphs_b2a:
            links.graphs_a2b[path] = path
            links.graphs_b2a[path] = path
    for path_a, path_b in links.graphs_a2b.items():
        graph_a, graph_b = _graph(diff.a, path_a), _graph(diff.b, path_b)
        if graph_a is None or graph_b is None:
            continue
        _link_graphs(links, graph_a, graph_b, pairs.get((path_a, path_b), []))
    # Graphs of one side the other side has no counterpart for: every node unmatched.
    sides: tuple[tuple[Side, Model, dict[str, str]], ...] = (
        ("a", diff.a, links.graphs_a2b),
        ("b", diff.b, links.graphs_b2a),
    )
    for side, model, known in sides:
        for graph in model.graphs():
            if graph.path not in known:
                links._unmatched[(side, graph.path)] = [n.name for n in graph.nodes]
    return links


def _graph(model: Model, path: str) -> Graph | None:
    try:
        return model.graph_at(path)
    except KeyError:
        return None


def _link_graphs(
    links: NodeLinks, graph_a: Graph, graph_b: Graph, matched: Iterable[tuple[int, int]]
) -> None:
    nodes_a, nodes_b = graph_a.nodes, graph_b.nodes
    na, nb = len(nodes_a), len(nodes_b)
    a2b: dict[int, int] = {}
    b2a: dict[int, int] = {}
    for i, j in matched:
        if 0 <= i < na and 0 <= j < nb and i not in a2b and j not in b2a:
            a2b[i], b2a[j] = j, i
    union = _Union(na + nb)
    for i, j in a2b.items():
        union.join(i, na + j)

    def producer(graph: Graph, value: str, offset: int) -> int | None:
        node = graph.producer(value) if value else None
        return None if node is None else offset + node.index

    def matched_key(key: int) -> bool:
        return key in a2b if key < na else (key - na) in b2a

    def boundary(pa: int | None, pb: int | None, reader: int | None) -> None:
        """The producers of two values that stand for each other."""
        if pa is None and pb is None:
            return
        loose_a = pa is not None and not matched_key(pa)
        loose_b = pb is not None and not matched_key(pb)
        if not loose_a and not loose_b:
            return  # both matched (to each other, or rewired: not a fusion)
        if pa is not None and pb is not None:
            union.join(pa, pb)
        elif reader is not None:  # a weight or graph input on one side: the reader's group
            loose = pa if pa is not None else pb
            assert loose is not None
            union.join(loose, reader)

    for i, j in a2b.items():
        inputs_a, inputs_b = nodes_a[i].inputs, nodes_b[j].inputs
        for value_a, value_b in zip(inputs_a, inputs_b):
            boundary(producer(graph_a, value_a, 0), producer(graph_b, value_b, na), i)
    for out_a, out_b in zip(graph_a.outputs, graph_b.outputs):
        boundary(producer(graph_a, out_a.name, 0), producer(graph_b, out_b.name, na), None)
    # Unmatched nodes joined on one side make one region.
    for graph, offset, count, free in ((graph_a, 0, na, a2b), (graph_b, na, nb, b2a)):
        for k in range(count):
            if k in free:
                continue
            for value in graph.nodes[k].inputs:
                up = producer(graph, value, offset)
                if up is not None and (up - offset) not in free:
                    union.join(offset + k, up)

    members: dict[int, tuple[list[int], list[int]]] = {}
    for k in range(na + nb):
        root = union.find(k)
        sides = members.setdefault(root, ([], []))
        if k < na:
            sides[0].append(k)
        else:
            sides[1].append(k - na)
    path_a, path_b = graph_a.path, graph_b.path
    loose_a: list[int] = []
    loose_b: list[int] = []
    for in_a, in_b in members.values():
        if not in_a or not in_b:
            loose_a.extend(in_a)
            loose_b.extend(in_b)
            continue
        if len(in_a) > GROUP_LIMIT or len(in_b) > GROUP_LIMIT:
            # Too large to read as one link: matched pairs alone, the rest unmatched.
            loose_a.extend(i for i in in_a if i not in a2b)
            loose_b.extend(j for j in in_b if j not in b2a)
            in_a = [i for i in in_a if i in a2b]
            for i in in_a:
                _add(links, LinkGroup(path_a, path_b, (nodes_a[i].name,), (nodes_b[a2b[i]].name,)))
            continue
        group = LinkGroup(
            path_a,
            path_b,
            tuple(nodes_a[i].name for i in in_a),
            tuple(nodes_b[j].name for j in in_b),
        )
        _add(links, group)
    links._unmatched[("a", path_a)] = [nodes_a[i].name for i in sorted(loose_a)]
    links._unmatched[("b", path_b)] = [nodes_b[j].name for j in sorted(loose_b)]


def _add(links: NodeLinks, group: LinkGroup) -> None:
    for name in group.a:
        links._groups[("a", group.graph_a, name)] = group
    for name in group.b:
        links._groups[("b", group.graph_b, name)] = group
