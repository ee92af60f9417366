"""GGUF files (``.gguf``, llama.cpp's format) → the neutral model of weights.

The header is parsed here (:mod:`._header`, by range through a byte source, so local
and remote files read alike); tensors stay lazy, block-quantized ones (Q4_0 … Q6_K,
IQ*, TQ*, MXFP4) are dequantized block by block by the optional ``gguf`` package
(``pip install 'onnx_explorer[gguf]'``), which opening a file never needs.
"""

from __future__ import annotations

from ._header import looks_like_gguf
from ._read import read_gguf_bytes, read_gguf_file, read_gguf_source

#: Suffixes GGUF files are stored under (for the readers' format table).
SUFFIXES = (".gguf",)

__all__ = ["SUFFIXES", "looks_like_gguf", "read_gguf_bytes", "read_gguf_file", "read_gguf_source"]
