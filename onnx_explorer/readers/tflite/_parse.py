"""The TFLite flatbuffer → plain records (subgraphs, tensors, operators, buffer ranges).

Everything is read here, once, through :mod:`._flat` (bounded, errors wrapped), and
copied into small frozen records that hold no reference to the file's bytes: the map
can close once opening is done. Buffers are never copied: a :class:`Span` records where
each buffer's bytes are in the file, either the ``data`` vector's position inside the
flatbuffer or, for models over 2 GB, the Buffer's own ``offset``/``size`` (absolute, after
the flatbuffer); both are checked against the file's size here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._flat import (
    Flat,
    OptionValue,
    enum_name,
    enum_names,
    options_fields,
    read_options,
    union_class,
)
from ._identify import IDENTIFIER, looks_like_tflite
from ._sparse import SparseLevel, Sparsity

#: The file identifier at bytes 4..8 of every TFLite flatbuffer.
#: Buffer ``offset`` values of 0 and 1 mean "no data outside the flatbuffer".
_NO_OFFSET = 1
_CUSTOM = 32  # BuiltinOperator.CUSTOM
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127


@dataclass(frozen=True)
class Span:
    """Where a buffer's bytes are: ``length`` bytes at absolute ``offset`` (0, 0: empty)."""

    offset: int
    length: int


@dataclass(frozen=True)
class Quantization:
    """A tensor's QuantizationParameters: ``real = (q - zero_point) * scale``."""

    scale: np.ndarray  # float32, one per tensor or one per channel of ``axis``
    zero_point: np.ndarray  # int64, as many as scales (or one, or none)
    axis: int
    min: tuple[float, ...] = ()
    max: tuple[float, ...] = ()
    details: str = ""  # a custom quantization's kind (CustomQuantization)


@dataclass(frozen=True)
class TensorRecord:
    name: str
    type_code: int
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None  # shape_signature: -1 for sizes set at run time
    buffer: int
    quantization: Quantization | None
    is_variable: bool
    sparsity: Sparsity | None  # None for dense tensors


@dataclass(frozen=True)
class OperatorRecord:
    op_type: str
    custom: bool
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: tuple[OptionValue, ...]
    intermediates: tuple[int, ...] = ()


