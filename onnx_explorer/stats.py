"""Streaming statistics and histograms of a tensor's values (pure numpy, every numeric dtype).

Values are read chunk by chunk (:meth:`Tensor.iter_chunks`) and reduced in small
blocks, so the extra memory stays a few megabytes whatever the tensor's size:

- a chunk of at most :data:`CHUNK_ELEMENTS` decoded elements (8 MB for 64-bit types;
  mapped data is a view whose pages are dropped once read, see ``tensors.py``);
- float64 work buffers of :data:`BLOCK_ELEMENTS` elements (512 KB, cache-sized);
- the percentile sample, at most :data:`SAMPLE_SIZE` float64 values (2 MB).

Definitions (the same for every dtype):

- ``min``, ``max``, ``mean``, ``std`` (population, ``ddof=0``), ``abs_max`` and the
  percentiles are over the *finite* values; ``nan`` and ``inf`` count the others.
  Sums are float64 per block, merged with Chan's parallel update, so the mean and
  std are as accurate as numpy's float64 two-pass result.
- ``zeros`` is the fraction of all elements equal to zero.
- ``p1``, ``p50``, ``p99`` (linear interpolation, as ``numpy.percentile``) are exact
  for tensors of up to :data:`SAMPLE_SIZE` elements; above that they come from a
  uniform random sample of that many values (fixed seed, so reproducible). The rank
  error of such an estimate is about ±0.1 percentage point at the median and ±0.02
  at p1/p99 (one standard deviation).
- Integer tensors keep exact integer ``min``/``max``/``abs_max`` (``abs`` of int8
  ``-128`` is ``128``); int64/uint64 values lose precision in the float64 mean/std.
- float16, bfloat16, float8, float6 and float4 are widened to float32; int4/uint4 and
  int2/uint2 (stored packed, unpacked by the tensor) to int8/uint8; bool counts as 0/1.
- string and complex tensors have no statistics: :class:`TensorDataError`.

Histograms use float64 bin arithmetic: ``counts[i]`` holds the values in
``[edges[i], edges[i+1])``, the last bin closed, up to one float64 rounding at an
edge. With ``range=None`` the range is the finite min/max (a first pass) and
integer tensors get integer-aligned bins.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import ml_dtypes
import numpy as np

from .errors import TensorDataError

if TYPE_CHECKING:
    from .tensors import Tensor

#: Elements decoded (or mapped) per chunk when streaming a tensor.
CHUNK_ELEMENTS = 1 << 20
#: Elements per numpy step: float64 work buffers of 512 KB stay in the CPU cache.
BLOCK_ELEMENTS = 1 << 16
#: Values kept for percentiles: all of them up to this many, else a uniform sample.
SAMPLE_SIZE = 1 << 18
#: Largest finite float16 value.
FLOAT16_MAX = 65504.0

_PERCENTILES = (1.0, 50.0, 99.0)
_NATIVE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_SMALL_INTS = {
    np.dtype(ml_dtypes.int4): np.dtype(np.int8),
    np.dtype(ml_dtypes.uint4): np.dtype(np.uint8),
    np.dtype(ml_dtypes.int2): np.dtype(np.int8),
    np.dtype(ml_dtypes.uint2): np.dtype(np.uint8),
}


class Dequantizer(Protocol):
    """What statistics need from a dequantization (see :mod:`onnx_explorer.quant`)."""

    def apply(self, values: np.ndarray, offset: int) -> np.ndarray:
        """Real values (float32) of the stored elements at flat positions ``offset``..."""
        ...

    def output_count(self, count: int) -> int:
        """How many real values ``count`` stored elements give."""
        ...


# -- results -------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorStats:
    """Summary of a tensor's values; see the module docstring for the exact definitions.

    Statistics that do not exist (no finite value) are ``None``.
    """

    count: int  # all elements
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    abs_max: float | None
    zeros: float  # fraction of all elements equal to zero
    nan: int
    inf: int
    p1: float | None
    p50: float | None
    p99: float | None
    exact_percentiles: bool = True  # False: estimated from a sample of SAMPLE_SIZE values
    is_float: bool = True  # False for integer and bool values (min/max are ints)

    @property
    def finite(self) -> int:
        """Number of finite values (those the statistics are computed over)."""
        return self.count - self.nan - self.inf

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class Histogram:
    """Counts of values per bin: ``counts[i]`` is the number in ``[edges[i], edges[i+1])``.

    Values outside the edges are counted in ``underflow`` / ``overflow`` (``-inf`` /
    ``+inf`` too), NaNs in ``nan``; ``log`` asks plots for a logarithmic count axis.
    """

    counts: np.ndarray  # int64, one per bin
    edges: np.ndarray  # float64, len(counts) + 1
    log: bool = False
    underflow: int = 0
    overflow: int = 0
    nan: int = 0

    @property
    def bins(self) -> int:
        return int(self.counts.size)

    @property
    def total(self) -> int:
        """Every value seen: in bins, outside them, and NaN."""
        return int(self.counts.sum()) + self.underflow + self.overflow + self.nan

    @property
    def centers(self) -> np.ndarray:
        return (self.edges[:-1] + self.edges[1:]) / 2

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": self.counts.tolist(),
            "edges": self.edges.tolist(),
            "log": self.log,
            "underflow": self.underflow,
            "overflow": self.overflow,
            "nan": self.nan,
        }


# -- reading values block by block -----------------------------------------------------
@dataclass(frozen=True)
class _Values:
    """A restartable stream of value blocks: ``blocks()`` yields (flat offset, array)."""

    blocks: Callable[[], Iterator[tuple[int, np.ndarray]]]
    count: int  # values the stream yields in all
    is_float: bool
    widen: Callable[[np.ndarray], np.ndarray] = field(default=lambda a: a)


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
        ml_dtypes.finfo(dt)  # float16, bfloat16, float8, float6, float4
    except (TypeError, ValueError):
        raise TensorDataError(f"{what} holds {dt} values: statistics need real numbers") from None
    return True, lambda a: a.astype(np.float32)


def _split(chunks: Iterable[np.ndarray], block: int) -> Iterator[tuple[int, np.ndarray]]:
    offset = 0
    for chunk in chunks:
        flat = chunk.reshape(-1)
        for start in range(0, flat.size, block):
            yield offset + start, flat[start : start + block]
        offset += flat.size


def tensor_values(
    tensor: Tensor,
    dequantize: Dequantizer | None = None,
    chunk_elements: int = CHUNK_ELEMENTS,
    block: int = BLOCK_ELEMENTS,
) -> _Values:
    """A tensor's values (dequantized when asked) as a stream of blocks."""
    if not tensor.dtype_info.is_numeric:
        raise TensorDataError(
            f"tensor {tensor.name!r} holds {tensor.dtype_name} values: statistics need numbers"
        )
    if dequantize is not None:
        dq = dequantize

        def dequantized() -> Iterator[tuple[int, np.ndarray]]:
            out = 0
            for offset, values in _split(tensor.iter_chunks(chunk_elements), block):
                real = dq.apply(values, offset)
                yield out, real
                out += real.size

        return _Values(dequantized, dq.output_count(tensor.size), True)
    is_float, widen = _widener(tensor.dtype, f"tensor {tensor.name!r}")
    return _Values(
        lambda: _split(tensor.iter_chunks(chunk_elements), block), tensor.size, is_float, widen
    )


