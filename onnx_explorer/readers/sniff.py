"""Tell ONNX from TensorFlow GraphDef by content: both use ``.pb``."""

from __future__ import annotations


def sniff_format(head: bytes, suffix: str) -> str:
    """Best guess from the first bytes of a file and its suffix; ``"onnx"`` when unsure."""
    if suffix == ".onnx":
        return "onnx"
    if suffix == ".pbtxt":
        return "graphdef"
    # ModelProto starts with ir_version (field 1, varint: 0x08) in every writer we know;
    # a GraphDef starts with node (field 1, length-delimited: 0x0a).
    if head[:1] == b"\x08":
        return "onnx"
    if head[:1] == b"\x0a":
        return "graphdef"
    stripped = head.lstrip()
    if stripped[:5] in (b"node ", b"node{", b"versi", b"libra"):
        return "graphdef"
    return "onnx"
