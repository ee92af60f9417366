"""The byte-source interface: a size and ranges of bytes, whatever holds them.

Readers and lazy tensors only ever ask a source for ranges, so a model on a web
server or in a bucket needs no special case above this interface.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..errors import ExternalDataError

__all__ = ["CHECKSUM_CHUNK", "ByteSource"]

#: Bytes read per step when hashing a whole source (checksums stream, never load).
CHECKSUM_CHUNK = 4 << 20


class ByteSource:
    """Read-only bytes with a known size; subclasses say where they live.

    ``display`` names the source in messages (a path, or a URL without credentials).
    ``local`` is true when ranges can be memory-mapped (:meth:`view` is zero-copy).
    """

    display: str = "<bytes>"
    local: bool = False

    @property
    def size(self) -> int:
        raise NotImplementedError

    def read_into(self, offset: int, out: Any) -> None:
        """Fill the writable buffer ``out`` with the bytes at ``offset``, or raise."""
        raise NotImplementedError

    def fetch(self, offset: int, length: int) -> bytes:
        """Exactly ``length`` bytes at ``offset``, read as asked (no read-ahead)."""
        out = bytearray(length)
        self.read_into(offset, out)
        return bytes(out)

    def check_range(self, offset: int, length: int) -> None:
        """Raise unless ``length`` bytes at ``offset`` lie inside the source."""
        size = self.size
        if offset < 0 or length < 0 or offset + length > size:
            raise ExternalDataError(
                f"range {offset}+{length} lies outside {self.display!r} ({size} bytes)"
            )

    def view(self, offset: int, length: int) -> memoryview:
        """A read-only view of the range (sources that cannot map return a copy)."""
        self.check_range(offset, length)
        out = bytearray(length)
        self.read_into(offset, out)
        return memoryview(out).toreadonly()

    def sha1(self) -> str:
        """SHA1 of the whole source, streamed in chunks."""
        digest = hashlib.sha1()
        buf = bytearray(CHECKSUM_CHUNK)
        size = self.size
        for start in range(0, size, CHECKSUM_CHUNK):
            part = memoryview(buf)[: min(CHECKSUM_CHUNK, size - start)]
            self.read_into(start, part)
            digest.update(part)
        return digest.hexdigest()

    def close(self) -> None:
        """Release descriptors, maps and caches (reading again reopens)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.display!r}>"