def array_values(values: Any, block: int = BLOCK_ELEMENTS) -> _Values:
    """An in-memory array as a stream of blocks."""
    arr = np.asarray(values)
    is_float, widen = _widener(arr.dtype, "the array")
    return _Values(lambda: _split([arr], block), arr.size, is_float, widen)


# -- statistics ---------------------------------------------------------------------------
class _Summary:
    """Running statistics over blocks of widened values."""

    def __init__(self, total: int, is_float: bool, sample_size: int, seed: int = 0) -> None:
        self.total = max(total, 1)
        self.is_float = is_float
        self.sample_size = sample_size
        self.keep_all = total <= sample_size
        self.rng = np.random.default_rng(seed)
        self.seen = 0  # elements so far, finite or not
        self.n = 0  # finite values so far
        self.mean = 0.0
        self.m2 = 0.0
        self.lo: Any = None
        self.hi: Any = None
        self.zeros = self.nan = self.inf = 0
        self.samples: list[np.ndarray] = []
        self._f64 = np.empty(BLOCK_ELEMENTS, np.float64)
        self._bool = np.empty(BLOCK_ELEMENTS, np.bool_)

    def add(self, v: np.ndarray) -> None:
        size = v.size
        if size == 0:
            return
        start, self.seen = self.seen, self.seen + size
        lo, hi = v.min(), v.max()
        if self.is_float and not (math.isfinite(lo) and math.isfinite(hi)):
            v = self._finite(v)
            if v.size == 0:
                return
            lo, hi = v.min(), v.max()
        lo, hi = (float(lo), float(hi)) if self.is_float else (int(lo), int(hi))
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)
        n = v.size
        if n > self._f64.size:
            self._f64 = np.empty(n, np.float64)
            self._bool = np.empty(n, np.bool_)
        self.zeros += int(np.count_nonzero(np.equal(v, 0, out=self._bool[:n])))
        f = self._f64[:n]
        np.copyto(f, v, casting="unsafe")
        self._sample(f, start, size)
        block_mean = float(f.sum()) / n
        f -= block_mean
        # Not np.dot: BLAS threads on small blocks stall badly when the cores are busy.
        block_m2 = float(np.square(f, out=f).sum())
        # Chan et al.: merge (n, mean, M2) of two parts without cancellation.
        total = self.n + n
        delta = block_mean - self.mean
        self.mean += delta * n / total
        self.m2 += block_m2 + delta * delta * self.n * n / total
        self.n = total

    def _finite(self, v: np.ndarray) -> np.ndarray:
        nan = np.isnan(v)
        self.nan += int(np.count_nonzero(nan))
        self.inf += int(np.count_nonzero(np.isinf(v)))
        return v[np.isfinite(v)]

    def _sample(self, f: np.ndarray, start: int, size: int) -> None:
        if self.keep_all:
            self.samples.append(f.copy())
            return
        # This block's share of the sample, from its position among all elements.
        k = (self.sample_size * (start + size)) // self.total - (
            self.sample_size * start
        ) // self.total
        if k > 0:
            self.samples.append(f[self.rng.integers(0, f.size, k)])

    def result(self) -> TensorStats:
        if self.n == 0:
            return TensorStats(
                self.seen, None, None, None, None, None, 0.0, self.nan, self.inf,
                None, None, None, self.keep_all, self.is_float,
            )  # fmt: skip
        sample = np.concatenate(self.samples) if self.samples else np.empty(0)
        p1 = p50 = p99 = None
        if sample.size:
            p1, p50, p99 = (float(p) for p in np.percentile(sample, _PERCENTILES))
        return TensorStats(
            count=self.seen,
            min=self.lo,
            max=self.hi,
            mean=self.mean,
            std=math.sqrt(max(self.m2, 0.0) / self.n),
            abs_max=max(abs(self.lo), abs(self.hi)),
            zeros=self.zeros / self.seen,
            nan=self.nan,
            inf=self.inf,
            p1=p1,
            p50=p50,
            p99=p99,
            exact_percentiles=self.keep_all,
            is_float=self.is_float,
        )


