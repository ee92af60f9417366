"""GGUF files (``.gguf``, llama.cpp's format) → the neutral model of weights.

The header is parsed here (:mod:`._header`, by range through a byte source, so local
and remote files read alike); tensors stay lazy, block-quantized ones (Q4_0 … Q6_K,
IQ*, TQ*, MXFP4) are dequantized block by block by the optional ``gguf`` package
(``pip install 'onnx_explorer[gguf]'``), which opening a file never needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..._lazy_names import lazy_names
from .._format import Format
from ._header import looks_like_gguf

if TYPE_CHECKING:
    from ...external_data import DataFiles
    from ...model import Model
    from ...sources import ByteSource
    from ...sources.remote import RemoteDir
    from ._read import read_gguf_bytes, read_gguf_file, read_gguf_source

#: Suffixes GGUF files are stored under (for the readers' format table).
SUFFIXES = (".gguf",)


def _sniff(head: bytes, suffix: str, name: str) -> bool:
    return looks_like_gguf(head)


def _read_path(path: Path, data_dir: Path | None) -> Model:
    from ._read import read_gguf_file

    return read_gguf_file(path)


def _read_bytes(data: bytes, data_dir: Path | RemoteDir | None) -> Model:
    from ._read import read_gguf_bytes

    return read_gguf_bytes(data)


def _read_source(source: ByteSource, base: Path | RemoteDir, files: DataFiles) -> Model:
    from ._read import read_gguf_source

    return read_gguf_source(source, files=files)


FORMAT = Format(
    name="gguf",
    suffixes=SUFFIXES,
    sniff=_sniff,
    read_path=_read_path,
    read_bytes=_read_bytes,
    read_source=_read_source,
    by_range=True,  # a URL is read header first, each tensor by its own range
)

_READERS = ("read_gguf_bytes", "read_gguf_file", "read_gguf_source")


# The readers are imported when first asked for (see readers/_format.py).
__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(_READERS, "._read"), globals())


__all__ = [
    "FORMAT",
    "SUFFIXES",
    "looks_like_gguf",
    "read_gguf_bytes",
    "read_gguf_file",
    "read_gguf_source",
]
