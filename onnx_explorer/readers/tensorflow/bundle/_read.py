"""TensorFlow tensor bundles (checkpoints: ``variables/variables.index`` + ``.data-*`` shards)
→ lazy tensors.

The index (an SSTable, see :mod:`._table`) maps the empty key to a
``BundleHeaderProto`` (number of shards, endianness, version) and every other key — a
checkpoint key such as ``layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE`` — to a
``BundleEntryProto``: dtype, shape, shard id, offset, size and the masked CRC-32C of the
bytes. A tensor's bytes sit at that offset of ``PREFIX.data-NNNNN-of-MMMMM``: exactly
external data, so each variable is an :class:`~onnx_explorer.tensors.ExternalBytes`
whose file name is built here from the shard id (never taken from the file) and
resolved inside the bundle's directory with the external-data checks.

A hostile or damaged entry (shard id out of range, negative offset, bytes past the
end of the shard, a bad checksum, an entry that does not parse) is a
:class:`TensorDataError` for that variable only.

Entries are kept as their index bytes and become tensors when first looked up
(:class:`~onnx_explorer.model.TensorsOnDemand`): opening a bundle of 100,000s of entries
makes no tensor. Files are resolved under the model's folder (``root``) with the
external-data checks: a symlinked ``variables/``, index or shard that leads out of it is
refused (:class:`UnsafePathError`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ....dtypes import DType
from ....errors import (
    ExplorerError,
    ExternalDataError,
    ModelFormatError,
    TensorDataError,
    UnsafePathError,
)
from ....external_data import DataFiles, ExternalRef, resolve_location
from ....model import TensorsOnDemand
from ....sources import ByteSource
from ....tensors import ExternalBytes, Tensor, TensorLocation, TensorSource
from ..graphdef import _proto as pb
from ..graphdef._tensors import tf_dtype
from ._crc32c import crc32c, unmask
from ._table import table_entries

#: Largest index file read (one small entry per tensor: 64 MiB is several 100,000s).
MAX_INDEX_BYTES = 64 << 20
#: Most checkpoint tensors accepted. Real checkpoints hold thousands (variables and their
#: optimizer slots); an index of a million empty entries took 26 s and 1.8 GB to open.
MAX_ENTRIES = 200_000
#: Largest string variable decoded (its bytes are read whole).
MAX_STRING_BYTES = 1 << 26
#: Most strings of one variable decoded: each is a Python object of some 40 bytes, so
#: 1-byte strings would cost some 20 times their share of the shard.
MAX_STRING_ELEMENTS = 1 << 22
_CHECK_CHUNK = 16 << 20
_BUNDLE_VERSION = 1  # tensorflow/core/util/tensor_bundle/tensor_bundle.h kTensorBundleVersion
_BIG_ENDIAN = 1


def shard_name(prefix: str, shard_id: int, num_shards: int) -> str:
    """``variables.data-00000-of-00001``: TensorFlow's shard file name."""
    return f"{prefix}.data-{shard_id:05d}-of-{num_shards:05d}"


def _entry_error(name: str, message: str) -> TensorDataError:
    return TensorDataError(f"variable {name!r}: {message}")


