"""Statistics of one activation in a few vectorised passes, cheap enough to run on every
tensor of a capture-all run.

A capture-all run makes thousands of tensors; :func:`onnx_explorer.stats.summarize`
(float64 blocks, Chan's merge, a random sample of 2**14) costs several times
onnxruntime's own run on them. This path gives the same :class:`TensorStats` fields,
with the same definitions, from native-dtype reductions:

- min and max in the tensor's dtype (a NaN or Inf there sends the tensor to
  ``summarize``, which counts them, so the fast path only ever sees finite values);
- sum and sum of squares in float32 (einsum's SIMD accumulators) over chunks of
  ``CHUNK`` values, the chunks added in float64: about 1e-6 relative on the mean and the
  variance. When the variance is small
  beside the mean (a cancellation that float32 cannot carry), or a square could overflow
  float32, the second moment is computed centred, in float64;
- zeros counted only when zero lies between min and max;
- percentiles from a strided sample of about ``SAMPLE_SIZE`` values (all the values below
  it, and then exact). The stride is kept coprime with 2, 3, 5 and 7 so that it does not
  alias with the channel and spatial sizes real layouts are made of: successive samples
  walk through every position of such a dimension. ``exact_percentiles`` says which.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..stats import TensorStats

#: Values sorted for a tensor's percentiles; the median of a 1,024-value sample is within
#: about ±1.6 percentage points of rank, p1 and p99 within about ±0.3.
SAMPLE_SIZE = 1 << 10
#: Values summed in float32 at once (their partial sums are added in float64).
CHUNK = 1 << 16
#: A variance below this share of the mean square is computed again, centred, in float64.
CANCELLATION = 1e-2
#: Below this bound on the sum of squares, float32 sums cannot overflow (no np.errstate:
#: entering it costs more than the sums of a small tensor).
_FLOAT32_SAFE = 1e37
_LAYOUT_FACTORS = 2 * 3 * 5 * 7
_PERCENTILES = (1.0, 50.0, 99.0)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def fast_path(value: np.ndarray) -> bool:
    """Whether :func:`activation_stats` can take this array (else: ``summarize``)."""
    return value.size > 0 and (value.dtype.kind in "iu" or value.dtype in (*_FLOATS, np.float16))


def activation_stats(value: np.ndarray) -> TensorStats | None:
    """The statistics of ``value``, or None when it holds a NaN or an Inf (or overflows
    float64): ``summarize`` then counts them and summarises the finite rest."""
    flat = value.reshape(-1)
    is_float = flat.dtype.kind == "f"
    if flat.dtype == np.float16:
        flat = flat.astype(np.float32)  # float16 sums overflow at 65,504
    lo, hi = flat.min(), flat.max()
    if is_float:
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        low, high = float(lo), float(hi)
    else:
        low, high = int(lo), int(hi)  # exact, even past 2**53
        flat = flat.astype(np.float64)
    n = flat.size
    if low == high:  # a constant (scalars, masks, fills): nothing to sum
        mean, variance = float(low), 0.0
    elif (big := max(abs(low), abs(high))) * big * n < _FLOAT32_SAFE:  # no ** : it raises
        total, squares = _sums(flat)
        mean = total / n
        variance = squares / n - mean * mean
        if variance < CANCELLATION * (squares / n):
            mean, variance = _centred(flat)
    else:  # squares could overflow float32
        mean, variance = _centred(flat)
        if not (math.isfinite(mean) and math.isfinite(variance)):
            return None
    # count_nonzero of a bool mask is SIMD; of float32 values it is ~5× slower
    zeros = int(np.count_nonzero(flat == 0)) if low <= 0 <= high else 0
    p1, p50, p99, exact = _percentiles(flat)
    return TensorStats(
        count=n,
        min=low,
        max=high,
        mean=mean,
        std=math.sqrt(max(variance, 0.0)),
        abs_max=max(abs(low), abs(high)),
        zeros=zeros / n,
        nan=0,
        inf=0,
        p1=p1,
        p50=p50,
        p99=p99,
        exact_percentiles=exact,
        is_float=is_float,
    )


def _sums(flat: np.ndarray) -> tuple[float, float]:
    """Sum and sum of squares; float32 within a chunk, float64 across.

    einsum's SIMD accumulators (errors ~3e-7 of the sum of magnitudes on 64k random
    values) run 2.7× faster than ``ndarray.sum``'s pairwise sum; not np.dot: BLAS
    threads on small vectors stall when the cores are busy."""
    if flat.size <= CHUNK:  # most activations: no loop
        return float(np.einsum("i->", flat)), float(np.einsum("i,i->", flat, flat))
    total = squares = 0.0
    for start in range(0, flat.size, CHUNK):
        part = flat[start : start + CHUNK]
        total += float(np.einsum("i->", part))
        squares += float(np.einsum("i,i->", part, part))
    return total, squares


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


def _percentiles(flat: np.ndarray) -> tuple[float, float, float, bool]:
    """p1, p50, p99 (numpy's linear interpolation) of the values or of a strided sample."""
    n = flat.size
    exact = n <= SAMPLE_SIZE
    sample = np.sort(flat if exact else flat[:: _stride(n)])
    last = sample.size - 1
    found = []
    for p in _PERCENTILES:
        position = p / 100.0 * last
        below = int(position)
        above = min(below + 1, last)
        a, b = float(sample[below]), float(sample[above])
        t = position - below
        # numpy's _lerp: from the nearer end, so equal neighbours give that value exactly
        found.append(b - (b - a) * (1.0 - t) if t >= 0.5 else a + (b - a) * t)
    return found[0], found[1], found[2], exact


@functools.lru_cache(maxsize=1024)  # a run has few distinct sizes
def _stride(n: int) -> int:
    step = max(n // SAMPLE_SIZE, 1)
    while math.gcd(step, _LAYOUT_FACTORS) != 1:
        step += 1
    return step
