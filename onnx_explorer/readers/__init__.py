"""Readers turn model files into the format-neutral :class:`~onnx_explorer.model.Model`.

One subpackage per file format (``onnx/``, ``tensorflow/graphdef/``, ...), each listed
once in :data:`FORMATS` (:mod:`._table`), the format table: a :class:`~._format.Format`
row with the format's name, suffixes, a content sniff and its readers (a path, bytes, a
byte source for URLs, an in-memory message, a directory). :func:`load`, :func:`detect_format` and
URL loading (:mod:`._remote`) only walk this table; nothing above the readers knows a
format's name. What views, widgets and runs may ask of a format goes through the model's
:class:`~onnx_explorer.model.FormatSupport`, which the reader sets.

How to add a format (safetensors, GGUF, TFLite, ...):

1. Write ``readers/<format>/`` with private modules for the parsing and the building of
   the :class:`Model` (pass ``support=`` a :class:`~onnx_explorer.model.FormatSupport`
   subclass if the format can answer more than the defaults: inferred types, a checker,
   operator slot names, weight notes, a model for onnxruntime).
2. In its ``__init__``, build the row, ``FORMAT = Format(name=..., suffixes=...,
   sniff=..., read_path=..., ...)``, with callables that import the reader when called
   (``import onnx_explorer`` must stay light), and list it with the public readers in
   ``__all__``.
3. Add ``FORMAT`` to :data:`FORMATS` in :mod:`._table`, before the protobuf family:
   their sniffs take every file nobody before them claims (the ONNX reader explains what
   is wrong), so a format with its own signature (a magic number, a header) is asked
   first.

Tests: ``tests/readers/test_formats.py`` checks that every row is reachable by name,
by path and by bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ExplorerError, ModelFormatError
from ..model import Model
from ..sources import is_url
from . import _table
from ._format import Format
from ._table import FORMATS, HEAD_BYTES, detect_format, format_named, sniff, warm_up


def load(
    source: str | os.PathLike[str] | bytes | Any,
    *,
    external_data_dir: str | os.PathLike[str] | None = None,
    format: str | None = None,
    storage_options: dict[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Model:
    """Open a model read-only, reading no weight bytes.

    ``source`` is a path to an ONNX (``.onnx``) or TensorFlow GraphDef (``.pb``,
    ``.pbtxt``) file, a TensorFlow SavedModel directory (or its ``saved_model.pb``), a
    MetaGraphDef ``.meta`` file, a URL (``https://``, ``s3://``, ``gs://``, ``hf://`` or
    any other fsspec protocol, with ``storage_options`` passed to fsspec; over HTTP
    ``storage_options={"timeout": seconds}`` bounds each request, 5 s by default), an
    ``onnx.ModelProto`` already in memory, or the bytes of a file. External data is
    looked up next to the model (under the model's URL for a URL), or in
    ``external_data_dir``. A remote model is read by range requests: opening fetches
    the graph, a tensor its own bytes when it is read; ``cache_dir`` keeps fetched
    blocks on disk so that opening again transfers nothing but the size check.
    ``format`` (a name of :data:`FORMATS`) skips the sniffing.
    """
    if isinstance(source, str) and is_url(source):
        from ._remote import load_url

        return load_url(
            source,
            external_data_dir=external_data_dir,
            format=format,
            storage_options=storage_options,
            cache_dir=cache_dir,
        )
    data_dir = Path(external_data_dir) if external_data_dir is not None else None
    if isinstance(source, bytes | bytearray | memoryview):
        return _load_bytes(bytes(source), data_dir, format)
    if isinstance(source, str | os.PathLike):
        return _load_path(Path(source), data_dir, format)
    kind = type(source).__name__
    for row in _table.FORMATS:
        if kind in row.proto_types and row.read_proto is not None:
            return row.read_proto(source, data_dir)
    messages = ", ".join(f"{t} ({row.name})" for row in _table.FORMATS for t in row.proto_types)
    raise TypeError(f"load() takes a path, bytes or a message ({messages}), not {kind}")


def _load_path(path: Path, data_dir: Path | None, format: str | None) -> Model:
    if not path.exists():
        raise ModelFormatError(f"{str(path)!r} does not exist")
    if path.is_dir():
        for row in _table.FORMATS:
            if row.is_model_dir is not None and row.read_dir and row.is_model_dir(path):
                return row.read_dir(path)
        from ._sniff import reject_directory

        reject_directory(path)
    if not path.is_file():
        raise ModelFormatError(f"{str(path)!r} is not a regular file")
    row = format_named(format) if format else format_named(detect_format(path))
    if row.read_path is None:
        raise ModelFormatError(f"{str(path)!r}: {row.name} models cannot be read from a file")
    return row.read_path(path, data_dir)


def _load_bytes(data: bytes, data_dir: Path | None, format: str | None) -> Model:
    row = format_named(format) if format else sniff(data[:HEAD_BYTES], "", "", "the bytes given")
    if row.read_bytes is None:
        raise ModelFormatError(f"{row.name} models cannot be read from bytes")
    return row.read_bytes(data, data_dir)


def open_side(
    source: str | os.PathLike[str] | bytes | Any,
    side: str,
    *,
    external_data_dir: str | os.PathLike[str] | None = None,
) -> Model:
    """One side of a comparison (``"a"`` or ``"b"``) as a :class:`Model`: a Model as it is,
    anything else through :func:`load`. A failure is an :class:`ExplorerError` that names
    the side (``"model b: ..."``)."""
    if isinstance(source, Model):
        return source
    try:
        return load(source, external_data_dir=external_data_dir)
    except ExplorerError as exc:
        raise type(exc)(f"model {side}: {exc}") from exc
    except (OSError, ValueError, TypeError) as exc:
        raise ModelFormatError(f"model {side}: {exc}") from exc


__all__ = [
    "FORMATS",
    "HEAD_BYTES",
    "Format",
    "detect_format",
    "format_named",
    "load",
    "open_side",
    "sniff",
    "warm_up",
]
