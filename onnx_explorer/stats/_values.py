"""Reading values block by block: what statistics ask of a tensor, and the widening of dtypes.

Statistics are typed by the small :class:`ValueSource` protocol, not by the lazy
tensor class, so this package imports nothing of the model: ``tensors.py`` (whose
``Tensor`` is a value source) sits above it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import ml_dtypes
import numpy as np

from ..dtypes import DType
from ..errors import TensorDataError

#: Elements decoded (or mapped) per chunk when streaming a tensor.
CHUNK_ELEMENTS = 1 << 20
#: Elements per numpy step: float64 work buffers of 512 KB stay in the CPU cache.
BLOCK_ELEMENTS = 1 << 16
#: Largest finite float16 value.
FLOAT16_MAX = 65504.0

_NATIVE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_SMALL_INTS = {
    np.dtype(ml_dtypes.int4): np.dtype(np.int8),
    np.dtype(ml_dtypes.uint4): np.dtype(np.uint8),
    np.dtype(ml_dtypes.int2): np.dtype(np.int8),
    np.dtype(ml_dtypes.uint2): np.dtype(np.uint8),
}


@dataclass(frozen=True)
class Repeat:
    """``count`` elements all equal to ``value`` (a one-element array of the stored dtype).

    TensorFlow stores a constant fill as one value and a shape ("splat"): statistics
    and histograms take such a run in one step, exactly as if it were materialised.
    """

    value: np.ndarray
    count: int

    @property
    def size(self) -> int:
        return self.count


Block = np.ndarray | Repeat


class ValueSource(Protocol):
    """What statistics read from a tensor (:class:`onnx_explorer.Tensor` is one).

    A source whose values are mostly a repeated fill may also offer
    ``iter_runs(max_elements)`` (chunks and :class:`Repeat` runs) and say so with a
    non-zero ``repeated_elements``; statistics then cost the same whatever the fill's
    length, where chunk by chunk they would walk every element.
    """

    @property
    def name(self) -> str: ...

    @property
    def dtype_info(self) -> DType: ...

    @property
    def dtype(self) -> np.dtype: ...

    @property
    def size(self) -> int: ...

    def iter_chunks(self, max_elements: int = ...) -> Iterator[np.ndarray]:
        """Flat decoded values in chunks of at most ``max_elements``."""
        ...


class Dequantizer(Protocol):
    """What statistics need from a dequantization (see :mod:`onnx_explorer.weights._quant`)."""

    def apply(self, values: np.ndarray, offset: int) -> np.ndarray:
        """Real values (float32) of the stored elements at flat positions ``offset``..."""
        ...

    def output_count(self, count: int) -> int:
        """How many real values ``count`` stored elements give."""
        ...


@dataclass(frozen=True)
class ValueStream:
    """A restartable stream of value blocks: ``blocks()`` yields (flat offset, array).

    ``runs``, when set, yields the same values with long repeats kept whole as
    :class:`Repeat` blocks; :meth:`blocks_or_repeats` is what reductions iterate.
    """

    blocks: Callable[[], Iterator[tuple[int, np.ndarray]]]
    count: int  # values the stream yields in all
    is_float: bool
    widen: Callable[[np.ndarray], np.ndarray] = field(default=lambda a: a)
    runs: Callable[[], Iterator[tuple[int, Block]]] | None = None

    def blocks_or_repeats(self) -> Iterator[tuple[int, Block]]:
        return self.runs() if self.runs is not None else self.blocks()


def _widener(dt: np.dtype, what: str) -> tuple[bool, Callable[[np.ndarray], np.ndarray]]:
    """(is_float, block → array numpy reduces quickly) for the stored dtype ``dt``."""
    if dt in _NATIVE_FLOATS:
        return True, lambda a: a
    if dt == np.dtype(np.bool_):
        return False, lambda a: a.view(np.uint8)
    if dt.kind in "iu":
        return False, lambda a: a
    if dt in _SMALL_INTS:
        target = _SMALL_INTS[dt]
        return False, lambda a: a.astype(target)
    if dt.kind in "cOSUMm":
        raise TensorDataError(f"{what} holds {dt} values: statistics need real numbers")
    try:
        # float16, bfloat16, float8, float6, float4 (ml_dtypes.finfo carries no annotations)
        ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call]
    except (TypeError, ValueError):
        raise TensorDataError(f"{what} holds {dt} values: statistics need real numbers") from None
    return True, lambda a: a.astype(np.float32)


#: Longest repeat a dequantization walks value by value (its scale may vary per position).
MAX_DEQUANTIZED_REPEAT = 1 << 26


def _split(
    chunks: Iterable[np.ndarray], block: int, offset: int = 0
) -> Iterator[tuple[int, np.ndarray]]:
    for chunk in chunks:
        flat = chunk.reshape(-1)
        for start in range(0, flat.size, block):
            yield offset + start, flat[start : start + block]
        offset += flat.size


def _split_runs(items: Iterable[np.ndarray | Repeat], block: int) -> Iterator[tuple[int, Block]]:
    offset = 0
    for item in items:
        if isinstance(item, Repeat):
            yield offset, item
        else:
            yield from _split([item], block, offset)
        offset += item.size


def _expanded(
    values: Block, offset: int, block: int, name: str, limit: int | None = None
) -> Iterator[tuple[int, np.ndarray]]:
    """A block as arrays: a repeat as zero-stride views (never a copy), if within ``limit``."""
    if not isinstance(values, Repeat):
        yield offset, values
        return
    if limit is not None and values.count > limit:
        raise TensorDataError(
            f"tensor {name!r}: {values.count} elements repeat one stored value; statistics "
            "of their dequantized values would take hours (those of the stored values do not)"
        )
    for start in range(0, values.count, block):
        n = min(block, values.count - start)
        yield offset + start, np.broadcast_to(values.value, (n,))


def tensor_values(
    tensor: ValueSource,
    dequantize: Dequantizer | None = None,
    chunk_elements: int = CHUNK_ELEMENTS,
    block: int = BLOCK_ELEMENTS,
) -> ValueStream:
    """A tensor's values (dequantized when asked) as a stream of blocks."""
    if not tensor.dtype_info.is_numeric:
        raise TensorDataError(
            f"tensor {tensor.name!r} holds {tensor.dtype_info.name} values: statistics need numbers"
        )
    # Runs only for a tensor that has repeats: a wrapper's own iter_chunks (a progress
    # bar) otherwise stays the way values are read.
    iter_runs = getattr(tensor, "iter_runs", None)
    if not getattr(tensor, "repeated_elements", 0):
        iter_runs = None
    if dequantize is not None:
        dq = dequantize
        source = iter_runs or tensor.iter_chunks

        def dequantized() -> Iterator[tuple[int, np.ndarray]]:
            out = 0
            for offset, values in _split_runs(source(chunk_elements), block):
                for start, part in _expanded(
                    values, offset, block, tensor.name, MAX_DEQUANTIZED_REPEAT
                ):
                    real = dq.apply(part, start)
                    yield out, real
                    out += real.size

        return ValueStream(dequantized, dq.output_count(tensor.size), True)
    is_float, widen = _widener(tensor.dtype, f"tensor {tensor.name!r}")
    if iter_runs is not None:
        runs = iter_runs

        def with_repeats() -> Iterator[tuple[int, Block]]:
            return _split_runs(runs(chunk_elements), block)

        def as_arrays() -> Iterator[tuple[int, np.ndarray]]:
            for offset, values in with_repeats():
                yield from _expanded(values, offset, block, tensor.name)

        return ValueStream(as_arrays, tensor.size, is_float, widen, with_repeats)
    return ValueStream(
        lambda: _split(tensor.iter_chunks(chunk_elements), block), tensor.size, is_float, widen
    )


def array_values(values: Any, block: int = BLOCK_ELEMENTS) -> ValueStream:
    """An in-memory array as a stream of blocks."""
    arr = np.asarray(values)
    is_float, widen = _widener(arr.dtype, "the array")
    return ValueStream(lambda: _split([arr], block), arr.size, is_float, widen)


__all__ = [
    "BLOCK_ELEMENTS",
    "CHUNK_ELEMENTS",
    "FLOAT16_MAX",
    "Dequantizer",
    "Repeat",
    "ValueSource",
    "ValueStream",
    "array_values",
    "tensor_values",
]
