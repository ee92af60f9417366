"""One row of the readers' format table: what a file format is called, how it is
recognised and how each kind of source is read.

A row holds plain callables; a format's subpackage builds its row in its
``__init__`` with functions that import the reader itself only when called, so
building the table imports no parser (``import onnx_explorer`` imports no ``onnx``).
The table and how to add a row: :mod:`onnx_explorer.readers`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..external_data import DataFiles
    from ..model import Model
    from ..sources import ByteSource
    from ..sources.remote import RemoteDir


@dataclass(frozen=True)
class Format:
    """A file format the readers know, and its readers.

    ``sniff(head, suffix, name)`` says from a file's first 4096 bytes, its lower-case
    suffix (``".onnx"``, or ``""``) and its file name whether the file is of this format.
    Each ``read_*`` may be None where the format cannot come from that kind of source.
    """

    name: str  # what ``load(format=...)`` and ``detect_format`` call it
    suffixes: tuple[str, ...]  # file name endings it is usually stored under
    sniff: Callable[[bytes, str, str], bool]
    #: A regular file: (path, external data directory or None) → model.
    read_path: Callable[[Path, Path | None], Model] | None = None
    #: The bytes of a whole file: (data, external data directory, local or remote, or None).
    read_bytes: Callable[[bytes, Path | RemoteDir | None], Model] | None = None
    #: A file read by ranges (a URL): (byte source, where external data is, the data files).
    read_source: Callable[[ByteSource, Path | RemoteDir, DataFiles], Model] | None = None
    #: The readers ask a source only for a header and, later, each tensor's range
    #: (safetensors, GGUF): a URL with one of ``suffixes`` is then never fetched whole,
    #: however small (the protobuf family's small files are: the graph is the file).
    by_range: bool = False
    #: A folder at a URL (``https://host/checkpoint/``, ``hf://org/repo``), whose files
    #: are found by name: (the folder, the data files) → its model, or None when the
    #: folder holds none of this format.
    read_folder: Callable[[RemoteDir, DataFiles], Model | None] | None = None
    #: An in-memory message of one of ``proto_types`` (class names, so that asking needs
    #: no import of the format's library): (message, external data directory) → model.
    read_proto: Callable[[Any, Path | None], Model] | None = None
    proto_types: tuple[str, ...] = ()
    #: A directory that is one model (a TensorFlow SavedModel): is it one, and reading it.
    is_model_dir: Callable[[Path], bool] | None = None
    read_dir: Callable[[Path], Model] | None = None
    #: Start the format's helper processes ahead of need (never raises, never waits).
    warm_up: Callable[[], None] | None = None


__all__ = ["Format"]