class BundleBytes(ExternalBytes):
    """A variable's bytes in a checkpoint shard; CRC-32C checked by :meth:`verify_checksum`."""

    def __init__(
        self,
        entry: Any,
        shard: str,
        directory: Path,
        files: DataFiles,
    ) -> None:
        """``shard``: the shard's path relative to ``directory`` (the model's folder), where
        it is resolved with the external-data checks (no symlink out of the folder)."""
        ref = ExternalRef(shard, str(int(entry.offset)), str(int(entry.size)))
        super().__init__(ref, directory, files)
        self._offset = int(entry.offset)
        self._length = int(entry.size)
        self._crc = unmask(int(entry.crc32c))
        shown = shard.rpartition("/")[2]  # the shard's name, as TensorFlow names it
        self.location = TensorLocation("external", shown, self._offset, self._length)

    def file_range(self, name: str) -> tuple[ByteSource, int, int]:
        data_file = self.data_file(name)
        try:
            size = data_file.size
        except ExplorerError as exc:
            raise type(exc)(f"variable {name!r}: {exc}") from None
        if self._offset + self._length > size:
            raise _entry_error(
                name,
                f"{self._length} bytes at offset {self._offset} run past the end of checkpoint "
                f"shard {self.ref.location!r} ({size} bytes; truncated shard?)",
            )
        return data_file, self._offset, self._length

    def verify_checksum(self, name: str) -> bool:
        """True when the bytes match the index's CRC-32C; a mismatch is a TensorDataError."""
        data_file, offset, length = self.file_range(name)
        crc = 0
        for start in range(0, length, _CHECK_CHUNK):
            chunk = np.empty(min(_CHECK_CHUNK, length - start), np.uint8)
            try:
                data_file.read_into(offset + start, chunk)
            except ExplorerError as exc:
                raise _entry_error(name, str(exc)) from None
            crc = crc32c(chunk, crc)
        if crc != self._crc:
            raise _entry_error(
                name,
                f"CRC-32C of its {length} bytes in {self.ref.location!r} is {crc:#010x}, the "
                f"index says {self._crc:#010x} (corrupt or rewritten shard)",
            )
        return True


class BundleStrings(BundleBytes):
    """A string variable: varint64 lengths, a masked CRC-32C of them, then the strings' bytes.

    Its checksum is not of those bytes: TensorFlow extends it over each length as a
    little-endian uint32 (uint64 past 4 GiB), then the four checksum bytes, then the strings
    (checked against TensorFlow 2.21's own files in tests/data/savedmodel).
    """

    def __init__(
        self, entry: Any, shard: str, directory: Path, files: DataFiles, count: int
    ) -> None:
        super().__init__(entry, shard, directory, files)
        self._count = count

    def _raw(self, name: str) -> bytes:
        if self._count > MAX_STRING_ELEMENTS:
            raise _entry_error(
                name,
                f"{self._count} strings: more than the {MAX_STRING_ELEMENTS} decoded at most "
                "(each costs a Python object)",
            )
        data_file, offset, length = self.file_range(name)
        if length > MAX_STRING_BYTES:
            raise _entry_error(name, f"{length} bytes of strings: too many to decode")
        raw = bytearray(length)
        try:
            data_file.read_into(offset, raw)
        except ExplorerError as exc:
            raise _entry_error(name, str(exc)) from None
        return bytes(raw)

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        return _decode_strings(self._raw(name), count, name)[0]

    def verify_checksum(self, name: str) -> bool:
        raw = self._raw(name)
        strings, lengths_end = _decode_strings(raw, self._count, name)
        count = len(strings)
        crc = crc32c(b"".join(_length_bytes(len(s)) for s in strings))
        crc = crc32c(raw[lengths_end : lengths_end + 4], crc)
        crc = crc32c(raw[lengths_end + 4 :], crc)
        if crc != self._crc:
            raise _entry_error(
                name,
                f"CRC-32C of its {count} strings in {self.ref.location!r} is {crc:#010x}, the "
                f"index says {self._crc:#010x} (corrupt or rewritten shard)",
            )
        return True

    def chunks(self, dt: DType, count: int, name: str, max_elements: int) -> Any:
        flat = self.array(dt, count, name)
        for start in range(0, count, max_elements):
            yield flat[start : start + max_elements]

    def check(self, dt: DType, count: int, name: str) -> None:
        if self._count > MAX_STRING_ELEMENTS:
            self._raw(name)  # the error it raises
        self.file_range(name)


def _length_bytes(n: int) -> bytes:
    return n.to_bytes(4 if n <= 0xFFFFFFFF else 8, "little")


