"""Lazy tensors: dtype, shape and location known without IO; bytes read on demand.

A :class:`Tensor` knows where its bytes live through a :class:`TensorSource`.
Nothing is read until :meth:`Tensor.numpy` or :meth:`Tensor.iter_chunks` is
called. Bytes in files are read with ``pread`` into owned buffers, except that
``numpy()`` of a large tensor returns a read-only view of one shared map per file.

Streaming (statistics, histograms, chunks, stored bytes, diff digests) never reads such
a map, even once ``numpy()`` cached one: it reads the file again, into buffers it owns,
checked against the file's size, so a file that shrinks afterwards is an
:class:`ExternalDataError`, never a SIGBUS.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .dtypes import BlockDType, DType, decode_bytes
from .errors import ExplorerError, ExternalDataError, TensorDataError
from .external_data import DataFiles, ExternalRef, parse_size_field, resolve_location
from .sources import ByteSource
from .sources.remote import RemoteDir
from .stats import (
    Dequantizer,
    Histogram,
    Repeat,
    TensorStats,
    tensor_histogram,
    tensor_stats,
)

__all__ = [
    "CHUNK_ELEMENTS",
    "MAP_MIN_BYTES",
    "MAX_ELEMENTS",
    "ArraySource",
    "BlockBytes",
    "BlockDecoder",
    "BytesSource",
    "ExternalBytes",
    "FileRange",
    "LocationKind",
    "MemoryBytes",
    "Tensor",
    "TensorLocation",
    "TensorSource",
]

#: Elements decoded per chunk when streaming (4 Mi elements: 16 MB of float32).
CHUNK_ELEMENTS = 1 << 22
#: Most elements a tensor may declare, whatever its dtype (strings have no byte size to
#: check); beyond, numpy cannot even describe the array.
MAX_ELEMENTS = 1 << 48


#: Most elements of a cached fill streaming walks (a longer one is read as runs).
_CACHED_FILL_ELEMENTS = 1 << 24


#: Where a tensor's bytes are (``TensorLocation.kind``).
LocationKind = Literal["embedded", "typed", "external", "memory", "attribute"]


@dataclass(frozen=True)
class TensorLocation:
    """Where a tensor's bytes live, known without reading them.

    ``kind`` is one of ``"embedded"`` (raw bytes inside the model file),
    ``"typed"`` (typed value fields of the file format), ``"external"`` (a
    separate data file), ``"memory"`` (bytes of an in-memory model) or ``"attribute"``
    (learned values kept in a node's attribute lists).
    """

    kind: LocationKind
    path: str | None = None
    offset: int | None = None
    length: int | None = None

    def describe(self) -> str:
        if self.kind == "external":
            where = f"external file {self.path!r}"
            if self.offset is not None:
                where += f" at offset {self.offset}"
            if self.length is not None:
                where += f", {self.length} bytes"
            return where
        if self.kind == "embedded" and self.offset is not None:
            return f"embedded in the model file at offset {self.offset}, {self.length} bytes"
        return {
            "typed": "embedded in the model (typed value fields)",
            "memory": "embedded in the in-memory model",
        }.get(self.kind, self.kind)


class TensorSource:
    """Produces a tensor's flat decoded values; subclasses say where from."""

    location: TensorLocation

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        raise NotImplementedError

    def chunks(self, dt: DType, count: int, name: str, max_elements: int) -> Iterator[np.ndarray]:
        flat = self.array(dt, count, name)
        for start in range(0, count, max_elements):
            yield flat[start : start + max_elements]

    def runs(
        self, dt: DType, count: int, name: str, max_elements: int
    ) -> Iterator[np.ndarray | Repeat]:
        """Like :meth:`chunks`, but a value repeated many times may come as one :class:`Repeat`."""
        yield from self.chunks(dt, count, name, max_elements)

    def repeated(self, count: int) -> int:
        """How many of ``count`` elements are repeats that are not stored (known without IO)."""
        return 0

    def check(self, dt: DType, count: int, name: str) -> None:
        """Raise the error reading would raise, reading as little as possible."""
        self.array(dt, count, name)

    def release(self) -> None:
        """Forget anything cached."""


#: File ranges smaller than this are copied by ``numpy()`` rather than mapped: the copy is
#: cheap, and small arrays the explorer keeps (quantization scales, label previews) then
#: never depend on the file staying as it was.
MAP_MIN_BYTES = 1 << 20


def _named(error: ExplorerError, name: str) -> ExplorerError:
    return type(error)(f"tensor {name!r}: {error}")


def _maps_a_file(values: np.ndarray) -> bool:
    """Whether ``values`` views a memory map (a file's pages) rather than memory of its own."""
    base: object = values
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap)


