"""Bytes → a ``SavedModel`` or ``MetaGraphDef`` message: text format, or binary with the
graphs' ``tensor_content`` payloads cut out (as for GraphDef files, see :mod:`..graphdef._parse`).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from ....errors import ModelFormatError
from ...protobuf._wire import Schema, Stripped, strip_payloads
from ..graphdef import _proto as pb
from ..graphdef._parse import GRAPHDEF_SCHEMA, MAX_TEXT_DEPTH, text_depth

META_GRAPH_SCHEMA = Schema({2: GRAPHDEF_SCHEMA})  # MetaGraphDef.graph_def
SAVED_MODEL_SCHEMA = Schema({2: META_GRAPH_SCHEMA})  # SavedModel.meta_graphs

#: What each container is called in messages, by reader kind.
KINDS = {"savedmodel": "TensorFlow SavedModel", "metagraph": "TensorFlow MetaGraphDef"}


def _message(kind: str) -> Any:
    return pb.SavedModel() if kind == "savedmodel" else pb.MetaGraphDef()


def strip(buf: Any, kind: str, what: str) -> Stripped:
    schema = SAVED_MODEL_SCHEMA if kind == "savedmodel" else META_GRAPH_SCHEMA
    try:
        return strip_payloads(buf, schema)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{what} is not a valid {KINDS[kind]}: {exc}") from None


def parse_binary(data: Any, kind: str, what: str) -> Any:
    proto = _message(kind)
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelFormatError(f"{what} is not a valid {KINDS[kind]}: {exc}") from None
    return proto


def parse_text(data: bytes, kind: str, what: str) -> Any:
    depth = text_depth(data)
    if depth > MAX_TEXT_DEPTH:
        raise ModelFormatError(
            f"{what}: messages are nested {depth} deep (more than {MAX_TEXT_DEPTH})"
        )
    proto = _message(kind)
    try:
        text_format.Parse(
            data.decode("utf-8"), proto, allow_unknown_field=True,
            max_recursion_depth=MAX_TEXT_DEPTH,
        )  # fmt: skip
    except UnicodeDecodeError as exc:
        raise ModelFormatError(f"{what} is not a text-format {KINDS[kind]}: {exc}") from None
    except text_format.ParseError as exc:
        raise ModelFormatError(f"{what} is not a valid text-format {KINDS[kind]}: {exc}") from None
    except RecursionError:
        raise ModelFormatError(f"{what}: messages are nested too deeply") from None
    return proto


def meta_graphs(proto: Any, kind: str) -> list[Any]:
    """The MetaGraphDefs of a parsed container (a ``.meta`` file holds one)."""
    return list(proto.meta_graphs) if kind == "savedmodel" else [proto]


__all__ = [
    "KINDS",
    "META_GRAPH_SCHEMA",
    "SAVED_MODEL_SCHEMA",
    "meta_graphs",
    "parse_binary",
    "parse_text",
    "strip",
]
