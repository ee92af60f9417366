"""Format-neutral, read-only description of a model: graphs, nodes, values, tensors.

Readers (``readers/``) build these objects; views, widgets and the command line
read them. Nothing here knows about protobuf or any file format.
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, get_args

from .errors import ExplorerError, ModelFormatError
from .tensors import Tensor

if TYPE_CHECKING:
    from .external_data import DataFiles

    # The convenience methods' parameter types, from the layers above (see Graph.to_dot).
    from .views import ControlEdges, EdgeLabels, Overlay
    from .weights import Stop

__all__ = [
    "ATTRIBUTE_KINDS",
    "INFER_AUTO_MAX_NODES",
    "SCOPE_DEPTH_MAX",
    "Attribute",
    "AttributeKind",
    "Dim",
    "FormatSupport",
    "Function",
    "Graph",
    "GraphParts",
    "InferredTypes",
    "Model",
    "ModelFormat",
    "Node",
    "SparseTensor",
    "TensorsOnDemand",
    "TypeInference",
    "ValueInfo",
    "WeightKind",
    "WeightRef",
    "attribute_kind",
    "location_name",
    "scope_parts",
]

Dim = int | str | None  # a fixed size, a symbolic name ("batch"), or unknown

#: The file formats a reader can make a model of (``Model.format``; one per reader row).
ModelFormat = Literal["onnx", "graphdef", "safetensors", "gguf", "tflite"]
#: Where a weight sits (``WeightRef.kind``).
WeightKind = Literal["initializer", "sparse_initializer", "constant", "attribute"]
#: An attribute's type (``Attribute.kind``): ONNX ``AttributeProto`` types, GraphDef
#: ``AttrValue`` fields (``BOOL``, ``TYPE``, ``SHAPE``, ``FUNC``, ``PLACEHOLDER``, their lists,
#: ``LIST`` for an empty list) and ``UNDEFINED`` for a value no reader could tell.
AttributeKind = Literal[
    "UNDEFINED",
    "FLOAT",
    "INT",
    "STRING",
    "BOOL",
    "TENSOR",
    "GRAPH",
    "SPARSE_TENSOR",
    "TYPE_PROTO",
    "TYPE",
    "SHAPE",
    "FUNC",
    "PLACEHOLDER",
    "FLOATS",
    "INTS",
    "STRINGS",
    "BOOLS",
    "TENSORS",
    "GRAPHS",
    "SPARSE_TENSORS",
    "TYPE_PROTOS",
    "TYPES",
    "SHAPES",
    "FUNCS",
    "LIST",
]
ATTRIBUTE_KINDS: frozenset[str] = frozenset(get_args(AttributeKind))


def attribute_kind(name: str) -> AttributeKind:
    """``name`` as an :data:`AttributeKind`; ``UNDEFINED`` for a name outside the vocabulary
    (readers pass the type names a file declares through here)."""
    return name if _is_attribute_kind(name) else "UNDEFINED"


def _is_attribute_kind(name: str) -> TypeGuard[AttributeKind]:
    return name in ATTRIBUTE_KINDS


@dataclass(frozen=True)
class ValueInfo:
    """A named value's type; ``type`` reads like ``float32`` or ``seq(map(int64, float32))``."""

    name: str
    type: str = ""  # "" when the file does not say
    dtype: str | None = None  # element type for tensors ("float32"), else None
    shape: tuple[Dim, ...] | None = None  # None: rank unknown
    doc_string: str = ""


@dataclass(frozen=True)
class SparseTensor:
    """A sparse tensor: non-zero ``values`` at ``indices`` of a dense ``shape``."""

    values: Tensor
    indices: Tensor
    shape: tuple[int, ...]

    @property
    def name(self) -> str:
        return self.values.name


