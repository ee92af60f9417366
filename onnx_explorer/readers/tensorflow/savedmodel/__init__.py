"""TensorFlow SavedModels (a directory, its ``saved_model.pb``/``.pbtxt``) and MetaGraphDef
``.meta`` files → the neutral model; two rows of the readers' format table (one reader,
two kinds of file).

The readers (:mod:`._read`) import protobuf; this module does not: the rows' callables
and the names below import them when first used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...._lazy_names import lazy_names
from ..._format import Format
from ..._sniff import is_saved_model_dir, protobuf_sniff

if TYPE_CHECKING:
    from ....model import Model
    from ....sources.remote import RemoteDir
    from ._read import read_saved_model_bytes, read_saved_model_dir, read_saved_model_file


def _row(kind: str, suffixes: tuple[str, ...]) -> Format:
    def read_path(path: Path, data_dir: Path | None) -> Model:
        from ._read import read_saved_model_file

        return read_saved_model_file(path, kind=kind)  # variables: the checkpoint beside it

    def read_bytes(data: bytes, data_dir: Path | RemoteDir | None) -> Model:
        from ._read import read_saved_model_bytes

        return read_saved_model_bytes(data, kind=kind)

    def read_dir(path: Path) -> Model:
        from ._read import read_saved_model_dir

        return read_saved_model_dir(path)

    dirs = kind == "savedmodel"  # a MetaGraphDef is one file, never a directory
    return Format(
        name=kind,
        suffixes=suffixes,
        sniff=protobuf_sniff(kind),
        read_path=read_path,
        read_bytes=read_bytes,
        is_model_dir=is_saved_model_dir if dirs else None,
        read_dir=read_dir if dirs else None,
    )


#: A SavedModel: its directory, or its ``saved_model.pb`` / ``saved_model.pbtxt``.
FORMAT = _row("savedmodel", (".pb", ".pbtxt"))
#: A MetaGraphDef ``.meta`` file (a TF1 checkpoint's graph).
METAGRAPH_FORMAT = _row("metagraph", (".meta",))

_READERS = ("read_saved_model_bytes", "read_saved_model_dir", "read_saved_model_file")


# The readers are imported when first asked for (see readers/_format.py).
__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(_READERS, "._read"), globals())


__all__ = [
    "FORMAT",
    "METAGRAPH_FORMAT",
    "read_saved_model_bytes",
    "read_saved_model_dir",
    "read_saved_model_file",
]
