"""The protobuf wire format, walked without a protobuf parser (the readers' shared codec).

``_varint`` is the one varint codec every reader decodes with (strict: a truncated or
overlong varint is a :class:`~onnx_explorer.errors.ModelFormatError`). ``_wire`` finds the
large payload fields of a serialized message (an ONNX initializer's ``raw_data``, a
GraphDef ``tensor_content``) by their offsets and cuts them out, so the rest parses
cheaply and each payload is later read in place like external data; ``_batch`` plans the
cuts of many small leaves at once.
"""

from __future__ import annotations

from ._varint import decode_varint, encode_varint
from ._wire import (
    MAGIC,
    MARKER_LENGTH,
    ONNX_MODEL_SCHEMA,
    Schema,
    Stripped,
    strip_file,
    strip_payloads,
)

__all__ = [
    "MAGIC",
    "MARKER_LENGTH",
    "ONNX_MODEL_SCHEMA",
    "Schema",
    "Stripped",
    "decode_varint",
    "encode_varint",
    "strip_file",
    "strip_payloads",
]