@dataclass(frozen=True)
class Attribute:
    """One node attribute, decoded.

    ``kind`` is the attribute type name (``FLOAT``, ``INTS``, ``TENSOR``, ``GRAPH``,
    ``TYPE_PROTO``...); ``value`` is a Python value, a :class:`Tensor`, a
    :class:`Graph`, a :class:`SparseTensor`, a readable type string, or a tuple of those.
    """

    name: str
    kind: AttributeKind
    value: Any
    doc_string: str = ""
    ref_attr_name: str = ""  # inside a function: refers to the caller's attribute


#: The empty mapping every node without metadata shares (one object, not one per node).
_NO_METADATA: Mapping[str, str] = MappingProxyType({})


class Node:
    """One operator application.

    ``metadata_props`` holds the file's free-form key → value notes on the node (ONNX
    ``NodeProto.metadata_props``: PyTorch's exporter writes ``pkg.torch.onnx.name_scopes``,
    ``pkg.torch.onnx.class_hierarchy`` and ``pkg.torch.onnx.stack_trace`` there).
    """

    __slots__ = (
        "attributes",
        "control_inputs",
        "device",
        "doc_string",
        "domain",
        "graph",
        "has_file_name",
        "index",
        "inputs",
        "metadata_props",
        "name",
        "op_type",
        "outputs",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        op_type: str,
        domain: str = "",
        inputs: tuple[str, ...] = (),
        outputs: tuple[str, ...] = (),
        attributes: Mapping[str, Attribute] | None = None,
        doc_string: str = "",
        control_inputs: tuple[str, ...] = (),
        device: str = "",
        has_file_name: bool = True,
        metadata_props: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.op_type = op_type
        self.domain = domain
        self.inputs = inputs  # "" marks an omitted optional input
        self.outputs = outputs
        self.attributes: Mapping[str, Attribute] = MappingProxyType(dict(attributes or {}))
        self.doc_string = doc_string
        self.control_inputs = control_inputs  # GraphDef "^name" ordering edges
        self.device = device
        self.has_file_name = has_file_name  # False: ``name`` was made up by the reader
        self.metadata_props: Mapping[str, str] = (
            MappingProxyType(dict(metadata_props)) if metadata_props else _NO_METADATA
        )
        self.index = -1  # position in the graph, set by Graph
        self.graph: Graph | None = None

    def __repr__(self) -> str:
        return f"<Node {self.name!r} {self.qualified_op}>"

    @property
    def qualified_op(self) -> str:
        return (
            f"{self.domain}::{self.op_type}" if self.domain not in ("", "ai.onnx") else self.op_type
        )

    def subgraphs(self) -> list[tuple[str, Graph]]:
        """(attribute name, graph) for GRAPH and GRAPHS attributes (If/Loop/Scan bodies)."""
        found: list[tuple[str, Graph]] = []
        for attr in self.attributes.values():
            if attr.kind == "GRAPH":
                found.append((attr.name, attr.value))
            elif attr.kind == "GRAPHS":
                found.extend((f"{attr.name}[{i}]", g) for i, g in enumerate(attr.value))
        return found

    def tensors(self) -> list[tuple[str, Tensor]]:
        """(attribute name, tensor) for TENSOR / TENSORS / SPARSE_TENSOR attributes."""
        found: list[tuple[str, Tensor]] = []
        for attr in self.attributes.values():
            if attr.kind == "TENSOR":
                found.append((attr.name, attr.value))
            elif attr.kind == "TENSORS":
                found.extend((f"{attr.name}[{i}]", t) for i, t in enumerate(attr.value))
            elif attr.kind == "SPARSE_TENSOR":
                found.append((attr.name, attr.value.values))
            elif attr.kind == "SPARSE_TENSORS":
                found.extend((f"{attr.name}[{i}]", s.values) for i, s in enumerate(attr.value))
        return found


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
    ) -> None:
        self._position = dict(zip(names, range(len(names))))  # a repeated name: the last wins
        self._names = names
        self._make = make
        self._count = element_count
        self._types = types
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
        from .views import build_dot

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
        from .views import build_dot, svg_from_result

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
        from .views import build_dot, save_result

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