def _decode_strings(buf: bytes, count: int, name: str) -> tuple[np.ndarray, int]:
    """The strings, and where their lengths end (where the lengths' checksum starts)."""
    if count > len(buf):
        raise _entry_error(name, f"{count} strings cannot fit in {len(buf)} bytes")
    pos = 0
    lengths: list[int] = []
    for _ in range(count):
        value = shift = 0
        while True:
            if pos >= len(buf) or shift > 63:
                raise _entry_error(name, "string lengths are truncated or malformed")
            byte = buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        lengths.append(value)
    lengths_end = pos
    pos += 4  # CRC-32C of the lengths (covered by the entry's checksum too)
    if pos + sum(lengths) != len(buf):
        raise _entry_error(
            name, f"{count} strings of {sum(lengths)} bytes do not fill its {len(buf)} bytes"
        )
    out = np.empty(count, dtype=object)
    for i, n in enumerate(lengths):
        out[i] = buf[pos : pos + n]
        pos += n
    return out, lengths_end


class _Refused(TensorSource):
    """An entry that cannot be read at all (its reason known when the index is read)."""

    def __init__(self, reason: str, location: TensorLocation) -> None:
        self._reason = reason
        self.location = location

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        raise _entry_error(name, self._reason)


@dataclass(frozen=True)
class Bundle:
    """A tensor bundle's index read: its variables as lazy tensors by checkpoint key."""

    prefix: Path  # e.g. .../variables/variables
    num_shards: int
    tensors: TensorsOnDemand  # made when first looked up
    total_bytes: int  # the entries' sizes, summed

    def renamed(self, key: str, name: str, doc_string: str) -> Tensor:
        """The variable ``key`` as a tensor called ``name`` (the graph node it belongs to)."""
        tensor = self.tensors[key]
        return Tensor(name, tensor.dtype_info, tensor.shape, tensor._source, doc_string)


def _shape(entry: Any) -> tuple[int, ...]:
    return tuple(int(d.size) for d in entry.shape.dim)


def _tensor(
    key: str, entry: Any, prefix: str, root: Path, num_shards: int, files: DataFiles
) -> Tensor:
    """``prefix``: the bundle's prefix relative to ``root`` (``variables/variables``)."""
    dt = tf_dtype(int(entry.dtype))
    shape = _shape(entry)
    base = prefix.rpartition("/")[2]
    where = TensorLocation("external", f"{base}.data-?", None, None)
    if entry.slices:
        return Tensor(key, dt, shape, _Refused("a partitioned variable (saved as slices)", where))
    if not 0 <= entry.shard_id < num_shards:
        reason = f"shard id {entry.shard_id} is not one of the index's {num_shards} shards"
        return Tensor(key, dt, shape, _Refused(reason, where))
    if entry.offset < 0 or entry.size < 0:
        reason = f"negative offset {entry.offset} or size {entry.size} in the index"
        return Tensor(key, dt, shape, _Refused(reason, where))
    shard = shard_name(prefix, int(entry.shard_id), num_shards)
    if dt.name == "string":
        count = math.prod(shape) if all(d >= 0 for d in shape) else 0
        strings = BundleStrings(entry, shard, root, files, count)
        return Tensor(key, dt, shape, strings)
    if not dt.is_numeric and dt.name not in ("complex64", "complex128"):
        where = TensorLocation("external", shard_name(base, int(entry.shard_id), num_shards),
                               int(entry.offset), int(entry.size))  # fmt: skip
        return Tensor(key, dt, shape, _Refused(f"{dt.name} values cannot be shown", where))
    return Tensor(key, dt, shape, BundleBytes(entry, shard, root, files))


def _parse(message: Any, value: bytes, what: str) -> Any:
    try:
        message.ParseFromString(value)
    except Exception as exc:  # DecodeError and friends, from an untrusted value
        raise ModelFormatError(f"{what}: {exc}") from None
    return message


