"""A computation graph (:class:`Graph`): nodes in file order, name-indexed lookups, parts
a reader builds on first use (:class:`GraphParts`, :class:`TensorsOnDemand`)."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ExplorerError
from ..tensors import Tensor
from ._node import Node
from ._support import _NO_SUPPORT
from ._values import Attribute, SparseTensor, ValueInfo

if TYPE_CHECKING:
    # The convenience methods' parameter types, from the layers above (see Graph.to_dot).
    from ..views import ControlEdges, EdgeLabels, Overlay
    from ._model import Model


class GraphParts(Protocol):
    """What a reader hands :meth:`Graph.deferred`: the parts of a graph, each built on first use.

    Opening a large model then costs what parsing it costs; a part is made when
    something first reads it (``graph.nodes``, ``graph.node(name)``, ...).
    """

    def nodes(self, graph: Graph) -> Sequence[Node]:
        """The nodes in file order, their ``index`` and ``graph`` already set."""
        ...

    def node_names(self) -> Sequence[str]:
        """Each node's (unique) name, in file order: what ``nodes()[i].name`` will say."""
        ...

    def values(self) -> tuple[tuple[ValueInfo, ...], tuple[ValueInfo, ...], tuple[ValueInfo, ...]]:
        """(declared inputs, true inputs, outputs)."""
        ...

    def initializers(self) -> Mapping[str, Tensor]: ...

    def sparse_initializers(self) -> Mapping[str, SparseTensor]: ...

    def value_info(self) -> Mapping[str, ValueInfo]: ...


def _load_nodes(graph: Graph, parts: GraphParts) -> None:
    graph.nodes = tuple(parts.nodes(graph))


def _load_index(graph: Graph, parts: GraphParts) -> None:
    graph._by_name = dict(zip(parts.node_names(), graph.nodes, strict=True))


def _load_values(graph: Graph, parts: GraphParts) -> None:
    graph.declared_inputs, graph.inputs, graph.outputs = parts.values()


#: Operators that only hold a value (ONNX ``Constant``, TensorFlow ``Const``).
CONSTANT_OPS = frozenset({"Constant", "Const"})
#: Tensors of at most this many elements are compared by value in attribute digests.
DIGEST_VALUES_MAX = 64


def _attribute_digest(attribute: Attribute) -> Hashable:
    """One attribute as :meth:`Graph.attribute_digests` compares it."""

    def held(value: Any) -> Hashable:
        if isinstance(value, Tensor):
            if value.size > DIGEST_VALUES_MAX or value.is_external:
                return (value.dtype_name, tuple(value.shape))
            try:
                return (value.dtype_name, tuple(value.shape), value.numpy().tobytes())
            except ExplorerError:  # unreadable: known by its type and shape
                return (value.dtype_name, tuple(value.shape))
        if isinstance(value, SparseTensor):
            return ("sparse", held(value.values))
        if isinstance(value, Graph):
            return ("graph", tuple(node.qualified_op for node in value.nodes))
        if isinstance(value, tuple | list):
            return tuple(map(held, value))
        return value if isinstance(value, Hashable) else repr(value)

    return (attribute.name, attribute.kind, held(attribute.value))


def _decoded_fields(graph: Graph) -> frozenset[str]:
    """Node fields a deferred graph has decoded already (a reader's detail; may be empty)."""
    parts = graph.__dict__.get("_parts")
    done = getattr(parts, "decoded_fields", None)
    return frozenset(done()) if done is not None else frozenset()


def _load_initializers(graph: Graph, parts: GraphParts) -> None:
    found = parts.initializers()
    graph.initializers = (
        found if isinstance(found, TensorsOnDemand) else MappingProxyType(dict(found))
    )


