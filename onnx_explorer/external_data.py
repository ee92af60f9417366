"""Resolving and validating external tensor data, which comes from an untrusted file.

The rules (see DESIGN.md, "Security"): a ``location`` must stay inside the base
directory; ``..``, absolute, drive-letter and UNC paths, NUL bytes, symlinks and
non-regular files are refused; ``offset`` and ``length`` are non-negative decimal
integers checked against the file size before anything is read; unknown keys
and a stored ``basepath`` are ignored. A file that shrinks after it was opened is an
error when a tensor is read (see :class:`~.sources.LocalFile`), never a crash of the
process. Locations relative to a model's URL follow the same rules (:mod:`.sources.urls`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import ExternalDataError, UnsafePathError
from .sources import ByteSource, LocalFile
from .sources.urls import check_location

__all__ = ["DataFile", "DataFiles", "ExternalRef", "parse_size_field", "resolve_location"]

#: The local byte source under the name the rest of the package has always used.
DataFile = LocalFile


@dataclass(frozen=True)
class ExternalRef:
    """The ``external_data`` entries of one tensor, as written in the file (not yet trusted)."""

    location: str
    offset: str | None = None
    length: str | None = None
    checksum: str | None = None

    @classmethod
    def from_entries(cls, entries: list[tuple[str, str]]) -> ExternalRef:
        known: dict[str, str] = {}
        for key, value in entries:
            if key in ("location", "offset", "length", "checksum"):
                known[key] = value  # last one wins, as in onnx; "basepath" and others ignored
        return cls(
            location=known.get("location", ""),
            offset=known.get("offset"),
            length=known.get("length"),
            checksum=known.get("checksum"),
        )

    def offset_int(self) -> int | None:
        return _parse_size(self.offset)

    def length_int(self) -> int | None:
        return _parse_size(self.length)


#: Most digits an offset or length can need (2**64 has 20): more is not a size of any file,
#: and Python refuses to convert strings of over 4,300 digits to int at all.
_MAX_SIZE_DIGITS = 20


def _parse_size(text: str | None) -> int | None:
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()):
        return None
    significant = text.lstrip("0") or "0"
    if len(significant) > _MAX_SIZE_DIGITS:
        return None
    return int(significant)


def parse_size_field(text: str | None, key: str, tensor: str) -> int | None:
    """Parse an offset/length value: absent, or a non-negative decimal integer."""
    if text is None:
        return None
    value = _parse_size(text)
    if value is not None:
        return value
    shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
    if text.isascii() and text.isdigit():
        where = "is past" if key == "offset" else "would run past"
        raise ExternalDataError(
            f"tensor {tensor!r}: external data {key} {shown!r} {where} the end of any file "
            f"(more than {_MAX_SIZE_DIGITS} digits)"
        )
    raise ExternalDataError(
        f"tensor {tensor!r}: external data {key} {shown!r} is not a non-negative integer"
    )


def hub_cache_blobs(folder: Path) -> Path | None:
    """The ``blobs`` folder of a Hugging Face cache snapshot that ``folder`` is (or is in).

    The Hub's cache keeps each repo as ``models--org--name/{blobs,snapshots/<rev>}``; every
    file of a snapshot is a symlink into ``blobs`` (content-addressed). Those symlinks are
    the cache's own layout, so they are followed, and only into that repo's ``blobs``.
    """
    real = Path(os.path.realpath(folder))
    for snapshot in (real, *real.parents):
        repo = snapshot.parent.parent
        if snapshot.parent.name == "snapshots" and repo.name.startswith(_HUB_REPO_KINDS):
            blobs = repo / "blobs"
            return blobs if blobs.is_dir() else None
    return None


_HUB_REPO_KINDS = ("models--", "datasets--", "spaces--")


def resolve_location(base_dir: Path, location: str, tensor: str) -> Path:
    """Resolve ``location`` under ``base_dir``, refusing anything that escapes it (a
    Hugging Face cache snapshot's symlinks into its own ``blobs`` aside)."""
    normalized = check_location(location, tensor)
    try:
        base = Path(os.path.realpath(base_dir))
        candidate = base / normalized
        if candidate.is_symlink() and _into_hub_blobs(base, candidate):
            return Path(os.path.realpath(candidate))
        if candidate.is_symlink():
            raise UnsafePathError(
                f"tensor {tensor!r}: external data file {location!r} is a symlink (refused: it "
                "could point anywhere); copy the real file there, or pass external_data_dir= "
                "naming the directory that holds it"
            )
        real = Path(os.path.realpath(candidate))
    except OSError as exc:
        if isinstance(exc, UnsafePathError):
            raise
        shown = location if len(location) < 200 else location[:200] + "..."
        raise ExternalDataError(
            f"tensor {tensor!r}: external data {shown!r} cannot be opened: {exc.strerror}"
        ) from None
    if os.path.commonpath([base, real]) != str(base):
        raise UnsafePathError(
            f"tensor {tensor!r}: external data {location!r} resolves outside {str(base)!r}"
        )
    return real


def _into_hub_blobs(base: Path, candidate: Path) -> bool:
    """``candidate`` is a file of the Hub cache snapshot ``base`` pointing into its blobs."""
    blobs = hub_cache_blobs(base)
    if blobs is None:
        return False
    real = Path(os.path.realpath(candidate))
    inside = os.path.commonpath([blobs, real]) == str(blobs)
    return inside and os.path.commonpath([base, Path(os.path.realpath(candidate.parent))]) == str(
        base
    )


class DataFiles:
    """The byte sources a model has opened, keyed by real path or URL: one per file."""

    def __init__(self) -> None:
        self._files: dict[object, ByteSource] = {}
        self._lock = threading.Lock()

    def get(self, path: Path) -> LocalFile:
        source = self.get_source(path, lambda: LocalFile(path))
        assert isinstance(source, LocalFile)
        return source

    def get_source(self, key: object, opener: Callable[[], ByteSource]) -> ByteSource:
        """The source opened for ``key``, opening it with ``opener`` the first time."""
        with self._lock:
            source = self._files.get(key)
            if source is None:
                source = self._files[key] = opener()
            return source

    def close(self) -> None:
        with self._lock:
            for data_file in self._files.values():
                data_file.close()
            self._files.clear()
