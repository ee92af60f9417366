"""A forward reader over a byte source: little-endian fields, fetched a block at a time.

A GGUF header is millions of small fields (a 150k-token vocabulary is 150k length-prefixed
strings); asking the source for each would be millions of reads (of requests, for a URL).
The cursor fetches a block at once (64 KiB first, doubling up to ``BLOCK_BYTES``, so a
small header costs a small read) and serves fields from that block; a length
read from the file is checked against the bytes left *before* anything is fetched or
allocated, and skipped bytes are not fetched at all.
"""

from __future__ import annotations

import struct

from ...errors import ModelFormatError
from ...sources import ByteSource

#: Most bytes fetched per read of the source (one request per MiB of header, for a URL).
BLOCK_BYTES = 1 << 20
#: Bytes of the first read (most headers without a vocabulary fit).
FIRST_BLOCK_BYTES = 1 << 16

U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")


class Cursor:
    """Reads fields of ``source`` from ``pos`` on; every read past the end is an error."""

    def __init__(self, source: ByteSource, block_bytes: int = BLOCK_BYTES) -> None:
        self.source = source
        self.what = repr(source.display)
        self.size = source.size
        self.pos = 0
        self.fetches = 0  # reads of the source so far (tests count them)
        self._block_bytes = block_bytes
        self._next_block = min(FIRST_BLOCK_BYTES, block_bytes)
        self._buf = b""
        self._buf_start = 0

    @property
    def remaining(self) -> int:
        return self.size - self.pos

    def truncated(self, need: int, doing: str) -> ModelFormatError:
        return ModelFormatError(
            f"{self.what}: {doing} needs {need} bytes at offset {self.pos}, but the file ends "
            f"{self.remaining} bytes later ({self.size} bytes; truncated?)"
        )

    def _at(self, n: int, doing: str) -> int:
        """Where the ``n`` bytes at ``pos`` start in the buffer, fetching them if needed."""
        if n > self.remaining:
            raise self.truncated(n, doing)
        start = self.pos - self._buf_start
        if start < 0 or start + n > len(self._buf):
            length = min(max(n, self._next_block), self.remaining)
            self._next_block = min(2 * self._next_block, self._block_bytes)
            self._buf = self.source.fetch(self.pos, length)
            self._buf_start = self.pos
            self.fetches += 1
            start = 0
        return start

    def unpack(self, fmt: struct.Struct, doing: str) -> tuple[object, ...]:
        start = self._at(fmt.size, doing)
        self.pos += fmt.size
        return fmt.unpack_from(self._buf, start)

    def u32(self, doing: str) -> int:
        start = self._at(4, doing)
        self.pos += 4
        value: int = U32.unpack_from(self._buf, start)[0]
        return value

    def u64(self, doing: str) -> int:
        start = self._at(8, doing)
        self.pos += 8
        value: int = U64.unpack_from(self._buf, start)[0]
        return value

    def take(self, n: int, doing: str) -> bytes:
        """The next ``n`` bytes (checked against the file first)."""
        if n > self._block_bytes:  # larger than a block: fetched as asked, not buffered
            if n > self.remaining:
                raise self.truncated(n, doing)
            data = self.source.fetch(self.pos, n)
            self.fetches += 1
        else:
            start = self._at(n, doing)
            data = self._buf[start : start + n]
        self.pos += n
        return data

    def skip(self, n: int, doing: str) -> None:
        """Move past ``n`` bytes without fetching them (checked against the file)."""
        if n > self.remaining:
            raise self.truncated(n, doing)
        self.pos += n

    def skip_strings(self, count: int, length: struct.Struct, doing: str) -> None:
        """Move past ``count`` length-prefixed strings (a vocabulary) without keeping them."""
        prefix = length.size
        unpack = length.unpack_from
        for _ in range(count):
            start = self._at(prefix, doing)
            (n,) = unpack(self._buf, start)
            self.pos += prefix
            if n > self.size - self.pos:
                raise self.truncated(n, doing)
            self.pos += n


__all__ = ["BLOCK_BYTES", "U32", "U64", "Cursor"]
