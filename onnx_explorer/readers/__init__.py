"""Readers turn model files into the format-neutral :class:`~onnx_explorer.model.Model`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ModelFormatError
from ..model import Model
from ..sources import is_url


def detect_format(path: Path) -> str:
    """``"onnx"``, ``"graphdef"``, ``"savedmodel"`` or ``"metagraph"``, judged from the file's
    content (``.pb`` is used by all three)."""
    from ._sniff import reject_non_model, sniff_format

    with open(path, "rb") as fh:
        head = fh.read(4096)
    reject_non_model(head, path.name, repr(str(path)))
    return sniff_format(head, path.suffix.lower(), path.name)


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
    any other fsspec protocol, with ``storage_options`` passed to fsspec), an
    ``onnx.ModelProto`` already in memory, or the bytes of a file. External data is
    looked up next to the model (under the model's URL for a URL), or in
    ``external_data_dir``. A remote model is read by range requests: opening fetches
    the graph, a tensor its own bytes when it is read; ``cache_dir`` keeps fetched
    blocks on disk so that opening again transfers nothing but the size check.
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
    if type(source).__name__ == "ModelProto":
        from .onnx._read import read_onnx_proto

        return read_onnx_proto(source, data_dir)
    if type(source).__name__ == "GraphDef":
        from .tensorflow.graphdef._read import read_graphdef_proto

        return read_graphdef_proto(source)
    raise TypeError(
        f"load() takes a path, bytes or an onnx.ModelProto, not {type(source).__name__}"
    )


def _load_path(path: Path, data_dir: Path | None, format: str | None) -> Model:
    if not path.exists():
        raise ModelFormatError(f"{str(path)!r} does not exist")
    if path.is_dir():
        from ._sniff import is_saved_model_dir, reject_directory

        if is_saved_model_dir(path):
            from .tensorflow.savedmodel._read import read_saved_model_dir

            return read_saved_model_dir(path)
        reject_directory(path)
    if not path.is_file():
        raise ModelFormatError(f"{str(path)!r} is not a regular file")
    fmt = format or detect_format(path)
    if fmt == "onnx":
        from .onnx._read import read_onnx_file

        return read_onnx_file(path, data_dir)
    if fmt == "graphdef":
        from .tensorflow.graphdef._read import read_graphdef_file

        return read_graphdef_file(path)
    if fmt in ("savedmodel", "metagraph"):
        from .tensorflow.savedmodel._read import read_saved_model_file

        return read_saved_model_file(path, kind=fmt)
    raise ModelFormatError(f"unknown format {fmt!r}")


def _load_bytes(data: bytes, data_dir: Path | None, format: str | None) -> Model:
    from ._sniff import reject_non_model, sniff_format

    if format is None:
        reject_non_model(data[:4096], "", "the bytes given")
    fmt = format or sniff_format(data[:4096], "")
    if fmt == "onnx":
        from .onnx._read import read_onnx_bytes

        return read_onnx_bytes(data, data_dir)
    if fmt == "graphdef":
        from .tensorflow.graphdef._read import read_graphdef_bytes

        return read_graphdef_bytes(data)
    if fmt in ("savedmodel", "metagraph"):
        from .tensorflow.savedmodel._read import read_saved_model_bytes

        return read_saved_model_bytes(data, kind=fmt)
    raise ModelFormatError(f"unknown format {fmt!r}")
