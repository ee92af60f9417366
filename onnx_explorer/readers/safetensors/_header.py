"""The safetensors header: an 8-byte little-endian length, then a JSON object.

Every entry maps a tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}``
(offsets into the data that follows the header); the optional ``"__metadata__"`` maps
strings to strings (``null`` is accepted). Nothing here trusts the file: the header
length is checked against the file before anything is fetched, every entry against the
format's rules (known dtype, non-negative dims, a byte range that fits the data and
matches dtype × shape), and two tensors may not share bytes. Offsets may come in any
order and need not be aligned. Only the header is read; tensors are ranges of the file.
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from ...dtypes import DType, dtype
from ...errors import ModelFormatError
from ...sources import ByteSource

#: A header longer than this is refused before it is fetched (the format's own reader
#: refuses 100,000,000 bytes too); a real 100k-tensor header is ~10 MB.
MAX_HEADER_BYTES = 100_000_000
#: How a sharded checkpoint's index file is named (``model.safetensors.index.json``).
INDEX_SUFFIX = ".safetensors.index.json"
#: Most dims a tensor may declare.
MAX_RANK = 64
#: Bytes asked for first: the length and, for most files, the whole header in one read
#: (one request at a URL; a 7B model's shard header is ~30 KB).
FIRST_READ = 64 << 10

#: The format's dtype codes → element types (every code safetensors 0.8 defines).
DTYPES: Mapping[str, str] = {
    "BOOL": "bool",
    "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
    "U32": "uint32", "I32": "int32", "U64": "uint64", "I64": "int64",
    "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64",
    "C64": "complex64",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
    "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz",
    "F8_E8M0": "float8_e8m0fnu",
    "F6_E2M3": "float6_e2m3fn", "F6_E3M2": "float6_e3m2fn", "F4": "float4_e2m1fn",
}  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """One tensor of the header: where its bytes are, relative to the file's start."""

    name: str
    code: str  # the format's dtype code, e.g. "BF16"
    dtype: DType
    shape: tuple[int, ...]
    offset: int  # absolute, in the file
    length: int


@dataclass(frozen=True)
class Header:
    entries: tuple[Entry, ...]
    metadata: Mapping[str, str] | None  # None: no "__metadata__" (or null)
    data_start: int  # 8 + header length
    file_size: int


def looks_like_safetensors(head: bytes) -> bool:
    """An 8-byte length followed by ``{`` (optionally after spaces): the format's start."""
    if len(head) < 10:
        return False
    length = struct.unpack_from("<Q", head)[0]
    return 2 <= length <= MAX_HEADER_BYTES and head[8:].lstrip(b" ")[:1] == b"{"


def read_header(source: ByteSource) -> Header:
    """Read and check the header of the safetensors file ``source``: one read of its first
    :data:`FIRST_READ` bytes, and a second for the rest of a longer header."""
    what = repr(source.display)
    size = source.size
    if size < 8:
        raise ModelFormatError(f"{what}: {size} bytes is too short for a safetensors file")
    first = source.fetch(0, min(size, FIRST_READ))
    (length,) = struct.unpack_from("<Q", first)
    if length > MAX_HEADER_BYTES:
        raise ModelFormatError(
            f"{what}: the safetensors header claims {length} bytes "
            f"(at most {MAX_HEADER_BYTES} are read)"
        )
    if 8 + length > size:
        raise ModelFormatError(
            f"{what}: the safetensors header claims {length} bytes but the file has "
            f"{size - 8} after its length"
        )
    raw = first[8 : 8 + length]
    if len(raw) < length:
        raw += source.fetch(len(first), length - len(raw))
    return parse_header(raw, size, what)


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            raise ModelFormatError(f"the safetensors header names {key!r} twice")
        found[key] = value
    return found


def parse_header(raw: bytes, file_size: int, what: str) -> Header:
    """Check a header's JSON (``raw``) for a file of ``file_size`` bytes."""
    try:
        text = raw.decode("utf-8")
        table = json.loads(text, object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise ModelFormatError(f"{what}: the safetensors header is not UTF-8") from None
    except RecursionError:
        raise ModelFormatError(f"{what}: the safetensors header nests too deeply") from None
    except ModelFormatError as exc:
        raise ModelFormatError(f"{what}: {exc}") from None
    except ValueError as exc:
        raise ModelFormatError(f"{what}: the safetensors header is not JSON ({exc})") from None
    if not isinstance(table, dict):
        raise ModelFormatError(f"{what}: the safetensors header is not a JSON object")
    data_start = 8 + len(raw)
    data_size = file_size - data_start
    metadata = _metadata(table.pop("__metadata__", None), what)
    entries = [_entry(name, spec, data_start, data_size, what) for name, spec in table.items()]
    _check_no_overlap(entries, what)
    return Header(tuple(entries), metadata, data_start, file_size)


def _metadata(value: object, what: str) -> Mapping[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ModelFormatError(f"{what}: __metadata__ must map strings to strings")
    return value


def _entry(name: str, spec: object, data_start: int, data_size: int, what: str) -> Entry:
    where = f"{what}: tensor {name!r}"
    if not isinstance(spec, dict):
        raise ModelFormatError(f"{where}: its entry is not an object")
    code = spec.get("dtype")
    if not isinstance(code, str) or code not in DTYPES:
        raise ModelFormatError(f"{where}: unknown dtype {code!r}")
    shape = spec.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_RANK
        or not all(type(d) is int and d >= 0 for d in shape)
    ):
        raise ModelFormatError(f"{where}: shape must be a list of non-negative integers")
    offsets = spec.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(o) is int and o >= 0 for o in offsets)
    ):
        raise ModelFormatError(f"{where}: data_offsets must be [begin, end]")
    begin, end = offsets
    if begin > end or end > data_size:
        raise ModelFormatError(
            f"{where}: bytes {begin}..{end} are outside the {data_size} bytes of data"
        )
    dt = dtype(DTYPES[code])
    count = 1
    for d in shape:
        count *= d
    if dt.storage_bytes(count) != end - begin:
        raise ModelFormatError(
            f"{where}: {code} {shape} needs {dt.storage_bytes(count)} bytes, "
            f"its range has {end - begin}"
        )
    return Entry(name, code, dt, tuple(shape), data_start + begin, end - begin)


def _check_no_overlap(entries: list[Entry], what: str) -> None:
    ordered = sorted((e for e in entries if e.length), key=lambda e: e.offset)
    for before, after in itertools.pairwise(ordered):
        if after.offset < before.offset + before.length:
            raise ModelFormatError(
                f"{what}: tensors {before.name!r} and {after.name!r} share bytes"
            )
