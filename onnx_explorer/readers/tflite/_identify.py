"""Telling a TFLite file by its first bytes (imported by the readers' format table, so it
imports nothing: the parser and its numpy and dataclass machinery load with a file)."""

from __future__ import annotations

#: The flatbuffer file identifier of TFLite / LiteRT models, at bytes 4..8.
IDENTIFIER = b"TFL3"


def looks_like_tflite(head: bytes) -> bool:
    """True when bytes 4..8 are the TFLite file identifier ``TFL3``."""
    return len(head) >= 8 and bytes(head[4:8]) == IDENTIFIER


__all__ = ["IDENTIFIER", "looks_like_tflite"]