class TensorsOnDemand(Mapping[str, Tensor]):
    """A read-only name → tensor mapping whose tensors are made when first looked up.

    A 100,000-node graph has some 50,000 initializers; making every :class:`Tensor`
    costs most of a second, and a first view needs only the names, the element counts
    (:meth:`element_count`, from the shapes alone) and the few tensors it labels.
    """

    def __init__(
        self,
        names: Sequence[str],
        make: Callable[[int], Tensor],
        element_count: Callable[[int], int],
        types: Callable[[], Iterable[tuple[str, tuple[int, ...]]]] | None = None,
        element_counts: Callable[[], Iterable[int]] | None = None,
    ) -> None:
        self._position = dict(zip(names, range(len(names))))  # a repeated name: the last wins
        self._names = names
        self._make = make
        self._count = element_count
        self._types = types
        self._counts = element_counts
        self._counted: Mapping[str, int] | None = None
        self._typed: Mapping[str, tuple[str, tuple[int, ...]]] | None = None
        self._made: dict[str, Tensor] = {}
        self._lock = threading.Lock()  # one Tensor per name, whichever thread asks first

    def __getitem__(self, name: str) -> Tensor:
        tensor = self._made.get(name)
        if tensor is None:
            position = self._position[name]  # KeyError for an unknown name
            with self._lock:
                tensor = self._made.get(name)
                if tensor is None:
                    tensor = self._made[name] = self._make(position)
        return tensor

    def __contains__(self, name: object) -> bool:
        return name in self._position

    def __iter__(self) -> Iterator[str]:
        return iter(self._position)

    def __len__(self) -> int:
        return len(self._position)

    def element_count(self, name: str) -> int:
        """Elements of the tensor ``name`` (its shape's product) without making it."""
        tensor = self._made.get(name)
        return tensor.size if tensor is not None else self._count(self._position[name])

    def element_counts(self) -> Mapping[str, int]:
        """Name → elements of every tensor, from the reader's column when it has one (a
        first view counts the parameters of 50,000 initializers: one C-level pass, not a
        call per name)."""
        if self._counted is None:
            if self._counts is None:
                counted = {name: self.element_count(name) for name in self._position}
            else:  # in file order, like the names: a repeated name's last entry wins
                counted = dict(zip(self._names, self._counts()))
            self._counted = MappingProxyType(counted)
        return self._counted

    def types(self) -> Mapping[str, tuple[str, tuple[int, ...]]]:
        """Name → (dtype name, shape) of every tensor, from the reader's columns when it
        has them (no :class:`Tensor` made: a structure diff of 30,000 initializers compares
        only these), else from the tensors."""
        if self._typed is None:
            if self._types is None:
                typed = {name: (t.dtype_name, tuple(t.shape)) for name, t in self.items()}
            else:  # in file order, like the names: a repeated name's last entry wins
                found = list(self._types())
                one = dict(zip(found, found))  # one object per distinct type: fewer to keep
                typed = dict(zip(self._names, map(one.__getitem__, found)))
            self._typed = MappingProxyType(typed)
        return self._typed


def _load_sparse(graph: Graph, parts: GraphParts) -> None:
    graph.sparse_initializers = MappingProxyType(dict(parts.sparse_initializers()))


def _load_value_info(graph: Graph, parts: GraphParts) -> None:
    graph.value_info = MappingProxyType(dict(parts.value_info()))


# Attribute of a deferred graph → what builds it (on first read; see Graph.__getattr__).
_DEFERRED: dict[str, Callable[[Graph, GraphParts], None]] = {
    "nodes": _load_nodes,
    "_by_name": _load_index,
    "declared_inputs": _load_values,
    "inputs": _load_values,
    "outputs": _load_values,
    "initializers": _load_initializers,
    "sparse_initializers": _load_sparse,
    "value_info": _load_value_info,
}