@dataclass(frozen=True)
class Function:
    """A model-local function: an operator defined by a graph of other operators."""

    name: str
    domain: str
    graph: Graph
    attribute_names: tuple[str, ...] = ()
    attribute_defaults: Mapping[str, Attribute] = field(default_factory=dict)
    opset_imports: Mapping[str, int] = field(default_factory=dict)
    overload: str = ""
    doc_string: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.domain, self.name, self.overload)


@dataclass(frozen=True)
class WeightRef:
    """A weight tensor and where it sits: an initializer, a Constant node or an attribute."""

    graph: Graph
    tensor: Tensor
    kind: WeightKind
    node: Node | None = None


#: Deepest scope nesting taken from a node name (``/model/layers.3/attn/MatMul``):
#: components past this many stay in the node's own name. Every scope stores its full
#: path, so an uncapped name of N components cost N² bytes (60,000 components: 5 GB);
#: no exporter nests modules anywhere near this deep.
SCOPE_DEPTH_MAX = 64

_SCOPE_PART = re.compile("[^/]+")


def scope_parts(prefix: str) -> list[str]:
    """The scope components of a name prefix: its non-empty parts, at most SCOPE_DEPTH_MAX.

    Scans only as far as it needs, at C speed: a 1 MB name of parts or of bare ``/``
    costs one pass, not a list of every part. The explorer's scope tree and
    :func:`onnx_explorer.metrics` both group by it.
    """
    return [m.group() for m in islice(_SCOPE_PART.finditer(prefix), SCOPE_DEPTH_MAX)]


#: Inference runs by itself (callers' ``infer=None``) on graphs of at most this many
#: nodes: it costs about 1.2 s per 100,000 nodes here (plus 0.3-0.5 s, once per Python
#: process, to start the worker process it runs in), too much to put before a first view.
INFER_AUTO_MAX_NODES = 50_000


@dataclass(frozen=True)
class InferredTypes:
    """Value types found by the file format's own inference (ONNX shape inference).

    A model's reader provides the inference (:attr:`Model.type_inference`); views
    read the result here and never touch the format.
    """

    types: Mapping[int, Mapping[str, ValueInfo]]  # id(graph) → value name → type
    error: str | None = None  # why inference found nothing (it never raises)
    # Inside model-local functions, per call: (id(calling graph), call node name) →
    # value name → type (one function body serves calls of every size).
    calls: Mapping[tuple[int, str], Mapping[str, ValueInfo]] = field(default_factory=dict)


