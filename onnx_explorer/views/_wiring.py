"""How one graph is wired, as every drawing of it needs it: computed once and cached.

Which nodes are constant producers folded into their consumers, which inputs of a
node are folded (initializers and those constants), every edge, each value's
producer. Built in one pass over the nodes, so a 100,000-node graph costs a fraction
of a second once. (The explorer's node search has its own index:
:class:`~onnx_explorer.views._tables.NodeSearch`.)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Set
from dataclasses import dataclass, field
from typing import NamedTuple

from .._gc_pause import paused_gc
from ..model import Graph, Node
from ..tensors import Tensor

#: Operators that only hold a value: ONNX ``Constant`` and TensorFlow ``Const``.
CONSTANT_OPS = frozenset({"Constant", "Const"})

# Where an edge starts.
FROM_NODE = 0  # key: node index
FROM_INPUT = 1  # key: position in graph.inputs
FROM_OUTER = 2  # key: value name (a subgraph reading its parent's value, or a dangling name)
FROM_STORED = 3  # key: value name of an initializer (only for graph outputs that are stored)


class Edge(NamedTuple):
    kind: int
    key: int | str
    dst: int  # consumer node index, or position in graph.outputs for output edges
    value: str  # "" for control edges
    control: bool = False
    implicit: bool = False  # read inside an If/Loop/Scan body, not as a listed input


@dataclass
class GraphWiring:
    """The edges a drawing of one graph draws, with constant producers folded in."""

    # No reference to the graph itself: the cache below is keyed weakly by it.
    n_nodes: int
    folded_nodes: frozenset[int]  # constant producers drawn inside their consumers
    folded_inputs: dict[int, list[tuple[int, str]]]  # node → [(input slot, value name)]
    edges: list[Edge]  # into nodes
    output_edges: list[Edge]  # into graph outputs (dst = output position)
    producers: dict[str, int]  # value name → node index
    first_consumer: dict[str, int]  # folded value name → first consuming node index
    _preds: list[list[int]] | None = field(default=None, repr=False)
    _succs: list[list[int]] | None = field(default=None, repr=False)

    @property
    def drawable_count(self) -> int:
        return self.n_nodes - len(self.folded_nodes)

    def is_drawable(self, index: int) -> bool:
        return index not in self.folded_nodes

    def adjacency(self) -> tuple[list[list[int]], list[list[int]]]:
        """Predecessor and successor node indices (data and control edges), built on first use."""
        if self._preds is None or self._succs is None:
            n = self.n_nodes
            preds: list[list[int]] = [[] for _ in range(n)]
            succs: list[list[int]] = [[] for _ in range(n)]
            for edge in self.edges:
                if edge.kind == FROM_NODE:
                    src = edge.key
                    assert isinstance(src, int)
                    preds[edge.dst].append(src)
                    succs[src].append(edge.dst)
            self._preds, self._succs = preds, succs
        return self._preds, self._succs

    def stored_value(self, graph: Graph, name: str) -> Tensor | Node | None:
        """What a folded value is: an initializer's tensor, or the constant node producing it."""
        tensor = graph.initializers.get(name)
        if tensor is not None:
            return tensor
        sparse = graph.sparse_initializers.get(name)
        if sparse is not None:
            return sparse.values
        producer = self.producers.get(name)
        return graph.nodes[producer] if producer is not None else None


def constant_tensor(node: Node) -> Tensor | None:
    """The tensor a Constant/Const node holds (None for ``value_ints`` and friends)."""
    found = node.tensors()
    return found[0][1] if found else None


def _foldable(node: Node, outputs: set[str], consumed: set[str]) -> bool:
    if node.op_type not in CONSTANT_OPS or node.control_inputs or not node.outputs:
        return False
    if any(node.inputs):
        return False
    # Keep a constant visible when nothing reads it or it is itself a graph output.
    return all(out and out in consumed and out not in outputs for out in node.outputs)


def _resolve_control(graph: Graph, name: str) -> Node | None:
    # GraphDef writes "^name"; tolerate the caret and an output suffix.
    name = name[1:] if name.startswith("^") else name
    if graph.has_node(name):
        return graph.node(name)
    base = name.rpartition(":")[0]
    return graph.node(base) if base and graph.has_node(base) else None


