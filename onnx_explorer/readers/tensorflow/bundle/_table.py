"""The SSTable of a tensor bundle's ``.index`` file (LevelDB's table format) → key/value pairs.

Layout (github.com/google/leveldb/blob/main/doc/table_format.md, which TensorFlow's
``tensorflow/core/lib/io/table`` follows): data blocks, a metaindex block, an index
block, and a 48-byte footer (two block handles — varint64 offset and size — padded
to 40 bytes, then the magic ``0xdb4775248b80fb57``). Every block is followed by a
trailer: one byte of compression type and a masked CRC-32C of the block and that byte.
A block holds entries with prefix-compressed keys (shared, unshared and value lengths
as varint32, then the key's new bytes and the value), then its restart offsets
(uint32 each) and their count. The index block maps each data block's last key to
its handle. TensorFlow writes bundle indexes uncompressed; a Snappy block is refused.

The file is untrusted: every length and offset is checked against what holds it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ....errors import ModelFormatError
from ...protobuf import decode_varint
from ._crc32c import crc32c, unmask

MAGIC = 0xDB4775248B80FB57
FOOTER_BYTES = 48
TRAILER_BYTES = 5
_NO_COMPRESSION, _SNAPPY = 0, 1
#: Longest key accepted: checkpoint keys are tensor names. Keys are rebuilt from shared
#: prefixes, so without a bound a small hostile block could make ever longer keys
#: (quadratic copying).
MAX_KEY_BYTES = 4096


def _handle(buf: bytes, pos: int, end: int, what: str) -> tuple[int, int, int]:
    offset, pos = decode_varint(buf, pos, end, what)
    size, pos = decode_varint(buf, pos, end, what)
    return offset, size, pos


def _block(data: bytes, offset: int, size: int, what: str, verify: bool) -> bytes:
    """The contents of the block at a handle, its trailer checked."""
    end = offset + size
    if end + TRAILER_BYTES > len(data) - FOOTER_BYTES:
        raise ModelFormatError(
            f"{what}: block at offset {offset} ({size} bytes) runs past the end of the table "
            f"({len(data)} bytes)"
        )
    kind = data[end]
    if kind == _SNAPPY:
        raise ModelFormatError(
            f"{what}: block at offset {offset} is Snappy-compressed; TensorFlow writes bundle "
            "indexes uncompressed and this reader does not decompress them"
        )
    if kind != _NO_COMPRESSION:
        raise ModelFormatError(f"{what}: block at offset {offset} has unknown compression {kind}")
    if verify:
        (stored,) = struct.unpack_from("<I", data, end + 1)
        if crc32c(data[offset : end + 1]) != unmask(stored):
            raise ModelFormatError(f"{what}: block at offset {offset} fails its CRC-32C check")
    return data[offset:end]


def block_entries(block: bytes, what: str) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) of every entry of a block, keys rebuilt from their shared prefixes."""
    if len(block) < 4:
        raise ModelFormatError(f"{what}: block of {len(block)} bytes has no restart count")
    (restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    if restarts == 0 or restarts > (len(block) - 4) // 4:
        raise ModelFormatError(f"{what}: block declares {restarts} restart points")
    limit = len(block) - 4 - 4 * restarts  # entries end where the restart array begins
    pos = 0
    key = b""
    while pos < limit:
        shared, pos = decode_varint(block, pos, limit, what, 32)
        unshared, pos = decode_varint(block, pos, limit, what, 32)
        value_len, pos = decode_varint(block, pos, limit, what, 32)
        if shared > len(key) or pos + unshared + value_len > limit:
            raise ModelFormatError(f"{what}: block entry at {pos} is inconsistent or truncated")
        if shared + unshared > MAX_KEY_BYTES:
            raise ModelFormatError(
                f"{what}: a key of {shared + unshared} bytes (more than {MAX_KEY_BYTES})"
            )
        key = key[:shared] + block[pos : pos + unshared]
        pos += unshared
        yield key, block[pos : pos + value_len]
        pos += value_len


def table_entries(data: bytes, what: str, *, verify: bool = True) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) of an SSTable held in ``data``, in file order."""
    if len(data) < FOOTER_BYTES:
        raise ModelFormatError(
            f"{what} is not a tensor-bundle index: {len(data)} bytes, shorter than a table footer"
        )
    footer = len(data) - FOOTER_BYTES
    (magic,) = struct.unpack_from("<Q", data, len(data) - 8)
    if magic != MAGIC:
        raise ModelFormatError(
            f"{what} is not a tensor-bundle index (no table magic number at its end)"
        )
    _, _, pos = _handle(data, footer, footer + 40, what)  # metaindex: unused by bundles
    index_offset, index_size, _ = _handle(data, pos, footer + 40, what)
    index = _block(data, index_offset, index_size, what, verify)
    end = 0
    for _, handle in block_entries(index, what):
        offset, size, _ = _handle(handle, 0, len(handle), what)
        # Data blocks follow one another: an index pointing back (the same block many
        # times) would make a small file cost any amount of work.
        if offset < end:
            raise ModelFormatError(f"{what}: data block at offset {offset} overlaps the one before")
        end = offset + size + TRAILER_BYTES
        yield from block_entries(_block(data, offset, size, what, verify), what)


__all__ = ["FOOTER_BYTES", "MAGIC", "MAX_KEY_BYTES", "block_entries", "table_entries"]
