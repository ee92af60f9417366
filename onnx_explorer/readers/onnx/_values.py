"""ONNX element types, value types and tensors → neutral :class:`ValueInfo` and :class:`Tensor`.

A tensor is described without reading its bytes: external data stays in its file,
``raw_data`` cut out by the wire walk (:mod:`.protobuf._wire`) is read from its range of
the model file, and typed fields are decoded when the values are asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ...dtypes import DType, dtype
from ...external_data import DataFiles, ExternalRef
from ...model import SparseTensor, ValueInfo
from ...sources.remote import RemoteDir
from ...tensors import (
    ArraySource,
    BytesSource,
    ExternalBytes,
    FileRange,
    LocationKind,
    MemoryBytes,
    Tensor,
    TensorLocation,
    TensorSource,
)
from ..protobuf._wire import Stripped

# TensorProto.DataType → our dtype names.
_DTYPE_NAMES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8_e4m3fn",
    18: "float8_e4m3fnuz", 19: "float8_e5m2", 20: "float8_e5m2fnuz", 21: "uint4", 22: "int4",
    23: "float4_e2m1fn", 24: "float8_e8m0fnu", 25: "uint2", 26: "int2",
    27: "float6_e2m3fn", 28: "float6_e3m2fn",
}  # fmt: skip
UNDEFINED = DType("undefined", np.dtype(object), 0, is_numeric=False)
_DTYPES = {code: dtype(name) for code, name in _DTYPE_NAMES.items()}
_EXTERNAL = onnx.TensorProto.EXTERNAL


def _s(value: str | bytes) -> str:
    """Text of a string field: protobuf hands back bytes when a proto2 string is not UTF-8."""
    if isinstance(value, str):
        return value
    return bytes(value).decode("utf-8", "replace")


def onnx_dtype(elem_type: int) -> DType:
    return _DTYPES.get(elem_type, UNDEFINED)


# TensorProto.DataType → ONNX's own short names, looked up once.
_ELEM_NAMES = {code: name.lower() for name, code in onnx.TensorProto.DataType.items()}


def onnx_elem_name(elem_type: int) -> str:
    """ONNX's own short name for an element type, as in ``tensor(float)``."""
    name = _ELEM_NAMES.get(elem_type)
    return name if name is not None else f"unknown({elem_type})"


# -- types -------------------------------------------------------------------------
def _elem_name(elem_type: int) -> str:
    """An element type by the one name every view uses (``float32``, ``string``)."""
    dt = _DTYPES.get(elem_type)
    return dt.name if dt is not None else onnx_elem_name(elem_type)


def type_string(tp: onnx.TypeProto) -> str:
    """``float32``, ``seq(map(string, float32))``, ``sparse_tensor(int64)``: element types by
    their dtype names, so a type reads the same as the dtype shown beside it."""
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return _elem_name(tp.tensor_type.elem_type)
    if which == "sparse_tensor_type":
        return f"sparse_tensor({_elem_name(tp.sparse_tensor_type.elem_type)})"
    if which == "sequence_type":
        return f"seq({type_string(tp.sequence_type.elem_type)})"
    if which == "map_type":
        key = _elem_name(tp.map_type.key_type)
        return f"map({key}, {type_string(tp.map_type.value_type)})"
    if which == "optional_type":
        return f"optional({type_string(tp.optional_type.elem_type)})"
    return ""


def _shape(tensor_type: Any) -> tuple[int | str | None, ...] | None:
    if not tensor_type.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for dim in tensor_type.shape.dim:
        which = dim.WhichOneof("value")
        dims.append(dim.dim_value if which == "dim_value" else _s(dim.dim_param) if which else None)
    return tuple(dims)


def value_info(vi: onnx.ValueInfoProto) -> ValueInfo:
    tp = vi.type
    which = tp.WhichOneof("value")
    elem = shape = None
    if which in ("tensor_type", "sparse_tensor_type"):
        inner = getattr(tp, which)
        elem = onnx_dtype(inner.elem_type).name
        shape = _shape(inner)
    return ValueInfo(_s(vi.name), type_string(tp), elem, shape, _s(vi.doc_string))


# -- tensors -----------------------------------------------------------------------
class _ProtoRawBytes(BytesSource):
    """raw_data of a TensorProto held in memory: a ModelProto passed by the caller, or a
    payload too small to be cut out of the file (``embedded``)."""

    def __init__(
        self, tp: onnx.TensorProto, kind: LocationKind = "memory", length: int = -1
    ) -> None:
        self._tp = tp
        length = length if length >= 0 else len(tp.raw_data)
        self.location = TensorLocation(kind, length=length)

    def buffer(self, name: str) -> Any:
        return self._tp.raw_data


def _typed_loader(tp: onnx.TensorProto) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        if tp.data_type == onnx.TensorProto.STRING:
            # Elements are arbitrary bytes; onnx decodes them strictly as UTF-8.
            return np.array(
                [bytes(v).decode("utf-8", "replace") for v in tp.string_data], dtype=object
            ).reshape(tuple(tp.dims))
        return onnx.numpy_helper.to_array(tp)

    return load


class TensorContext:
    """What describing one model's tensors needs: where their bytes live."""

    def __init__(
        self, base_dir: Path | RemoteDir | None, stripped: Stripped | None, model_file: Any
    ) -> None:
        self.base_dir = base_dir
        self.stripped = stripped
        self.model_file = model_file  # ByteSource or bytes the stripped ranges refer to
        self.files = DataFiles()

    def tensor(self, tp: onnx.TensorProto, name: str | None = None) -> Tensor:
        doc = tp.doc_string
        return Tensor(
            name or _s(tp.name),
            _DTYPES.get(tp.data_type, UNDEFINED),
            tuple(tp.dims),
            self.source(tp),
            doc if type(doc) is str else _s(doc),
        )

    def source(self, tp: onnx.TensorProto) -> TensorSource:
        if tp.data_location == _EXTERNAL:
            entries = [(e.key, e.value) for e in tp.external_data]
            if not all(type(k) is str and type(v) is str for k, v in entries):
                entries = [(_s(k), _s(v)) for k, v in entries]  # not UTF-8
            return ExternalBytes(ExternalRef.from_entries(entries), self.base_dir, self.files)
        if tp.HasField("raw_data"):
            if self.stripped is not None:
                raw = tp.raw_data
                index = self.stripped.marker_index(raw)
                if index is not None:
                    offset, length = self.stripped.ranges[index]
                    if isinstance(self.model_file, bytes | memoryview):
                        return MemoryBytes(memoryview(self.model_file)[offset : offset + length])
                    return FileRange(self.model_file, offset, length)
                return _ProtoRawBytes(tp, "embedded", len(raw))  # kept in the proto: no copy
            return _ProtoRawBytes(tp)
        return ArraySource(_typed_loader(tp), TensorLocation("typed"))

    def sparse(self, sp: onnx.SparseTensorProto, name: str | None = None) -> SparseTensor:
        values = self.tensor(sp.values, name or _s(sp.values.name))
        indices = self.tensor(sp.indices, (name or _s(sp.values.name)) + ".indices")
        return SparseTensor(values, indices, tuple(sp.dims))


__all__ = [
    "UNDEFINED",
    "TensorContext",
    "onnx_dtype",
    "onnx_elem_name",
    "type_string",
    "value_info",
]
