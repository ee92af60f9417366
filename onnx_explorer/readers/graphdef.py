"""TensorFlow GraphDef files (``.pb`` binary, ``.pbtxt`` text) → the neutral :class:`Model`.

No TensorFlow is needed: the messages come from :mod:`.graphdef_proto`. The
mapping onto the format-neutral model:

- Every ``NodeDef`` is a :class:`Node`. An input ``name:k`` is the value
  ``"name:k"``, ``name:0`` is ``"name"``; ``^name`` control inputs go to
  :attr:`Node.control_inputs`. A node's outputs are ports ``0..k`` for the largest
  port ``k`` any consumer reads (at least port 0).
- ``Placeholder`` / ``PlaceholderWithDefault`` nodes are the graph's inputs.
- ``Const`` nodes stay nodes, and their ``value`` tensor is also listed in
  :attr:`Graph.initializers` under the node's name (the same :class:`Tensor`).
- The graph's outputs are port 0 of every node nothing reads (by data or control
  edge), except nodes that produce no result worth showing (see ``NOT_OUTPUTS``).
- The function library becomes :attr:`Model.functions`. Inside a function body
  values keep TensorFlow's names: an argument ``x``, or ``node:out_arg:index``
  (``node:out_arg`` is read as index 0). Functions are never inlined, so cyclic
  calls cost nothing.
- Tensors are lazy: ``tensor_content`` is located in the file without copying
  (binary files) and typed ``*_val`` fields are decoded on first read, following
  TensorFlow's rule that fewer values than elements repeat the last one — without
  materialising such a fill for statistics.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from google.protobuf import text_format
from google.protobuf.message import DecodeError
from google.protobuf.text_encoding import CEscape

from ..dtypes import DType, dtype
from ..errors import ExplorerError, ModelFormatError, TensorDataError
from ..external_data import DataFiles
from ..model import Attribute, Dim, Function, Graph, Model, Node, ValueInfo
from ..tensors import FileRange, MemoryBytes, Tensor, TensorLocation, TensorSource
from . import graphdef_proto as pb
from .protowire import MARKER_LENGTH, Schema, Stripped, strip_file, strip_payloads
from .sniff import graphdef_encoding

#: Deepest message nesting accepted in text format (binary parsing stops at 100 too).
MAX_TEXT_DEPTH = 100
#: Ops whose unread results are not shown as graph outputs.
NOT_OUTPUTS = frozenset({
    "NoOp", "Const", "Placeholder", "PlaceholderWithDefault", "Assert", "Print", "PrintV2",
    "SaveV2", "RestoreV2", "MergeV2Checkpoints", "VarHandleOp", "VariableV2", "Variable",
    "AssignVariableOp",
})  # fmt: skip
INPUT_OPS = frozenset({"Placeholder", "PlaceholderWithDefault"})
#: Largest array ``numpy()`` builds from a partial fill (a splat is a free broadcast view).
MAX_FILL_BYTES = 1 << 30
_DENSE_PORTS = 1024  # above this a node lists only the ports it is read from

# -- element types -----------------------------------------------------------------
_QUANTIZED = {11: "qint8", 12: "quint8", 13: "qint32", 15: "qint16", 16: "quint16"}
_STORAGE_NAMES = {
    1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string",
    8: "complex64", 9: "int64", 10: "bool", 11: "int8", 12: "uint8", 13: "int32",
    14: "bfloat16", 15: "int16", 16: "uint16", 17: "uint16", 18: "complex128", 19: "float16",
    22: "uint32", 23: "uint64", 24: "float8_e5m2", 25: "float8_e4m3fn", 26: "float8_e4m3fnuz",
    28: "float8_e5m2fnuz",
}  # fmt: skip
# TensorFlow keeps sub-byte and FP8-B11 types one element per byte (tensor_content is
# a copy of its in-memory buffer), unlike ONNX's packed storage.
_BYTE_STORED = {
    27: DType("float8_e4m3b11fnuz", np.dtype(ml_dtypes.float8_e4m3b11fnuz), 8),
    29: DType("int4", np.dtype(ml_dtypes.int4), 8),
    30: DType("uint4", np.dtype(ml_dtypes.uint4), 8),
    31: DType("int2", np.dtype(ml_dtypes.int2), 8),
    32: DType("uint2", np.dtype(ml_dtypes.uint2), 8),
    33: DType("float4_e2m1fn", np.dtype(ml_dtypes.float4_e2m1fn), 8),
}
_OPAQUE = {0: "invalid", 20: "resource", 21: "variant"}


def _base_code(code: int) -> int:
    return code - pb.REF_OFFSET if code > pb.REF_OFFSET else code


def tf_dtype(code: int) -> DType:
    """The element type of a ``tensorflow.DataType`` (quantized types → their storage type).

    Types without values (resource, variant, unknown codes) get a non-numeric DType
    whose tensors raise :class:`TensorDataError` when read.
    """
    base = _base_code(code)
    if base in _STORAGE_NAMES:
        return dtype(_STORAGE_NAMES[base])
    if base in _BYTE_STORED:
        return _BYTE_STORED[base]
    name = _OPAQUE.get(base, f"tf_datatype_{code}")
    return DType(name, np.dtype(object), 0, is_numeric=False)


def tf_type_name(code: int) -> str:
    """Readable name of a DataType for TYPE attributes: ``float32``, ``qint8``, ``float32_ref``."""
    base = _base_code(code)
    name = _QUANTIZED.get(base) or tf_dtype(base).name
    return f"{name}_ref" if code > pb.REF_OFFSET else name


# -- tensors -----------------------------------------------------------------------
class FillSource(TensorSource):
    """Typed ``*_val`` values: fewer values than elements repeat the last one (none: zeros).

    Streaming (``iter_chunks``, statistics) never allocates more than the stored
    values: the fill comes as zero-stride broadcast views. ``numpy()`` of a splat
    (at most one stored value) is such a view too, whatever its size; a partial
    fill is materialised only up to ``MAX_FILL_BYTES``.
    """

    def __init__(self, loader: Callable[[], np.ndarray], stored: int) -> None:
        self._loader = loader
        self._stored_count = stored
        self._values: np.ndarray | None = None
        self.location = TensorLocation("typed")

    def _stored(self, dt: DType, count: int, name: str) -> np.ndarray:
        if self._stored_count > count:
            raise TensorDataError(
                f"tensor {name!r}: {self._stored_count} values stored but its shape has only "
                f"{count} elements"
            )
        if self._values is None:
            try:
                values = np.asarray(self._loader()).reshape(-1)
            except ExplorerError:
                raise
            except Exception as exc:  # a corrupt field stays this tensor's problem
                raise TensorDataError(f"tensor {name!r}: cannot decode values: {exc}") from None
            self._values = values
        return self._values

    @staticmethod
    def _fill_value(values: np.ndarray, dt: DType) -> np.ndarray:
        if values.size:
            return values[-1:]
        if dt.name == "string":
            return np.array([b""], dtype=object)
        return np.zeros(1, dtype=dt.numpy)

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        values = self._stored(dt, count, name)
        if values.size == count:
            return values
        fill = self._fill_value(values, dt)
        if values.size <= 1:
            return np.broadcast_to(fill, (count,))
        nbytes = count * values.dtype.itemsize
        if nbytes > MAX_FILL_BYTES:  # a few stored values must not claim gigabytes of RAM
            raise TensorDataError(
                f"tensor {name!r}: {values.size} stored values would fill {count} elements "
                f"({nbytes} bytes); read it in chunks (iter_chunks, stats) instead"
            )
        out = np.empty(count, dtype=values.dtype)
        out[: values.size] = values
        out[values.size :] = fill[0]
        return out

    def chunks(self, dt: DType, count: int, name: str, max_elements: int) -> Iterator[np.ndarray]:
        values = self._stored(dt, count, name)
        stored = values.size
        fill = self._fill_value(values, dt)
        # The stored values, then the fill as zero-stride views (chunks may be shorter
        # than max_elements; none is ever allocated at full size).
        for start in range(0, min(stored, count), max_elements):
            yield values[start : min(stored, start + max_elements)]
        for start in range(stored, count, max_elements):
            yield np.broadcast_to(fill, (min(count, start + max_elements) - start,))

    def check(self, dt: DType, count: int, name: str) -> None:
        self._stored(dt, count, name)

    def release(self) -> None:
        self._values = None


class _Unreadable(TensorSource):
    """A tensor whose values cannot be shown (resource handles, variants, unknown rank)."""

    def __init__(self, reason: str, kind: str = "typed") -> None:
        self._reason = reason
        self.location = TensorLocation(kind)

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        raise TensorDataError(f"tensor {name!r}: {self._reason}")


class _ProtoContent(MemoryBytes):
    """``tensor_content`` of a message held in memory, fetched when read (no copy at load)."""

    def __init__(self, tp: Any, length: int, kind: str) -> None:
        super().__init__(b"", kind)
        self._tp = tp
        self.location = TensorLocation(kind, length=length)

    def buffer(self, name: str) -> Any:
        return self._tp.tensor_content


def _ints(values: Any, dt: DType) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).astype(dt.numpy)


def _complex(values: Any, dt: DType) -> np.ndarray:
    parts = np.asarray(values, dtype=np.float32 if dt.name == "complex64" else np.float64)
    if parts.size % 2:
        raise TensorDataError(f"{parts.size} real/imaginary parts stored: not whole pairs")
    return parts.view(dt.numpy)


def _half_bits(tp: Any, dt: DType) -> np.ndarray:
    # half_val holds the 16-bit patterns in an int32 field; old writers used int_val.
    values = tp.half_val if len(tp.half_val) else tp.int_val
    return (np.asarray(values, dtype=np.int64) & 0xFFFF).astype(np.uint16).view(dt.numpy)


# DataType (base) → (typed field, decoder of that field's values).
_TYPED: dict[int, tuple[str, Callable[[Any, DType], np.ndarray]]] = {
    1: ("float_val", lambda v, dt: np.asarray(v, dtype=np.float32)),
    2: ("double_val", lambda v, dt: np.asarray(v, dtype=np.float64)),
    7: ("string_val", lambda v, dt: np.array(list(v), dtype=object)),
    8: ("scomplex_val", _complex),
    9: ("int64_val", lambda v, dt: np.asarray(v, dtype=np.int64)),
    10: ("bool_val", lambda v, dt: np.asarray(v, dtype=np.bool_)),
    18: ("dcomplex_val", _complex),
    22: ("uint32_val", lambda v, dt: np.asarray(v, dtype=np.uint32)),
    23: ("uint64_val", lambda v, dt: np.asarray(v, dtype=np.uint64)),
}
for _code in (3, 4, 5, 6, 11, 12, 13, 15, 16, 17, 29, 30, 31, 32):
    _TYPED[_code] = ("int_val", _ints)
for _code in (24, 25, 26, 27, 28, 33):
    _TYPED[_code] = ("float8_val", lambda v, dt: np.frombuffer(v, dtype=np.uint8).view(dt.numpy))


def _typed_source(tp: Any, code: int, dt: DType) -> TensorSource:
    if code in (14, 19):  # bfloat16, float16
        stored = len(tp.half_val) or len(tp.int_val)
        return FillSource(lambda: _half_bits(tp, dt), stored)
    field_name, decode = _TYPED[code]
    values = getattr(tp, field_name)
    stored = len(values)
    if code in (8, 18):
        stored //= 2
    return FillSource(lambda: decode(getattr(tp, field_name), dt), stored)


class _Context:
    """Where tensor bytes live for one model: a mapped file, caller's bytes, or messages."""

    def __init__(self, kind: str, stripped: Stripped | None = None, model_file: Any = None) -> None:
        self.kind = kind  # location kind for tensor_content kept in messages
        self.stripped = stripped
        self.model_file = model_file  # DataFile or bytes the stripped ranges refer to

    def tensor(self, tp: Any, name: str) -> Tensor:
        code = int(tp.dtype)
        dt = tf_dtype(code)
        if tp.tensor_shape.unknown_rank:
            return Tensor(name, dt, (), _Unreadable("a stored tensor cannot have unknown rank"))
        shape = tuple(int(d.size) for d in tp.tensor_shape.dim)
        return Tensor(name, dt, shape, self.source(tp, code, dt))

    def source(self, tp: Any, code: int, dt: DType) -> TensorSource:
        base = _base_code(code)
        if base in _OPAQUE or not (base in _TYPED or base in (14, 19)):
            what = dt.name if dt.name != "invalid" else "DT_INVALID"
            return _Unreadable(f"{what} tensors hold no values that can be shown")
        content = tp.tensor_content
        if content:  # TensorFlow prefers tensor_content over typed values when both are set
            if self.stripped is not None and len(content) == MARKER_LENGTH:
                index = self.stripped.marker_index(content)
                if index is not None:
                    offset, length = self.stripped.ranges[index]
                    if isinstance(self.model_file, bytes | memoryview):
                        return MemoryBytes(memoryview(self.model_file)[offset : offset + length])
                    return FileRange(self.model_file, offset, length)
            if self.stripped is not None:
                return MemoryBytes(content, kind=self.kind)
            return _ProtoContent(tp, len(content), self.kind)
        return _typed_source(tp, base, dt)


