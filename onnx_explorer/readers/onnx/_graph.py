"""ONNX graphs, nodes and attributes → neutral :class:`Graph`, :class:`Node`, :class:`Attribute`.

Nothing is converted when a model is opened: a graph is a :meth:`Graph.deferred`
over its parsed ``GraphProto``, and each of its parts (nodes, name index, inputs
and outputs, initializers, value_info) is built when something first reads it.
Nodes are made all at once, bare, when ``graph.nodes`` is first read, and their
fields are filled one field at a time for every node of the graph, when any node's
field is first read (:class:`_Columns`): a first view reads every node, a lookup
one, and both pay for the fields they read at the speed of C-level loops over the
parsed messages, not of a Python loop per node.
"""

from __future__ import annotations

import functools
import gc
import math
import threading
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain, compress, repeat
from operator import attrgetter, not_
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import onnx

from ...model import (
    CONSTANT_OPS,
    Attribute,
    Function,
    Graph,
    Model,
    Node,
    SparseTensor,
    TensorsOnDemand,
    ValueInfo,
)
from ...tensors import Tensor
from ._values import TensorContext, _s, onnx_dtype, type_string, value_info

_ATTR_KINDS = {v: k for k, v in onnx.AttributeProto.AttributeType.items()}
#: The empty mapping of every node without attributes or metadata (one object, shared).
_EMPTY: Mapping[str, Any] = MappingProxyType({})


# -- attributes --------------------------------------------------------------------
def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


# Attribute kinds whose value is read straight off the proto.
_PLAIN: dict[str, Callable[[Any], Any]] = {
    "FLOAT": attrgetter("f"),
    "INT": attrgetter("i"),
    "STRING": lambda a: _text(a.s),
    "FLOATS": lambda a: tuple(a.floats),
    "INTS": lambda a: tuple(a.ints),
    "STRINGS": lambda a: tuple(map(_text, a.strings)),
    "TYPE_PROTO": lambda a: type_string(a.tp),
    "TYPE_PROTOS": lambda a: tuple(map(type_string, a.type_protos)),
}


def _attribute(
    ctx: TensorContext, a: onnx.AttributeProto, node_name: str, owner: str, graph_path: str
) -> Attribute:
    kind = _ATTR_KINDS.get(a.type, "UNDEFINED")
    if kind == "UNDEFINED":
        kind = _guess_attribute_kind(a)
    attr_name = _s(a.name)
    plain = _PLAIN.get(kind)
    value = (
        plain(a)
        if plain is not None
        else _held(ctx, a, kind, attr_name, node_name, owner, graph_path)
    )
    return Attribute(attr_name, kind, value, _s(a.doc_string), _s(a.ref_attr_name))


def _held(
    ctx: TensorContext,
    a: onnx.AttributeProto,
    kind: str,
    attr_name: str,
    node_name: str,
    owner: str,
    graph_path: str,
) -> Any:
    """The value of a tensor or graph attribute (named after its node), or None."""
    label = f"{node_name}.{attr_name}"
    sub_path = f"{graph_path.rstrip('/')}/{node_name.lstrip('/')}/{attr_name}"
    if kind == "TENSOR":
        return ctx.tensor(a.t, owner if owner else (_s(a.t.name) or label))
    if kind == "GRAPH":
        return graph(ctx, a.g, sub_path)
    if kind == "SPARSE_TENSOR":
        return ctx.sparse(a.sparse_tensor, owner or label)
    if kind == "TENSORS":
        return tuple(ctx.tensor(t, _s(t.name) or f"{label}[{i}]") for i, t in enumerate(a.tensors))
    if kind == "GRAPHS":
        return tuple(graph(ctx, g, f"{sub_path}[{i}]") for i, g in enumerate(a.graphs))
    if kind == "SPARSE_TENSORS":
        return tuple(ctx.sparse(s, f"{label}[{i}]") for i, s in enumerate(a.sparse_tensors))
    return None


