"""Tell ONNX from TensorFlow GraphDef by content: both use ``.pb``.

Binary files are judged by walking the first top-level protobuf fields in the
file's head and checking each (field number, wire type) against the two root
messages, ``onnx.ModelProto`` and ``tensorflow.GraphDef``; text files by the
first field name. Anything we cannot place goes to the ONNX reader, whose
error message says what is wrong. The format table (:mod:`onnx_explorer.readers`) asks
through :func:`protobuf_sniff`, one sniff per protobuf format's row.

TensorFlow SavedModels (``saved_model.pb``) and MetaGraphDefs (``.meta``) are known by
their first fields too (:func:`container_format`).

Files people open by mistake (a TFLite flatbuffer, a PyTorch checkpoint, a
tensor, an HTML page saved instead of the model, an empty file) are recognised first by
:func:`not_a_model`, which says what the file is and what to do instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..errors import ModelFormatError
from .protobuf import decode_varint

# Top-level fields: number → wire type (0 varint, 2 length-delimited).
_ONNX_FIELDS = {
    1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2,
}  # fmt: skip  # ir_version, producer_name/version, domain, model_version, doc, graph, opsets...
_GRAPHDEF_FIELDS = {1: 2, 2: 2, 3: 0, 4: 2, 5: 2}  # node, library, version, versions, debug_info
_GRAPHDEF_TEXT_FIELDS = (b"node", b"library", b"versions", b"version", b"debug_info")
_WORD = re.compile(rb"\s*(?:#[^\n]*\n\s*)*([A-Za-z_][A-Za-z0-9_]*)")
_TEXT_BYTES = frozenset(b"\t\n\r") | frozenset(range(0x20, 0x7F))


def _varint(buf: bytes, pos: int) -> tuple[int, int] | None:
    try:
        return decode_varint(buf, pos, len(buf))
    except ModelFormatError:  # a sniff guesses: a bad varint says "not this message"
        return None


def _top_fields(head: bytes, limit: int = 16) -> list[tuple[int, int, bytes]]:
    """(field, wire type, visible start of the payload) of the first fields in ``head``."""
    fields: list[tuple[int, int, bytes]] = []
    pos = 0
    while pos < len(head) and len(fields) < limit:
        tag = _varint(head, pos)
        if tag is None:
            break
        key, pos = tag
        field, wire = key >> 3, key & 7
        if field == 0:
            fields.append((0, wire, b""))  # invalid in any message
            break
        if wire == 0:
            value = _varint(head, pos)
            if value is None:
                break
            pos = value[1]
            fields.append((field, wire, b""))
        elif wire == 2:
            length = _varint(head, pos)
            if length is None:
                break
            size, pos = length
            fields.append((field, wire, head[pos : pos + min(size, 16)]))
            pos += size
        elif wire in (1, 5):
            fields.append((field, wire, b""))
            pos += 8 if wire == 1 else 4
        else:
            fields.append((field, wire, b""))  # groups and wire types 6/7: not ours
            break
    return fields


def _fits(fields: list[tuple[int, int, bytes]], table: dict[int, int]) -> bool:
    return bool(fields) and all(table.get(field) == wire for field, wire, _ in fields)


def _looks_like_message(payload: bytes, first_fields: tuple[int, ...]) -> bool:
    """Does a length-delimited payload start with one of a message's first fields?"""
    tag = _varint(payload, 0)
    return tag is not None and tag[0] in first_fields


def _binary_guess(head: bytes) -> str | None:
    fields = _top_fields(head)
    onnx_ok = _fits(fields, _ONNX_FIELDS)
    graphdef_ok = _fits(fields, _GRAPHDEF_FIELDS)
    if onnx_ok != graphdef_ok:
        return "onnx" if onnx_ok else "graphdef"
    if not fields or fields[0][0] == 0:
        return None
    if not onnx_ok:
        # Neither fits all the way (a newer writer's field?): trust the first field when
        # only one side knows it, e.g. a GraphDef's node list (1, length-delimited).
        field, wire, _ = fields[0]
        first_onnx = _ONNX_FIELDS.get(field) == wire
        first_graphdef = _GRAPHDEF_FIELDS.get(field) == wire
        if first_onnx != first_graphdef:
            return "onnx" if first_onnx else "graphdef"
        return None
    # Both fit: only fields 2 and 4 (length-delimited) were seen. A GraphDef's library
    # starts with a FunctionDef (0x0a), a gradient (0x12) or a registered gradient (0x1a);
    # its versions with varints (0x08, 0x10, 0x18); ONNX has strings there.
    field, _, payload = fields[0]
    if field == 2 and _looks_like_message(payload, (0x0A, 0x12, 0x1A)):
        return "graphdef"
    if field == 4 and _looks_like_message(payload, (0x08, 0x10, 0x18, 0x1A)):
        return "graphdef"
    return "onnx"


