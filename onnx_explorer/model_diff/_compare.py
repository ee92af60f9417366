"""compare_models: walk two models' graphs in step, match nodes and tensors, compare."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, MutableMapping, Set
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import and_, eq, is_not, ne, not_
from typing import Any

from .._gc_pause import paused_gc
from ..errors import ExplorerError
from ..model import Dim, Graph, Model, Node, TensorsOnDemand, ValueInfo
from ..stats import Dequantizer
from ..tensors import Tensor
from ..weights._quant import ConstantLookup, find_dequantization
from ._matching import GraphMatch, match_nodes, read_in_place, stable_name
from ._model_diff import ModelDiff, NodeLists, TensorPair, TensorType
from ._nodes import node_changes
from ._quantized import REAL, quantized_pairs
from ._results import NodeChange, NodeRef, RemovedNode, TensorChange
from ._values import compare_tensors, content_digest


def compare_models(
    a: Model,
    b: Model,
    *,
    weights: bool = True,
    atol: float = 0.0,
    rtol: float = 0.0,
    progress: bool = False,
) -> ModelDiff:
    """What changed from ``a`` to ``b``: model fields, nodes (matched by name, then by
    structure, in every graph), and tensors (by name, then by content; values compared
    streamed within ``atol + rtol·|a|`` when ``weights``)."""
    if not (atol >= 0 and rtol >= 0):
        raise ValueError(f"atol and rtol must be non-negative numbers, not {atol!r}, {rtol!r}")
    walk = _Walk(a, b, structure_only=not weights)
    with paused_gc():  # ~10 small acyclic objects per node
        walk.run()
    pairs = walk.tensor_pairs
    changes: list[TensorChange] = []
    bar = _progress(len(pairs)) if progress and weights else None
    for pair in pairs:
        found = compare_tensors(
            pair.a, pair.b, atol=atol, rtol=rtol, dq_a=pair.dq_a, dq_b=pair.dq_b,
            values=weights, compared=pair.compared, layout_a=pair.layout_a,
            layout_b=pair.layout_b,
        )  # fmt: skip
        if found is not None:
            changes.append(found)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return ModelDiff(
        a,
        b,
        model_changes=walk.model_changes,
        nodes_added=walk.added,
        nodes_removed=walk.removed,
        nodes_changed=walk.changed,
        tensors_added=walk.tensors_added,
        tensors_removed=walk.tensors_removed,
        tensors_renamed=walk.tensors_renamed,
        tensors_changed=changes,
        tensor_pairs={(p.name_a, p.name_b): p for p in pairs},
        removed_where=walk.removed_where,
        settle=walk.settled,
        atol=atol,
        rtol=rtol,
    )


def _progress(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="tensor", desc="diff")


# -- model fields ---------------------------------------------------------------------
def _dims(info: ValueInfo) -> list[Dim] | None:
    return None if info.shape is None else list(info.shape)


def model_changes(a: Model, b: Model) -> list[tuple[str, Any, Any]]:
    """(field, old, new) for format, IR version, producer, opsets, metadata, inputs, outputs.

    Values are data, not text: an input or output on one side only is ``"defined"`` on
    that side; on both, its type (``"float32"``) and shape (a list of dims, None for an
    unknown rank) are compared as fields of their own (``input x shape``)."""
    found: list[tuple[str, Any, Any]] = []

    def check(name: str, old: Any, new: Any) -> None:
        if old != new:
            found.append((name, old, new))

    check("format", a.format, b.format)
    check("ir_version", a.ir_version, b.ir_version)
    check("producer", f"{a.producer_name} {a.producer_version}".strip(),
          f"{b.producer_name} {b.producer_version}".strip())  # fmt: skip
    check("domain", a.domain, b.domain)
    check("model_version", a.model_version, b.model_version)
    for domain in sorted(set(a.opset_imports) | set(b.opset_imports)):
        check(f"opset {domain or 'ai.onnx'}", a.opset_imports.get(domain),
              b.opset_imports.get(domain))  # fmt: skip
    for key in sorted(set(a.metadata_props) | set(b.metadata_props)):
        check(f"metadata {key}", a.metadata_props.get(key), b.metadata_props.get(key))
    for kind, values_a, values_b in (
        ("input", a.graph.inputs, b.graph.inputs),
        ("output", a.graph.outputs, b.graph.outputs),
    ):
        infos_a = {v.name: v for v in values_a}
        infos_b = {v.name: v for v in values_b}
        for name in [*infos_a, *(n for n in infos_b if n not in infos_a)]:
            info_a, info_b = infos_a.get(name), infos_b.get(name)
            if info_a is None or info_b is None:
                check(f"{kind} {name}", info_a and "defined", info_b and "defined")
                continue
            check(f"{kind} {name} type", info_a.dtype or info_a.type or None,
                  info_b.dtype or info_b.type or None)  # fmt: skip
            check(f"{kind} {name} shape", _dims(info_a), _dims(info_b))
    functions_a = {f.key: f for f in a.functions}
    functions_b = {f.key: f for f in b.functions}
    for function in sorted(set(functions_a) ^ set(functions_b)):
        label = "::".join(k for k in function if k)
        check(f"function {label}", "defined" if function in functions_a else None,
              "defined" if function in functions_b else None)  # fmt: skip
    return found


# -- graphs -----------------------------------------------------------------------------
def _ref(graph: Graph, index: int, op: str | None = None) -> NodeRef:
    """The NodeRef of node ``index`` (``op``: its qualified op, when the caller has it)."""
    node = graph.nodes[index]
    if node.has_file_name:
        return _new_ref(graph.path, node.name, index, op or node.qualified_op)
    stable = stable_name(node)
    return _new_ref(graph.path, node.name, index, op or node.qualified_op,
                    "" if stable == node.name else stable)  # fmt: skip


_SET_REF = tuple(
    getattr(NodeRef, f).__set__ for f in ("graph", "name", "index", "op_type", "stable")
)


def _new_ref(graph: str, name: str, index: int, op_type: str, stable: str = "") -> NodeRef:
    """A NodeRef without the frozen dataclass's __init__ (five object.__setattr__ calls):
    a renamed export makes one per node and side."""
    ref = object.__new__(NodeRef)
    set_graph, set_name, set_index, set_op, set_stable = _SET_REF
    set_graph(ref, graph)
    set_name(ref, name)
    set_index(ref, index)
    set_op(ref, op_type)
    set_stable(ref, stable)
    return ref


class _Stored(Mapping[str, Tensor]):
    """A graph's stored tensors by name (initializers, and sparse ones by their values),
    each made when first looked up; :attr:`types` without making any (a reader's
    :meth:`TensorsOnDemand.types`), read when first asked: matching 30,000 initializers
    by name and comparing their dtypes and shapes made 30,000 tensors (~0.25 s) before,
    and where both readers fingerprint their tensors (:meth:`Graph.initializer_fingerprints`)
    a pair of equal fingerprints needs no types at all."""

    def __init__(self, graph: Graph) -> None:
        dense = graph.initializers
        self._dense = dense
        self._sparse = {name: sparse.values for name, sparse in graph.sparse_initializers.items()}
        self._graph = graph
        self._types: Mapping[str, TensorType] | None = None
        self._names: Set[str] | None = None

    @property
    def types(self) -> Mapping[str, TensorType]:
        """Name → (dtype name, shape) of every stored tensor."""
        if self._types is None:
            dense = self._dense
            types: Mapping[str, TensorType] = (
                dense.types()
                if isinstance(dense, TensorsOnDemand)
                else {name: (t.dtype_name, tuple(t.shape)) for name, t in dense.items()}
            )
            if self._sparse:  # a sparse name also stored dense: the sparse one, as before
                types = dict(types)
                types.update((n, (t.dtype_name, tuple(t.shape))) for n, t in self._sparse.items())
            self._types = types
        return self._types

    def names(self) -> Set[str]:
        """The names, for membership tests at C speed."""
        if self._names is None:
            self._names = frozenset(self)
        return self._names

    def fingerprints(self) -> tuple[str, Mapping[str, Hashable]] | None:
        """The dense tensors' fingerprints (sparse names left out), when the reader has them."""
        found = self._graph.initializer_fingerprints()
        if found is None or not self._sparse:
            return found
        return found[0], {n: f for n, f in found[1].items() if n not in self._sparse}

    def __getitem__(self, name: str) -> Tensor:
        found = self._sparse.get(name)
        return found if found is not None else self._dense[name]

    def __contains__(self, name: object) -> bool:
        return name in self._dense or name in self._sparse

    def __iter__(self) -> Iterator[str]:
        if not self._sparse:
            return iter(self._dense)
        dense = self._dense
        return chain(dense, (n for n in self._sparse if n not in dense))

    def __len__(self) -> int:
        if not self._sparse:
            return len(self._dense)
        return len(self._dense) + sum(n not in self._dense for n in self._sparse)


