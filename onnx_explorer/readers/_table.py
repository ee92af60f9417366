"""The readers' format table: every format's row, and choosing a row for a file.

How to add a row: :mod:`onnx_explorer.readers`.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelFormatError
from ._format import Format
from .gguf import FORMAT as GGUF
from .onnx import FORMAT as ONNX
from .safetensors import FORMAT as SAFETENSORS
from .tensorflow.graphdef import FORMAT as GRAPHDEF
from .tensorflow.savedmodel import FORMAT as SAVEDMODEL
from .tensorflow.savedmodel import METAGRAPH_FORMAT as METAGRAPH
from .tflite import FORMAT as TFLITE

#: Every format the readers know, in the order their sniffs are asked. Formats with a
#: signature of their own (a magic number, a header) come first; the protobuf family
#: (ONNX, GraphDef, SavedModel, MetaGraphDef: all ``.pb``) comes last: one shared
#: judgement of the bytes gives each protobuf-looking file to exactly one of them.
FORMATS: tuple[Format, ...] = (
    SAFETENSORS, GGUF, TFLITE, ONNX, GRAPHDEF, SAVEDMODEL, METAGRAPH
)  # fmt: skip

#: Bytes of a file's start that sniffs look at.
HEAD_BYTES = 4096


def format_named(name: str) -> Format:
    """The table's row called ``name`` (``load(format=...)``)."""
    for row in FORMATS:
        if row.name == name:
            return row
    known = ", ".join(row.name for row in FORMATS)
    raise ModelFormatError(f"unknown format {name!r} (known: {known})")


def sniff(head: bytes, suffix: str, name: str, label: str) -> Format:
    """The row whose sniff claims a file from its first bytes, suffix and name; a file no
    row claims raises :class:`ModelFormatError` naming ``label`` and what the file is."""
    from ._sniff import reject_non_model

    suffix = suffix.lower()
    for row in FORMATS:
        if row.sniff(head, suffix, name):
            return row
    reject_non_model(head, name, label)  # says what the file is when it is plainly no model
    raise ModelFormatError(f"{label} is not a model of a known format")


def detect_format(path: Path) -> str:
    """The name of the format of the file at ``path``, judged from its content (``.pb`` is
    used by several): ``"onnx"``, ``"graphdef"``, ``"savedmodel"``, ``"metagraph"``, ..."""
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    return sniff(head, path.suffix, path.name, repr(str(path))).name


def warm_up() -> None:
    """Start the formats' helper processes ahead of need, before a model is known (the
    explorer calls it so that they start while the model loads; never raises)."""
    for row in FORMATS:
        if row.warm_up is not None:
            row.warm_up()


__all__ = ["FORMATS", "HEAD_BYTES", "detect_format", "format_named", "sniff", "warm_up"]
