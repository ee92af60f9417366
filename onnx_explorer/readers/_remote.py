"""Models at a URL: the same readers, over a byte source that fetches ranges.

A file small enough is fetched whole (one request: the graph is most of it); a
larger one is walked by range requests that skip the weights (:mod:`.protobuf`),
and its tensors fetch their own ranges when read. The format is chosen by the same
table as for local files (:data:`onnx_explorer.readers.FORMATS`): a row reads a URL when
it has a ``read_source``. External data is looked up under
the model's URL by the rules of local paths (:func:`~onnx_explorer.sources.urls.join_location`).
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
from ..sources.remote import RemoteDir, RemoteFile, open_url
from ._table import HEAD_BYTES  # bytes looked at to tell the format of a large file
from .protobuf._wire import READ_WHOLE


def load_url(
    url: str,
    *,
    external_data_dir: str | os.PathLike[str] | None = None,
    format: str | None = None,
    storage_options: dict[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Model:
    """Open the model at ``url`` (any fsspec protocol), fetching only the graph's bytes."""
    model_file, base = open_url(url, storage_options, cache_dir=cache_dir)
    data_base: Path | RemoteDir = base
    if external_data_dir is not None:
        if is_url(str(external_data_dir)):
            folder = str(external_data_dir).rstrip("/") + "/"
            _, data_base = open_url(folder + "model", storage_options, cache_dir=cache_dir)
        else:
            data_base = Path(external_data_dir)
    files = DataFiles()
    try:
        files.get_source(url, lambda: model_file)
        return _read(model_file, data_base, files, format)
    except BaseException:
        files.close()
        raise


def _size(model_file: RemoteFile) -> int:
    try:
        return model_file.size
    except UnsafePathError:
        raise
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
    whole = model_file.fetch(0, size) if size <= READ_WHOLE else None
    head = whole[:HEAD_BYTES] if whole is not None else model_file.fetch(0, HEAD_BYTES)
    row = format_named(format) if format else sniff(head, PurePosixPath(name).suffix, name, what)
    if row.read_source is None:
        raise ModelFormatError(f"{what}: format {row.name!r} cannot be read from a URL")
    if whole is not None and row.read_bytes is not None:
        return row.read_bytes(whole, base)  # fetched whole already: no second request
    return row.read_source(model_file, base, files)


__all__ = ["load_url"]
