"""TensorFlow Lite / LiteRT flatbuffers (``.tflite``) → the neutral model.

Parsed with the ``tflite`` schema package (generated flatbuffer accessors), bounded and
checked against hostile files (:mod:`._flat`); buffers stay in the file (mapped, read
by range). The mapping onto the neutral model is described in :mod:`._build`.

Importing this package imports neither ``tflite`` nor ``flatbuffers``:
:func:`looks_like_tflite` needs neither, and the readers import them when first called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..._lazy_names import lazy_names
from .._format import Format
from ._identify import IDENTIFIER, looks_like_tflite

if TYPE_CHECKING:
    from ...external_data import DataFiles
    from ...model import Model
    from ...sources import ByteSource
    from ...sources.remote import RemoteDir
    from ._build import QuantizedTensor, SubgraphRef
    from ._read import read_tflite_bytes, read_tflite_file, read_tflite_source

_LAZY = {
    "read_tflite_bytes": "._read",
    "read_tflite_file": "._read",
    "read_tflite_source": "._read",
    "QuantizedTensor": "._build",
    "SubgraphRef": "._build",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


#: Suffixes TFLite files are stored under (for the readers' format table).
SUFFIXES = (".tflite", ".lite")


def _sniff(head: bytes, suffix: str, name: str) -> bool:
    return looks_like_tflite(head)


def _read_path(path: Path, data_dir: Path | None) -> Model:
    from ._read import read_tflite_file

    return read_tflite_file(path)


def _read_bytes(data: bytes, data_dir: Path | RemoteDir | None) -> Model:
    from ._read import read_tflite_bytes

    return read_tflite_bytes(data)


def _read_source(source: ByteSource, base: Path | RemoteDir, files: DataFiles) -> Model:
    from ._read import read_tflite_source

    return read_tflite_source(source, files=files)


FORMAT = Format(
    name="tflite",
    suffixes=SUFFIXES,
    sniff=_sniff,
    read_path=_read_path,
    read_bytes=_read_bytes,
    read_source=_read_source,
)

__all__ = [
    "FORMAT",
    "IDENTIFIER",
    "SUFFIXES",
    "QuantizedTensor",
    "SubgraphRef",
    "looks_like_tflite",
    "read_tflite_bytes",
    "read_tflite_file",
    "read_tflite_source",
]
