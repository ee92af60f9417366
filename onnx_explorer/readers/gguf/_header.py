"""The GGUF header: magic, version, metadata key/values and tensor infos, read by range.

Layout (little-endian; GGUF v2 and v3 are the same here, v1 has 32-bit counts and
lengths): ``GGUF``, version u32, tensor count, key/value count, the key/values (key
string, value type u32, value), the tensor infos (name, dims count u32, dims in ggml
order — innermost first —, ggml type u32, offset relative to the data), then the data
from the next multiple of ``general.alignment`` (32 when absent).

Nothing here trusts the file: every count and length (up to 2^64) is checked against
the bytes left before anything is fetched or allocated, arrays nest at most
:data:`MAX_DEPTH` deep, dims products are Python ints, every tensor's bytes must lie
inside the file and no two tensors may share bytes. Metadata is kept as display text:
scalars whole (strings cut at :data:`MAX_TEXT` characters), arrays as a summary (their
count, type and first items), so a 150k-entry vocabulary costs a few hundred bytes; its
strings are skipped over while parsing, never kept. A file may end right after the
tensor infos when it has no tensor bytes (a vocabulary-only file).
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...errors import ModelFormatError
from ...sources import ByteSource
from ._cursor import U32, U64, Cursor
from ._types import GGML_TYPES, GgmlType

MAGIC = b"GGUF"
VERSIONS = (1, 2, 3)
DEFAULT_ALIGNMENT = 32
#: Deepest nesting of arrays in arrays (real files nest none).
MAX_DEPTH = 8
#: Most dims a tensor may declare (ggml has 4).
MAX_DIMS = 8
#: Most tensors and metadata keys a file may declare (real models: a few thousand at
#: most); each costs a Python object, so a hostile count must not fill memory.
MAX_TENSORS = MAX_KEYS = 1 << 20
#: Longest key or tensor name, in bytes (ggml's tensor names have at most 63).
MAX_NAME_BYTES = 1 << 16
#: Characters of a string value kept (a chat template is a few KB); longer ones are cut.
MAX_TEXT = 16384
#: Items of an array shown in its summary, and characters of each string item shown.
PREVIEW_ITEMS = 5
PREVIEW_CHARS = 40

#: The metadata value types: code → (name shown in array summaries, struct of a scalar).
_SCALARS: Mapping[int, tuple[str, struct.Struct]] = {
    0: ("uint8", struct.Struct("<B")),
    1: ("int8", struct.Struct("<b")),
    2: ("uint16", struct.Struct("<H")),
    3: ("int16", struct.Struct("<h")),
    4: ("uint32", struct.Struct("<I")),
    5: ("int32", struct.Struct("<i")),
    6: ("float32", struct.Struct("<f")),
    7: ("bool", struct.Struct("<B")),
    10: ("uint64", struct.Struct("<Q")),
    11: ("int64", struct.Struct("<q")),
    12: ("float64", struct.Struct("<d")),
}
STRING, ARRAY = 8, 9
_INTEGERS = (0, 1, 2, 3, 4, 5, 10, 11)

Scalar = int | float | bool | str


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the header; ``offset`` is absolute (data start + the stored offset)."""

    name: str
    ggml: GgmlType
    dims: tuple[int, ...]  # as stored: innermost first
    offset: int
    length: int

    @property
    def shape(self) -> tuple[int, ...]:
        """The numpy shape (outermost first): the stored dims reversed."""
        return self.dims[::-1]


@dataclass(frozen=True)
class Header:
    version: int
    metadata: Mapping[str, str]  # key → display text (arrays summarised)
    scalars: Mapping[str, Scalar]  # key → value, for scalar keys only
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_start: int
    file_size: int


def looks_like_gguf(head: bytes) -> bool:
    """The file starts with the GGUF magic."""
    return head[:4] == MAGIC


