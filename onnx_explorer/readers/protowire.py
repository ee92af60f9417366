"""Protobuf wire-format walking: find large ``bytes`` fields without copying them.

``onnx.load`` copies every ``raw_data`` byte into memory. Instead we walk the
file's wire format (through an mmap) down to the tensors, note where each large
payload lies, and hand protobuf a much smaller copy of the file in which each
such payload is replaced by a short marker. A tensor carrying a marker is then
read from its recorded file range exactly like external data.
"""

from __future__ import annotations

import os
import re
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
    """Which fields of a message hold sub-messages to descend into, or payloads to cut out.

    ``fields``, when given, lists every field number of the message, all of them
    length-delimited: a large message of that kind is then indexed at C speed (see
    :func:`_index_fields`) instead of being stepped through field by field.
    """

    children: Mapping[int, Schema]
    cut: frozenset[int] = frozenset()
    fields: tuple[int, ...] = ()


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
    if value < 0x80:
        return bytes((value,))
    if value < 0x4000:
        return bytes((value & 0x7F | 0x80, value >> 7))
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


#: Messages at least this long whose schema lists ``fields`` are indexed, not stepped through.
INDEX_FROM = 1 << 16


class _Walker:
    def __init__(self, buf: Any, threshold: int) -> None:
        self.buf = buf
        self.threshold = threshold
        self.ranges: list[tuple[int, int]] = []
        self.nonce = os.urandom(8)
        self._prefix = MAGIC + self.nonce
        # Bytes in memory can be searched and indexed; a FileBuffer is only stepped through.
        self._in_memory = not isinstance(buf, FileBuffer)
        self._signatures: dict[int, Any] = {}

    def rewrite(self, start: int, end: int, schema: Schema) -> tuple[list[Any], int] | None:
        """Pieces of the rewritten message and their total length; None if nothing changed.

        This loop is the hot path of opening a file: nearly every field is shorter
        than the threshold and skipped by its length prefix without looking inside,
        so tags and lengths of one or two bytes are decoded inline.
        """
        if self._in_memory:
            # A message that cannot hold a payload to cut is skipped after one C-speed
            # search (a graph whose weights are all external; a node large only because
            # of its names); a large one that can is indexed rather than stepped through.
            signature = self._signature(schema)
            if signature is not None and not signature.search(self.buf, start, end):
                return None
            if schema.fields and end - start >= INDEX_FROM:
                index = _index_fields(self.buf, start, end, schema.fields)
                if index is not None:
                    return self._rewrite_indexed(start, end, schema, index)
        buf = self.buf
        threshold = self.threshold
        wanted = schema.cut | schema.children.keys()
        pieces: list[Any] = []
        size = 0  # bytes in ``pieces``
        copied_from = start  # start of the pending unchanged run
        pos = start
        while pos < end:
            field_start = pos
            tag = buf[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = _varint(buf, pos, end)
            wire = tag & 7
            if wire == 2:
                if pos + 1 < end:
                    length = buf[pos]
                    if length < 0x80:
                        pos += 1
                    else:
                        high = buf[pos + 1]
                        if high < 0x80:
                            length = length & 0x7F | high << 7
                            pos += 2
                        else:
                            length, pos = _varint(buf, pos, end)
                else:
                    length, pos = _varint(buf, pos, end)
                payload_start = pos
                pos += length
                if pos > end:
                    raise ModelFormatError(
                        f"truncated file: a field of {length} bytes at offset {payload_start} "
                        f"runs past the end of its message ({end})"
                    )
                if length < threshold or tag >> 3 not in wanted:
                    continue
                new = self._field(tag, payload_start, length, schema)
                if new is None:
                    continue
                head = buf[copied_from:field_start]
                pieces.append(head)
                pieces.extend(new[0])
                size += len(head) + new[1]
                copied_from = pos
            elif wire == 0:
                if pos < end and buf[pos] < 0x80:
                    pos += 1
                else:
                    _, pos = _varint(buf, pos, end)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                raise ModelFormatError(
                    f"unsupported protobuf wire type {wire} at offset {field_start}"
                )
            if pos > end:
                raise ModelFormatError(f"truncated file: field at offset {field_start} is cut off")
        if not pieces:
            return None
        tail = buf[copied_from:end]
        pieces.append(tail)
        return pieces, size + len(tail)

    def _rewrite_indexed(
        self, start: int, end: int, schema: Schema, index: _FieldIndex
    ) -> tuple[list[Any], int] | None:
        """:meth:`rewrite` over a message whose fields :func:`_index_fields` has listed."""
        import numpy as np

        wanted = np.isin(index.numbers, list(schema.cut | schema.children.keys()))
        chosen = np.flatnonzero(wanted & (index.lengths >= self.threshold))
        buf = self.buf
        pieces: list[Any] = []
        size = 0
        copied_from = start
        field = self._field
        for tag, field_start, payload_start, length in zip(
            index.tags[chosen].tolist(),
            index.starts[chosen].tolist(),
            index.payloads[chosen].tolist(),
            index.lengths[chosen].tolist(),
        ):
            new = field(tag, payload_start, length, schema)
            if new is None:
                continue
            head = buf[copied_from:field_start]
            pieces.append(head)
            pieces.extend(new[0])
            size += len(head) + new[1]
            copied_from = payload_start + length
        if not pieces:
            return None
        tail = buf[copied_from:end]
        pieces.append(tail)
        return pieces, size + len(tail)

    def _field(
        self, tag: int, payload_start: int, length: int, schema: Schema
    ) -> tuple[list[Any], int] | None:
        """The new encoding of a length-delimited field of ``threshold`` bytes or more
        (pieces, total length), or None when it stays as it is."""
        field = tag >> 3
        if field in schema.cut:
            payload = [self._marker(payload_start, length)]
            new_length = MARKER_LENGTH
        else:
            child = schema.children[field]
            end = payload_start + length
            if child.children:
                inner = self.rewrite(payload_start, end, child)
            else:
                inner = self._rewrite_leaf(payload_start, end, child.cut)
            if inner is None:
                return None
            payload, new_length = inner
        prefix = _encode_varint(tag) + _encode_varint(new_length)
        return [prefix, *payload], len(prefix) + new_length

    def _marker(self, offset: int, length: int) -> bytes:
        index = len(self.ranges)
        self.ranges.append((offset, length))
        return self._prefix + struct.pack("<I", index)

    def _rewrite_leaf(
        self, start: int, end: int, cut: frozenset[int]
    ) -> tuple[list[Any], int] | None:
        """:meth:`rewrite` for a message with payloads to cut and nothing to descend into
        (a tensor: its raw_data), the common case, kept short."""
        buf = self.buf
        threshold = self.threshold
        pieces: list[Any] = []
        size = 0
        copied_from = pos = start
        while pos < end:
            field_start = pos
            tag = buf[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = _varint(buf, pos, end)
            wire = tag & 7
            if wire == 0:
                if pos < end and buf[pos] < 0x80:
                    pos += 1
                else:
                    _, pos = _varint(buf, pos, end)
            elif wire == 2:
                length = buf[pos] if pos < end else 0x80
                if length < 0x80:
                    pos += 1
                else:
                    length, pos = _varint(buf, pos, end)
                payload_start = pos
                pos += length
                if pos > end:
                    raise ModelFormatError(
                        f"truncated file: a field of {length} bytes at offset {payload_start} "
                        f"runs past the end of its message ({end})"
                    )
                if length >= threshold and tag >> 3 in cut:
                    head = buf[copied_from:field_start]
                    prefix = _encode_varint(tag) + _encode_varint(MARKER_LENGTH)
                    pieces += (head, prefix, self._marker(payload_start, length))
                    size += len(head) + len(prefix) + MARKER_LENGTH
                    copied_from = pos
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                raise ModelFormatError(
                    f"unsupported protobuf wire type {wire} at offset {field_start}"
                )
            if pos > end:
                raise ModelFormatError(f"truncated file: field at offset {field_start} is cut off")
        if not pieces:
            return None
        tail = buf[copied_from:end]
        pieces.append(tail)
        return pieces, size + len(tail)

    def _signature(self, schema: Schema) -> Any:
        """A pattern every message of ``schema`` holding a payload to cut contains, or None.

        A cut payload of at least ``threshold`` (≥ 128) bytes is encoded as the cut
        field's tag followed by a length varint of two bytes or more, whose first
        byte has its high bit set; this holds at any depth below ``schema``.
        """
        key = id(schema)
        if key not in self._signatures:
            if not schema.children:  # a tensor: nearly always holds one, and is short
                self._signatures[key] = None
                return None
            tags = {_encode_varint(f << 3 | 2) for f in _cut_fields(schema)}
            pattern = None
            if tags and self.threshold >= 0x80:
                alternatives = b"|".join(re.escape(t) for t in sorted(tags))
                pattern = re.compile(b"(?:" + alternatives + b")[\\x80-\\xff]")
            self._signatures[key] = pattern
        return self._signatures[key]


def _cut_fields(schema: Schema) -> set[int]:
    """Field numbers cut anywhere at or below ``schema``."""
    found: set[int] = set()
    seen: set[int] = set()
    stack = [schema]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found |= current.cut
        stack.extend(current.children.values())
    return found


@dataclass(frozen=True)
class _FieldIndex:
    """Every field of one message in file order (numpy arrays, one entry per field)."""

    numbers: Any  # field number
    tags: Any  # tag (field number << 3 | 2)
    starts: Any  # offset of the tag
    payloads: Any  # offset of the payload
    lengths: Any  # payload length


_SHADOWS: dict[tuple[int, ...], Any] = {}


def _shadow_class(fields: tuple[int, ...]) -> Any:
    """A protobuf message class with every one of ``fields`` as ``repeated bytes``."""
    cls = _SHADOWS.get(fields)
    if cls is None:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        name = "Fields_" + "_".join(map(str, fields))
        file = descriptor_pb2.FileDescriptorProto(
            name=f"onnx_explorer_protowire_{name}.proto",
            package="onnx_explorer_protowire",
            syntax="proto2",
        )
        message = file.message_type.add(name=name)
        for number in fields:
            message.field.add(
                name=f"f{number}",
                number=number,
                type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
            )
        pool = descriptor_pool.DescriptorPool()
        pool.Add(file)
        descriptor = pool.FindMessageTypeByName(f"onnx_explorer_protowire.{name}")
        cls = _SHADOWS[fields] = message_factory.GetMessageClass(descriptor)
    return cls


def _index_fields(buf: Any, start: int, end: int, fields: tuple[int, ...]) -> _FieldIndex | None:
    """Where each field of the message at ``buf[start:end]`` lies, found at C speed.

    protobuf's own parser splits the message into one list per field number (a
    message class declaring ``fields`` as ``repeated bytes``). That loses the order
    between different numbers, so the fields are assumed to be in ascending order,
    as every protobuf serializer writes them, and the assumption is checked: each
    predicted field must start with its own tag and minimal length varint, and the
    fields must fill the message exactly. Walking the message field by field from
    its start would then meet exactly these fields (by induction: each check pins
    where the next field starts), so the index is what the walk would find. None
    when the message is anything else (other field numbers, unusual encodings,
    damage): the caller then walks it, which also reports damage properly.
    """
    import numpy as np

    try:
        message = _shadow_class(fields).FromString(memoryview(buf)[start:end])
    except Exception:  # any refusal means "walk it instead"
        return None
    numbers: list[int] = []
    lengths: list[Any] = []
    for field in sorted(fields):
        values = getattr(message, f"f{field}")
        if values:
            lengths.append(np.fromiter(map(len, values), np.int64, len(values)))
            numbers.append(field)
    if not lengths:
        return None if end > start else _FieldIndex(*([np.zeros(0, np.int64)] * 5))
    counts = [len(a) for a in lengths]
    length = np.concatenate(lengths)
    number = np.repeat(np.array(numbers, np.int64), counts)
    tag = number << 3 | 2
    tag_size = _varint_sizes(tag)
    length_size = _varint_sizes(length)
    size = tag_size + length_size + length
    field_end = np.cumsum(size)
    if int(field_end[-1]) != end - start:
        return None
    local = field_end - size  # field starts, relative to ``start``
    data = np.frombuffer(buf, np.uint8, end - start, start)
    if not _varints_match(data, local, tag, tag_size):
        return None
    if not _varints_match(data, local + tag_size, length, length_size):
        return None
    return _FieldIndex(number, tag, local + start, local + start + tag_size + length_size, length)


def _varints_match(data: Any, offsets: Any, values: Any, sizes: Any) -> bool:
    """Whether ``data`` holds each value's minimal varint at its offset (numpy arrays)."""
    import numpy as np

    k = 0
    while True:
        more = sizes > k + 1
        expected = (values >> (7 * k)) & 0x7F | more.astype(np.int64) << 7
        if not np.array_equal(data[offsets + k], expected):
            return False
        if not more.any():
            return True
        offsets, values, sizes = offsets[more], values[more], sizes[more]
        k += 1


def _varint_sizes(values: Any) -> Any:
    """Bytes of each value's minimal varint encoding (numpy, non-negative values)."""
    import numpy as np

    sizes = np.ones(values.shape, np.int64)
    for k in range(1, 10):
        longer = values >= (1 << (7 * k))
        if not longer.any():
            break
        sizes += longer
    return sizes


def strip_payloads(buf: Any, schema: Schema, threshold: int = DEFAULT_THRESHOLD) -> Stripped:
    """Copy ``buf`` (bytes or mmap) with the payloads ``schema`` marks replaced by markers."""
    walker = _Walker(buf, threshold)
    try:
        rewritten = walker.rewrite(0, len(buf), schema)
    except RecursionError:
        raise ModelFormatError("messages are nested too deeply") from None
    data = bytes(buf[0 : len(buf)]) if rewritten is None else b"".join(rewritten[0])
    return Stripped(data, walker.ranges, walker.nonce)


def _onnx_schemas() -> Schema:
    # Field numbers from onnx.proto3. Recursive structure: graph → node → attribute → graph.
    tensor = Schema({}, frozenset({9}))  # TensorProto.raw_data
    sparse = Schema({1: tensor, 2: tensor})  # SparseTensorProto.values / indices
    attribute_children: dict[int, Schema] = {5: tensor, 10: tensor, 22: sparse, 23: sparse}
    attribute = Schema(attribute_children)
    node = Schema({5: attribute})  # NodeProto.attribute
    # node, initializer, sparse_initializer; then every GraphProto field number, so that a
    # large graph is indexed at C speed rather than walked node by node.
    graph = Schema({1: node, 5: tensor, 15: sparse}, fields=(1, 2, 5, 10, 11, 12, 13, 14, 15, 16))
    attribute_children[6] = graph  # AttributeProto.g
    attribute_children[11] = graph  # AttributeProto.graphs
    function = Schema({7: node})  # FunctionProto.node
    return Schema({7: graph, 25: function})  # ModelProto.graph, functions


ONNX_MODEL_SCHEMA = _onnx_schemas()