class BytesSource(TensorSource):
    """Values stored as little-endian bytes (raw_data, external data, tensor_content).

    Bytes in memory come from :meth:`buffer`; bytes in a file from :meth:`file_range`,
    read with ``pread`` into owned buffers when streaming (a file that shrinks
    meanwhile is an error, not a SIGBUS) and mapped only by ``numpy()`` of a large
    tensor (see :meth:`~.sources.LocalFile.view` for what a map can and cannot guard against).
    """

    def buffer(self, name: str) -> Any:
        raise NotImplementedError

    def file_range(self, name: str) -> tuple[ByteSource, int, int] | None:
        """(file, offset, length) when the bytes live in a file, checked against its size."""
        return None

    @staticmethod
    def _check_length(length: int, dt: DType, count: int, name: str) -> None:
        expected = dt.storage_bytes(count)
        if length != expected:
            raise TensorDataError(
                f"tensor {name!r}: {length} bytes of data but {dt.name} "
                f"with {count} elements needs {expected}"
            )

    def _checked_buffer(self, dt: DType, count: int, name: str) -> Any:
        buf = self.buffer(name)
        self._check_length(len(buf), dt, count, name)
        return buf

    def _checked_range(
        self, dt: DType, count: int, name: str
    ) -> tuple[ByteSource, int, int] | None:
        if not dt.is_numeric and dt.name not in ("complex64", "complex128"):
            raise TensorDataError(f"tensor {name!r}: {dt.name} cannot be stored as raw bytes")
        where = self.file_range(name)
        if where is not None:
            self._check_length(where[2], dt, count, name)
        return where

    @staticmethod
    def _read(data_file: ByteSource, offset: int, length: int, name: str) -> np.ndarray:
        raw = np.empty(length, np.uint8)
        try:
            data_file.read_into(offset, raw)
        except ExplorerError as exc:
            raise _named(exc, name) from None
        return raw

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        where = self._checked_range(dt, count, name)
        if where is None:
            return decode_bytes(self._checked_buffer(dt, count, name), dt, count)
        data_file, offset, length = where
        if dt.bits < 8 or length < MAP_MIN_BYTES:  # unpacking copies anyway; small: copy
            values = decode_bytes(self._read(data_file, offset, length, name), dt, count)
            values.flags.writeable = False  # as a mapped array: numpy() values are shared
            return values
        try:
            view = data_file.view(offset, length)
        except ExplorerError as exc:
            raise _named(exc, name) from None
        return decode_bytes(view, dt, count)

    def chunks(self, dt: DType, count: int, name: str, max_elements: int) -> Iterator[np.ndarray]:
        where = self._checked_range(dt, count, name)
        buf: Any = self._checked_buffer(dt, count, name) if where is None else b""
        # Packed types: cut on a whole group of bytes (4 elements fit 1, 2 or 3 bytes).
        step = max(4, max_elements - max_elements % 4)
        for start in range(0, count, step):
            stop = min(count, start + step)
            first = start * dt.bits // 8
            last = (stop * dt.bits + 7) // 8
            if where is not None:  # a fresh buffer per chunk: callers may keep chunks
                data_file, offset, _ = where
                yield decode_bytes(
                    self._read(data_file, offset + first, last - first, name), dt, stop - start
                )
            else:
                yield decode_bytes(buf[first:last], dt, stop - start)

    def stored_bytes(
        self, dt: DType, count: int, name: str, buffer: np.ndarray
    ) -> Iterator[memoryview]:
        """The stored bytes in pieces of at most ``buffer.nbytes``: a file's read into
        ``buffer`` (so each piece is valid until the next), memory's as views."""
        where = self._checked_range(dt, count, name)
        step = buffer.nbytes
        if where is None:
            data = memoryview(self._checked_buffer(dt, count, name)).cast("B")
            for start in range(0, len(data), step):
                yield data[start : start + step]
            return
        data_file, offset, length = where
        whole = buffer.reshape(-1).view(np.uint8).data
        for start in range(0, length, step):
            piece = whole[: min(step, length - start)]
            try:
                data_file.read_into(offset + start, piece)
            except ExplorerError as exc:
                raise _named(exc, name) from None
            yield piece

    def check(self, dt: DType, count: int, name: str) -> None:
        where = self._checked_range(dt, count, name)
        if where is None:
            self._checked_buffer(dt, count, name)
            return
        data_file, offset, length = where
        try:
            data_file.check_range(offset, length)
        except ExplorerError as exc:
            raise _named(exc, name) from None


