"""Protobuf wire-format walking: find large ``bytes`` fields without copying them.

``onnx.load`` copies every ``raw_data`` byte into memory. Instead we walk the
file's wire format (through an mmap) down to the tensors, note where each large
payload lies, and hand protobuf a much smaller copy of the file in which each
such payload is replaced by a short marker. A tensor carrying a marker is then
read from its recorded file range exactly like external data.
"""

from __future__ import annotations

import bisect
import os
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ModelFormatError
from ...sources import ByteSource
from ._varint import decode_varint, encode_varint

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

    # What to parse: markers in place of payloads; ``buf`` itself (bytes, or a read-only
    # view of a map, which protobuf parses alike) when there was nothing to cut.
    data: bytes
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


class FileBuffer:
    """Read-only bytes of a file or byte source, fetched as the walk asks for them.

    Walking through an mmap would make every touched page count in the process's
    RSS, and with large page-cache folios (Linux 6.x, ext4/xfs) a single header
    byte can map hundreds of KB; ``pread`` copies only the bytes looked at. The
    walk moves forward, so one current block is enough for a file. Over a network each
    block is a request: a block read right where the last one ended doubles the next
    (up to ``MAX_BLOCK``: the graph's nodes come in few requests), and a jump over a
    payload starts small again (opening skips the weights, a few KB per tensor).

    A byte source also keeps the head (``MEMO_BYTES``) of each block it jumped to: the
    walk comes back to every large message (the graph's scan passes over the tensors,
    then each tensor's own scan and its rewrite read their headers), and those returns
    were two more requests per tensor (309 to open a 100-tensor model, now 105).
    """

    BLOCK = 1 << 14
    MAX_BLOCK = 1 << 20
    MEMO_BYTES = 1 << 11
    MEMO_LIMIT = 32 << 20  # ~16,000 tensors' headers; past it, returns fetch again

    def __init__(self, source: int | ByteSource, size: int) -> None:
        self._fd = source if isinstance(source, int) else None
        self._source = source if not isinstance(source, int) else None
        self._size = size
        self._block_start = -1
        self._block = b""
        self._next = self.BLOCK
        self._memo_starts: list[int] = []  # sorted
        self._memo: dict[int, bytes] = {}
        self._memo_bytes = 0

    def __len__(self) -> int:
        return self._size

    def _read(self, offset: int, length: int) -> bytes:
        if self._source is not None:
            return self._source.fetch(offset, length)
        assert self._fd is not None
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise ModelFormatError(f"the file shrank while being read (offset {offset})")
        return data

    def _remembered(self, start: int, stop: int) -> tuple[int, bytes] | None:
        """The memo block holding ``[start, stop)``, if one does."""
        i = bisect.bisect_right(self._memo_starts, start) - 1
        if i < 0:
            return None
        begin = self._memo_starts[i]
        block = self._memo[begin]
        return (begin, block) if stop <= begin + len(block) else None

    def _remember(self, start: int, block: bytes) -> None:
        if self._source is None or self._memo_bytes >= self.MEMO_LIMIT or start in self._memo:
            return
        head = block[: self.MEMO_BYTES]
        bisect.insort(self._memo_starts, start)
        self._memo[start] = head
        self._memo_bytes += len(head)

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            start, stop, _ = key.indices(self._size)
            stop = max(start, stop)
            held = self._remembered(start, stop) if self._memo else None
            if held is not None:
                return held[1][start - held[0] : stop - held[0]]
            return self._read(start, stop - start)
        index = key - self._block_start
        if not 0 <= index < len(self._block):
            if not 0 <= key < self._size:
                raise IndexError(key)
            held = self._remembered(key, key + 1) if self._memo else None
            if held is not None:
                self._block_start, self._block = held
                self._next = self.BLOCK
                return self._block[key - self._block_start]
            sequential = key == self._block_start + len(self._block)
            self._next = min(self.MAX_BLOCK, self._next * 2) if sequential else self.BLOCK
            self._block_start = key
            self._block = self._read(key, min(self._next, self._size - key))
            if not sequential:
                self._remember(key, self._block)
            index = 0
        return self._block[index]


