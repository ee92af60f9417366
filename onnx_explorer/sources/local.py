"""A byte source on a local file: ``pread`` into owned buffers, a map only when asked.

A file that shrinks after it was opened is an error when a range is read, never a
crash of the process (see :meth:`LocalFile.view` for the one exception, maps).
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import stat
import threading
import weakref
from pathlib import Path
from typing import Any

from ..errors import ExternalDataError, UnsafePathError
from .base import CHECKSUM_CHUNK as _CHECKSUM_CHUNK
from .base import ByteSource

__all__ = ["LocalFile"]


class LocalFile(ByteSource):
    """One data file, opened once and shared by every tensor stored in it.

    The explorer's own reads (statistics, checks, previews) copy ranges with
    ``os.pread`` into buffers it owns (:meth:`read_into`): a file that shrinks
    meanwhile gives a short read, reported as :class:`ExternalDataError`. Only
    :meth:`view` (``Tensor.numpy()`` of a large tensor) maps the file, lazily.
    """

    local = True

    def __init__(self, path: Path) -> None:
        self.path = path
        self.display = str(path)
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._size: int | None = None
        self._sha1: str | None = None
        self._closer: weakref.finalize[[int], LocalFile] | None = None

    def _checked_fd(self) -> int:
        """An open descriptor on the data file, refused unless it is a regular file."""
        try:
            # O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: no last-moment symlink swap.
            flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            raise ExternalDataError(f"data file {str(self.path)!r} does not exist") from None
        except OSError as exc:
            raise ExternalDataError(
                f"data file {str(self.path)!r} cannot be opened: {exc.strerror}"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UnsafePathError(f"data file {str(self.path)!r} is not a regular file")
        return fd

    def _opened(self) -> int:
        """The descriptor, opened on first use (the size is the file's size at that moment)."""
        with self._lock:
            if self._fd is None:
                fd = self._checked_fd()
                self._size = os.fstat(fd).st_size
                self._fd = fd
                # A model dropped without close() must not keep its descriptor: a kernel
                # opening model after model would run out of them (EMFILE).
                self._closer = weakref.finalize(self, _close_quietly, fd)
            return self._fd

    @property
    def size(self) -> int:
        """The file's size when it was opened (offsets in the model are checked against it)."""
        self._opened()
        assert self._size is not None
        return self._size

    def check_range(self, offset: int, length: int) -> None:
        """Raise unless ``length`` bytes at ``offset`` lie inside the file as it is now."""
        size = self.size
        if offset < 0 or length < 0 or offset + length > size:
            raise ExternalDataError(
                f"range {offset}+{length} lies outside {str(self.path)!r} ({size} bytes)"
            )
        try:
            now = os.fstat(self._opened()).st_size
        except OSError as exc:
            raise ExternalDataError(
                f"data file {str(self.path)!r} cannot be read: {exc.strerror}"
            ) from None
        if offset + length > now:
            raise ExternalDataError(self._shrunk(offset + length, now))

    def _shrunk(self, end: int, now: int) -> str:
        return (
            f"data file {str(self.path)!r} shrank to {now} bytes since it was opened (it was "
            f"{self._size}; truncated or being rewritten?), so bytes up to {end} are gone; "
            "load the model again"
        )

    def read_into(self, offset: int, out: Any) -> None:
        """Fill the writable buffer ``out`` with the bytes at ``offset`` (a copy, never a map)."""
        target = memoryview(out).cast("B")
        self.check_range(offset, len(target))
        fd = self._opened()
        done = 0
        while done < len(target):
            try:
                n = self._pread_into(fd, target[done:], offset + done)
            except OSError as exc:
                raise ExternalDataError(
                    f"data file {str(self.path)!r} cannot be read: {exc.strerror}"
                ) from None
            if n == 0:  # end of file before the range ends: it shrank after the check
                raise ExternalDataError(self._shrunk(offset + len(target), offset + done))
            done += n

    def fetch(self, offset: int, length: int) -> bytes:
        out = bytearray(length)
        self.read_into(offset, out)
        return bytes(out)

    def _pread_into(self, fd: int, target: memoryview, position: int) -> int:
        if hasattr(os, "preadv"):  # positioned: threads share the descriptor safely
            return os.preadv(fd, [target], position)
        with self._lock:  # pragma: no cover - Windows has no preadv
            os.lseek(fd, position, os.SEEK_SET)
            with open(fd, "rb", buffering=0, closefd=False) as fh:
                return fh.readinto(target) or 0

    def view(self, offset: int, length: int) -> memoryview:
        """A zero-copy view of ``length`` bytes at ``offset`` of the file's map.

        The range is checked against the file's current size first, so a file that
        shrank before the call is an error, not a crash. The check cannot cover what
        happens later: a view *is* the file, and touching bytes that a later truncation
        removed is a SIGBUS, as for every memory-mapped array (``numpy.memmap``, onnx's
        own mmap loading). That is why the explorer reads through :meth:`read_into`,
        and maps only for ``Tensor.numpy()`` of large tensors, where the caller asked
        for an array and a copy would double the memory.
        """
        self.check_range(offset, length)
        if length == 0:
            return memoryview(b"")
        with self._lock:
            if self._map is None:
                assert self._fd is not None and self._size is not None
                self._map = mmap.mmap(self._fd, self._size, access=mmap.ACCESS_READ)
            return memoryview(self._map)[offset : offset + length]

    def sha1(self) -> str:
        """SHA1 of the whole file, read in chunks (not through the map, to keep RSS low)."""
        if self._sha1 is None:
            digest = hashlib.sha1()
            fd = self._checked_fd()  # the same checks as reading: no FIFO, device or symlink
            try:
                os.set_blocking(fd, True)
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    while chunk := fh.read(_CHECKSUM_CHUNK):
                        digest.update(chunk)
            except OSError as exc:
                raise ExternalDataError(
                    f"data file {str(self.path)!r} cannot be read: {exc.strerror}"
                ) from None
            finally:
                os.close(fd)
            self._sha1 = digest.hexdigest()
        return self._sha1

    def close(self) -> None:
        with self._lock:
            if self._map is not None:
                # Arrays still viewing the map keep it alive; it closes when they go.
                with contextlib.suppress(BufferError):
                    self._map.close()
                self._map = None
            if self._closer is not None:
                self._closer()  # closes the descriptor, once
                self._closer = None
            self._fd = None
            self._size = None


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
