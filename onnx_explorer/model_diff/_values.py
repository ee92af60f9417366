"""Comparing two tensors' values, streamed chunk by chunk, and hashing one's content.

Neither tensor is ever read whole: both are read in aligned chunks, compared as bytes
first (the common case, identical weights, costs one read of each and no arithmetic),
and only when the bytes differ compared again as float64 values: fp16 / bf16 widened,
a quantized side dequantized (see :mod:`onnx_explorer.weights._quant`).

A fill (TensorFlow's splat: one stored value, a shape of 2**40 elements) is read as
:class:`~onnx_explorer.stats.Repeat` runs (:meth:`Tensor.iter_runs`): two fills are
compared, totalled and hashed in constant time whatever their length; a fill against
stored values costs what reading the stored values costs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ExplorerError, TensorDataError
from ..stats import Dequantizer, Repeat, ValueStream, tensor_values
from ..tensors import Tensor
from ._results import TensorChange

#: Elements per chunk of the byte comparison and of hashing.
_CHUNK = 1 << 20
#: Repeated elements a digest hashes one by one: a longer fill is hashed as its runs.
_DIGEST_REPEATS = 1 << 24

#: A piece of a flat stream of values: stored values, or a run of one repeated value.
Piece = np.ndarray | Repeat


def _pieces(tensor: Tensor) -> Iterator[Piece]:
    """The tensor's flat values, a fill (if any) as :class:`Repeat` runs."""
    if tensor.repeated_elements:
        return tensor.iter_runs(_CHUNK)
    return tensor.iter_chunks(_CHUNK)


def _hash_values(digest: Any, chunk: np.ndarray) -> None:
    if chunk.dtype == object:  # strings: each one's length first, so ["ab"] != ["a", "b"]
        for item in chunk.reshape(-1):
            data = item if isinstance(item, bytes) else str(item).encode()
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
    else:
        digest.update(np.ascontiguousarray(chunk).view(np.uint8).data)


def content_digest(tensor: Tensor) -> str:
    """A hash of the tensor's decoded bytes, streamed (for renamed-initializer matching).

    A fill of more than ``_DIGEST_REPEATS`` elements is hashed as its runs (each repeat as
    its value and length: constant time), under a hash of its own: two such fills of
    equal content match, though not the same values stored element by element."""
    runs = tensor.repeated_elements > _DIGEST_REPEATS
    digest = hashlib.blake2b(digest_size=20, person=b"runs" if runs else b"")
    try:
        for piece in tensor.iter_runs(_CHUNK) if runs else tensor.iter_chunks(_CHUNK):
            if isinstance(piece, Repeat):
                digest.update(b"\x00repeat" + piece.count.to_bytes(16, "little"))
                _hash_values(digest, piece.value.reshape(-1)[:1])
            else:
                _hash_values(digest, piece)
    finally:
        tensor.release()
    return digest.hexdigest()


def _head(piece: Piece, n: int) -> Piece:
    return Repeat(piece.value, n) if isinstance(piece, Repeat) else piece[:n]


def _tail(piece: Piece, n: int) -> Piece:
    return Repeat(piece.value, piece.count - n) if isinstance(piece, Repeat) else piece[n:]


def _dense(piece: Piece) -> np.ndarray:
    """A piece as an array (a run as a zero-stride view: no copy)."""
    if isinstance(piece, Repeat):
        return np.broadcast_to(piece.value.reshape(-1)[:1], (piece.count,))
    return piece


def _aligned_runs(
    xs: Iterable[Piece], ys: Iterable[Piece], what: str
) -> Iterator[tuple[Piece, Piece]]:
    """Equal-length pieces of two flat streams holding the same number of elements; two
    runs side by side stay runs (however long), a run beside values is cut to their length."""
    it_x, it_y = iter(xs), iter(ys)
    x = next(it_x, None)
    y = next(it_y, None)
    while x is not None and y is not None:
        if x.size == 0:
            x = next(it_x, None)
            continue
        if y.size == 0:
            y = next(it_y, None)
            continue
        n = min(x.size, y.size)
        yield _head(x, n), _head(y, n)
        x = _tail(x, n) if x.size > n else next(it_x, None)
        y = _tail(y, n) if y.size > n else next(it_y, None)
    if x is not None or y is not None:
        raise TensorDataError(f"{what}: the two tensors gave different numbers of values")


