"""TFLite sparse tensors → their dense values, as the DENSIFY operator makes them.

A sparse tensor stores only some values of its dense ``shape``, walked in
``traversal_order`` (the tensor's dimensions, then any block dimensions, each block
dimension splitting the dimension ``block_map`` names): a DENSE level visits every
index up to its size; a SPARSE_CSR level visits, under each position of the level
above, the indices ``array_indices[array_segments[p]:array_segments[p + 1]]``. The
stored values come in that visiting order (TFLite's ``FormatConverter``). Here the walk
is done a level at a time over arrays, not a value at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import TensorDataError

#: Most dense elements a sparse tensor may declare per stored value (real pruned weights
#: are 50-95 % zeros): a few stored bytes declaring a dense shape of terabytes is refused.
DENSE_PER_STORED = 64
DENSE_SLACK = 1 << 16


@dataclass(frozen=True)
class SparseLevel:
    """One traversed dimension: DENSE (``size``) or SPARSE_CSR (``segments``, ``indices``)."""

    size: int
    segments: np.ndarray | None = None  # int64; None for a DENSE level
    indices: np.ndarray | None = None


@dataclass(frozen=True)
class Sparsity:
    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    levels: tuple[SparseLevel, ...]
    summary: str  # for notes and tooltips


def densify(
    stored: np.ndarray, shape: tuple[int, ...], sparsity: Sparsity, name: str
) -> np.ndarray:
    """The dense array of ``shape`` whose non-stored values are 0."""
    rank = len(shape)
    order, block_map, levels = sparsity.traversal_order, sparsity.block_map, sparsity.levels

    def fail(why: str) -> TensorDataError:
        return TensorDataError(f"sparse tensor {name!r}: {why}")

    if len(levels) != len(order) or sorted(order) != list(range(len(order))):
        raise fail(f"traversal order {list(order)} does not list its {len(levels)} levels")
    if len(order) != rank + len(block_map) or any(not 0 <= d < rank for d in block_map):
        raise fail(f"block map {list(block_map)} does not fit a rank-{rank} tensor")
    dense_size = math.prod(shape)
    if any(d < 0 for d in shape) or dense_size > DENSE_PER_STORED * stored.size + DENSE_SLACK:
        raise fail(f"dense shape {list(shape)} for {stored.size} stored values")
    block_size = [levels[rank + b].size for b in range(len(block_map))]
    # Walk the levels: per visited position, its index at each level so far.
    position = np.zeros(1, np.int64)  # position within the level above (CSR segments)
    indices: list[np.ndarray] = []
    for level in levels:
        if level.segments is None:
            if level.size < 0:
                raise fail(f"a dense level of size {level.size}")
            if position.size * level.size > max(dense_size, 1):
                raise fail("its levels visit more positions than the dense shape holds")
            here = np.tile(np.arange(level.size, dtype=np.int64), position.size)
            indices = [np.repeat(i, level.size) for i in indices]
            position = np.repeat(position, level.size) * level.size + here
        else:
            segments, found = level.segments, level.indices
            assert found is not None
            if position.size and (position.max() + 1 >= segments.size):
                raise fail("a sparse level has fewer segments than positions above it")
            starts, ends = segments[position], segments[position + 1]
            counts = ends - starts
            if (
                (starts < 0).any()
                or (counts < 0).any()
                or (ends > found.size).any()
                or counts.sum() > max(dense_size, 1)
            ):
                raise fail("a sparse level's segments run outside its indices")
            total = int(counts.sum())
            # The runs starts[k]:ends[k], concatenated.
            offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
            position = offsets + np.arange(total, dtype=np.int64)
            here = found[position]
            indices = [np.repeat(i, counts) for i in indices]
        indices.append(here)
    if position.size != stored.size:
        raise fail(f"its levels visit {position.size} positions for {stored.size} stored values")
    dense_index = [np.zeros(0, np.int64)] * rank
    for k, dim in enumerate(order[:rank]):
        dense_index[dim] = indices[k]
    for k in range(rank, len(order)):
        b = order[k] - rank
        dense_index[block_map[b]] = dense_index[block_map[b]] * block_size[b] + indices[k]
    for dim, size in enumerate(shape):
        if dense_index[dim].size and (dense_index[dim].min() < 0 or dense_index[dim].max() >= size):
            raise fail(f"an index lies outside dimension {dim} (size {size})")
    dense = np.zeros(shape, stored.dtype)
    if stored.size:
        dense[tuple(dense_index)] = stored
    return dense


__all__ = ["SparseLevel", "Sparsity", "densify"]
