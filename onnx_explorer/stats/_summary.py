"""Summary statistics of a stream of value blocks, in one pass (see :mod:`onnx_explorer.stats`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._results import TensorStats
from ._values import (
    BLOCK_ELEMENTS,
    CHUNK_ELEMENTS,
    Dequantizer,
    Repeat,
    ValueSource,
    ValueStream,
    array_values,
    tensor_values,
)

#: Values kept for percentiles: all of them up to this many, else a uniform sample.
SAMPLE_SIZE = 1 << 18

_PERCENTILES = (1.0, 50.0, 99.0)


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

    def add_repeat(self, value: np.ndarray, count: int) -> None:
        """``count`` elements equal to the one widened value: the same result as
        :meth:`add` of them all, in constant time."""
        if count <= 0:
            return
        start, self.seen = self.seen, self.seen + count
        v = value.reshape(-1)[0]
        if self.is_float and not math.isfinite(v):
            if math.isnan(v):
                self.nan += count
            else:
                self.inf += count
            return
        x = float(v) if self.is_float else int(v)
        self.lo = x if self.lo is None else min(self.lo, x)
        self.hi = x if self.hi is None else max(self.hi, x)
        if v == 0:
            self.zeros += count
        f = float(np.float64(v))
        k = count if self.keep_all else self._share(start, count)
        if k > 0:
            self.samples.append(np.full(k, f))
        # Chan's merge with a part whose mean is f and whose M2 is 0.
        total = self.n + count
        delta = f - self.mean
        self.mean += delta * count / total
        self.m2 += delta * delta * self.n * count / total
        self.n = total

    def _share(self, start: int, size: int) -> int:
        """The sample's share of the elements ``start .. start + size`` (by position)."""
        return (self.sample_size * (start + size)) // self.total - (
            self.sample_size * start
        ) // self.total

    def _finite(self, v: np.ndarray) -> np.ndarray:
        nan = np.isnan(v)
        self.nan += int(np.count_nonzero(nan))
        self.inf += int(np.count_nonzero(np.isinf(v)))
        finite: np.ndarray = v[np.isfinite(v)]
        return finite

    def _sample(self, f: np.ndarray, start: int, size: int) -> None:
        if self.keep_all:
            self.samples.append(f.copy())
            return
        k = self._share(start, size)  # this block's share, from its position
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


def summarize(values: ValueStream, sample_size: int = SAMPLE_SIZE) -> TensorStats:
    """Statistics of a stream of value blocks (one pass)."""
    summary = _Summary(values.count, values.is_float, sample_size)
    widen = values.widen
    for _, block in values.blocks_or_repeats():
        if isinstance(block, Repeat):
            summary.add_repeat(widen(block.value), block.count)
        else:
            summary.add(widen(block))
    return summary.result()


def tensor_stats(
    tensor: ValueSource,
    *,
    dequantize: Dequantizer | None = None,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> TensorStats:
    """Statistics of a tensor's values in one streaming pass (see the module docstring).

    ``dequantize``: a :class:`onnx_explorer.weights._quant.Dequantization` (from
    :func:`onnx_explorer.weights._quant.find_dequantization`) to summarise the real values
    ``(q - zero_point) * scale`` instead of the stored integers.
    """
    return summarize(tensor_values(tensor, dequantize, chunk_elements))


def array_stats(values: Any) -> TensorStats:
    """The same statistics for an array already in memory."""
    return summarize(array_values(values))


__all__ = ["SAMPLE_SIZE", "array_stats", "summarize", "tensor_stats"]