def _guess_attribute_kind(a: onnx.AttributeProto) -> str:
    """IR 1/2 files may leave ``type`` unset: infer it from the field that holds a value."""
    for field, kind in (
        ("floats", "FLOATS"), ("ints", "INTS"), ("strings", "STRINGS"), ("tensors", "TENSORS"),
        ("graphs", "GRAPHS"),
    ):  # fmt: skip
        if len(getattr(a, field)):
            return kind
    for field, kind in (
        ("t", "TENSOR"),
        ("g", "GRAPH"),
        ("sparse_tensor", "SPARSE_TENSOR"),
        ("tp", "TYPE_PROTO"),
    ):
        if a.HasField(field):
            return kind
    if a.s:
        return "STRING"
    if a.i:
        return "INT"
    return "FLOAT" if a.f else "UNDEFINED"


# -- nodes -------------------------------------------------------------------------
@contextmanager
def _bulk() -> Iterator[None]:
    """Make many objects without the cyclic GC pausing every few hundred of them.

    Creating 100,000 nodes would otherwise run some 150 young collections, each also
    scanning what the previous ones kept; that alone tripled the cost.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _consume(iterator: Iterator[Any]) -> None:
    deque(iterator, maxlen=0)


def _text_column(values: list[Any]) -> list[str]:
    """``values`` (str, or bytes where a proto2 string is not UTF-8) as text."""
    if any(map(isinstance, values, repeat(bytes))):
        return [_s(v) for v in values]
    return values


class _OnnxNode(Node):
    """A :class:`Node` whose fields :class:`_Columns` fills on first read."""

    __slots__ = ("_columns",)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            # Reached only for a slot not filled yet (and for names nodes do not have).
            if name == "attributes":  # one node's: a view draws a few hundred of 100,000
                return self._columns.attributes_of(self)
            if name in _FIELDS:
                self._columns.fill(name)
                return object.__getattribute__(self, name)
            raise AttributeError(f"'Node' object has no attribute {name!r}")


_SLOT = {name: getattr(Node, name).__set__ for name in Node.__slots__}
#: Nodes whose attributes are decoded one by one before the whole column is: a view reads
#: a few hundred; a caller walking every node gets the column (3× cheaper per node).
_ONE_BY_ONE_MAX = 2000
_SET_COLUMNS = _OnnxNode._columns.__set__  # type: ignore[attr-defined]


class _Columns:
    """The fields of one graph's nodes, decoded a whole column (field) at a time."""

    def __init__(self, ctx: TensorContext, protos: Any, path: str) -> None:
        self._ctx = ctx
        self._container = protos  # the repeated NodeProto field
        self._protos: list[Any] | None = None
        self._path = path
        self._nodes: list[Node] = []
        self._names: list[str] | None = None
        self._has_name: list[bool] | None = None
        self._op_type_list: list[str] | None = None
        self._domain_list: list[str] | None = None
        self._attribute_counts: list[int] | None = None
        self._done: set[str] = set()
        self._lock = threading.RLock()
        # Attributes decoded node by node before the whole column was: the column reuses
        # them, so a body graph is one object however it was first reached.
        self._attribute_cache: dict[int, Mapping[str, Attribute]] = {}

    def protos(self) -> list[Any]:
        if self._protos is None:
            with _bulk():
                self._protos = list(self._container)
        return self._protos

    def attribute_counts(self) -> list[int]:
        """How many attributes each node has (read once: the drawing and the repeated
        blocks' detection both ask)."""
        if self._attribute_counts is None:
            with _bulk():  # a wrapper per node: young collections would scan them all
                self._attribute_counts = list(map(len, map(attrgetter("attribute"), self.protos())))
        return self._attribute_counts

    def make_nodes(self, graph: Graph) -> list[Node]:
        with _bulk():
            # The count alone: the parsed nodes' Python wrappers (list(container), 0.14 µs a
            # node) are made when a field is first read.
            count = len(self._container)
            nodes: list[Node] = list(map(_OnnxNode.__new__, repeat(_OnnxNode, count)))
            _consume(map(_SLOT["index"], nodes, range(count)))
            _consume(map(_SLOT["graph"], nodes, repeat(graph, count)))
            _consume(map(_SET_COLUMNS, nodes, repeat(self, count)))
        self._nodes = nodes
        return nodes

    def names(self) -> list[str]:
        """Each node's name: the file's, made unique, or ``{op_type}_{i}`` when it has none."""
        with self._lock, _bulk():
            if self._names is None:
                self._names, self._has_name = self._unique_names()
            return self._names

    def _unique_names(self) -> tuple[list[str], list[bool]]:
        protos = self.protos()
        names = _text_column(list(map(attrgetter("name"), protos)))
        has_name = list(map(bool, names))
        counts = Counter(names)
        if len(counts) == len(names) and "" not in counts:
            return names, has_name
        # A nameless node gets ``{op_type}_{i}``; a repeated name (after its first use)
        # or a made-up one that collides gets the first free ``#1``, ``#2``... All other
        # names stay, so only these nodes are looked at, in file order, against what is
        # taken: every name in the file and every name made so far.
        taken = set(counts)
        taken.discard("")
        next_suffix: dict[str, int] = {}
        unique = list(names)
        first_use: set[str] = set()
        for i in compress(range(len(names)), [not n or counts[n] > 1 for n in names]):
            name = names[i]
            if name and name not in first_use:
                first_use.add(name)  # the first node with a repeated name keeps it
                continue
            if not name:
                name = f"{_s(protos[i].op_type)}_{i}"
                if name not in taken:
                    taken.add(name)
                    unique[i] = name
                    continue
            k = next_suffix.get(name, 1)  # smaller suffixes are taken: names only get taken
            while f"{name}#{k}" in taken:
                k += 1
            next_suffix[name] = k + 1
            unique[i] = f"{name}#{k}"
            taken.add(unique[i])
        return unique, has_name

    def _op_types(self) -> list[str]:
        if self._op_type_list is None:
            self._op_type_list = _text_column(list(map(attrgetter("op_type"), self.protos())))
        return self._op_type_list

    def _domains(self) -> list[str]:
        if self._domain_list is None:
            self._domain_list = _text_column(list(map(attrgetter("domain"), self.protos())))
        return self._domain_list

    def fill(self, field: str) -> None:
        """Set ``field`` (and the fields decoded with it) on every node of the graph."""
        with self._lock, _bulk():
            if field in self._done:
                return
            nodes = self._nodes
            count = len(nodes)
            values: Sequence[Any] | Iterator[Any]
            if field in ("name", "has_file_name"):
                names = self.names()
                assert self._has_name is not None
                _consume(map(_SLOT["name"], nodes, names))
                _consume(map(_SLOT["has_file_name"], nodes, self._has_name))
                self._finished("name", "has_file_name")
                return
            if field in ("control_inputs", "device"):
                values = repeat(() if field == "control_inputs" else "", count)
            elif field == "op_type":
                values = self._op_types()
            elif field == "domain":
                values = self._domains()
            elif field == "doc_string":
                values = _text_column(list(map(attrgetter(field), self.protos())))
            elif field in ("inputs", "outputs"):
                values = self._tuples(field[:-1])
            elif field == "metadata_props":
                values = self._metadata()
            elif field == "attributes":
                values = self._attributes()
            else:  # pragma: no cover - _FIELDS lists exactly the fields above
                raise AttributeError(field)
            _consume(map(_SLOT[field], nodes, values))
            self._finished(field)

    def _finished(self, *fields: str) -> None:
        self._done.update(fields)
        if self._done >= _FIELDS:  # every field read: the parsed nodes are not needed
            self._protos = None

    def _tuples(self, proto_field: str) -> list[tuple[str, ...]]:
        values = list(map(tuple, map(attrgetter(proto_field), self.protos())))
        try:
            "".join(chain.from_iterable(values))  # fails on bytes: a string that is not UTF-8
        except TypeError:
            values = [tuple(map(_s, t)) for t in values]
        return values

    def _metadata(self) -> list[Mapping[str, str]]:
        protos = self.protos()
        values: list[Mapping[str, str]] = [_EMPTY] * len(protos)
        counts = map(len, map(attrgetter("metadata_props"), protos))
        for i in compress(range(len(protos)), counts):
            entries = protos[i].metadata_props
            values[i] = MappingProxyType({_s(p.key): _s(p.value) for p in entries})
        return values

    def attributes_of(self, node: Node) -> Mapping[str, Attribute]:
        """One node's attributes, decoded alone unless the whole column is done."""
        with self._lock, _bulk():
            i = node.index
            if len(self._attribute_cache) >= _ONE_BY_ONE_MAX:
                self.fill("attributes")  # read node after node: the column is cheaper now
            if "attributes" not in self._done and i not in self._attribute_cache:
                self._attribute_cache[i] = self._node_attributes(i)
            if "attributes" not in self._done:
                _SLOT["attributes"](node, self._attribute_cache[i])
        return object.__getattribute__(node, "attributes")  # type: ignore[no-any-return]

    def _node_attributes(self, i: int) -> Mapping[str, Attribute]:
        n = self.protos()[i]
        if not n.attribute:
            return _EMPTY
        node = self._nodes[i]
        name = self.names()[i]
        # A Constant's tensor is known by the value it produces.
        owner = _s(n.output[0]) if self._op_types()[i] == "Constant" and n.output else ""
        attrs = {}
        for a in n.attribute:
            attr = _attribute(self._ctx, a, name, owner, self._path)
            attrs[attr.name] = attr
            if attr.kind == "GRAPH":
                attr.value.parent = node
            elif attr.kind == "GRAPHS":
                for body in attr.value:
                    body.parent = node
        return MappingProxyType(attrs)

    def _attributes(self) -> list[Mapping[str, Attribute]]:
        protos = self.protos()
        values: list[Mapping[str, Attribute]] = [_EMPTY] * len(protos)
        counts = list(map(len, map(attrgetter("attribute"), protos)))
        if not any(counts):
            return values
        self.names()  # once, before the loop
        cache = self._attribute_cache
        for i in compress(range(len(protos)), counts):
            found = cache.get(i)
            values[i] = found if found is not None else self._node_attributes(i)
        return values


