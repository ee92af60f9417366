"""The one varint codec (protobuf's base-128 integers, also LevelDB's in a checkpoint
index): every reader decodes varints here, with one error behaviour.

Decoding is strict: a varint that runs past ``end`` is *truncated*; one with more bytes
than a ``bits``-bit value needs, or whose value does not fit in ``bits`` bits, is
*malformed*. Both raise :class:`~onnx_explorer.errors.ModelFormatError` (prefixed by
``what`` when given). Code that only guesses (the format sniff) catches the error.
"""

from __future__ import annotations

from typing import Any

from ...errors import ModelFormatError


def decode_varint(buf: Any, pos: int, end: int, what: str = "", bits: int = 64) -> tuple[int, int]:
    """(value, position after it) of the varint at ``buf[pos]``, reading no byte at or past
    ``end``; see the module docstring for the errors."""
    limit = 70 if bits == 64 else -(-bits // 7) * 7  # shift after the most bytes allowed
    result = shift = 0
    while pos < end:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if result >> bits:
                raise ModelFormatError(_message(what, f"malformed varint (over {bits} bits)"))
            return result, pos
        shift += 7
        if shift >= limit:
            raise ModelFormatError(_message(what, "malformed varint"))
    raise ModelFormatError(_message(what, "truncated varint"))


def _message(what: str, problem: str) -> str:
    return f"{what}: {problem}" if what else problem


def encode_varint(value: int) -> bytes:
    """The varint bytes of a non-negative ``value``."""
    if value < 0x80:
        return bytes((value,))
    if value < 0x4000:
        return bytes((value & 0x7F | 0x80, value >> 7))
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


__all__ = ["decode_varint", "encode_varint"]
