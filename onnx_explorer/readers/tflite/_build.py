"""Parsed TFLite records (:mod:`._parse`) → the neutral :class:`Model`.

The mapping:

- Subgraph 0 is :attr:`Model.graph`; every other subgraph is a :class:`Function` named by
  the subgraph's name (``subgraph_<k>`` when it has none), its graph at path
  ``function::<name>``. Options that index subgraphs (WHILE's ``cond_subgraph_index`` /
  ``body_subgraph_index``, IF's ``then``/``else``, CALL_ONCE's ``init_subgraph_index``,
  CALL, StableHLO bodies) become ``FUNC`` attributes whose value names the function.
- An operator is a :class:`Node`: ``op_type`` is the builtin's name (``CONV_2D``) with
  domain ``""``, or a custom op's ``custom_code`` with domain ``"custom"``. TFLite
  operators have no names: a node is named after its first output tensor (the part
  before a ``;``, where the converter joins the names of fused ops), else
  ``<OP>_<index>``, made unique, with ``has_file_name=False``.
- Tensor names are not unique in TFLite files: the first keeps its name, later ones get
  ``#1``, ``#2``...; an unnamed tensor is ``tensor_<index>``. An omitted optional input
  (index -1) is ``""``.
- Options become attributes (ints, floats, bools, enums by name: ``padding='SAME'``).
- A tensor whose buffer holds bytes is an initializer, read lazily from the file
  (:class:`FileRange`); every other tensor gets a :class:`ValueInfo` with its static shape
  (``shape``; a ``shape_signature`` with -1 sizes is noted in the doc string).
- Quantization parameters travel with the tensor (:class:`QuantizedTensor`, read by
  :func:`onnx_explorer.weights.find_dequantization`), are written into the value's and
  the tensor's doc string, and into each node's ``metadata_props``
  (``input 1 quantization``), which the attribute panel shows.
- Signatures, metadata buffers (``min_runtime_version`` as text, others by size) and
  the description become :attr:`Model.metadata_props`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from ...dtypes import DType, decode_bytes, dtype
from ...errors import ModelFormatError, TensorDataError
from ...external_data import DataFiles
from ...model import Attribute, Dim, Function, Graph, Model, Node, ValueInfo, attribute_kind
from ...sources import ByteSource
from ...tensors import (
    ArraySource,
    FileRange,
    LocationKind,
    Tensor,
    TensorLocation,
    TensorSource,
)
from ._flat import enum_name
from ._parse import (
    ModelRecord,
    OperatorRecord,
    Quantization,
    Span,
    SubgraphRecord,
    TensorRecord,
)
from ._sparse import densify

#: Metadata buffers shown as text up to this many bytes (``min_runtime_version``);
#: longer or binary ones (TFLITE_METADATA, CONVERSION_METADATA) by their size.
MAX_METADATA_TEXT = 256
#: Quantization parameters listed per node in ``metadata_props`` (a node has few inputs).
MAX_QUANTIZED_SLOTS = 16
#: Most strings a STRING tensor may declare (its offsets table is read into memory).
MAX_STRINGS = 1 << 20


class QuantizedTensor(Tensor):
    """A tensor whose file stores its quantization parameters beside it (TFLite).

    ``quantization`` has ``scale`` (float32), ``zero_point`` (int64 or empty) and
    ``axis``: the format-neutral hook :func:`onnx_explorer.weights.find_dequantization`
    reads, so statistics and histograms can show real values.
    """

    __slots__ = ("quantization",)

    def __init__(
        self,
        name: str,
        dtype_info: DType,
        shape: tuple[int, ...],
        source: TensorSource,
        quantization: Quantization,
        doc_string: str = "",
    ) -> None:
        super().__init__(name, dtype_info, shape, source, doc_string)
        self.quantization = quantization


# -- element types -----------------------------------------------------------------------
def tflite_dtype(type_code: int) -> DType | None:
    """The element type of a TensorType code; None for RESOURCE, VARIANT and unknown codes."""
    name = enum_name("TensorType", type_code).lower()
    try:
        return dtype(name)
    except KeyError:
        return None


def type_name(type_code: int) -> str:
    return enum_name("TensorType", type_code).lower()


# -- text --------------------------------------------------------------------------------
def _range_text(values: np.ndarray, fmt: str) -> str:
    low, high = values.min(), values.max()
    if low == high:
        return format(low, fmt)
    return f"{format(low, fmt)} … {format(high, fmt)}"


def quantization_text(type_text: str, q: Quantization) -> str:
    """``int8 scale 0.10196 zero point -128``; per axis, the count and range of scales."""
    parts = []
    if q.scale.size == 1:
        parts.append(f"{type_text} scale {float(q.scale[0]):.6g}")
        if q.zero_point.size:
            parts.append(f"zero point {int(q.zero_point[0])}")
    elif q.scale.size > 1:
        parts.append(
            f"{type_text} per-axis (axis {q.axis}): {q.scale.size} scales "
            f"{_range_text(q.scale, '.4g')}"
        )
        if q.zero_point.size:
            parts.append(f"zero point {_range_text(q.zero_point, 'd')}")
    else:
        parts.append(type_text)
    if q.min and q.max:
        parts.append(f"range {min(q.min):.6g} … {max(q.max):.6g}")
    if q.details:
        parts.append(f"custom quantization {q.details}")
    return ", ".join(parts)


def _dims(shape: Sequence[int], signature: Sequence[int] | None) -> str:
    return "[" + ", ".join(str(d) for d in (signature or shape)) + "]"


def tensor_notes(record: TensorRecord) -> str:
    """What a tensor's record says beyond dtype and shape, as one doc string."""
    notes = []
    if record.quantization is not None:
        notes.append(quantization_text(type_name(record.type_code), record.quantization))
    if record.signature is not None:
        notes.append(
            f"shape signature {_dims(record.shape, record.signature)} (-1: a size set at run time)"
        )
    if record.is_variable:
        notes.append("variable")
    if record.sparsity is not None:
        notes.append(f"{record.sparsity.summary}; densified (zeros where nothing is stored)")
    return "; ".join(notes)