def is_text(head: bytes) -> bool:
    """True if the head of a file reads as protobuf text format (ASCII; UTF-8 in strings)."""
    sample = head[:1024]
    if not sample.strip():
        return False
    # Text format escapes non-ASCII bytes in strings, but UTF-8 may appear verbatim.
    odd = sum(1 for b in sample if b not in _TEXT_BYTES and b < 0x80)
    return odd == 0


def _first_text_field(head: bytes) -> bytes | None:
    match = _WORD.match(head)
    return match.group(1) if match else None


def graphdef_encoding(head: bytes, suffix: str = "") -> str:
    """``"text"`` or ``"binary"``: how a GraphDef file is written (content first, then suffix)."""
    if is_text(head):
        return "text"  # binary protobuf has control bytes (tags, lengths) early on
    if not head.strip() and suffix in (".pbtxt", ".txt"):
        return "text"  # an empty text file is an empty GraphDef; the reader reports it
    return "binary"


def sniff_format(head: bytes, suffix: str, name: str = "") -> str:
    """``"onnx"``, ``"graphdef"``, ``"savedmodel"`` or ``"metagraph"`` from the first bytes of
    a file (and its name); ``"onnx"`` when unsure."""
    suffix = suffix.lower()
    container = container_format(head, name)
    if container is not None:
        return container
    if is_text(head):
        # Text format: ours by its first field, or by the suffix (the text parser then
        # says what is wrong); ONNX text is not readable, and the ONNX reader says so.
        word = _first_text_field(head)
        return "graphdef" if word in _GRAPHDEF_TEXT_FIELDS or suffix == ".pbtxt" else "onnx"
    guess = _binary_guess(head)
    if guess is not None:
        return guess
    if suffix in (".pbtxt",):
        return "graphdef"  # not text after all; the GraphDef reader says what is wrong
    return "onnx"


# -- files that are not models -------------------------------------------------------
_TORCH = "a PyTorch checkpoint holds weights, not a graph: export the model with torch.onnx.export"
_HTML = re.compile(rb"\s*(?:<!doctype\s+html|<html|<head|<!--)", re.IGNORECASE)
# onnx.TensorProto fields (number → wire types): dims, data_type, segment, *_data, name,
# raw_data, doc_string, external_data, data_location.
_TENSOR_FIELDS = {
    1: (0, 2), 2: (0,), 3: (2,), 4: (2, 5), 5: (0, 2), 6: (2,), 7: (0, 2), 8: (2,), 9: (2,),
    10: (1, 2), 11: (0, 2), 12: (2,), 13: (2,), 14: (0,),
}  # fmt: skip
# tensorflow.SavedModel: saved_model_schema_version (varint), meta_graphs (messages).
_SAVED_MODEL_FIELDS = {1: 0, 2: 2}


def _is_tensor_proto(fields: list[tuple[int, int, bytes]]) -> bool:
    """A lone onnx.TensorProto (the .pb files of ONNX test data): its data_type (2) is a
    varint, where a ModelProto has a string and a GraphDef a message."""
    return (
        any(f == 2 and w == 0 for f, w, _ in fields)
        and all(w in _TENSOR_FIELDS.get(f, ()) for f, w, _ in fields)
    )  # fmt: skip


def _is_saved_model(fields: list[tuple[int, int, bytes]]) -> bool:
    """A SavedModel's schema version then a MetaGraphDef; an ONNX model starts the same way
    (ir_version, producer_name) but its second field is text, not a message."""
    if len(fields) < 2 or not _fits(fields, _SAVED_MODEL_FIELDS):
        return False
    if fields[0][:2] != (1, 0) or fields[1][:2] != (2, 2):
        return False
    payload = fields[1][2]
    return payload[:1] == b"\x0a" and not all(b in _TEXT_BYTES for b in payload)


# tensorflow.MetaInfoDef: meta_graph_version, stripped_op_list, any_info, tags,
# tensorflow_version, tensorflow_git_version, stripped_default_attrs, function_aliases.
_META_INFO_FIELDS = {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 7: 0, 8: 2}
_SAVED_MODEL_TEXT = (b"saved_model_schema_version", b"meta_graphs")
_META_GRAPH_TEXT = (
    b"meta_info_def", b"graph_def", b"saver_def", b"collection_def", b"signature_def",
    b"asset_file_def", b"object_graph_def",
)  # fmt: skip


def _first_payload(head: bytes) -> bytes:
    """The visible part of the first field's payload when it is length-delimited."""
    tag = _varint(head, 0)
    if tag is None or tag[0] & 7 != 2:
        return b""
    length = _varint(head, tag[1])
    if length is None:
        return b""
    return head[length[1] : length[1] + length[0]]


