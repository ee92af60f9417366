"""TFLite / LiteRT files → the neutral :class:`Model`: the entry points.

A local file is mapped read-only (:meth:`LocalFile.view`) and parsed in place; nothing
of its buffers is copied: tensors are ranges of the file (:class:`FileRange`) read when
looked at. A remote file (any other :class:`ByteSource`) is fetched whole, because the
flatbuffer's tables may point anywhere in it. The bytes are checked before the parse:
the ``TFL3`` identifier and the root offset; the parse itself is bounded (:mod:`._flat`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...errors import ModelFormatError
from ...external_data import DataFiles
from ...model import Model
from ...sources import ByteSource, InMemory
from ...tensors import LocationKind
from ._build import model_from_record
from ._parse import looks_like_tflite, parse


def read_tflite_source(
    source: ByteSource, *, path: Path | None = None, files: DataFiles | None = None
) -> Model:
    """A TFLite model from any byte source; ``files`` (closed with the model) holds it."""
    what = repr(source.display)
    size = source.size
    if size < 8:
        raise ModelFormatError(f"{what}: {size} bytes is too short for a TFLite file")
    head = source.fetch(0, 8)
    if not looks_like_tflite(head):
        raise ModelFormatError(
            f"{what} is not a TFLite file: bytes 4..8 are {head[4:8]!r}, not b'TFL3'"
        )
    data: Any = source.view(0, size) if source.local else source.fetch(0, size)
    try:
        record = parse(data, what)
    finally:
        if isinstance(data, memoryview):
            data.release()  # the records hold no reference to the map
    kind: LocationKind = "memory" if isinstance(source, InMemory) else "embedded"
    return model_from_record(record, source, path=path, files=files, kind=kind, what=what)


def read_tflite_file(path: str | os.PathLike[str]) -> Model:
    """Open a ``.tflite`` file; weights stay in the file until a tensor is read."""
    path = Path(path)
    files = DataFiles()
    try:
        source = files.get(Path(os.path.realpath(path)))
        return read_tflite_source(source, path=path, files=files)
    except BaseException:
        files.close()  # a file that is no model keeps no descriptor open
        raise


def read_tflite_bytes(data: bytes) -> Model:
    """A TFLite model from the bytes of a whole file; tensors view ``data``."""
    return read_tflite_source(InMemory(bytes(data)))


__all__ = ["read_tflite_bytes", "read_tflite_file", "read_tflite_source"]
