"""Matching the nodes of two graphs, so that renaming every node still matches them.

First by name (same op type), then structurally, in passes over the nodes still
unmatched, each a hash lookup per node (so near-linear in the graph's size):

1. forward, in topological order: (op, attributes, inputs), an input being the value
   of the *matched* producer (or of a matched initializer or graph input), so
   producers are matched before their consumers; failing that (op, inputs): a changed
   attribute;
2. backward, in reverse topological order: (op, attributes, consumers), else (op,
   consumers): an inserted node before it, or rewired inputs;
3. (inputs, consumers) without the op: a changed op type;
4. anchor and extend, from every matched pair: unmatched producers at the same input
   position, and unmatched consumers at the same (op, input position), pair up when their
   op types agree, also looking through up to two unmatched nodes on one side (a node
   removed or inserted in the middle of a chain stops passes 1 and 2 on either side of
   it; an insertion and a removal elsewhere leave the stretch between them to this pass).

Among several candidates with one signature the first in topological order wins, so
repeated identical blocks pair up in order (but equal constants, which have no inputs,
only by their consumers). Passes repeat while they match anything.
"""

from __future__ import annotations

import heapq
from collections import ChainMap, Counter, deque
from collections.abc import Callable, Hashable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, compress, repeat
from operator import attrgetter, is_, lt, ne, not_
from typing import Any

from ..errors import ExplorerError
from ..model import Graph, Node, SparseTensor
from ..tensors import Tensor
from ._values import content_digest

#: Tensor attributes up to this many elements are hashed into a node's signature.
_DIGEST_ELEMENTS = 1 << 16
#: Rounds of passes at most (each round is linear; a round that matches nothing ends it).
_MAX_ROUNDS = 8

Signature = Callable[[int], Hashable | None]


@dataclass
class GraphMatch:
    """Which node of ``a`` is which node of ``b``, and b's value names in a's terms."""

    a: Graph
    b: Graph
    a2b: dict[int, int] = field(default_factory=dict)
    b2a: dict[int, int] = field(default_factory=dict)
    values_b2a: MutableMapping[str, str] = field(default_factory=dict)
    attrs_a: list[Hashable] = field(default_factory=list)  # attribute_keys per node
    attrs_b: list[Hashable] = field(default_factory=list)
    ops_a: list[str] = field(default_factory=list)  # qualified op per node
    ops_b: list[str] = field(default_factory=list)
    inputs_a: list[tuple[str, ...]] = field(default_factory=list)  # Node.inputs per node
    inputs_b: list[tuple[str, ...]] = field(default_factory=list)
    outputs_a: list[tuple[str, ...]] = field(default_factory=list)  # Node.outputs per node
    outputs_b: list[tuple[str, ...]] = field(default_factory=list)
    # Node i is node i for every i, and each node's inputs, mapped through values_b2a (as
    # long as nothing else writes to it), are a's (see _in_step).
    inputs_checked: bool = False

    def link(self, i: int, j: int) -> None:
        self.a2b[i] = j
        self.b2a[j] = i
        outs_a, outs_b = self.a.nodes[i].outputs, self.b.nodes[j].outputs
        for out_a, out_b in zip(outs_a, outs_b):
            if out_a and out_b:
                self.values_b2a[out_b] = out_a

    def values_a2b(self) -> dict[str, str]:
        return {va: vb for vb, va in self.values_b2a.items()}


def tensor_key(tensor: Tensor) -> Hashable:
    """dtype, shape and (for small tensors) a content digest: equal keys, equal tensors."""
    digest = None
    if tensor.size <= _DIGEST_ELEMENTS:
        try:
            digest = content_digest(tensor)
        except (ExplorerError, OSError, ValueError) as exc:
            digest = f"unreadable: {exc}"
    return ("tensor", tensor.dtype_name, tuple(tensor.shape), digest)


def value_key(value: Any) -> Hashable:
    """An attribute value as something hashable that is equal exactly when values are."""
    if isinstance(value, Tensor):
        return tensor_key(value)
    if isinstance(value, Graph):
        return "graph"  # bodies are compared on their own, through their matched parents
    if isinstance(value, SparseTensor):
        return ("sparse", value.shape, tensor_key(value.values), tensor_key(value.indices))
    if isinstance(value, tuple | list):
        return tuple(value_key(v) for v in value)
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, Hashable):
        return value
    return repr(value)