class _Parser:
    def __init__(self, version: int, cursor: Cursor) -> None:
        self.cur = cursor
        self.what = cursor.what
        self.wide = version >= 2  # v1: 32-bit counts and lengths
        self.count = U64 if self.wide else U32

    # -- sizes and strings -----------------------------------------------------
    def size_field(self, doing: str) -> int:
        return self.cur.u64(doing) if self.wide else self.cur.u32(doing)

    def counted(self, item_bytes: int, doing: str, limit: int | None = None) -> int:
        """A count of items of at least ``item_bytes`` bytes each, that must fit the file
        (and be at most ``limit``)."""
        at = self.cur.pos
        n = self.size_field(doing)
        if limit is not None and n > limit:
            raise ModelFormatError(
                f"{self.what}: {doing} is {n}, more than any model has (at most {limit})"
            )
        if n * item_bytes > self.cur.remaining:
            raise ModelFormatError(
                f"{self.what}: {doing} declares {n} items at offset {at}, more "
                f"than the {self.cur.remaining} bytes left in the file can hold"
            )
        return n

    def string(self, doing: str, keep: int | None = None) -> str:
        """A length-prefixed UTF-8 string; ``keep``: characters kept (the rest skipped)."""
        n = self.size_field(doing)
        if n > self.cur.remaining:
            raise ModelFormatError(
                f"{self.what}: {doing} is a string of {n} bytes at offset {self.cur.pos}, "
                f"longer than the {self.cur.remaining} bytes left in the file (truncated?)"
            )
        if keep is None:
            if n > MAX_NAME_BYTES:
                raise ModelFormatError(
                    f"{self.what}: {doing} is {n} bytes long (at most {MAX_NAME_BYTES})"
                )
            return self.cur.take(n, doing).decode("utf-8", "replace")
        # UTF-8 takes at most 4 bytes a character: more is never shown.
        taken = min(n, 4 * keep + 4)
        text = self.cur.take(taken, doing).decode("utf-8", "replace")
        self.cur.skip(n - taken, doing)
        return text if len(text) <= keep and taken == n else text[:keep] + "…"

    # -- values ----------------------------------------------------------------
    def value_type(self, doing: str) -> int:
        code = self.cur.u32(doing)
        if code not in _SCALARS and code not in (STRING, ARRAY):
            raise ModelFormatError(
                f"{self.what}: {doing} has value type {code} at offset {self.cur.pos - 4}, "
                "which GGUF does not define"
            )
        return code

    def scalar(self, code: int, doing: str) -> Scalar:
        if code == STRING:
            return self.string(doing, keep=MAX_TEXT)
        _, fmt = _SCALARS[code]
        (value,) = self.cur.unpack(fmt, doing)
        if code == 7:
            return bool(value)
        assert isinstance(value, int | float)
        return value

    def value(self, code: int, doing: str, depth: int = 0) -> tuple[str, Scalar | None]:
        """(display text, the value itself for a scalar)."""
        if code != ARRAY:
            value = self.scalar(code, doing)
            return scalar_text(code, value), value
        return self.array(doing, depth + 1), None

    def array(self, doing: str, depth: int) -> str:
        if depth > MAX_DEPTH:
            raise ModelFormatError(f"{self.what}: {doing} nests arrays more than {MAX_DEPTH} deep")
        item = self.value_type(doing)
        size_bytes = 8 if self.wide else 4
        if item in _SCALARS:
            type_name, fmt = _SCALARS[item]
            n = self.counted(fmt.size, doing)
            shown = min(n, PREVIEW_ITEMS)
            items = [scalar_text(item, self.scalar(item, doing)) for _ in range(shown)]
            self.cur.skip((n - shown) * fmt.size, doing)
        elif item == STRING:
            type_name = "strings"
            n = self.counted(size_bytes, doing)
            shown = min(n, PREVIEW_ITEMS)
            items = [repr(self.string(doing, keep=PREVIEW_CHARS)) for _ in range(shown)]
            self.cur.skip_strings(n - shown, self.count, doing)
        else:
            type_name = "arrays"
            n = self.counted(4 + size_bytes, doing)
            items = []
            for i in range(n):  # every nested array is walked (its items have sizes)
                text = self.array(doing, depth + 1)
                if i < PREVIEW_ITEMS:
                    items.append(f"[{text}]")
        summary = f"array of {n} {type_name}"
        if items:
            summary += ": " + ", ".join(items) + (", …" if n > len(items) else "")
        return summary


def scalar_text(code: int, value: Scalar) -> str:
    """How a metadata scalar is shown: ints and strings as they are, float32 in its own
    shortest form (``1e-05``, not ``9.999999747378752e-06``), booleans ``true``/``false``."""
    if code == 7:
        return "true" if value else "false"
    if code == 6:
        return str(np.float32(value))
    if code == 12:
        return repr(float(value))
    return str(value)