def _is_meta_info(payload: bytes) -> bool:
    """A MetaInfoDef, not the NodeDef a GraphDef starts with: a NodeDef's field 2 is its op
    name (text), a MetaInfoDef's the stripped op list (a message); its field 7 is a varint
    (``stripped_default_attrs``), a NodeDef's a message."""
    sub = _top_fields(payload)
    if not sub or not _fits(sub, _META_INFO_FIELDS):
        return False
    ops = [p for f, _, p in sub if f == 2]
    return any(f == 7 for f, _, _ in sub) or bool(ops and not all(b in _TEXT_BYTES for b in ops[0]))


def container_format(head: bytes, name: str = "") -> str | None:
    """``"savedmodel"`` or ``"metagraph"`` when the head (and name) say so, else None."""
    name = name.lower()
    if is_text(head):
        word = _first_text_field(head)
        if word in _SAVED_MODEL_TEXT or name == "saved_model.pbtxt":
            return "savedmodel"
        if word in _META_GRAPH_TEXT or (name.endswith(".meta") and head.strip()):
            return "metagraph"
        return None
    fields = _top_fields(head)
    if name == "saved_model.pb" or _is_saved_model(fields):
        return "savedmodel"
    if name.endswith(".meta") and head:
        return "metagraph"
    if fields and fields[0][:2] == (1, 2) and _is_meta_info(_first_payload(head)):
        return "metagraph"
    return None


def not_a_model(head: bytes, name: str = "") -> str | None:
    """What a file is when it is plainly not a model, with what to do; None otherwise.

    ``head`` is the start of the file (at least 64 bytes when the file is longer),
    ``name`` its file name when known.
    """
    if not head:
        return "is empty (0 bytes): the download or export did not finish"
    name = name.lower()
    if head.startswith(b"PK\x03\x04"):
        if b"data.pkl" in head[30:300] or name.endswith((".pt", ".pth", ".bin", ".ckpt")):
            return f"is a PyTorch checkpoint (a zip archive); {_TORCH}"
        return "is a zip archive, not a model file: unpack it and open the .onnx or .pb inside"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return f"is a Python pickle (an old-style PyTorch checkpoint?); {_TORCH}"
    if _HTML.match(head.lstrip(b"\xef\xbb\xbf")):
        return (
            "is an HTML page, not a model: it was saved from a web page; on Hugging Face, "
            "download from the /resolve/ URL instead of the /blob/ page"
        )
    if is_text(head):
        return None
    fields = _top_fields(head)
    if container_format(head, name) is not None:
        return None
    neither = not _fits(fields, _ONNX_FIELDS) and not _fits(fields, _GRAPHDEF_FIELDS)
    if neither and _is_tensor_proto(fields):
        return (
            "is a single ONNX tensor (TensorProto, like the .pb files of ONNX test data), "
            "not a model: read it with onnx.load_tensor"
        )
    return None


def reject_non_model(head: bytes, name: str, label: str) -> None:
    """Raise :class:`ModelFormatError` naming ``label`` when :func:`not_a_model` knows the file."""
    what = not_a_model(head, name)
    if what is not None:
        raise ModelFormatError(f"{label} {what}")


@lru_cache(maxsize=8)
def protobuf_kind(head: bytes, suffix: str, name: str = "") -> str | None:
    """:func:`sniff_format` for a file that is no plain non-model (:func:`not_a_model`),
    else None. Asked once per row of the protobuf family with the same head: cached."""
    if not_a_model(head, name) is not None:
        return None
    return sniff_format(head, suffix, name)


def protobuf_sniff(kind: str) -> Callable[[bytes, str, str], bool]:
    """The format table's sniff for one protobuf format (``"onnx"``, ``"graphdef"``,
    ``"savedmodel"``, ``"metagraph"``): they share ``.pb`` and one judgement of the bytes,
    which gives every protobuf-looking file to exactly one of them (ONNX when unsure)."""

    def sniff(head: bytes, suffix: str, name: str) -> bool:
        return protobuf_kind(head, suffix, name) == kind

    sniff.__qualname__ = f"protobuf_sniff({kind!r})"
    return sniff


def is_saved_model_dir(path: Path) -> bool:
    return (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file()


def reject_directory(path: Path) -> None:
    """Raise :class:`ModelFormatError` for a directory that is not a SavedModel."""
    raise ModelFormatError(
        f"{str(path)!r} is a directory, not a regular file (a model is one file)"
    )


__all__ = [
    "container_format", "graphdef_encoding", "is_saved_model_dir", "is_text", "not_a_model",
    "protobuf_kind", "protobuf_sniff", "reject_directory", "reject_non_model", "sniff_format",
]  # fmt: skip