class MemoryBytes(BytesSource):
    """Bytes already in memory (raw_data of a model passed as a proto or bytes)."""

    def __init__(self, data: bytes | memoryview, kind: LocationKind = "memory") -> None:
        self._data = data
        self.location = TensorLocation(kind, length=len(data))

    def buffer(self, name: str) -> Any:
        return self._data


class FileRange(BytesSource):
    """Bytes at a known offset of the model file (raw_data found by the wire walk)."""

    def __init__(
        self, data_file: ByteSource, offset: int, length: int, kind: LocationKind = "embedded"
    ) -> None:
        self._file = data_file
        self._offset = offset
        self._length = length
        self.location = TensorLocation(kind, data_file.display, offset, length)

    def file_range(self, name: str) -> tuple[ByteSource, int, int]:
        return self._file, self._offset, self._length


#: A reader's dequantization of a block-quantized type: the stored bytes of whole blocks
#: (flat uint8) → their values (float32, ``block_size`` per block).
BlockDecoder = Callable[[np.ndarray], np.ndarray]


class BlockBytes(FileRange):
    """Block-quantized values (:class:`~.dtypes.BlockDType`) at a range of a file.

    Values are read and dequantized a run of whole blocks at a time by the reader's
    ``dequantize``: streaming (statistics, histograms, :meth:`Tensor.iter_chunks`) never
    holds more than one chunk of blocks and its float32 values, and ``numpy()`` fills one
    float32 array chunk by chunk. The stored bytes are what a diff compares first
    (:meth:`BytesSource.stored_bytes`), as for any tensor stored as bytes.
    """

    def __init__(
        self,
        data_file: ByteSource,
        offset: int,
        length: int,
        dequantize: BlockDecoder,
        kind: LocationKind = "embedded",
    ) -> None:
        super().__init__(data_file, offset, length, kind)
        self._dequantize = dequantize

    @staticmethod
    def _block_type(dt: DType, name: str) -> BlockDType:
        if not isinstance(dt, BlockDType):
            raise TensorDataError(f"tensor {name!r}: {dt.name} is not a block-quantized type")
        return dt

    def _decode(self, raw: np.ndarray, blocks: int, bt: BlockDType, name: str) -> np.ndarray:
        try:
            values = self._dequantize(raw)
        except ExplorerError as exc:
            raise _named(exc, name) from None
        except Exception as exc:  # a corrupt block must stay this tensor's problem
            raise TensorDataError(f"tensor {name!r}: cannot dequantize {bt.name}: {exc}") from None
        flat = np.asarray(values, dtype=np.float32).reshape(-1)
        if flat.size != blocks * bt.block_size:
            raise TensorDataError(
                f"tensor {name!r}: dequantizing {blocks} {bt.name} blocks gave {flat.size} "
                f"values, not {blocks * bt.block_size}"
            )
        return flat

    def _runs_of_blocks(
        self, dt: DType, count: int, name: str, max_elements: int
    ) -> Iterator[np.ndarray]:
        """Dequantized values of whole blocks, at most ``max_elements`` (or one block) each."""
        bt = self._block_type(dt, name)
        data_file, offset, _ = self.file_range(name)
        self._check_length(self._length, dt, count, name)  # whole blocks, as dtype × shape
        per_run = max(1, max_elements // bt.block_size)
        total = bt.blocks(count)
        for first in range(0, total, per_run):
            n = min(per_run, total - first)
            raw = self._read(data_file, offset + first * bt.block_bytes, n * bt.block_bytes, name)
            values = self._decode(raw, n, bt, name)
            start = first * bt.block_size
            yield values[: min(values.size, count - start)]  # a partial last block: its head

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        out = np.empty(count, np.float32)
        done = 0
        for values in self._runs_of_blocks(dt, count, name, CHUNK_ELEMENTS):
            out[done : done + values.size] = values
            done += values.size
        out.flags.writeable = False  # as a mapped array: numpy() values are shared
        return out

    def chunks(self, dt: DType, count: int, name: str, max_elements: int) -> Iterator[np.ndarray]:
        for values in self._runs_of_blocks(dt, count, name, max_elements):
            for start in range(0, values.size, max_elements):  # blocks larger than a chunk
                yield values[start : start + max_elements]


class ExternalBytes(BytesSource):
    """Bytes in an external data file, resolved and validated on first read."""

    def __init__(
        self, ref: ExternalRef, base_dir: Path | RemoteDir | None, files: DataFiles
    ) -> None:
        self.ref = ref
        self._base_dir = base_dir
        self._files = files
        self.location = TensorLocation("external", ref.location, ref.offset_int(), ref.length_int())

    def data_file(self, name: str) -> ByteSource:
        if self._base_dir is None:
            raise ExternalDataError(
                f"tensor {name!r}: stored in external file {self.ref.location!r}, but the model "
                "was not loaded from a file; pass external_data_dir=..."
            )
        if isinstance(self._base_dir, RemoteDir):  # same rules, joined under the model's URL
            base = self._base_dir
            url = base.resolve(self.ref.location, name)
            return self._files.get_source(url, lambda: base.open(url))
        path = resolve_location(self._base_dir, self.ref.location, name)
        return self._files.get(path)

    def file_range(self, name: str) -> tuple[ByteSource, int, int]:
        offset = parse_size_field(self.ref.offset, "offset", name) or 0
        length = parse_size_field(self.ref.length, "length", name)
        data_file = self.data_file(name)
        try:
            size = data_file.size
        except ExplorerError as exc:
            raise _named(exc, name) from None
        if offset > size:
            raise ExternalDataError(
                f"tensor {name!r}: offset {offset} is past the end of {self.ref.location!r} "
                f"({size} bytes; truncated?)"
            )
        if length is None:
            length = size - offset
        if offset + length > size:
            raise ExternalDataError(
                f"tensor {name!r}: {length} bytes at offset {offset} run past the end of "
                f"{self.ref.location!r} ({size} bytes; truncated?)"
            )
        return data_file, offset, length

    def verify_checksum(self, name: str) -> bool:
        if self.ref.checksum is None:
            raise ExternalDataError(f"tensor {name!r}: external data has no checksum to verify")
        try:
            digest = self.data_file(name).sha1()
        except ExplorerError as exc:
            raise _named(exc, name) from None
        return digest == self.ref.checksum.strip().lower()


class ArraySource(TensorSource):
    """Values produced by a loader (typed fields of a protobuf), decoded on first use."""

    def __init__(self, loader: Callable[[], np.ndarray], location: TensorLocation) -> None:
        self._loader = loader
        self.location = location

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        try:
            values = np.asarray(self._loader()).reshape(-1)
        except ExplorerError:
            raise
        except Exception as exc:  # a corrupt field must stay this tensor's problem
            raise TensorDataError(f"tensor {name!r}: cannot decode values: {exc}") from None
        if values.size != count:
            raise TensorDataError(
                f"tensor {name!r}: {values.size} values stored but its shape needs {count}"
            )
        return values


class Tensor:
    """A named n-dimensional array whose bytes are read only when asked for."""

    __slots__ = (
        "_cached",
        "_mapped",
        "_size",
        "_source",
        "doc_string",
        "dtype_info",
        "name",
        "shape",
    )

    def __init__(
        self,
        name: str,
        dtype_info: DType,
        shape: tuple[int, ...],
        source: TensorSource,
        doc_string: str = "",
    ) -> None:
        self.name = name
        self.dtype_info = dtype_info
        self.shape = shape
        self.doc_string = doc_string
        self._source = source
        self._cached: np.ndarray | None = None
        self._mapped = False  # _cached views a file's map: streaming never reads it
        self._size: int | None = None

    # -- known without IO -------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self.dtype_info.numpy

    @property
    def dtype_name(self) -> str:
        return self.dtype_info.name

    @property
    def size(self) -> int:
        """Number of elements (a Python int: huge declared shapes do not overflow)."""
        if self._size is None:
            self._size = math.prod(self.shape)
        return self._size

    @property
    def nbytes(self) -> int:
        """Bytes of storage the shape and dtype call for (packed for sub-byte types)."""
        return self.dtype_info.storage_bytes(self.size)

    @property
    def location(self) -> TensorLocation:
        return self._source.location

    @property
    def is_external(self) -> bool:
        return self.location.kind == "external"

    def __repr__(self) -> str:
        dims = "×".join(str(d) for d in self.shape) or "scalar"
        return f"<Tensor {self.name!r} {self.dtype_name}[{dims}] {self.location.kind}>"

    # -- reading ------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The values as a numpy array: read-only, and a view of the file's map for a
        tensor of at least :data:`MAP_MIN_BYTES` stored in a local file (no copy).

        The array is cached until :meth:`release`. Before a cached map is handed out
        again, the file's size is checked: a file that shrank since is an
        :class:`ExternalDataError`, not a crash. What no check can cover is a file
        truncated *while you hold the array*: touching its vanished pages is a SIGBUS, as
        for every memory-mapped array (``numpy.memmap``, onnx's mmap loading). Copy it
        (``np.array(t.numpy())``) to keep values that outlive the file. The explorer's
        own reads (:meth:`stats`, :meth:`histogram`, :meth:`iter_chunks`, diffs,
        reports) never touch the map.
        """
        if self._cached is not None:
            if self._mapped:  # the file may have shrunk since it was mapped
                self._source.check(self.dtype_info, self._checked_size(), self.name)
            return self._cached
        flat = self._source.array(self.dtype_info, self._checked_size(), self.name)
        try:
            shaped = flat.reshape(self.shape)
        except ValueError as exc:  # e.g. (0, 2**62, 2**62): no values, yet too big a shape
            raise TensorDataError(
                f"tensor {self.name!r}: shape {self.shape} cannot be an array ({exc})"
            ) from None
        self._mapped = _maps_a_file(shaped)
        self._cached = shaped
        return shaped

    def _owned_cache(self) -> np.ndarray | None:
        """The cached values when streaming may read them: in memory of their own (a map
        can vanish under a shrinking file, its pages with it)."""
        return None if self._mapped else self._cached

    def iter_chunks(self, max_elements: int = CHUNK_ELEMENTS) -> Iterator[np.ndarray]:
        """Flat decoded values in chunks of at most ``max_elements``, without reading the rest.

        A file's bytes are read again into fresh buffers (never through a map
        :meth:`numpy` may have cached), checked against the file's size."""
        cached = self._owned_cache()
        if cached is not None:
            flat = cached.reshape(-1)
            for start in range(0, flat.size, max_elements):
                yield flat[start : start + max_elements]
            return
        yield from self._source.chunks(
            self.dtype_info, self._checked_size(), self.name, max_elements
        )

    def iter_stored_bytes(self, buffer: np.ndarray) -> Iterator[memoryview] | None:
        """The tensor's stored little-endian bytes, in pieces of at most ``buffer.nbytes``
        read into ``buffer`` (reused: a piece is valid until the next is asked for), or
        None when the values are not stored as bytes (typed fields, TensorFlow ``*_val``):
        comparing two tensors' bytes this way costs no allocation and no decoding."""
        if not isinstance(self._source, BytesSource):
            return None
        return self._source.stored_bytes(self.dtype_info, self._checked_size(), self.name, buffer)

    def iter_runs(self, max_elements: int = CHUNK_ELEMENTS) -> Iterator[np.ndarray | Repeat]:
        """As :meth:`iter_chunks`, but a value repeated many times (TensorFlow's fill of a
        short ``*_val`` field) comes as one :class:`~onnx_explorer.stats.Repeat`, so
        statistics of a fill cost the same whatever its length."""
        cached = self._owned_cache()
        # A long cached fill is a broadcast view: its runs summarise it at once.
        if cached is not None and not (
            cached.size > _CACHED_FILL_ELEMENTS and self._source.repeated(self.size)
        ):
            yield from self.iter_chunks(max_elements)
            return
        yield from self._source.runs(self.dtype_info, self._checked_size(), self.name, max_elements)

    @property
    def repeated_elements(self) -> int:
        """Elements that are not stored but repeat the last stored value (known without IO)."""
        return self._source.repeated(self.size)

    def check(self) -> None:
        """Raise the error reading this tensor would raise (bytes are not decoded)."""
        self._source.check(self.dtype_info, self._checked_size(), self.name)

    def release(self) -> None:
        """Drop decoded values; the next read maps or decodes them again."""
        self._cached = None
        self._mapped = False
        self._source.release()

    def verify_checksum(self) -> bool:
        """Compare the SHA1 of this tensor's external data file with the stored checksum."""
        if not isinstance(self._source, ExternalBytes):
            raise ExternalDataError(f"tensor {self.name!r} is not stored as external data")
        return self._source.verify_checksum(self.name)

    @property
    def checksum(self) -> str | None:
        return self._source.ref.checksum if isinstance(self._source, ExternalBytes) else None

    def stats(self, *, dequantize: Dequantizer | None = None, **kwargs: Any) -> TensorStats:
        """Min, max, mean, std, abs-max, zero fraction, NaN/Inf counts and p1/p50/p99, streamed.

        ``dequantize``: statistics of ``(q - zero_point) * scale`` instead of the stored
        values (see :func:`onnx_explorer.weights._quant.find_dequantization`). Details:
        :func:`onnx_explorer.stats.tensor_stats`.
        """
        return tensor_stats(self, dequantize=dequantize, **kwargs)

    def histogram(
        self,
        bins: int = 100,
        range: tuple[float, float] | None = None,
        *,
        log: bool = False,
        dequantize: Dequantizer | None = None,
        **kwargs: Any,
    ) -> Histogram:
        """Counts per bin (``range=None``: the finite min..max), streamed.

        Details: :func:`onnx_explorer.stats.tensor_histogram`.
        """
        return tensor_histogram(self, bins, range, log=log, dequantize=dequantize, **kwargs)

    def _checked_size(self) -> int:
        size = self.size
        if any(d < 0 for d in self.shape):
            raise TensorDataError(f"tensor {self.name!r}: negative dimension in shape {self.shape}")
        if size > MAX_ELEMENTS or self.dtype_info.storage_bytes(size) > 1 << 48:
            raise TensorDataError(
                f"tensor {self.name!r}: shape {self.shape} declares {size} elements, "
                "far more than any file can hold"
            )
        return size