def _same_types(stored_a: _Stored, stored_b: _Stored, names: list[str]) -> set[str]:
    """The names of ``names`` (stored on both sides) whose two tensors have equal
    fingerprints, hence one dtype and shape; empty when a side has no fingerprints."""
    found_a, found_b = stored_a.fingerprints(), stored_b.fingerprints()
    if found_a is None or found_b is None or found_a[0] != found_b[0]:
        return set()
    get_a, get_b = found_a[1].get, found_b[1].get
    prints = list(map(get_a, names))
    equal = map(and_, map(is_not, prints, repeat(None)), map(eq, prints, map(get_b, names)))
    return set(compress(names, equal))


@dataclass
class _Walk:
    """Both models' graphs, pair by pair: bodies through their matched parent nodes."""

    a: Model
    b: Model
    # Pairs of one dtype and shape compared as stored are not kept: nothing to compare.
    structure_only: bool = False
    model_changes: list[tuple[str, Any, Any]] = field(default_factory=list)
    added: list[NodeRef] = field(default_factory=list)
    removed: list[NodeRef] = field(default_factory=list)
    changed: list[NodeChange] = field(default_factory=list)
    tensors_added: list[str] = field(default_factory=list)
    tensors_removed: list[str] = field(default_factory=list)
    tensors_renamed: list[tuple[str, str]] = field(default_factory=list)
    tensor_pairs: list[TensorPair] = field(default_factory=list)
    settled: _Settled = field(default_factory=lambda: _Settled())
    removed_where: dict[str, list[RemovedNode]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lookup_a, self._lookup_b = ConstantLookup(), ConstantLookup()

    def run(self) -> None:
        self.model_changes = model_changes(self.a, self.b)
        todo: list[tuple[Graph, Graph, MutableMapping[str, str] | None]] = [
            (self.a.graph, self.b.graph, None)
        ]
        functions_b = {f.key: f for f in self.b.functions}
        for function in self.a.functions:
            other = functions_b.get(function.key)
            if other is not None:
                todo.append((function.graph, other.graph, None))
        while todo:
            graph_a, graph_b, outer = todo.pop(0)
            todo.extend(self._graph_pair(graph_a, graph_b, outer))

    def _graph_pair(
        self, ga: Graph, gb: Graph, outer: MutableMapping[str, str] | None
    ) -> Iterator[tuple[Graph, Graph, MutableMapping[str, str]]]:
        stored_a, stored_b = _Stored(ga), _Stored(gb)
        tensors_b2a, ambiguous = self._match_tensors(ga, gb, stored_a, stored_b)
        match = match_nodes(ga, gb, tensors_b2a, outer)
        self._structural_tensors(match, stored_a, stored_b, tensors_b2a)
        if self._quantized_links(match, stored_a, stored_b, tensors_b2a):
            # Matched again with the quantized copies paired: the nodes reading them
            # (a Gather of an embedding, say) now read the same weights on both sides.
            match = match_nodes(ga, gb, tensors_b2a, outer)
            self._structural_tensors(match, stored_a, stored_b, tensors_b2a)
        self._leftover_tensors(ambiguous, tensors_b2a)
        kept = set(tensors_b2a.values())
        self.tensors_removed.extend(name for name in stored_a if name not in kept)
        self.tensors_added.extend(name for name in stored_b if name not in tensors_b2a)
        self._record_nodes(match)
        # Attributes are read only where they hold something: the readers tell which nodes
        # hold bodies without decoding any attribute.
        with_bodies_a, with_bodies_b = ga.nodes_with_bodies(), gb.nodes_with_bodies()
        nodes_a, nodes_b = ga.nodes, gb.nodes
        b2a = match.b2a
        # Only b's Constants and nodes with bodies can hold anything here (not every pair).
        for j in sorted(with_bodies_b.union(_maybe_constants(match.ops_b))):
            i = b2a.get(j)
            if i is None:
                continue
            node_a, node_b = nodes_a[i], nodes_b[j]
            if (
                node_a.op_type == "Constant" == node_b.op_type
                and node_a.outputs and node_b.outputs
            ):  # fmt: skip
                ta = ga.constants().get(node_a.outputs[0])
                tb = gb.constants().get(node_b.outputs[0])
                if ta is not None and tb is not None:
                    self._pair({ta.name: ta}, ta.name, {tb.name: tb}, tb.name, ga, gb)
            if i in with_bodies_a and j in with_bodies_b:
                bodies_b = dict(gb.nodes[j].subgraphs())
                for attr, body_a in ga.nodes[i].subgraphs():
                    body_b = bodies_b.get(attr)
                    if body_b is not None:
                        yield body_a, body_b, match.values_b2a

    def _match_tensors(
        self, ga: Graph, gb: Graph, stored_a: _Stored, stored_b: _Stored
    ) -> tuple[dict[str, str], list[tuple[list[str], list[str], dict[str, str | None]]]]:
        """b name → a name: by name, then by (dtype, shape, content hash) where a content is
        found once on each side. Also returns the groups still ambiguous (same content
        several times: many zero biases), which the node match settles first."""
        shared = list(compress(stored_b, map(stored_a.names().__contains__, stored_b)))
        b2a = dict(zip(shared, shared))
        # With weights=False a pair of one dtype and shape is not kept: equal fingerprints
        # say so without reading either type.
        same = _same_types(stored_a, stored_b, list(b2a)) if self.structure_only else set()
        for name in b2a:
            if name not in same:
                self._pair(stored_a, name, stored_b, name, ga, gb)
        groups: dict[TensorType, tuple[list[str], list[str]]] = {}
        for side, stored in ((0, stored_a), (1, stored_b)):
            unpaired = [name for name in stored if name not in b2a]  # same names both sides
            if unpaired:
                types = stored.types
                for name in unpaired:
                    groups.setdefault(types[name], ([], []))[side].append(name)
        ambiguous = []
        for names_a, names_b in groups.values():
            if not (names_a and names_b):
                continue  # nothing to pair: no hash read
            digests = {n: _digest(stored_a[n]) for n in names_a}
            digests.update({n: _digest(stored_b[n]) for n in names_b})
            by_digest: dict[str | None, tuple[list[str], list[str]]] = {}
            for side, names in ((0, names_a), (1, names_b)):
                for name in names:
                    by_digest.setdefault(digests[name], ([], []))[side].append(name)
            for digest, (found_a, found_b) in by_digest.items():
                if digest is not None and len(found_a) == len(found_b) == 1:
                    b2a[found_b[0]] = found_a[0]
                    self.tensors_renamed.append((found_a[0], found_b[0]))
                elif digest is not None and found_a and found_b:
                    ambiguous.append((found_a, found_b, digests))
        return b2a, ambiguous

    def _structural_tensors(
        self, match: GraphMatch, stored_a: _Stored, stored_b: _Stored, tensors_b2a: dict[str, str]
    ) -> None:
        """Unmatched tensors read (or, in a GraphDef, produced) at the same place by matched
        nodes are one tensor renamed; its values are compared."""
        ga, gb = match.a, match.b
        taken = set(tensors_b2a.values())
        if len(taken) == len(stored_a) or len(tensors_b2a) == len(stored_b):
            return  # every tensor of one side is paired already
        for j, i in sorted(match.b2a.items()):
            node_a, node_b = ga.nodes[i], gb.nodes[j]
            for names_a, names_b in ((node_a.inputs, node_b.inputs),
                                     (node_a.outputs, node_b.outputs)):  # fmt: skip
                for name_a, name_b in zip(names_a, names_b):
                    if (
                        name_a in stored_a and name_a not in taken
                        and name_b in stored_b and name_b not in tensors_b2a
                    ):  # fmt: skip
                        tensors_b2a[name_b] = name_a
                        taken.add(name_a)
                        match.values_b2a[name_b] = name_a
                        match.inputs_checked = False
                        self.tensors_renamed.append((name_a, name_b))
                        self._pair(stored_a, name_a, stored_b, name_b, ga, gb)

    def _leftover_tensors(
        self,
        ambiguous: list[tuple[list[str], list[str], dict[str, str | None]]],
        tensors_b2a: dict[str, str],
    ) -> None:
        """Identical contents nothing else told apart: paired in file order."""
        taken = set(tensors_b2a.values())
        for names_a, names_b, _ in ambiguous:
            free_a = [n for n in names_a if n not in taken]
            for name_b, name_a in zip((n for n in names_b if n not in tensors_b2a), free_a):
                tensors_b2a[name_b] = name_a
                self.tensors_renamed.append((name_a, name_b))

    def _quantized_links(
        self, match: GraphMatch, stored_a: _Stored, stored_b: _Stored, tensors_b2a: dict[str, str]
    ) -> bool:
        """Float weights of one side and their quantized copies on the other, paired through
        the nodes that read them (``_quantized``); whether any was found."""
        taken = set(tensors_b2a.values())
        unpaired_a = [n for n in stored_a if n not in taken]
        unpaired_b = [n for n in stored_b if n not in tensors_b2a]
        unpaired = [stored_a.types[n][0] for n in unpaired_a] if unpaired_a else []
        if unpaired_b:
            unpaired += [stored_b.types[n][0] for n in unpaired_b]
        if all(dtype in REAL for dtype in unpaired):
            return False  # nothing unpaired could be a quantized copy
        found = quantized_pairs(match, stored_a, stored_b, tensors_b2a)
        for link in found:
            tensors_b2a[link.b] = link.a
            match.values_b2a[link.b] = link.a
            match.inputs_checked = False
            self.tensors_renamed.append((link.a, link.b))
            self._pair(stored_a, link.a, stored_b, link.b, match.a, match.b,
                       link.layout_a, link.layout_b)  # fmt: skip
        return bool(found)

    def _pair(
        self,
        side_a: Mapping[str, Tensor],
        name_a: str,
        side_b: Mapping[str, Tensor],
        name_b: str,
        ga: Graph,
        gb: Graph,
        layout_a: tuple[int, ...] | None = None,
        layout_b: tuple[int, ...] | None = None,
    ) -> None:
        type_a, type_b = _type(side_a, name_a), _type(side_b, name_b)
        if type_a[0] == type_b[0] and not (layout_a or layout_b):  # the usual case
            if not (self.structure_only and type_a == type_b):  # else equal, as far as told
                self.tensor_pairs.append(TensorPair(side_a, name_a, side_b, name_b, type_a, type_b))
            return
        dq_a = dq_b = None
        compared = ""
        if type_a[0] != type_b[0]:
            if type_a[0] not in REAL and type_b[0] in REAL:
                dq_a, compared = _dequantization(ga, side_a[name_a], self._lookup_a, "a")
            elif type_b[0] not in REAL and type_a[0] in REAL:
                dq_b, compared = _dequantization(gb, side_b[name_b], self._lookup_b, "b")
        if layout_a or layout_b:
            compared += ", transposed to the other's layout"
        self.tensor_pairs.append(TensorPair(
            side_a, name_a, side_b, name_b, type_a, type_b, dq_a, dq_b, compared, layout_a,
            layout_b,
        ))  # fmt: skip

    def _record_nodes(self, match: GraphMatch) -> None:
        """Added, removed and changed nodes now; which matched pairs were renamed, every
        matched pair and each node's status when first read (:class:`_Settled`): making
        two NodeRefs and a status per pair was a third of a renamed export's diff."""
        ga, gb = match.a, match.b
        nodes_a, nodes_b = ga.nodes, gb.nodes
        b2a = match.b2a
        added = [j for j in range(len(nodes_b)) if j not in b2a]
        self.added.extend(_ref(gb, j) for j in added)
        js = sorted(b2a)
        changed: dict[int, tuple[NodeRef, NodeRef]] = {}
        for j in compress(js, map(not_, _unchanged(match, js))):
            i = b2a[j]
            lines = node_changes(nodes_a[i], nodes_b[j], match.values_b2a)
            if lines:
                # One pair of refs per matched pair, in every list it is in (each is frozen).
                pair = changed[j] = (_ref(ga, i, match.ops_a[i]), _ref(gb, j, match.ops_b[j]))
                self.changed.append(NodeChange(pair[0], pair[1], tuple(lines), len(lines)))
        self.settled.add(match, js, changed)
        a2b = match.a2b
        removed = [i for i in range(len(nodes_a)) if i not in a2b]
        where = self.removed_where.setdefault(gb.path, [])
        if not removed:
            return
        values_a2b = match.values_a2b()
        for i in removed:
            node = nodes_a[i]
            ref = _ref(ga, i)
            self.removed.append(ref)
            outputs = tuple(_replacement(match, out) for out in node.outputs)
            inputs = tuple(values_a2b.get(name, name) for name in node.inputs)
            where.append(RemovedNode(ref, inputs, outputs))


def _unchanged(match: GraphMatch, js: list[int]) -> list[bool]:
    """For each matched pair (b's nodes ``js``), whether it is unchanged as far as can be
    told without building change lines: same op, attributes, output count and inputs (b's
    mapped to a's names). False sends a pair to :func:`node_changes`, which decides."""
    b2a, get = match.b2a, match.values_b2a.get
    ia = list(map(b2a.__getitem__, js))

    def pairs(column_a: list[Any], column_b: list[Any]) -> tuple[list[Any], list[Any]]:
        if ia == js and len(js) == len(column_a) == len(column_b):
            return column_a, column_b  # node i is node i, every node matched
        return list(map(column_a.__getitem__, ia)), list(map(column_b.__getitem__, js))

    same = list(map(eq, *pairs(match.attrs_a, match.attrs_b)))
    ops_a, ops_b = pairs(match.ops_a, match.ops_b)
    outputs_a, outputs_b = pairs(match.outputs_a, match.outputs_b)
    for found in (map(eq, ops_a, ops_b), map(eq, map(len, outputs_a), map(len, outputs_b))):
        same = list(map(and_, same, found))
    if match.inputs_checked and ia == js and "" not in match.values_b2a:
        return same  # the match found every node's inputs equal, mapped as below
    inputs_a, inputs_b = pairs(match.inputs_a, match.inputs_b)
    lengths = list(map(len, inputs_b))
    if list(map(len, inputs_a)) == lengths:  # compared as two flat lists, at C speed
        flat_b = list(chain.from_iterable(inputs_b))
        mapped = list(map(get, flat_b, flat_b))
        flat_a = list(chain.from_iterable(inputs_a))
        if mapped != flat_a:
            owners = list(chain.from_iterable(map(repeat, range(len(js)), lengths)))
            for k in compress(range(len(mapped)), map(ne, mapped, flat_a)):
                same[owners[k]] = False
        return same
    for k, (names_a, names_b) in enumerate(zip(inputs_a, inputs_b)):
        if names_a != tuple([get(n, n) for n in names_b]):
            same[k] = False
    return same


class _Settled:
    """The matched pairs of every graph pair, made into NodeRefs, rename lists and node
    statuses when first read (a renamed export has one pair per node)."""

    def __init__(self) -> None:
        self._graphs: list[tuple[GraphMatch, list[int], dict[int, tuple[NodeRef, NodeRef]]]] = []

    def add(
        self, match: GraphMatch, js: list[int], changed: dict[int, tuple[NodeRef, NodeRef]]
    ) -> None:
        """``js``: b's matched nodes in order; ``changed``: the refs of those changed."""
        self._graphs.append((match, js, changed))

    def __call__(self) -> NodeLists:
        renamed: list[tuple[NodeRef, NodeRef]] = []
        matched: list[tuple[NodeRef, NodeRef]] = []
        status: dict[str, dict[str, str]] = {}
        for match, js, changed in self._graphs:
            ga, gb = match.a, match.b
            nodes_a, nodes_b = ga.nodes, gb.nodes
            b2a, ops_a, ops_b = match.b2a, match.ops_a, match.ops_b
            found = ["added"] * len(nodes_b)
            for j in js:
                i = b2a[j]
                pair = changed.get(j)
                if pair is not None:
                    found[j] = "changed"
                else:
                    pair = (_ref(ga, i, ops_a[i]), _ref(gb, j, ops_b[j]))
                    if _renamed(nodes_a[i], nodes_b[j]):
                        renamed.append(pair)
                        found[j] = "renamed"
                    else:
                        found[j] = "unchanged"
                matched.append(pair)
            status.setdefault(gb.path, {}).update(zip((n.name for n in nodes_b), found))
        self._graphs = []
        return renamed, matched, status


def _maybe_constants(ops: list[str]) -> Iterable[int]:
    """The nodes (by qualified op) whose ``op_type`` may be Constant, in any domain."""
    if any("::" in op for op in set(ops)):
        return (k for k, op in enumerate(ops) if op.endswith("::Constant") or op == "Constant")
    return compress(range(len(ops)), map(eq, ops, repeat("Constant")))


def _type(side: Mapping[str, Tensor], name: str) -> TensorType:
    """(dtype name, shape) of the tensor ``name``, without making it where ``side`` can tell."""
    if isinstance(side, _Stored):
        return side.types[name]
    tensor = side[name]
    return tensor.dtype_name, tuple(tensor.shape)


def _renamed(a: Node, b: Node) -> bool:
    """Whether a matched pair of nodes changed name: nameless on both sides is no rename
    (the reader names them by position; their outputs' names are compared as values)."""
    if a.name == b.name or not (a.has_file_name or b.has_file_name):
        return False
    return stable_name(a) != stable_name(b)


def _replacement(match: GraphMatch, value: str) -> str:
    """What b's matched consumers of a's ``value`` read in its place (else a's name)."""
    return read_in_place(match.a.consumers(value), match.a2b, match.b, value) or value


def _digest(tensor: Tensor) -> str | None:
    try:
        return content_digest(tensor)
    except (ExplorerError, OSError, ValueError):
        return None  # unreadable: left unmatched, listed as added / removed


def _dequantization(
    graph: Graph, tensor: Tensor, lookup: ConstantLookup, side: str
) -> tuple[Dequantizer | None, str]:
    """How the quantized side ``tensor`` is read, and the words that say so."""
    try:
        found = find_dequantization(graph, tensor.name, tuple(tensor.shape), lookup=lookup)
    except (ExplorerError, ValueError) as exc:  # scale unknown or unusable
        return None, f"as stored: {side} {exc}"
    if found is None:
        return None, f"as stored: no consumer of {side}'s {tensor.name!r} dequantizes it"
    return found, f"dequantized: {side} {found.describe()}"
