"""Statistics of one activation in a few vectorised passes, cheap enough to run on every
tensor of a capture-all run.

A capture-all run makes thousands of tensors; :func:`onnx_explorer.stats.summarize`
(float64 blocks, Chan's merge, a random sample of 2**14) costs several times
onnxruntime's own run on them. This path gives the same :class:`TensorStats` fields,
with the same definitions, from native-dtype reductions:

- min and max in the tensor's dtype (a NaN or Inf there sends the tensor to
  ``summarize``, which counts them, so the fast path only ever sees finite values);
- sum and sum of squares over chunks of ``CHUNK`` values, the chunks added in float64:
  float32 and float16 values summed in float32 (BLAS dots' SIMD accumulators), integers
  in float64: about 1e-7 relative on the mean and the variance. When the variance is
  small beside the mean (a cancellation that float32 cannot carry), or a float32 square
  could overflow or lose its precision below the normal range, the second moment is
  computed centred, in float64;
- zeros counted only when zero lies between min and max;
- percentiles from a sample of about ``SAMPLE_SIZE`` values (all the values below it,
  and then exact) at positions of a golden-ratio sequence: spread evenly over the tensor
  without a fixed stride, so the sample cannot alias with the channel and spatial sizes
  real layouts are made of. ``exact_percentiles`` says which.

Nothing is widened whole: an int8 or float16 activation is converted a chunk at a time,
so the extra memory stays a few hundred kilobytes whatever the tensor's size.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..stats import Histogram, TensorStats

#: Values sampled for a tensor's percentiles; the median of a 1,024-value sample is within
#: about ±1.6 percentage points of rank, p1 and p99 within about ±0.3.
SAMPLE_SIZE = 1 << 10
#: Values widened and summed at once (their partial sums are added in float64).
CHUNK = 1 << 16
#: A variance below this share of the mean square is computed again, centred, in float64.
CANCELLATION = 1e-2
#: Below this bound on the sum of squares, float32 sums cannot overflow (no np.errstate:
#: entering it costs more than the sums of a small tensor).
_FLOAT32_SAFE = 1e37
#: Below this largest square, float32 squares are subnormal or zero: precision is lost.
_FLOAT32_TINY = 1e-30
_PERCENTILES = (1.0, 50.0, 99.0)
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_FLOAT32, _FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)
_FAST_CHARS = frozenset("efd" + np.typecodes["AllInteger"])


def fast_path(value: np.ndarray) -> bool:
    """Whether :func:`activation_stats` can take this array (else: ``summarize``)."""
    # C fields (dtype comparisons cost ~1 µs); the kind too, as ml_dtypes' float8 types
    # reuse numpy's type codes
    dtype = value.dtype
    return value.size > 0 and dtype.kind in "iuf" and dtype.char in _FAST_CHARS


def activation_stats(value: np.ndarray) -> TensorStats | None:
    """The statistics of ``value``, or None when it holds a NaN or an Inf (or overflows
    float64): ``summarize`` then counts them and summarises the finite rest."""
    flat = value.reshape(-1)
    n = flat.size
    is_float = flat.dtype.kind == "f"
    lo, hi = flat.min(), flat.max()
    if is_float:
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        low, high = float(lo), float(hi)
    else:
        low, high = int(lo), int(hi)  # exact, even past 2**53
    # float16 sums overflow at 65,504: float32 (as float32 itself); integers float64
    wide = _FLOAT32 if flat.dtype.itemsize <= 4 and is_float else _FLOAT64
    big = max(abs(low), abs(high))
    if low == high:  # a constant (scalars, masks, fills): nothing to sum
        mean, variance = float(low), 0.0
    elif big * big * n < _FLOAT32_SAFE and (wide is _FLOAT64 or big * big >= _FLOAT32_TINY):
        total, squares = _sums(flat, wide)  # (no ** above: it raises on overflow)
        mean = total / n
        variance = squares / n - mean * mean
        if variance < CANCELLATION * (squares / n):
            mean, variance = _centred(flat)
    else:  # squares could overflow float32 (or lose float64's digits), or be subnormal
        mean, variance = _centred(flat)
    if not (math.isfinite(mean) and math.isfinite(variance)):
        return None
    if low == high:  # every value is low: its zeros and percentiles without a pass
        zeros, exact = (n if low == 0 else 0), n <= SAMPLE_SIZE
        p1 = p50 = p99 = float(low)
    else:
        zeros = _zeros(flat) if low <= 0 <= high else 0
        p1, p50, p99, exact = _percentiles(flat)
    return TensorStats(
        count=n,
        min=low,
        max=high,
        mean=mean,
        std=math.sqrt(max(variance, 0.0)),
        abs_max=big,
        zeros=zeros / n,
        nan=0,
        inf=0,
        p1=p1,
        p50=p50,
        p99=p99,
        exact_percentiles=exact,
        is_float=is_float,
    )


def _sums(flat: np.ndarray, wide: np.dtype) -> tuple[float, float]:
    """Sum and sum of squares; in ``wide`` within a chunk, float64 across.

    Two BLAS dots a chunk (``x·1`` and ``x·x``): their SIMD accumulators keep the error
    of a 64k float32 chunk near 1e-8 of the sum of magnitudes (einsum's, 2–3× slower,
    ~3e-7), and they run on the calling thread: OpenBLAS's level-1 dots do not start
    threads (CPU = wall time up to 8M values, and unchanged beside two busy cores)."""
    ones = _ones(wide)
    if flat.size <= CHUNK:  # most activations: no loop
        part = flat.astype(wide, copy=False)
        return float(np.vdot(part, ones[: part.size])), float(np.vdot(part, part))
    total = squares = 0.0
    for start in range(0, flat.size, CHUNK):
        part = flat[start : start + CHUNK].astype(wide, copy=False)
        total += float(np.vdot(part, ones[: part.size]))
        squares += float(np.vdot(part, part))
    return total, squares


@functools.lru_cache(maxsize=2)
def _ones(wide: np.dtype) -> np.ndarray:
    """``CHUNK`` ones of ``wide`` (float32 or float64), read-only: the other side of a sum."""
    ones = np.ones(CHUNK, wide)
    ones.flags.writeable = False
    return ones


def _centred(flat: np.ndarray) -> tuple[float, float]:
    """Mean and variance in float64, the second moment about the mean (no cancellation)."""
    n = flat.size
    mean = float(sum(float(flat[s : s + CHUNK].sum(dtype=np.float64)) for s in range(0, n, CHUNK)))
    mean /= n
    m2 = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, n, CHUNK):
            part = flat[start : start + CHUNK].astype(np.float64)
            part -= mean
            m2 += float(np.einsum("i,i->", part, part))
    return mean, m2 / n


def _zeros(flat: np.ndarray) -> int:
    """Elements equal to zero: count_nonzero of a bool mask is SIMD (of float32 values it
    is ~5× slower); the mask made a chunk at a time."""
    if flat.size <= CHUNK:
        return int(np.count_nonzero(flat == 0))
    return sum(int(np.count_nonzero(flat[s : s + CHUNK] == 0)) for s in range(0, flat.size, CHUNK))


def _percentiles(flat: np.ndarray) -> tuple[float, float, float, bool]:
    """p1, p50, p99 (numpy's linear interpolation) of the values or of a sample.

    Sorted whole (numpy's SIMD sort): ``np.partition`` at the six ranks needed was
    faster on random values but 2.3× slower on real activations (19 against 8 µs a
    1,024-value sample in the 20,000-node capture: their many equal values)."""
    n = flat.size
    exact = n <= SAMPLE_SIZE
    placed = np.sort(flat if exact else flat[_sample_positions(n)])
    found = []
    for below, above, t in _lerps(placed.size):
        a, b = float(placed[below]), float(placed[above])
        # numpy's _lerp: from the nearer end, so equal neighbours give that value exactly
        found.append(b - (b - a) * (1.0 - t) if t >= 0.5 else a + (b - a) * t)
    return found[0], found[1], found[2], exact


@functools.lru_cache(maxsize=256)
def _lerps(size: int) -> tuple[tuple[int, int, float], ...]:
    """Per percentile of ``_PERCENTILES`` in ``size`` sorted values: the rank below, the
    rank above and the fraction of the way between them (numpy's 'linear' method)."""
    last = size - 1
    found = []
    for p in _PERCENTILES:
        position = p / 100.0 * last
        below = int(position)
        found.append((below, min(below + 1, last), position - below))
    return tuple(found)


@functools.lru_cache(maxsize=256)  # a run has few distinct sizes (8 KB each)
def _sample_positions(n: int) -> np.ndarray:
    """About ``SAMPLE_SIZE`` distinct positions in ``range(n)``, at the golden-ratio
    sequence: evenly spread (no gap much longer than n / SAMPLE_SIZE), no period."""
    weyl = (np.arange(SAMPLE_SIZE) + 0.5) * _GOLDEN % 1.0
    positions = np.unique((weyl * n).astype(np.int64))
    positions.flags.writeable = False
    return positions


#: Past this range, differences of float32 values could overflow: binned in float64.
_FLOAT32_SPAN = 1e38
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def activation_histogram(value: np.ndarray, bins: int, stats: TensorStats) -> Histogram | None:
    """The histogram of a finite float32 activation between its ``stats``' min and max,
    binned in float32 (4× faster than the float64 binning of weights); None
    for what it does not take (:func:`onnx_explorer.stats.histogram` then bins it).

    A value within float32 rounding of a bin edge may be counted in the bin beside it,
    which a 48-bar picture of thousands of values cannot show."""
    low, high = stats.min, stats.max
    if value.dtype != np.float32 or stats.nan or stats.inf or low is None or high is None:
        return None  # (float16's coarse grid puts many values on float32-rounded edges)
    span = high - low
    # a range of ~1e-37 has a scale past float32's largest value
    if not 0 < span < _FLOAT32_SPAN or not bins / span < _FLOAT32_MAX:
        return None
    lo, scale, top = np.float32(low), np.float32(bins / span), np.float32(bins - 1)
    flat = value.reshape(-1)
    counts = np.zeros(bins, np.int64)
    for start in range(0, flat.size, CHUNK):
        # v >= min, so v - lo >= 0 exactly: truncation is the floor; max lands in the top bin
        scaled = np.subtract(flat[start : start + CHUNK], lo, dtype=np.float32)
        scaled *= scale
        np.minimum(scaled, top, out=scaled)
        counts += np.bincount(scaled.astype(np.intp), minlength=bins)
    return Histogram(counts, np.linspace(low, high, bins + 1))