_FIELDS = frozenset(Node.__slots__) - {"index", "graph"}


_BODY_TYPES = frozenset({onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS})
#: Attribute types whose serialized bytes are their whole value (no tensor: a tensor's
#: bytes may be cut out of the file and stand there as a marker).
_PLAIN_TYPES = frozenset(
    getattr(onnx.AttributeProto, kind)
    for kind in ("FLOAT", "INT", "STRING", "GRAPH", "FLOATS", "INTS", "STRINGS", "GRAPHS",
                 "TYPE_PROTO", "TYPE_PROTOS")
)  # fmt: skip
_TYPE = attrgetter("type")


def _first_tensor_elements(a: onnx.AttributeProto) -> int | None:
    """Elements of the tensor an attribute holds first (the order of ``Node.tensors()``)."""
    kind = a.type
    dims: Iterable[int]
    if kind == onnx.AttributeProto.TENSOR:
        dims = a.t.dims
    elif kind == onnx.AttributeProto.TENSORS and a.tensors:
        dims = a.tensors[0].dims
    elif kind == onnx.AttributeProto.SPARSE_TENSOR:
        dims = a.sparse_tensor.values.dims
    elif kind == onnx.AttributeProto.SPARSE_TENSORS and a.sparse_tensors:
        dims = a.sparse_tensors[0].values.dims
    else:
        return None
    return math.prod(dims)


