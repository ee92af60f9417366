"""Bytes → a GraphDef message: text format with a nesting limit, binary with payloads cut out.

Binary files are walked first (:mod:`.protobuf._wire`): every ``tensor_content`` is
replaced by a marker and its range in the file recorded, so parsing copies the
graph's structure only.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from google.protobuf import text_format
from google.protobuf.message import DecodeError

from ....errors import ModelFormatError
from ...protobuf._wire import Schema, Stripped, strip_payloads
from . import _proto as pb

#: Deepest message nesting accepted in text format (binary parsing stops at 100 too).
MAX_TEXT_DEPTH = 100


def _graphdef_schema() -> Schema:
    # Field numbers from tensorflow/core/framework/*.proto; FUNC attributes nest AttrValues.
    tensor = Schema({}, frozenset({4}))  # TensorProto.tensor_content
    list_children: dict[int, Schema] = {8: tensor}  # ListValue.tensor
    attr_children: dict[int, Schema] = {8: tensor, 1: Schema(list_children)}  # tensor, list
    attr_entry = Schema({2: Schema(attr_children)})  # map entry: key=1, value=2
    name_attr_list = Schema({2: attr_entry})  # NameAttrList.attr
    attr_children[10] = name_attr_list  # AttrValue.func
    list_children[9] = name_attr_list  # ListValue.func
    node = Schema({5: attr_entry})  # NodeDef.attr
    function = Schema({3: node, 5: attr_entry})  # FunctionDef.node_def, attr
    return Schema({1: node, 2: Schema({1: function})})  # GraphDef.node, library.function


GRAPHDEF_SCHEMA = _graphdef_schema()
_TEXT_SKIP = re.compile(rb'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*')


_NESTING_STEP = np.zeros(256, np.int32)
_NESTING_STEP[[ord("{"), ord("<")]] = 1
_NESTING_STEP[[ord("}"), ord(">")]] = -1


def text_depth(data: bytes) -> int:
    """Deepest ``{``/``<`` nesting of a text-format message (strings and comments ignored)."""
    bare = np.frombuffer(_TEXT_SKIP.sub(b"", data), dtype=np.uint8)
    # One table lookup instead of four comparisons and two masked writes.
    return int(np.cumsum(_NESTING_STEP[bare]).max(initial=0))


def _check_nonempty(proto: Any, what: str) -> Any:
    if not len(proto.node) and not len(proto.library.function):
        raise ModelFormatError(f"{what} is not a TensorFlow GraphDef: it has no nodes")
    return proto


def parse_text(data: bytes, what: str) -> Any:
    """Parse text format with a nesting limit; errors are :class:`ModelFormatError`."""
    depth = text_depth(data)
    if depth > MAX_TEXT_DEPTH:
        raise ModelFormatError(
            f"{what}: messages are nested {depth} deep (more than {MAX_TEXT_DEPTH})"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFormatError(f"{what} is not a text-format GraphDef: {exc}") from None
    proto = pb.GraphDef()
    try:
        # Unknown fields (newer TensorFlow, debug_info) are skipped, not fatal.
        text_format.Parse(text, proto, allow_unknown_field=True, max_recursion_depth=MAX_TEXT_DEPTH)
    except (text_format.ParseError, ValueError, TypeError) as exc:
        # protobuf's own setattr raises ValueError for a number out of its field's range
        message = str(exc) if len(str(exc)) <= 300 else str(exc)[:300] + "…"
        raise ModelFormatError(f"{what} is not a valid text-format GraphDef: {message}") from None
    except RecursionError:
        raise ModelFormatError(f"{what}: messages are nested too deeply") from None
    return _check_nonempty(proto, what)


def parse_binary(data: bytes, what: str) -> Any:
    proto = pb.GraphDef()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        if "UTF-8" not in str(exc):
            raise ModelFormatError(f"{what} is not a valid GraphDef: {exc}") from None
        proto = _with_text_repaired(data, what)
    return _check_nonempty(proto, what)


def _with_text_repaired(data: bytes, what: str) -> Any:
    """A GraphDef some of whose names are not UTF-8, its strings shown with U+FFFD (as for
    ONNX files): parsed without the UTF-8 check, repaired, and parsed again as usual. Only
    such files pay for the second parse and the walk."""
    lenient = pb.LenientGraphDef()
    try:
        lenient.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelFormatError(f"{what} is not a valid GraphDef: {exc}") from None
    _repair_strings(lenient)
    proto = pb.GraphDef()
    proto.ParseFromString(lenient.SerializeToString())
    return proto


def _text(value: str | bytes) -> str:
    return value if isinstance(value, str) else bytes(value).decode("utf-8", "replace")


def _repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf 6+; ``label`` before
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def _repair_strings(message: Any) -> None:
    """Decode, in place, every string field of ``message`` and its messages that holds bytes
    (map keys too: the lenient messages hold map entries as plain messages)."""
    stack = [message]
    while stack:
        current = stack.pop()
        for field, value in current.ListFields():
            if field.type == field.TYPE_STRING:
                if _repeated(field):
                    value[:] = [_text(v) for v in value]
                else:
                    setattr(current, field.name, _text(value))
            elif field.type == field.TYPE_MESSAGE:
                if _repeated(field):
                    stack.extend(value)
                else:
                    stack.append(value)


def strip(buf: Any, what: str) -> Stripped:
    """Cut the ``tensor_content`` payloads out of a binary GraphDef."""
    try:
        return strip_payloads(buf, GRAPHDEF_SCHEMA)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{what} is not a valid GraphDef: {exc}") from None


__all__ = ["GRAPHDEF_SCHEMA", "MAX_TEXT_DEPTH", "parse_binary", "parse_text", "strip", "text_depth"]