@dataclass(frozen=True)
class SubgraphRecord:
    name: str
    tensors: tuple[TensorRecord, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[OperatorRecord, ...]


@dataclass(frozen=True)
class SignatureRecord:
    key: str
    subgraph: int
    inputs: tuple[tuple[str, int], ...]  # (signature name, tensor index)
    outputs: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ModelRecord:
    version: int
    description: str
    subgraphs: tuple[SubgraphRecord, ...]
    buffers: tuple[Span, ...]
    metadata: tuple[tuple[str, int], ...]  # (name, buffer index)
    signatures: tuple[SignatureRecord, ...]
    extra: Mapping[str, str] = field(default_factory=dict)


def parse(data: Any, what: str) -> ModelRecord:
    """Decode the whole flatbuffer ``data`` (bytes or a memoryview of the file)."""
    try:  # the schema package: ~0.1 s, imported when a file is read
        from tflite.Model import Model
    except ImportError:
        raise ImportError(
            f"{what} is a TFLite model; reading it needs the tflite schema package: "
            "pip install 'onnx_explorer[tflite]'"
        ) from None

    flat = Flat(data, what)
    if flat.size < 8:
        raise flat.fail(f"{flat.size} bytes is too short for a TFLite file")
    if not looks_like_tflite(bytes(data[:8])):
        raise flat.fail(
            f"no TFLite file identifier (bytes 4..8 are {bytes(data[4:8])!r}, not b'TFL3')"
        )
    with flat.guard("the model table"):
        root = int.from_bytes(bytes(data[:4]), "little")
        if root + 4 > flat.size:
            raise flat.fail(f"the root table offset {root} is past the end of the file")
        model = Model.GetRootAs(data, 0)
        version = int(model.Version())
        description = flat.text(model.Description())
        n_codes = flat.count(model.OperatorCodesLength(), 4, "operator_codes")
        n_subgraphs = flat.count(model.SubgraphsLength(), 4, "subgraphs")
        n_buffers = flat.count(model.BuffersLength(), 4, "buffers")
        n_metadata = flat.count(model.MetadataLength(), 4, "metadata")
        n_signatures = flat.count(model.SignatureDefsLength(), 4, "signature_defs")
    codes = [_operator_code(flat, model, i) for i in range(n_codes)]
    buffers = tuple(_buffer(flat, model, i) for i in range(n_buffers))
    subgraphs = tuple(_subgraph(flat, model, k, codes) for k in range(n_subgraphs))
    metadata = []
    for i in range(n_metadata):
        with flat.guard(f"metadata {i}"):
            entry = model.Metadata(i)
            metadata.append((flat.text(entry.Name()), int(entry.Buffer())))
    signatures = tuple(_signature(flat, model, i) for i in range(n_signatures))
    return ModelRecord(version, description, subgraphs, buffers, tuple(metadata), signatures)


def _operator_code(flat: Flat, model: Any, i: int) -> tuple[str, bool]:
    """(op type, custom?) of operator code ``i``: a builtin's name, or a custom op's code."""
    with flat.guard(f"operator code {i}"):
        code = model.OperatorCodes(i)
        builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
        if builtin == _CUSTOM:
            return flat.text(code.CustomCode()) or "CUSTOM", True
        if builtin == _PLACEHOLDER_FOR_GREATER_OP_CODES and code.BuiltinCode() == 0:
            return "PLACEHOLDER_FOR_GREATER_OP_CODES", False
        name = enum_names("BuiltinOperator").get(builtin)
        return (name if name is not None else f"BUILTIN_{builtin}"), False


def _buffer(flat: Flat, model: Any, i: int) -> Span:
    with flat.guard(f"buffer {i}"):
        buffer = model.Buffers(i)
        span = flat.vector_span(buffer, 4)  # Buffer.data: [ubyte]
        if span is not None and span[1] > 0:
            return Span(*span)
        offset, size = int(buffer.Offset()), int(buffer.Size())
        if offset > _NO_OFFSET and size > 0:
            if offset + size > flat.size:
                raise flat.fail(
                    f"{size} bytes at offset {offset} run past the end of the file "
                    f"({flat.size} bytes; truncated?)"
                )
            return Span(offset, size)
        return Span(0, 0)


def _quantization(flat: Flat, q: Any) -> Quantization | None:
    if q is None:
        return None
    scale = flat.numbers(q, "Scale", 4).astype(np.float32)
    zero_point = flat.numbers(q, "ZeroPoint", 8).astype(np.int64)
    low = tuple(float(v) for v in flat.numbers(q, "Min", 4).tolist())
    high = tuple(float(v) for v in flat.numbers(q, "Max", 4).tolist())
    details = union_class("QuantizationDetails", int(q.DetailsType())) or ""
    if not scale.size and not low and not high and not details:
        return None
    return Quantization(scale, zero_point, int(q.QuantizedDimension()), low, high, details)


def _sparsity(flat: Flat, s: Any) -> Sparsity | None:
    if s is None:
        return None
    order = flat.ints(s, "TraversalOrder")
    block_map = flat.ints(s, "BlockMap")
    dims, levels = [], []
    for d in range(flat.count(s.DimMetadataLength(), 4, "dim_metadata")):
        meta = s.DimMetadata(d)
        kind = enum_name("DimensionType", int(meta.Format()))
        if kind == "DENSE":
            dims.append(f"dense {int(meta.DenseSize())}")
            levels.append(SparseLevel(int(meta.DenseSize())))
            continue
        segments = _index_vector(flat, int(meta.ArraySegmentsType()), meta.ArraySegments())
        indices = _index_vector(flat, int(meta.ArrayIndicesType()), meta.ArrayIndices())
        dims.append(f"{kind.lower()} ({segments.size} segments, {indices.size} indices)")
        levels.append(SparseLevel(int(meta.DenseSize()), segments, indices))
    summary = (
        f"sparse: traversal order {list(order)}, block map {list(block_map)}, "
        f"dims [{'; '.join(dims)}]"
    )
    return Sparsity(order, block_map, tuple(levels), summary)


def _index_vector(flat: Flat, type_code: int, table: Any) -> np.ndarray:
    """A SparseIndexVector (Int32Vector, Uint16Vector or Uint8Vector) as int64."""
    class_name = union_class("SparseIndexVector", type_code)
    found = options_fields(class_name) if class_name else None
    if found is None or table is None:
        return np.zeros(0, np.int64)
    vector = found[1]()
    vector.Init(table.Bytes, table.Pos)
    return flat.numbers(vector, "Values", 1).astype(np.int64)


def _tensor(flat: Flat, subgraph: Any, j: int) -> TensorRecord:
    t = subgraph.Tensors(j)
    shape = flat.ints(t, "Shape")
    signature = flat.ints(t, "ShapeSignature") or None
    return TensorRecord(
        name=flat.text(t.Name()),
        type_code=int(t.Type()),
        shape=shape,
        signature=signature if signature != shape else None,
        buffer=int(t.Buffer()),
        quantization=_quantization(flat, t.Quantization()),
        is_variable=bool(t.IsVariable()),
        sparsity=_sparsity(flat, t.Sparsity()),
    )


def _operator(flat: Flat, subgraph: Any, j: int, codes: list[tuple[str, bool]]) -> OperatorRecord:
    op = subgraph.Operators(j)
    index = int(op.OpcodeIndex())
    if not 0 <= index < len(codes):
        raise flat.fail(f"opcode index {index} is not one of the {len(codes)} operator codes")
    op_type, custom = codes[index]
    options: list[OptionValue] = []
    for enum, type_code, table in (
        ("BuiltinOptions", int(op.BuiltinOptionsType()), op.BuiltinOptions()),
        ("BuiltinOptions2", int(op.BuiltinOptions2Type()), op.BuiltinOptions2()),
    ):
        cls = union_class(enum, type_code)
        if cls is not None:
            options += read_options(flat, cls, table)
        elif type_code:
            options.append((f"{enum.lower()}_type", "INT", type_code))
    n_custom = flat.count(op.CustomOptionsLength(), 1, "custom_options")
    large = int(op.LargeCustomOptionsSize())
    if n_custom or large:
        fmt = enum_name("CustomOptionsFormat", int(op.CustomOptionsFormat()))
        options.append(("custom_options", "STRING", f"{n_custom or large} bytes ({fmt})"))
    mutating = flat.numbers(op, "MutatingVariableInputs", 1)
    if mutating.size and mutating.any():
        options.append(("mutating_variable_inputs", "INTS", tuple(int(v) for v in mutating)))
    return OperatorRecord(
        op_type,
        custom,
        flat.ints(op, "Inputs"),
        flat.ints(op, "Outputs"),
        tuple(options),
        flat.ints(op, "Intermediates"),
    )


def _subgraph(flat: Flat, model: Any, k: int, codes: list[tuple[str, bool]]) -> SubgraphRecord:
    with flat.guard(f"subgraph {k}"):
        subgraph = model.Subgraphs(k)
        name = flat.text(subgraph.Name())
        n_tensors = flat.count(subgraph.TensorsLength(), 4, "tensors")
        n_operators = flat.count(subgraph.OperatorsLength(), 4, "operators")
        inputs, outputs = flat.ints(subgraph, "Inputs"), flat.ints(subgraph, "Outputs")
    tensors = []
    for j in range(n_tensors):
        with flat.guard(f"subgraph {k} tensor {j}"):
            tensors.append(_tensor(flat, subgraph, j))
    operators = []
    for j in range(n_operators):
        with flat.guard(f"subgraph {k} operator {j}"):
            operators.append(_operator(flat, subgraph, j, codes))
    return SubgraphRecord(name, tuple(tensors), inputs, outputs, tuple(operators))


def _signature(flat: Flat, model: Any, i: int) -> SignatureRecord:
    with flat.guard(f"signature {i}"):
        sig = model.SignatureDefs(i)
        maps = []
        for field_name in ("Inputs", "Outputs"):
            n = flat.count(getattr(sig, f"{field_name}Length")(), 4, field_name.lower())
            entries = []
            for m in range(n):
                entry = getattr(sig, field_name)(m)
                entries.append((flat.text(entry.Name()), int(entry.TensorIndex())))
            maps.append(tuple(entries))
        return SignatureRecord(
            flat.text(sig.SignatureKey()), int(sig.SubgraphIndex()), maps[0], maps[1]
        )


__all__ = [
    "IDENTIFIER",
    "ModelRecord",
    "OperatorRecord",
    "Quantization",
    "SignatureRecord",
    "Span",
    "SubgraphRecord",
    "TensorRecord",
    "looks_like_tflite",
    "parse",
]