_STANDARD_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training",
                               "ai.onnx.preview"})  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _may_hold_body(domain: str, op_type: str) -> bool:
    """Whether a node of this operator may have a GRAPH/GRAPHS attribute: any operator of
    another domain or unknown to onnx may; a standard one if its schema says so."""
    if domain not in _STANDARD_DOMAINS:
        return True
    try:
        schema = onnx.defs.get_schema(op_type, "" if domain == "ai.onnx" else domain)
    except onnx.defs.SchemaError:
        return True
    body_types = (onnx.defs.OpSchema.AttrType.GRAPH, onnx.defs.OpSchema.AttrType.GRAPHS)
    return any(a.type in body_types for a in schema.attributes.values())


# -- graphs ------------------------------------------------------------------------
class _GraphParts:
    """The parts of a graph read from a ``GraphProto`` (see :class:`~..model.GraphParts`)."""

    def __init__(self, ctx: TensorContext, proto: Any, path: str) -> None:
        self._ctx = ctx
        self._proto = proto
        self._columns = _Columns(ctx, proto.node, path)
        self._with_bodies: list[int] | None = None
        self._init_names: list[str] | None = None

    def nodes(self, graph: Graph) -> Sequence[Node]:
        return self._columns.make_nodes(graph)

    def node_names(self) -> Sequence[str]:
        return self._columns.names()

    def decoded_fields(self) -> frozenset[str]:
        return frozenset(self._columns._done)

    def nodes_with_bodies(self) -> list[int]:
        """Nodes with a GRAPH/GRAPHS attribute, read off the parsed file (no decoding);
        read once (the wiring, the walk over graphs and the metrics all ask)."""
        if self._with_bodies is None:
            with _bulk():
                self._with_bodies = self._find_bodies()
        return self._with_bodies

    def _find_bodies(self) -> list[int]:
        columns = self._columns
        protos = columns.protos()
        # Only operators that may hold a body are looked at: most nodes' are standard
        # ones whose schema has no graph attribute (the op and domain columns are read
        # for drawing anyway; the attributes of 100,000 nodes cost 0.08 s).
        kinds = list(zip(columns._domains(), columns._op_types()))
        may = {kind: _may_hold_body(*kind) for kind in set(kinds)}
        rest = list(compress(range(len(protos)), map(may.__getitem__, kinds)))
        attributes = map(attrgetter("attribute"), map(protos.__getitem__, rest))
        types = map(map, repeat(_TYPE), attributes)
        return list(compress(rest, map(not_, map(_BODY_TYPES.isdisjoint, types))))

    def constant_element_counts(self, indices: Iterable[int]) -> Iterator[tuple[int, int]]:
        """(node, elements of its first tensor attribute), as ``Node.tensors()[0]`` would say."""
        protos = self._columns.protos()
        for i in indices:
            for a in protos[i].attribute:
                count = _first_tensor_elements(a)
                if count is not None:
                    yield i, count
                    break

    def attribute_digests(self) -> list[Hashable]:
        """Per node, a value equal for two nodes whose attributes are equal (see
        :meth:`~..model.Graph.attribute_digests`), read off the parsed file: attributes
        serialized at C speed, nothing decoded; None for constants."""
        protos = self._columns.protos()
        ops = self._columns._op_types()
        digests: list[Hashable] = [None] * len(protos)
        counts = self._columns.attribute_counts()
        rest = [i for i in compress(range(len(protos)), counts) if ops[i] not in CONSTANT_OPS]
        attributes = map(attrgetter("attribute"), map(protos.__getitem__, rest))
        serialize = onnx.AttributeProto.SerializeToString
        with _bulk():
            for i, digest in zip(
                rest, map(b"".join, map(map, repeat(serialize), attributes)), strict=True
            ):
                digests[i] = digest
        return digests

    def attribute_fingerprints(self) -> tuple[str, list[Hashable | None]]:
        """See :meth:`~..model.Graph.attribute_fingerprints`: each node's attributes as
        serialized (C speed, nothing decoded), in file order; None for a node with an
        attribute that may hold a tensor (its bytes may have been cut out of the file: the
        same marker in two files stands for different bytes) or of no declared type."""
        protos = self._columns.protos()
        counts = self._columns.attribute_counts()
        found: list[Hashable | None] = [()] * len(protos)
        rest = list(compress(range(len(protos)), counts))
        attributes = list(map(attrgetter("attribute"), map(protos.__getitem__, rest)))
        plain = map(_PLAIN_TYPES.issuperset, map(map, repeat(_TYPE), attributes))
        serialize = onnx.AttributeProto.SerializeToString
        serialized = map(tuple, map(map, repeat(serialize), attributes))
        for i, ok, digest in zip(rest, plain, serialized, strict=True):
            found[i] = digest if ok else None
        return "onnx", found

    def values(self) -> tuple[tuple[ValueInfo, ...], tuple[ValueInfo, ...], tuple[ValueInfo, ...]]:
        g = self._proto
        declared = tuple(value_info(vi) for vi in g.input)
        # IR < 4 lists initializers among the inputs; a true input is one with no stored value.
        true_inputs = declared
        if declared:
            stored = set(self._initializer_names())
            stored.update(_s(s.values.name) for s in g.sparse_initializer)
            true_inputs = tuple(v for v in declared if v.name not in stored)
        return declared, true_inputs, tuple(value_info(vi) for vi in g.output)

    def _initializer_names(self) -> list[str]:
        """The initializers' names in file order, read once (the graph's inputs and its
        initializers both need them)."""
        if self._init_names is None:
            with _bulk():
                protos = self._proto.initializer
                self._init_names = _text_column(list(map(attrgetter("name"), protos)))
        return self._init_names

    def initializers(self) -> Mapping[str, Tensor]:
        protos = self._proto.initializer
        names = self._initializer_names()
        make = self._ctx.tensor

        def types() -> Iterator[tuple[str, tuple[int, ...]]]:
            dtypes = map(attrgetter("name"), map(onnx_dtype, map(attrgetter("data_type"), protos)))
            return zip(dtypes, map(tuple, map(attrgetter("dims"), protos)))

        return TensorsOnDemand(
            names,
            lambda i: make(protos[i]),
            lambda i: math.prod(protos[i].dims),
            types,
            lambda: map(math.prod, map(attrgetter("dims"), protos)),
        )

    def sparse_initializers(self) -> Mapping[str, SparseTensor]:
        return {_s(s.values.name): self._ctx.sparse(s) for s in self._proto.sparse_initializer}

    def initializer_fingerprints(self) -> tuple[str, list[Hashable]]:
        """See :meth:`~..model.Graph.initializer_fingerprints`: each initializer as
        serialized (C speed, nothing decoded), in file order."""
        return "onnx", list(map(onnx.TensorProto.SerializeToString, self._proto.initializer))

    def value_info(self) -> Mapping[str, ValueInfo]:
        with _bulk():
            return {_s(vi.name): value_info(vi) for vi in self._proto.value_info}


