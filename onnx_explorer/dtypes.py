"""Element types: names, numpy dtypes and storage sizes, independent of any file format.

Names follow numpy / ml_dtypes (``float32``, ``bfloat16``, ``float8_e4m3fn``,
``int4``); sub-byte types are stored packed, low bits first, as ONNX does.
Block-quantized types (:class:`BlockDType`, GGUF's ``Q4_K``) store a block of elements in
a fixed number of bytes and decode to float32 a whole block at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = ["DTYPES", "BlockDType", "DType", "block_dtype", "decode_bytes", "dtype"]


@dataclass(frozen=True)
class DType:
    name: str  # numpy-style name shown to users: "float32", "bfloat16", "int4"
    numpy: np.dtype  # dtype of the decoded array (one element per item)
    bits: int  # storage bits per element; 0 for variable-size (string)
    is_numeric: bool = True

    @property
    def packed(self) -> bool:
        """True for sub-byte types stored several to a byte (int4, int2, float4, float6)."""
        return 0 < self.bits < 8

    def storage_bytes(self, count: int) -> int:
        """Bytes needed to store ``count`` elements (Python ints: no overflow)."""
        return (count * self.bits + 7) // 8


@dataclass(frozen=True)
class BlockDType(DType):
    """A block-quantized element type: blocks of ``block_size`` elements stored in
    ``block_bytes`` bytes each (scales and packed values together, as GGUF's Q4_K).

    The decoded values are float32 (``numpy``), computed a whole block at a time by the
    reader's dequantization; the stored bytes cannot be decoded element by element, so
    such a type is not in :data:`DTYPES` and :func:`decode_bytes` refuses it. ``bits`` is
    the storage per element rounded up (Q4_K: 144 bytes per 256 elements, 4.5 → 5): only
    :meth:`storage_bytes` is exact.
    """

    block_size: int = 1
    block_bytes: int = 0

    @property
    def packed(self) -> bool:
        return False  # blocks, not sub-byte elements several to a byte

    def blocks(self, count: int) -> int:
        """Blocks holding ``count`` elements (a partial last block takes a whole one)."""
        return -(-count // self.block_size)

    def storage_bytes(self, count: int) -> int:
        """Bytes of the whole blocks holding ``count`` elements (Python ints: no overflow)."""
        return self.blocks(count) * self.block_bytes


def block_dtype(name: str, block_size: int, block_bytes: int) -> BlockDType:
    """The block type ``name`` (``"Q4_K"``): ``block_size`` elements in ``block_bytes`` bytes."""
    if block_size < 1 or block_bytes < 1:
        raise ValueError(f"block type {name!r} needs positive block sizes")
    bits = -(-block_bytes * 8 // block_size)
    return BlockDType(name, np.dtype(np.float32), bits, True, block_size, block_bytes)


def _d(name: str, np_dtype: object, bits: int, numeric: bool = True) -> DType:
    return DType(name, np.dtype(np_dtype), bits, numeric)  # type: ignore[call-overload]


_ALL = [
    _d("float32", np.float32, 32),
    _d("float64", np.float64, 64),
    _d("float16", np.float16, 16),
    _d("bfloat16", ml_dtypes.bfloat16, 16),
    _d("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 8),
    _d("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 8),
    _d("float8_e5m2", ml_dtypes.float8_e5m2, 8),
    _d("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 8),
    _d("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 8),
    _d("float6_e2m3fn", ml_dtypes.float6_e2m3fn, 6),
    _d("float6_e3m2fn", ml_dtypes.float6_e3m2fn, 6),
    _d("float4_e2m1fn", ml_dtypes.float4_e2m1fn, 4),
    _d("int8", np.int8, 8),
    _d("uint8", np.uint8, 8),
    _d("int16", np.int16, 16),
    _d("uint16", np.uint16, 16),
    _d("int32", np.int32, 32),
    _d("uint32", np.uint32, 32),
    _d("int64", np.int64, 64),
    _d("uint64", np.uint64, 64),
    _d("int4", ml_dtypes.int4, 4),
    _d("uint4", ml_dtypes.uint4, 4),
    _d("int2", ml_dtypes.int2, 2),
    _d("uint2", ml_dtypes.uint2, 2),
    _d("bool", np.bool_, 8),
    _d("complex64", np.complex64, 64, numeric=False),
    _d("complex128", np.complex128, 128, numeric=False),
    _d("string", object, 0, numeric=False),
]

DTYPES: dict[str, DType] = {d.name: d for d in _ALL}


def dtype(name: str) -> DType:
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown element type {name!r}") from None


def decode_bytes(
    buf: bytes | bytearray | memoryview | np.ndarray, dt: DType, count: int
) -> np.ndarray:
    """Decode ``count`` little-endian elements of ``dt`` from a bytes-like object.

    Returns a read-only view where the layout allows (no copy of mapped data);
    packed sub-byte types are unpacked into one element per byte. Block-quantized types
    (:class:`BlockDType`) are decoded by their reader, not here.
    """
    if isinstance(dt, BlockDType):
        raise ValueError(f"{dt.name} is block-quantized: its reader dequantizes it")
    raw = np.frombuffer(buf, dtype=np.uint8)
    if dt.bits == 8 and dt.name == "bool":
        return raw[:count].view(np.bool_)
    if dt.bits >= 8:
        item = dt.bits // 8
        return raw[: count * item].view(dt.numpy.newbyteorder("<"))
    if dt.bits == 4:
        out = np.empty(raw.size * 2, dtype=np.uint8)
        out[0::2] = raw & 0x0F
        out[1::2] = raw >> 4
    elif dt.bits == 2:
        out = np.empty(raw.size * 4, dtype=np.uint8)
        for k in range(4):
            out[k::4] = (raw >> (2 * k)) & 0x03
    elif dt.bits == 6:
        groups = -(-raw.size // 3)
        padded = np.zeros(groups * 3, dtype=np.uint8)
        padded[: raw.size] = raw
        b0, b1, b2 = padded[0::3], padded[1::3], padded[2::3]
        out = np.empty((groups, 4), dtype=np.uint8)
        out[:, 0] = b0 & 0x3F
        out[:, 1] = ((b0 >> 6) & 0x03) | ((b1 & 0x0F) << 2)
        out[:, 2] = ((b1 >> 4) & 0x0F) | ((b2 & 0x03) << 4)
        out[:, 3] = (b2 >> 2) & 0x3F
        out = out.reshape(-1)
    else:  # pragma: no cover - table above has no other widths
        raise ValueError(f"unsupported bit width {dt.bits}")
    return out[:count].view(dt.numpy)
