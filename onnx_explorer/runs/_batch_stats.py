"""Statistics of many small activations at once: tensors of the same size stacked as rows.

A capture-all run makes thousands of tensors of a few thousand values each; summarised one
by one, numpy's per-call overhead and one percentile partition per tensor cost far more
than onnxruntime's run. Stacked by size, every statistic is one reduction along the rows
and the percentiles one ``np.percentile(axis=1)`` per stack. The results are those of
:func:`onnx_explorer.stats.summarize` (same definitions, float64 sums); a row with a NaN
or an Inf, and every dtype but native floats and integers, goes through ``summarize``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..stats import TensorStats

#: float64 bytes of one stack: larger groups are cut into several stacks.
STACK_BYTES = 4 << 20
#: Tensors above this many elements are summarised alone (per-call overhead is nothing there).
STACK_ELEMENTS = 1 << 19

_PERCENTILES = (1.0, 50.0, 99.0)


def stackable(value: np.ndarray) -> bool:
    kind = value.dtype.kind
    native = kind in "iu" or value.dtype in (np.float16, np.float32, np.float64)
    return native and 0 < value.size <= STACK_ELEMENTS


def batch_stats(
    arrays: Sequence[np.ndarray],
    sample_size: int,
    fallback: Callable[[np.ndarray], TensorStats],
) -> list[TensorStats]:
    """The statistics of each array, in order (``fallback`` for those not stackable)."""
    found: list[TensorStats | None] = [None] * len(arrays)
    groups: dict[tuple[int, bool], list[int]] = {}
    for i, value in enumerate(arrays):
        if stackable(value):
            groups.setdefault((value.size, value.dtype.kind == "f"), []).append(i)
        else:
            found[i] = fallback(value)
    for (size, is_float), members in groups.items():
        rows = max(1, STACK_BYTES // (8 * size))
        for start in range(0, len(members), rows):
            part = members[start : start + rows]
            stats = _stack_stats([arrays[i] for i in part], size, is_float, sample_size)
            for i, s in zip(part, stats):
                found[i] = s if s is not None else fallback(arrays[i])
    return [s for s in found if s is not None]


def _stack_stats(
    values: list[np.ndarray], size: int, is_float: bool, sample_size: int
) -> list[TensorStats | None]:
    stack = np.empty((len(values), size), np.float64)
    for row, value in zip(stack, values):
        np.copyto(row, value.reshape(-1), casting="unsafe")
    # Integers above 2**53 lose precision in float64: their min/max come from the ints.
    ints = np.stack([v.reshape(-1) for v in values]) if not is_float else None
    finite = np.ones(len(values), np.bool_)
    if is_float:
        np.isfinite(stack).all(axis=1, out=finite)
    lo_hi = ints if ints is not None else stack
    lo, hi = lo_hi.min(axis=1), lo_hi.max(axis=1)
    zeros = np.count_nonzero(stack == 0, axis=1)
    mean = stack.sum(axis=1) / size
    sampled = size > sample_size
    if sampled:  # the same positions in every row: a uniform sample for each
        picks = np.random.default_rng(0).integers(0, size, sample_size)
        percentiles = np.percentile(stack[:, picks], _PERCENTILES, axis=1)
    else:
        percentiles = np.percentile(stack, _PERCENTILES, axis=1)
    stack -= mean[:, None]
    m2 = np.square(stack, out=stack).sum(axis=1)
    found: list[TensorStats | None] = []
    for r in range(len(values)):
        if not finite[r]:
            found.append(None)
            continue
        low, high = (float(lo[r]), float(hi[r])) if is_float else (int(lo[r]), int(hi[r]))
        found.append(
            TensorStats(
                count=size,
                min=low,
                max=high,
                mean=float(mean[r]),
                std=math.sqrt(max(float(m2[r]), 0.0) / size),
                abs_max=max(abs(low), abs(high)),
                zeros=int(zeros[r]) / size,
                nan=0,
                inf=0,
                p1=float(percentiles[0, r]),
                p50=float(percentiles[1, r]),
                p99=float(percentiles[2, r]),
                exact_percentiles=not sampled,
                is_float=is_float,
            )
        )
    return found