# -- names -------------------------------------------------------------------------------
def unique_names(names: Iterable[str], fallback: str) -> list[str]:
    """Names made unique in order: a repeat gets ``#1``, ``#2``...; "" becomes
    ``<fallback>_<index>``."""
    raw = [n or f"{fallback}_{i}" for i, n in enumerate(names)]
    taken = set(raw)
    used: set[str] = set()
    next_suffix: dict[str, int] = {}
    out = []
    for name in raw:
        if name in used:
            k = next_suffix.get(name, 1)
            while f"{name}#{k}" in taken or f"{name}#{k}" in used:
                k += 1
            next_suffix[name] = k + 1
            name = f"{name}#{k}"
        used.add(name)
        out.append(name)
    return out


# -- tensors -----------------------------------------------------------------------------
def _read_strings(source: ByteSource, span: Span, name: str) -> np.ndarray:
    """A TFLite STRING buffer: int32 count, count + 1 int32 offsets, then the bytes."""
    raw = source.fetch(span.offset, span.length)
    if len(raw) < 4:
        raise TensorDataError(f"tensor {name!r}: a string buffer of {len(raw)} bytes")
    (count,) = struct.unpack_from("<i", raw, 0)
    if count < 0 or count > MAX_STRINGS or 4 * (count + 2) > len(raw):
        raise TensorDataError(f"tensor {name!r}: string buffer declares {count} strings")
    offsets = struct.unpack_from(f"<{count + 1}i", raw, 4)
    values = np.empty(count, dtype=object)
    for i in range(count):
        start, end = offsets[i], offsets[i + 1]
        if not 0 <= start <= end <= len(raw):
            raise TensorDataError(f"tensor {name!r}: string {i} lies outside its buffer")
        values[i] = raw[start:end]
    return values