_PLAIN = frozenset({int, str, bytes})  # attribute values that are their own key


def attribute_key(node: Node) -> tuple[Hashable, ...]:
    """A node's attributes as a hashable tuple sorted by name."""
    attributes = node.attributes
    if not attributes:
        return ()
    items = [
        (name, value if type(value) in _PLAIN else value_key(value))
        for name, value in ((name, attr.value) for name, attr in attributes.items())
    ]
    return tuple(sorted(items))


def stable_name(node: Node) -> str:
    """The node's name in the file; for a nameless node ``op_type(first output)``, which an
    insertion elsewhere leaves alone (the reader's ``{op_type}_{position}`` shifts)."""
    if node.has_file_name or not node.name:
        return node.name
    outputs = node.outputs
    first = outputs[0] if outputs and outputs[0] else next((o for o in outputs if o), "")
    return f"{node.op_type}({first})" if first else node.name


def producers_of(outputs: Sequence[tuple[str, ...]]) -> dict[str, int]:
    """Value name → the first node (index) listing it among its ``outputs``."""
    names = list(chain.from_iterable(outputs))
    if len(names) == len(outputs) and all(outputs):  # one output each (the usual case)
        owners: Sequence[int] = range(len(outputs))
    else:
        owners = list(chain.from_iterable(map(repeat, range(len(outputs)), map(len, outputs))))
    producer = dict(zip(reversed(names), reversed(owners)))  # the first producer wins
    producer.pop("", None)  # an omitted optional output
    return producer


def in_file_order(producer: Mapping[str, int], inputs: Sequence[tuple[str, ...]]) -> bool:
    """Whether every input a node of the graph makes is made by a node before its reader."""
    readers = chain.from_iterable(map(repeat, range(len(inputs)), map(len, inputs)))
    found = map(producer.get, chain.from_iterable(inputs), repeat(-1))
    return all(map(lt, found, readers))


