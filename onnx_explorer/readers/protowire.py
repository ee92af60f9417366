"""Protobuf wire-format walking: find large ``bytes`` fields without copying them.

``onnx.load`` copies every ``raw_data`` byte into memory. Instead we walk the
file's wire format (through an mmap) down to the tensors, note where each large
payload lies, and hand protobuf a much smaller copy of the file in which each
such payload is replaced by a short marker. A tensor carrying a marker is then
read from its recorded file range exactly like external data.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelFormatError

#: Payloads at least this long are replaced by a marker (smaller ones are cheaper to keep).
DEFAULT_THRESHOLD = 256
MAGIC = b"OXE\x00"
MARKER_LENGTH = len(MAGIC) + 8 + 4


@dataclass(frozen=True)
class Schema:
    """Which fields of a message hold sub-messages to descend into, or payloads to cut out."""

    children: Mapping[int, Schema]
    cut: frozenset[int] = frozenset()


@dataclass
class Stripped:
    """A message with its large payloads cut out."""

    data: bytes  # the message to parse, markers in place of payloads
    ranges: list[tuple[int, int]]  # (offset, length) in the original buffer, by marker index
    nonce: bytes

    def marker_index(self, value: bytes) -> int | None:
        """Index of the range a marker stands for; None if ``value`` is not our marker."""
        if len(value) != MARKER_LENGTH or not value.startswith(MAGIC):
            return None
        if value[len(MAGIC) : len(MAGIC) + 8] != self.nonce:
            return None
        (index,) = struct.unpack_from("<I", value, len(MAGIC) + 8)
        return index if index < len(self.ranges) else None


def _varint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ModelFormatError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ModelFormatError("malformed varint")


class FileBuffer:
    """Read-only bytes of a file, fetched by ``pread`` as the walk asks for them.

    Walking through an mmap would make every touched page count in the process's
    RSS, and with large page-cache folios (Linux 6.x, ext4/xfs) a single header
    byte can map hundreds of KB; ``pread`` copies only the bytes looked at. The
    walk only moves forward, so one cached block is enough.
    """

    BLOCK = 1 << 14

    def __init__(self, fd: int, size: int) -> None:
        self._fd = fd
        self._size = size
        self._block_start = -1
        self._block = b""

    def __len__(self) -> int:
        return self._size

    def _read(self, offset: int, length: int) -> bytes:
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise ModelFormatError(f"the file shrank while being read (offset {offset})")
        return data

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            start, stop, _ = key.indices(self._size)
            return self._read(start, max(0, stop - start))
        index = key - self._block_start
        if not 0 <= index < len(self._block):
            if not 0 <= key < self._size:
                raise IndexError(key)
            self._block_start = key
            self._block = self._read(key, min(self.BLOCK, self._size - key))
            index = 0
        return self._block[index]


#: Files up to this size are read whole before the walk (walking bytes is faster).
READ_WHOLE = 32 << 20


def strip_file(path: Path, size: int, strip: Callable[[Any], Stripped], what: str) -> Stripped:
    """Run ``strip`` over a file's bytes, read by ``pread`` rather than through a map.

    Every touched page of a map counts in RSS, and with large page-cache folios one
    header byte can bring in hundreds of KB; small files are simply read whole.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ModelFormatError(f"{what} cannot be read: {exc.strerror}") from None
    try:
        source: Any = FileBuffer(fd, size)
        if size <= READ_WHOLE:
            source = source[0:size]
        return strip(source)
    finally:
        os.close(fd)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class _Walker:
    def __init__(self, buf: Any, threshold: int) -> None:
        self.buf = buf
        self.threshold = threshold
        self.ranges: list[tuple[int, int]] = []
        self.nonce = os.urandom(8)

    def marker(self, offset: int, length: int) -> bytes:
        index = len(self.ranges)
        self.ranges.append((offset, length))
        return MAGIC + self.nonce + struct.pack("<I", index)

    def rewrite(self, start: int, end: int, schema: Schema) -> list[Any] | None:
        """Pieces of the rewritten message, or None when nothing in it changed."""
        buf = self.buf
        pieces: list[Any] = []
        copied_from = start  # start of the pending unchanged run
        changed = False
        pos = start
        while pos < end:
            field_start = pos
            tag = buf[pos]  # most tags fit one byte: skip the call
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = _varint(buf, pos, end)
            field, wire = tag >> 3, tag & 7
            if wire == 0:
                _, pos = _varint(buf, pos, end)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                length = buf[pos] if pos < end else 0x80
                if length < 0x80:
                    pos += 1
                else:
                    length, pos = _varint(buf, pos, end)
                payload_start, pos = pos, pos + length
                if pos > end:
                    raise ModelFormatError(
                        f"truncated file: a field of {length} bytes at offset {payload_start} "
                        f"runs past the end of its message ({end})"
                    )
                if length < self.threshold:
                    continue
                replacement: list[Any] | None = None
                if field in schema.cut:
                    replacement = [self.marker(payload_start, length)]
                elif field in schema.children:
                    replacement = self.rewrite(payload_start, pos, schema.children[field])
                if replacement is None:
                    continue
                changed = True
                pieces.append(buf[copied_from:field_start])
                new_length = sum(len(p) for p in replacement)
                pieces.append(_encode_varint(tag) + _encode_varint(new_length))
                pieces.extend(replacement)
                copied_from = pos
            else:
                raise ModelFormatError(
                    f"unsupported protobuf wire type {wire} at offset {field_start}"
                )
            if pos > end:
                raise ModelFormatError(f"truncated file: field at offset {field_start} is cut off")
        if not changed:
            return None
        pieces.append(buf[copied_from:end])
        return pieces


def strip_payloads(buf: Any, schema: Schema, threshold: int = DEFAULT_THRESHOLD) -> Stripped:
    """Copy ``buf`` (bytes or mmap) with the payloads ``schema`` marks replaced by markers."""
    walker = _Walker(buf, threshold)
    try:
        pieces = walker.rewrite(0, len(buf), schema)
    except RecursionError:
        raise ModelFormatError("messages are nested too deeply") from None
    data = bytes(buf[0 : len(buf)]) if pieces is None else b"".join(bytes(p) for p in pieces)
    return Stripped(data, walker.ranges, walker.nonce)


def _onnx_schemas() -> Schema:
    # Field numbers from onnx.proto3. Recursive structure: graph → node → attribute → graph.
    tensor = Schema({}, frozenset({9}))  # TensorProto.raw_data
    sparse = Schema({1: tensor, 2: tensor})  # SparseTensorProto.values / indices
    attribute_children: dict[int, Schema] = {5: tensor, 10: tensor, 22: sparse, 23: sparse}
    attribute = Schema(attribute_children)
    node = Schema({5: attribute})  # NodeProto.attribute
    graph = Schema({1: node, 5: tensor, 15: sparse})  # node, initializer, sparse_initializer
    attribute_children[6] = graph  # AttributeProto.g
    attribute_children[11] = graph  # AttributeProto.graphs
    function = Schema({7: node})  # FunctionProto.node
    return Schema({7: graph, 25: function})  # ModelProto.graph, functions


ONNX_MODEL_SCHEMA = _onnx_schemas()