def _aligned(
    xs: Iterable[np.ndarray], ys: Iterable[np.ndarray], what: str
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Equal-length pieces of two flat streams of arrays holding as many elements."""
    for x, y in _aligned_runs(xs, ys, what):
        yield _dense(x), _dense(y)


def _blocks(stream: ValueStream) -> Iterator[np.ndarray]:
    for _, block in stream.blocks():
        yield np.asarray(stream.widen(block), dtype=np.float64)


def _runs(stream: ValueStream) -> Iterator[Piece]:
    """As :func:`_blocks`, a long repeat kept whole (widened once)."""
    for _, block in stream.blocks_or_repeats():
        if isinstance(block, Repeat):
            yield Repeat(np.asarray(stream.widen(block.value), dtype=np.float64), block.count)
        else:
            yield np.asarray(stream.widen(block), dtype=np.float64)


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _raw(values: np.ndarray) -> np.ndarray:
    """The bits of numeric values as unsigned integers of the same width (NaN == NaN)."""
    values = np.ascontiguousarray(values)
    size = values.dtype.itemsize
    return values.view(_UNSIGNED.get(size, np.uint64 if size % 8 == 0 else np.uint8))


def _same_bytes(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal byte arrays, compared 8 bytes at a time (memoryview ``==`` goes byte by byte
    in Python's own loop: 80× slower)."""
    whole = x.size - x.size % 8
    return bool(
        np.array_equal(x[:whole].view(np.uint64), y[:whole].view(np.uint64))
        and np.array_equal(x[whole:], y[whole:])
    )


#: Bytes per piece of the stored-bytes comparison: two buffers this size, reused.
_BYTES_CHUNK = 1 << 22


def _bytes_equal(a: Tensor, b: Tensor) -> bool:
    """Whether the two tensors (same dtype and shape) hold the same bits: their stored bytes
    read into two reused buffers and compared with memcmp where both are stored as bytes,
    else their decoded values chunk by chunk."""
    # Sized to the tensors (a page at least): two 4 MB buffers per pair of 256-byte weights
    # cost an mmap and munmap each (10 µs) whenever the allocator maps blocks that large.
    size = min(_BYTES_CHUNK, max(a.nbytes, b.nbytes, 4096))
    buffer_a = np.empty(size, np.uint8)
    buffer_b = np.empty(size, np.uint8)
    pieces_a, pieces_b = a.iter_stored_bytes(buffer_a), b.iter_stored_bytes(buffer_b)
    if pieces_a is not None and pieces_b is not None:
        # Both stored as bytes: the same length (dtype and shape agree), cut the same way,
        # except memory views that come whole: realign as the value pieces are.
        xs = (np.frombuffer(p, np.uint8) for p in pieces_a)
        ys = (np.frombuffer(p, np.uint8) for p in pieces_b)
        return all(_same_bytes(x, y) for x, y in _aligned(xs, ys, f"tensor {b.name!r}"))
    what = f"tensor {b.name!r}"
    for x, y in _aligned_runs(_pieces(a), _pieces(b), what):
        if isinstance(x, Repeat) and isinstance(y, Repeat):  # two fills: one value each
            x, y = x.value.reshape(-1)[:1], y.value.reshape(-1)[:1]
        if not np.array_equal(_raw(_dense(x)), _raw(_dense(y))):
            return False
    return True


@dataclass
class _Totals:
    max_abs: float = 0.0
    max_rel: float = 0.0
    sum_abs: float = 0.0
    dot: float = 0.0
    norm_a: float = 0.0
    norm_b: float = 0.0
    differing: int = 0
    count: int = 0

    def add(self, a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> None:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            d = np.abs(b - a)
            top = d.max() if d.size else 0.0
            if not math.isfinite(top):  # NaN or infinity on a side: the careful way
                self._add_special(a, b, d, atol, rtol)
                return
            abs_a = np.abs(a)
            limit = atol + rtol * abs_a if rtol else atol
            self.differing += int(np.count_nonzero(d > limit))
            self.max_abs = max(self.max_abs, float(top))
            if top > 0:  # 0 / 0 is NaN: fmax skips it; x / 0 is inf, as it should be
                self.max_rel = max(self.max_rel, float(np.fmax.reduce(d / abs_a)))
            self.sum_abs += float(d.sum())
            self._dots(a, b)
        self.count += a.size

    def add_repeat(
        self, a: np.ndarray, b: np.ndarray, count: int, atol: float, rtol: float
    ) -> None:
        """``count`` pairs all equal to the one-element ``a`` and ``b``: constant time."""
        one = _Totals()
        one.add(a.reshape(-1)[:1], b.reshape(-1)[:1], atol, rtol)
        self.differing += one.differing * count
        self.max_abs = max(self.max_abs, one.max_abs)
        self.max_rel = max(self.max_rel, one.max_rel)
        self.sum_abs += one.sum_abs * count
        self.dot += one.dot * count
        self.norm_a += one.norm_a * count
        self.norm_b += one.norm_b * count
        self.count += count

    def add_piece(self, a: Piece, b: Piece, atol: float, rtol: float) -> None:
        if isinstance(a, Repeat) and isinstance(b, Repeat):
            self.add_repeat(a.value, b.value, a.count, atol, rtol)
        else:
            self.add(_dense(a), _dense(b), atol, rtol)

    def _add_special(
        self, a: np.ndarray, b: np.ndarray, d: np.ndarray, atol: float, rtol: float
    ) -> None:
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        d[same] = 0.0
        d[np.isnan(d)] = np.inf  # one side NaN, or inf - inf
        abs_a = np.abs(a)
        self.differing += int(np.count_nonzero(~same & ~(d <= atol + rtol * abs_a)))
        self.max_abs = max(self.max_abs, float(d.max()))
        rel = d / abs_a
        rel[d == 0] = 0.0
        rel[np.isnan(rel)] = np.inf
        self.max_rel = max(self.max_rel, float(rel.max()))
        self.sum_abs += float(d.sum())
        finite = np.isfinite(a) & np.isfinite(b)
        self._dots(a[finite], b[finite])
        self.count += a.size

    def _dots(self, a: np.ndarray, b: np.ndarray) -> None:
        # einsum, not BLAS: a BLAS dot may spin up threads, slow on a busy machine.
        self.dot += float(np.einsum("i,i->", a, b))
        self.norm_a += float(np.einsum("i,i->", a, a))
        self.norm_b += float(np.einsum("i,i->", b, b))

    @property
    def cosine(self) -> float:
        if self.norm_a == 0.0 or self.norm_b == 0.0:
            return 1.0 if self.norm_a == self.norm_b else 0.0
        return self.dot / math.sqrt(self.norm_a * self.norm_b)


def value_shape(
    tensor: Tensor, dq: Dequantizer | None, layout: tuple[int, ...] | None = None
) -> tuple[int, ...]:
    """The shape of the values compared: dequantized, then transposed by ``layout``."""
    shape = getattr(dq, "output_shape", None)
    found = tuple(shape) if shape is not None else tuple(tensor.shape)
    if layout is not None and sorted(layout) == list(range(len(found))):
        return tuple(found[d] for d in layout)
    return found


#: Values at most of a tensor compared in another layout (read whole to be transposed).
_MAX_RELAID = 1 << 26


def _values(tensor: Tensor, dq: Dequantizer | None, layout: tuple[int, ...] | None) -> ValueStream:
    """The values compared: dequantized by ``dq``, then (small tensors, read whole)
    transposed by ``layout`` into the other side's layout (a quantizer's LSTM weights)."""
    stream = tensor_values(tensor, dq)
    if layout is None:
        return stream
    shape = value_shape(tensor, dq)
    if sorted(layout) != list(range(len(shape))):
        raise TensorDataError(f"tensor {tensor.name!r}: layout {layout} does not fit {shape}")
    if stream.count > _MAX_RELAID:
        raise TensorDataError(
            f"tensor {tensor.name!r}: {stream.count} values are too many to compare transposed"
        )

    def blocks() -> Iterator[tuple[int, np.ndarray]]:
        parts = [x.reshape(-1) for x in _blocks(stream)]
        whole = np.concatenate(parts) if parts else np.zeros(0)
        yield 0, whole.reshape(shape).transpose(layout).reshape(-1)

    return ValueStream(blocks, stream.count, True)


def compare_tensors(
    a: Tensor,
    b: Tensor,
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    dq_a: Dequantizer | None = None,
    dq_b: Dequantizer | None = None,
    values: bool = True,
    compared: str = "",
    layout_a: tuple[int, ...] | None = None,
    layout_b: tuple[int, ...] | None = None,
) -> TensorChange | None:
    """How ``b`` differs from ``a``; None when equal (same dtype and shape, and values within
    ``atol + rtol·|a|`` element-wise). A reading error is reported, never raised.
    ``compared`` (how a quantized side is read) is passed on to the change; a side with a
    ``layout`` is compared transposed by it."""

    def change(**fields: object) -> TensorChange:
        base: dict[str, object] = dict(
            a=a.name, b=b.name, dtype_a=a.dtype_name, dtype_b=b.dtype_name,
            shape_a=tuple(a.shape), shape_b=tuple(b.shape), bit_identical=False,
            max_abs=None, max_rel=None, mean_abs=None, cosine=None, differing=None, error=None,
            compared=compared,
        )  # fmt: skip
        base.update(fields)
        return TensorChange(**base)  # type: ignore[arg-type]

    same_type = a.dtype_name == b.dtype_name and dq_a is None and dq_b is None
    shape_a, shape_b = value_shape(a, dq_a, layout_a), value_shape(b, dq_b, layout_b)
    if shape_a != shape_b:
        return change(error=f"shapes differ: {list(shape_a)} vs {list(shape_b)}")
    if not values:
        return None if same_type else change()
    numeric = a.dtype_info.is_numeric and b.dtype_info.is_numeric
    try:
        if not numeric:  # strings: equal or not, element by element
            differing = _count_unequal(a, b)
            return None if same_type and differing == 0 else change(differing=differing)
        if same_type and _bytes_equal(a, b):
            return None
        totals = _Totals()
        what = f"tensor {b.name!r}"
        stream_a, stream_b = _values(a, dq_a, layout_a), _values(b, dq_b, layout_b)
        for x, y in _aligned_runs(_runs(stream_a), _runs(stream_b), what):
            totals.add_piece(x, y, atol, rtol)
    except (ExplorerError, OSError, ValueError, MemoryError) as exc:
        return change(error=f"could not compare: {exc}")
    finally:
        a.release()
        b.release()
    if same_type and totals.differing == 0:
        return None  # within the tolerances
    return change(
        max_abs=totals.max_abs,
        max_rel=totals.max_rel,
        mean_abs=totals.sum_abs / totals.count if totals.count else 0.0,
        cosine=totals.cosine,
        differing=totals.differing,
    )


def _count_unequal(a: Tensor, b: Tensor) -> int:
    """Elements that differ between two tensors of strings (or other non-numbers)."""
    count = 0
    for x, y in _aligned_runs(_pieces(a), _pieces(b), f"tensor {b.name!r}"):
        if isinstance(x, Repeat) and isinstance(y, Repeat):  # two fills: one comparison
            count += x.count * int(np.count_nonzero(_dense(_head(x, 1)) != _dense(_head(y, 1))))
        else:
            count += int(np.count_nonzero(_dense(x) != _dense(y)))
    return count


def difference_stream(
    a: Tensor,
    b: Tensor,
    dq_a: Dequantizer | None,
    dq_b: Dequantizer | None,
    layout_a: tuple[int, ...] | None = None,
    layout_b: tuple[int, ...] | None = None,
) -> ValueStream:
    """The element-wise ``b - a`` (float64) as a stream statistics and histograms read."""
    stream_a, stream_b = _values(a, dq_a, layout_a), _values(b, dq_b, layout_b)

    what = f"tensor {b.name!r}"

    def blocks() -> Iterator[tuple[int, np.ndarray]]:
        offset = 0
        for x, y in _aligned(_blocks(stream_a), _blocks(stream_b), what):
            yield offset, y - x
            offset += x.size

    def runs() -> Iterator[tuple[int, np.ndarray | Repeat]]:
        offset = 0
        for x, y in _aligned_runs(_runs(stream_a), _runs(stream_b), what):
            if isinstance(x, Repeat) and isinstance(y, Repeat):  # a fill minus a fill
                yield offset, Repeat(_dense(_head(y, 1)) - _dense(_head(x, 1)), x.count)
            else:
                yield offset, _dense(y) - _dense(x)
            offset += x.size

    with_runs = stream_a.runs is not None or stream_b.runs is not None
    return ValueStream(blocks, stream_a.count, True, runs=runs if with_runs else None)
