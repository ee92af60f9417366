"""safetensors: single files, sharded checkpoints (index or folder) and PEFT adapters.

The safetensors row of the readers' format table. Reading needs no third-party package:
the format is an 8-byte length, a JSON header and the tensors' bytes. Local and remote
alike (a file, an index or a folder at any fsspec URL, a Hub repository): only headers
are read when opening, a tensor's range when it is looked at.
"""

from __future__ import annotations

from pathlib import Path

from ...external_data import DataFiles
from ...model import Model
from ...sources import ByteSource
from ...sources.remote import RemoteDir
from .._format import Format
from ._header import looks_like_safetensors
from ._read import (
    INDEX_SUFFIX,
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
    return read_safetensors_file(path)


def _read_bytes(data: bytes, data_dir: Path | RemoteDir | None) -> Model:
    return read_safetensors_bytes(data, base=data_dir)  # an index's shards are in data_dir


def _read_source(source: ByteSource, base: Path | RemoteDir, files: DataFiles) -> Model:
    return read_safetensors_source(source, files=files, base=base)


FORMAT = Format(
    name="safetensors",
    suffixes=SUFFIXES,
    sniff=_sniff,
    read_path=_read_path,
    read_bytes=_read_bytes,
    read_source=_read_source,
    by_range=True,
    read_folder=read_safetensors_url_folder,
    is_model_dir=is_checkpoint_dir,
    read_dir=read_safetensors_file,
)

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