def _shapes_key(
    input_shapes: Mapping[str, Sequence[int]],
) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Input shapes as a hashable key of the type caches (and as the mapping they were)."""
    return tuple(sorted((k, tuple(v)) for k, v in input_shapes.items()))


class TypeInference(Protocol):
    """A reader's type inference: every graph's value types, the inputs bound to
    ``input_shapes`` when given (never raises)."""

    def __call__(
        self, model: Model, input_shapes: Mapping[str, tuple[int, ...]] | None
    ) -> InferredTypes: ...


class FormatSupport:
    """What views, widgets and runs may ask of a model's file format; its reader answers.

    Every :class:`Model` carries one (:attr:`Model.support`), set by the reader. This base
    answers "the format has none of it"; a reader subclasses it for what its format has
    (ONNX: ``readers/onnx/_support.py``). Code above the readers asks here what a format
    can do, never ``model.format`` (the format's display name) nor the format's library.
    """

    #: The format's own type inference (ONNX shape inference), None when it has none.
    type_inference: TypeInference | None = None
    #: Operators are named by domain and type (ONNX), not by type alone (TensorFlow).
    has_op_domains: bool = False
    #: The name of the format's validity checker (``"onnx.checker"``), None without one.
    checker: str | None = None
    #: onnxruntime can run the model (:meth:`runtime_model`).
    runnable: bool = False

    def check(self, model: Model) -> str:
        """The checker's verdict as one paragraph (never raises)."""
        return f"{model.format} models have no checker."

    def input_slot_names(self, domain: str, op_type: str) -> tuple[str, ...] | None:
        """Names of an operator's input slots (``("A", "B")`` for ONNX MatMul), None if
        the format does not say."""
        return None

    def constants(self, graph: Graph) -> dict[str, Tensor]:
        """Output name → value of the graph's constant-producing nodes whose value is an
        attribute (ONNX ``Constant``); a broken one gives a tensor whose reading raises."""
        return {}

    def weight_note(self, model: Model, tensor_name: str) -> str | None:
        """A note on how a weight is laid out (TensorFlow: ``"HWIO ..."``), if any."""
        return None

    def runtime_model(self, model: Model) -> tuple[Any, Path | None]:
        """(the model as onnxruntime takes it, with every payload; the directory its
        external data is in). Raises :class:`~onnx_explorer.errors.ModelFormatError`
        when the model cannot be run."""
        raise ModelFormatError(
            f"{model.format} models cannot be run: onnxruntime runs ONNX models only"
        )


_NO_SUPPORT = FormatSupport()


class Model:
    """A model file opened read-only. Build one with :func:`onnx_explorer.load`."""

    def __init__(
        self,
        graph: Graph,
        *,
        format: ModelFormat,
        path: Path | None = None,
        ir_version: int | None = None,
        opset_imports: Mapping[str, int] | None = None,
        producer_name: str = "",
        producer_version: str = "",
        domain: str = "",
        model_version: int | None = None,
        doc_string: str = "",
        metadata_props: Mapping[str, str] | None = None,
        functions: tuple[Function, ...] = (),
        data_files: DataFiles | None = None,
        support: FormatSupport | None = None,
    ) -> None:
        self.graph = graph
        self.format: ModelFormat = format
        self.path = path
        self.ir_version = ir_version
        self.opset_imports: Mapping[str, int] = MappingProxyType(dict(opset_imports or {}))
        self.producer_name = producer_name
        self.producer_version = producer_version
        self.domain = domain
        self.model_version = model_version
        self.doc_string = doc_string
        self.metadata_props: Mapping[str, str] = MappingProxyType(dict(metadata_props or {}))
        self.functions = functions
        self._functions_by_key = {(f.domain, f.name): f for f in functions}
        self._data_files = data_files
        # What views, widgets and runs may ask of the file format (set by the reader).
        self.support = support if support is not None else _NO_SUPPORT
        # The format's own type inference (slow: see inferred_types()); None switches it off.
        self.type_inference = self.support.type_inference
        self._inferred: InferredTypes | None = None
        self._inferred_bound: dict[tuple[Any, ...], InferredTypes] = {}
        self._observed: dict[tuple[Any, ...], InferredTypes] = {}
        self._observing = threading.Lock()
        # Input sizes the user chose for this model (see bind() and onnx_explorer.bindings).
        self.bound_dims: Mapping[str, int] = MappingProxyType({})
        self.bound_input_shapes: Mapping[str, tuple[int, ...]] = MappingProxyType({})
        self._inferring = threading.Lock()
        self._graphs: dict[str, Graph] | None = None
        for g in _built_graphs([graph, *(f.graph for f in functions)]):
            g.model = self  # bodies built later find it through their parent node

    def __repr__(self) -> str:
        where = f" {self.path.name!r}" if self.path else ""
        return f"<Model{where} {self.format} {len(self.graph.nodes)} nodes>"

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Unmap data files (arrays still referring to them keep their map alive)."""
        if self._data_files is not None:
            self._data_files.close()

    def inferred_types(
        self, input_shapes: Mapping[str, tuple[int, ...]] | None = None
    ) -> InferredTypes:
        """The format's type inference over every graph, run once per model and per set of
        input shapes (never raises).

        ``input_shapes`` (input name → concrete shape, see :mod:`onnx_explorer.bindings`)
        binds the inputs first, so derived sizes propagate as numbers. The drawing's layout
        thread, the attribute panel and :func:`onnx_explorer.metrics` all ask here: a
        second caller waits for the run under way (bounded by the reader's time limit)
        instead of starting another.
        """
        if input_shapes:
            key = _shapes_key(input_shapes)
            with self._inferring:
                found = self._inferred_bound.get(key)
                if found is None:
                    found = (
                        InferredTypes({}, f"no shape inference for {self.format} models")
                        if self.type_inference is None
                        else self.type_inference(self, dict(key))
                    )
                    if len(self._inferred_bound) >= 8:  # a few bindings, not every one tried
                        self._inferred_bound.pop(next(iter(self._inferred_bound)))
                    self._inferred_bound[key] = found
                return found
        found = self._inferred
        if found is not None:
            return found
        with self._inferring:
            if self._inferred is None:
                self._inferred = (
                    InferredTypes({}, f"no shape inference for {self.format} models")
                    if self.type_inference is None
                    else self.type_inference(self, None)
                )
            return self._inferred

    @property
    def has_inferred_types(self) -> bool:
        """True once :meth:`inferred_types` has run (asking is free from then on)."""
        return self._inferred is not None

    def bind(
        self,
        dims: Mapping[str, int] | None = None,
        input_shapes: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        """Choose the sizes of the inputs' symbolic dims for every view of this model: edge
        labels, the attribute panel, :func:`onnx_explorer.metrics` and overlays (a call's own
        ``dims=`` still wins). ``dims``: symbol → size (``{"batch": 8, "height": 320}``);
        ``input_shapes``: input name → whole shape, for inputs declared ``?`` or ``-1``.
        Checked when first used (:func:`onnx_explorer.bindings.bind_inputs`)."""
        self.bound_dims = MappingProxyType(dict(dims or {}))
        self.bound_input_shapes = MappingProxyType(
            {str(k): tuple(v) for k, v in (input_shapes or {}).items()}
        )

    def observed_types(self, input_shapes: Mapping[str, tuple[int, ...]]) -> InferredTypes:
        """The main graph's value types seen in one onnxruntime run on generated inputs of
        ``input_shapes`` (needs ``onnx_explorer[run]``): the reference where shape
        inference stops. One run at a time, the last few kept. Never raises: an
        ``error`` says why there are none."""
        key = _shapes_key(input_shapes)
        with self._observing:  # a second caller waits for the run under way
            found = self._observed.get(key)
            if found is None:
                found = self._run_for_types(dict(key))
                if len(self._observed) >= 4:
                    self._observed.pop(next(iter(self._observed)))
                self._observed[key] = found
            return found

    def _run_for_types(self, input_shapes: Mapping[str, tuple[int, ...]]) -> InferredTypes:
        if not self.support.runnable:
            return InferredTypes({}, f"no onnxruntime run for {self.format} models")
        try:  # a convenience edge up to runs (see pyproject.toml)
            from .runs import observed_shapes
        except ImportError as exc:  # onnx missing: nothing to run
            return InferredTypes({}, f"no run: {exc}")
        try:
            found = observed_shapes(self, input_shapes)
        except (ExplorerError, MemoryError, ValueError, OSError) as exc:
            # onnxruntime missing, the run failed or timed out, absurd sizes
            lines = str(exc).splitlines()
            return InferredTypes({}, lines[0] if lines else type(exc).__name__)
        return InferredTypes({id(self.graph): found})

    def function(self, domain: str, name: str) -> Function | None:
        return self._functions_by_key.get((domain, name))

    def function_for(self, node: Node) -> Function | None:
        """The local function a node calls, if any: by its op type, or for TensorFlow's
        ``PartitionedCall``/``StatefulPartitionedCall`` by its ``f`` (FUNC) attribute."""
        found = self._functions_by_key.get((node.domain, node.op_type))
        call = node.attributes.get("f")
        if found is None and call is not None and call.kind == "FUNC":
            found = self._functions_by_key.get(("", getattr(call.value, "name", "")))
        return found

    def graphs(self, include_functions: bool = True) -> Iterator[Graph]:
        """Every graph: the main one, If/Loop/Scan bodies at any depth, and function bodies."""
        roots = [self.graph]
        if include_functions:
            roots += [f.graph for f in self.functions]
        for root in roots:
            yield from _walk_graphs(root)

    def graph_at(self, path: str) -> Graph:
        """The graph with this path (see :attr:`Graph.path`)."""
        if self._graphs is None:
            self._graphs = {g.path: g for g in self.graphs()}
        try:
            return self._graphs[path]
        except KeyError:
            raise KeyError(f"no graph at path {path!r}") from None

    def weights(self) -> Iterator[WeightRef]:
        """Every stored tensor: initializers, Constant values, tensor attributes; all graphs."""
        seen: set[int] = set()  # a GraphDef Const's tensor is both an initializer and an attribute
        for graph in self.graphs():
            for tensor in graph.initializers.values():
                seen.add(id(tensor))
                yield WeightRef(graph, tensor, "initializer")
            for sparse in graph.sparse_initializers.values():
                yield WeightRef(graph, sparse.values, "sparse_initializer")
            constants = graph.constants()
            for node in graph.nodes:
                if node.op_type == "Constant" and node.outputs and node.outputs[0] in constants:
                    yield WeightRef(graph, constants[node.outputs[0]], "constant", node)
                    continue
                for _, tensor in node.tensors():
                    if id(tensor) in seen:
                        continue
                    kind: WeightKind = (
                        "constant" if node.op_type in ("Constant", "Const") else "attribute"
                    )
                    yield WeightRef(graph, tensor, kind, node)

    def weights_report(
        self,
        *,
        progress: bool = True,
        sort: str | None = None,
        stop: Stop = None,
        dequantize: bool = False,
        outlier_sigma: float = 50.0,
        as_list: bool = False,
        weights: Iterable[WeightRef] | None = None,
    ) -> Any:
        """Statistics and flags of every weight, one row per tensor (a DataFrame with pandas,
        else a list of dicts): see :func:`onnx_explorer.weights.weights_report`."""
        from .weights import weights_report  # a convenience edge up (see pyproject.toml)

        return weights_report(
            self,
            progress=progress,
            sort=sort,
            stop=stop,
            dequantize=dequantize,
            outlier_sigma=outlier_sigma,
            as_list=as_list,
            weights=weights,
        )

    @property
    def nodes_total(self) -> int:
        return sum(len(g.nodes) for g in self.graphs())


def _built_graphs(roots: list[Graph]) -> Iterator[Graph]:
    """``roots`` and the bodies under them that exist already (a deferred graph makes its
    bodies when its nodes' attributes are first read)."""
    stack = list(roots)
    while stack:
        current = stack.pop()
        yield current
        if current._parts is None:
            stack.extend(g for node in current.nodes for _, g in node.subgraphs())


def _walk_graphs(graph: Graph) -> Iterator[Graph]:
    stack = [graph]
    while stack:
        current = stack.pop()
        yield current
        # Only the nodes that hold bodies: asking every node would decode every attribute.
        nodes = current.nodes
        children = [g for i in sorted(current.nodes_with_bodies()) for _, g in nodes[i].subgraphs()]
        stack.extend(reversed(children))


def location_name(kind: str, holder: str = "initializer") -> str:
    """Where a weight's bytes are, in the words every view uses: ``external`` (a data file
    next to the model), ``in attribute`` (a Constant node's value or another tensor
    attribute) or ``embedded`` (inside the model file or the in-memory model).

    ``kind`` is a :class:`~onnx_explorer.tensors.TensorLocation` kind and ``holder`` a
    :class:`~onnx_explorer.model.WeightRef` kind.
    """
    if kind == "external":
        return "external"
    if holder in ("constant", "attribute"):
        return "in attribute"
    return "embedded"  # raw bytes, typed value fields or an in-memory ModelProto alike