# -- attributes --------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionRef:
    """A ``func`` attribute: the function a node calls and the attributes it passes."""

    name: str
    attributes: Mapping[str, Attribute] = field(default_factory=dict)

    def __str__(self) -> str:
        if not self.attributes:
            return self.name
        inner = ", ".join(f"{k}={_short(a.value)}" for k, a in self.attributes.items())
        return f"{self.name}({inner})"


def _short(value: Any, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shape_dims(shape: Any) -> tuple[Dim, ...] | None:
    """A TensorShapeProto as dims (unknown sizes → None); None for unknown rank."""
    if shape.unknown_rank:
        return None
    return tuple(int(d.size) if d.size >= 0 else None for d in shape.dim)


def shape_text(shape: Any) -> str:
    dims = shape_dims(shape)
    if dims is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _text(raw: bytes) -> str:
    """An attribute string; bytes that are not text (serialized protos) shown C-escaped."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return CEscape(raw, as_utf8=False)
    return CEscape(raw, as_utf8=True) if _CONTROL.search(text) else text


_LIST_KINDS = (
    ("s", "STRINGS"), ("i", "INTS"), ("f", "FLOATS"), ("b", "BOOLS"), ("type", "TYPES"),
    ("shape", "SHAPES"), ("tensor", "TENSORS"), ("func", "FUNCS"),
)  # fmt: skip


class _AttrReader:
    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx

    def attributes(self, attr_map: Any, label: str, tensor_owner: str = "") -> dict[str, Attribute]:
        return {
            key: self.attribute(key, attr_map[key], label, tensor_owner) for key in sorted(attr_map)
        }

    def attribute(self, key: str, av: Any, label: str, tensor_owner: str = "") -> Attribute:
        """``tensor_owner`` names the ``value`` tensor of a Const after its node."""
        which = av.WhichOneof("value")
        where = f"{label}.{key}"
        if which == "s":
            return Attribute(key, "STRING", _text(av.s))
        if which == "i":
            return Attribute(key, "INT", int(av.i))
        if which == "f":
            return Attribute(key, "FLOAT", float(av.f))
        if which == "b":
            return Attribute(key, "BOOL", bool(av.b))
        if which == "type":
            return Attribute(key, "TYPE", tf_type_name(int(av.type)))
        if which == "shape":
            return Attribute(key, "SHAPE", shape_text(av.shape))
        if which == "tensor":
            name = tensor_owner if (tensor_owner and key == "value") else where
            return Attribute(key, "TENSOR", self.ctx.tensor(av.tensor, name))
        if which == "func":
            return Attribute(key, "FUNC", self.func(av.func, where))
        if which == "placeholder":
            return Attribute(key, "PLACEHOLDER", av.placeholder, ref_attr_name=av.placeholder)
        if which == "list":
            kind, values = self.list_values(av.list, where)
            return Attribute(key, kind, values)
        return Attribute(key, "UNDEFINED", None)

    def func(self, nal: Any, where: str) -> FunctionRef:
        return FunctionRef(nal.name, self.attributes(nal.attr, where))

    def list_values(self, lv: Any, where: str) -> tuple[str, tuple[Any, ...]]:
        for field_name, kind in _LIST_KINDS:
            values = getattr(lv, field_name)
            if not len(values):
                continue
            if field_name == "s":
                return kind, tuple(_text(s) for s in values)
            if field_name == "i":
                return kind, tuple(int(v) for v in values)
            if field_name == "f":
                return kind, tuple(float(v) for v in values)
            if field_name == "b":
                return kind, tuple(bool(v) for v in values)
            if field_name == "type":
                return kind, tuple(tf_type_name(int(v)) for v in values)
            if field_name == "shape":
                return kind, tuple(shape_text(s) for s in values)
            if field_name == "tensor":
                return kind, tuple(
                    self.ctx.tensor(t, f"{where}[{i}]") for i, t in enumerate(values)
                )
            return kind, tuple(self.func(f, f"{where}[{i}]") for i, f in enumerate(values))
        return "LIST", ()


# -- value names -------------------------------------------------------------------
def _is_index(text: str) -> bool:
    return text.isascii() and text.isdigit()


@dataclass
class _Ref:
    value: str  # the value name used in Node.inputs / Node.outputs
    producer: str | None  # the node named by the reference (may not exist)
    port: int = 0  # graph style: output port
    arg: str = ""  # function style: output argument name


def _graph_ref(text: str) -> _Ref:
    name, sep, port = text.rpartition(":")
    if sep and name and _is_index(port):
        k = int(port)
        return _Ref(name if k == 0 else f"{name}:{k}", name, k)
    return _Ref(text, text)


def _function_ref(text: str, args: set[str]) -> _Ref:
    parts = text.split(":")
    if len(parts) == 3 and parts[0] and _is_index(parts[2]):
        return _Ref(f"{parts[0]}:{parts[1]}:{int(parts[2])}", parts[0], int(parts[2]), parts[1])
    if len(parts) == 2 and parts[0] and not _is_index(parts[1]):
        return _Ref(f"{parts[0]}:{parts[1]}:0", parts[0], 0, parts[1])
    if len(parts) == 2:
        return _graph_ref(text)
    if text in args:
        return _Ref(text, None)
    return _Ref(text, text)


# -- nodes and graphs --------------------------------------------------------------
@dataclass
class _Body:
    """Nodes of a graph or function body, converted, with what the graph needs of them."""

    nodes: list[Node]
    read: set[str]  # names of nodes some data or control edge leaves
    initializers: dict[str, Tensor]
    value_info: dict[str, ValueInfo]


def _unique_names(node_defs: Any) -> list[tuple[str, bool]]:
    names: list[tuple[str, bool]] = []
    seen = {n.name for n in node_defs if n.name}
    used: set[str] = set()
    next_suffix: dict[str, int] = {}  # keeps many duplicates linear
    for i, n in enumerate(node_defs):
        has_name = bool(n.name)
        name = n.name or f"{n.op or 'node'}_{i}"
        if name in used or (not has_name and name in seen):
            k = next_suffix.get(name, 1)
            while f"{name}#{k}" in used or f"{name}#{k}" in seen:
                k += 1
            next_suffix[name] = k + 1
            name = f"{name}#{k}"
        used.add(name)
        names.append((name, has_name))
    return names


def _outputs(name: str, refs: list[_Ref], in_function: bool) -> tuple[str, ...]:
    if in_function:
        args: dict[str, int] = {}
        values: dict[str, tuple[int, int]] = {}
        for ref in refs:
            order = args.setdefault(ref.arg, len(args))
            values.setdefault(ref.value, (order, ref.port))
        ordered = sorted(values, key=lambda v: values[v])
        return tuple(ordered) or (name,)
    ports = {ref.port for ref in refs}
    top = max(ports, default=0)
    if top < _DENSE_PORTS:
        return (name, *(f"{name}:{k}" for k in range(1, top + 1)))
    return (name, *(f"{name}:{k}" for k in sorted(ports - {0})))


_BOOL_OPS = frozenset({
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
    "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite", "IsVariableInitialized",
})  # fmt: skip


def output_dtype(node: Node) -> str | None:
    """Best guess of the element type of a node's first output, from its type attributes."""
    if node.op_type in _BOOL_OPS:
        return "bool"
    for key in ("out_type", "output_type", "DstT", "dtype", "T"):
        attr = node.attributes.get(key)
        if attr is not None and attr.kind == "TYPE":
            return str(attr.value)
    return None


def _value(
    name: str, dtype_name: str | None, shape: tuple[Dim, ...] | None, doc: str = ""
) -> ValueInfo:
    return ValueInfo(name, f"tensor({dtype_name})" if dtype_name else "", dtype_name, shape, doc)


def _body(
    reader: _AttrReader,
    node_defs: Any,
    in_function: bool,
    args: set[str],
    extra: Iterable[_Ref] = (),
) -> _Body:
    names = _unique_names(node_defs)
    parse: Callable[[str], _Ref] = (lambda t: _function_ref(t, args)) if in_function else _graph_ref
    inputs: list[tuple[list[str], list[str]]] = []
    refs_to: dict[str, list[_Ref]] = {}
    read: set[str] = set()
    for n in node_defs:
        data: list[str] = []
        control: list[str] = []
        for text in n.input:
            if text.startswith("^"):
                control.append(text[1:])
                read.add(text[1:])
                continue
            ref = parse(text)
            data.append(ref.value)
            if ref.producer is not None:
                refs_to.setdefault(ref.producer, []).append(ref)
                read.add(ref.producer)
        inputs.append((data, control))
    for ref in extra:  # function results read node outputs too
        if ref.producer is not None:
            refs_to.setdefault(ref.producer, []).append(ref)
            read.add(ref.producer)

    nodes: list[Node] = []
    initializers: dict[str, Tensor] = {}
    value_info: dict[str, ValueInfo] = {}
    for n, (name, has_name), (data, control) in zip(node_defs, names, inputs):
        owner = name if n.op == "Const" else ""
        attrs = reader.attributes(n.attr, name, owner)
        # A duplicated name's references go to its first node.
        outputs = _outputs(name, refs_to.pop(n.name, []) if has_name else [], in_function)
        node = Node(
            name, n.op, "", tuple(data), outputs, attrs, control_inputs=tuple(control),
            device=n.device, has_file_name=has_name,
        )  # fmt: skip
        nodes.append(node)
        value = attrs.get("value")
        if n.op == "Const" and value is not None and value.kind == "TENSOR":
            initializers[name] = value.value
        if not in_function and "_output_shapes" in n.attr:
            shapes = n.attr["_output_shapes"].list.shape
            guess = output_dtype(node) if len(shapes) == 1 else None
            for k, shape in enumerate(shapes):
                value_name = name if k == 0 else f"{name}:{k}"
                value_info[value_name] = _value(value_name, guess, shape_dims(shape))
    return _Body(nodes, read, initializers, value_info)


def _placeholder_input(node: Node, raw: Any) -> ValueInfo:
    dt_attr = node.attributes.get("dtype")
    dtype_name = str(dt_attr.value) if dt_attr is not None and dt_attr.kind == "TYPE" else None
    shape = None
    if "shape" in raw.attr and raw.attr["shape"].WhichOneof("value") == "shape":
        shape = shape_dims(raw.attr["shape"].shape)
    return _value(node.outputs[0], dtype_name, shape)


def _main_graph(reader: _AttrReader, proto: Any, name: str) -> Graph:
    body = _body(reader, proto.node, in_function=False, args=set())
    inputs = tuple(
        _placeholder_input(node, raw)
        for node, raw in zip(body.nodes, proto.node)
        if node.op_type in INPUT_OPS
    )
    outputs: list[ValueInfo] = []
    for node in body.nodes:
        if node.name in body.read or node.op_type in NOT_OUTPUTS:
            continue
        known = body.value_info.get(node.outputs[0])
        shape = known.shape if known is not None else None
        outputs.append(_value(node.outputs[0], output_dtype(node), shape))
    return Graph(
        name=name,
        nodes=body.nodes,
        inputs=inputs,
        outputs=tuple(outputs),
        initializers=body.initializers,
        value_info=body.value_info,
        path="/",
    )


def _arg_value(arg: Any, name: str, doc: str = "") -> ValueInfo:
    if arg.type:
        return _value(name, tf_type_name(int(arg.type)), None, doc)
    param = arg.type_attr or arg.type_list_attr
    kind = f"tensor({param})" if param else ""
    if arg.number_attr and kind:
        kind = f"{arg.number_attr} × {kind}"
    return ValueInfo(name, kind, None, None, doc)


def function_path(name: str) -> str:
    """:attr:`Graph.path` of a library function's body (as ONNX functions: domain is empty)."""
    return f"function::{name}"


def _function(reader: _AttrReader, fdef: Any) -> Function:
    sig = fdef.signature
    path = function_path(sig.name)
    args = {a.name for a in sig.input_arg}
    ret = dict(fdef.ret)
    results = [_function_ref(ret.get(a.name, a.name), args) for a in sig.output_arg]
    body = _body(reader, fdef.node_def, in_function=True, args=args, extra=results)
    outputs = tuple(
        _arg_value(a, ref.value, f"function result {a.name!r}")
        for a, ref in zip(sig.output_arg, results)
    )
    graph = Graph(
        name=sig.name,
        nodes=body.nodes,
        inputs=tuple(_arg_value(a, a.name) for a in sig.input_arg),
        outputs=outputs,
        initializers=body.initializers,
        doc_string=sig.summary or sig.description,
        path=path,
    )
    defaults = {
        a.name: reader.attribute(a.name, a.default_value, sig.name)
        for a in sig.attr
        if a.HasField("default_value")
    }
    # The FunctionDef's own attributes (_noinline, _input_shapes...) are fixed values.
    defaults.update(reader.attributes(fdef.attr, sig.name))
    return Function(
        name=sig.name,
        domain="",
        graph=graph,
        attribute_names=tuple(a.name for a in sig.attr),
        attribute_defaults=defaults,
        doc_string=sig.description or sig.summary,
    )


def model_from_graphdef(
    proto: Any,
    *,
    name: str = "graphdef",
    path: Path | None = None,
    ctx: _Context | None = None,
    data_files: DataFiles | None = None,
) -> Model:
    """Build the neutral model from a parsed GraphDef message (ours or TensorFlow's)."""
    reader = _AttrReader(ctx or _Context("memory"))
    try:
        graph = _main_graph(reader, proto, name)
        functions = tuple(_function(reader, f) for f in proto.library.function)
    except RecursionError:
        raise ModelFormatError(f"{name!r}: attributes are nested too deeply") from None
    metadata = {}
    if proto.HasField("versions"):
        metadata["versions.producer"] = str(proto.versions.producer)
        metadata["versions.min_consumer"] = str(proto.versions.min_consumer)
    for grad in proto.library.gradient:
        metadata[f"gradient.{grad.function_name}"] = grad.gradient_func
    return Model(
        graph,
        format="graphdef",
        path=path,
        metadata_props=metadata,
        functions=functions,
        data_files=data_files,
        source=proto,
    )


# -- parsing -----------------------------------------------------------------------
def _graphdef_schema() -> Schema:
    # Field numbers from tensorflow/core/framework/*.proto; FUNC attributes nest AttrValues.
    tensor = Schema({}, frozenset({4}))  # TensorProto.tensor_content
    list_children: dict[int, Schema] = {8: tensor}  # ListValue.tensor
    attr_children: dict[int, Schema] = {8: tensor, 1: Schema(list_children)}  # tensor, list
    attr_entry = Schema({2: Schema(attr_children)})  # map entry: key=1, value=2
    name_attr_list = Schema({2: attr_entry})  # NameAttrList.attr
    attr_children[10] = name_attr_list  # AttrValue.func
    list_children[9] = name_attr_list  # ListValue.func
    node = Schema({5: attr_entry})  # NodeDef.attr
    function = Schema({3: node, 5: attr_entry})  # FunctionDef.node_def, attr
    return Schema({1: node, 2: Schema({1: function})})  # GraphDef.node, library.function


GRAPHDEF_SCHEMA = _graphdef_schema()
_TEXT_SKIP = re.compile(rb'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*')


def text_depth(data: bytes) -> int:
    """Deepest ``{``/``<`` nesting of a text-format message (strings and comments ignored)."""
    bare = np.frombuffer(_TEXT_SKIP.sub(b"", data), dtype=np.uint8)
    steps = np.zeros(bare.size, dtype=np.int32)
    steps[(bare == ord("{")) | (bare == ord("<"))] = 1
    steps[(bare == ord("}")) | (bare == ord(">"))] = -1
    return int(np.cumsum(steps).max(initial=0))


def _check_nonempty(proto: Any, what: str) -> Any:
    if not len(proto.node) and not len(proto.library.function):
        raise ModelFormatError(f"{what} is not a TensorFlow GraphDef: it has no nodes")
    return proto


def parse_text(data: bytes, what: str) -> Any:
    """Parse text format with a nesting limit; errors are :class:`ModelFormatError`."""
    depth = text_depth(data)
    if depth > MAX_TEXT_DEPTH:
        raise ModelFormatError(
            f"{what}: messages are nested {depth} deep (more than {MAX_TEXT_DEPTH})"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFormatError(f"{what} is not a text-format GraphDef: {exc}") from None
    proto = pb.GraphDef()
    try:
        # Unknown fields (newer TensorFlow, debug_info) are skipped, not fatal.
        text_format.Parse(text, proto, allow_unknown_field=True, max_recursion_depth=MAX_TEXT_DEPTH)
    except text_format.ParseError as exc:
        raise ModelFormatError(f"{what} is not a valid text-format GraphDef: {exc}") from None
    except RecursionError:
        raise ModelFormatError(f"{what}: messages are nested too deeply") from None
    return _check_nonempty(proto, what)


def parse_binary(data: bytes, what: str) -> Any:
    proto = pb.GraphDef()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelFormatError(f"{what} is not a valid GraphDef: {exc}") from None
    return _check_nonempty(proto, what)


def _strip(buf: Any, what: str) -> Stripped:
    try:
        return strip_payloads(buf, GRAPHDEF_SCHEMA)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{what} is not a valid GraphDef: {exc}") from None


def read_graphdef_file(path: Path) -> Model:
    """Open a ``.pb`` (binary) or ``.pbtxt`` (text) GraphDef; weights stay in the file."""
    path = Path(path)
    what = repr(str(path))
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if not head:
        raise ModelFormatError(f"{what} is empty")
    if graphdef_encoding(head, path.suffix.lower()) == "text":
        with open(path, "rb") as fh:
            proto = parse_text(fh.read(), what)
        return model_from_graphdef(proto, name=path.stem, path=path, ctx=_Context("embedded"))
    files = DataFiles()
    model_file = files.get(Path(os.path.realpath(path)))
    size = model_file.size
    stripped = strip_file(model_file.path, size, lambda source: _strip(source, what), what)
    proto = parse_binary(stripped.data, what)
    ctx = _Context("embedded", stripped, model_file)
    return model_from_graphdef(proto, name=path.stem, path=path, ctx=ctx, data_files=files)


def read_graphdef_bytes(data: bytes) -> Model:
    """A GraphDef from the bytes of a binary or text file; tensors view ``data``."""
    what = "the given bytes"
    if not data:
        raise ModelFormatError(f"{what} are empty")
    if graphdef_encoding(data[:4096]) == "text":
        return model_from_graphdef(parse_text(data, what), ctx=_Context("memory"))
    stripped = _strip(data, what)
    proto = parse_binary(stripped.data, what)
    return model_from_graphdef(proto, ctx=_Context("memory", stripped, data))


def read_graphdef_proto(proto: Any) -> Model:
    """A GraphDef message already in memory (this package's class or TensorFlow's)."""
    return model_from_graphdef(proto, ctx=_Context("memory"))


# -- layout notes ------------------------------------------------------------------
_FILTER_LAYOUTS = {
    "Conv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "_FusedConv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "FusedPadConv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "FusedResizeAndPadConv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "QuantizedConv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "Conv2DBackpropInput": "HWIO (TensorFlow Conv2D filter layout, of the forward convolution)",
    "Conv3D": "DHWIO (TensorFlow Conv3D filter layout)",
    "Conv3DBackpropInputV2": "DHWIO (TensorFlow Conv3D filter layout, of the forward convolution)",
    "DepthwiseConv2dNative": "HWIM (TensorFlow depthwise filter layout: M = channel multiplier)",
    "_FusedDepthwiseConv2dNative": (
        "HWIM (TensorFlow depthwise filter layout: M = channel multiplier)"
    ),
}
_PASS_THROUGH = frozenset({"Identity", "Cast", "Snapshot", "StopGradient", "Dequantize"})


def layout_note(where: Graph | Model, tensor_name: str) -> str | None:
    """How a GraphDef weight's axes are laid out, if a convolution reads it; else None.

    ``where`` is the graph holding the tensor (or the model: its graphs are searched
    for an initializer of that name). Follows Identity/Cast chains from a Const to
    its consumers, e.g. ``"HWIO (TensorFlow Conv2D filter layout)"``.
    """
    if isinstance(where, Model):
        graphs = [g for g in where.graphs() if tensor_name in g.initializers] or [where.graph]
        for graph in graphs:
            note = layout_note(graph, tensor_name)
            if note:
                return note
        return None
    graph = where
    start = graph.node(tensor_name).outputs if graph.has_node(tensor_name) else (tensor_name,)
    todo = list(start)
    seen: set[str] = set()
    while todo and len(seen) < 64:  # bounded: Identity chains are short
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        for consumer in graph.consumers(value):
            # The filter is input 1 of all of them (Conv2DBackpropInput: sizes, filter, grads).
            note = _FILTER_LAYOUTS.get(consumer.op_type)
            if note and consumer.inputs[1:2] == (value,):
                return note
            if consumer.op_type == "MatMul" and consumer.inputs[1:2] == (value,):
                attr = consumer.attributes.get("transpose_b")
                transposed = attr is not None and bool(attr.value)
                return (
                    "OI (TensorFlow MatMul weight, transpose_b: out features, in features)"
                    if transposed
                    else "IO (TensorFlow MatMul weight layout: in features, out features)"
                )
            if consumer.op_type in _PASS_THROUGH:
                todo.extend(consumer.outputs[:1])
    return None


__all__ = [
    "FillSource",
    "FunctionRef",
    "layout_note",
    "model_from_graphdef",
    "read_graphdef_bytes",
    "read_graphdef_file",
    "read_graphdef_proto",
    "tf_dtype",
    "tf_type_name",
]
