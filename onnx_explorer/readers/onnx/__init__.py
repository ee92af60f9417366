"""ONNX files (``.onnx``) → the neutral model; the ONNX row of the readers' format table.

The readers themselves (:mod:`._read`) import ``onnx``; this module does not, so that
building the format table stays light: the row's callables and the names below import
them when first used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._lazy_names import lazy_names
from .._format import Format
from .._sniff import protobuf_sniff

if TYPE_CHECKING:
    from ...external_data import DataFiles
    from ...model import Model
    from ...sources import ByteSource
    from ...sources.remote import RemoteDir
    from ._read import read_onnx_bytes, read_onnx_file, read_onnx_proto, read_onnx_source


def _read_path(path: Path, data_dir: Path | None) -> Model:
    from ._read import read_onnx_file

    return read_onnx_file(path, data_dir)


def _read_bytes(data: bytes, data_dir: Path | RemoteDir | None) -> Model:
    from ._read import read_onnx_bytes

    return read_onnx_bytes(data, data_dir)


def _read_source(source: ByteSource, base: Path | RemoteDir, files: DataFiles) -> Model:
    from ._read import read_onnx_source

    return read_onnx_source(source, base, files)


def _read_proto(proto: Any, data_dir: Path | None) -> Model:
    from ._read import read_onnx_proto

    return read_onnx_proto(proto, data_dir)


def _warm_up() -> None:
    from ._inference_child import warm_up

    warm_up()


FORMAT = Format(
    name="onnx",
    suffixes=(".onnx", ".pb"),
    sniff=protobuf_sniff("onnx"),
    read_path=_read_path,
    read_bytes=_read_bytes,
    read_source=_read_source,
    read_proto=_read_proto,
    proto_types=("ModelProto",),
    warm_up=_warm_up,
)

_READERS = ("read_onnx_bytes", "read_onnx_file", "read_onnx_proto", "read_onnx_source")


# The readers are imported when first asked for (see readers/_format.py).
__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(_READERS, "._read"), globals())


__all__ = ["FORMAT", "read_onnx_bytes", "read_onnx_file", "read_onnx_proto", "read_onnx_source"]