def summarize(values: _Values, sample_size: int = SAMPLE_SIZE) -> TensorStats:
    """Statistics of a stream of value blocks (one pass)."""
    summary = _Summary(values.count, values.is_float, sample_size)
    widen = values.widen
    for _, block in values.blocks():
        summary.add(widen(block))
    return summary.result()


def tensor_stats(
    tensor: Tensor,
    *,
    dequantize: Dequantizer | None = None,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> TensorStats:
    """Statistics of a tensor's values in one streaming pass (see the module docstring).

    ``dequantize``: a :class:`onnx_explorer.quant.Dequantization` (from
    :func:`onnx_explorer.quant.find_dequantization`) to summarise the real values
    ``(q - zero_point) * scale`` instead of the stored integers.
    """
    return summarize(tensor_values(tensor, dequantize, chunk_elements))


def array_stats(values: Any) -> TensorStats:
    """The same statistics for an array already in memory."""
    return summarize(array_values(values))


# -- histograms -----------------------------------------------------------------------------
def _finite_range(values: _Values) -> tuple[Any, Any]:
    """(min, max) of the finite values, or (None, None) when there are none."""
    lo: Any = None
    hi: Any = None
    widen = values.widen
    for _, block in values.blocks():
        v = widen(block)
        if v.size == 0:
            continue
        a, b = v.min(), v.max()
        if values.is_float and not (math.isfinite(a) and math.isfinite(b)):
            v = v[np.isfinite(v)]
            if v.size == 0:
                continue
            a, b = v.min(), v.max()
        a, b = (float(a), float(b)) if values.is_float else (int(a), int(b))
        lo = a if lo is None else min(lo, a)
        hi = b if hi is None else max(hi, b)
    return lo, hi


def _auto_edges(lo: Any, hi: Any, bins: int, is_float: bool) -> tuple[float, float, int]:
    if lo is None:
        return 0.0, 1.0, bins  # as numpy does for empty input
    if not is_float:
        # Integer-aligned bins: each holds the same number of integers (no aliasing).
        span = int(hi) - int(lo) + 1
        width = -(-span // bins)
        count = -(-span // width)
        first = float(lo) - 0.5
        return first, first + count * width, count
    if lo == hi:
        return lo - 0.5, hi + 0.5, bins
    return float(lo), float(hi), bins


def histogram(
    values: _Values,
    bins: int = 100,
    range: tuple[float, float] | None = None,
    *,
    log: bool = False,
    stats: TensorStats | None = None,
) -> Histogram:
    """Histogram of a stream of value blocks (two passes with ``range=None``, else one)."""
    if not isinstance(bins, int | np.integer) or bins < 1:
        raise ValueError(f"bins must be a positive integer, not {bins!r}")
    bins = int(bins)
    auto = range is None
    if range is None:
        lo_v, hi_v = (stats.min, stats.max) if stats is not None else _finite_range(values)
        lo, hi, bins = _auto_edges(lo_v, hi_v, bins, values.is_float)
    else:
        lo, hi = float(range[0]), float(range[1])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"histogram range {range!r} must be finite")
        if lo > hi:
            raise ValueError(
                f"histogram range {range!r}: the maximum must not be below the minimum"
            )
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
    counts = np.zeros(bins, np.int64)
    under = over = nan = 0
    norm = bins / (hi - lo)
    f64 = np.empty(BLOCK_ELEMENTS, np.float64)
    idx = np.empty(BLOCK_ELEMENTS, np.intp)
    widen = values.widen
    for _, block in values.blocks():
        v = widen(block)
        n = v.size
        if n == 0:
            continue
        if values.is_float and not (math.isfinite(v.min()) and math.isfinite(v.max())):
            nans = np.isnan(v)
            nan += int(np.count_nonzero(nans))
            if auto:  # the range holds every finite value: only ±inf fall outside
                under += int(np.count_nonzero(v == -np.inf))
                over += int(np.count_nonzero(v == np.inf))
            v = v[~nans]
            n = v.size
        if n > f64.size:
            f64, idx = np.empty(n, np.float64), np.empty(n, np.intp)
        f = f64[:n]
        np.subtract(v, lo, out=f, dtype=np.float64)
        if not auto:  # outside the range: counted apart, and taken out of the end bins below
            under += int(np.count_nonzero(f < 0))  # the sign of a float difference is exact
            over += int(np.count_nonzero(v > np.float64(hi)))  # compared in float64, not v's type
        f *= norm
        np.clip(f, 0, bins - 1, out=f)
        i = idx[:n]
        np.copyto(i, f, casting="unsafe")  # truncation = floor, as f >= 0
        counts += np.bincount(i, minlength=bins)
    counts[0] -= under
    counts[-1] -= over
    edges = np.linspace(lo, hi, bins + 1)
    return Histogram(counts, edges, bool(log), under, over, nan)


def tensor_histogram(
    tensor: Tensor,
    bins: int = 100,
    range: tuple[float, float] | None = None,
    *,
    log: bool = False,
    dequantize: Dequantizer | None = None,
    stats: TensorStats | None = None,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> Histogram:
    """Histogram of a tensor's values, streamed.

    ``range=None`` bins the finite values between their min and max (a first pass
    finds them, skipped when ``stats`` of the same values is given); ``log`` only
    marks the histogram for a logarithmic count axis. ``dequantize`` as in
    :func:`tensor_stats`.
    """
    values = tensor_values(tensor, dequantize, chunk_elements)
    return histogram(values, bins, range, log=log, stats=stats)


def array_histogram(
    values: Any,
    bins: int = 100,
    range: tuple[float, float] | None = None,
    *,
    log: bool = False,
) -> Histogram:
    """The same histogram for an array already in memory."""
    return histogram(array_values(values), bins, range, log=log)


__all__ = [
    "BLOCK_ELEMENTS",
    "CHUNK_ELEMENTS",
    "FLOAT16_MAX",
    "SAMPLE_SIZE",
    "Dequantizer",
    "Histogram",
    "TensorStats",
    "array_histogram",
    "array_stats",
    "histogram",
    "summarize",
    "tensor_histogram",
    "tensor_stats",
    "tensor_values",
]
