"""The one varint codec (readers/protobuf/_varint.py): round trips and strict errors."""

from __future__ import annotations

import pytest

from onnx_explorer.errors import ModelFormatError
from onnx_explorer.readers.protobuf import decode_varint, encode_varint


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**32 - 1, 2**63, 2**64 - 1])
def test_round_trip(value):
    data = b"\xff" + encode_varint(value) + b"\x00"
    assert decode_varint(data, 1, len(data)) == (value, len(data) - 1)


def test_truncated_and_malformed_are_model_format_errors_naming_what():
    with pytest.raises(ModelFormatError, match="^index: truncated varint$"):
        decode_varint(b"\x80\x80", 0, 2, "index")
    with pytest.raises(ModelFormatError, match="truncated"):
        decode_varint(b"\x80\x01", 0, 1)  # ``end`` bounds the read, not the buffer
    with pytest.raises(ModelFormatError, match="malformed"):
        decode_varint(b"\x80" * 10 + b"\x01", 0, 11)  # 11 bytes: longer than any 64-bit value
    with pytest.raises(ModelFormatError, match="over 64 bits"):
        decode_varint(b"\xff" * 9 + b"\x7f", 0, 10)  # 10 bytes, 70 bits
    with pytest.raises(ModelFormatError, match="over 32 bits"):
        decode_varint(encode_varint(2**32), 0, 5, bits=32)


def test_every_reader_decodes_varints_with_the_one_codec():
    # The sniff, the wire walk and the checkpoint index share it (no second decoder).
    from onnx_explorer.readers import _sniff
    from onnx_explorer.readers.protobuf import _wire
    from onnx_explorer.readers.tensorflow.bundle import _table

    assert _wire.decode_varint is decode_varint and _table.decode_varint is decode_varint
    assert _sniff.decode_varint is decode_varint
    assert _sniff._varint(b"\x80", 0) is None  # a sniff guesses: a bad varint is "not this"