class _FunctionParts(_GraphParts):
    """A function body: inputs and outputs are names, typed by the function's value_info."""

    def __init__(self, ctx: TensorContext, proto: Any, path: str) -> None:
        super().__init__(ctx, proto, path)
        self._typed: dict[str, ValueInfo] | None = None

    def value_info(self) -> Mapping[str, ValueInfo]:
        if self._typed is None:
            self._typed = {_s(vi.name): value_info(vi) for vi in self._proto.value_info}
        return self._typed

    def values(self) -> tuple[tuple[ValueInfo, ...], tuple[ValueInfo, ...], tuple[ValueInfo, ...]]:
        typed = self.value_info()
        f = self._proto
        inputs = tuple(typed.get(n, ValueInfo(n)) for n in map(_s, f.input))
        return inputs, inputs, tuple(typed.get(n, ValueInfo(n)) for n in map(_s, f.output))

    def initializers(self) -> Mapping[str, Tensor]:
        return {}

    def sparse_initializers(self) -> Mapping[str, SparseTensor]:
        return {}

    def initializer_fingerprints(self) -> tuple[str, list[Hashable]]:
        return "onnx", []


def graph(ctx: TensorContext, g: onnx.GraphProto, path: str) -> Graph:
    """The graph of a ``GraphProto``, converted part by part as it is read."""
    return Graph.deferred(
        _s(g.name), _GraphParts(ctx, g, path), doc_string=_s(g.doc_string), path=path
    )