def topological_order(
    graph: Graph,
    producer: Mapping[str, int] | None = None,
    inputs: Sequence[tuple[str, ...]] | None = None,
) -> list[int]:
    """Node indices with producers first; ties (and any cycle, as in TensorFlow loops) in
    file order. ``producer`` (:func:`producers_of`) and ``inputs`` (per node), when the
    caller has them."""
    nodes = graph.nodes
    if producer is None:
        producer = producers_of([n.outputs for n in nodes])
    if inputs is None:
        inputs = [n.inputs for n in nodes]
    if in_file_order(producer, inputs):
        return list(range(len(nodes)))  # the usual case: the file is in order already
    waiting = [0] * len(nodes)
    children: list[list[int]] = [[] for _ in nodes]
    for j, node in enumerate(nodes):
        for inp in node.inputs:
            p = producer.get(inp) if inp else None
            if p is not None and p != j:
                waiting[j] += 1
                children[p].append(j)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in children[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    if len(order) < len(nodes):  # a cycle: the rest in file order
        seen = set(order)
        order.extend(i for i in range(len(nodes)) if i not in seen)
    return order


def attribute_keys(a: Graph, b: Graph) -> tuple[list[Hashable], list[Hashable]]:
    """Per node of each graph, its attributes as a value equal exactly when they are: the
    readers' fingerprints where both graphs have them, of one scheme (no attribute decoded
    but those of nodes holding tensors), else :func:`attribute_key` of every node."""
    found_a, found_b = a.attribute_fingerprints(), b.attribute_fingerprints()
    if found_a is None or found_b is None or found_a[0] != found_b[0]:
        return [attribute_key(n) for n in a.nodes], [attribute_key(n) for n in b.nodes]
    return _decode_missing(a, found_a[1]), _decode_missing(b, found_b[1])


def _decode_missing(graph: Graph, keys: list[Hashable | None]) -> list[Hashable]:
    nodes = graph.nodes
    for i in compress(range(len(keys)), map(is_, keys, repeat(None))):
        keys[i] = attribute_key(nodes[i])
    return keys


_DEFAULT_DOMAINS = frozenset({"", "ai.onnx"})


def _qualified_ops(nodes: Sequence[Node]) -> list[str]:
    """Each node's ``qualified_op``: its op type alone when every domain is the default."""
    if _DEFAULT_DOMAINS.issuperset(map(attrgetter("domain"), nodes)):
        return list(map(attrgetter("op_type"), nodes))
    return [n.qualified_op for n in nodes]


class _Side:
    """What the passes read of one graph, computed once (the consumers when first asked:
    a renamed export is matched by the forward pass alone)."""

    def __init__(self, graph: Graph, attrs: list[Hashable]) -> None:
        self.graph = graph
        self.nodes = nodes = graph.nodes
        self.inputs: list[tuple[str, ...]] = list(map(attrgetter("inputs"), nodes))
        self.outputs: list[tuple[str, ...]] = list(map(attrgetter("outputs"), nodes))
        self.producers = producers_of(self.outputs)
        self.in_order = in_file_order(self.producers, self.inputs)
        self.order = (
            list(range(len(nodes)))
            if self.in_order
            else topological_order(graph, self.producers, self.inputs)
        )
        self.ops = _qualified_ops(nodes)
        self.attrs = attrs

    @cached_property
    def defined(self) -> set[str]:
        """Every value the graph defines: stored, declared as an input or produced."""
        graph = self.graph
        defined = set(graph.initializers) | set(graph.sparse_initializers)
        defined.update(v.name for v in graph.declared_inputs)
        defined.update(self.producers)
        return defined

    @cached_property
    def consumers(self) -> dict[str, list[tuple[int, int]]]:
        consumers: dict[str, list[tuple[int, int]]] = {}
        for j, inputs in enumerate(self.inputs):
            for pos, inp in enumerate(inputs):
                if inp:
                    consumers.setdefault(inp, []).append((j, pos))
        for k, out in enumerate(self.graph.outputs):
            consumers.setdefault(out.name, []).append((-1, k))  # -1: the graph's output k
        return consumers


def _first_inputs(a: Graph, b: Graph, values_b2a: MutableMapping[str, str]) -> None:
    """Graph inputs by name, then the rest by position."""
    names_a = [v.name for v in a.inputs]
    names_b = [v.name for v in b.inputs]
    shared = set(names_a) & set(names_b)
    for name in shared:
        values_b2a[name] = name
    rest_a = [n for n in names_a if n not in shared]
    rest_b = [n for n in names_b if n not in shared]
    if len(rest_a) == len(rest_b):
        values_b2a.update(zip(rest_b, rest_a))


def match_nodes(
    a: Graph,
    b: Graph,
    tensors_b2a: Mapping[str, str],
    outer_b2a: MutableMapping[str, str] | None = None,
) -> GraphMatch:
    """Match the nodes of ``a`` and ``b`` (see the module's description)."""
    values: MutableMapping[str, str] = ChainMap({}, outer_b2a) if outer_b2a else {}
    values.update(tensors_b2a)
    _first_inputs(a, b, values)
    attrs_a, attrs_b = attribute_keys(a, b)
    side_a, side_b = _Side(a, attrs_a), _Side(b, attrs_b)
    match = GraphMatch(
        a, b, values_b2a=values, attrs_a=side_a.attrs, attrs_b=side_b.attrs,
        ops_a=side_a.ops, ops_b=side_b.ops, inputs_a=side_a.inputs, inputs_b=side_b.inputs,
        outputs_a=side_a.outputs, outputs_b=side_b.outputs,
    )  # fmt: skip
    nodes_a, nodes_b = side_a.nodes, side_b.nodes
    names_b = [n.name for n in nodes_b]
    for j in compress(range(len(nodes_b)), map(a.has_node, names_b)):  # by name, same op
        node = nodes_b[j]
        if node.name and node.has_file_name:
            i = a.node(node.name).index
            if i not in match.a2b and side_a.ops[i] == side_b.ops[j]:
                match.link(i, j)
    _by_stable_name(match, side_a, side_b)
    if _in_step(match, side_a, side_b):
        return match  # what the passes would find, found in bulk

    get, defined_b = values.get, side_b.defined
    columns_a, columns_b = side_a.inputs, side_b.inputs

    def inputs_a(i: int) -> tuple[Hashable, ...]:
        return columns_a[i]

    def inputs_b(j: int) -> tuple[Hashable, ...]:
        """b's inputs in a's terms: a's name for a matched value, ("b", name) for one
        defined in b but unmatched, an undefined name as is."""
        return tuple([
            "" if not n  # an omitted optional input
            else found if (found := get(n)) is not None
            else ("b", n) if n in defined_b else n
            for n in columns_b[j]
        ])  # fmt: skip

    def consumers_a(i: int) -> tuple[tuple[tuple[int, int], ...], ...]:
        return tuple(tuple(side_a.consumers.get(o, ())) if o else () for o in nodes_a[i].outputs)

    def consumer_b(j: int, pos: int) -> Hashable:
        if j < 0:
            return (j, pos)
        i = match.b2a.get(j)
        return (i, pos) if i is not None else ("b", j)

    def consumers_b(j: int) -> tuple[Hashable, ...]:
        return tuple(
            tuple(sorted((consumer_b(c, p) for c, p in side_b.consumers.get(o, ())), key=repr))
            if o
            else ()
            for o in nodes_b[j].outputs
        )

    sorted_a: dict[int, tuple[Hashable, ...]] = {}  # a's side does not change: sorted once

    def sorted_consumers_a(i: int) -> tuple[Hashable, ...]:
        found = sorted_a.get(i)
        if found is None:
            found = sorted_a[i] = tuple(tuple(sorted(c, key=repr)) for c in consumers_a(i))
        return found

    def used(key: tuple[Hashable, ...]) -> bool:
        return any(key)

    # Each pass tries its levels in turn for each node of b: the exact signature, else the
    # one without attributes (so one changed attribute does not stop a chain of matches).
    passes: list[tuple[bool, list[tuple[Signature, Signature]]]] = [
        (True, [
            (lambda i: (side_a.ops[i], side_a.attrs[i], inputs_a(i)),
             lambda j: (side_b.ops[j], side_b.attrs[j], inputs_b(j))),
            (lambda i: (side_a.ops[i], inputs_a(i)) if nodes_a[i].inputs else None,
             lambda j: (side_b.ops[j], inputs_b(j)) if nodes_b[j].inputs else None),
        ]),
        (False, [
            (lambda i: (side_a.ops[i], side_a.attrs[i], sorted_consumers_a(i)),
             lambda j: (side_b.ops[j], side_b.attrs[j], consumers_b(j))),
            (lambda i: (side_a.ops[i], c) if used(c := sorted_consumers_a(i)) else None,
             lambda j: (side_b.ops[j], c) if used(c := consumers_b(j)) else None),
        ]),
        (True, [
            (lambda i: (inputs_a(i), c) if used(c := sorted_consumers_a(i)) else None,
             lambda j: (inputs_b(j), c) if used(c := consumers_b(j)) else None),
        ]),
    ]  # fmt: skip
    sources = {j for j, node in enumerate(nodes_b) if not node.inputs}
    for _ in range(_MAX_ROUNDS):
        if len(match.a2b) == min(len(nodes_a), len(nodes_b)):
            break
        for forward, levels in passes:
            if _run_pass(match, side_a.order, side_b.order, forward, levels, sources):
                break  # start again from the strictest pass
        else:
            if not _extend(match, side_a, side_b):
                break
    return match


def _by_stable_name(match: GraphMatch, side_a: _Side, side_b: _Side) -> None:
    """Nameless nodes (on both sides) by ``op_type(first output)``, each found once per side:
    the reader names them by position, which one inserted node shifts."""
    nameless_a: dict[str, int | None] = {}
    for i, node in enumerate(side_a.nodes):
        if not node.has_file_name and i not in match.a2b:
            key = stable_name(node)
            nameless_a[key] = None if key in nameless_a else i
    if not nameless_a:
        return
    seen_b: dict[str, int | None] = {}
    for j, node in enumerate(side_b.nodes):
        if not node.has_file_name and j not in match.b2a:
            key = stable_name(node)
            seen_b[key] = None if key in seen_b else j
    for key, found_b in seen_b.items():
        found_a = nameless_a.get(key)
        if (
            found_a is not None
            and found_b is not None
            and side_a.ops[found_a] == side_b.ops[found_b]
        ):
            match.link(found_a, found_b)


def _in_step(match: GraphMatch, side_a: _Side, side_b: _Side) -> bool:
    """Link node i of a with node i of b for every i not matched by name, when that is
    provably what the first forward pass would do (then the matching is complete and no
    other pass runs); else change nothing and say False.

    It is, by induction over b's nodes in file order, when: both files are in topological
    order and of one length, with the same op per position; the name steps linked only
    node i to node i; every value of b has one producer; each node's inputs, mapped as the
    links would map them, are a's inputs at that position; where the attributes differ,
    the node has inputs (the pass's second level, (op, inputs), then finds it first: the
    nodes before it with that key are all linked by then) and no node of a not yet linked
    has b's (op, attributes, inputs) (the first level would take it); and a node without
    inputs has a signature no other unlinked node of a has (the pass pairs those only
    when unambiguous). A renamed export of one model is this case: a bulk check and
    bulk links instead of a signature per node, a pool and a link at a time."""
    nodes_a, nodes_b = side_a.nodes, side_b.nodes
    count = len(nodes_a)
    a2b = match.a2b
    if (
        count != len(nodes_b)
        or side_a.ops != side_b.ops
        or any(i != j for i, j in a2b.items())  # a name step linked i to another node
        or not (side_a.in_order and side_b.in_order)  # (a value's producer before its readers)
    ):
        return False
    inputs_a, inputs_b = side_a.inputs, side_b.inputs
    outputs_a, outputs_b = side_a.outputs, side_b.outputs
    flat_out_b = list(chain.from_iterable(outputs_b))
    producers_b = side_b.producers
    if len(producers_b) != len(flat_out_b) - flat_out_b.count(""):
        return False  # a value produced twice: a later link would remap it
    if list(map(len, inputs_a)) != list(map(len, inputs_b)):
        return False
    flat_b = list(chain.from_iterable(inputs_b))
    # b's values in a's terms once every node is linked (each link maps the outputs of its
    # pair; a value's one producer comes before its readers, so its readers see this).
    linked = _links_of(outputs_a, outputs_b, flat_out_b)
    values = match.values_b2a
    lookup = linked
    if type(values) is dict:  # a top-level graph's: one lookup per name at C speed
        lookup = values.copy()
        lookup.update(linked)
        lookup.pop("", None)  # an omitted input stays omitted
    mapped: list[Hashable] = list(map(lookup.get, flat_b))
    get, defined_b = values.get, side_b.defined
    for k in compress(range(len(mapped)), map(is_, mapped, repeat(None))):
        name = flat_b[k]  # as the passes' inputs_b maps a name not produced in b
        mapped[k] = (
            "" if not name
            else found if (found := get(name)) is not None
            else ("b", name) if name in defined_b else name
        )  # fmt: skip
    if mapped != list(chain.from_iterable(inputs_a)):
        return False
    full = range(count)
    rest = [i for i in full if i not in a2b] if a2b else full
    attrs_a, attrs_b, ops = side_a.attrs, side_b.attrs, side_a.ops
    changed = [i for i in compress(range(count), map(ne, attrs_a, attrs_b)) if i not in a2b]
    if changed:
        if not all(inputs_b[i] for i in changed):
            return False  # no second level for a node without inputs
        same_inputs: dict[tuple[str, ...], list[int]] | None = None
        repeated = Counter(inputs_a if rest is full else map(inputs_a.__getitem__, rest))
        for i in changed:
            if repeated[inputs_a[i]] == 1:
                continue  # no other node reads these inputs in this order
            if same_inputs is None:
                same_inputs = {}
                for k in rest:
                    same_inputs.setdefault(inputs_a[k], []).append(k)
            if any(ops[k] == ops[i] and attrs_a[k] == attrs_b[i] for k in same_inputs[inputs_a[i]]):
                return False
    sources = [i for i in compress(range(count), map(not_, inputs_a)) if i not in a2b]
    if sources:
        signatures = Counter((ops[i], attrs_a[i]) for i in sources)
        if any(signatures[ops[i], attrs_a[i]] > 1 for i in sources if attrs_a[i] == attrs_b[i]):
            return False
    b2a = match.b2a
    a2b.update(zip(rest, rest))
    b2a.update(zip(rest, rest))
    if rest is not full:
        for i in rest:
            for out_a, out_b in zip(outputs_a[i], outputs_b[i]):
                if out_a and out_b:
                    values[out_b] = out_a
    else:
        values.update(linked)
    match.inputs_checked = True
    return True


def _links_of(
    outputs_a: list[tuple[str, ...]], outputs_b: list[tuple[str, ...]], flat_b: list[str]
) -> dict[str, str]:
    """b's output names → a's, as linking node i to node i for every i would map them
    (``flat_b``: b's outputs, flattened)."""
    if list(map(len, outputs_a)) == list(map(len, outputs_b)) and "" not in flat_b:
        flat_a = list(chain.from_iterable(outputs_a))
        if "" not in flat_a:
            return dict(zip(flat_b, flat_a))
    linked: dict[str, str] = {}
    for outs_a, outs_b in zip(outputs_a, outputs_b):
        for out_a, out_b in zip(outs_a, outs_b):
            if out_a and out_b:
                linked[out_b] = out_a
    return linked


#: Unmatched nodes looked through on one side when extending from a matched pair.
_SKIP = 2


def _extend(match: GraphMatch, side_a: _Side, side_b: _Side) -> int:
    """Pass 4: grow the matching from matched pairs into their unmatched neighbours."""
    made = 0
    work = deque(sorted(match.a2b.items()))
    while work:
        i, j = work.popleft()
        for x, y in [*_producer_pairs(match, side_a, side_b, i, j),
                     *_consumer_pairs(match, side_a, side_b, i, j)]:  # fmt: skip
            if x not in match.a2b and y not in match.b2a:
                match.link(x, y)
                made += 1
                work.append((x, y))
    return made


def _upstream(side: _Side, start: int | None, matched: Mapping[int, int]) -> list[int]:
    """``start`` and the unmatched nodes above it along first inputs, up to _SKIP more."""
    found: list[int] = []
    node = start
    while node is not None and node not in matched and len(found) <= _SKIP:
        found.append(node)
        inputs = side.nodes[node].inputs
        node = side.producers.get(inputs[0]) if inputs and inputs[0] else None
    return found


def _producer_pairs(
    match: GraphMatch, side_a: _Side, side_b: _Side, i: int, j: int
) -> list[tuple[int, int]]:
    """For each input position: the unmatched producers of the two inputs if their ops
    agree, else the first pair with agreeing ops skipping nodes on one side only."""
    pairs: list[tuple[int, int]] = []
    for in_a, in_b in zip(side_a.nodes[i].inputs, side_b.nodes[j].inputs):
        up_a = _upstream(side_a, side_a.producers.get(in_a) if in_a else None, match.a2b)
        up_b = _upstream(side_b, side_b.producers.get(in_b) if in_b else None, match.b2a)
        if not (up_a and up_b):
            continue
        tries = [(0, 0)] + [t for k in range(1, _SKIP + 1) for t in ((k, 0), (0, k))]
        for ka, kb in tries:
            if ka < len(up_a) and kb < len(up_b):
                x, y = up_a[ka], up_b[kb]
                if side_a.ops[x] == side_b.ops[y]:
                    pairs.append((x, y))
                    break
    return pairs


#: Most consumers a level of :func:`_downstream` looks through: a wider level is not
#: looked through (its (op, position) keys would rarely be unique, and a dense fan-out
#: made the walk cubic: 614 KB files took 22 s and 1.7 GB).
_WIDE = 64


def _downstream(
    side: _Side, node: int, matched: Mapping[int, int]
) -> list[list[list[tuple[str, int, int]]]]:
    """Per output of ``node``: its unmatched consumers as (op, input position, index) at
    depth 0, then those reached through one unmatched consumer, and so on up to _SKIP.

    Each level holds a (consumer, position) once however many paths reach it, and a level
    past :data:`_WIDE` entries ends the look-through (the levels below it stay empty):
    the work per call is the node's direct consumers plus a bounded amount."""
    per_output: list[list[list[tuple[str, int, int]]]] = []
    for out in side.nodes[node].outputs:
        levels: list[list[tuple[str, int, int]]] = []
        frontier = [(c, p) for c, p in side.consumers.get(out, ()) if out and c >= 0]
        for depth in range(_SKIP + 1):
            frontier = [(c, p) for c, p in frontier if c not in matched]
            levels.append([(side.ops[c], p, c) for c, p in frontier])
            if depth == _SKIP:
                break
            frontier = _next_level(side, frontier)
        per_output.append(levels)
    return per_output


def _next_level(side: _Side, frontier: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The distinct (consumer, position) pairs reading an output of ``frontier``'s nodes;
    empty when there are more than :data:`_WIDE` (or the frontier itself is wider)."""
    if len(frontier) > _WIDE:
        return []
    found: dict[tuple[int, int], None] = {}
    for c in dict.fromkeys(c for c, _ in frontier):
        for o in side.nodes[c].outputs:
            if not o:
                continue
            for c2, p2 in side.consumers.get(o, ()):
                if c2 >= 0:
                    found[c2, p2] = None
                    if len(found) > _WIDE:
                        return []
    return list(found)


def _unique(found: list[tuple[str, int, int]]) -> dict[tuple[str, int], int]:
    """(op, position) → node, for the keys held by exactly one node."""
    count: dict[tuple[str, int], int] = {}
    where: dict[tuple[str, int], int] = {}
    for op, pos, node in found:
        count[op, pos] = count.get((op, pos), 0) + 1
        where[op, pos] = node
    return {key: node for key, node in where.items() if count[key] == 1}


def _consumer_pairs(
    match: GraphMatch, side_a: _Side, side_b: _Side, i: int, j: int
) -> list[tuple[int, int]]:
    """For each output: unmatched consumers with the one same (op, input position) on each
    side, direct ones first, then looking through unmatched consumers on one side."""
    pairs: list[tuple[int, int]] = []
    down_a, down_b = _downstream(side_a, i, match.a2b), _downstream(side_b, j, match.b2a)
    for levels_a, levels_b in zip(down_a, down_b):
        tries = [(0, 0)] + [t for k in range(1, _SKIP + 1) for t in ((k, 0), (0, k))]
        used_a: set[int] = set()
        used_b: set[int] = set()
        for ka, kb in tries:
            found_a = _unique([f for f in levels_a[ka] if f[2] not in used_a])
            found_b = _unique([f for f in levels_b[kb] if f[2] not in used_b])
            for key, x in found_a.items():
                y = found_b.get(key)
                if y is not None:
                    pairs.append((x, y))
                    used_a.add(x)
                    used_b.add(y)
    return pairs


def _run_pass(
    match: GraphMatch,
    order_a: Sequence[int],
    order_b: Sequence[int],
    forward: bool,
    levels: list[tuple[Signature, Signature]],
    sources: set[int],
) -> int:
    """One pass: pool a's unmatched nodes by signature, then look up b's in order.

    Going forward, a node without inputs (a Constant) pairs only with the one node of its
    signature: order alone cannot tell several equal constants apart; their consumers can
    (backward)."""
    unmatched = [i for i in order_a if i not in match.a2b]
    if not unmatched:
        return 0
    pools: list[dict[Hashable, deque[int]] | None] = [None] * len(levels)
    ambiguous: list[set[Hashable]] = [set() for _ in levels]

    def pool_of(level: int) -> dict[Hashable, deque[int]]:
        """a's unmatched nodes by the level's signature, made when first asked (the looser
        levels are rarely needed)."""
        pool = pools[level]
        if pool is None:
            pool = pools[level] = {}
            sig_a = levels[level][0]
            for i in unmatched:
                if i not in match.a2b:
                    key = sig_a(i)
                    if key is not None:
                        pool.setdefault(key, deque()).append(i)
            if forward:
                ambiguous[level] = {key for key, found in pool.items() if len(found) > 1}
        return pool

    made = 0
    # Forward: producers first, so a consumer sees its producer's match; backward: the reverse.
    for j in order_b if forward else reversed(order_b):
        if j in match.b2a:
            continue
        for level, (_, sig_b) in enumerate(levels):
            key = sig_b(j)
            if key is None:
                continue
            pool = pool_of(level)
            if j in sources and key in ambiguous[level]:
                continue
            candidates = pool.get(key)
            while candidates:
                i = candidates.popleft() if forward else candidates.pop()
                if i not in match.a2b:
                    match.link(i, j)
                    made += 1
                    break
            if j in match.b2a:
                break
    return made


def read_in_place(
    consumers: Iterable[Node], matched: Mapping[int, int], other: Graph, value: str
) -> str | None:
    """What the matched partners (``matched``: index → index in ``other``) of ``value``'s
    consumers read at the same input position, or None when none reads anything there."""
    for consumer in consumers:
        j = matched.get(consumer.index)
        if j is None:
            continue
        partner = other.nodes[j]
        for pos, name in enumerate(consumer.inputs):
            if name == value and pos < len(partner.inputs) and partner.inputs[pos]:
                return partner.inputs[pos]
    return None
