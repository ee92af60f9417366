"""The folder of a checkpoint, local or at a URL: its files by name, checked, as byte sources.

A sharded checkpoint names its shards in an index (``weight_map``); a folder is searched
for its index or weights by name. Both need the same three things from where the files
are, whether a local directory or a URL folder (``https://host/ckpt/``, ``hf://org/repo``):
whether a name is there, what names there are (where that can be listed), and a byte
source for a name. Every name is checked by the rules for external data before it is
opened: no ``..``, nothing absolute; locally no symlink leaving the folder
(:func:`~onnx_explorer.external_data.resolve_location`), at a URL no other host, no
``%``-escapes, no query (:func:`~onnx_explorer.sources.urls.join_location`). One byte
source per file, kept in the model's :class:`~onnx_explorer.external_data.DataFiles`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from ...external_data import DataFiles, resolve_location
from ...sources import ByteSource
from ...sources.remote import RemoteDir


class Folder(Protocol):
    """Where a checkpoint's files are."""

    #: The folder as messages show it (a path, or a URL without credentials).
    display: str
    #: The model's name when the folder is the model (its last path segment).
    name: str
    #: The local directory, or None at a URL.
    path: Path | None

    def names(self) -> list[str] | None:
        """The files directly in the folder, or None where the store cannot list."""
        ...

    def exists(self, name: str) -> bool:
        """Whether the file ``name`` is in the folder."""
        ...

    def open(self, name: str) -> ByteSource:
        """The file ``name``, checked to stay inside the folder (``UnsafePathError``)."""
        ...


class LocalFolder:
    """A local directory (opened files are :class:`~onnx_explorer.sources.LocalFile`)."""

    def __init__(self, path: Path, files: DataFiles) -> None:
        self.path: Path | None = path
        self._dir = path
        self._files = files
        self.display = str(path)
        self.name = path.name

    def names(self) -> list[str] | None:
        try:
            return sorted(p.name for p in self._dir.iterdir() if p.is_file())
        except OSError:
            return None

    def exists(self, name: str) -> bool:
        return (self._dir / name).is_file()

    def open(self, name: str) -> ByteSource:
        real = resolve_location(self._dir, name, name)
        return self._files.get(Path(os.path.realpath(real)))


class RemoteFolder:
    """A folder at a URL (opened files are :class:`~onnx_explorer.sources.remote.RemoteFile`)."""

    def __init__(self, folder: RemoteDir, files: DataFiles) -> None:
        self.path: Path | None = None
        self._folder = folder
        self._files = files
        self.display = folder.display
        self.name = folder.name

    def names(self) -> list[str] | None:
        return self._folder.names()

    def exists(self, name: str) -> bool:
        return self._folder.exists(name)

    def open(self, name: str) -> ByteSource:
        url = self._folder.resolve(name, name)
        return self._files.get_source(url, lambda: self._folder.open(url))


def folder_at(base: Path | RemoteDir, files: DataFiles) -> Folder:
    """The folder ``base`` names, local or remote."""
    if isinstance(base, RemoteDir):
        return RemoteFolder(base, files)
    return LocalFolder(Path(base), files)


__all__ = ["Folder", "LocalFolder", "RemoteFolder", "folder_at"]
