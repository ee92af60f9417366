"""What statistics return: :class:`TensorStats` and :class:`Histogram` (plain data)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TensorStats:
    """Summary of a tensor's values; see :mod:`onnx_explorer.stats` for the exact definitions.

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
        return np.asarray((self.edges[:-1] + self.edges[1:]) / 2, dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": self.counts.tolist(),
            "edges": self.edges.tolist(),
            "log": self.log,
            "underflow": self.underflow,
            "overflow": self.overflow,
            "nan": self.nan,
        }


__all__ = ["Histogram", "TensorStats"]