class Graph:
    """A computation graph: nodes in file order plus name-indexed lookups."""

    def __init__(
        self,
        name: str,
        nodes: list[Node],
        inputs: tuple[ValueInfo, ...],
        outputs: tuple[ValueInfo, ...],
        initializers: Mapping[str, Tensor],
        value_info: Mapping[str, ValueInfo] | None = None,
        doc_string: str = "",
        path: str = "/",
        sparse_initializers: Mapping[str, SparseTensor] | None = None,
        declared_inputs: tuple[ValueInfo, ...] | None = None,
    ) -> None:
        self._init_common(name, path, doc_string)
        self.nodes: tuple[Node, ...] = tuple(nodes)
        self.inputs = inputs  # true inputs: not backed by an initializer
        self.declared_inputs = declared_inputs if declared_inputs is not None else inputs
        self.outputs = outputs
        # Tensors a reader makes on first lookup stay so (dict() would make every one).
        self.initializers: Mapping[str, Tensor] = (
            initializers
            if isinstance(initializers, TensorsOnDemand)
            else MappingProxyType(dict(initializers))
        )
        self.sparse_initializers: Mapping[str, SparseTensor] = MappingProxyType(
            dict(sparse_initializers or {})
        )
        self.value_info: Mapping[str, ValueInfo] = MappingProxyType(dict(value_info or {}))
        self._by_name: dict[str, Node] = {}
        for i, node in enumerate(self.nodes):
            node.index = i
            node.graph = self
            self._by_name[node.name] = node

    def _init_common(self, name: str, path: str, doc_string: str) -> None:
        self.name = name
        self.path = path
        self.doc_string = doc_string
        self.parent: Node | None = None  # the If/Loop/Scan node owning this body
        self._model: Model | None = None
        self._parts: GraphParts | None = None  # set by deferred()
        self._lock: threading.RLock | None = None
        self._producers: dict[str, Node] | None = None
        self._constants: dict[str, Tensor] | None = None
        self._consumers: dict[str, list[Node]] | None = None

    @classmethod
    def deferred(
        cls, name: str, parts: GraphParts, *, doc_string: str = "", path: str = "/"
    ) -> Graph:
        """A graph whose nodes, values and tensors ``parts`` builds on first read (readers)."""
        graph = cls.__new__(cls)
        graph._init_common(name, path, doc_string)
        graph._parts = parts
        graph._lock = threading.RLock()
        return graph

    if not TYPE_CHECKING:  # mypy keeps checking attribute names as declared in __init__

        def __getattr__(self, name: str) -> Any:
            # Reached only for attributes not set yet: the parts of a deferred graph.
            load = _DEFERRED.get(name)
            parts = self.__dict__.get("_parts")
            if load is None or parts is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            with self.__dict__["_lock"]:
                if name not in self.__dict__:
                    load(self, parts)
            return self.__dict__[name]

    def nodes_with_bodies(self) -> frozenset[int]:
        """Indices of the nodes holding If/Loop/Scan bodies (GRAPH or GRAPHS attributes).

        A deferred graph answers from the parsed file without decoding any attribute.
        """
        parts = self.__dict__.get("_parts")
        quick = getattr(parts, "nodes_with_bodies", None)
        if quick is not None and "attributes" not in _decoded_fields(self):
            return frozenset(quick())
        return frozenset(node.index for node in self.nodes if node.subgraphs())

    def attribute_digests(self) -> list[Hashable]:
        """Per node, a value that is equal for two nodes exactly when their attributes are
        equal: None for a node without attributes and for a constant (``Constant``,
        ``Const``: its value is a weight, known by its size from
        :meth:`constant_element_counts`). A tensor held by another operator compares by
        type and shape, and by value when small. A deferred graph answers from the parsed
        file without decoding any attribute."""
        parts = self.__dict__.get("_parts")
        quick = getattr(parts, "attribute_digests", None)
        if quick is not None and "attributes" not in _decoded_fields(self):
            return list(quick())
        return [
            tuple(map(_attribute_digest, node.attributes.values()))
            if node.attributes and node.op_type not in CONSTANT_OPS
            else None
            for node in self.nodes
        ]

    def attribute_fingerprints(self) -> tuple[str, list[Hashable | None]] | None:
        """(scheme, per node a value equal for two nodes only when their attributes are
        equal), for comparing nodes of two graphs whose schemes are equal, without decoding
        attributes: ``()`` for a node without attributes, None for a node the reader cannot
        vouch for without decoding it (one holding a tensor, whose bytes may be elsewhere in
        its file). Equal attributes written differently (in another order, with another
        doc string) may differ. None when the reader has no such (or the attributes are
        decoded already): compare the decoded attributes."""
        parts = self.__dict__.get("_parts")
        quick = getattr(parts, "attribute_fingerprints", None)
        if quick is None or "attributes" in _decoded_fields(self):
            return None
        found: tuple[str, list[Hashable | None]] = quick()
        return found

    def initializer_fingerprints(self) -> tuple[str, Mapping[str, Hashable]] | None:
        """(scheme, initializer name → a value equal for two tensors only when their dtypes
        and shapes are), for graphs whose schemes are equal, without making any tensor: the
        ONNX reader's serialized tensors. Equal values say nothing about the contents (a
        payload read from elsewhere stands there as a marker); sparse initializers are not
        covered. None when the reader has none."""
        parts = self.__dict__.get("_parts")
        quick = getattr(parts, "initializer_fingerprints", None)
        dense = self.initializers
        if quick is None or not isinstance(dense, TensorsOnDemand):
            return None
        scheme, found = quick()
        return scheme, dict(zip(dense._names, found))  # a repeated name: the last wins

    def constant_element_counts(self, indices: Iterable[int]) -> dict[int, int]:
        """Elements of the first tensor attribute of each node in ``indices`` (a Constant's
        value), without decoding attributes where the reader can tell from the file."""
        parts = self.__dict__.get("_parts")
        quick = getattr(parts, "constant_element_counts", None)
        if quick is not None and "attributes" not in _decoded_fields(self):
            return dict(quick(indices))
        counts: dict[int, int] = {}
        for i in indices:
            found = self.nodes[i].tensors()
            if found:
                counts[i] = found[0][1].size
        return counts

    @property
    def model(self) -> Model | None:
        """The model holding this graph (an If/Loop/Scan body: its parent node's model)."""
        if self._model is None and self.parent is not None and self.parent.graph is not None:
            return self.parent.graph.model
        return self._model

    @model.setter
    def model(self, model: Model | None) -> None:
        self._model = model

    def __repr__(self) -> str:
        return f"<Graph {self.path!r} {len(self.nodes)} nodes>"

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, name: str) -> Node:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no node named {name!r} in graph {self.path!r}") from None

    def has_node(self, name: str) -> bool:
        return name in self._by_name

    def _index(self) -> None:
        producers: dict[str, Node] = {}
        consumers: dict[str, list[Node]] = {}
        for node in self.nodes:
            for out in node.outputs:
                if out:
                    producers.setdefault(out, node)
            for inp in node.inputs:
                if inp:
                    consumers.setdefault(inp, []).append(node)
        self._producers, self._consumers = producers, consumers

    def producer(self, tensor_name: str) -> Node | None:
        """The node producing ``tensor_name``; None for inputs, initializers, outer values."""
        if self._producers is None:
            self._index()
        assert self._producers is not None
        return self._producers.get(tensor_name)

    def consumers(self, tensor_name: str) -> tuple[Node, ...]:
        """Nodes of this graph reading ``tensor_name``, in file order."""
        if self._consumers is None:
            self._index()
        assert self._consumers is not None
        return tuple(self._consumers.get(tensor_name, ()))

    def op_counts(self) -> dict[str, int]:
        """Operator type → number of nodes, most frequent first."""
        return dict(Counter(n.qualified_op for n in self.nodes).most_common())

    def value(self, name: str) -> ValueInfo | None:
        """Type information for a value name, from inputs, outputs, value_info or initializers."""
        for info in self.declared_inputs:
            if info.name == name:
                return info
        for info in self.outputs:
            if info.name == name:
                return info
        if name in self.value_info:
            return self.value_info[name]
        tensor = self.initializers.get(name)
        if tensor is not None:
            return ValueInfo(name, tensor.dtype_name, tensor.dtype_name, tensor.shape)
        return None

    # -- drawing: the work is in views, above the model ---------------------------------
    # These methods import ``views`` when called: an upward edge, allowed by name in
    # pyproject.toml's import contracts (the convenience edges). Their parameters are
    # build_dot's, copied so that IDEs show them (tests/core/test_public_api.py keeps
    # the copies equal).
    def to_dot(
        self,
        *,
        expanded: Iterable[str] | str | None = None,
        focus: str | None = None,
        hops: int = 2,
        max_nodes: int = 800,
        edge_labels: EdgeLabels = "both",
        first_view_nodes: int = 300,
        infer_shapes: bool | None = None,
        control_edges: ControlEdges = "auto",
        overlay: Overlay | None = None,
        fold_steps: Mapping[str, int] | None = None,
    ) -> str:
        """DOT source of this graph's view: see :func:`onnx_explorer.views.build_dot`."""
        from ..views import build_dot

        return build_dot(
            self,
            self.model,
            expanded=expanded,
            focus=focus,
            hops=hops,
            max_nodes=max_nodes,
            edge_labels=edge_labels,
            first_view_nodes=first_view_nodes,
            infer_shapes=infer_shapes,
            control_edges=control_edges,
            overlay=overlay,
            fold_steps=fold_steps,
        ).source

    def render_svg(
        self,
        *,
        timeout: float = 60.0,
        expanded: Iterable[str] | str | None = None,
        focus: str | None = None,
        hops: int = 2,
        max_nodes: int = 800,
        edge_labels: EdgeLabels = "both",
        first_view_nodes: int = 300,
        infer_shapes: bool | None = None,
        control_edges: ControlEdges = "auto",
        overlay: Overlay | None = None,
        fold_steps: Mapping[str, int] | None = None,
    ) -> str:
        """SVG of this graph's view, drawn by Graphviz within ``timeout`` seconds (the
        other parameters as :meth:`to_dot`)."""
        from ..views import build_dot, svg_from_result

        result = build_dot(
            self,
            self.model,
            expanded=expanded,
            focus=focus,
            hops=hops,
            max_nodes=max_nodes,
            edge_labels=edge_labels,
            first_view_nodes=first_view_nodes,
            infer_shapes=infer_shapes,
            control_edges=control_edges,
            overlay=overlay,
            fold_steps=fold_steps,
        )
        return svg_from_result(result, timeout=timeout)

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 60.0,
        expanded: Iterable[str] | str | None = None,
        focus: str | None = None,
        hops: int = 2,
        max_nodes: int = 800,
        edge_labels: EdgeLabels = "both",
        first_view_nodes: int = 300,
        infer_shapes: bool | None = None,
        control_edges: ControlEdges = "auto",
        overlay: Overlay | None = None,
        fold_steps: Mapping[str, int] | None = None,
    ) -> Path:
        """Write the view to ``path``: ``.svg``, ``.png`` or ``.dot``, chosen by the suffix
        (the other parameters as :meth:`render_svg`)."""
        from ..views import build_dot, save_result

        result = build_dot(
            self,
            self.model,
            expanded=expanded,
            focus=focus,
            hops=hops,
            max_nodes=max_nodes,
            edge_labels=edge_labels,
            first_view_nodes=first_view_nodes,
            infer_shapes=infer_shapes,
            control_edges=control_edges,
            overlay=overlay,
            fold_steps=fold_steps,
        )
        return save_result(result, path, timeout)

    def constants(self) -> dict[str, Tensor]:
        """Output name → value of Constant nodes (many exporters keep all weights there),
        as the model's format decodes them (:meth:`FormatSupport.constants`).

        ONNX covers ``value`` and ``sparse_value`` and the list forms ``value_float(s)``,
        ``value_int(s)`` and ``value_string(s)``; computed once per graph. A Constant whose
        value attribute is missing, repeated or of the wrong kind gives a tensor whose
        reading raises :class:`~onnx_explorer.errors.TensorDataError`: one broken node
        never breaks the summary, the report or the explorer.
        """
        if self._constants is None:
            model = self.model  # the format decodes them (ONNX: readers/onnx/_constants.py)
            support = model.support if model is not None else _NO_SUPPORT
            self._constants = support.constants(self)
        return self._constants
