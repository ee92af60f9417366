"""ggml tensor types: their codes, element types and block sizes, and dequantization.

The table is the format's own (``ggml.h``'s ``ggml_type``, ``GGML_QUANT_SIZES`` of the
``gguf`` package), kept here so that opening a file never needs ``gguf``. Plain types
become the neutral element types (``F16`` → ``float16``); block-quantized ones become a
:class:`~onnx_explorer.dtypes.BlockDType` named as ggml names it (``Q4_K``), whose values
the optional ``gguf`` package dequantizes, imported on the first block read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...dtypes import DType, block_dtype, dtype
from ...errors import TensorDataError
from ...tensors import BlockDecoder

#: What a missing or too old ``gguf`` package is told to do.
INSTALL_HINT = "pip install 'onnx_explorer[gguf]'"


@dataclass(frozen=True)
class GgmlType:
    """One ggml type: ``block_size`` elements stored in ``block_bytes`` bytes."""

    code: int
    name: str  # ggml's name: "F32", "Q4_K"
    block_size: int
    block_bytes: int
    plain: str | None = None  # the neutral element type of an unquantized type

    @property
    def element_type(self) -> DType:
        if self.plain is not None:
            return dtype(self.plain)
        return block_dtype(self.name, self.block_size, self.block_bytes)


def _t(
    code: int, name: str, block_size: int, block_bytes: int, plain: str | None = None
) -> GgmlType:
    return GgmlType(code, name, block_size, block_bytes, plain)


_QK = 256  # elements of a "K" super-block

#: Every ggml type a GGUF file may store. Left out: Q4_2/Q4_3 (4, 5; removed from ggml
#: in 2023) and Q8_1 (9; a scratch type of dot products whose size the gguf package and
#: ggml disagree on): a tensor of such a type is shown but cannot be read.
GGML_TYPES: Mapping[int, GgmlType] = {
    t.code: t
    for t in (
        _t(0, "F32", 1, 4, "float32"),
        _t(1, "F16", 1, 2, "float16"),
        _t(2, "Q4_0", 32, 2 + 16),
        _t(3, "Q4_1", 32, 2 + 2 + 16),
        _t(6, "Q5_0", 32, 2 + 4 + 16),
        _t(7, "Q5_1", 32, 2 + 2 + 4 + 16),
        _t(8, "Q8_0", 32, 2 + 32),
        _t(10, "Q2_K", _QK, 2 + 2 + _QK // 16 + _QK // 4),
        _t(11, "Q3_K", _QK, 2 + _QK // 4 + _QK // 8 + 12),
        _t(12, "Q4_K", _QK, 2 + 2 + _QK // 2 + 12),
        _t(13, "Q5_K", _QK, 2 + 2 + _QK // 2 + _QK // 8 + 12),
        _t(14, "Q6_K", _QK, 2 + _QK // 2 + _QK // 4 + _QK // 16),
        _t(15, "Q8_K", _QK, 4 + _QK + _QK // 8),
        _t(16, "IQ2_XXS", _QK, 2 + _QK // 4),
        _t(17, "IQ2_XS", _QK, 2 + _QK // 4 + _QK // 32),
        _t(18, "IQ3_XXS", _QK, 2 + _QK // 4 + _QK // 8),
        _t(19, "IQ1_S", _QK, 2 + _QK // 8 + _QK // 16),
        _t(20, "IQ4_NL", 32, 2 + 16),
        _t(21, "IQ3_S", _QK, 2 + _QK // 4 + _QK // 8 + _QK // 32 + 4),
        _t(22, "IQ2_S", _QK, 2 + _QK // 4 + _QK // 16),
        _t(23, "IQ4_XS", _QK, 2 + 2 + _QK // 2 + _QK // 64),
        _t(24, "I8", 1, 1, "int8"),
        _t(25, "I16", 1, 2, "int16"),
        _t(26, "I32", 1, 4, "int32"),
        _t(27, "I64", 1, 8, "int64"),
        _t(28, "F64", 1, 8, "float64"),
        _t(29, "IQ1_M", _QK, _QK // 8 + _QK // 16 + _QK // 32),
        _t(30, "BF16", 1, 2, "bfloat16"),
        _t(34, "TQ1_0", _QK, 2 + 4 * 13),
        _t(35, "TQ2_0", _QK, 2 + 64),
        _t(39, "MXFP4", 32, 1 + 16),
        _t(40, "NVFP4", 64, 4 + 32),
        _t(41, "Q1_0", 128, 2 + 16),
    )
}


def _gguf_quants(type_name: str) -> tuple[Any, Any]:
    """(``gguf.quants``, the type's ``GGMLQuantizationType``), or our error saying why not."""
    try:
        import gguf.quants as quants
        from gguf.constants import GGMLQuantizationType
    except ImportError:
        raise TensorDataError(
            f"{type_name} values are dequantized by the gguf package: {INSTALL_HINT}"
        ) from None
    qtype = getattr(GGMLQuantizationType, type_name, None)
    if qtype is None:
        raise TensorDataError(
            f"the installed gguf package does not know {type_name}: pip install -U gguf"
        )
    return quants, qtype


def block_decoder(ggml: GgmlType) -> BlockDecoder:
    """Whole blocks' bytes (flat uint8) → float32 values, by ``gguf.quants.dequantize``."""

    def dequantize(raw: np.ndarray) -> np.ndarray:
        quants, qtype = _gguf_quants(ggml.name)
        try:
            values = quants.dequantize(raw, qtype)
        except NotImplementedError:
            raise TensorDataError(
                f"the gguf package cannot dequantize {ggml.name} (a newer one may: "
                "pip install -U gguf)"
            ) from None
        return np.asarray(values, dtype=np.float32).reshape(-1)

    return dequantize


__all__ = ["GGML_TYPES", "INSTALL_HINT", "GgmlType", "block_decoder"]