def _inside(root: Path, relative: str, what: str) -> Path:
    """``root / relative``, refused when it is a symlink or resolves outside ``root``."""
    try:
        return resolve_location(root, relative, relative)
    except UnsafePathError as exc:
        raise UnsafePathError(
            f"{what}: refused, as for ONNX external data (the model's files must lie in its "
            f"folder {str(root)!r}): {exc}"
        ) from None


def read_bundle(prefix: Path, files: DataFiles, root: Path | None = None) -> Bundle:
    """Read ``PREFIX.index``; no shard byte is read and no tensor is made. Errors name the
    index file. ``root``: the model's folder, which the index and shards must lie in
    (default: the prefix's own folder)."""
    root = prefix.parent if root is None else root
    index_path = prefix.with_name(prefix.name + ".index")
    what = repr(str(index_path))
    try:
        relative = Path(os.path.relpath(prefix, root)).as_posix()
    except ValueError:  # another drive
        raise UnsafePathError(f"{what}: not inside the model's folder {str(root)!r}") from None
    index = _inside(root, relative + ".index", f"checkpoint index {what}")
    try:
        index_file = files.get(index)
        size = index_file.size
        if size > MAX_INDEX_BYTES:
            raise ModelFormatError(f"{what}: {size} bytes, more than any bundle index needs")
        data = np.empty(size, np.uint8)
        index_file.read_into(0, data)
        index_file.close()  # read whole: no descriptor kept for it
    except ExternalDataError as exc:
        raise ModelFormatError(f"checkpoint index cannot be read: {exc}") from None
    header: Any = None
    keys: list[str] = []
    values: list[bytes] = []
    total = 0
    for raw_key, value in table_entries(data.tobytes(), what):
        if not raw_key:
            header = _parse(pb.BundleHeaderProto(), value, f"{what} header")
            continue
        if len(keys) >= MAX_ENTRIES:
            raise ModelFormatError(
                f"{what}: more than {MAX_ENTRIES} checkpoint tensors (real checkpoints hold "
                "thousands); refused"
            )
        keys.append(raw_key.decode("utf-8", "replace"))
        values.append(value)
        total += _entry_size(value)
    if header is None:
        raise ModelFormatError(f"{what} has no bundle header (the entry with the empty key)")
    if header.endianness == _BIG_ENDIAN:
        raise ModelFormatError(f"{what}: a big-endian checkpoint; only little-endian is read")
    if header.version.min_consumer > _BUNDLE_VERSION:
        raise ModelFormatError(
            f"{what}: bundle format version {header.version.producer} needs a reader of version "
            f"{header.version.min_consumer} or newer; this one reads version {_BUNDLE_VERSION}"
        )
    num_shards = int(header.num_shards)

    def entry(i: int) -> Any:
        return _parse(pb.BundleEntryProto(), values[i], f"{what} entry {keys[i]!r}")

    def make(i: int) -> Tensor:
        try:
            found = entry(i)
        except ModelFormatError as exc:  # this entry's problem, found when it is looked up
            where = TensorLocation("external", f"{prefix.name}.data-?", None, None)
            return Tensor(keys[i], tf_dtype(0), (), _Refused(str(exc), where))
        return _tensor(keys[i], found, relative, root, num_shards, files)

    def element_count(i: int) -> int:
        try:
            shape = _shape(entry(i))
        except ModelFormatError:
            return 0
        return math.prod(shape) if all(d >= 0 for d in shape) else 0

    return Bundle(prefix, num_shards, TensorsOnDemand(keys, make, element_count), total)


def _entry_size(value: bytes) -> int:
    """An entry's ``size`` (0 when the entry does not parse: its tensor will say why)."""
    try:
        size = int(_parse(pb.BundleEntryProto(), value, "").size)
    except ModelFormatError:
        return 0
    return max(size, 0)


__all__ = [
    "MAX_ENTRIES",
    "MAX_INDEX_BYTES",
    "MAX_STRING_BYTES",
    "MAX_STRING_ELEMENTS",
    "Bundle",
    "BundleBytes",
    "BundleStrings",
    "read_bundle",
    "shard_name",
]
