"""GGUF files as models of weights: the header read by range, tensors lazy.

GGUF has no graph: tensors are grouped into one ``Module`` box per dotted prefix
(``blk.3.attn_q.weight`` → ``blk/3``), see :mod:`.._module_graph`. Plain tensors
(F32, F16, BF16, F64, I8–I64) are byte ranges of the file; block-quantized ones (Q4_K,
IQ2_XS, …) are byte ranges whose values are dequantized a chunk of blocks at a time
(:class:`~onnx_explorer.tensors.BlockBytes`). Opening a file reads its header only and
needs no ``gguf`` package; dequantizing does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ...dtypes import DType
from ...errors import TensorDataError
from ...external_data import DataFiles
from ...model import Model
from ...sources import ByteSource, InMemory
from ...tensors import BlockBytes, FileRange, Tensor, TensorLocation, TensorSource
from .._module_graph import module_graph
from ._header import Header, TensorInfo, read_header
from ._types import block_decoder


def read_gguf_source(
    source: ByteSource, *, path: Path | None = None, files: DataFiles | None = None
) -> Model:
    """A GGUF file from any byte source (a local file or a URL): its header only.

    ``files`` (closed with the model) holds the source when the caller opened it.
    """
    header = read_header(source)
    tensors = {info.name: _tensor(info, source) for info in header.tensors}
    scalars = header.scalars
    name = _text(scalars.get("general.name"))
    architecture = _text(scalars.get("general.architecture"))
    producer = f"{name} ({architecture})" if name and architecture else name or architecture
    return Model(
        module_graph(tensors, name=source.display.rsplit("/", 1)[-1]),
        format="gguf",
        path=path,
        producer_name=producer,
        producer_version=_text(scalars.get("general.version")),
        doc_string=_text(scalars.get("general.description")),
        metadata_props=header.metadata,
        data_files=files,
    )


def read_gguf_bytes(data: bytes | bytearray | memoryview, name: str = "<bytes>") -> Model:
    """A GGUF file's whole bytes, already in memory (tensors are views of them)."""
    return read_gguf_source(InMemory(data, name))


def read_gguf_file(path: Path | str) -> Model:
    """A ``.gguf`` file on disk (its header only; tensors are read when looked at)."""
    path = Path(path)
    files = DataFiles()
    try:
        return read_gguf_source(files.get(Path(os.path.realpath(path))), path=path, files=files)
    except BaseException:
        files.close()
        raise


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _tensor(info: TensorInfo, source: ByteSource) -> Tensor:
    ggml = info.ggml
    if ggml.block_bytes == 0:  # a type this reader does not know: shown, not readable
        where = TensorLocation("embedded", source.display, info.offset, None)
        unknown = DType(ggml.name, np.dtype(np.float32), 0)
        return Tensor(info.name, unknown, info.shape, _Unreadable(ggml.name, where))
    element = ggml.element_type
    data: TensorSource
    if ggml.plain is not None:
        data = FileRange(source, info.offset, info.length)
    else:
        data = BlockBytes(source, info.offset, info.length, block_decoder(ggml))
    return Tensor(info.name, element, info.shape, data)


class _Unreadable(TensorSource):
    """A tensor of a ggml type unknown to this reader: every read says so."""

    def __init__(self, type_name: str, location: TensorLocation) -> None:
        self._type_name = type_name
        self.location = location

    def _error(self, name: str) -> TensorDataError:
        code = self._type_name.removeprefix("ggml_type_")
        return TensorDataError(
            f"tensor {name!r}: ggml type {code} is unknown to this reader (a newer GGUF?)"
        )

    def array(self, dt: DType, count: int, name: str) -> np.ndarray:
        raise self._error(name)

    def chunks(self, dt: DType, count: int, name: str, max_elements: int) -> Iterator[np.ndarray]:
        raise self._error(name)

    def check(self, dt: DType, count: int, name: str) -> None:
        raise self._error(name)


__all__ = ["Header", "read_gguf_bytes", "read_gguf_file", "read_gguf_source"]
