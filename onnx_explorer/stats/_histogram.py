"""Histograms of a stream of value blocks (see :mod:`onnx_explorer.stats` for the bins)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._results import Histogram, TensorStats
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


# -- histograms -----------------------------------------------------------------------------
def _finite_range(values: ValueStream) -> tuple[Any, Any]:
    """(min, max) of the finite values, or (None, None) when there are none."""
    lo: Any = None
    hi: Any = None
    widen = values.widen
    for _, block in values.blocks_or_repeats():
        v = widen(block.value if isinstance(block, Repeat) else block)
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
        last = first + count * width
        if last - first == count * width:
            return first, last, count
        # Past 2**53 float64 has no half-integer edges (2**62 - 0.5 is 2**62): bin as floats.
        lo, hi = float(lo), float(hi)
    if lo == hi:
        return *_widened(lo), bins
    return float(lo), float(hi), bins


def _widened(value: float) -> tuple[float, float]:
    """A range around a single value: ±0.5 as numpy does, wider where 0.5 is below the
    value's precision (±0.5 around 1e30 is no range at all: a division by zero)."""
    half = max(0.5, abs(value) * 2.0**-20)
    return value - half, value + half


def histogram(
    values: ValueStream,
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
            lo, hi = _widened(lo)
    if not math.isfinite(bins / (hi - lo)):  # a subnormal width: 1/width overflows
        lo, hi = _widened((lo + hi) / 2)
    # Past float64's range hi - lo overflows; bin on halved values there (exact: a power of 2).
    scale = 1.0 if math.isfinite(hi - lo) else 0.5
    counts = np.zeros(bins, np.int64)
    under = over = nan = 0
    norm = bins / (hi * scale - lo * scale)
    f64 = np.empty(BLOCK_ELEMENTS, np.float64)
    idx = np.empty(BLOCK_ELEMENTS, np.intp)
    widen = values.widen
    for _, block in values.blocks_or_repeats():
        # A repeat is binned once, then counted ``weight`` times.
        weight = block.count if isinstance(block, Repeat) else 1
        v = widen(block.value if isinstance(block, Repeat) else block)
        n = v.size
        if n == 0 or weight == 0:
            continue
        if values.is_float and not (math.isfinite(v.min()) and math.isfinite(v.max())):
            nans = np.isnan(v)
            nan += int(np.count_nonzero(nans)) * weight
            if auto:  # the range holds every finite value: only ±inf fall outside
                under += int(np.count_nonzero(v == -np.inf)) * weight
                over += int(np.count_nonzero(v == np.inf)) * weight
            v = v[~nans]
            n = v.size
        if n > f64.size:
            f64, idx = np.empty(n, np.float64), np.empty(n, np.intp)
        f = f64[:n]
        if scale == 1.0:
            np.subtract(v, lo, out=f, dtype=np.float64)
        else:
            np.multiply(v, scale, out=f, dtype=np.float64)
            f -= lo * scale
        if not auto:  # outside the range: counted apart, and taken out of the end bins below
            # The sign of a float difference is exact; v is compared in float64, not its type.
            under += int(np.count_nonzero(f < 0)) * weight
            over += int(np.count_nonzero(v > np.float64(hi))) * weight
        f *= norm
        np.clip(f, 0, bins - 1, out=f)
        i = idx[:n]
        np.copyto(i, f, casting="unsafe")  # truncation = floor, as f >= 0
        counts += np.bincount(i, minlength=bins) * weight
    counts[0] -= under
    counts[-1] -= over
    edges = np.linspace(lo * scale, hi * scale, bins + 1) / scale  # no overflow in between
    return Histogram(counts, edges, bool(log), under, over, nan)


def tensor_histogram(
    tensor: ValueSource,
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


__all__ = ["array_histogram", "histogram", "tensor_histogram"]
