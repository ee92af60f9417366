"""GraphDef element types and lazy tensors: ``DataType`` codes → dtypes, ``TensorProto`` → Tensor.

``tensor_content`` is located in the file without copying (binary files: the wire
walk left a marker, see :mod:`.protobuf._wire`) or fetched from the message when read;
typed ``*_val`` fields are decoded on first read, following TensorFlow's rule that
fewer values than elements repeat the last one — without materialising such a
fill for statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import ml_dtypes
import numpy as np

from ....dtypes import DType, dtype
from ....errors import ExplorerError, TensorDataError
from ....stats import Repeat
from ....tensors import (
    FileRange,
    LocationKind,
    MemoryBytes,
    Tensor,
    TensorLocation,
    TensorSource,
)
from ...protobuf._wire import MARKER_LENGTH, Stripped
from . import _proto as pb

#: Largest array ``numpy()`` builds from a partial fill (a splat is a free broadcast view).
MAX_FILL_BYTES = 1 << 30
#: Largest splat ``numpy()`` hands out as a zero-stride view. The view costs nothing, but
#: whatever the caller does with it (sum, compare, copy) walks every element: 2**46 float32
#: would take numpy days. Statistics of any splat take constant time (``Tensor.iter_runs``).
MAX_VIEW_BYTES = 1 << 40

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

    Streaming (``iter_chunks``) never allocates more than the stored values: the
    fill comes as zero-stride broadcast views; ``iter_runs`` (statistics) gives the
    whole fill as one :class:`Repeat`, so a 2**46-element splat is summarised at once.
    ``numpy()`` of a splat (at most one stored value) is a broadcast view up to
    ``MAX_VIEW_BYTES``; a partial fill is materialised only up to ``MAX_FILL_BYTES``.
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
        nbytes = count * values.dtype.itemsize
        if values.size <= 1:
            if nbytes > MAX_VIEW_BYTES:
                raise TensorDataError(
                    f"tensor {name!r}: {count} elements all equal to {fill[0]!r} ({nbytes} "
                    "bytes if it were an array): too many to hand out as an array; its "
                    "statistics and histogram (stats(), histogram()) still work"
                )
            return np.broadcast_to(fill, (count,))
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

    def runs(
        self, dt: DType, count: int, name: str, max_elements: int
    ) -> Iterator[np.ndarray | Repeat]:
        values = self._stored(dt, count, name)
        stored = min(values.size, count)
        for start in range(0, stored, max_elements):
            yield values[start : min(stored, start + max_elements)]
        if count > stored:
            yield Repeat(self._fill_value(values, dt), count - stored)

    def repeated(self, count: int) -> int:
        return max(0, count - self._stored_count)

    def check(self, dt: DType, count: int, name: str) -> None:
        self._stored(dt, count, name)

    def release(self) -> None:
        self._values = None


class _Unreadable(TensorSource):
    """A tensor whose values cannot be shown (resource handles, variants, unknown rank)."""

    def __init__(self, reason: str, kind: LocationKind = "typed") -> None:
        self._reason = reason
        self.location = TensorLocation(kind)

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        raise TensorDataError(f"tensor {name!r}: {self._reason}")


class _ProtoContent(MemoryBytes):
    """``tensor_content`` of a message held in memory, fetched when read (no copy at load)."""

    def __init__(self, tp: Any, length: int, kind: LocationKind) -> None:
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


class TensorContext:
    """Where tensor bytes live for one model: a mapped file, caller's bytes, or messages."""

    def __init__(
        self, kind: LocationKind, stripped: Stripped | None = None, model_file: Any = None
    ) -> None:
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


__all__ = [
    "MAX_FILL_BYTES",
    "MAX_VIEW_BYTES",
    "FillSource",
    "TensorContext",
    "tf_dtype",
    "tf_type_name",
]