#: Files up to this size are read whole before the walk (walking bytes is faster).
READ_WHOLE = 32 << 20


def strip_file(
    source: Path | ByteSource, size: int, strip: Callable[[Any], Stripped], what: str
) -> Stripped:
    """Run ``strip`` over a file's bytes, read by ranges rather than through a map.

    Every touched page of a map counts in RSS, and with large page-cache folios one
    header byte can bring in hundreds of KB; small files are simply read whole.
    ``source`` is a path (opened here) or a :class:`~onnx_explorer.sources.ByteSource`
    (a local file's descriptor, or a URL read by range requests).
    """
    if isinstance(source, ByteSource):
        buffer: Any = FileBuffer(source, size)
        return strip(buffer[0:size] if size <= READ_WHOLE else buffer)
    try:
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ModelFormatError(f"{what} cannot be read: {exc.strerror}") from None
    try:
        buffer = FileBuffer(fd, size)
        if size <= READ_WHOLE:
            buffer = buffer[0:size]
        return strip(buffer)
    finally:
        os.close(fd)


#: Tensors from which a run of them is cut together in numpy (see :mod:`._batch`).
BATCH_FROM = 8

# A field of a message: (where it starts, its tag, where its payload starts, its length).
_Field = tuple[int, int, int, int]


class _Output:
    """A message being rewritten: the pieces so far and where copying resumes."""

    def __init__(self, view: Any, start: int) -> None:
        self.view = view
        self.pieces: list[Any] = []
        self.size = 0
        self.copied_from = start

    def replace(self, start: int, end: int, new: list[Any], new_size: int) -> None:
        """Copy up to ``start``, then write ``new`` in place of ``start:end``."""
        head = self.view[self.copied_from : start]
        self.pieces.append(head)
        self.pieces.extend(new)
        self.size += len(head) + new_size
        self.copied_from = end

    def finish(self, end: int) -> tuple[list[Any], int] | None:
        if not self.pieces:
            return None
        tail = self.view[self.copied_from : end]
        self.pieces.append(tail)
        return self.pieces, self.size + len(tail)


