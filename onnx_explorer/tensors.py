"""Lazy tensors: dtype, shape and location known without IO; bytes read on demand.

A :class:`Tensor` knows where its bytes live through a :class:`TensorSource`.
Nothing is read until :meth:`Tensor.numpy` or :meth:`Tensor.iter_chunks` is
called; mapped sources return views of one shared read-only mmap per file.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .dtypes import DType, decode_bytes
from .errors import ExplorerError, ExternalDataError, TensorDataError
from .external_data import DataFile, DataFiles, ExternalRef, parse_size_field, resolve_location
from .stats import Dequantizer, Histogram, TensorStats, tensor_histogram, tensor_stats

#: Elements decoded per chunk when streaming (4 Mi elements: 16 MB of float32).
CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class TensorLocation:
    """Where a tensor's bytes live, known without reading them.

    ``kind`` is one of ``"embedded"`` (raw bytes inside the model file),
    ``"typed"`` (typed value fields of the file format), ``"external"`` (a
    separate data file) or ``"memory"`` (bytes of an in-memory model).
    """

    kind: str
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

    def check(self, dt: DType, count: int, name: str) -> None:
        """Raise the error reading would raise, reading as little as possible."""
        self.array(dt, count, name)

    def release(self) -> None:
        """Forget anything cached."""


class BytesSource(TensorSource):
    """Values stored as little-endian bytes (raw_data, external data, tensor_content)."""

    def buffer(self, name: str) -> Any:
        raise NotImplementedError

    def _checked_buffer(self, dt: DType, count: int, name: str) -> Any:
        buf = self.buffer(name)
        expected = dt.storage_bytes(count)
        if len(buf) != expected:
            raise TensorDataError(
                f"tensor {name!r}: {len(buf)} bytes of data but {dt.name} "
                f"with {count} elements needs {expected}"
            )
        return buf

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        if not dt.is_numeric and dt.name not in ("complex64", "complex128"):
            raise TensorDataError(f"tensor {name!r}: {dt.name} cannot be stored as raw bytes")
        return decode_bytes(self._checked_buffer(dt, count, name), dt, count)

    def chunks(self, dt: DType, count: int, name: str, max_elements: int) -> Iterator[np.ndarray]:
        buf = self._checked_buffer(dt, count, name)
        pages = _PageDropper.for_buffer(buf)
        # Packed types: cut on a whole group of bytes (4 elements fit 1, 2 or 3 bytes).
        step = max(4, max_elements - max_elements % 4)
        try:
            for start in range(0, count, step):
                stop = min(count, start + step)
                first = start * dt.bits // 8
                last = (stop * dt.bits + 7) // 8
                yield decode_bytes(buf[first:last], dt, stop - start)
                if pages is not None:
                    pages.drop(last)
        finally:
            if pages is not None:
                pages.drop(len(buf), to_end=True)

    def check(self, dt: DType, count: int, name: str) -> None:
        self._checked_buffer(dt, count, name)


class _PageDropper:
    """Unmaps the pages of a read-only file map that streaming has gone past.

    Touched pages of a mapped file count in the process's resident set until
    unmapped, so streaming a 4 GB tensor would grow RSS by 4 GB. ``MADV_DONTNEED``
    on a read-only shared file map only drops this process's page-table entries:
    the pages stay in the OS page cache, and a later read (an array still viewing
    them) maps the same bytes again.
    """

    def __init__(self, mapping: mmap.mmap, base: int) -> None:
        self._map = mapping
        self._base = base  # offset of the streamed buffer in the map
        self._done = base - base % mmap.PAGESIZE  # map offset below which pages are dropped

    @classmethod
    def for_buffer(cls, buf: Any) -> _PageDropper | None:
        mapping = buf.obj if isinstance(buf, memoryview) else None
        if not isinstance(mapping, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
            return None
        if len(buf) == 0:
            return None
        try:
            start = np.frombuffer(buf, np.uint8).ctypes.data
            origin = np.frombuffer(mapping, np.uint8, count=1).ctypes.data
        except (ValueError, TypeError, BufferError):
            return None
        return cls(mapping, start - origin)

    def drop(self, stop: int, to_end: bool = False) -> None:
        """Drop the pages holding bytes ``[.., stop)`` of the buffer (the last partial one too
        when ``to_end``)."""
        end = self._base + stop
        end = -(-end // mmap.PAGESIZE) * mmap.PAGESIZE if to_end else end - end % mmap.PAGESIZE
        if end <= self._done:
            return
        try:
            end = min(end, len(self._map))
            self._map.madvise(mmap.MADV_DONTNEED, self._done, end - self._done)
        except (ValueError, OSError):  # map closed meanwhile: nothing left to drop
            return
        self._done = end


class MemoryBytes(BytesSource):
    """Bytes already in memory (raw_data of a model passed as a proto or bytes)."""

    def __init__(self, data: bytes | memoryview, kind: str = "memory") -> None:
        self._data = data
        self.location = TensorLocation(kind, length=len(data))

    def buffer(self, name: str) -> Any:
        return self._data


class FileRange(BytesSource):
    """Bytes at a known offset of a mapped file (raw_data found by the wire walk)."""

    def __init__(
        self, data_file: DataFile, offset: int, length: int, kind: str = "embedded"
    ) -> None:
        self._file = data_file
        self._offset = offset
        self._length = length
        self.location = TensorLocation(kind, str(data_file.path), offset, length)

    def buffer(self, name: str) -> Any:
        try:
            return self._file.view(self._offset, self._length)
        except ExplorerError as exc:
            raise type(exc)(f"tensor {name!r}: {exc}") from None


class ExternalBytes(BytesSource):
    """Bytes in an external data file, resolved and validated on first read."""

    def __init__(self, ref: ExternalRef, base_dir: Path | None, files: DataFiles) -> None:
        self.ref = ref
        self._base_dir = base_dir
        self._files = files
        self.location = TensorLocation("external", ref.location, ref.offset_int(), ref.length_int())

    def data_file(self, name: str) -> DataFile:
        if self._base_dir is None:
            raise ExternalDataError(
                f"tensor {name!r}: stored in external file {self.ref.location!r}, but the model "
                "was not loaded from a file; pass external_data_dir=..."
            )
        path = resolve_location(self._base_dir, self.ref.location, name)
        return self._files.get(path)

    def buffer(self, name: str) -> Any:
        offset = parse_size_field(self.ref.offset, "offset", name) or 0
        length = parse_size_field(self.ref.length, "length", name)
        data_file = self.data_file(name)
        try:
            size = data_file.size
        except ExplorerError as exc:
            raise type(exc)(f"tensor {name!r}: {exc}") from None
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
        return data_file.view(offset, length)

    def verify_checksum(self, name: str) -> bool:
        if self.ref.checksum is None:
            raise ExternalDataError(f"tensor {name!r}: external data has no checksum to verify")
        try:
            digest = self.data_file(name).sha1()
        except ExplorerError as exc:
            raise type(exc)(f"tensor {name!r}: {exc}") from None
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

    __slots__ = ("_cached", "_size", "_source", "doc_string", "dtype_info", "name", "shape")

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
        """The values as a numpy array (read-only view of the mapped file where possible)."""
        if self._cached is None:
            flat = self._source.array(self.dtype_info, self._checked_size(), self.name)
            self._cached = flat.reshape(self.shape)
        return self._cached

    def iter_chunks(self, max_elements: int = CHUNK_ELEMENTS) -> Iterator[np.ndarray]:
        """Flat decoded values in chunks of at most ``max_elements``, without reading the rest."""
        if self._cached is not None:
            flat = self._cached.reshape(-1)
            for start in range(0, flat.size, max_elements):
                yield flat[start : start + max_elements]
            return
        yield from self._source.chunks(
            self.dtype_info, self._checked_size(), self.name, max_elements
        )

    def check(self) -> None:
        """Raise the error reading this tensor would raise (bytes are not decoded)."""
        self._source.check(self.dtype_info, self._checked_size(), self.name)

    def release(self) -> None:
        """Drop decoded values; the next read maps or decodes them again."""
        self._cached = None
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
        values (see :func:`onnx_explorer.quant.find_dequantization`). Details:
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
        if self.dtype_info.storage_bytes(size) > 1 << 48:
            raise TensorDataError(
                f"tensor {self.name!r}: shape {self.shape} declares {size} elements, "
                "far more than any file can hold"
            )
        return size