def read_header(source: ByteSource) -> Header:
    """Read and check the header of the GGUF file ``source`` (by blocks of 1 MiB)."""
    cur = Cursor(source)
    what = cur.what
    if cur.size < 8 or cur.take(4, "the magic") != MAGIC:
        raise ModelFormatError(f"{what} is not a GGUF file (it does not start with 'GGUF')")
    version = cur.u32("the version")
    if version not in VERSIONS:
        if version & 0xFFFF == 0 and (version >> 24) in VERSIONS:
            raise ModelFormatError(
                f"{what} is a big-endian GGUF file (version {version >> 24}), which is not "
                "supported: convert it on a little-endian machine"
            )
        raise ModelFormatError(f"{what}: GGUF version {version} is not supported (1, 2 or 3)")
    parser = _Parser(version, cur)
    size_bytes = 8 if version >= 2 else 4
    # Smallest tensor info: name length, dims count, type, offset; smallest key/value:
    # key length, value type, one byte of value.
    tensor_count = parser.counted(size_bytes + 4 + 4 + 8, "the tensor count", MAX_TENSORS)
    kv_count = parser.counted(size_bytes + 4 + 1, "the key/value count", MAX_KEYS)
    metadata: dict[str, str] = {
        "GGUF.version": str(version),
        "GGUF.tensor_count": str(tensor_count),
        "GGUF.kv_count": str(kv_count),
    }
    scalars: dict[str, Scalar] = {}
    types: dict[str, int] = {}
    for index in range(kv_count):
        key = parser.string(f"key {index}")
        doing = f"metadata {key!r}"
        if key in metadata:
            raise ModelFormatError(f"{what}: {doing} appears twice")
        code = parser.value_type(doing)
        metadata[key], value = parser.value(code, doing)
        types[key] = code
        if value is not None:
            scalars[key] = value
    alignment = _alignment(scalars.get("general.alignment"), types.get("general.alignment"), what)
    infos = [_tensor_info(parser, index) for index in range(tensor_count)]
    data_start = -(-cur.pos // alignment) * alignment
    tensors = tuple(_placed(info, data_start, cur.size, what) for info in infos)
    _check_names_and_overlap(tensors, what)
    return Header(version, metadata, scalars, tensors, alignment, data_start, cur.size)


def _alignment(value: Scalar | None, code: int | None, what: str) -> int:
    if value is None:
        return DEFAULT_ALIGNMENT
    if code not in _INTEGERS or isinstance(value, bool) or not isinstance(value, int):
        raise ModelFormatError(f"{what}: general.alignment must be an integer")
    if value <= 0 or value & (value - 1):
        raise ModelFormatError(f"{what}: general.alignment {value} is not a power of two")
    return value


@dataclass(frozen=True)
class _RawInfo:
    name: str
    ggml: GgmlType | None
    code: int
    dims: tuple[int, ...]
    offset: int


def _tensor_info(parser: _Parser, index: int) -> _RawInfo:
    name = parser.string(f"the name of tensor {index}")
    doing = f"tensor {name!r}"
    rank = parser.cur.u32(doing)
    if rank > MAX_DIMS:
        raise ModelFormatError(f"{parser.what}: {doing} declares {rank} dims (at most {MAX_DIMS})")
    dims = tuple(parser.size_field(doing) for _ in range(rank))
    code = parser.cur.u32(doing)
    offset = parser.cur.u64(doing)
    return _RawInfo(name, GGML_TYPES.get(code), code, dims, offset)


def _placed(info: _RawInfo, data_start: int, file_size: int, what: str) -> TensorInfo:
    doing = f"{what}: tensor {info.name!r}"
    ggml = info.ggml
    if ggml is None:
        # Shown, never read: its size is unknown, so it holds no bytes we could check.
        return TensorInfo(info.name, _unknown(info.code), info.dims, data_start + info.offset, 0)
    if info.dims and info.dims[0] % ggml.block_size:
        raise ModelFormatError(
            f"{doing}: rows of {info.dims[0]} elements are not whole {ggml.name} blocks "
            f"of {ggml.block_size}"
        )
    count = math.prod(info.dims)  # Python ints: 2^64 × 2^64 does not overflow
    length = count // ggml.block_size * ggml.block_bytes
    start = data_start + info.offset
    if length and start + length > file_size:
        raise ModelFormatError(
            f"{doing}: {length} bytes at offset {start} run past the end of the file "
            f"({file_size} bytes; truncated?)"
        )
    return TensorInfo(info.name, ggml, info.dims, start, length)


def _unknown(code: int) -> GgmlType:
    return GgmlType(code, f"ggml_type_{code}", 1, 0)


def _check_names_and_overlap(tensors: tuple[TensorInfo, ...], what: str) -> None:
    seen: set[str] = set()
    for info in tensors:
        if info.name in seen:
            raise ModelFormatError(f"{what}: two tensors are named {info.name!r}")
        seen.add(info.name)
    ordered = sorted((t for t in tensors if t.length), key=lambda t: t.offset)
    for before, after in itertools.pairwise(ordered):
        if after.offset < before.offset + before.length:
            raise ModelFormatError(
                f"{what}: tensors {before.name!r} and {after.name!r} share bytes"
            )


__all__ = ["Header", "TensorInfo", "looks_like_gguf", "read_header"]