class _Walker:
    """One walk over a buffer: the ranges it cut so far and how markers name them."""

    def __init__(self, buf: Any, threshold: int) -> None:
        self.buf = buf
        self.threshold = threshold
        self.ranges: list[tuple[int, int]] = []
        self.nonce = os.urandom(8)
        self._prefix = MAGIC + self.nonce
        # Bytes in memory are searched, sliced without copies and batched in numpy; a
        # FileBuffer (a large file read in blocks) is only stepped through.
        self._in_memory = not isinstance(buf, FileBuffer)
        self._view = memoryview(buf) if self._in_memory else buf
        self._signatures: dict[int, Any] = {}
        self._hit = (0, -1)  # where the last signature search found one

    def rewrite(self, start: int, end: int, schema: Schema) -> tuple[list[Any], int] | None:
        """Pieces of the rewritten message and their total length; None if nothing changed."""
        if self._in_memory and schema.children and not self._may_hold(start, end, schema):
            return None
        fields = self._scan(start, end, schema)
        if not fields:
            return None
        out = _Output(self._view, start)
        self._edit(fields, schema, out)
        return out.finish(end)

    def _may_hold(self, start: int, end: int, schema: Schema) -> bool:
        """Whether the message may hold a payload to cut: one C-speed search for the
        signature every such message contains (see :meth:`_signature`).

        A graph whose weights are all external is skipped whole, and so is a node that
        is large only because of its names.
        """
        signature = self._signature(schema)
        if signature is None:
            return True
        hit_start, hit_end = self._hit
        if start <= hit_start and hit_end <= end:
            return True  # found inside this message already, by a search one level up
        match = signature.search(self.buf, start, end)
        if match is None:
            return False
        self._hit = match.span()
        return True

    def _scan(self, start: int, end: int, schema: Schema) -> list[_Field]:
        """The fields of a message that may need a change: those of ``threshold`` bytes
        or more that ``schema`` cuts or descends into. Checks the whole message's
        framing on the way.

        This loop is the hot path of opening a file: a graph's nodes are skipped here
        one by one. Nearly every field is a length-delimited one with a 1-byte tag and
        a 1- or 2-byte length, shorter than the threshold: the first branches skip it.
        """
        buf = self.buf
        threshold = self.threshold
        short = 0x80 if threshold >= 0x80 else 0  # 1-byte lengths are always skipped
        wanted = schema.cut | schema.children.keys()
        found: list[_Field] = []
        pos = start
        last = end - 2  # the fast branches read up to 3 bytes
        while pos < end:
            tag = buf[pos]
            if tag & 0x87 == 2 and pos < last:  # 1-byte tag, wire type 2
                length = buf[pos + 1]
                if length < short:
                    pos += 2 + length
                    continue
                high = buf[pos + 2]
                if high < 0x80:
                    length = length & 0x7F | high << 7
                    if length < threshold:
                        pos += 3 + length
                        continue
            field_start = pos
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = decode_varint(buf, pos, end)
            wire = tag & 7
            if wire == 2:
                length, pos = decode_varint(buf, pos, end)
                payload_start = pos
                pos += length
                if pos > end:
                    raise ModelFormatError(
                        f"truncated file: a field of {length} bytes at offset {payload_start} "
                        f"runs past the end of its message ({end})"
                    )
                if length >= threshold and tag >> 3 in wanted:
                    found.append((field_start, tag, payload_start, length))
            elif wire == 0:
                _, pos = decode_varint(buf, pos, end)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                raise ModelFormatError(
                    f"unsupported protobuf wire type {wire} at offset {field_start}"
                )
        if pos > end:
            raise ModelFormatError(f"truncated file: a field before offset {end} is cut off")
        return found

    def _edit(self, fields: list[_Field], schema: Schema, out: _Output) -> None:
        """Write the changes to a message's ``fields`` to ``out``, in file order.

        Consecutive tensors (a graph's initializers) are cut together, in numpy
        (:func:`._batch.leaf_cuts`), rather than walked one after another;
        sub-messages (nodes) are first searched together for the signature of a
        payload to cut (:meth:`_holding`), and only those holding it are walked.
        """
        holding = self._holding(fields, schema)
        run: list[_Field] = []
        run_schema: Schema | None = None
        for field in fields:
            child = schema.children.get(field[1] >> 3)
            if self._in_memory and child is not None and child.cut and not child.children:
                if run and child is not run_schema:
                    self._leaf_run(run, run_schema, out)
                    run = []
                run.append(field)
                run_schema = child
                continue
            if run:
                self._leaf_run(run, run_schema, out)
                run = []
            field_start, tag, payload_start, length = field
            if holding is not None and field_start not in holding and tag >> 3 not in schema.cut:
                continue
            new = self._field(tag, payload_start, length, schema)
            if new is not None:
                out.replace(field_start, payload_start + length, new[0], new[1])
        if run:
            self._leaf_run(run, run_schema, out)

    def _holding(self, fields: list[_Field], schema: Schema) -> set[int] | None:
        """Starts of the sub-messages among ``fields`` that contain their signature, found
        by one search over the stretch they span; None to look at each on its own.

        Matches cannot overlap (a signature starts with a 1-byte tag, below 0x80, and
        ends with a byte of 0x80 or more), so the search misses none.
        """
        if not self._in_memory:
            return None
        nested = [f for f in fields if (child := schema.children.get(f[1] >> 3)) and child.children]
        if len(nested) < BATCH_FROM:
            return None
        kinds = {id(schema.children[f[1] >> 3]): schema.children[f[1] >> 3] for f in nested}
        if len(kinds) != 1:
            return None
        (child,) = kinds.values()
        signature = self._signature(child)
        if signature is None or max(_cut_fields(child)) >= 16:  # multi-byte tags
            return None
        first, last = nested[0][0], nested[-1][2] + nested[-1][3]
        hits = [m.start() for m in signature.finditer(self.buf, first, last)]
        if not hits:
            return set()
        import numpy as np

        starts = np.array([f[2] for f in nested], np.int64)  # payload starts
        ends = starts + np.array([f[3] for f in nested], np.int64)
        owner = np.searchsorted(starts, np.array(hits, np.int64), side="right") - 1
        inside = (owner >= 0) & (np.array(hits) + 2 <= ends[np.maximum(owner, 0)])
        return {nested[i][0] for i in np.unique(owner[inside]).tolist()}

    def _leaf_run(self, run: list[_Field], schema: Schema | None, out: _Output) -> None:
        """Cut the payloads of a run of tensors (``schema``: what they cut, nothing more)."""
        assert schema is not None
        batch = None
        if len(run) >= BATCH_FROM:
            from ._batch import leaf_cuts

            batch = leaf_cuts(self.buf, run, schema.cut, self.threshold)
        if batch is None:  # few, or one needs the walk: one at a time
            for field_start, tag, payload_start, length in run:
                end = payload_start + length
                inner = self._rewrite_leaf(payload_start, end, schema.cut)
                if inner is not None:
                    prefix = encode_varint(tag) + encode_varint(inner[1])
                    out.replace(field_start, end, [prefix, *inner[0]], len(prefix) + inner[1])
            return
        view = self._view
        pieces = out.pieces
        ranges = self.ranges
        size = out.size
        copied_from = out.copied_from
        tag_bytes = {tag: encode_varint(tag) for tag in {field[1] for field in run}}
        # What a marker field starts with, by the tag of the field cut.
        heads = {t: bytes((t, MARKER_LENGTH)) + self._prefix for t in {cut[2] for cut in batch}}
        # The tensor becomes: its tag, its new length, its fields before the payload, the
        # payload's tag, length (16) and marker; what follows the payload is copied.
        for message, at, cut_tag, cut_payload, cut_length in batch:
            field_start, tag, payload_start, length = run[message]
            resume = cut_payload + cut_length
            new_length = length - (resume - at) + 2 + MARKER_LENGTH
            prefix = tag_bytes[tag] + encode_varint(new_length)
            pieces += (
                view[copied_from:field_start],
                prefix,
                view[payload_start:at],
                heads[cut_tag] + len(ranges).to_bytes(4, "little"),
            )
            ranges.append((cut_payload, cut_length))
            size += field_start - copied_from + len(prefix) + at - payload_start + 2 + MARKER_LENGTH
            copied_from = resume
        out.size = size
        out.copied_from = copied_from

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
        prefix = encode_varint(tag) + encode_varint(new_length)
        return [prefix, *payload], len(prefix) + new_length

    def _marker(self, offset: int, length: int) -> bytes:
        index = len(self.ranges)
        self.ranges.append((offset, length))
        return self._prefix + index.to_bytes(4, "little")

    def _rewrite_leaf(
        self, start: int, end: int, cut: frozenset[int]
    ) -> tuple[list[Any], int] | None:
        """:meth:`rewrite` for a message with payloads to cut and nothing to descend into
        (a tensor: its raw_data)."""
        view = self._view
        pieces: list[Any] = []
        size = 0
        copied_from = start
        for field_start, tag, payload_start, length in self._scan(start, end, Schema({}, cut)):
            head = view[copied_from:field_start]
            prefix = encode_varint(tag) + encode_varint(MARKER_LENGTH)
            pieces += (head, prefix, self._marker(payload_start, length))
            size += len(head) + len(prefix) + MARKER_LENGTH
            copied_from = payload_start + length
        if not pieces:
            return None
        tail = view[copied_from:end]
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
            tags = {encode_varint(f << 3 | 2) for f in _cut_fields(schema)}
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


def strip_payloads(buf: Any, schema: Schema, threshold: int = DEFAULT_THRESHOLD) -> Stripped:
    """Copy ``buf`` (bytes, or a view of a map) with the payloads ``schema`` marks replaced
    by markers; ``buf`` itself when there are none."""
    walker = _Walker(buf, threshold)
    try:
        rewritten = walker.rewrite(0, len(buf), schema)
    except RecursionError:
        raise ModelFormatError("messages are nested too deeply") from None
    data: Any
    if rewritten is not None:
        data = b"".join(rewritten[0])
    elif isinstance(buf, bytes | memoryview):
        data = buf  # nothing to cut: parse the buffer itself (a view of a map: no copy)
    else:
        data = bytes(buf[0 : len(buf)])
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
