"""A byte source over bytes already in memory (a file's bytes handed to ``load``)."""

from __future__ import annotations

from typing import Any

from .base import ByteSource


class InMemory(ByteSource):
    """Bytes in memory: ranges are slices, views share the bytes (no copy)."""

    local = True

    def __init__(self, data: bytes | bytearray | memoryview, display: str = "<bytes>") -> None:
        self._data = memoryview(data).cast("B").toreadonly()
        self.display = display

    @property
    def size(self) -> int:
        return len(self._data)

    def read_into(self, offset: int, out: Any) -> None:
        target = memoryview(out).cast("B")
        self.check_range(offset, len(target))
        target[:] = self._data[offset : offset + len(target)]

    def view(self, offset: int, length: int) -> memoryview:
        self.check_range(offset, length)
        return self._data[offset : offset + length]


__all__ = ["InMemory"]
