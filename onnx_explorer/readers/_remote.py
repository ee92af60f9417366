"""Models at a URL: the same readers, over a byte source that fetches ranges.

A file small enough is fetched whole (one request: the graph is most of it); a
larger one is walked by range requests that skip the weights (:mod:`.protobuf`),
and its tensors fetch their own ranges when read. A format whose readers read only a
header (a row with ``by_range``: safetensors, GGUF) is never fetched whole when the
URL's name has its suffix: its first 64 KiB are asked for (the sniff's head and, kept
by the source, most headers), then the header's rest if any, then each tensor's range
when it is read. The format is chosen by the same table as for local files
(:data:`onnx_explorer.readers.FORMATS`): a row reads a URL when it has a
``read_source``. External data is looked up under the model's URL by the rules of
local paths (:func:`~onnx_explorer.sources.urls.join_location`).

A URL naming a folder (ending in ``/``, or a directory, bucket prefix or Hub repository
by the store's own word: ``hf://org/repo``, ``https://huggingface.co/org/repo``) is
offered to each row with a ``read_folder``, which looks for its files by name.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from ..errors import ExternalDataError, ModelFormatError, UnsafePathError
from ..external_data import DataFiles
from ..model import Model
from ..sources import is_url
from ..sources.remote import (
    RemoteDir,
    RemoteFile,
    RemoteFolderError,
    RemoteTimeoutError,
    open_folder,
    open_url,
)
from ._table import HEAD_BYTES  # bytes looked at to tell the format of a large file
from .protobuf._wire import READ_WHOLE

#: Bytes asked for first from a file read by range (its source keeps them).
FIRST_READ = 64 << 10


def load_url(
    url: str,
    *,
    external_data_dir: str | os.PathLike[str] | None = None,
    format: str | None = None,
    storage_options: dict[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Model:
    """Open the model at ``url`` (any fsspec protocol), fetching only the graph's bytes."""
    if urlsplit(url).path.endswith("/"):
        return _load_folder(url, storage_options, cache_dir)
    model_file, base = open_url(url, storage_options, cache_dir=cache_dir)
    data_base: Path | RemoteDir = base
    if external_data_dir is not None:
        if is_url(str(external_data_dir)):
            folder = str(external_data_dir).rstrip("/") + "/"
            _, data_base = open_url(folder + "model", storage_options, cache_dir=cache_dir)
        else:
            data_base = Path(external_data_dir)
    try:
        _size(model_file)  # asked once, before any read; a folder goes its own way
    except RemoteFolderError:
        return _load_folder(url, storage_options, cache_dir)
    files = DataFiles()
    try:
        files.get_source(url, lambda: model_file)
        return _read(model_file, data_base, files, format)
    except BaseException:
        files.close()
        raise


def _load_folder(
    url: str,
    storage_options: dict[str, Any] | None,
    cache_dir: str | os.PathLike[str] | None,
) -> Model:
    """The model in the folder at ``url``: the first row whose ``read_folder`` finds one."""
    from ._table import FORMATS

    folder = open_folder(url, storage_options, cache_dir=cache_dir)
    files = DataFiles()
    try:
        for row in FORMATS:
            if row.read_folder is not None:
                model = row.read_folder(folder, files)
                if model is not None:
                    return model
    except BaseException:
        files.close()
        raise
    files.close()
    found = ", ".join(row.name for row in FORMATS if row.read_folder is not None)
    raise ModelFormatError(
        f"{folder.display!r} is a folder holding no model found by name ({found}); "
        "name the model's file in the URL"
    )


def _size(model_file: RemoteFile) -> int:
    try:
        return model_file.size
    except (UnsafePathError, RemoteFolderError, RemoteTimeoutError):
        raise  # a server that did not answer is no verdict on the model
    except ExternalDataError as exc:  # the model itself: a missing file is no model
        raise ModelFormatError(str(exc)) from None


def _read(
    model_file: RemoteFile, base: Path | RemoteDir, files: DataFiles, format: str | None
) -> Model:
    from ._table import format_named, sniff  # the format table, as for local files

    size = _size(model_file)
    what = repr(model_file.display)
    if size == 0:
        raise ModelFormatError(f"{what} is empty")
    name = PurePosixPath(urlsplit(model_file.display).path).name
    suffix = PurePosixPath(name).suffix
    by_range = format_named(format).by_range if format else _by_range(suffix)
    whole = model_file.fetch(0, size) if size <= READ_WHOLE and not by_range else None
    first = whole if whole is not None else model_file.fetch(0, min(size, FIRST_READ))
    row = format_named(format) if format else sniff(first[:HEAD_BYTES], suffix, name, what)
    if row.read_source is None:
        raise ModelFormatError(f"{what}: format {row.name!r} cannot be read from a URL")
    if row.by_range:  # the source keeps the first bytes: the header costs no second request
        return row.read_source(model_file, base, files)
    if whole is None and size <= READ_WHOLE and row.read_bytes is not None:
        whole = first + model_file.fetch(len(first), size - len(first))
    if whole is not None and row.read_bytes is not None:
        return row.read_bytes(whole, base)  # fetched whole already: no second request
    return row.read_source(model_file, base, files)


def _by_range(suffix: str) -> bool:
    """Whether the format a URL's suffix names reads only a header (never fetched whole)."""
    from ._table import FORMATS

    return any(row.by_range and suffix.lower() in row.suffixes for row in FORMATS)


__all__ = ["load_url"]
