"""TensorFlow GraphDef files (``.pb`` binary, ``.pbtxt`` text) → the neutral model; the
GraphDef row of the readers' format table.

The readers (:mod:`._read`) import protobuf; this module does not: the row's callables
and the names below import them when first used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...._lazy_names import lazy_names
from ..._format import Format
from ..._sniff import protobuf_sniff

if TYPE_CHECKING:
    from ....external_data import DataFiles
    from ....model import Model
    from ....sources import ByteSource
    from ....sources.remote import RemoteDir
    from ._proto import DataType, GraphDef
    from ._read import (
        read_graphdef_bytes,
        read_graphdef_file,
        read_graphdef_proto,
        read_graphdef_source,
    )


def _read_path(path: Path, data_dir: Path | None) -> Model:
    from ._read import read_graphdef_file

    return read_graphdef_file(path)  # weights are in the file: no external data


def _read_bytes(data: bytes, data_dir: Path | RemoteDir | None) -> Model:
    from ._read import read_graphdef_bytes

    return read_graphdef_bytes(data)


def _read_source(source: ByteSource, base: Path | RemoteDir, files: DataFiles) -> Model:
    from ._read import read_graphdef_source

    return read_graphdef_source(source, files)


def _read_proto(proto: Any, data_dir: Path | None) -> Model:
    from ._read import read_graphdef_proto

    return read_graphdef_proto(proto)


FORMAT = Format(
    name="graphdef",
    suffixes=(".pb", ".pbtxt"),
    sniff=protobuf_sniff("graphdef"),
    read_path=_read_path,
    read_bytes=_read_bytes,
    read_source=_read_source,
    read_proto=_read_proto,
    proto_types=("GraphDef",),
)

_READERS = (
    "read_graphdef_bytes",
    "read_graphdef_file",
    "read_graphdef_proto",
    "read_graphdef_source",
)


# The readers (and the messages to build a GraphDef by hand) are imported when first asked for.
__getattr__, __dir__ = lazy_names(
    __name__,
    {**dict.fromkeys(_READERS, "._read"), **{"GraphDef": "._proto", "DataType": "._proto"}},
    globals(),
)


__all__ = [
    "FORMAT",
    "DataType",
    "GraphDef",
    "read_graphdef_bytes",
    "read_graphdef_file",
    "read_graphdef_proto",
    "read_graphdef_source",
]