def opset_imports(protos: Iterable[onnx.OperatorSetIdProto]) -> dict[str, int]:
    """Domain → version of a model's or a function's ``opset_import``."""
    return {_s(o.domain): o.version for o in protos}


def function(ctx: TensorContext, f: onnx.FunctionProto) -> Function:
    name, domain, overload = _s(f.name), _s(f.domain), _s(f.overload)
    path = f"function:{domain}:{name}" + (f":{overload}" if overload else "")
    doc_string = _s(f.doc_string)
    body = Graph.deferred(name, _FunctionParts(ctx, f, path), doc_string=doc_string, path=path)
    defaults = {}
    for a in f.attribute_proto:
        default = _attribute(ctx, a, name, "", path)
        defaults[default.name] = default
    declared = tuple(map(_s, f.attribute))
    return Function(
        name=name,
        domain=domain,
        graph=body,
        attribute_names=declared + tuple(a for a in defaults if a not in declared),
        attribute_defaults=defaults,
        opset_imports=opset_imports(f.opset_import),
        overload=overload,
        doc_string=doc_string,
    )


def materialize(model: Model) -> None:
    """Build every part of every graph of ``model`` now (for a proto its caller may change)."""
    for g in model.graphs():
        for part in ("nodes", "_by_name", "inputs", "initializers", "sparse_initializers"):
            getattr(g, part)
        _ = g.value_info
        if g.nodes:  # reading one node's field fills that field on every node
            for field in sorted(_FIELDS):
                getattr(g.nodes[0], field)
        parts = g.__dict__.get("_parts")
        if isinstance(parts, _GraphParts):  # one node's attributes decode that node's alone
            parts._columns.fill("attributes")


__all__ = ["function", "graph", "materialize", "opset_imports"]