def outer_names(graph: Graph) -> tuple[str, ...]:
    """Names ``graph`` reads from enclosing graphs (bodies within it included), in first-use order.

    These are the values an If/Loop/Scan body captures from its parent's scope; a name
    defined nowhere shows up here too and is drawn as a dangling outer input.
    """
    cached = _OUTER.get(graph)
    if cached is not None:
        return cached
    defined = set(graph.initializers) | set(graph.sparse_initializers)
    defined.update(info.name for info in graph.declared_inputs)
    found: dict[str, None] = {}
    with_bodies = graph.nodes_with_bodies()  # without decoding every node's attributes
    for node in graph.nodes:
        for value in node.inputs:
            if value and value not in defined:
                found[value] = None
        bodies = node.subgraphs() if node.index in with_bodies else ()
        for _attr, body in bodies:
            for value in outer_names(body):
                if value not in defined:
                    found[value] = None
        defined.update(node.outputs)
    for info in graph.outputs:
        if info.name and info.name not in defined:
            found[info.name] = None
    result = _OUTER[graph] = tuple(found)
    return result


_OUTER: weakref.WeakKeyDictionary[Graph, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _add_captured(
    node: Node,
    i: int,
    producers: dict[str, int],
    folded_nodes: frozenset[int],
    stored: Set[str],
    input_pos: dict[str, int],
    add: Callable[[Edge], None],
) -> None:
    """Values a body reads from this graph's scope: dashed edges into the If/Loop node."""
    captured = [v for _a, body in node.subgraphs() for v in outer_names(body)]
    for value in dict.fromkeys(captured):
        if value in node.inputs or value in stored:
            continue
        src = producers.get(value)
        if src is not None:
            if src not in folded_nodes and src != i:
                add(Edge(FROM_NODE, src, i, value, implicit=True))
        elif value in input_pos:
            add(Edge(FROM_INPUT, input_pos[value], i, value, implicit=True))
        else:
            add(Edge(FROM_OUTER, value, i, value, implicit=True))


def build_wiring(graph: Graph) -> GraphWiring:
    nodes = graph.nodes
    producers: dict[str, int] = {}
    consumed: set[str] = set()
    for i, node in enumerate(nodes):
        for out in node.outputs:
            if out and out not in producers:
                producers[out] = i
        consumed.update(node.inputs)
    output_names = {info.name for info in graph.outputs}
    folded_nodes = frozenset(
        i
        for i, node in enumerate(nodes)
        if node.op_type in CONSTANT_OPS and _foldable(node, output_names, consumed)
    )
    stored = graph.initializers.keys() | graph.sparse_initializers.keys()
    input_pos = {info.name: k for k, info in enumerate(graph.inputs)}

    edges: list[Edge] = []
    folded_inputs: dict[int, list[tuple[int, str]]] = {}
    first_consumer: dict[str, int] = {}
    add = edges.append
    # tuple.__new__ skips NamedTuple's Python-level __new__: 200,000 edges at 100k nodes.
    new = tuple.__new__
    with_bodies = graph.nodes_with_bodies()  # without decoding every node's attributes
    for i, node in enumerate(nodes):
        for slot, value in enumerate(node.inputs):
            if not value:
                continue
            src = producers.get(value)
            if src is not None and src not in folded_nodes:
                add(new(Edge, (FROM_NODE, src, i, value, False, False)))
            elif src is not None or value in stored:
                folded_inputs.setdefault(i, []).append((slot, value))
                first_consumer.setdefault(value, i)
            elif value in input_pos:
                add(new(Edge, (FROM_INPUT, input_pos[value], i, value, False, False)))
            else:
                add(new(Edge, (FROM_OUTER, value, i, value, False, False)))
        if i in with_bodies:
            _add_captured(node, i, producers, folded_nodes, stored, input_pos, add)
        for name in node.control_inputs:
            src_node = _resolve_control(graph, name)
            if src_node is not None and src_node.index not in folded_nodes:
                add(Edge(FROM_NODE, src_node.index, i, "", control=True))

    output_edges: list[Edge] = []
    for k, info in enumerate(graph.outputs):
        name = info.name
        src = producers.get(name)
        if src is not None:
            output_edges.append(Edge(FROM_NODE, src, k, name))
        elif name in input_pos:
            output_edges.append(Edge(FROM_INPUT, input_pos[name], k, name))
        elif name in stored:
            output_edges.append(Edge(FROM_STORED, name, k, name))
        elif name:
            output_edges.append(Edge(FROM_OUTER, name, k, name))
    return GraphWiring(
        len(nodes), folded_nodes, folded_inputs, edges, output_edges, producers, first_consumer
    )


_CACHE: weakref.WeakKeyDictionary[Graph, GraphWiring] = weakref.WeakKeyDictionary()


def graph_wiring(graph: Graph) -> GraphWiring:
    """The cached wiring of ``graph`` (graphs are read-only, so it never goes stale)."""
    wiring = _CACHE.get(graph)
    if wiring is None:
        with paused_gc():
            wiring = _CACHE[graph] = build_wiring(graph)
    return wiring
