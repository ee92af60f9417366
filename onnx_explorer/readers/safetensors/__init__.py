"""safetensors: single files, sharded checkpoints (index or folder) and PEFT adapters.

The safetensors row of the readers' format table. Reading needs no third-party package:
the format is an 8-byte length, a JSON header and the tensors' bytes. Local and remote
alike (a file, an index or a folder at any fsspec URL, a Hub repository): only headers
are read when opening, a tensor's range when it is looked at.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..._lazy_names import lazy_names
from .._format import Format
from ._header import INDEX_SUFFIX, looks_like_safetensors

if TYPE_CHECKING:
    from ...external_data import DataFiles
    from ...model import Model
    from ...sources import ByteSource
    from ...sources.remote import RemoteDir
    from ._read import (
        is_checkpoint_dir,
        read_safetensors_bytes,
        read_safetensors_file,
        read_safetensors_source,
        read_safetensors_url_folder,
    )

SUFFIXES = (".safetensors",)


def _sniff(head: bytes, suffix: str, name: str) -> bool:
    return looks_like_safetensors(head) or name.endswith(INDEX_SUFFIX)


def _read_path(path: Path, data_dir: Path | None) -> Model:
    from ._read import read_safetensors_file

    return read_safetensors_file(path)


def _read_bytes(data: bytes, data_dir: Path | RemoteDir | None) -> Model:
    from ._read import read_safetensors_bytes

    return read_safetensors_bytes(data, base=data_dir)  # an index's shards are in data_dir


def _read_source(source: ByteSource, base: Path | RemoteDir, files: DataFiles) -> Model:
    from ._read import read_safetensors_source

    return read_safetensors_source(source, files=files, base=base)


def _read_folder(folder: RemoteDir, files: DataFiles) -> Model | None:
    from ._read import read_safetensors_url_folder

    return read_safetensors_url_folder(folder, files)


def _is_model_dir(path: Path) -> bool:
    from ._read import is_checkpoint_dir

    return is_checkpoint_dir(path)


FORMAT = Format(
    name="safetensors",
    suffixes=SUFFIXES,
    sniff=_sniff,
    read_path=_read_path,
    read_bytes=_read_bytes,
    read_source=_read_source,
    by_range=True,
    read_folder=_read_folder,
    is_model_dir=_is_model_dir,
    read_dir=lambda path: _read_path(path, None),
)

_READERS = (
    "is_checkpoint_dir",
    "read_safetensors_bytes",
    "read_safetensors_file",
    "read_safetensors_source",
    "read_safetensors_url_folder",
)


# The readers are imported when first asked for (see readers/_format.py).
__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(_READERS, "._read"), globals())


__all__ = [
    "FORMAT",
    "SUFFIXES",
    "is_checkpoint_dir",
    "looks_like_safetensors",
    "read_safetensors_bytes",
    "read_safetensors_file",
    "read_safetensors_source",
    "read_safetensors_url_folder",
]