def _read_sparse(
    source: ByteSource, span: Span, dt: DType, record: TensorRecord, name: str
) -> np.ndarray:
    assert record.sparsity is not None
    raw = source.fetch(span.offset, span.length)
    if len(raw) * 8 % dt.bits:
        raise TensorDataError(
            f"sparse tensor {name!r}: {len(raw)} bytes are not whole {dt.name} values"
        )
    stored = decode_bytes(raw, dt, len(raw) * 8 // dt.bits)
    return densify(stored, record.shape, record.sparsity, name)


def _tensor(
    record: TensorRecord, name: str, span: Span, source: ByteSource, kind: LocationKind
) -> Tensor | None:
    dt = tflite_dtype(record.type_code)
    if dt is None:
        return None
    doc = tensor_notes(record)
    tensor_source: TensorSource
    shape = record.shape
    if dt.name == "string":
        location = TensorLocation(kind, source.display, span.offset, span.length)
        tensor_source = ArraySource(partial(_read_strings, source, span, name), location)
    elif record.sparsity is not None and dt.bits >= 8:
        # The dense tensor a DENSIFY node makes of it: what the weights are.
        location = TensorLocation(kind, source.display, span.offset, span.length)
        read = partial(_read_sparse, source, span, dt, record, name)
        tensor_source = ArraySource(read, location)
    else:
        tensor_source = FileRange(source, span.offset, span.length, kind)
    if record.quantization is not None and record.quantization.scale.size:
        return QuantizedTensor(name, dt, shape, tensor_source, record.quantization, doc)
    return Tensor(name, dt, shape, tensor_source, doc)


def _value(record: TensorRecord, name: str) -> ValueInfo:
    dt = tflite_dtype(record.type_code)
    # An empty shape is a scalar: converters leave ``has_rank`` false on scalars too.
    shape: tuple[Dim, ...] = tuple(d if d >= 0 else None for d in record.shape)
    type_text = dt.name if dt is not None else type_name(record.type_code)
    return ValueInfo(name, type_text, dt.name if dt is not None else None, shape,
                     tensor_notes(record))  # fmt: skip


# -- graphs ------------------------------------------------------------------------------
class _Builder:
    def __init__(
        self, record: ModelRecord, source: ByteSource, kind: LocationKind, what: str
    ) -> None:
        self.record = record
        self.source = source
        self.kind = kind
        self.what = what
        self.graph_names = unique_names((s.name for s in record.subgraphs), "subgraph")
        self._names: dict[int, list[str]] = {}

    def fail(self, message: str) -> ModelFormatError:
        return ModelFormatError(f"{self.what}: {message}")

    def span(self, k: int, record: TensorRecord) -> Span:
        if record.buffer == 0:
            return Span(0, 0)  # buffer 0 is the schema's empty sentinel
        if not 0 <= record.buffer < len(self.record.buffers):
            raise self.fail(
                f"subgraph {k} tensor {record.name!r}: buffer {record.buffer} is not one of "
                f"the file's {len(self.record.buffers)} buffers"
            )
        return self.record.buffers[record.buffer]

    def tensor_name(self, k: int, names: list[str], index: int, where: str) -> str:
        if index == -1:
            return ""
        if not 0 <= index < len(names):
            raise self.fail(
                f"subgraph {k} {where}: tensor index {index} is not one of its {len(names)} tensors"
            )
        return names[index]

    def names(self, k: int) -> list[str]:
        """Subgraph ``k``'s tensor names, made unique (none for a missing subgraph)."""
        if not 0 <= k < len(self.record.subgraphs):
            return []
        found = self._names.get(k)
        if found is None:
            tensors = self.record.subgraphs[k].tensors
            found = self._names[k] = unique_names((t.name for t in tensors), "tensor")
        return found

    def graph(self, k: int) -> Graph:
        sub = self.record.subgraphs[k]
        names = self.names(k)
        initializers: dict[str, Tensor] = {}
        value_info: dict[str, ValueInfo] = {}
        for record, name in zip(sub.tensors, names):
            span = self.span(k, record)
            tensor = _tensor(record, name, span, self.source, self.kind) if span.length else None
            if tensor is not None:
                initializers[name] = tensor
            else:
                value_info[name] = _value(record, name)
        nodes = self.nodes(k, sub, names)
        declared = tuple(
            value_info.get(n) or _value(sub.tensors[i], n)
            for i, n in self.indexed(k, names, sub.inputs, "inputs")
        )
        outputs = tuple(
            value_info.get(n) or _value(sub.tensors[i], n)
            for i, n in self.indexed(k, names, sub.outputs, "outputs")
        )
        return Graph(
            name=self.graph_names[k],
            nodes=nodes,
            inputs=tuple(v for v in declared if v.name not in initializers),
            outputs=outputs,
            initializers=initializers,
            value_info=value_info,
            path="/" if k == 0 else function_path(self.graph_names[k]),
            declared_inputs=declared,
        )

    def indexed(
        self, k: int, names: list[str], indices: Sequence[int], where: str
    ) -> list[tuple[int, str]]:
        return [(i, self.tensor_name(k, names, i, where)) for i in indices if i != -1]

    def nodes(self, k: int, sub: SubgraphRecord, names: list[str]) -> list[Node]:
        first = [
            self.tensor_name(k, names, op.outputs[0], f"operator {j} outputs").split(";")[0]
            if op.outputs and op.outputs[0] != -1
            else f"{op.op_type}_{j}"
            for j, op in enumerate(sub.operators)
        ]
        node_names = unique_names(first, "node")
        nodes = []
        for j, (op, node_name) in enumerate(zip(sub.operators, node_names)):
            where = f"operator {j} ({op.op_type})"
            inputs = tuple(self.tensor_name(k, names, i, where) for i in op.inputs)
            outputs = tuple(self.tensor_name(k, names, i, where) for i in op.outputs)
            nodes.append(
                Node(
                    node_name,
                    op.op_type,
                    "custom" if op.custom else "",
                    inputs,
                    outputs,
                    self.attributes(k, op, names),
                    has_file_name=False,
                    metadata_props=self.quantization_notes(sub, op),
                )
            )
        return nodes

    def attributes(self, k: int, op: OperatorRecord, names: list[str]) -> dict[str, Attribute]:
        attrs: dict[str, Attribute] = {}
        for name, kind, value in op.options:
            if kind == "SUBGRAPH":
                if not 0 <= value < len(self.graph_names):
                    raise self.fail(
                        f"subgraph {k} operator {op.op_type}: {name} {value} is not one of the "
                        f"file's {len(self.graph_names)} subgraphs"
                    )
                attrs[name] = Attribute(name, "FUNC", SubgraphRef(self.graph_names[value], value))
            else:
                attrs[name] = Attribute(name, attribute_kind(kind), value)
        if op.intermediates:
            found = tuple(
                self.tensor_name(k, names, i, f"{op.op_type} intermediates")
                for i in op.intermediates
            )
            attrs["intermediates"] = Attribute("intermediates", "STRINGS", found)
        return attrs

    def quantization_notes(self, sub: SubgraphRecord, op: OperatorRecord) -> dict[str, str]:
        notes: dict[str, str] = {}
        for label, indices in (("input", op.inputs), ("output", op.outputs)):
            for slot, index in enumerate(indices[:MAX_QUANTIZED_SLOTS]):
                if not 0 <= index < len(sub.tensors):
                    continue
                record = sub.tensors[index]
                if record.quantization is not None:
                    notes[f"{label} {slot} quantization"] = quantization_text(
                        type_name(record.type_code), record.quantization
                    )
                if record.sparsity is not None:
                    notes[f"{label} {slot} sparsity"] = record.sparsity.summary
        return notes

    def metadata(self) -> dict[str, str]:
        rec = self.record
        props: dict[str, str] = {"schema_version": str(rec.version)}
        if rec.description:
            props["description"] = rec.description
        for name, index in rec.metadata:
            key = f"metadata {name}" if name in props or not name else name
            if not 0 <= index < len(rec.buffers):
                props[key] = f"(buffer {index} does not exist)"
                continue
            span = rec.buffers[index]
            props[key] = self.metadata_text(span)
        for sig in rec.signatures:
            graph = (
                self.graph_names[sig.subgraph]
                if 0 <= sig.subgraph < len(self.graph_names)
                else f"subgraph {sig.subgraph} (missing)"
            )
            names = self.names(sig.subgraph)
            props[f"signature {sig.key}"] = (
                f"subgraph {graph}; inputs {_pairs(sig.inputs, names)}; "
                f"outputs {_pairs(sig.outputs, names)}"
            )
        return props

    def metadata_text(self, span: Span) -> str:
        if span.length == 0:
            return "(empty)"
        if span.length <= MAX_METADATA_TEXT:
            raw = self.source.fetch(span.offset, span.length).rstrip(b"\0")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = ""
            if text and text.isprintable():
                return text
        return f"{span.length} bytes"


def _pairs(entries: Sequence[tuple[str, int]], names: Sequence[str]) -> str:
    shown = ", ".join(
        f"{name}={names[index] if 0 <= index < len(names) else f'tensor {index} (missing)'}"
        for name, index in entries[:32]
    )
    return f"[{shown}{', …' if len(entries) > 32 else ''}]"


class SubgraphRef:
    """A ``FUNC`` attribute's value: the subgraph an option indexes, by name and index."""

    __slots__ = ("index", "name")

    def __init__(self, name: str, index: int) -> None:
        self.name = name
        self.index = index

    def __repr__(self) -> str:
        return f"{self.name} (subgraph {self.index})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SubgraphRef) and (self.name, self.index) == (
            other.name,
            other.index,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.index))


def function_path(name: str) -> str:
    """:attr:`Graph.path` of a subgraph other than the main one (as ONNX functions')."""
    return f"function::{name}"


def model_from_record(
    record: ModelRecord,
    source: ByteSource,
    *,
    path: Path | None = None,
    files: DataFiles | None = None,
    kind: LocationKind = "embedded",
    what: str = "model",
) -> Model:
    """The neutral model of a parsed TFLite file whose bytes ``source`` holds."""
    if not record.subgraphs:
        raise ModelFormatError(f"{what}: the model has no subgraph")
    builder = _Builder(record, source, kind, what)
    graph = builder.graph(0)
    functions = tuple(
        Function(name=builder.graph_names[k], domain="", graph=builder.graph(k))
        for k in range(1, len(record.subgraphs))
    )
    return Model(
        graph,
        format="tflite",
        path=path,
        producer_name="TensorFlow Lite",
        doc_string=record.description,
        metadata_props=builder.metadata(),
        functions=functions,
        data_files=files,
    )


__all__ = [
    "QuantizedTensor",
    "SubgraphRef",
    "function_path",
    "model_from_record",
    "quantization_text",
    "tensor_notes",
    "tflite_dtype",
    "unique_names",
]
